//! Reports: a [`Summary`] is computed once from what the runner measured, then rendered as text or
//! JSON. Nothing here knows about sockets or protocols beyond their names.

pub mod capacity;
pub mod comparison;
pub mod diff;
pub mod export;
pub mod merge;
pub mod paint;
pub mod plain;
pub mod stats;
pub mod text;
pub mod thresholds;

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::observe::watch::ProcessUsage;
use crate::plan::{H2Settings, Negotiation, RunPlan, StopRule, TimelineInterval};
use crate::recorder::handshakes;
use crate::recorder::hdr;
use crate::recorder::outcome::RunOutcome;
use crate::recorder::{ErrorKind, RequestCounters, Retried};
// Named `super::counted` by text.rs and plain.rs.
use crate::tls::TlsInfo;
use crate::units::counted;

/// Version of the JSON layout; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 2;

/// A whole run: every cell, and their comparison. Serialized as is for `--json`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Document {
    /// Layout version of this document.
    pub schema_version: u32,
    /// The tool and its version.
    pub tool: Tool,
    /// Each cell's report, in the order they ran.
    pub cells: Vec<Summary>,
    /// One row per cell, with per-level ratios.
    pub comparison: Vec<comparison::Row>,
    /// Where a signal between two cells stopped the sweep (a signal during a cell marks that
    /// cell `interrupted` instead); `None` when no signal came between cells.
    #[serde(default)]
    pub stopped_between_cells: Option<SweepStop>,
    /// The file it was read from (`merge`, `diff`), for errors; not written.
    #[serde(skip)]
    pub source: String,
}

impl Document {
    /// Assembles the document from the cells' summaries.
    pub fn new(cells: Vec<Summary>) -> Document {
        let comparison = comparison::rows(&cells);
        Document {
            schema_version: SCHEMA_VERSION,
            tool: Tool {
                name: "h2load-rs".to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
            },
            cells,
            comparison,
            stopped_between_cells: None,
            source: String::new(),
        }
    }

    /// Adds a cell and recomputes the comparison (a sweep rewrites its exports after every cell).
    pub fn push(&mut self, cell: Summary) {
        self.cells.push(cell);
        self.comparison = comparison::rows(&self.cells);
    }
}

/// Where a sweep stopped: after this many cells of the planned ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepStop {
    /// The cells that ran (all of them to their end).
    pub after_cell: usize,
    /// The cells the sweep had.
    pub of: usize,
}

/// Writes a document in one format (one implementation per format, like hyperfine's exports).
pub trait Exporter {
    /// Writes `document` to `path` (a file, or a directory for formats with one file per cell).
    fn export(&self, document: &Document, path: &std::path::Path) -> anyhow::Result<()>;
}

/// Where a cell stands in its run, and what the processes around it used.
#[derive(Debug, Clone, Default)]
pub struct CellContext {
    /// 1-based position in the run.
    pub index: usize,
    /// The concurrency level it belongs to (cells of one level are compared).
    pub level: usize,
    /// CPU the generator itself used, in percent of one core.
    pub generator_cpu_percent: f64,
    /// What each watched process used.
    pub watched: Vec<ProcessUsage>,
}

/// Scheduling with `--rate`: what was asked, what happened, and how late requests went out.
#[derive(Debug, Serialize, Deserialize)]
pub struct RateReport {
    /// Requests per second asked for.
    pub requested_per_s: f64,
    /// Requests per second completed.
    pub achieved_per_s: f64,
    /// Requests sent more than 1 ms after their scheduled time.
    pub late: u64,
    /// `late` as a share of all requests sent, in percent.
    pub late_pct: f64,
    /// Lateness of the sends: median, 99th percentile and maximum, µs.
    pub delay_p50_us: u64,
    /// 99th percentile of the lateness.
    pub delay_p99_us: u64,
    /// Largest lateness.
    pub delay_max_us: u64,
    /// The lateness of every send, HdrHistogram V2 + deflate, base64 (so runs merge exactly).
    pub delay_hdr: String,
    /// How full the concurrency was (absent in reports from before this field).
    #[serde(default)]
    pub in_flight: InFlight,
    /// A timed schedule's (`-D` with `--rate`, `--stages`) send times in the measured period:
    /// `requests.started + missed`. `None` for `-n`, an interrupted run, and older reports.
    #[serde(default)]
    pub scheduled: Option<u64>,
    /// Send times of the schedule that no request took before it ended: the run could not keep
    /// its schedule (the client was starved, or the server held every connection).
    #[serde(default)]
    pub missed: u64,
}

/// Requests in flight against the most there can be: a rate falls short for lack of concurrency
/// only when the mean is near the limit.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct InFlight {
    /// Time-weighted mean of the measured requests in flight.
    pub mean: f64,
    /// The most that can be in flight: connections × streams (after the server's limit).
    pub limit: u64,
}

impl InFlight {
    /// A mean at or above this share of the limit means the concurrency capped the rate.
    pub const SATURATED: f64 = 0.8;

    /// Whether the requests in flight stayed near the limit for the run.
    pub fn saturated(&self) -> bool {
        self.limit > 0 && self.mean >= Self::SATURATED * self.limit as f64
    }
}

/// The rate a paced cell asked for: `--rate`, or a ramp's mean (the requests it offers over its
/// length), against which the achieved rate and the start delays are judged.
fn requested_rate(plan: &RunPlan) -> Option<f64> {
    plan.rate.or_else(|| {
        plan.stages
            .as_ref()
            .map(|stages| stages.total() / stages.duration().as_secs_f64())
    })
}

impl RateReport {
    fn new(
        requested: f64,
        achieved: f64,
        recorder: &crate::recorder::Recorder,
        in_flight: InFlight,
    ) -> RateReport {
        let delay = recorder
            .start_delay
            .as_ref()
            .expect("rate mode keeps start delays");
        RateReport::from_delays(requested, achieved, delay, in_flight)
    }

