//! `--html`: one self-contained page (inline CSS and SVG, no scripts, no network) with the comparison
//! table and three charts: throughput vs concurrency per protocol, latency percentile curves on a
//! log 1/(1-p) axis per cell, and requests completed per second per cell; with `--find-max`, the
//! knee plots too: achieved rate and p50/p99 against the offered rate, per cell.

use std::fmt::Write;
use std::path::Path;

use anyhow::{Context, Result};

use crate::report::capacity::{Capacity, CapacityStep};
use crate::report::confidence::Bounds;
use crate::report::{
    comparison, export::outputs::write_to, rounds, Document, Exporter, LatencySummary, Summary,
};

/// Percentile ticks per halving of the distance to 100% on the latency curves.
const TICKS_PER_HALF_DISTANCE: u32 = 5;
const COLORS: [&str; 12] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#bcbd22", "#7f7f7f", "#393b79", "#e7969c",
];
const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 360.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 170.0;
const TOP: f64 = 20.0;
const BOTTOM: f64 = 45.0;

/// Writes the page.
pub(crate) struct Html;

/// One line on a chart.
struct Series {
    name: String,
    points: Vec<(f64, f64)>,
    /// 95% confidence intervals drawn as error bars: at x, from low to high (`None`: open,
    /// drawn to the top of the plot).
    bars: Vec<(f64, f64, Option<f64>)>,
}

/// How an axis maps values to pixels.
#[derive(Clone, Copy)]
struct Axis {
    low: f64,
    high: f64,
    log: bool,
}

impl Axis {
    fn fit(values: impl Iterator<Item = f64>, log: bool) -> Axis {
        let (mut low, mut high) = (f64::INFINITY, f64::NEG_INFINITY);
        for value in values.filter(|v| v.is_finite() && (!log || *v > 0.0)) {
            low = low.min(value);
            high = high.max(value);
        }
        if !low.is_finite() {
            return Axis {
                low: if log { 1.0 } else { 0.0 },
                high: 1.0,
                log,
            };
        }
        if log {
            Axis {
                low: 10f64.powf(low.log10().floor()),
                high: 10f64
                    .powf(high.log10().ceil())
                    .max(10f64.powf(low.log10().floor() + 1.0)),
                log,
            }
        } else {
            Axis {
                low: 0.0,
                high: if high > 0.0 { high * 1.05 } else { 1.0 },
                log,
            }
        }
    }

    /// Position of `value` between 0 and 1.
    fn fraction(&self, value: f64) -> f64 {
        if self.log {
            (value.max(self.low).log10() - self.low.log10())
                / (self.high.log10() - self.low.log10())
        } else {
            (value - self.low) / (self.high - self.low)
        }
    }

    fn ticks(&self) -> Vec<f64> {
        if self.log {
            let (from, to) = (
                self.low.log10().round() as i32,
                self.high.log10().round() as i32,
            );
            (from..=to).map(|exponent| 10f64.powi(exponent)).collect()
        } else {
            let raw = self.high / 6.0;
            let magnitude = 10f64.powf(raw.log10().floor());
            let step = [1.0, 2.0, 5.0, 10.0]
                .iter()
                .map(|m| m * magnitude)
                .find(|step| *step >= raw)
                .unwrap_or(raw);
            (0..)
                .map(|i| i as f64 * step)
                .take_while(|tick| *tick <= self.high)
                .collect()
        }
    }
}

fn number(value: f64) -> String {
    if value >= 1e6 {
        format!("{}M", value / 1e6)
    } else if value >= 1e3 {
        format!("{}k", value / 1e3)
    } else if value >= 1.0 || value == 0.0 {
        format!("{value}")
    } else {
        format!("{value:.3}")
    }
}

