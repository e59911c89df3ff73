//! What each part of a merged cell did: when its measured period began against the others (the
//! start skew of runs on several machines), the rate it was to offer against the rate it
//! achieved, and whether either is outside tolerance, so a merged total built on a late or
//! starved machine says so.

use crate::report::{Part, Parts, Summary};
use crate::stats::slack::cell_slack_per_s;

/// A part that began its measured period more than this after the first one is flagged (or
/// [`LATE_SHARE`] of the longest part, if more): its load missed the others' first moments.
const LATE_AFTER_MS: f64 = 100.0;
/// The same as a share of the longest part's measured period.
const LATE_SHARE: f64 = 0.01;
/// A paced part that achieved less than this share of its rate is flagged (the share
/// `--find-max` asks of a passing step), less what its schedule's own count may fall short by.
const ACHIEVED: f64 = 0.97;

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
