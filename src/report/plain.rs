//! The numbers said in plain words: the one or two sentences a reader would otherwise have to work
//! out from the report (how many connections the concurrency took, what capped it, what failed).

use super::comparison::Row;
use super::{counted, CellInfo, Latencies, LatencySummary, RateReport, Summary};
use crate::stats::confidence::IntervalKind;
use crate::units::format_micros;

/// Two request rates within 2% of each other count as the same: a paced cell that achieved at
/// least this share of its requested rate sustained it, and a protocol within this share of
/// another (either way) served about as many requests per second.
const SAME_RATE: f64 = 0.98;

/// Sentences about one cell, most telling first; empty when there is nothing to add.
pub(crate) fn cell(summary: &Summary) -> Vec<String> {
    let mut sentences = Vec::new();
    let counters = &summary.requests.counters;
    let clients = summary.settings.clients;
    let requested = summary.settings.max_concurrent_streams;
    let opened = summary.connections.opened;
    match summary.protocol.negotiated.as_deref() {
        Some(_) if clients * requested == 1 => {}
        Some("http/1.1") if requested == 1 => sentences.push(format!(
            "HTTP/1.1 carries one request at a time per connection: {} took {}",
            counted(clients as u64, "concurrent request"),
            // Connections at once, and over the run when churn or reconnections made more.
            if opened > clients as u64 {
                format!(
                    "{} at once ({opened} opened over the run)",
                    counted(clients as u64, "connection")
                )
            } else {
                counted(opened, "connection")
            }
        )),
        Some("http/1.1") => sentences.push(format!(
            "HTTP/1.1 pipelining kept up to {requested} requests queued on {}, answered strictly in order",
            connections_phrase(clients)
        )),
        Some(protocol) => {
            let per = summary
                .protocol
                .max_concurrent_streams_effective
                .unwrap_or(requested);
            let on = if clients == 1 {
                connections_phrase(clients)
            } else {
                format!(
                    "{} ({} in flight at once)",
                    connections_phrase(clients),
                    per * clients
                )
            };
            // One stream per connection is not multiplexing: say what it was.
            sentences.push(if per == 1 {
                format!("{protocol} carried one request at a time on {on}")
            } else {
                format!("{protocol} multiplexed up to {per} concurrent requests on {on}")
            });
            if per < requested {
                sentences.push(format!(
                    "the server limited streams to {per} per connection; -m {requested} was capped"
                ));
            }
        }
        None => sentences.push("no connection was established: nothing was measured".to_owned()),
    }
    if let Some(reconnections) = opened
        .checked_sub(clients as u64)
        .filter(|extra| *extra > 0)
    {
        let by_client = summary.connections.closed_by_client.min(reconnections);
        let by_server = reconnections - by_client;
        let why = match (summary.settings.requests_per_connection, by_client, by_server) {
            (Some(limit), _, _) => format!(
                "each after at most {} by --requests-per-connection, or when the server closed them or they failed",
                counted(limit, "request")
            ),
            (None, 0, _) => "the server closed them or they failed".to_owned(),
            (None, _, 0) => "the client closed them itself when one of its timeouts ran out: -T, -N or --request-timeout; not the server".to_owned(),
            _ => format!(
                "{by_client} closed by the client itself on a timeout, {by_server} by the server or a failure"
            ),
        };
        sentences.push(format!(
            "connections were replaced {} ({why})",
            counted(reconnections, "time")
        ));
    }
    if counters.errored > 0 {
        let never_sent = summary.requests.never_sent;
        let (kind, count) = summary
            .request_errors
            .iter()
            .map(|(kind, count)| (kind.as_str(), *count))
            .max_by_key(|(_, count)| *count)
            .unwrap_or(("unknown", 0));
        // Requests never sent have no kind of their own: the connection attempts' failures are
        // why, and they count attempts, not requests.
        let why = if never_sent > count {
            let attempts = summary
                .connection_errors
                .iter()
                .max_by_key(|(_, count)| **count)
                .map_or(String::new(), |(kind, _)| format!(", most often {kind}"));
            format!(
                "no connection could carry them (never sent: {never_sent}; connection attempts failed: {}{attempts})",
                summary.connections.failed
            )
        } else {
            format!("of {kind} ({count})")
        };
        sentences.push(format!(
            "{} of {} ({:.1}%) got no complete response, most often because {why}",
            counters.errored,
            counted(summary.requests.total, "request"),
            percent(counters.errored, summary.requests.total)
        ));
    }
    if let Some(checks) = summary.checks.as_ref().filter(|checks| checks.failed > 0) {
        sentences.push(format!(
            "{} of {} ({:.1}%) failed a response check (the first: {})",
            checks.failed,
            counted(summary.requests.total, "request"),
            percent(checks.failed, summary.requests.total),
            checks
                .first_mismatch
                .as_deref()
                .unwrap_or("an unknown mismatch")
        ));
    }
    if let Some(sentence) = summary.steadiness.as_ref().and_then(|s| s.sentence()) {
        sentences.push(sentence);
    }
    if let Some(sentence) = receive_wait(&summary.latency) {
        sentences.push(sentence);
    }
    if let Some(sentence) = summary.generator.sentence() {
        // The first thing to know of a result the generator itself may have set.
        sentences.insert(0, sentence);
    }
    let error_statuses = summary.status_codes.client_error + summary.status_codes.server_error;
    if error_statuses > 0 {
        sentences.push(format!(
            "{} had a 4xx/5xx status: {} latency is that of an error page",
            counted(error_statuses, "response"),
            if error_statuses == 1 { "its" } else { "their" }
        ));
    }
    sentences
}