/// An SVG line chart; each series is a `<g class="series">` holding a `<path class="line">`
/// through its points, or a `<circle class="marker">` when it has only one.
fn chart(
    id: &str,
    title: &str,
    x_title: &str,
    y_title: &str,
    series: &[Series],
    (x_log, y_log): (bool, bool),
) -> String {
    let x = Axis::fit(
        series.iter().flat_map(|s| s.points.iter().map(|p| p.0)),
        x_log,
    );
    let y = Axis::fit(
        series.iter().flat_map(|s| {
            s.points.iter().map(|p| p.1).chain(
                s.bars
                    .iter()
                    .flat_map(|&(_, low, high)| std::iter::once(low).chain(high)),
            )
        }),
        y_log,
    );
    let (plot_width, plot_height) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let px = |value: f64| LEFT + x.fraction(value) * plot_width;
    let py = |value: f64| TOP + (1.0 - y.fraction(value)) * plot_height;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<figure><figcaption>{title}</figcaption><svg id="{id}" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}">"#
    );
    let _ = write!(
        svg,
        r#"<rect x="{LEFT}" y="{TOP}" width="{plot_width}" height="{plot_height}" class="plot"/>"#
    );
    for tick in x.ticks() {
        let at = px(tick);
        let _ = write!(
            svg,
            r#"<line x1="{at:.1}" y1="{TOP}" x2="{at:.1}" y2="{:.1}" class="grid"/><text x="{at:.1}" y="{:.1}" class="tick" text-anchor="middle">{}</text>"#,
            TOP + plot_height,
            TOP + plot_height + 16.0,
            number(tick)
        );
    }
    for tick in y.ticks() {
        let at = py(tick);
        let _ = write!(
            svg,
            r#"<line x1="{LEFT}" y1="{at:.1}" x2="{:.1}" y2="{at:.1}" class="grid"/><text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{}</text>"#,
            LEFT + plot_width,
            LEFT - 6.0,
            at + 4.0,
            number(tick)
        );
    }
    let _ = write!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" class="axis" text-anchor="middle">{x_title}</text><text transform="translate(16 {:.1}) rotate(-90)" class="axis" text-anchor="middle">{y_title}</text>"#,
        LEFT + plot_width / 2.0,
        HEIGHT - 8.0,
        TOP + plot_height / 2.0
    );
    for (index, line) in series.iter().enumerate() {
        let color = COLORS[index % COLORS.len()];
        let points: Vec<(f64, f64)> = line
            .points
            .iter()
            .filter(|p| p.0.is_finite() && p.1.is_finite())
            .map(|(vx, vy)| (px(*vx), py(*vy)))
            .collect();
        let name = escape(&line.name);
        let _ = write!(
            svg,
            r#"<g class="series" data-series="{name}" data-points="{}">"#,
            points.len()
        );
        if let [(cx, cy)] = points[..] {
            // A path through one point draws nothing: a lone point is a marker.
            let _ = write!(
                svg,
                r#"<circle class="marker" cx="{cx:.1}" cy="{cy:.1}" r="4" fill="{color}"/>"#
            );
        } else {
            let mut path = String::new();
            for (at, (x_px, y_px)) in points.iter().enumerate() {
                let _ = write!(
                    path,
                    "{}{x_px:.1} {y_px:.1} ",
                    if at == 0 { "M" } else { "L" }
                );
            }
            let _ = write!(
                svg,
                r#"<path class="line" d="{}" stroke="{color}"/>"#,
                path.trim_end()
            );
        }
        for &(at, low, high) in &line.bars {
            let (x_px, low_px) = (px(at), py(low));
            let high_px = high.map_or(TOP, py);
            if !(x_px.is_finite() && low_px.is_finite() && high_px.is_finite()) {
                continue;
            }
            let _ = write!(
                svg,
                r#"<path class="ci" d="M{:.1} {low_px:.1} H{:.1} M{x_px:.1} {low_px:.1} V{high_px:.1} M{:.1} {high_px:.1} H{:.1}" stroke="{color}"/>"#,
                x_px - 3.0,
                x_px + 3.0,
                x_px - 3.0,
                x_px + 3.0
            );
        }
        svg.push_str("</g>");
        let legend_y = TOP + 14.0 + index as f64 * 18.0;
        let _ = write!(
            svg,
            r#"<line x1="{:.1}" y1="{legend_y:.1}" x2="{:.1}" y2="{legend_y:.1}" stroke="{color}" stroke-width="3"/><text x="{:.1}" y="{:.1}" class="legend">{name}</text>"#,
            WIDTH - RIGHT + 12.0,
            WIDTH - RIGHT + 32.0,
            WIDTH - RIGHT + 38.0,
            legend_y + 4.0
        );
    }
    svg.push_str("</svg></figure>\n");
    svg
}

