//! The JSON schema of a cell's report: [`Summary`] and its serialized parts, field order being
//! the JSON key order (how each part merges another run's: `merge.rs`).

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::observe::watch::ProcessUsage;
use crate::plan::H2Settings;
use crate::recorder::outcome::Stability;
use crate::recorder::{hdr, RequestCounters, Retried};
use crate::report::capacity;
use crate::report::generator::GeneratorLoad;
use crate::report::rate::RateReport;
use crate::stats::confidence::{Bounds, NoInterval, PercentileBounds};
use crate::stats::steadiness::Steadiness;
use crate::stats::timeline::Timeline;
use crate::tls::TlsInfo;

/// Identifies a cell.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct CellInfo {
    /// 1-based position in the run.
    pub(crate) index: usize,
    /// e.g. `h2c c=10 m=100`, or `h1 c=4 m=1 rate=500` when paced.
    pub(crate) label: String,
    /// `h1`, `h2c`, `h2c-upgrade`, `h2`, `h1-tls` or `auto`.
    pub(crate) protocol: String,
    /// Connections.
    pub(crate) clients: usize,
    /// Requests in flight per connection.
    pub(crate) streams: usize,
    /// Total requests per second asked for (`--rate`, or `--rps` × connections), if paced.
    #[serde(default)]
    pub(crate) rate: Option<f64>,
    /// The concurrency level it belongs to.
    pub(crate) level: usize,
    /// With `--rounds`: the round this run was, and the cell of the sweep it repeated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) round: Option<crate::report::rounds::RoundOf>,
}

/// The merged histograms of a cell, for exporters that need whole distributions.
#[derive(Debug, Clone)]
pub(crate) struct Histograms {
    /// Request latency (µs): the response time, from the scheduled send with `--rate`.
    pub(crate) request: Histogram<u64>,
    /// Service time (µs), from the actual send (with `--rate` only).
    pub(crate) service: Option<Histogram<u64>>,
    /// Connect time (µs).
    pub(crate) connect: Histogram<u64>,
    /// Time to first byte (µs).
    pub(crate) ttfb: Histogram<u64>,
}

impl Default for Histograms {
    fn default() -> Self {
        // A report being read holds these until its `hdr` fields are decoded: fitted, so that
        // a report of many cells does not hold three full histograms a cell meanwhile.
        Histograms {
            request: hdr::fitted_histogram(),
            service: None,
            connect: hdr::fitted_histogram(),
            ttfb: hdr::fitted_histogram(),
        }
    }
}

