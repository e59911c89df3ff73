//! The comparison table: one row per cell, and each protocol's throughput relative to the first
//! protocol at the same concurrency level (e.g. `h2c/h1 = 0.48`).

use serde::{Deserialize, Serialize};

use super::Summary;

/// One cell in the comparison.
#[derive(Debug, Clone, Serialize, Deserialize)]
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
    /// Requests without a complete response.
    pub errors: u64,
    /// Connections opened.
    pub connections: u64,
    /// Generator CPU, percent of one core.
    pub generator_cpu_percent: f64,
    /// CPU of the first watched process (the target), percent of one core.
    pub target_cpu_percent: Option<f64>,
    /// Peak RSS of the first watched process, KiB.
    pub target_rss_peak_kb: Option<u64>,
    /// Throughput relative to the first protocol of the same level, as `(label, ratio)`, e.g.
    /// `("h2c/h1", 0.48)`; absent for that first protocol itself.
    pub ratio: Option<(String, f64)>,
}

impl Row {
    /// `c=10 m=1`, with ` rate=500` when paced: what the row's level ran.
    pub fn setting(&self) -> String {
        crate::plan::setting_label(self.clients, self.streams, self.rate)
    }
}

/// Builds the rows of `cells`.
pub(crate) fn rows(cells: &[Summary]) -> Vec<Row> {
    cells
        .iter()
        .map(|cell| {
            let first = cells
                .iter()
                .find(|other| other.cell.level == cell.cell.level)
                .expect("a cell is in its own level");
            let percentiles = &cell.latency.request.percentiles;
            let target = cell.watched.first();
            Row {
                cell: cell.cell.index,
                protocol: cell.cell.protocol.clone(),
                clients: cell.cell.clients,
                streams: cell.cell.streams,
                rate: cell.cell.rate,
                level: cell.cell.level,
                requests_per_s: cell.requests_per_s,
                mb_per_s: cell.bytes_per_s / (1 << 20) as f64,
                gbps: cell.bytes_per_s * 8.0 / 1e9,
                p50_us: percentiles.p50,
                p90_us: percentiles.p90,
                p99_us: percentiles.p99,
                p99_9_us: percentiles.p99_9,
                max_us: percentiles.max,
                errors: cell.requests.counters.errored,
                connections: cell.connections.opened,
                generator_cpu_percent: cell.generator_cpu_percent,
                target_cpu_percent: target.map(|usage| usage.cpu_percent),
                target_rss_peak_kb: target.map(|usage| usage.rss_peak_kb),
                ratio: (first.cell.index != cell.cell.index).then(|| {
                    let ratio = if first.requests_per_s > 0.0 {
                        cell.requests_per_s / first.requests_per_s
                    } else {
                        0.0
                    };
                    (
                        format!("{}/{}", cell.cell.protocol, first.cell.protocol),
                        ratio,
                    )
                }),
            }
        })
        .collect()
}

/// Column titles and cell texts of the comparison, shared by the text, Markdown and CSV forms.
pub(crate) fn table(rows: &[Row]) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let with_target = rows.iter().any(|row| row.target_cpu_percent.is_some());
    // A rate column only when it tells rows apart: the labels carry a constant rate already.
    let with_rate = rows.iter().any(|row| row.rate != rows[0].rate);
    let mut titles = vec!["#", "protocol", "c", "m"];
    if with_rate {
        titles.push("rate");
    }
    titles.extend([
        "req/s",
        "MB/s",
        "Gbps",
        "p50",
        "p90",
        "p99",
        "p99.9",
        "max",
        "request errors",
        "conns",
        "gen CPU%",
    ]);
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
            line.extend([
                format!("{:.1}", row.requests_per_s),
                format!("{:.2}", row.mb_per_s),
                format!("{:.3}", row.gbps),
                millis(row.p50_us),
                millis(row.p90_us),
                millis(row.p99_us),
                millis(row.p99_9_us),
                millis(row.max_us),
                row.errors.to_string(),
                row.connections.to_string(),
                format!("{:.0}", row.generator_cpu_percent),
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
                    .map_or_else(String::new, |(label, ratio)| {
                        format!("{label} = {ratio:.2}")
                    }),
            );
            line
        })
        .collect();
    (titles, lines)
}
