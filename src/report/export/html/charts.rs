//! The page's charts, each from the report's figures: throughput against concurrency (when the
//! sweep has two levels or more: one level would be a chart of lone dots), latency by percentile,
//! requests per second over time with the rate requested as a dashed line, latency over time per
//! cell, and with `--find-max` the knee plots of the search.

use super::chart::{chart, Frame, Series};
use crate::report::capacity::CapacityStep;
use crate::report::text::run_label;
use crate::report::{Document, LatencySummary, Summary};
use crate::stats::confidence::{self, Bounds};
use crate::stats::timeline::IntervalSummary;

/// Percentile ticks per halving of the distance to 100% on the latency curves.
const TICKS_PER_HALF_DISTANCE: u32 = 5;

fn concurrency(cell: &Summary) -> f64 {
    (cell.cell.clients * cell.cell.streams) as f64
}

/// Requests per second against concurrency, a line per protocol (and per rate when the cells ran
/// at different rates: a line through two rates at one concurrency would say nothing); nothing
/// when every cell ran at one concurrency.
pub(super) fn throughput(document: &Document) -> String {
    let cells = &document.cells;
    let mut levels: Vec<f64> = cells.iter().map(concurrency).collect();
    levels.sort_by(f64::total_cmp);
    levels.dedup();
    if levels.len() < 2 {
        return String::new();
    }
    let rates_vary = cells
        .iter()
        .any(|cell| cell.cell.rate != cells[0].cell.rate);
    let mut lines: Vec<(&str, Option<f64>)> = Vec::new();
    for cell in cells {
        let key = (
            cell.cell.protocol.as_str(),
            cell.cell.rate.filter(|_| rates_vary),
        );
        if !lines.contains(&key) {
            lines.push(key);
        }
    }
    let series: Vec<Series> = lines
        .iter()
        .map(|(protocol, rate)| {
            let cells: Vec<&Summary> = cells
                .iter()
                .filter(|cell| {
                    cell.cell.protocol == *protocol
                        && cell.cell.rate.filter(|_| rates_vary) == *rate
                })
                .collect();
            Series {
                bars: cells
                    .iter()
                    .filter_map(|cell| {
                        let bounds = cell.requests_per_s_ci?;
                        Some((concurrency(cell), bounds.ci_low, bounds.ci_high))
                    })
                    .collect(),
                ..Series::line(
                    match rate {
                        Some(rate) => format!("{protocol} rate={rate}"),
                        None => protocol.to_string(),
                    },
                    cells
                        .iter()
                        .map(|cell| (concurrency(cell), cell.requests_per_s))
                        .collect(),
                )
            }
        })
        .collect();
    let frame = Frame {
        id: "throughput",
        title: "Throughput vs concurrency",
        x_title: "concurrent requests (connections × streams)",
        y_title: "requests/s",
        log: (levels[levels.len() - 1] >= 10.0 * levels[0], false),
    };
    chart(&frame, &series)
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

/// Each cell's request latency by percentile, on a log 1/(1 − p) axis.
pub(super) fn latency(document: &Document) -> String {
    let series: Vec<Series> = document
        .cells
        .iter()
        .map(|cell| Series {
            bars: latency_bars(&cell.latency.request),
            ..Series::line(
                run_label(cell),
                cell.histograms
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
            )
        })
        .collect();
    let frame = Frame {
        id: "latency",
        title: "Request latency by percentile",
        x_title: "1/(1-percentile)",
        y_title: "latency (ms)",
        log: (true, false),
    };
    chart(&frame, &series)
}

/// The end of each interval of `cell`'s timeline, seconds, with `value` of it.
fn over_time(cell: &Summary, value: impl Fn(&IntervalSummary) -> Option<f64>) -> Vec<(f64, f64)> {
    let timeline = &cell.timeline;
    timeline
        .intervals
        .iter()
        .filter_map(|interval| {
            Some((
                timeline.start_of(interval) + timeline.length_of(interval),
                value(interval)?,
            ))
        })
        .collect()
}

/// Requests completed per second of each interval, a line per cell; a paced cell's requested
/// rate (a constant `--rate`, not a search or `--stages`) as a dashed line across its run.
pub(super) fn timeline(document: &Document) -> String {
    let mut series: Vec<Series> = document
        .cells
        .iter()
        .map(|cell| {
            let rate = |interval: &_| Some(cell.timeline.rate_of(interval));
            Series::line(run_label(cell), over_time(cell, rate))
        })
        .collect();
    for (index, cell) in document.cells.iter().enumerate() {
        if let Some(requested) = requested_rate(cell) {
            let end = cell.timeline.end_s.max(cell.elapsed_s);
            series.push(Series {
                reference: true,
                color_of: Some(index),
                ..Series::line(
                    format!("{} requested", run_label(cell)),
                    vec![(0.0, requested), (end, requested)],
                )
            });
        }
    }
    let frame = Frame {
        id: "timeline",
        title: "Requests completed per second",
        x_title: "second",
        y_title: "requests/s",
        log: (false, false),
    };
    chart(&frame, &series)
}

/// The constant rate `cell` was paced at: `--rate` without `--stages` or a capacity search
/// (whose rates change by design).
fn requested_rate(cell: &Summary) -> Option<f64> {
    let paced = cell.settings.stages.is_none() && cell.capacity.is_none();
    cell.rate
        .as_ref()
        .filter(|_| paced)
        .map(|rate| rate.requested_per_s)
}

/// Each cell's response time over its run, a chart per cell: each interval's p50 and largest, and
/// its p99 where the interval holds enough samples to estimate it.
pub(super) fn latency_over_time(document: &Document) -> String {
    let ms = |micros: u64| micros as f64 / 1000.0;
    document
        .cells
        .iter()
        .map(|cell| {
            let p99_estimable =
                |interval: &IntervalSummary| confidence::estimable(interval.completed, 0.99);
            let mut series = vec![Series::line(
                "p50".to_owned(),
                over_time(cell, |interval| {
                    (interval.completed > 0).then(|| ms(interval.p50_us))
                }),
            )];
            let p99 = over_time(cell, |interval| {
                p99_estimable(interval).then(|| ms(interval.p99_us))
            });
            if !p99.is_empty() {
                series.push(Series::line("p99".to_owned(), p99));
            }
            series.push(Series::line(
                "max".to_owned(),
                over_time(cell, |interval| {
                    (interval.completed > 0).then(|| ms(interval.max_us))
                }),
            ));
            let title = format!(
                "Latency over time: {} (p99 where an interval holds {} responses or more)",
                run_label(cell),
                confidence::samples_needed(0.99)
            );
            let id = format!("latency-over-time-{}", cell.cell.index);
            let frame = Frame {
                id: &id,
                title: &title,
                x_title: "second",
                y_title: "response time (ms)",
                log: (false, true),
            };
            chart(&frame, &series)
        })
        .collect()
}

/// A search's paced steps by offered rate; of steps at the same rate, the last (a full step
/// confirming a short one) stands for it.
fn paced_steps(steps: &[CapacityStep]) -> Vec<(f64, &CapacityStep)> {
    let mut steps: Vec<(f64, &CapacityStep)> = steps
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
pub(super) fn knee(document: &Document) -> String {
    let searched: Vec<(String, Vec<(f64, &CapacityStep)>)> = document
        .cells
        .iter()
        .filter_map(|cell| Some((run_label(cell), paced_steps(&cell.capacity.as_ref()?.steps))))
        .collect();
    if searched.is_empty() {
        return String::new();
    }
    let most = searched
        .iter()
        .flat_map(|(_, steps)| steps.iter().map(|(offered, _)| *offered))
        .fold(0.0, f64::max);
    let mut rates = vec![Series::line(
        "achieved = offered".to_owned(),
        vec![(0.0, 0.0), (most, most)],
    )];
    let mut latency = Vec::new();
    for (label, steps) in &searched {
        let series = |name: String, value: fn(&CapacityStep) -> f64| {
            Series::line(
                name,
                steps
                    .iter()
                    .map(|(offered, step)| (*offered, value(step)))
                    .collect(),
            )
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
        rates.push(series(label.clone(), |step| step.achieved_rps));
        latency.push(with_bars(
            series(format!("{label} p50"), |step| step.p50_us as f64 / 1000.0),
            |step| step.p50_ci,
        ));
        latency.push(with_bars(
            series(format!("{label} p99"), |step| step.p99_us as f64 / 1000.0),
            |step| step.p99_ci,
        ));
    }
    let rate_frame = Frame {
        id: "knee-rate",
        title: "Capacity search: achieved vs offered rate",
        x_title: "offered requests/s",
        y_title: "achieved requests/s",
        log: (false, false),
    };
    let latency_frame = Frame {
        id: "knee-latency",
        title: "Capacity search: latency vs offered rate",
        x_title: "offered requests/s",
        y_title: "latency (ms)",
        log: (false, true),
    };
    chart(&rate_frame, &rates) + &chart(&latency_frame, &latency)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let steps = [
            step(None, 1000.0, 1.0),
            step(Some(750.0), 749.0, 1.0),
            step(Some(1000.0), 900.0, 1.0),
            step(Some(875.0), 870.0, 3.0),
            step(Some(750.0), 751.0, 3.0),
        ];
        let knee: Vec<(f64, f64, f64)> = paced_steps(&steps)
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