/// The error bars of a latency curve: each reported percentile's 95% interval, in ms, at its
/// place on the 1/(1 − percentile) axis.
fn latency_bars(latency: &LatencySummary) -> Vec<(f64, f64, Option<f64>)> {
    let Some(confidence) = &latency.confidence else {
        return Vec::new();
    };
    [
        ("p50", 0.5),
        ("p75", 0.75),
        ("p90", 0.9),
        ("p95", 0.95),
        ("p99", 0.99),
        ("p99.9", 0.999),
        ("p99.99", 0.9999),
    ]
    .into_iter()
    .filter_map(|(label, quantile)| {
        let bounds = confidence.of(label)?;
        Some((
            1.0 / (1.0 - quantile),
            bounds.ci_low as f64 / 1000.0,
            bounds.ci_high.map(|high| high as f64 / 1000.0),
        ))
    })
    .collect()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A search's paced steps by offered rate; of steps at the same rate, the last (a full step
/// confirming a short one) stands for it.
fn paced_steps(capacity: &Capacity) -> Vec<(f64, &CapacityStep)> {
    let mut steps: Vec<(f64, &CapacityStep)> = capacity
        .steps
        .iter()
        .filter_map(|step| Some((step.offered_rps?, step)))
        .collect();
    steps.reverse();
    // Stable: among equal rates the last step taken comes first, and is the one kept.
    steps.sort_by(|a, b| a.0.total_cmp(&b.0));
    steps.dedup_by(|later, earlier| later.0 == earlier.0);
    steps
}

/// The knee plots of the cells that searched their capacity (empty without `--find-max`):
/// achieved against offered rate (with the line where they are equal), and p50/p99 against it.
fn knee_charts(document: &Document) -> String {
    let searched: Vec<(&str, Vec<(f64, &CapacityStep)>)> = document
        .cells
        .iter()
        .filter_map(|cell| {
            Some((
                cell.cell.label.as_str(),
                paced_steps(cell.capacity.as_ref()?),
            ))
        })
        .collect();
    if searched.is_empty() {
        return String::new();
    }
    let most = searched
        .iter()
        .flat_map(|(_, steps)| steps.iter().map(|(offered, _)| *offered))
        .fold(0.0, f64::max);
    let mut rates = vec![Series {
        name: "achieved = offered".to_owned(),
        points: vec![(0.0, 0.0), (most, most)],
        bars: Vec::new(),
    }];
    let mut latency = Vec::new();
    for (label, steps) in &searched {
        let series = |name: String, value: fn(&CapacityStep) -> f64| Series {
            name,
            points: steps
                .iter()
                .map(|(offered, step)| (*offered, value(step)))
                .collect(),
            bars: Vec::new(),
        };
        // Each step's p50 and p99 with their 95% intervals, as error bars at its offered rate.
        let with_bars = |mut series: Series, bounds: fn(&CapacityStep) -> Option<Bounds<u64>>| {
            let ms = |micros: u64| micros as f64 / 1000.0;
            series.bars = steps
                .iter()
                .filter_map(|(offered, step)| {
                    let bounds = bounds(step)?;
                    Some((*offered, ms(bounds.ci_low), bounds.ci_high.map(ms)))
                })
                .collect();
            series
        };
        rates.push(series(label.to_string(), |step| step.achieved_rps));
        latency.push(with_bars(
            series(format!("{label} p50"), |step| step.p50_us as f64 / 1000.0),
            |step| step.p50_ci,
        ));
        latency.push(with_bars(
            series(format!("{label} p99"), |step| step.p99_us as f64 / 1000.0),
            |step| step.p99_ci,
        ));
    }
    chart(
        "knee-rate",
        "Capacity search: achieved vs offered rate",
        "offered requests/s",
        "achieved requests/s",
        &rates,
        (false, false),
    ) + &chart(
        "knee-latency",
        "Capacity search: latency vs offered rate",
        "offered requests/s",
        "latency (ms)",
        &latency,
        (false, true),
    )
}

/// The whole page.
pub(crate) fn render(document: &Document) -> String {
    // One throughput line per protocol, and per rate when the cells ran at different rates (a
    // line through two rates at one concurrency would say nothing).
    let rates_vary = document
        .cells
        .iter()
        .any(|cell| cell.cell.rate != document.cells[0].cell.rate);
    let mut lines: Vec<(&str, Option<f64>)> = Vec::new();
    for cell in &document.cells {
        let key = (
            cell.cell.protocol.as_str(),
            cell.cell.rate.filter(|_| rates_vary),
        );
        if !lines.contains(&key) {
            lines.push(key);
        }
    }
    let throughput: Vec<Series> = lines
        .iter()
        .map(|(protocol, rate)| {
            let cells: Vec<&Summary> = document
                .cells
                .iter()
                .filter(|cell| {
                    cell.cell.protocol == *protocol
                        && cell.cell.rate.filter(|_| rates_vary) == *rate
                })
                .collect();
            let concurrency = |cell: &Summary| (cell.cell.clients * cell.cell.streams) as f64;
            Series {
                name: match rate {
                    Some(rate) => format!("{protocol} rate={rate}"),
                    None => protocol.to_string(),
                },
                points: cells
                    .iter()
                    .map(|cell| (concurrency(cell), cell.requests_per_s))
                    .collect(),
                bars: cells
                    .iter()
                    .filter_map(|cell| {
                        let bounds = cell.requests_per_s_ci?;
                        Some((concurrency(cell), bounds.ci_low, bounds.ci_high))
                    })
                    .collect(),
            }
        })
        .collect();
    let spread = |values: &mut dyn Iterator<Item = f64>| {
        let (low, high) = values.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
        high >= 10.0 * low
    };
    let concurrency_log = spread(
        &mut document
            .cells
            .iter()
            .map(|c| (c.cell.clients * c.cell.streams) as f64),
    );
    let latency: Vec<Series> = document
        .cells
        .iter()
        .map(|cell| Series {
            name: cell.cell.label.clone(),
            points: cell
                .histograms
                .request
                .iter_quantiles(TICKS_PER_HALF_DISTANCE)
                .filter(|step| step.quantile_iterated_to() < 1.0)
                .map(|step| {
                    (
                        1.0 / (1.0 - step.quantile_iterated_to()),
                        step.value_iterated_to() as f64 / 1000.0,
                    )
                })
                .collect(),
            bars: latency_bars(&cell.latency.request),
        })
        .collect();
    let timeline: Vec<Series> = document
        .cells
        .iter()
        .map(|cell| Series {
            name: cell.cell.label.clone(),
            points: cell
                .timeline
                .intervals
                .iter()
                .map(|interval| {
                    let timeline = &cell.timeline;
                    (
                        timeline.start_of(interval) + timeline.length_of(interval),
                        timeline.rate_of(interval),
                    )
                })
                .collect(),
            bars: Vec::new(),
        })
        .collect();

    let (titles, lines) = comparison::table(&document.comparison, comparison::Intervals::Inline);
    let mut table = html_table(&titles, &lines);
    if let Some((titles, lines)) = rounds::table(&document.comparison) {
        let titles: Vec<&str> = titles.iter().map(String::as_str).collect();
        table.push_str("<p>Rounds (spread: highest minus lowest, over the mean):</p>");
        table.push_str(&html_table(&titles, &lines));
    }

    let target = document
        .cells
        .first()
        .map_or_else(String::new, |cell| cell.settings.urls.join(" "));
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>h2load-rs report</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }}
table {{ border-collapse: collapse; margin: 12px 0 24px; font-size: 12px; }}
th, td {{ border: 1px solid #ccc; padding: 3px 8px; text-align: right; }}
th {{ background: #f3f3f3; }}
figure {{ margin: 16px 0; }}
figcaption {{ font-weight: 600; margin-bottom: 4px; }}
.plot {{ fill: #fff; stroke: #999; }}
.grid {{ stroke: #e5e5e5; }}
.tick, .legend {{ font-size: 11px; fill: #444; }}
.axis {{ font-size: 12px; fill: #222; }}
.line {{ fill: none; stroke-width: 2; }}
.ci {{ fill: none; stroke-width: 1; opacity: 0.7; }}
</style></head><body>
<h1>h2load-rs {version}</h1>
<p>{cells} against {target}</p>
{table}
{throughput}{latency}{timeline}{knee}</body></html>
"#,
        version = escape(&document.tool.version),
        cells = crate::units::counted(document.cells.len() as u64, "cell"),
        target = escape(&target),
        table = table,
        throughput = chart(
            "throughput",
            "Throughput vs concurrency",
            "concurrent requests (connections × streams)",
            "requests/s",
            &throughput,
            (concurrency_log, false)
        ),
        latency = chart(
            "latency",
            "Request latency by percentile",
            "1/(1-percentile)",
            "latency (ms)",
            &latency,
            (true, false)
        ),
        timeline = chart(
            "timeline",
            "Requests completed per second",
            "second",
            "requests/s",
            &timeline,
            (false, false)
        ),
        knee = knee_charts(document),
    )
}

/// A table of `titles` over `lines`, every cell escaped.
fn html_table(titles: &[&str], lines: &[Vec<String>]) -> String {
    let mut table = String::from("<table><thead><tr>");
    for title in titles {
        let _ = write!(table, "<th>{}</th>", escape(title));
    }
    table.push_str("</tr></thead><tbody>");
    for line in lines {
        table.push_str("<tr>");
        for cell in line {
            let _ = write!(table, "<td>{}</td>", escape(cell));
        }
        table.push_str("</tr>");
    }
    table.push_str("</tbody></table>");
    table
}

impl Exporter for Html {
    fn export(&self, document: &Document, path: &Path) -> Result<()> {
        write_to(path, render(document).as_bytes())
            .with_context(|| format!("cannot write the HTML report to '{}'", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_fit_and_tick() {
        let log = Axis::fit([3.0, 2000.0].into_iter(), true);
        assert_eq!((log.low, log.high), (1.0, 10_000.0));
        assert_eq!(log.ticks(), [1.0, 10.0, 100.0, 1000.0, 10_000.0]);
        let linear = Axis::fit([0.0, 97.0].into_iter(), false);
        assert_eq!(linear.ticks(), [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert!((linear.fraction(50.0) - 50.0 / 101.85).abs() < 1e-9);
    }

    #[test]
    fn chart_has_one_path_per_series() {
        let series = [
            Series {
                name: "h1".into(),
                points: vec![(1.0, 10.0), (10.0, 90.0)],
                bars: vec![(1.0, 8.0, Some(12.0)), (10.0, 80.0, None)],
            },
            Series {
                name: "h2c <fast>".into(),
                points: vec![(1.0, 20.0), (10.0, 150.0)],
                bars: Vec::new(),
            },
        ];
        let svg = chart("x", "t", "x", "y", &series, (true, false));
        assert_eq!(svg.matches(r#"class="series""#).count(), 2);
        assert!(svg.contains("h2c &lt;fast&gt;"));
        // One error bar per interval, an open one drawn to the top of the plot.
        assert_eq!(svg.matches(r#"class="ci""#).count(), 2);
        assert!(svg.contains(&format!(" V{TOP:.1} ")), "{svg}");
    }

    fn step(offered: Option<f64>, achieved: f64, measured_s: f64) -> CapacityStep {
        CapacityStep {
            phase: crate::report::capacity::Phase::Ramp,
            offered_rps: offered,
            achieved_rps: achieved,
            measured_s,
            done: 0,
            failed: 0,
            backlog: 0,
            errors_pct: 0.0,
            p50_us: 0,
            p90_us: 0,
            p99_us: 0,
            p99_9_us: 0,
            max_us: 0,
            p50_ci: None,
            p99_ci: None,
            passed: None,
        }
    }

    #[test]
    fn the_knee_takes_paced_steps_by_rate_and_the_last_of_equal_rates() {
        let capacity = Capacity {
            capacity_rps: 750.0,
            failing_rps: Some(875.0),
            objectives: vec!["p99<30ms".into()],
            precision_pct: 5.0,
            step_duration_s: 3.0,
            ceiling_rps: 1000.0,
            limited_by_client: false,
            interrupted: false,
            latency_at: Vec::new(),
            consistency: None,
            steps: vec![
                step(None, 1000.0, 1.0),
                step(Some(750.0), 749.0, 1.0),
                step(Some(1000.0), 900.0, 1.0),
                step(Some(875.0), 870.0, 3.0),
                step(Some(750.0), 751.0, 3.0),
            ],
        };
        let knee: Vec<(f64, f64, f64)> = paced_steps(&capacity)
            .iter()
            .map(|(offered, step)| (*offered, step.achieved_rps, step.measured_s))
            .collect();
        assert_eq!(
            knee,
            [
                (750.0, 751.0, 3.0),
                (875.0, 870.0, 3.0),
                (1000.0, 900.0, 1.0)
            ]
        );
    }
}