/// Everything a cell's report shows.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Summary {
    /// Which cell this is.
    pub(crate) cell: CellInfo,
    /// The options the run used.
    pub(crate) settings: Settings,
    /// What was actually spoken.
    pub(crate) protocol: ProtocolInfo,
    /// Whether the user interrupted the run.
    pub(crate) interrupted: bool,
    /// Length of the measured period, in seconds.
    pub(crate) elapsed_s: f64,
    /// Finished requests per second over the measured period.
    pub(crate) requests_per_s: f64,
    /// Its 95% confidence interval (batch means over the timeline; `null` when the run has
    /// too few requests or intervals to tell, `requests_per_s_ci_reason` saying which).
    #[serde(default)]
    pub(crate) requests_per_s_ci: Option<Bounds<f64>>,
    /// Why `requests_per_s_ci` is `null`; `null` when there is one.
    #[serde(default)]
    pub(crate) requests_per_s_ci_reason: Option<NoInterval>,
    /// Received bytes per second over the measured period.
    pub(crate) bytes_per_s: f64,
    /// Request counters.
    pub(crate) requests: Requests,
    /// Responses by status class.
    pub(crate) status_codes: StatusCodes,
    /// Errors by kind: connection attempts, requests and failed checks together (the sum of
    /// `request_errors`, `connection_errors` and `checks.failed`).
    pub(crate) errors: BTreeMap<String, u64>,
    /// Requests that got no complete response, by kind (with `requests.never_sent`, they make
    /// `requests.errored`).
    #[serde(default)]
    pub(crate) request_errors: BTreeMap<String, u64>,
    /// Connection attempts that failed, by kind (they make `connections.failed`).
    #[serde(default)]
    pub(crate) connection_errors: BTreeMap<String, u64>,
    /// HTTP/2 stream resets by error code name (part of `errors.stream_reset`).
    pub(crate) stream_reset_codes: BTreeMap<String, u64>,
    /// The response checks' failures (absent without `--expect-*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) checks: Option<crate::recorder::CheckTally>,
    /// A gRPC cell's calls by `grpc-status` and its messages (absent without `--grpc`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) grpc: Option<GrpcReport>,
    /// Responses read as event streams (server-sent events, NDJSON): their events and data
    /// (absent when no response was read as events: `--events off`, gRPC cells, or no response
    /// with an event stream's content-type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) events: Option<EventsReport>,
    /// Bytes received.
    pub(crate) traffic: Traffic,
    /// Connection counters.
    pub(crate) connections: Connections,
    /// Latency distributions.
    pub(crate) latency: Latencies,
    /// Spread of requests per second across clients (h2load's "req/s" row).
    pub(crate) requests_per_client_per_s: Spread,
    /// Why the cell failed, in plain words with the fix (`None` when it did not fail): what the
    /// text report leads with.
    #[serde(default)]
    pub(crate) cause: Option<Cause>,
    /// The first connection-level problem, if any, in words.
    pub(crate) first_error: Option<String>,
    /// Things worth knowing that are not errors (e.g. a server declined the h2c upgrade).
    pub(crate) warnings: Vec<String>,
    /// CPU the generator used during the cell, in percent of one core.
    pub(crate) generator_cpu_percent: f64,
    /// How busy its runner threads were, and whether that bounded the result.
    #[serde(default)]
    pub(crate) generator: GeneratorLoad,
    /// Whether the run was steady: trends in its per-interval rate and p99, a first part unlike
    /// the rest (absent under 10 intervals or a measured period under 1 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) steadiness: Option<Steadiness>,
    /// With `--until-stable`: how sure the p99 and the rate got, and whether that or the cap
    /// ended the run (absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) until_stable: Option<Stability>,
    /// With `--start-at`, the run's first cell: how long after that time its measured period
    /// began, ms (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) start_late_ms: Option<f64>,
    /// A merged cell: each part's start and rates, and which are outside tolerance (absent for
    /// a run's own cell).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) parts: Option<super::parts::Parts>,
    /// What each watched process (e.g. the target) used during the cell.
    pub(crate) watched: Vec<ProcessUsage>,
    /// Requests, errors and latency per interval of the measured period.
    pub(crate) timeline: Timeline,
    /// Scheduling figures, with `--rate`.
    pub(crate) rate: Option<RateReport>,
    /// The `--fail-if` thresholds checked against this cell (absent without `--fail-if`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) thresholds: Vec<Threshold>,
    /// What `--find-max` found (absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) capacity: Option<capacity::Capacity>,
    /// Per-URL figures, one row per path in the order given (absent with a single path).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) urls: Vec<UrlRow>,
    /// The full distributions (not serialized; the `hdr` fields carry them in JSON).
    #[serde(skip)]
    pub(crate) histograms: Histograms,
}

/// One URL's figures in a cell.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct UrlRow {
    /// The path and query requested, as given (placeholders unrendered).
    pub(crate) url: String,
    /// Measured requests that finished: `succeeded + failed`.
    pub(crate) requests: u64,
    /// Responses that succeeded as the cell counts them: status 2xx or 3xx, or with response
    /// checks (`--expect-*`) every check met.
    pub(crate) succeeded: u64,
    /// The rest: error responses, failed checks and requests that ended without a response.
    pub(crate) failed: u64,
    /// Response latency (null beyond the first 1000 URLs, or without a response).
    pub(crate) latency: Option<Box<LatencySummary>>,
}

/// Name and version of the generator.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Tool {
    /// Always `h2load-rs`.
    pub(crate) name: String,
    /// Crate version.
    pub(crate) version: String,
}