/// The share of the latency's p99 from which the responses' own p99 wait for h2load-rs is worth
/// a sentence: below it, the generator's part is within what a user reads as the server's.
const NOTABLE_WAIT: f64 = 0.25;

/// How long responses waited in the kernel for h2load-rs, when that is a notable part of the
/// latency (of the service time with `--rate`: the response time holds the schedule's lateness).
fn receive_wait(latency: &Latencies) -> Option<String> {
    let wait = &latency.receive_wait.as_ref()?.percentiles;
    let (what, whole) = match &latency.service {
        Some(service) => ("service time", service.percentiles.p99),
        None => ("request", latency.request.percentiles.p99),
    };
    (whole > 0 && wait.p99 as f64 >= NOTABLE_WAIT * whole as f64).then(|| {
        format!(
            "responses waited in the kernel for h2load-rs to read them: p50 {} / p99 {}, against a {what} p99 of {}; that part of each latency is the generator's own, not the server's (more -t, or an idle core for h2load-rs, shrinks it)",
            format_micros(wait.p50 as f64),
            format_micros(wait.p99 as f64),
            format_micros(whole as f64)
        )
    })
}

/// Sentences comparing protocols at each level of a sweep. A difference is stated only when the
/// ratio's 95% interval excludes 1 (no difference), with the kind of interval it was; one that
/// holds 1 is "no difference we can see", and a ratio without an interval is no evidence.
pub(crate) fn comparison(rows: &[Row]) -> Vec<String> {
    rows.iter()
        .filter_map(|row| {
            let (label, ratio) = row.ratio.as_ref()?;
            let first = rows
                .iter()
                .find(|other| other.ratio.is_none() && other.level == row.level)?;
            let (mine, theirs) = (&row.protocol, &first.protocol);
            let setting = row.setting();
            let connections = format!(
                "{} where {theirs} opened {}",
                counted(row.connections, "connection"),
                first.connections
            );
            // A p99 not estimable in either cell is no figure to set against the other.
            let p99_known = |row: &Row| row.percentiles_ci.is_some_and(|all| all[2].is_some());
            let p99 = if p99_known(row) && p99_known(first) {
                format!(
                    "p99 {:.2} ms vs {:.2} ms",
                    row.p99_us as f64 / 1000.0,
                    first.p99_us as f64 / 1000.0
                )
            } else {
                "p99 not estimable (too few samples beyond it)".to_owned()
            };
            let Some(bounds) = row.ratio_ci else {
                let why = row.ratio_ci_reason.map_or_else(
                    || "no interval".to_owned(),
                    |reason| format!("{} ({})", reason.short(), reason.needs()),
                );
                return Some(format!(
                    "at {setting} ({label} = {ratio:.2}), one run is no evidence: {why}; {mine} used {connections}; {p99}"
                ));
            };
            let interval = format!(
                "95% interval {:.2}–{:.2} {}",
                bounds.ci_low,
                bounds.ci_high.unwrap_or(f64::INFINITY),
                row.ratio_ci_kind
                    .unwrap_or(IntervalKind::WithinRun)
                    .words(row.rounds.len())
            );
            if bounds.contains(1.0) {
                return Some(format!(
                    "at {setting}, no difference we can see ({label} = {ratio:.2}, {interval}) between {mine} and {theirs}, {mine} using {connections}; {p99}"
                ));
            }
            // The same band either way: 2 - 0.98 is 1.02.
            let verdict = if *ratio >= 2.0 - SAME_RATE {
                format!("{:.0}% more requests per second than", (ratio - 1.0) * 100.0)
            } else if *ratio <= SAME_RATE {
                format!("{:.0}% fewer requests per second than", (1.0 - ratio) * 100.0)
            } else {
                "about as many requests per second as".to_owned()
            };
            Some(format!(
                "at {setting} ({label} = {ratio:.2}, {interval}), {mine} served {verdict} {theirs}, using {connections}; {p99}"
            ))
        })
        .collect()
}

