//! What each part of a merged cell did: when its measured period began against the others (the
//! start skew of runs on several machines), the rate it was to offer against the rate it
//! achieved, and whether either is outside tolerance, so a merged total built on a late or
//! starved machine says so.

use serde::{Deserialize, Serialize};

use crate::plan::shard::Shard;
use crate::report::{cell_slack_per_s, Summary};

/// A part that began its measured period more than this after the first one is flagged (or
/// [`LATE_SHARE`] of the longest part, if more): its load missed the others' first moments.
const LATE_AFTER_MS: f64 = 100.0;
/// The same as a share of the longest part's measured period.
const LATE_SHARE: f64 = 0.01;
/// A paced part that achieved less than this share of its rate is flagged (the share
/// `--find-max` asks of a passing step), less what its schedule's own count may fall short by.
const ACHIEVED: f64 = 0.97;

/// The parts of a merged cell.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Parts {
    /// The latest part's start of its measured period after the earliest's, ms.
    pub start_skew_ms: f64,
    /// How late a start may be before it is flagged, ms.
    pub late_after_ms: f64,
    /// Each part, in the order given.
    pub parts: Vec<Part>,
}

/// One part of a merged cell.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Part {
    /// The report it came from.
    pub source: String,
    /// Its `--shard`, if it was one.
    pub shard: Option<Shard>,
    /// When its measured period began after the earliest part's, ms.
    pub started_after_ms: f64,
    /// With `--start-at`: how long after that time its measured period began, ms.
    pub start_late_ms: Option<f64>,
    /// The rate it was to offer (paced parts).
    pub requested_per_s: Option<f64>,
    /// The rate it achieved.
    pub achieved_per_s: f64,
    /// Why it is outside tolerance, if it is.
    pub outside: Option<String>,
}

impl Parts {
    /// The parts of one cell, `sources` naming their reports.
    pub(super) fn of(cells: &[Summary], sources: &[String]) -> Parts {
        let start_ms = |cell: &Summary| cell.timeline.start_unix_ms as f64;
        let earliest = cells.iter().map(start_ms).fold(f64::INFINITY, f64::min);
        let longest_s = cells.iter().map(|cell| cell.elapsed_s).fold(0.0, f64::max);
        let late_after_ms = LATE_AFTER_MS.max(LATE_SHARE * longest_s * 1000.0);
        let parts: Vec<Part> = cells
            .iter()
            .zip(sources)
            .map(|(cell, source)| {
                let started_after_ms = start_ms(cell) - earliest;
                let requested_per_s = cell.rate.as_ref().map(|rate| rate.requested_per_s);
                let achieved_per_s = cell.requests_per_s;
                let outside = if started_after_ms > late_after_ms {
                    Some(format!(
                        "began {started_after_ms:.0} ms after the first part (more than {late_after_ms:.0} ms)"
                    ))
                } else {
                    requested_per_s
                        .filter(|requested| {
                            let slack = cell_slack_per_s(
                                *requested,
                                cell.elapsed_s,
                                cell.settings.arrival.as_deref(),
                            );
                            achieved_per_s < ACHIEVED * requested - slack
                        })
                        .map(|requested| {
                            format!(
                                "achieved {achieved_per_s:.1} of its {requested:.1} req/s (less than {:.0}%)",
                                100.0 * ACHIEVED
                            )
                        })
                };
                Part {
                    source: source.clone(),
                    shard: cell.settings.shard,
                    started_after_ms,
                    start_late_ms: cell.start_late_ms,
                    requested_per_s,
                    achieved_per_s,
                    outside,
                }
            })
            .collect();
        Parts {
            start_skew_ms: parts
                .iter()
                .map(|part| part.started_after_ms)
                .fold(0.0, f64::max),
            late_after_ms,
            parts,
        }
    }

    /// The lines the merge prints: the skew, and each part outside tolerance.
    pub(crate) fn lines(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "parts: {}; their measured periods began within {:.0} ms of each other",
            self.parts.len(),
            self.start_skew_ms
        )];
        lines.extend(self.parts.iter().filter_map(|part| {
            let outside = part.outside.as_ref()?;
            let name = match part.shard {
                Some(shard) => format!("shard {shard} ({})", part.source),
                None => part.source.clone(),
            };
            Some(format!("  outside tolerance: {name} {outside}"))
        }));
        lines
    }
}
