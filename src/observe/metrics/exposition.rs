//! The exposition: the [`Board`]'s cells as OpenMetrics text (prometheus-client's encoder), or as
//! Prometheus's classic text format for clients that do not ask for OpenMetrics (`curl`,
//! `promtool check metrics`).

use std::collections::HashSet;
use std::fmt;

use hdrhistogram::Histogram;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeGaugeValue, GaugeValueEncoder, NoLabelSet,
};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use super::{Board, Reading};
use crate::recorder::ErrorKind;

/// The media type of OpenMetrics text, which Prometheus asks for first.
pub(crate) const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The media type of Prometheus's classic text format.
pub(crate) const CLASSIC: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Upper bounds of the latency histogram's buckets, in microseconds (shown in seconds): 0.5 ms to
/// 10 s in 1-2.5-5 steps, then +Inf.
const BUCKETS_MICROS: [u64; 14] = [
    500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000,
    2_500_000, 5_000_000, 10_000_000,
];

/// The status classes' outcome names, 1xx..5xx.
const STATUS_CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];

/// The registry whose only collector reads `board` at each scrape.
pub(crate) fn registry(board: std::sync::Arc<Board>) -> Registry {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(BoardCollector(board)));
    registry
}

/// The registry's exposition: OpenMetrics when `openmetrics`, else the classic text format.
pub(crate) fn render(registry: &Registry, openmetrics: bool) -> String {
    let mut text = String::new();
    // Writing into a String cannot fail, nor can the collector (it only formats numbers).
    let _ = prometheus_client::encoding::text::encode(&mut text, registry);
    if openmetrics {
        text
    } else {
        to_classic(&text)
    }
}

/// OpenMetrics text to the classic format: a counter's HELP and TYPE name its samples'
/// `_total` name (OpenMetrics names the family without it; the classic parsers then see
/// samples without HELP), and the OpenMetrics-only `# UNIT` and `# EOF` lines go.
fn to_classic(openmetrics: &str) -> String {
    let counters: HashSet<&str> = openmetrics
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE ")?.strip_suffix(" counter"))
        .collect();
    let mut classic = String::with_capacity(openmetrics.len() + 16 * counters.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let renamed = ["# HELP ", "# TYPE "].iter().find_map(|comment| {
            let (name, rest) = line.strip_prefix(comment)?.split_once(' ')?;
            counters
                .contains(name)
                .then(|| format!("{comment}{name}_total {rest}"))
        });
        classic.push_str(renamed.as_deref().unwrap_or(line));
        classic.push('\n');
    }
    classic
}

/// A gauge's name, help, and value for a cell (`None`: the cell has no such series).
type Gauge = (
    &'static str,
    &'static str,
    fn(&Reading) -> Option<GaugeValue>,
);

/// A gauge's value: a count is shown as an integer.
enum GaugeValue {
    Count(u64),
    Rate(f64),
}

impl EncodeGaugeValue for GaugeValue {
    fn encode(&self, encoder: &mut GaugeValueEncoder) -> fmt::Result {
        match self {
            GaugeValue::Count(count) => count.encode(encoder),
            GaugeValue::Rate(rate) => rate.encode(encoder),
        }
    }
}

/// Reads the board at each scrape.
#[derive(Debug)]
struct BoardCollector(std::sync::Arc<Board>);

impl Collector for BoardCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let cells = self.0.read();
        encode_requests(&mut encoder, &cells)?;
        encode_gauges(&mut encoder, &cells)?;
        encode_connections_opened(&mut encoder, &cells)?;
        encode_latency(&mut encoder, &cells)
    }
}

fn encode_requests(encoder: &mut DescriptorEncoder, cells: &[Reading]) -> fmt::Result {
    let mut family = encoder.encode_descriptor(
            "h2load_rs_requests",
            "Requests finished, by outcome: the response's status class (1xx..5xx), or check for a response that failed a response check, or the error kind of a request that got no response",
            None,
            MetricType::Counter,
        )?;
    for cell in cells {
        for (outcome, count) in outcomes(cell) {
            family
                .encode_family(&labels(cell, Some(("outcome", outcome))))?
                .encode_counter::<NoLabelSet, _, u64>(&count, None)?;
        }
    }
    Ok(())
}