    /// The figures for a histogram of start delays.
    pub fn from_delays(
        requested: f64,
        achieved: f64,
        delay: &Histogram<u64>,
        in_flight: InFlight,
    ) -> RateReport {
        let late_after = crate::recorder::LATE_AFTER.as_micros() as u64;
        let late = delay.count_between(late_after + 1, u64::MAX);
        RateReport {
            requested_per_s: requested,
            achieved_per_s: achieved,
            late,
            late_pct: if delay.is_empty() {
                0.0
            } else {
                100.0 * late as f64 / delay.len() as f64
            },
            delay_p50_us: delay.value_at_quantile(0.5),
            delay_p99_us: delay.value_at_quantile(0.99),
            delay_max_us: delay.max(),
            delay_hdr: hdr::to_base64(delay),
            in_flight,
            scheduled: None,
            missed: 0,
        }
    }
}

/// The timeline of a cell: one entry per interval in which something happened.
#[derive(Debug, Serialize, Deserialize)]
pub struct Timeline {
    /// Interval length, seconds.
    pub interval_s: f64,
    /// The end of the measured period, seconds after its start: the last interval ends here, so
    /// it may be shorter than `interval_s` (0 in reports from before this field).
    #[serde(default)]
    pub end_s: f64,
    /// Wall-clock start of the measured period, milliseconds since the Unix epoch (to line up the
    /// timelines of runs made on several machines).
    pub start_unix_ms: u64,
    /// The intervals, in order.
    pub intervals: Vec<IntervalSummary>,
}

/// One interval.
#[derive(Debug, Serialize, Deserialize)]
pub struct IntervalSummary {
    /// Position: the interval covers `[index, index + 1) × interval_s` after the start.
    pub index: u64,
    /// Responses completed.
    pub completed: u64,
    /// Requests failed.
    pub errors: u64,
    /// The interval's real length, seconds: `interval_s`, except for a last one cut short by the
    /// end of the measured period.
    #[serde(default)]
    pub length_s: f64,
    /// Responses completed per second of the interval's real length.
    #[serde(default)]
    pub requests_per_s: f64,
    /// Response time median, µs.
    pub p50_us: u64,
    /// Response time 99th percentile, µs.
    pub p99_us: u64,
    /// Largest response time, µs.
    pub max_us: u64,
    /// The interval's response times, HdrHistogram V2 + deflate, base64.
    pub hdr: String,
    /// Its times to first byte, likewise.
    pub ttfb_hdr: String,
    /// Its service times (with `--rate`), likewise.
    pub service_hdr: Option<String>,
}

/// One interval's counts and histograms, summed over threads (or over runs, when merging).
#[derive(Debug)]
pub struct IntervalSums {
    completed: u64,
    errors: u64,
    request: Histogram<u64>,
    ttfb: Histogram<u64>,
    service: Option<Histogram<u64>>,
}

impl Default for IntervalSums {
    fn default() -> Self {
        IntervalSums {
            completed: 0,
            errors: 0,
            request: hdr::new_histogram(),
            ttfb: hdr::new_histogram(),
            service: None,
        }
    }
}

impl IntervalSums {
    /// Adds one part: its counts, and its histograms as V2 + deflate bytes. Counts that add up
    /// past 2^64 - 1 are an error naming the field, never a count that wraps.
    pub fn add(
        &mut self,
        completed: u64,
        errors: u64,
        request: &[u8],
        ttfb: &[u8],
        service: Option<&[u8]>,
    ) -> anyhow::Result<()> {
        for (sum, value, field) in [
            (&mut self.completed, completed, "completed"),
            (&mut self.errors, errors, "errors"),
        ] {
            *sum = sum
                .checked_add(value)
                .ok_or_else(|| anyhow::anyhow!("the intervals' {field} add up past 2^64 - 1"))?;
        }
        hdr::add_encoded(&mut self.request, request)?;
        hdr::add_encoded(&mut self.ttfb, ttfb)?;
        if let Some(service) = service {
            hdr::add_encoded(self.service.get_or_insert_with(hdr::new_histogram), service)?;
        }
        Ok(())
    }

    /// The interval as reported, at position `index`, `length_s` seconds long.
    pub fn summary(&self, index: u64, length_s: f64) -> IntervalSummary {
        IntervalSummary {
            index,
            completed: self.completed,
            errors: self.errors,
            length_s,
            requests_per_s: if length_s > 0.0 {
                self.completed as f64 / length_s
            } else {
                0.0
            },
            p50_us: self.request.value_at_quantile(0.5),
            p99_us: self.request.value_at_quantile(0.99),
            max_us: self.request.max(),
            hdr: hdr::to_base64(&self.request),
            ttfb_hdr: hdr::to_base64(&self.ttfb),
            service_hdr: self.service.as_ref().map(hdr::to_base64),
        }
    }
}

impl Timeline {
    /// Merges the threads' interval records (same index: counts add, histograms add), one
    /// interval at a time so memory holds one interval's histograms however long the run was.
    /// The measured period ended `elapsed` after its start: completions recorded at or after that
    /// instant (the drain's last responses) belong to the last interval, which ends there. An
    /// automatic length is re-bucketed to the longest round one that keeps
    /// [`TimelineInterval::MIN_INTERVALS`] intervals.
    fn new(
        intervals: &crate::recorder::Intervals,
        start: std::time::SystemTime,
        elapsed: Duration,
    ) -> Timeline {
        let length = if intervals.auto {
            TimelineInterval::longest_round(elapsed, intervals.length)
        } else {
            intervals.length
        };
        let factor = u64::try_from(length.as_nanos() / intervals.length.as_nanos().max(1))
            .unwrap_or(1)
            .max(1);
        let interval_s = length.as_secs_f64();
        let end_s = elapsed.as_secs_f64();
        let last = last_index(end_s, interval_s);
        let mut records = intervals.clone().into_closed();
        for record in &mut records {
            record.index = (record.index / factor).min(last);
        }
        records.sort_by_key(|record| record.index);
        let mut summaries = Vec::new();
        for same_interval in records.chunk_by(|a, b| a.index == b.index) {
            let mut sums = IntervalSums::default();
            for record in same_interval {
                sums.add(
                    record.completed,
                    record.errors,
                    &record.request,
                    &record.ttfb,
                    record.service.as_deref(),
                )
                .expect("recorded histograms decode");
            }
            let index = same_interval[0].index;
            summaries.push(sums.summary(index, interval_length(index, interval_s, end_s)));
        }
        Timeline {
            interval_s,
            end_s,
            start_unix_ms: export::hdr_log::unix_ms(start),
            intervals: summaries,
        }
    }
}

