//! The comparison table: one row per cell, and each protocol's throughput relative to the first
//! protocol at the same concurrency level (e.g. `h2c/h1 = 0.48`).

pub(crate) mod rounds;

use serde::{Deserialize, Serialize};

use super::capacity::answer::CapacityRatio;
use super::capacity::sweep::level_ratio;
use super::capacity::Answer;
use super::rounds::RoundFigures;
use super::Summary;
use crate::stats::confidence::{Bounds, Evidence, IntervalKind, NoInterval};

/// One cell in the comparison.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Row {
    /// 1-based cell position.
    pub(crate) cell: usize,
    /// The cell's protocol.
    pub(crate) protocol: String,
    /// Connections.
    pub(crate) clients: usize,
    /// Requests in flight per connection.
    pub(crate) streams: usize,
    /// Total requests per second asked for, if paced.
    #[serde(default)]
    pub(crate) rate: Option<f64>,
    /// The level the cell belongs to: its protocols are compared with the level's first.
    #[serde(default)]
    pub(crate) level: usize,
    /// Finished requests per second.
    pub(crate) requests_per_s: f64,
    /// Its 95% confidence interval, when the cell had requests and intervals enough.
    #[serde(default)]
    pub(crate) requests_per_s_ci: Option<Bounds<f64>>,
    /// Why `requests_per_s_ci` is `null`.
    #[serde(default)]
    pub(crate) requests_per_s_ci_reason: Option<NoInterval>,
    /// Received megabytes (10^6 bytes) per second. Renamed from `mb_per_s` (MiB, 2^20 bytes)
    /// in schema 3, so that no reader takes one for the other. Both figures default when absent
    /// so that a schema 2 report reads as far as its `schema_version`, which `merge` and `diff`
    /// then refuse by name (the rows are computed again from the cells in any case).
    #[serde(default)]
    pub(crate) megabytes_per_s: f64,
    /// Received gigabits (10^9 bits) per second (`gbps` in schema 2).
    #[serde(default)]
    pub(crate) gigabits_per_s: f64,
    /// Request latency percentiles and maximum, in microseconds.
    pub(crate) p50_us: u64,
    /// 90th percentile.
    pub(crate) p90_us: u64,
    /// 99th percentile.
    pub(crate) p99_us: u64,
    /// 99.9th percentile.
    pub(crate) p99_9_us: u64,
    /// Maximum.
    pub(crate) max_us: u64,
    /// The 95% confidence intervals of p50, p90, p99 and p99.9, when the cell had samples;
    /// each `None` when that percentile is not estimable (too few samples beyond it).
    #[serde(default)]
    pub(crate) percentiles_ci: Option<[Option<Bounds<u64>>; 4]>,
    /// Requests without a complete response.
    pub(crate) errors: u64,
    /// Failed requests, percent of those done (as `--fail-if errors` counts).
    #[serde(default)]
    pub(crate) failed_percent: f64,
    /// Its 95% interval across rounds (`--rounds`); none within one run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) failed_percent_ci: Option<Bounds<f64>>,
    /// Connections opened.
    pub(crate) connections: u64,
    /// Generator CPU, percent of one core.
    pub(crate) generator_cpu_percent: f64,
    /// A runner thread was busy 90% of its time or more: h2load-rs may have set the result.
    #[serde(default)]
    pub(crate) generator_limited: bool,
    /// CPU of the first watched process (the target), percent of one core.
    pub(crate) target_cpu_percent: Option<f64>,
    /// Peak RSS of the first watched process, KiB.
    pub(crate) target_rss_peak_kib: Option<u64>,
    /// Throughput relative to the first protocol of the same level, as `(label, ratio)`, e.g.
    /// `("h2c/h1", 0.48)`; absent for that first protocol itself.
    pub(crate) ratio: Option<(String, f64)>,
    /// The ratio's 95% confidence interval: within one run, from both rates' (their relative
    /// half-widths added in quadrature, as for any ratio of independent estimates), absent when
    /// either has none; with `--rounds`, Student's t over the rounds' paired ratios.
    #[serde(default)]
    pub(crate) ratio_ci: Option<Bounds<f64>>,
    /// What `ratio_ci`'s spread covers (`within_run`); `None` without one.
    #[serde(default)]
    pub(crate) ratio_ci_kind: Option<IntervalKind>,
    /// Why a ratio has no `ratio_ci` (the rate of the two with the least evidence); `None` with
    /// one, and without a ratio.
    #[serde(default)]
    pub(crate) ratio_ci_reason: Option<NoInterval>,
    /// With `--find-max`: the cell's capacity, as every output states it (`ratio` is then absent:
    /// a search's whole run mixes its steps' rates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) capacity: Option<Answer>,
    /// With `--find-max`: the cell's capacity over its level's first cell's, from the two answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) capacity_ratio: Option<CapacityRatio>,
    /// With `--rounds`: each round's figures (the row's are their means, its intervals across
    /// them); empty for a single run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) rounds: Vec<RoundFigures>,
    /// A cell that read event streams: their rate and latencies (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) events: Option<EventFigures>,
}

