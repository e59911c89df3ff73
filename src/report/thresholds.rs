//! `--fail-if`: each cell's thresholds, checked against its report once it has run.

use crate::plan::objective::Measured;
use hdrhistogram::Histogram;

use crate::plan::objective::{Figure, Metric, Objective};
use crate::recorder::hdr;
use crate::report::summary::schema::LatencySummary;
use crate::report::{runs_by_cell, Document, Summary, Threshold};
use crate::stats::confidence::{self, Bounds};
use crate::stats::rounds::mean_interval;
use crate::units::counted;

/// A cell's event latencies, decoded from its report once for its thresholds.
struct EventLatencies {
    first_event: Option<Histogram<u64>>,
    event_gap: Option<Histogram<u64>>,
}

impl EventLatencies {
    fn of(summary: &Summary) -> EventLatencies {
        let decoded = |latency: &Option<LatencySummary>| {
            latency
                .as_ref()
                .and_then(|latency| hdr::from_base64(&latency.hdr).ok())
        };
        EventLatencies {
            first_event: decoded(&summary.latency.first_event),
            event_gap: decoded(&summary.latency.event_gap),
        }
    }
}

/// The samples `objective`'s metric is read from in `measured` (0 for one it does not have; the
/// requests' for a metric that is no latency).
fn samples(measured: &Measured<'_>, objective: &Objective) -> u64 {
    let figure = match objective.metric {
        Metric::Latency(figure, ..) => figure,
        _ => Figure::Request,
    };
    measured.histogram(figure).map_or(0, Histogram::len)
}

/// What objectives read from a cell's report: the request latency the report's percentiles
/// come from (and its event latencies, `events`), h2load's failed over done plus never sent
/// (failed counts those too), and the measured period's rate.
fn measured<'a>(summary: &'a Summary, events: &'a EventLatencies) -> Measured<'a> {
    Measured {
        latency: &summary.histograms.request,
        first_event: events.first_event.as_ref(),
        event_gap: events.event_gap.as_ref(),
        done: summary.requests.counters.done + summary.requests.never_sent,
        failed: summary.requests.counters.failed,
        achieved_rps: summary.requests_per_s,
    }
}

/// Checks every `--fail-if` expression against `summary`, in the order given.
pub(crate) fn check(summary: &Summary, fail_if: &[Objective]) -> Vec<Threshold> {
    let events = EventLatencies::of(summary);
    let measured = measured(summary, &events);
    fail_if
        .iter()
        .map(|objective| {
            let checked = objective.check(&measured);
            let judged = can_judge(&measured, objective);
            let ci = judged
                .then(|| interval(summary, &events, objective))
                .flatten();
            Threshold {
                expr: checked.expr,
                value: checked.value,
                breached: judged && checked.holds,
                ci,
                within_noise: ci.is_some_and(|bounds| bounds.contains(objective.bound)),
                judged,
            }
        })
        .collect()
}

/// Whether `measured` can tell on which side of its bound `objective`'s metric lies: not for a
/// percentile with fewer than 5 samples beyond it (not estimable), nor for a latency it does
/// not have (an event figure of a cell that read no event).
fn can_judge(measured: &Measured<'_>, objective: &Objective) -> bool {
    match objective.metric {
        Metric::Latency(figure, _, quantile) => {
            measured.histogram(figure).is_some_and(|histogram| {
                quantile >= 1.0 || confidence::estimable(histogram.len(), quantile)
            })
        }
        _ => true,
    }
}