impl Timeline {
    /// Where `interval` starts, seconds after the start of the measured period.
    pub fn start_of(&self, interval: &IntervalSummary) -> f64 {
        interval.index as f64 * self.interval_s
    }

    /// `interval`'s real length (reports from before `length_s` only had full intervals).
    pub fn length_of(&self, interval: &IntervalSummary) -> f64 {
        if interval.length_s > 0.0 {
            interval.length_s
        } else {
            self.interval_s
        }
    }

    /// Responses completed per second of `interval`'s real length.
    pub fn rate_of(&self, interval: &IntervalSummary) -> f64 {
        interval.completed as f64 / self.length_of(interval)
    }
}

/// The index of the last interval of a period `end_s` long: the one holding its end, or the one
/// before when the end falls in the first quarter of an interval, so a few drained responses do
/// not make a stub interval with a meaningless rate.
pub(crate) fn last_index(end_s: f64, interval_s: f64) -> u64 {
    if interval_s <= 0.0 || end_s <= 0.0 {
        return 0;
    }
    let intervals = end_s / interval_s;
    let holding = intervals.floor() as u64;
    if intervals - holding as f64 <= 0.25 {
        holding.saturating_sub(1)
    } else {
        holding
    }
}

/// The real length of interval `index`: the last one ends at the end of the period `end_s` (0:
/// unknown), so it may be shorter than `interval_s`, or longer when it took a stub in.
pub(crate) fn interval_length(index: u64, interval_s: f64, end_s: f64) -> f64 {
    if end_s > 0.0 && index == last_index(end_s, interval_s) {
        end_s - index as f64 * interval_s
    } else {
        interval_s
    }
}

/// Identifies a cell.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CellInfo {
    /// 1-based position in the run.
    pub index: usize,
    /// e.g. `h2c c=10 m=100`, or `h1 c=4 m=1 rate=500` when paced.
    pub label: String,
    /// `h1`, `h2c`, `h2c-upgrade`, `h2`, `h1-tls` or `auto`.
    pub protocol: String,
    /// Connections.
    pub clients: usize,
    /// Requests in flight per connection.
    pub streams: usize,
    /// Total requests per second asked for (`--rate`, or `--rps` × connections), if paced.
    #[serde(default)]
    pub rate: Option<f64>,
    /// The concurrency level it belongs to.
    pub level: usize,
}

/// The merged histograms of a cell, for exporters that need whole distributions.
#[derive(Debug, Clone)]
pub struct Histograms {
    /// Request latency (µs): the response time, from the scheduled send with `--rate`.
    pub request: Histogram<u64>,
    /// Service time (µs), from the actual send (with `--rate` only).
    pub service: Option<Histogram<u64>>,
    /// Connect time (µs).
    pub connect: Histogram<u64>,
    /// Time to first byte (µs).
    pub ttfb: Histogram<u64>,
}

impl Default for Histograms {
    fn default() -> Self {
        Histograms {
            request: hdr::new_histogram(),
            service: None,
            connect: hdr::new_histogram(),
            ttfb: hdr::new_histogram(),
        }
    }
}

/// Everything a cell's report shows.
#[derive(Debug, Serialize, Deserialize)]
pub struct Summary {
    /// Which cell this is.
    pub cell: CellInfo,
    /// The options the run used.
    pub settings: Settings,
    /// What was actually spoken.
    pub protocol: ProtocolInfo,
    /// Whether the user interrupted the run.
    pub interrupted: bool,
    /// Length of the measured period, in seconds.
    pub elapsed_s: f64,
    /// Finished requests per second over the measured period.
    pub requests_per_s: f64,
    /// Received bytes per second over the measured period.
    pub bytes_per_s: f64,
    /// Request counters.
    pub requests: Requests,
    /// Responses by status class.
    pub status_codes: StatusCodes,
    /// Errors by kind: connection attempts, requests and failed checks together (the sum of
    /// `request_errors`, `connection_errors` and `checks.failed`).
    pub errors: BTreeMap<String, u64>,
    /// Requests that got no complete response, by kind (with `requests.never_sent`, they make
    /// `requests.errored`).
    #[serde(default)]
    pub request_errors: BTreeMap<String, u64>,
    /// Connection attempts that failed, by kind (they make `connections.failed`).
    #[serde(default)]
    pub connection_errors: BTreeMap<String, u64>,
    /// HTTP/2 stream resets by error code name (part of `errors.stream_reset`).
    pub stream_reset_codes: BTreeMap<String, u64>,
    /// The response checks' failures (absent without `--expect-*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<crate::recorder::CheckTally>,
    /// Bytes received.
    pub traffic: Traffic,
    /// Connection counters.
    pub connections: Connections,
    /// Latency distributions.
    pub latency: Latencies,
    /// Spread of requests per second across clients (h2load's "req/s" row).
    pub requests_per_client_per_s: Spread,
    /// The first connection-level problem, if any, in words.
    pub first_error: Option<String>,
    /// Things worth knowing that are not errors (e.g. a server declined the h2c upgrade).
    pub warnings: Vec<String>,
    /// CPU the generator used during the cell, in percent of one core.
    pub generator_cpu_percent: f64,
    /// What each watched process (e.g. the target) used during the cell.
    pub watched: Vec<ProcessUsage>,
    /// Requests, errors and latency per interval of the measured period.
    pub timeline: Timeline,
    /// Scheduling figures, with `--rate`.
    pub rate: Option<RateReport>,
    /// The `--fail-if` thresholds checked against this cell (absent without `--fail-if`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<thresholds::Threshold>,
    /// What `--find-max` found (absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<capacity::Capacity>,
    /// Per-URL figures, one row per path in the order given (absent with a single path).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub urls: Vec<UrlRow>,
    /// The full distributions (not serialized; the `hdr` fields carry them in JSON).
    #[serde(skip)]
    pub histograms: Histograms,
}