/// An event-stream cell's figures in the comparison, latencies in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct EventFigures {
    /// Events received per second.
    pub(crate) events_per_s: f64,
    /// Time to first event, p50 and p99 (0 without an event).
    pub(crate) first_event_p50_us: u64,
    /// Its 99th percentile.
    pub(crate) first_event_p99_us: u64,
    /// Gaps between events, p50 and p99 (0 without a gap).
    pub(crate) event_gap_p50_us: u64,
    /// Its 99th percentile.
    pub(crate) event_gap_p99_us: u64,
}

impl EventFigures {
    /// The figures of `cell`, if it read event streams.
    fn of(cell: &Summary) -> Option<EventFigures> {
        let events = cell.events.as_ref()?;
        let at = |latency: &Option<super::LatencySummary>, p99: bool| {
            latency.as_ref().map_or(0, |latency| match p99 {
                true => latency.percentiles.p99,
                false => latency.percentiles.p50,
            })
        };
        let latency = &cell.latency;
        Some(EventFigures {
            events_per_s: events.events_per_s,
            first_event_p50_us: at(&latency.first_event, false),
            first_event_p99_us: at(&latency.first_event, true),
            event_gap_p50_us: at(&latency.event_gap, false),
            event_gap_p99_us: at(&latency.event_gap, true),
        })
    }
}

impl Row {
    /// `c=10 m=1`, with ` rate=500` when paced: what the row's level ran.
    pub(crate) fn setting(&self) -> String {
        crate::plan::setting_label(self.clients, self.streams, self.rate)
    }

    /// The columns that lead every table of cells: `#`, protocol, c and m.
    pub(crate) fn key_columns(&self) -> Vec<String> {
        vec![
            self.cell.to_string(),
            self.protocol.clone(),
            self.clients.to_string(),
            self.streams.to_string(),
        ]
    }
}

/// Builds the rows of `cells`: one per cell, or with `--rounds` one per cell of the sweep, its
/// figures across its rounds.
pub(crate) fn rows(cells: &[Summary]) -> Vec<Row> {
    if cells.iter().any(|cell| cell.cell.round.is_some()) {
        return rounds::combine(
            cells
                .iter()
                .filter_map(|cell| Some((cell.cell.round?, row(cell))))
                .collect(),
        );
    }
    cells
        .iter()
        .map(|cell| {
            let first = cells
                .iter()
                .find(|other| other.cell.level == cell.cell.level)
                .expect("a cell is in its own level");
            let mut row = row(cell);
            // A search's rate over its whole run says nothing: its capacity ratio does.
            row.capacity = cell.capacity.as_ref().map(|found| found.answer.clone());
            row.capacity_ratio = level_ratio(cells, cell);
            if first.cell.index != cell.cell.index && cell.capacity.is_none() {
                let ratio = if first.requests_per_s > 0.0 {
                    cell.requests_per_s / first.requests_per_s
                } else {
                    0.0
                };
                row.ratio = Some((
                    format!("{}/{}", cell.cell.protocol, first.cell.protocol),
                    ratio,
                ));
                let bounds = ratio_bounds(cell, first);
                row.ratio_ci = bounds.ok();
                row.ratio_ci_kind = bounds.is_ok().then_some(IntervalKind::WithinRun);
                row.ratio_ci_reason = bounds.err();
            }
            row
        })
        .collect()
}

