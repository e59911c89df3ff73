//! `--fail-if`: each cell's thresholds, checked against its report once it has run.

use serde::{Deserialize, Serialize};

use crate::cli::objective::Objective;
use crate::plan::objective::Measured;
use crate::report::Summary;

/// One `--fail-if` expression checked against a cell.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Threshold {
    /// The expression, canonically spelled (`p99>50ms`).
    pub expr: String,
    /// The cell's value of its metric: µs for latencies, percent for `errors`, requests per
    /// second for `rps`.
    pub value: f64,
    /// Whether the expression held, so the run fails.
    pub breached: bool,
}

/// What objectives read from a cell's report: the request latency the report's percentiles
/// come from, h2load's failed over done plus never sent (failed counts those too), and the
/// measured period's rate.
fn measured(summary: &Summary) -> Measured<'_> {
    Measured {
        latency: &summary.histograms.request,
        done: summary.requests.counters.done + summary.requests.never_sent,
        failed: summary.requests.counters.failed,
        achieved_rps: summary.requests_per_s,
    }
}

/// Checks every `--fail-if` expression against `summary`, in the order given.
pub(crate) fn check(summary: &Summary, fail_if: &[Objective]) -> Vec<Threshold> {
    let measured = measured(summary);
    fail_if
        .iter()
        .map(|objective| {
            let checked = objective.check(&measured);
            Threshold {
                expr: checked.expr,
                value: checked.value,
                breached: checked.holds,
            }
        })
        .collect()
}

/// `threshold breached: p99 84.2ms > 50ms (cell h2c c=100 m=1)`, one line per breach of every
/// cell, in run order; `fail_if` is the list each cell's thresholds were checked from.
pub(crate) fn breaches(cells: &[Summary], fail_if: &[Objective]) -> Vec<String> {
    cells
        .iter()
        .flat_map(|cell| {
            fail_if
                .iter()
                .zip(&cell.thresholds)
                .filter(|(_, threshold)| threshold.breached)
                .map(|(objective, threshold)| {
                    format!(
                        "threshold breached: {} (cell {})",
                        objective.describe(threshold.value),
                        cell.cell.label
                    )
                })
        })
        .collect()
}