/// One URL's figures in a cell.
#[derive(Debug, Serialize, Deserialize)]
pub struct UrlRow {
    /// The path and query requested, as given (placeholders unrendered).
    pub url: String,
    /// Measured requests that finished: `succeeded + failed`.
    pub requests: u64,
    /// Responses that succeeded as the cell counts them: status 2xx or 3xx, or with response
    /// checks (`--expect-*`) every check met.
    pub succeeded: u64,
    /// The rest: error responses, failed checks and requests that ended without a response.
    pub failed: u64,
    /// Response latency (null beyond the first 1000 URLs, or without a response).
    pub latency: Option<Box<LatencySummary>>,
}

/// The per-URL rows of a cell, from its recorder's path counts.
fn url_rows(plan: &RunPlan, recorder: &crate::recorder::Recorder) -> Vec<UrlRow> {
    let Some(paths) = &recorder.paths else {
        return Vec::new();
    };
    plan.request
        .paths
        .iter()
        .zip(paths.rows())
        .map(|(path, row)| UrlRow {
            url: path.clone(),
            requests: row.succeeded + row.failed,
            succeeded: row.succeeded,
            failed: row.failed,
            latency: row.latency.map(|latency| {
                let mut summary = latency_summary(&latency.histogram);
                // The path's histogram has 2 digits, the run's 3: its extremes are given at the
                // run's precision, so a URL's max is never above the run's and one equals it.
                let run = &recorder.request;
                summary.bound(
                    run.lowest_equivalent(latency.min),
                    run.highest_equivalent(latency.max),
                );
                Box::new(summary)
            }),
        })
        .collect()
}

/// Name and version of the generator.
#[derive(Debug, Serialize, Deserialize)]
pub struct Tool {
    /// Always `h2load-rs`.
    pub name: String,
    /// Crate version.
    pub version: String,
}

/// The options the run used.
#[derive(Debug, Serialize, Deserialize)]
pub struct Settings {
    /// Target URLs.
    pub urls: Vec<String>,
    /// Connections.
    pub clients: usize,
    /// Threads.
    pub threads: usize,
    /// Requested concurrent requests per connection (`-m`).
    pub max_concurrent_streams: usize,
    /// `-n`, for counted runs.
    pub requests: Option<u64>,
    /// `-D` in seconds, for timed runs.
    pub duration_s: Option<f64>,
    /// `--warm-up-time` in seconds.
    pub warm_up_s: Option<f64>,
    /// Request method.
    pub method: String,
    /// Request headers besides Host, as `name: value`.
    pub headers: Vec<String>,
    /// Request body size.
    pub body_bytes: usize,
    /// Time limits in seconds (absent: none).
    pub timeouts_s: BTreeMap<String, f64>,
    /// `--max-retries` (null with `--no-retry`).
    #[serde(default)]
    pub max_retries: Option<u8>,
    /// `--stages`: the ramp of rates (null without).
    #[serde(default)]
    pub stages: Option<StagesSettings>,
    /// HTTP/2 settings announced (h2 runs).
    pub h2: H2Settings,
    /// `-i`: the file the other URLs came from (absent without).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_file: Option<String>,
    /// `--urls-random`: paths picked at random instead of in turn (absent without).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub urls_random: bool,
    /// The seed of `--urls-random`, `{rand:N}` and `{uuid}` (`--seed`, or drawn), when the run
    /// draws random numbers: give it to `--seed` to repeat the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Requests per connection before it closes and another opens (`--requests-per-connection`,
    /// 1 with `--no-keepalive`; null: as many as it can carry).
    #[serde(default)]
    pub requests_per_connection: Option<u64>,
    /// `--no-keepalive`: HTTP/1.1 requests carried `Connection: close`.
    #[serde(default)]
    pub no_keepalive: bool,
    /// `--tls-resume` (or `--tls-early-data`): connections resumed TLS sessions.
    #[serde(default)]
    pub tls_resume: bool,
    /// `--tls-early-data`: requests left as TLS 1.3 early data on resumed connections.
    #[serde(default)]
    pub tls_early_data: bool,
    /// The I/O backend the connections used (`--io` resolved): `epoll`, `uring` or
    /// `uring+sqpoll` (reports from before `--io` were epoll).
    #[serde(default = "epoll")]
    pub io: String,
}

/// The I/O backend of reports written before `--io` existed.
fn epoll() -> String {
    crate::plan::IoBackend::Epoll.name().to_owned()
}

/// A `--stages` ramp, as the JSON report shows it.
#[derive(Debug, Serialize, Deserialize)]
pub struct StagesSettings {
    /// The rate at the start (`--rate`, else 0), requests per second.
    pub start_rps: f64,
    /// Each stage: its length and the rate reached at its end.
    pub stages: Vec<StageSettings>,
    /// Requests the ramp offers in all (the area under its curve).
    pub offered: f64,
}

/// One stage of a `--stages` ramp.
#[derive(Debug, Serialize, Deserialize)]
pub struct StageSettings {
    /// Its length in seconds (0: a step).
    pub duration_s: f64,
    /// The rate at its end, requests per second.
    pub rps: f64,
}