/// One run's row, without a ratio.
fn row(cell: &Summary) -> Row {
    let percentiles = &cell.latency.request.percentiles;
    let target = cell.watched.first();
    let done = cell.requests.counters.done + cell.requests.never_sent;
    Row {
        cell: cell.cell.index,
        protocol: cell.cell.protocol.clone(),
        clients: cell.cell.clients,
        streams: cell.cell.streams,
        rate: cell.cell.rate,
        level: cell.cell.level,
        requests_per_s: cell.requests_per_s,
        requests_per_s_ci: cell.requests_per_s_ci,
        requests_per_s_ci_reason: cell.requests_per_s_ci_reason,
        megabytes_per_s: cell.bytes_per_s / 1e6,
        gigabits_per_s: cell.bytes_per_s * 8.0 / 1e9,
        p50_us: percentiles.p50,
        p90_us: percentiles.p90,
        p99_us: percentiles.p99,
        p99_9_us: percentiles.p99_9,
        max_us: percentiles.max,
        percentiles_ci: cell
            .latency
            .request
            .confidence
            .as_ref()
            .map(|bounds| [bounds.p50, bounds.p90, bounds.p99, bounds.p99_9]),
        errors: cell.requests.counters.errored,
        failed_percent: if done > 0 {
            100.0 * cell.requests.counters.failed as f64 / done as f64
        } else {
            0.0
        },
        failed_percent_ci: None,
        connections: cell.connections.opened,
        generator_cpu_percent: cell.generator_cpu_percent,
        generator_limited: cell.generator.limited,
        target_cpu_percent: target.map(|usage| usage.cpu_percent),
        target_rss_peak_kib: target.map(|usage| usage.rss_peak_kib),
        ratio: None,
        ratio_ci: None,
        ratio_ci_kind: None,
        ratio_ci_reason: None,
        capacity: None,
        capacity_ratio: None,
        rounds: Vec::new(),
        events: EventFigures::of(cell),
    }
}

/// The 95% interval of `cell`'s rate over `first`'s: each rate's relative half-width (the
/// larger side), added in quadrature, around the ratio; without one, why (the reason of the rate
/// with the least evidence, the cell's own first).
fn ratio_bounds(cell: &Summary, first: &Summary) -> Result<Bounds<f64>, NoInterval> {
    let relative = |summary: &Summary| {
        let none = || {
            summary.requests_per_s_ci_reason.unwrap_or(NoInterval {
                too_few: Evidence::Samples,
                n: 0,
                needed: crate::stats::confidence::MIN_RATE_SAMPLES,
            })
        };
        let bounds = summary.requests_per_s_ci.ok_or_else(none)?;
        let rate = summary.requests_per_s;
        let high = bounds.ci_high.ok_or_else(none)?;
        if rate > 0.0 {
            Ok((rate - bounds.ci_low).max(high - rate) / rate)
        } else {
            Err(none())
        }
    };
    let (mine, theirs) = (relative(cell)?, relative(first)?);
    let ratio = cell.requests_per_s / first.requests_per_s;
    let half = ratio * mine.hypot(theirs);
    Ok(Bounds {
        ci_low: (ratio - half).max(0.0),
        ci_high: Some(ratio + half),
    })
}