/// [`rate_shortfall`] of a paced cell's report: its rate figures, concurrency, service times and
/// generator CPU; `None` for a cell that was not paced or sustained its rate.
pub(crate) fn cell_rate_shortfall(summary: &Summary) -> Option<String> {
    let rate = summary.rate.as_ref()?;
    let slack = crate::stats::slack::cell_slack_per_s(
        rate.requested_per_s,
        summary.elapsed_s,
        summary.settings.arrival.as_deref(),
    );
    rate_shortfall(
        rate,
        &summary.cell,
        summary.latency.service.as_ref(),
        summary.generator_cpu_percent,
        slack,
    )
}

/// Why a paced cell fell short of its requested `rate`, in one sentence (the text report puts it
/// under the rate figures); `None` when it sustained it. `cell` gives the concurrency, `service`
/// the service times, `cpu_percent` the generator's CPU; `slack_per_s` how far the schedule's own
/// rate may stray below the requested one by chance ([`super::count_slack_per_s`]).
pub(crate) fn rate_shortfall(
    rate: &RateReport,
    cell: &CellInfo,
    service: Option<&LatencySummary>,
    cpu_percent: f64,
    slack_per_s: f64,
) -> Option<String> {
    let fell_short = rate.achieved_per_s < SAME_RATE * rate.requested_per_s - slack_per_s;
    if !fell_short {
        return None;
    }
    let in_flight = rate.in_flight;
    let can_be = format!(
        "{} that can be in flight (-c {} × -m {})",
        counted(in_flight.limit, "request"),
        cell.clients,
        cell.streams
    );
    if in_flight.saturated() {
        // The concurrency was the limit: every connection (stream) busy most of the time, so
        // each request in flight carried achieved / limit per second; the rate needs more.
        let needed = (rate.requested_per_s * in_flight.limit as f64
            / rate.achieved_per_s.max(f64::MIN_POSITIVE))
        .ceil();
        Some(format!(
            "the rate was not sustained for lack of concurrency: on average {:.1} of the {can_be} were; \
             at this pace about {needed:.0} must be in flight for {:.0} req/s: raise -c or -m",
            in_flight.mean, rate.requested_per_s
        ))
    } else {
        let (service_p50, service_max) = service.map_or((0, 0), |service| {
            (service.percentiles.p50, service.percentiles.max)
        });
        // A stall: some responses took far longer than the usual one, and long enough to
        // matter (the same 100 ms a user notices).
        let stalled = service_max >= 100_000 && service_max >= 10 * service_p50;
        let reason = if stalled {
            format!(
                "because responses stalled (service time max {} against a median of {}), holding requests back",
                format_micros(service_max as f64),
                format_micros(service_p50 as f64)
            )
        } else {
            format!(
                "nor for stalls (service time max {}): the generator itself may be the limit \
                 ({:.0}% CPU of one core; try more -t)",
                format_micros(service_max as f64),
                cpu_percent
            )
        };
        Some(format!(
            "the rate was not sustained, though on average only {:.1} of the {can_be} were: \
             not for lack of concurrency but {reason}",
            in_flight.mean
        ))
    }
}