/// The 95% interval of `objective`'s metric in `summary`: a latency percentile's (batch means
/// over the timeline), the rate's, or for `errors` the Wilson score interval of the failed share
/// (as if requests failed independently: a failure's cause often is shared, so it is narrow when
/// failures come in bursts). `max` has none.
fn interval(
    summary: &Summary,
    events: &EventLatencies,
    objective: &Objective,
) -> Option<Bounds<f64>> {
    match objective.metric {
        Metric::Latency(_, _, quantile) if quantile >= 1.0 => None,
        // An event figure has no timeline: its samples are taken as independent, as the
        // report's own interval of it.
        Metric::Latency(figure @ (Figure::FirstEvent | Figure::EventGap), _, quantile) => {
            let histogram = measured(summary, events).histogram(figure)?;
            let bounds = confidence::quantile_bounds(histogram, None, quantile);
            Some(Bounds {
                ci_low: bounds.ci_low as f64,
                ci_high: bounds.ci_high.map(|high| high as f64),
            })
        }
        Metric::Latency(Figure::Request, _, quantile) => {
            let bounds = confidence::request_quantile(
                &summary.histograms.request,
                &summary.timeline,
                quantile,
            )?;
            Some(Bounds {
                ci_low: bounds.ci_low as f64,
                ci_high: bounds.ci_high.map(|high| high as f64),
            })
        }
        Metric::Errors => {
            let measured = measured(summary, events);
            confidence::wilson(measured.failed, measured.done).map(|bounds| Bounds {
                ci_low: 100.0 * bounds.ci_low,
                ci_high: bounds.ci_high.map(|high| 100.0 * high),
            })
        }
        Metric::Rps => summary.requests_per_s_ci,
    }
}

/// `--fail-if p99>50ms: breached (p99 84.2ms)`, one line per threshold of `cell` whether it was
/// breached or not, for `--quiet`'s cell line; `fail_if` is the list its thresholds were checked
/// from.
pub(crate) fn verdicts(cell: &Summary, fail_if: &[Objective]) -> Vec<String> {
    verdict_lines(&cell.thresholds, fail_if)
}

/// [`verdicts`] of `thresholds`, checked from `fail_if` (a cell's, or a cell's across its
/// rounds).
pub(crate) fn verdict_lines(thresholds: &[Threshold], fail_if: &[Objective]) -> Vec<String> {
    fail_if
        .iter()
        .zip(thresholds)
        .map(|(objective, threshold)| {
            let noise = match threshold.within_noise {
                true => ", within the noise",
                false => "",
            };
            format!(
                "--fail-if {}: {} ({} {}{noise})",
                threshold.expr,
                if threshold.breached {
                    "breached"
                } else {
                    "passed"
                },
                objective.metric.name(),
                objective.show(threshold.value)
            )
        })
        .collect()
}

/// The `--fail-if` expressions a report's thresholds were checked from, read back from their
/// canonical spelling (a report read by `merge` or exported knows them only so): the first
/// cell's, which every cell shares; none when one does not parse (a report edited by hand), as
/// the thresholds would no longer line up with them.
pub(crate) fn objectives(cells: &[Summary]) -> Vec<Objective> {
    cells.first().map_or_else(Vec::new, |cell| {
        cell.thresholds
            .iter()
            .map(|threshold| crate::plan::objective::parse(&threshold.expr))
            .collect::<Result<Vec<_>, _>>()
            .unwrap_or_default()
    })
}

/// One cell's thresholds as judged: with `--rounds`, a cell of the sweep across its rounds.
pub(crate) struct Judged {
    /// The cell's label.
    pub(crate) label: String,
    /// For each threshold, the samples its percentile was read from (with `--rounds`, the
    /// fewest of a round's).
    samples: Vec<u64>,
    pub(crate) thresholds: Vec<Threshold>,
}

/// Every cell's thresholds as judged, in run order; with `--rounds` each cell of the sweep once,
/// on [`across_rounds`], not each of its runs (what the exit status follows).
pub(crate) fn judge(document: &Document, fail_if: &[Objective]) -> Vec<Judged> {
    match document.rounds {
        Some(_) => across_rounds(&document.cells, fail_if),
        None => document
            .cells
            .iter()
            .map(|cell| {
                let events = EventLatencies::of(cell);
                let measured = measured(cell, &events);
                Judged {
                    label: cell.cell.label.clone(),
                    samples: (fail_if.iter())
                        .map(|objective| samples(&measured, objective))
                        .collect(),
                    thresholds: cell.thresholds.clone(),
                }
            })
            .collect(),
    }
}

/// The `--fail-if` lines for stderr, every breach then every threshold not judged, and whether
/// one was breached (the run then fails).
pub(crate) fn stderr_lines(document: &Document, fail_if: &[Objective]) -> (Vec<String>, bool) {
    let judged = judge(document, fail_if);
    let mut lines = breaches(&judged, fail_if);
    let breached = !lines.is_empty();
    lines.extend(unjudged(&judged, fail_if));
    (lines, breached)
}