impl StagesSettings {
    fn new(stages: &crate::plan::stages::Stages) -> Self {
        StagesSettings {
            start_rps: stages.start_rate,
            stages: stages
                .stages
                .iter()
                .map(|stage| StageSettings {
                    duration_s: stage.duration.as_secs_f64(),
                    rps: stage.rate,
                })
                .collect(),
            offered: stages.total(),
        }
    }
}

/// The protocol spoken.
#[derive(Debug, Serialize, Deserialize)]
pub struct ProtocolInfo {
    /// The protocol most connections spoke: `http/1.1`, `h2c` or `h2` (null without connections).
    pub negotiated: Option<String>,
    /// Connections by the protocol they spoke.
    pub connections: BTreeMap<String, u64>,
    /// The first TLS session's parameters (https only).
    pub tls: Option<TlsInfo>,
    /// Concurrent streams per connection after the server's limit (h2 only).
    pub max_concurrent_streams_effective: Option<usize>,
}

/// Request counters with h2load's meanings.
#[derive(Debug, Serialize, Deserialize)]
pub struct Requests {
    /// `-n`, or the requests started in a timed run.
    pub total: u64,
    /// started, done, succeeded, failed, errored, timeout (failed and errored include `never_sent`).
    #[serde(flatten)]
    pub counters: RequestCounters,
    /// Requests of `-n` never sent because no connection could carry them.
    pub never_sent: u64,
    /// Requests sent but unfinished when the run stopped.
    pub in_flight_at_stop: u64,
    /// Requests sent again because the server never processed them, by reason (each counts
    /// once above, as what finally happened).
    #[serde(default)]
    pub retried: Retried,
}

impl Requests {
    /// Adds another run's counts (`merge`), each checked by `adder`; every field is named, so a
    /// new one does not compile until it is added here.
    pub(crate) fn add(&mut self, other: Requests, adder: &merge::Adder<'_>) -> anyhow::Result<()> {
        let Requests {
            total,
            counters,
            never_sent,
            in_flight_at_stop,
            retried,
        } = other;
        adder.add(&mut self.total, total, "requests.total")?;
        adder.add(&mut self.never_sent, never_sent, "requests.never_sent")?;
        adder.add(
            &mut self.in_flight_at_stop,
            in_flight_at_stop,
            "requests.in_flight_at_stop",
        )?;
        let Retried {
            goaway,
            refused,
            closed,
        } = retried;
        let mine = &mut self.retried;
        adder.add(&mut mine.goaway, goaway, "requests.retried.goaway")?;
        adder.add(&mut mine.refused, refused, "requests.retried.refused")?;
        adder.add(&mut mine.closed, closed, "requests.retried.closed")?;
        let RequestCounters {
            started,
            done,
            succeeded,
            failed,
            errored,
            timeout,
        } = counters;
        let mine = &mut self.counters;
        adder.add(&mut mine.started, started, "requests.started")?;
        adder.add(&mut mine.done, done, "requests.done")?;
        adder.add(&mut mine.succeeded, succeeded, "requests.succeeded")?;
        adder.add(&mut mine.failed, failed, "requests.failed")?;
        adder.add(&mut mine.errored, errored, "requests.errored")?;
        adder.add(&mut mine.timeout, timeout, "requests.timeout")
    }
}

/// Responses by status class.
#[derive(Debug, Serialize, Deserialize)]
pub struct StatusCodes {
    /// 1xx responses (final ones only).
    #[serde(rename = "1xx")]
    pub informational: u64,
    /// 2xx responses.
    #[serde(rename = "2xx")]
    pub success: u64,
    /// 3xx responses.
    #[serde(rename = "3xx")]
    pub redirection: u64,
    /// 4xx responses.
    #[serde(rename = "4xx")]
    pub client_error: u64,
    /// 5xx responses.
    #[serde(rename = "5xx")]
    pub server_error: u64,
}

impl StatusCodes {
    /// Adds another run's counts (`merge`), each checked by `adder`.
    pub(crate) fn add(
        &mut self,
        other: StatusCodes,
        adder: &merge::Adder<'_>,
    ) -> anyhow::Result<()> {
        let StatusCodes {
            informational,
            success,
            redirection,
            client_error,
            server_error,
        } = other;
        adder.add(&mut self.informational, informational, "status_codes.1xx")?;
        adder.add(&mut self.success, success, "status_codes.2xx")?;
        adder.add(&mut self.redirection, redirection, "status_codes.3xx")?;
        adder.add(&mut self.client_error, client_error, "status_codes.4xx")?;
        adder.add(&mut self.server_error, server_error, "status_codes.5xx")
    }
}

/// Bytes received during the measured period.
#[derive(Debug, Serialize, Deserialize)]
pub struct Traffic {
    /// All bytes read from sockets.
    pub total_bytes: u64,
    /// Response header bytes as sent.
    pub header_bytes: u64,
    /// Response header bytes uncompressed (equals `header_bytes` for HTTP/1.1).
    pub header_bytes_uncompressed: u64,
    /// `1 - header_bytes / header_bytes_uncompressed` (HPACK's saving), 0 to 1.
    pub header_space_savings: f64,
    /// Response body bytes.
    pub data_bytes: u64,
}

impl Traffic {
    /// Adds another run's byte counts (`merge`), each checked by `adder`; the merge works out
    /// `header_space_savings` again from the sums.
    pub(crate) fn add(&mut self, other: Traffic, adder: &merge::Adder<'_>) -> anyhow::Result<()> {
        let Traffic {
            total_bytes,
            header_bytes,
            header_bytes_uncompressed,
            header_space_savings: _,
            data_bytes,
        } = other;
        adder.add(&mut self.total_bytes, total_bytes, "traffic.total_bytes")?;
        adder.add(&mut self.header_bytes, header_bytes, "traffic.header_bytes")?;
        adder.add(
            &mut self.header_bytes_uncompressed,
            header_bytes_uncompressed,
            "traffic.header_bytes_uncompressed",
        )?;
        adder.add(&mut self.data_bytes, data_bytes, "traffic.data_bytes")
    }
}