/// `its one connection`, or `each of 10 connections`.
fn connections_phrase(clients: usize) -> String {
    if clients == 1 {
        "its one connection".to_owned()
    } else {
        format!("each of {clients} connections")
    }
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{InFlight, Percentiles, Spread};

    /// A paced cell of `-c 4 -m 2` asked for 1000 req/s that achieved `achieved`, with `mean`
    /// requests in flight of the 8 it could have.
    fn rate(achieved: f64, mean: f64) -> RateReport {
        RateReport {
            requested_per_s: 1000.0,
            achieved_per_s: achieved,
            late: 0,
            late_pct: 0.0,
            delay_p50_us: 0,
            delay_p99_us: 0,
            delay_max_us: 0,
            delay_hdr: String::new(),
            in_flight: InFlight { mean, limit: 8 },
            scheduled: None,
            missed: 0,
        }
    }

    fn cell() -> CellInfo {
        CellInfo {
            index: 1,
            label: "h1 c=4 m=2 rate=1000".to_owned(),
            protocol: "h1".to_owned(),
            clients: 4,
            streams: 2,
            rate: Some(1000.0),
            level: 1,
            round: None,
        }
    }

    /// Service times with this median and maximum (µs).
    fn service(p50: u64, max: u64) -> LatencySummary {
        LatencySummary {
            count: 1,
            spread: Spread::default(),
            percentiles: Percentiles {
                p50,
                p75: p50,
                p90: p50,
                p95: p50,
                p99: p50,
                p99_9: p50,
                p99_99: p50,
                max,
            },
            confidence: None,
            hdr: String::new(),
        }
    }

    #[test]
    fn a_difference_is_stated_only_when_the_ratios_interval_excludes_1() {
        use crate::report::comparison::testing::row;
        use crate::stats::confidence::{Bounds, Evidence, NoInterval};
        let with = |ratio: f64, interval: Option<(f64, f64)>| {
            let mut second = row(2, "h2c", 100.0 * ratio);
            second.ratio_ci = interval.map(|(low, high)| Bounds {
                ci_low: low,
                ci_high: Some(high),
            });
            second.ratio_ci_kind = interval.map(|_| IntervalKind::WithinRun);
            second.ratio_ci_reason = interval.is_none().then_some(NoInterval {
                too_few: Evidence::Samples,
                n: 1,
                needed: 5,
            });
            comparison(&[row(1, "h1", 100.0), second])
        };
        assert_eq!(
            with(0.98, Some((0.91, 1.05))),
            ["at c=1 m=1, no difference we can see (h2c/h1 = 0.98, 95% interval 0.91–1.05 within one run) between h2c and h1, h2c using 1 connection where h1 opened 1; p99 1.00 ms vs 1.00 ms"]
        );
        // However large the ratio reads, an interval that holds 1 calls no winner.
        assert!(with(0.76, Some((0.40, 1.12)))[0].contains("no difference we can see"));
        assert_eq!(
            with(0.76, Some((0.70, 0.82))),
            ["at c=1 m=1 (h2c/h1 = 0.76, 95% interval 0.70–0.82 within one run), h2c served 24% fewer requests per second than h1, using 1 connection where h1 opened 1; p99 1.00 ms vs 1.00 ms"]
        );
        assert!(with(1.25, Some((1.10, 1.40)))[0]
            .contains("h2c served 25% more requests per second than h1"));
        assert_eq!(
            with(0.76, None),
            ["at c=1 m=1 (h2c/h1 = 0.76), one run is no evidence: n=1: no interval (an interval needs at least 5 finished requests); h2c used 1 connection where h1 opened 1; p99 1.00 ms vs 1.00 ms"]
        );
        // A p99 not estimable in either cell is not set against the other.
        let mut first = row(1, "h1", 100.0);
        first.percentiles_ci = Some([None; 4]);
        let mut second = row(2, "h2c", 99.0);
        second.ratio_ci = Some(Bounds {
            ci_low: 0.9,
            ci_high: Some(1.1),
        });
        let said = comparison(&[first, second]);
        assert!(
            said[0].ends_with("; p99 not estimable (too few samples beyond it)"),
            "{said:?}"
        );
    }

    #[test]
    fn a_wait_of_a_quarter_of_the_p99_or_more_is_said() {
        let at = |p99: u64| service(p99, p99);
        let latencies = |wait: Option<u64>, paced: Option<u64>| Latencies {
            request: at(2_000),
            service: paced.map(at),
            connect: at(100),
            proxy: None,
            ttfb: at(2_000),
            receive_wait: wait.map(at),
            handshake_full: None,
            handshake_resumed: None,
            grpc_first_message: None,
            grpc_round_trip: None,
            first_event: None,
            event_gap: None,
        };
        assert_eq!(receive_wait(&latencies(None, None)), None);
        assert_eq!(receive_wait(&latencies(Some(499), None)), None);
        let said = receive_wait(&latencies(Some(500), None)).unwrap();
        assert!(
            said.contains("p99 500us, against a request p99 of 2.00ms"),
            "{said}"
        );
        // Paced: against the service time, the response time holding the schedule's lateness.
        assert_eq!(receive_wait(&latencies(Some(500), Some(2_001))), None);
        let said = receive_wait(&latencies(Some(500), Some(2_000))).unwrap();
        assert!(
            said.contains("against a service time p99 of 2.00ms"),
            "{said}"
        );
    }

    #[test]
    fn the_rate_shortfall_says_why() {
        let cell = cell();
        // Evenly spaced sends over 1 s: the count's granularity, one request.
        let even = crate::stats::slack::count_slack_per_s(0.0, 1.0);
        // Within 2% of the rate: sustained, nothing to say.
        assert_eq!(
            rate_shortfall(&rate(980.0, 8.0), &cell, None, 50.0, even),
            None
        );
        // 5% short of 1,000/s: a shortfall for evenly spaced sends; for a Poisson schedule of
        // 1,000/s over 1 s (sd 31.6/s), 1.4 sd of its count: chance, nothing to say.
        assert!(rate_shortfall(&rate(950.0, 2.0), &cell, None, 50.0, even).is_some());
        assert_eq!(
            rate_shortfall(
                &rate(950.0, 2.0),
                &cell,
                None,
                50.0,
                crate::stats::slack::count_slack_per_s(1000f64.sqrt(), 1.0)
            ),
            None
        );
        assert_eq!(
            rate_shortfall(
                &rate(500.0, 7.5),
                &cell,
                Some(&service(1_000, 2_000)),
                50.0,
                even
            )
            .unwrap(),
            "the rate was not sustained for lack of concurrency: on average 7.5 of the 8 requests \
             that can be in flight (-c 4 × -m 2) were; at this pace about 16 must be in flight for \
             1000 req/s: raise -c or -m"
        );
        assert_eq!(
            rate_shortfall(
                &rate(500.0, 2.0),
                &cell,
                Some(&service(1_000, 200_000)),
                50.0,
                even
            )
            .unwrap(),
            "the rate was not sustained, though on average only 2.0 of the 8 requests that can be \
             in flight (-c 4 × -m 2) were: not for lack of concurrency but because responses \
             stalled (service time max 200.00ms against a median of 1.00ms), holding requests back"
        );
        assert_eq!(
            rate_shortfall(
                &rate(500.0, 2.0),
                &cell,
                Some(&service(1_000, 2_000)),
                97.4,
                even
            )
            .unwrap(),
            "the rate was not sustained, though on average only 2.0 of the 8 requests that can be \
             in flight (-c 4 × -m 2) were: not for lack of concurrency but nor for stalls (service \
             time max 2.00ms): the generator itself may be the limit (97% CPU of one core; try \
             more -t)"
        );
    }
}
