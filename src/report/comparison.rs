//! The comparison table: one row per cell, and each protocol's throughput relative to the first
//! protocol at the same concurrency level (e.g. `h2c/h1 = 0.48`).

use serde::{Deserialize, Serialize};

use super::confidence::Bounds;
use super::rounds::{self, RoundFigures};
use super::Summary;

/// One cell in the comparison.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Row {
    /// 1-based cell position.
    pub cell: usize,
    /// The cell's protocol.
    pub protocol: String,
    /// Connections.
    pub clients: usize,
    /// Requests in flight per connection.
    pub streams: usize,
    /// Total requests per second asked for, if paced.
    #[serde(default)]
    pub rate: Option<f64>,
    /// The level the cell belongs to: its protocols are compared with the level's first.
    #[serde(default)]
    pub level: usize,
    /// Finished requests per second.
    pub requests_per_s: f64,
    /// Its 95% confidence interval, when the cell had intervals enough.
    #[serde(default)]
    pub requests_per_s_ci: Option<Bounds<f64>>,
    /// Received MiB per second.
    pub mb_per_s: f64,
    /// Received gigabits per second.
    pub gbps: f64,
    /// Request latency percentiles and maximum, in microseconds.
    pub p50_us: u64,
    /// 90th percentile.
    pub p90_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// 99.9th percentile.
    pub p99_9_us: u64,
    /// Maximum.
    pub max_us: u64,
    /// The 95% confidence intervals of p50, p90, p99 and p99.9, when the cell had samples.
    #[serde(default)]
    pub percentiles_ci: Option<[Bounds<u64>; 4]>,
    /// Requests without a complete response.
    pub errors: u64,
    /// Failed requests, percent of those done (as `--fail-if errors` counts).
    #[serde(default)]
    pub failed_percent: f64,
    /// Its 95% interval across rounds (`--rounds`); none within one run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_percent_ci: Option<Bounds<f64>>,
    /// Connections opened.
    pub connections: u64,
    /// Generator CPU, percent of one core.
    pub generator_cpu_percent: f64,
    /// A runner thread was busy 90% of its time or more: h2load-rs may have set the result.
    #[serde(default)]
    pub generator_limited: bool,
    /// CPU of the first watched process (the target), percent of one core.
    pub target_cpu_percent: Option<f64>,
    /// Peak RSS of the first watched process, KiB.
    pub target_rss_peak_kb: Option<u64>,
    /// Throughput relative to the first protocol of the same level, as `(label, ratio)`, e.g.
    /// `("h2c/h1", 0.48)`; absent for that first protocol itself.
    pub ratio: Option<(String, f64)>,
    /// The ratio's 95% confidence interval: within one run, from both rates' (their relative
    /// half-widths added in quadrature, as for any ratio of independent estimates), absent when
    /// either has none; with `--rounds`, Student's t over the rounds' paired ratios.
    #[serde(default)]
    pub ratio_ci: Option<Bounds<f64>>,
    /// With `--rounds`: each round's figures (the row's are their means, its intervals across
    /// them); empty for a single run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<RoundFigures>,
}

impl Row {
    /// `c=10 m=1`, with ` rate=500` when paced: what the row's level ran.
    pub fn setting(&self) -> String {
        crate::plan::setting_label(self.clients, self.streams, self.rate)
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
            if first.cell.index != cell.cell.index {
                let ratio = if first.requests_per_s > 0.0 {
                    cell.requests_per_s / first.requests_per_s
                } else {
                    0.0
                };
                row.ratio = Some((
                    format!("{}/{}", cell.cell.protocol, first.cell.protocol),
                    ratio,
                ));
                row.ratio_ci = ratio_bounds(cell, first);
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
        mb_per_s: cell.bytes_per_s / (1 << 20) as f64,
        gbps: cell.bytes_per_s * 8.0 / 1e9,
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
        target_rss_peak_kb: target.map(|usage| usage.rss_peak_kb),
        ratio: None,
        ratio_ci: None,
        rounds: Vec::new(),
    }
}

/// The 95% interval of `cell`'s rate over `first`'s: each rate's relative half-width (the
/// larger side), added in quadrature, around the ratio.
fn ratio_bounds(cell: &Summary, first: &Summary) -> Option<Bounds<f64>> {
    let relative = |summary: &Summary| {
        let bounds = summary.requests_per_s_ci?;
        let rate = summary.requests_per_s;
        let high = bounds.ci_high?;
        (rate > 0.0).then(|| (rate - bounds.ci_low).max(high - rate) / rate)
    };
    let (mine, theirs) = (relative(cell)?, relative(first)?);
    let ratio = cell.requests_per_s / first.requests_per_s;
    let half = ratio * mine.hypot(theirs);
    Some(Bounds {
        ci_low: (ratio - half).max(0.0),
        ci_high: Some(ratio + half),
    })
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
            "Gbps",
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
        titles.extend(["req/s", "MB/s", "Gbps", "p50", "p90", "p99", "p99.9"]);
    }
    titles.extend(["max", "request errors", "conns", "gen CPU%", "gen-bound"]);
    if with_target {
        titles.extend(["target CPU%", "target RSS MB"]);
    }
    titles.push("vs first");
    let millis = |micros: u64| format!("{:.2}", micros as f64 / 1000.0);
    let lines = rows
        .iter()
        .map(|row| {
            let mut line = vec![
                row.cell.to_string(),
                row.protocol.clone(),
                row.clients.to_string(),
                row.streams.to_string(),
            ];
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
            figure(
                &mut line,
                format!("{:.1}", row.requests_per_s),
                row.requests_per_s_ci.map(|bounds| {
                    (
                        format!("{:.1}", bounds.ci_low),
                        open(bounds.ci_high.map(|high| format!("{high:.1}"))),
                    )
                }),
            );
            line.extend([format!("{:.2}", row.mb_per_s), format!("{:.3}", row.gbps)]);
            let values = [row.p50_us, row.p90_us, row.p99_us, row.p99_9_us];
            for (index, value) in values.into_iter().enumerate() {
                let bounds = row
                    .percentiles_ci
                    .map(|all| all[index])
                    .map(|bounds| (millis(bounds.ci_low), open(bounds.ci_high.map(millis))));
                figure(&mut line, millis(value), bounds);
            }
            line.extend([
                millis(row.max_us),
                row.errors.to_string(),
                row.connections.to_string(),
                format!("{:.0}", row.generator_cpu_percent),
                if row.generator_limited { "yes" } else { "" }.to_owned(),
            ]);
            if with_target {
                line.push(
                    row.target_cpu_percent
                        .map_or_else(String::new, |cpu| format!("{cpu:.0}")),
                );
                line.push(
                    row.target_rss_peak_kb
                        .map_or_else(String::new, |kb| format!("{:.1}", kb as f64 / 1024.0)),
                );
            }
            line.push(
                row.ratio
                    .as_ref()
                    .map_or_else(String::new, |(label, ratio)| match row.ratio_ci {
                        Some(bounds) => format!(
                            "{label} = {ratio:.2} ({:.2}–{:.2})",
                            bounds.ci_low,
                            bounds.ci_high.unwrap_or(f64::INFINITY)
                        ),
                        None => format!("{label} = {ratio:.2}"),
                    }),
            );
            line
        })
        .collect();
    (titles, lines)
}