/// Connection counters.
#[derive(Debug, Serialize, Deserialize)]
pub struct Connections {
    /// Connections established (warm-up included).
    pub opened: u64,
    /// Connection attempts that failed.
    pub failed: u64,
    /// Established connections the client closed because of its own timeout (`-T`, `-N`, a
    /// request timeout), so not the server.
    #[serde(default)]
    pub closed_by_client: u64,
    /// Connections begun in the measured period (warm-up left out).
    #[serde(default)]
    pub measured: u64,
    /// `measured` per second of the measured period.
    #[serde(default)]
    pub per_s: f64,
    /// Of the measured TLS connections, those that resumed a session (null for cleartext).
    #[serde(default)]
    pub resumed_handshakes: Option<u64>,
    /// Of the measured TLS connections, those with a full handshake (null for cleartext).
    #[serde(default)]
    pub full_handshakes: Option<u64>,
    /// Connections whose early data the server accepted (null without `--tls-early-data`).
    #[serde(default)]
    pub early_data_accepted: Option<u64>,
    /// Connections whose early data the server rejected: their requests went again after the
    /// handshake, each counted once (null without `--tls-early-data`).
    #[serde(default)]
    pub early_data_rejected: Option<u64>,
}

impl Connections {
    /// Adds another run's counts (`merge`), each checked by `adder`; an optional count is
    /// present when either run has it. The merge works out `per_s` again from the sum.
    pub(crate) fn add(
        &mut self,
        other: Connections,
        adder: &merge::Adder<'_>,
    ) -> anyhow::Result<()> {
        let Connections {
            opened,
            failed,
            closed_by_client,
            measured,
            per_s: _,
            resumed_handshakes,
            full_handshakes,
            early_data_accepted,
            early_data_rejected,
        } = other;
        adder.add(&mut self.opened, opened, "connections.opened")?;
        adder.add(&mut self.failed, failed, "connections.failed")?;
        adder.add(
            &mut self.closed_by_client,
            closed_by_client,
            "connections.closed_by_client",
        )?;
        adder.add(&mut self.measured, measured, "connections.measured")?;
        for (mine, theirs, field) in [
            (
                &mut self.resumed_handshakes,
                resumed_handshakes,
                "connections.resumed_handshakes",
            ),
            (
                &mut self.full_handshakes,
                full_handshakes,
                "connections.full_handshakes",
            ),
            (
                &mut self.early_data_accepted,
                early_data_accepted,
                "connections.early_data_accepted",
            ),
            (
                &mut self.early_data_rejected,
                early_data_rejected,
                "connections.early_data_rejected",
            ),
        ] {
            adder.add_optional(mine, theirs, field)?;
        }
        Ok(())
    }
}

/// The latency distributions, in microseconds.
#[derive(Debug, Serialize, Deserialize)]
pub struct Latencies {
    /// Request sent to last response byte; with `--rate`, from the scheduled send (response time).
    pub request: LatencySummary,
    /// With `--rate`: actual send to last response byte (service time).
    pub service: Option<LatencySummary>,
    /// Connection setup.
    pub connect: LatencySummary,
    /// With `--proxy`: from the start of connecting until the proxy answered `CONNECT` (a part
    /// of `connect`).
    #[serde(default)]
    pub proxy: Option<LatencySummary>,
    /// Request sent to first response byte.
    pub ttfb: LatencySummary,
    /// TLS handshake time of full handshakes: TCP connect start to TLS established (null for
    /// cleartext).
    #[serde(default)]
    pub handshake_full: Option<LatencySummary>,
    /// TLS handshake time of resumed handshakes, measured the same way (null for cleartext).
    #[serde(default)]
    pub handshake_resumed: Option<LatencySummary>,
}

/// Percentiles reported for each distribution.
#[derive(Debug, Serialize, Deserialize)]
pub struct Percentiles {
    /// Median.
    pub p50: u64,
    /// 75th percentile.
    pub p75: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 95th percentile.
    pub p95: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    #[serde(rename = "p99.9")]
    pub p99_9: u64,
    /// 99.99th percentile.
    #[serde(rename = "p99.99")]
    pub p99_99: u64,
    /// Largest value.
    pub max: u64,
}

impl Percentiles {
    /// Label and value pairs in report order.
    pub fn labelled(&self) -> [(&'static str, u64); 8] {
        [
            ("p50", self.p50),
            ("p75", self.p75),
            ("p90", self.p90),
            ("p95", self.p95),
            ("p99", self.p99),
            ("p99.9", self.p99_9),
            ("p99.99", self.p99_99),
            ("max", self.max),
        ]
    }
}

/// One latency distribution (microseconds).
#[derive(Debug, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Samples recorded.
    pub count: u64,
    /// min, max, mean, standard deviation and share within one sd of the mean.
    #[serde(flatten)]
    pub spread: Spread,
    /// Percentiles.
    pub percentiles: Percentiles,
    /// The full histogram: HdrHistogram V2 + deflate encoding, base64.
    pub hdr: String,
}

impl LatencySummary {
    /// Makes `min` and `max` the distribution's extremes (values at the run's precision, where
    /// the histogram's own are coarser), every percentile within them.
    pub(crate) fn bound(&mut self, min: u64, max: u64) {
        self.spread.min = min as f64;
        self.spread.max = max as f64;
        let p = &mut self.percentiles;
        for value in [
            &mut p.p50,
            &mut p.p75,
            &mut p.p90,
            &mut p.p95,
            &mut p.p99,
            &mut p.p99_9,
            &mut p.p99_99,
            &mut p.max,
        ] {
            *value = (*value).clamp(min, max);
        }
        p.max = max;
    }
}