/// What stands for the interval of a percentile that is not estimable.
pub(crate) const NOT_ESTIMABLE: &str = "n/e";

/// The line under a table that marks a percentile `n/e`: what it means.
pub(crate) fn not_estimable_legend() -> String {
    format!(
        "{NOT_ESTIMABLE}: not estimable, fewer than {:.0} samples beyond the percentile (p99 needs 500 samples, p99.9 5,000): its value is the histogram's, with no interval",
        crate::stats::confidence::MIN_TAIL
    )
}

/// The legend the comparison of `rows` needs: when a percentile it shows is not estimable.
pub(crate) fn legend(rows: &[Row]) -> Option<String> {
    rows.iter()
        .filter_map(|row| row.percentiles_ci)
        .any(|all| all.iter().any(Option::is_none))
        .then(not_estimable_legend)
}

/// How the comparison's figures carry their intervals: inline, `1.23 (1.10–1.40)`, for people
/// (text, Markdown, HTML); as columns of their own for programs (CSV).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Intervals {
    Inline,
    Columns,
}

/// Column titles and cell texts of the comparison, shared by the text, Markdown, HTML and CSV
/// forms.
pub(crate) fn table(rows: &[Row], intervals: Intervals) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let with_target = rows.iter().any(|row| row.target_cpu_percent.is_some());
    // A rate column only when it tells rows apart: the labels carry a constant rate already.
    let with_rate = rows.iter().any(|row| row.rate != rows[0].rate);
    let mut titles = vec!["#", "protocol", "c", "m"];
    if with_rate {
        titles.push("rate");
    }
    let columns = intervals == Intervals::Columns;
    if columns {
        titles.extend([
            "req/s",
            "req/s low",
            "req/s high",
            "MB/s",
            "Gbit/s",
            "p50",
            "p50 low",
            "p50 high",
            "p90",
            "p90 low",
            "p90 high",
            "p99",
            "p99 low",
            "p99 high",
            "p99.9",
            "p99.9 low",
            "p99.9 high",
        ]);
    } else {
        titles.extend(["req/s", "MB/s", "Gbit/s", "p50", "p90", "p99", "p99.9"]);
    }
    titles.extend(["max", "request errors", "conns", "gen CPU%", "gen-bound"]);
    // Event-stream cells: their rate and latencies.
    let with_events = rows.iter().any(|row| row.events.is_some());
    if with_events {
        titles.extend([
            "events/s",
            "1st event p50",
            "1st event p99",
            "event gap p50",
            "event gap p99",
        ]);
    }
    if with_target {
        titles.extend(["target CPU%", "target RSS MB"]);
    }
    // With --find-max: each cell's capacity, the figure every output states.
    let with_capacity = rows.iter().any(|row| row.capacity.is_some());
    match (with_capacity, columns) {
        (false, _) => {}
        (true, false) => titles.push("capacity"),
        (true, true) => titles.extend(["capacity", "capacity low", "capacity high"]),
    }
    titles.push("vs first");
    let millis = |micros: u64| format!("{:.2}", micros as f64 / 1000.0);
    let lines = rows
        .iter()
        .map(|row| {
            let mut line = row.key_columns();
            if with_rate {
                line.push(row.rate.map_or_else(String::new, |rate| rate.to_string()));
            }
            // A figure and its interval: inline, or two more columns (empty when unknown).
            let figure =
                |line: &mut Vec<String>, value: String, bounds: Option<(String, String)>| match (
                    columns, bounds,
                ) {
                    (true, bounds) => {
                        let (low, high) = bounds.unwrap_or_default();
                        line.extend([value, low, high]);
                    }
                    (false, Some((low, high))) => line.push(format!("{value} ({low}–{high})")),
                    (false, None) => line.push(value),
                };
            let open = |high: Option<String>| high.unwrap_or_else(|| "?".to_owned());
            match row.requests_per_s_ci {
                // No spread to measure (a kept --rate schedule): not an interval of certainty.
                Some(bounds) if bounds.is_point() && !columns => {
                    line.push(format!("{:.1} (as scheduled)", row.requests_per_s));
                }
                ci => figure(
                    &mut line,
                    format!("{:.1}", row.requests_per_s),
                    ci.map(|bounds| {
                        (
                            format!("{:.1}", bounds.ci_low),
                            open(bounds.ci_high.map(|high| format!("{high:.1}"))),
                        )
                    }),
                ),
            }
            line.extend([
                format!("{:.2}", row.megabytes_per_s),
                format!("{:.3}", row.gigabits_per_s),
            ]);
            let values = [row.p50_us, row.p90_us, row.p99_us, row.p99_9_us];
            for (index, value) in values.into_iter().enumerate() {
                match row.percentiles_ci.map(|all| all[index]) {
                    // Not estimable: the value stays, its interval is marked (both columns in CSV).
                    Some(None) if columns => line.extend([
                        millis(value),
                        NOT_ESTIMABLE.to_owned(),
                        NOT_ESTIMABLE.to_owned(),
                    ]),
                    Some(None) => line.push(format!("{} ({NOT_ESTIMABLE})", millis(value))),
                    interval => figure(
                        &mut line,
                        millis(value),
                        interval.flatten().map(|bounds| {
                            (millis(bounds.ci_low), open(bounds.ci_high.map(millis)))
                        }),
                    ),
                }
            }
            line.extend([
                millis(row.max_us),
                row.errors.to_string(),
                row.connections.to_string(),
                format!("{:.0}", row.generator_cpu_percent),
                if row.generator_limited { "yes" } else { "" }.to_owned(),
            ]);
            if with_events {
                match &row.events {
                    Some(events) => line.extend([
                        format!("{:.1}", events.events_per_s),
                        millis(events.first_event_p50_us),
                        millis(events.first_event_p99_us),
                        millis(events.event_gap_p50_us),
                        millis(events.event_gap_p99_us),
                    ]),
                    None => line.extend(std::iter::repeat_n(String::new(), 5)),
                }
            }
            if with_target {
                line.push(
                    row.target_cpu_percent
                        .map_or_else(String::new, |cpu| format!("{cpu:.0}")),
                );
                line.push(row.target_rss_peak_kib.map_or_else(String::new, |kib| {
                    format!("{:.1}", kib as f64 * 1024.0 / 1e6)
                }));
            }
            match (with_capacity, &row.capacity, columns) {
                (false, _, _) => {}
                (true, Some(answer), false) => line.push(answer.figure()),
                (true, Some(answer), true) => line.extend(answer.columns()),
                (true, None, false) => line.push(String::new()),
                (true, None, true) => line.extend([String::new(), String::new(), String::new()]),
            }
            if let Some(ratio) = &row.capacity_ratio {
                line.push(ratio.text());
                return line;
            }
            line.push(
                row.ratio
                    .as_ref()
                    .map_or_else(String::new, |(label, ratio)| {
                        match (row.ratio_ci, row.ratio_ci_reason) {
                            (Some(bounds), _) => format!(
                                "{label} = {ratio:.2} ({:.2}–{:.2})",
                                bounds.ci_low,
                                bounds.ci_high.unwrap_or(f64::INFINITY)
                            ),
                            (None, Some(reason)) => {
                                format!("{label} = {ratio:.2} ({})", reason.short())
                            }
                            (None, None) => format!("{label} = {ratio:.2}"),
                        }
                    }),
            );
            line
        })
        .collect();
    (titles, lines)
}