/// The options the run used.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Settings {
    /// Target URLs.
    pub(crate) urls: Vec<String>,
    /// Connections.
    pub(crate) clients: usize,
    /// Threads.
    pub(crate) threads: usize,
    /// Requested concurrent requests per connection (`-m`).
    pub(crate) max_concurrent_streams: usize,
    /// `-n`, for counted runs.
    pub(crate) requests: Option<u64>,
    /// `-D` in seconds, for timed runs.
    pub(crate) duration_s: Option<f64>,
    /// `--warm-up-time` in seconds.
    pub(crate) warm_up_s: Option<f64>,
    /// Request method.
    pub(crate) method: String,
    /// Request headers besides Host, as `name: value` (a credential's value `<redacted>`).
    pub(crate) headers: Vec<String>,
    /// Request body size.
    pub(crate) body_bytes: usize,
    /// Time limits in seconds (absent: none).
    pub(crate) timeouts_s: BTreeMap<String, f64>,
    /// `--max-retries` (null with `--no-retry`).
    #[serde(default)]
    pub(crate) max_retries: Option<u8>,
    /// `--stages`: the ramp of rates (null without).
    #[serde(default)]
    pub(crate) stages: Option<StagesSettings>,
    /// HTTP/2 settings announced (h2 runs).
    pub(crate) h2: H2Settings,
    /// `-i`: the file the other URLs came from (absent without).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) input_file: Option<String>,
    /// `--urls-random`: paths picked at random instead of in turn (absent without).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) urls_random: bool,
    /// `--arrival poisson`: paced send times were a Poisson process (absent: evenly spaced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) arrival: Option<String>,
    /// The seed of `--urls-random`, `{rand:N}`, `{uuid}` and `--arrival poisson` (`--seed`, or
    /// drawn), when the run draws random numbers: give it to `--seed` to repeat the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) seed: Option<u64>,
    /// Requests per connection before it closes and another opens (`--requests-per-connection`,
    /// 1 with `--no-keepalive`; null: as many as it can carry).
    #[serde(default)]
    pub(crate) requests_per_connection: Option<u64>,
    /// `--no-keepalive`: HTTP/1.1 requests carried `Connection: close`.
    #[serde(default)]
    pub(crate) no_keepalive: bool,
    /// `--tls-resume` (or `--tls-early-data`): connections resumed TLS sessions.
    #[serde(default)]
    pub(crate) tls_resume: bool,
    /// `--tls-early-data`: requests left as TLS 1.3 early data on resumed connections.
    #[serde(default)]
    pub(crate) tls_early_data: bool,
    /// The I/O backend the connections used (`--io` resolved): `epoll`, `uring` or
    /// `uring+sqpoll` (reports from before `--io` were epoll).
    #[serde(default = "epoll")]
    pub(crate) io: String,
    /// `--shard`: which part of the scenario the run was (absent for a whole one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) shard: Option<crate::plan::shard::Shard>,
    /// With `--shard`: the whole scenario's `-c`, `-n` and rate, the same in every part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) whole: Option<crate::plan::shard::Whole>,
}

/// The I/O backend of reports written before `--io` existed.
fn epoll() -> String {
    crate::plan::IoBackend::Epoll.name().to_owned()
}

/// A `--stages` ramp, as the JSON report shows it.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct StagesSettings {
    /// The rate at the start (`--rate`, else 0), requests per second.
    pub(crate) start_rps: f64,
    /// Each stage: its length and the rate reached at its end.
    pub(crate) stages: Vec<StageSettings>,
    /// Requests the ramp offers in all (the area under its curve).
    pub(crate) offered: f64,
}

/// One stage of a `--stages` ramp.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct StageSettings {
    /// Its length in seconds (0: a step).
    pub(crate) duration_s: f64,
    /// The rate at its end, requests per second.
    pub(crate) rps: f64,
}

/// The protocol spoken.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct ProtocolInfo {
    /// The protocol most connections spoke: `http/1.1`, `h2c` or `h2` (null without connections).
    pub(crate) negotiated: Option<String>,
    /// Connections by the protocol they spoke.
    pub(crate) connections: BTreeMap<String, u64>,
    /// The first TLS session's parameters (https only).
    pub(crate) tls: Option<TlsInfo>,
    /// Concurrent streams per connection after the server's limit (h2 only).
    pub(crate) max_concurrent_streams_effective: Option<usize>,
}

/// Request counters with h2load's meanings.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Requests {
    /// `-n`, or the requests started in a timed run.
    pub(crate) total: u64,
    /// started, done, succeeded, failed, errored, timeout (failed and errored include `never_sent`).
    #[serde(flatten)]
    pub(crate) counters: RequestCounters,
    /// Requests of `-n` never sent because no connection could carry them.
    pub(crate) never_sent: u64,
    /// Requests sent but unfinished when the run stopped.
    pub(crate) in_flight_at_stop: u64,
    /// Requests sent again because the server never processed them, by reason (each counts
    /// once above, as what finally happened).
    #[serde(default)]
    pub(crate) retried: Retried,
}

/// Responses by status class.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct StatusCodes {
    /// 1xx responses (final ones only).
    #[serde(rename = "1xx")]
    pub(crate) informational: u64,
    /// 2xx responses.
    #[serde(rename = "2xx")]
    pub(crate) success: u64,
    /// 3xx responses.
    #[serde(rename = "3xx")]
    pub(crate) redirection: u64,
    /// 4xx responses.
    #[serde(rename = "4xx")]
    pub(crate) client_error: u64,
    /// 5xx responses.
    #[serde(rename = "5xx")]
    pub(crate) server_error: u64,
}