/// min / max / mean / sd / share within mean ± sd, h2load's five columns.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Spread {
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Mean.
    pub mean: f64,
    /// Standard deviation.
    pub sd: f64,
    /// Percentage of values within mean ± sd.
    pub within_sd_pct: f64,
}

impl Summary {
    /// Computes the report of a finished cell.
    pub fn new(plan: &RunPlan, outcome: &RunOutcome, context: CellContext) -> Summary {
        let recorder = &outcome.recorder;
        let counters = recorder.counters;
        let elapsed_s = outcome.elapsed.as_secs_f64();
        let per_second = |count: u64| {
            if elapsed_s > 0.0 {
                count as f64 / elapsed_s
            } else {
                0.0
            }
        };
        let wire = outcome.wire;
        let [informational, success, redirection, client_error, server_error] =
            recorder.status_classes;
        let (requests, duration, warm_up) = match plan.stop {
            StopRule::Requests(n) => (Some(n), None, None),
            StopRule::Duration { warm_up, measure } => (
                None,
                Some(measure.as_secs_f64()),
                Some(warm_up.as_secs_f64()),
            ),
        };
        // TLS runs count handshakes by kind (none at all when no connection got through).
        let empty = handshakes::Handshakes::default();
        let handshakes = (plan.tls.is_some() && plan.negotiation != Negotiation::Quic)
            .then(|| recorder.handshakes.as_deref().unwrap_or(&empty));
        let early_data = plan.tls.as_ref().is_some_and(|tls| tls.early_data);
        let timeouts = plan.timeouts;
        let timeouts_s = [
            ("connect", timeouts.connect),
            ("request", timeouts.request),
            ("connection_active", timeouts.connection_active),
            ("connection_inactivity", timeouts.connection_inactivity),
        ]
        .into_iter()
        .filter_map(|(name, limit)| Some((name.to_owned(), limit?.as_secs_f64())))
        .collect();
        Summary {
            cell: CellInfo {
                index: context.index,
                label: plan.label(),
                protocol: plan.protocol_label().to_owned(),
                clients: plan.clients,
                streams: plan.max_concurrent,
                rate: plan.rate,
                level: context.level,
            },
            settings: Settings {
                urls: plan.destination.urls.clone(),
                clients: plan.clients,
                threads: plan.threads,
                max_concurrent_streams: plan.max_concurrent,
                requests,
                duration_s: duration,
                warm_up_s: warm_up,
                method: plan.request.parts.method.to_string(),
                headers: plan
                    .request
                    .parts
                    .headers
                    .iter()
                    .map(|(name, value)| {
                        format!("{name}: {}", String::from_utf8_lossy(value.as_bytes()))
                    })
                    .collect(),
                body_bytes: plan.request.parts.body.len(),
                timeouts_s,
                max_retries: plan.max_retries,
                stages: plan.stages.as_ref().map(StagesSettings::new),
                h2: plan.h2,
                input_file: plan.destination.input_file.clone(),
                urls_random: plan.request.random_paths,
                seed: plan.request.draws_random().then_some(plan.seed),
                requests_per_connection: plan.requests_per_connection,
                no_keepalive: plan.no_keepalive,
                tls_resume: plan.tls.as_ref().is_some_and(|tls| tls.resume),
                tls_early_data: plan.tls.as_ref().is_some_and(|tls| tls.early_data),
                io: plan.io.name().to_owned(),
            },
            protocol: ProtocolInfo {
                negotiated: recorder
                    .protocols()
                    .max_by_key(|(_, connections)| *connections)
                    .map(|(protocol, _)| protocol.id().to_owned()),
                connections: recorder
                    .protocols()
                    .map(|(protocol, count)| (protocol.id().to_owned(), count))
                    .collect(),
                tls: recorder.tls.clone(),
                max_concurrent_streams_effective: recorder.effective_concurrency,
            },
            interrupted: outcome.interrupted,
            elapsed_s,
            requests_per_s: per_second(counters.done),
            bytes_per_s: per_second(wire.total),
            requests: Requests {
                total: requests.unwrap_or(counters.started),
                counters,
                never_sent: outcome.never_sent,
                in_flight_at_stop: outcome.in_flight_at_stop,
                retried: recorder.retried,
            },
            status_codes: StatusCodes {
                informational,
                success,
                redirection,
                client_error,
                server_error,
            },
            stream_reset_codes: recorder
                .stream_reset_codes
                .iter()
                .map(|(code, count)| (code.name(), *count))
                .collect(),
            errors: by_kind(recorder.errors()),
            request_errors: by_kind(recorder.request_errors()),
            connection_errors: by_kind(recorder.connection_errors()),
            checks: plan.checks.as_ref().map(|_| recorder.checks.clone()),
            traffic: Traffic {
                total_bytes: wire.total,
                header_bytes: wire.headers,
                header_bytes_uncompressed: wire.headers_uncompressed,
                header_space_savings: if wire.headers_uncompressed > 0 {
                    1.0 - wire.headers as f64 / wire.headers_uncompressed as f64
                } else {
                    0.0
                },
                data_bytes: wire.data,
            },
            connections: Connections {
                opened: recorder.connections_opened,
                failed: recorder.connections_failed,
                closed_by_client: recorder.connections_closed_by_client,
                measured: recorder.connections_measured,
                per_s: per_second(recorder.connections_measured),
                resumed_handshakes: handshakes.map(|h| h.resumed.len()),
                full_handshakes: handshakes.map(|h| h.full.len()),
                early_data_accepted: early_data
                    .then(|| handshakes.map_or(0, |h| h.early_data_accepted)),
                early_data_rejected: early_data
                    .then(|| handshakes.map_or(0, |h| h.early_data_rejected)),
            },
            latency: Latencies {
                request: latency_summary(&recorder.request),
                service: recorder.service.as_ref().map(latency_summary),
                connect: latency_summary(&recorder.connect),
                proxy: recorder.proxy.as_ref().map(latency_summary),
                ttfb: latency_summary(&recorder.ttfb),
                handshake_full: handshakes.map(|h| latency_summary(&h.full)),
                handshake_resumed: handshakes.map(|h| latency_summary(&h.resumed)),
            },
            requests_per_client_per_s: spread_of(&recorder.client_rates()),
            first_error: recorder.first_error.clone(),
            warnings: recorder.warnings.clone(),
            generator_cpu_percent: context.generator_cpu_percent,
            watched: context.watched,
            timeline: Timeline::new(
                &recorder.intervals,
                outcome.measure_start_wall,
                outcome.elapsed,
            ),
            rate: requested_rate(plan).map(|requested| {
                let per_connection = recorder
                    .effective_concurrency
                    .unwrap_or(plan.max_concurrent)
                    .min(plan.max_concurrent);
                let in_flight = InFlight {
                    mean: if elapsed_s > 0.0 {
                        recorder.in_flight.integral / elapsed_s
                    } else {
                        0.0
                    },
                    limit: (plan.clients * per_connection) as u64,
                };
                RateReport {
                    scheduled: outcome.schedule.map(|kept| kept.scheduled),
                    missed: outcome.schedule.map_or(0, |kept| kept.missed),
                    ..RateReport::new(requested, per_second(counters.done), recorder, in_flight)
                }
            }),
            thresholds: Vec::new(),
            capacity: None,
            urls: url_rows(plan, recorder),
            histograms: Histograms {
                request: recorder.request.clone(),
                service: recorder.service.clone(),
                connect: recorder.connect.clone(),
                ttfb: recorder.ttfb.clone(),
            },
        }
    }
}