fn encode_gauges(encoder: &mut DescriptorEncoder, cells: &[Reading]) -> fmt::Result {
    let gauges: [Gauge; 4] = [
            (
                "h2load_rs_requests_in_flight",
                "Requests sent and not finished",
                |cell| Some(GaugeValue::Count(cell.snapshot.tallies.in_flight)),
            ),
            (
                "h2load_rs_achieved_rps",
                "Requests finished per second: the mean since the cell started, the report's figure once it ended",
                |cell| Some(GaugeValue::Rate(cell.achieved_rps)),
            ),
            (
                "h2load_rs_requested_rps",
                "The rate asked for with --rate, in requests per second",
                |cell| cell.requested_rps.map(GaugeValue::Rate),
            ),
            (
                "h2load_rs_connections_active",
                "Connections open",
                |cell| Some(GaugeValue::Count(cell.snapshot.tallies.connections_active)),
            ),
        ];
    for (name, help, value) in gauges {
        let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
        for cell in cells {
            if let Some(value) = value(cell) {
                family
                    .encode_family(&labels(cell, None))?
                    .encode_gauge(&value)?;
            }
        }
    }
    Ok(())
}

fn encode_connections_opened(encoder: &mut DescriptorEncoder, cells: &[Reading]) -> fmt::Result {
    let mut family = encoder.encode_descriptor(
        "h2load_rs_connections_opened",
        "Connections established",
        None,
        MetricType::Counter,
    )?;
    for cell in cells {
        family
            .encode_family(&labels(cell, None))?
            .encode_counter::<NoLabelSet, _, u64>(
                &cell.snapshot.tallies.connections_opened,
                None,
            )?;
    }
    Ok(())
}

fn encode_latency(encoder: &mut DescriptorEncoder, cells: &[Reading]) -> fmt::Result {
    let mut family = encoder.encode_descriptor(
            "h2load_rs_request_duration",
            "Response time of the responses, from each request's scheduled send to its last byte (converted from an HDR histogram of 3 significant digits)",
            Some(&Unit::Seconds),
            MetricType::Histogram,
        )?;
    for cell in cells {
        let histogram = &cell.snapshot.request;
        family
            .encode_family(&labels(cell, None))?
            .encode_histogram::<NoLabelSet>(
                sum_seconds(histogram),
                histogram.len(),
                &buckets(histogram),
                None,
            )?;
    }
    Ok(())
}

/// The `cell` and `protocol` labels, and one more if given.
fn labels<'a>(
    cell: &'a Reading,
    extra: Option<(&'static str, &'a str)>,
) -> Vec<(&'static str, &'a str)> {
    let mut labels = vec![("cell", cell.cell.as_str()), ("protocol", cell.protocol)];
    labels.extend(extra);
    labels
}

/// The request counter's outcomes with their counts: 2xx always, every other one that occurred.
fn outcomes(cell: &Reading) -> Vec<(&'static str, u64)> {
    let tallies = &cell.snapshot.tallies;
    let classes = STATUS_CLASSES.into_iter().zip(tallies.status_classes);
    let errors = ErrorKind::ALL
        .iter()
        .map(|kind| kind.name())
        .zip(tallies.request_errors);
    classes
        .chain(errors)
        .filter(|(outcome, count)| *count > 0 || *outcome == "2xx")
        .collect()
}

/// The histogram's values added up, in seconds.
fn sum_seconds(histogram: &Histogram<u64>) -> f64 {
    histogram.mean() * histogram.len() as f64 / 1e6
}