/// Rows for the tests of the comparison's renderings (here and in `plain.rs`).
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// Cell `cell` of level 0, `protocol` at `rps` req/s (its interval ±5%), `c=1 m=1`, its p99
    /// 1 ms; a ratio over the first's 100 req/s from the second cell on, without an interval.
    pub(crate) fn row(cell: usize, protocol: &str, rps: f64) -> Row {
        let bounds = |value: u64| {
            Some(Bounds {
                ci_low: value - value / 10,
                ci_high: Some(value + value / 10),
            })
        };
        Row {
            cell,
            protocol: protocol.to_owned(),
            clients: 1,
            streams: 1,
            rate: None,
            level: 0,
            requests_per_s: rps,
            requests_per_s_ci: Some(Bounds {
                ci_low: rps * 0.95,
                ci_high: Some(rps * 1.05),
            }),
            requests_per_s_ci_reason: None,
            megabytes_per_s: 0.0,
            gigabits_per_s: 0.0,
            p50_us: 500,
            p90_us: 800,
            p99_us: 1_000,
            p99_9_us: 2_000,
            max_us: 3_000,
            percentiles_ci: Some([bounds(500), bounds(800), bounds(1_000), bounds(2_000)]),
            errors: 0,
            failed_percent: 0.0,
            failed_percent_ci: None,
            connections: 1,
            generator_cpu_percent: 10.0,
            generator_limited: false,
            target_cpu_percent: None,
            target_rss_peak_kib: None,
            ratio: (cell > 1).then(|| (format!("{protocol}/h1"), rps / 100.0)),
            ratio_ci: None,
            ratio_ci_kind: None,
            ratio_ci_reason: None,
            rounds: Vec::new(),
            events: None,
            capacity: None,
            capacity_ratio: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::row;
    use super::*;

    #[test]
    fn a_percentile_not_estimable_keeps_its_value_and_marks_its_interval() {
        let mut rows = vec![row(1, "h1", 100.0), row(2, "h2c", 76.0)];
        assert_eq!(legend(&rows), None);
        rows[1].percentiles_ci = Some([rows[1].percentiles_ci.unwrap()[0], None, None, None]);
        let (titles, lines) = table(&rows, Intervals::Inline);
        let at = |title: &str| titles.iter().position(|t| *t == title).unwrap();
        assert_eq!(lines[1][at("p50")], "0.50 (0.45–0.55)");
        assert_eq!(lines[1][at("p99")], "1.00 (n/e)");
        assert_eq!(lines[0][at("p99")], "1.00 (0.90–1.10)");
        let (titles, lines) = table(&rows, Intervals::Columns);
        let at = |title: &str| titles.iter().position(|t| *t == title).unwrap();
        assert_eq!(
            lines[1][at("p99")..at("p99") + 3],
            ["1.00", "n/e", "n/e"].map(str::to_owned)
        );
        assert_eq!(
            lines[0][at("p99")..at("p99") + 3],
            ["1.00", "0.90", "1.10"].map(str::to_owned)
        );
        assert!(legend(&rows)
            .unwrap()
            .starts_with("n/e: not estimable, fewer than 5 samples"));
    }

    #[test]
    fn a_ratio_without_an_interval_says_why() {
        let mut rows = vec![row(1, "h1", 100.0), row(2, "h2c", 76.0)];
        rows[1].ratio_ci_reason = Some(NoInterval {
            too_few: Evidence::Samples,
            n: 1,
            needed: 5,
        });
        let (_, lines) = table(&rows, Intervals::Inline);
        assert_eq!(lines[1].last().unwrap(), "h2c/h1 = 0.76 (n=1: no interval)");
        rows[1].ratio_ci = Some(Bounds {
            ci_low: 0.70,
            ci_high: Some(0.82),
        });
        rows[1].ratio_ci_reason = None;
        let (_, lines) = table(&rows, Intervals::Inline);
        assert_eq!(lines[1].last().unwrap(), "h2c/h1 = 0.76 (0.70–0.82)");
        assert_eq!(lines[0].last().unwrap(), "");
    }
}