/// The kinds that occurred, by name.
fn by_kind(counts: impl Iterator<Item = (ErrorKind, u64)>) -> BTreeMap<String, u64> {
    counts
        .filter(|(_, count)| *count > 0)
        .map(|(kind, count)| (kind.name().to_owned(), count))
        .collect()
}

fn latency_summary(histogram: &Histogram<u64>) -> LatencySummary {
    let at = |quantile: f64| histogram.value_at_quantile(quantile);
    LatencySummary {
        count: histogram.len(),
        spread: histogram_spread(histogram),
        percentiles: Percentiles {
            p50: at(0.5),
            p75: at(0.75),
            p90: at(0.9),
            p95: at(0.95),
            p99: at(0.99),
            p99_9: at(0.999),
            p99_99: at(0.9999),
            max: histogram.max(),
        },
        hdr: hdr::to_base64(histogram),
    }
}

fn histogram_spread(histogram: &Histogram<u64>) -> Spread {
    if histogram.is_empty() {
        return Spread::default();
    }
    let (mean, sd) = (histogram.mean(), histogram.stdev());
    let within: u64 = histogram
        .iter_recorded()
        .filter(|value| (value.value_iterated_to() as f64 - mean).abs() <= sd)
        .map(|value| value.count_at_value())
        .sum();
    Spread {
        min: histogram.min() as f64,
        max: histogram.max() as f64,
        mean,
        sd,
        within_sd_pct: 100.0 * within as f64 / histogram.len() as f64,
    }
}

fn spread_of(values: &[f64]) -> Spread {
    if values.is_empty() {
        return Spread::default();
    }
    let count = values.len() as f64;
    let mean = values.iter().sum::<f64>() / count;
    let sd = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / count).sqrt();
    let within = values.iter().filter(|v| (*v - mean).abs() <= sd).count();
    Spread {
        min: values.iter().copied().fold(f64::INFINITY, f64::min),
        max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        mean,
        sd,
        within_sd_pct: 100.0 * within as f64 / count,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_counts_values_within_one_sd() {
        let spread = spread_of(&[1.0, 2.0, 3.0, 10.0]);
        assert_eq!(spread.min, 1.0);
        assert_eq!(spread.max, 10.0);
        assert_eq!(spread.mean, 4.0);
        assert_eq!(spread.within_sd_pct, 75.0);
    }

    #[test]
    fn interval_counts_past_two_to_the_64_are_refused() {
        let empty = hdr::encode(&hdr::new_histogram());
        let mut sums = IntervalSums::default();
        sums.add(u64::MAX, 1, &empty, &empty, None).unwrap();
        let error = sums.add(1, 0, &empty, &empty, None).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the intervals' completed add up past 2^64 - 1"
        );
        let error = sums.add(0, u64::MAX, &empty, &empty, None).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the intervals' errors add up past 2^64 - 1"
        );
    }

    #[test]
    fn the_last_interval_ends_at_the_measured_end() {
        // 2.5 s in 1 s intervals: the last is [2, 2.5), half a second long.
        assert_eq!(last_index(2.5, 1.0), 2);
        assert!((interval_length(2, 1.0, 2.5) - 0.5).abs() < 1e-12);
        assert_eq!(interval_length(1, 1.0, 2.5), 1.0);
        // A 2 ms drain past 2 s is no interval of its own: it joins [1, 2.002).
        assert_eq!(last_index(2.002, 1.0), 1);
        assert!((interval_length(1, 1.0, 2.002) - 1.002).abs() < 1e-12);
        // Reports from before end_s: every interval full.
        assert_eq!(interval_length(3, 1.0, 0.0), 1.0);
    }

    #[test]
    fn automatic_lengths_are_round_and_give_ten_intervals() {
        let base = TimelineInterval::AUTO_BASE;
        let ms = Duration::from_millis;
        assert_eq!(TimelineInterval::longest_round(ms(2500), base), ms(200));
        assert_eq!(TimelineInterval::longest_round(ms(60_000), base), ms(1000));
        assert_eq!(TimelineInterval::longest_round(ms(150), base), ms(10));
        assert_eq!(TimelineInterval::longest_round(ms(50), base), base);
        // Recorded at 20 ms (a long run that coarsened): 50 ms is no multiple, 100 ms is.
        assert_eq!(TimelineInterval::longest_round(ms(1200), ms(20)), ms(100));
    }
}