/// A gRPC cell's calls and messages.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct GrpcReport {
    /// The method called (`/package.Service/Method`).
    pub(crate) method: String,
    /// Calls with a response, by `grpc-status` name (`OK`, `UNAVAILABLE`, ...; `OTHER` for a
    /// code outside 0-16). A response with an HTTP status other than 200 counts by its HTTP
    /// status's code whatever its `grpc-status` (404 as `UNIMPLEMENTED`, 503 as `UNAVAILABLE`,
    /// ...), a 200 whose `content-type` is not `application/grpc…` as `UNKNOWN`; a gRPC
    /// response without `grpc-status` as the error `grpc_status_missing` instead.
    pub(crate) statuses: BTreeMap<String, u64>,
    /// Messages sent: count, protobuf bytes, prefix bytes.
    pub(crate) sent: crate::recorder::grpc::MessageBytes,
    /// Messages received by calls that ended (completed, or failed by their framing).
    pub(crate) received: crate::recorder::grpc::MessageBytes,
    /// The `grpc-message` of the first call that ended with a status other than OK and sent one
    /// (absent in reports from before this field).
    #[serde(default)]
    pub(crate) first_status_message: Option<crate::recorder::grpc::StatusMessage>,
}

/// The event streams of a cell.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct EventsReport {
    /// Responses read as event streams: their heads said so (or `--events sse|ndjson`).
    pub(crate) streams: u64,
    /// Events received, counted as each arrived (a stream cut short keeps those it had).
    pub(crate) events: u64,
    /// `events` per second of the measured period.
    pub(crate) events_per_s: f64,
    /// The events' data bytes (SSE: each event's data lines joined by LF; NDJSON: the lines
    /// without their endings), of the streams whose end the reader saw: whole ones, cut ones
    /// over HTTP/3, and ones failed as `event_too_large`.
    pub(crate) data_bytes: u64,
    /// `events` over `streams`.
    pub(crate) events_per_stream: f64,
}

/// Bytes received during the measured period.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Traffic {
    /// All bytes read from sockets.
    pub(crate) total_bytes: u64,
    /// Response header bytes as sent.
    pub(crate) header_bytes: u64,
    /// Response header bytes uncompressed (equals `header_bytes` for HTTP/1.1).
    pub(crate) header_bytes_uncompressed: u64,
    /// `1 - header_bytes / header_bytes_uncompressed` (HPACK's saving), 0 to 1.
    pub(crate) header_space_savings: f64,
    /// Response body bytes.
    pub(crate) data_bytes: u64,
}

/// Connection counters.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Connections {
    /// Connections established (warm-up included).
    pub(crate) opened: u64,
    /// Connection attempts that failed.
    pub(crate) failed: u64,
    /// Established connections the client closed because of its own timeout (`-T`, `-N`, a
    /// request timeout), so not the server.
    #[serde(default)]
    pub(crate) closed_by_client: u64,
    /// Connections begun in the measured period (warm-up left out).
    #[serde(default)]
    pub(crate) measured: u64,
    /// `measured` per second of the measured period.
    #[serde(default)]
    pub(crate) per_s: f64,
    /// Of the measured TLS connections, those that resumed a session (null for cleartext).
    #[serde(default)]
    pub(crate) resumed_handshakes: Option<u64>,
    /// Of the measured TLS connections, those with a full handshake (null for cleartext).
    #[serde(default)]
    pub(crate) full_handshakes: Option<u64>,
    /// Connections whose early data the server accepted (null without `--tls-early-data`).
    #[serde(default)]
    pub(crate) early_data_accepted: Option<u64>,
    /// Connections whose early data the server rejected: their requests went again after the
    /// handshake, each counted once (null without `--tls-early-data`).
    #[serde(default)]
    pub(crate) early_data_rejected: Option<u64>,
}