/// The histogram's counts per bucket (not cumulative: the encoder adds them up), `+Inf` last. A
/// value goes in the first bucket whose bound is at least the top of its HDR bucket, so no
/// response is shown faster than it was.
fn buckets(histogram: &Histogram<u64>) -> Vec<(f64, u64)> {
    let mut counts = [0u64; BUCKETS_MICROS.len() + 1];
    for value in histogram.iter_recorded() {
        let top = histogram.highest_equivalent(value.value_iterated_to());
        let index = BUCKETS_MICROS
            .iter()
            .position(|bound| top <= *bound)
            .unwrap_or(BUCKETS_MICROS.len());
        counts[index] += value.count_at_value();
    }
    BUCKETS_MICROS
        .iter()
        .map(|bound| *bound as f64 / 1e6)
        .chain([f64::INFINITY])
        .zip(counts)
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::observe::live::Live;
    use crate::observe::metrics::Requested;
    use crate::plan::{StopRule, TimelineInterval};
    use crate::recorder::hdr::new_histogram;
    use crate::recorder::{Recorder, RequestStart, ResponseSample};

    /// A recorder of one thread that saw `statuses` answered after `millis` each, then
    /// `failed_checks` answered the same way that failed a response check, and 3 resets.
    fn recorder(statuses: &[u16], failed_checks: &[u16], millis: u64) -> Recorder {
        let t0 = Instant::now();
        let interval = TimelineInterval::choose(None, &StopRule::Requests(1));
        let mut recorder = Recorder::new(t0, 1, interval, false);
        recorder.connected(0, t0, t0);
        let sample = |recorder: &mut Recorder, status: u16| {
            let start = RequestStart::first(t0, t0, 1);
            recorder.request_started(start);
            let end = t0 + Duration::from_millis(millis);
            ResponseSample {
                start,
                first_byte: end,
                end,
                status,
                grpc: None,
            }
        };
        for status in statuses {
            let response = sample(&mut recorder, *status);
            recorder.response(0, response);
        }
        for status in failed_checks {
            let response = sample(&mut recorder, *status);
            recorder.response_failed_check(0, response, || "body lacks pong".to_owned());
        }
        recorder.requests_failed(3, ErrorKind::Reset);
        // A failed connection attempt is no request: it must not show in the request counter.
        recorder.connect_failed(crate::recorder::Failure::new(ErrorKind::Connect, "refused"));
        recorder
    }

    /// The value of the sample line starting with `prefix` (its name and labels).
    fn sample(text: &str, prefix: &str) -> f64 {
        let line = text
            .lines()
            .find(|line| line.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix} in\n{text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    }

    #[test]
    fn exposes_the_published_counts_of_every_cell() {
        let board = Arc::new(Board::default());
        let live = Arc::new(Live::new(1));
        // Two 200s failed a check: they count under `check`, not `2xx`, as in the report.
        live.publish_final(0, &recorder(&[200, 200, 204, 503], &[200, 200], 2));
        let index = board.add_cell(
            "h1 c=1 m=1 r=50".to_owned(),
            "h1",
            Requested::Constant(50.0),
            live,
        );
        board.finish_cell(index, 42.5);
        let text = render(&registry(board), false);
        let labels = r#"{cell="h1 c=1 m=1 r=50",protocol="h1""#;
        let count = |name: &str, outcome: &str| {
            sample(&text, &format!(r#"{name}{labels},outcome="{outcome}"}}"#))
        };
        assert_eq!(count("h2load_rs_requests_total", "2xx"), 3.0);
        assert_eq!(count("h2load_rs_requests_total", "5xx"), 1.0);
        assert_eq!(count("h2load_rs_requests_total", "reset"), 3.0);
        assert_eq!(count("h2load_rs_requests_total", "check"), 2.0);
        assert!(!text.contains(r#"outcome="connect""#), "{text}");
        assert!(!text.contains(r#"outcome="4xx""#), "{text}");
        let gauge = |name: &str| sample(&text, &format!("{name}{labels}}}"));
        assert_eq!(gauge("h2load_rs_requested_rps"), 50.0);
        assert_eq!(gauge("h2load_rs_achieved_rps"), 42.5);
        assert_eq!(gauge("h2load_rs_requests_in_flight"), 0.0);
        assert_eq!(gauge("h2load_rs_connections_active"), 0.0);
        assert_eq!(gauge("h2load_rs_connections_opened_total"), 1.0);
        assert_eq!(gauge("h2load_rs_request_duration_seconds_count"), 6.0);
        // 6 responses of 2 ms (below 2048 µs the HDR histogram is exact to the microsecond).
        let sum = gauge("h2load_rs_request_duration_seconds_sum");
        assert!((sum - 0.012).abs() < 1e-12, "{sum}");
        let bucket = |le: &str| {
            sample(
                &text,
                &format!(r#"h2load_rs_request_duration_seconds_bucket{{le="{le}",cell="#),
            )
        };
        assert_eq!(bucket("0.001"), 0.0);
        assert_eq!(bucket("0.0025"), 6.0);
        assert_eq!(bucket("+Inf"), 6.0);
        // Every family has its HELP and TYPE under the name of its samples.
        for name in [
            "h2load_rs_requests_total",
            "h2load_rs_requests_in_flight",
            "h2load_rs_achieved_rps",
            "h2load_rs_requested_rps",
            "h2load_rs_connections_active",
            "h2load_rs_connections_opened_total",
            "h2load_rs_request_duration_seconds",
        ] {
            assert!(text.contains(&format!("# HELP {name} ")), "{name}\n{text}");
            assert!(text.contains(&format!("# TYPE {name} ")), "{name}\n{text}");
        }
    }

    #[test]
    fn a_closed_loop_cell_has_no_requested_rate() {
        let board = Arc::new(Board::default());
        board.add_cell(
            "h2c c=1 m=1".to_owned(),
            "h2c",
            Requested::Nothing,
            Arc::new(Live::new(1)),
        );
        let text = render(&registry(board), true);
        assert!(!text.contains("h2load_rs_requested_rps{"), "{text}");
        assert!(
            text.contains(
                r#"h2load_rs_requests_total{cell="h2c c=1 m=1",protocol="h2c",outcome="2xx"} 0"#
            ),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[test]
    fn buckets_hold_each_value_at_the_first_bound_not_below_it() {
        let mut histogram = new_histogram();
        // 1000 µs is exactly a bound; 2501 µs shares its HDR bucket with 2500 (2 µs wide there),
        // whose top is 2501: it goes above 2.5 ms; 20 s is past the last bound.
        for micros in [400, 1_000, 1_001, 2_500, 2_501, 20_000_000] {
            histogram.record(micros).unwrap();
        }
        let buckets = buckets(&histogram);
        let count = |bound: f64| buckets.iter().find(|(le, _)| *le == bound).unwrap().1;
        assert_eq!(count(0.0005), 1);
        assert_eq!(count(0.001), 1);
        assert_eq!(count(0.0025), 1);
        assert_eq!(count(0.005), 2);
        assert_eq!(count(f64::INFINITY), 1);
        assert_eq!(buckets.iter().map(|(_, count)| count).sum::<u64>(), 6);
        assert_eq!(buckets.len(), BUCKETS_MICROS.len() + 1);
    }

    #[test]
    fn classic_text_names_counters_by_their_samples() {
        let openmetrics = "# HELP a_requests Requests.\n# TYPE a_requests counter\n\
            a_requests_total 3\n# HELP b Gauge.\n# TYPE b gauge\nb 1\n\
            # HELP c_seconds Lat.\n# TYPE c_seconds histogram\n# UNIT c_seconds seconds\n\
            c_seconds_count 0\n# EOF\n";
        assert_eq!(
            to_classic(openmetrics),
            "# HELP a_requests_total Requests.\n# TYPE a_requests_total counter\n\
             a_requests_total 3\n# HELP b Gauge.\n# TYPE b gauge\nb 1\n\
             # HELP c_seconds Lat.\n# TYPE c_seconds histogram\nc_seconds_count 0\n"
        );
    }
}