/// `threshold breached: p99 84.2ms > 50ms (cell h2c c=100 m=1)`, one line per breach of every
/// cell of `judged`, with what its interval says when the breach is within the noise; `fail_if`
/// is the list each cell's thresholds were checked from.
fn breaches(judged: &[Judged], fail_if: &[Objective]) -> Vec<String> {
    judged
        .iter()
        .flat_map(|Judged { label, thresholds, .. }| {
            fail_if
                .iter()
                .zip(thresholds)
                .filter(|(_, threshold)| threshold.breached)
                .map(move |(objective, threshold)| {
                    let noise = match threshold.ci {
                        Some(bounds) if threshold.within_noise => format!(
                            "; within the noise: its 95% interval {}–{} holds the bound (a longer run, more --rounds, or --until-stable, can tell)",
                            objective.show(bounds.ci_low),
                            bounds
                                .ci_high
                                .map_or_else(|| "?".to_owned(), |high| objective.show(high))
                        ),
                        _ => String::new(),
                    };
                    format!(
                        "threshold breached: {} (cell {label}){noise}",
                        objective.describe(threshold.value)
                    )
                })
        })
        .collect()
}

/// `threshold not judged: p99 of 40 samples is not estimable, …`, one line per threshold of every
/// cell of `judged` on a percentile too far in the tail of too few samples to say which side of
/// its bound it lies; such a threshold neither fails the run nor passes it.
pub(crate) fn unjudged(judged: &[Judged], fail_if: &[Objective]) -> Vec<String> {
    judged
        .iter()
        .flat_map(|cell| {
            fail_if
                .iter()
                .zip(&cell.thresholds)
                .zip(&cell.samples)
                .filter(|((_, threshold), _)| !threshold.judged)
                .filter_map(move |((objective, threshold), &samples)| {
                    let Metric::Latency(_, name, quantile) = objective.metric else {
                        return None;
                    };
                    Some(format!(
                        "threshold not judged: {} (cell {}): {name} of {} is not estimable, fewer than {:.0} lie beyond it (it needs {}: run longer)",
                        threshold.expr,
                        cell.label,
                        counted(samples, "sample"),
                        confidence::MIN_TAIL,
                        counted(confidence::samples_needed(quantile), "sample")
                    ))
                })
        })
        .collect()
}

/// With `--rounds`: every `--fail-if` expression judged once per cell of the sweep, on the mean
/// of its rounds' values, its interval Student's t across them (what a rerun would give, not
/// what one run's noise says); a percentile only where every round could estimate it (as its
/// interval across rounds). In the sweep's order.
fn across_rounds(cells: &[Summary], fail_if: &[Objective]) -> Vec<Judged> {
    runs_by_cell(cells)
        .into_iter()
        .map(|runs| {
            let events: Vec<EventLatencies> =
                runs.iter().map(|run| EventLatencies::of(run)).collect();
            let measured: Vec<Measured<'_>> = (runs.iter().zip(&events))
                .map(|(run, events)| measured(run, events))
                .collect();
            let thresholds = fail_if
                .iter()
                .map(|objective| {
                    let values: Vec<f64> = measured
                        .iter()
                        .map(|measured| objective.value(measured))
                        .collect();
                    let judged = measured
                        .iter()
                        .all(|measured| can_judge(measured, objective));
                    let (value, ci) = mean_interval(&values);
                    let ci = ci.filter(|_| judged);
                    Threshold {
                        expr: objective.to_string(),
                        value,
                        breached: judged && objective.holds(value),
                        ci,
                        within_noise: ci.is_some_and(|bounds| bounds.contains(objective.bound)),
                        judged,
                    }
                })
                .collect();
            Judged {
                label: runs[0].cell.label.clone(),
                samples: (fail_if.iter())
                    .map(|objective| {
                        (measured.iter())
                            .map(|measured| samples(measured, objective))
                            .min()
                            .unwrap_or(0)
                    })
                    .collect(),
                thresholds,
            }
        })
        .collect()
}