/// The latency distributions, in microseconds.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Latencies {
    /// Request sent to last response byte; with `--rate`, from the scheduled send (response time).
    pub(crate) request: LatencySummary,
    /// With `--rate`: actual send to last response byte (service time).
    pub(crate) service: Option<LatencySummary>,
    /// Connection setup.
    pub(crate) connect: LatencySummary,
    /// With `--proxy`: from the start of connecting until the proxy answered `CONNECT` (a part
    /// of `connect`).
    #[serde(default)]
    pub(crate) proxy: Option<LatencySummary>,
    /// Request sent to first response byte.
    pub(crate) ttfb: LatencySummary,
    /// How long each response waited, received whole by the kernel, for h2load-rs to read it:
    /// the generator's own part of `request` (from the kernel's receive timestamp of the newest
    /// byte of the read that completed the response). Null where the transport gives no
    /// timestamps: `--io uring`, unix sockets, HTTP/3.
    #[serde(default)]
    pub(crate) receive_wait: Option<LatencySummary>,
    /// TLS handshake time of full handshakes: TCP connect start to TLS established (null for
    /// cleartext).
    #[serde(default)]
    pub(crate) handshake_full: Option<LatencySummary>,
    /// TLS handshake time of resumed handshakes, measured the same way (null for cleartext).
    #[serde(default)]
    pub(crate) handshake_resumed: Option<LatencySummary>,
    /// gRPC calls: from the send to the first response message's last byte (absent outside
    /// gRPC cells, or when no call got a message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) grpc_first_message: Option<LatencySummary>,
    /// Bidirectional gRPC calls: each message's round trip, from its last byte queued to its
    /// reply's last byte read (absent for other calls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) grpc_round_trip: Option<LatencySummary>,
    /// Event streams: from the request's send to its first event's last byte (absent when no
    /// response was read as events, or none had an event).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) first_event: Option<LatencySummary>,
    /// Event streams: between one event's last byte and the next's, on each stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) event_gap: Option<LatencySummary>,
}

/// Percentiles reported for each distribution.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Percentiles {
    /// Median.
    pub(crate) p50: u64,
    /// 75th percentile.
    pub(crate) p75: u64,
    /// 90th percentile.
    pub(crate) p90: u64,
    /// 95th percentile.
    pub(crate) p95: u64,
    /// 99th percentile.
    pub(crate) p99: u64,
    /// 99.9th percentile.
    #[serde(rename = "p99.9")]
    pub(crate) p99_9: u64,
    /// 99.99th percentile.
    #[serde(rename = "p99.99")]
    pub(crate) p99_99: u64,
    /// Largest value.
    pub(crate) max: u64,
}

impl Percentiles {
    /// Label and value pairs in report order.
    pub(crate) fn labelled(&self) -> [(&'static str, u64); 8] {
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
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct LatencySummary {
    /// Samples recorded.
    pub(crate) count: u64,
    /// min, max, mean, standard deviation and share within one sd of the mean.
    #[serde(flatten)]
    pub(crate) spread: Spread,
    /// Percentiles.
    pub(crate) percentiles: Percentiles,
    /// Their 95% confidence intervals (absent without samples, and in older reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) confidence: Option<PercentileBounds>,
    /// The full histogram: HdrHistogram V2 + deflate encoding, base64.
    pub(crate) hdr: String,
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
#[derive(Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Spread {
    /// Smallest value.
    pub(crate) min: f64,
    /// Largest value.
    pub(crate) max: f64,
    /// Mean.
    pub(crate) mean: f64,
    /// Standard deviation.
    pub(crate) sd: f64,
    /// Percentage of values within mean ± sd.
    pub(crate) within_sd_pct: f64,
}

/// Why a cell failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Cause {
    /// What kind of cause: `http1_only`, `tls_port`, `refused`, `certificate`, `error_status`
    /// or `errors`.
    pub(crate) kind: String,
    /// The cause in plain words, with the fix.
    pub(crate) text: String,
}

/// One `--fail-if` expression checked against a cell.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Threshold {
    /// The expression, canonically spelled (`p99>50ms`).
    pub(crate) expr: String,
    /// The cell's value of its metric: µs for latencies, percent for `errors`, requests per
    /// second for `rps`.
    pub(crate) value: f64,
    /// Whether the expression held, so the run fails.
    pub(crate) breached: bool,
    /// The value's 95% confidence interval, in the metric's unit; `null` when the run has none
    /// (`max`, or a run without samples).
    #[serde(default)]
    pub(crate) ci: Option<Bounds<f64>>,
    /// The interval holds the bound: the run cannot tell on which side of it the metric lies. A
    /// breach within the noise still fails the run (the value measured is past the bound); the
    /// message says a longer run can tell.
    #[serde(default)]
    pub(crate) within_noise: bool,
    /// Whether it was judged: `false` for a percentile that is not estimable (fewer than 5
    /// samples beyond it), which is then neither breached nor held.
    #[serde(default = "judged")]
    pub(crate) judged: bool,
}

/// A threshold of a report written before `judged` was judged.
fn judged() -> bool {
    true
}
