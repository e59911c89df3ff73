//! What a `--find-max` search found in a cell: the capacity, the steps tried, the latency below
//! it; and its text, one block per cell and one line per concurrency level after the sweep.

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use crate::report::confidence::Bounds;
use crate::report::Summary;
use crate::units::format_micros;

/// The outcome of a capacity search. `capacity_rps` is its first numeric field (scripts read it
/// first).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Capacity {
    /// The highest constant rate that kept every objective for a full step, requests per
    /// second; 0 when no rate tried did.
    pub capacity_rps: f64,
    /// The lowest rate found to break an objective, when one was (`null`: none tried did).
    pub failing_rps: Option<f64>,
    /// The objectives, canonically spelled (`p99<100ms`).
    pub objectives: Vec<String>,
    /// The precision asked for: the search stops when `(failing - capacity) / capacity` is at
    /// most this, in percent.
    pub precision_pct: f64,
    /// Length of a full step's measured part, seconds.
    pub step_duration_s: f64,
    /// What the unpaced step achieved with this cell's `-c`/`-m`: the most the client can offer.
    pub ceiling_rps: f64,
    /// Every rate up to the ceiling passed: the capacity is the client's (raise `-c`/`-m`),
    /// not the server's.
    pub limited_by_client: bool,
    /// A signal ended the search early: the capacity is what it had found by then.
    pub interrupted: bool,
    /// Latency at 50%, 80% and 100% of the capacity (100%: the step that established it).
    pub latency_at: Vec<LoadPoint>,
    /// How far the full steps' verdicts agree with each other; absent in older reports.
    #[serde(default)]
    pub consistency: Option<Consistency>,
    /// Every step, in the order tried.
    pub steps: Vec<CapacityStep>,
}

/// Why a step was run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Unpaced: how fast the client can go.
    Ceiling,
    /// A short step of the coarse ramp (shares of the ceiling).
    Ramp,
    /// A full step of the bisection, or the full step confirming a rate a short step passed.
    Bisect,
    /// A full step below the capacity, for the latency there.
    Load,
}

impl Phase {
    /// The phase as the report and the JSON name it.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Ceiling => "ceiling",
            Phase::Ramp => "ramp",
            Phase::Bisect => "bisect",
            Phase::Load => "load",
        }
    }
}

/// One step of the search, over its measured part.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CapacityStep {
    /// Why it was run.
    pub phase: Phase,
    /// The rate offered (`null`: unpaced).
    pub offered_rps: Option<f64>,
    /// The rate achieved.
    pub achieved_rps: f64,
    /// Length of the measured part, seconds.
    pub measured_s: f64,
    /// Requests finished in it.
    pub done: u64,
    /// Of them, failed.
    pub failed: u64,
    /// Responses finished in it to requests sent before it (by its settling or the step
    /// before): in none of its other figures.
    #[serde(default)]
    pub backlog: u64,
    /// `failed / done`, percent.
    pub errors_pct: f64,
    /// Request latency percentiles, µs, from each request's scheduled start.
    pub p50_us: u64,
    /// 90th percentile.
    pub p90_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// 99.9th percentile.
    pub p99_9_us: u64,
    /// Largest.
    pub max_us: u64,
    /// The 95% confidence interval of `p50_us`, as if the step's samples were independent (a
    /// step has no timeline of its own to measure their dependence: too narrow where they move
    /// together); `null` without samples.
    #[serde(default)]
    pub p50_ci: Option<Bounds<u64>>,
    /// The same for `p99_us`.
    #[serde(default)]
    pub p99_ci: Option<Bounds<u64>>,
    /// Every objective held and at least 97% of the offered rate was achieved (`null` for the
    /// unpaced step, which offers no rate).
    pub passed: Option<bool>,
}

/// How far a search's full steps agree: the capacity as an interval, and the steps that
/// contradict it. A full step at a rate below one that failed should pass, and one above a rate
/// that passed may fail; verdicts that disagree say the step length cannot tell these rates
/// apart (a noisy machine, too few connections, a server whose capacity drifts).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Consistency {
    /// No full step contradicts another.
    pub consistent: bool,
    /// The highest rate a full step passed with no full step at or below it failing (0: none).
    pub passed_consistently_rps: f64,
    /// The lowest rate a full step failed (`null`: none did).
    pub lowest_failed_rps: Option<f64>,
    /// Full steps that passed, and that failed.
    pub full_steps_passed: u64,
    /// Full steps that failed.
    pub full_steps_failed: u64,
    /// The steps (numbered from 1, as the text shows them) whose verdict contradicts another's:
    /// a pass above a failed rate, or a failure at or below a passed one.
    pub contradicting_steps: Vec<usize>,
}

impl Consistency {
    /// The agreement of `steps`' full steps (bisection and load points; short ramp steps and
    /// the unpaced ceiling judge nothing on their own).
    pub(crate) fn of(steps: &[CapacityStep]) -> Consistency {
        let full: Vec<(usize, f64, bool)> = steps
            .iter()
            .enumerate()
            .filter(|(_, step)| matches!(step.phase, Phase::Bisect | Phase::Load))
            .filter_map(|(index, step)| Some((index + 1, step.offered_rps?, step.passed?)))
            .collect();
        let failed_rates = || {
            full.iter()
                .filter(|(_, _, passed)| !passed)
                .map(|(_, rate, _)| *rate)
        };
        let passed_rates = || {
            full.iter()
                .filter(|(_, _, passed)| *passed)
                .map(|(_, rate, _)| *rate)
        };
        let lowest_failed = failed_rates().reduce(f64::min);
        let highest_passed = passed_rates().reduce(f64::max);
        let contradicting_steps: Vec<usize> = full
            .iter()
            .filter(|(_, rate, passed)| match passed {
                true => lowest_failed.is_some_and(|failed| *rate >= failed),
                false => highest_passed.is_some_and(|passed| *rate <= passed),
            })
            .map(|(number, _, _)| *number)
            .collect();
        let passed_consistently_rps = passed_rates()
            .filter(|rate| failed_rates().all(|failed| failed > *rate))
            .fold(0.0, f64::max);
        Consistency {
            consistent: contradicting_steps.is_empty(),
            passed_consistently_rps,
            lowest_failed_rps: lowest_failed,
            full_steps_passed: passed_rates().count() as u64,
            full_steps_failed: failed_rates().count() as u64,
            contradicting_steps,
        }
    }
}

/// The latency at a share of the capacity.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LoadPoint {
    /// Share of the capacity, percent (50, 80, 100).
    pub share_pct: f64,
    /// The rate offered.
    pub offered_rps: f64,
    /// The rate achieved.
    pub achieved_rps: f64,
    /// Median latency, µs.
    pub p50_us: u64,
    /// 99th percentile, µs.
    pub p99_us: u64,
}

// The progress lines group their figures too.
pub(crate) use crate::units::grouped;

/// The cell's search as text: the steps tried, the capacity, the latency below it.
pub(crate) fn render(capacity: &Capacity) -> String {
    let mut out = String::new();
    write(&mut out, capacity).expect("writing to a String cannot fail");
    out
}

fn write(out: &mut String, capacity: &Capacity) -> std::fmt::Result {
    writeln!(
        out,
        "\ncapacity search: {}; steps of {:.1}s, precision {}%",
        capacity.objectives.join(", "),
        capacity.step_duration_s,
        capacity.precision_pct
    )?;
    writeln!(
        out,
        "  {:>4}  {:<8} {:>10} {:>10} {:>9} {:>9} {:>8}  result",
        "step", "phase", "offered", "achieved", "p50", "p99", "failed"
    )?;
    for (index, step) in capacity.steps.iter().enumerate() {
        writeln!(
            out,
            "  {:>4}  {:<8} {:>10} {:>10} {:>9} {:>9} {:>7.2}%  {}",
            index + 1,
            step.phase.name(),
            step.offered_rps.map_or("unpaced".to_owned(), grouped),
            grouped(step.achieved_rps),
            format_micros(step.p50_us as f64),
            format_micros(step.p99_us as f64),
            step.errors_pct,
            match (step.passed, step.phase) {
                // Only a full step confirms a rate: the capacity line counts no short pass.
                (Some(true), Phase::Ramp) => "pass (short)",
                (Some(true), _) => "pass",
                (Some(false), _) => "fail",
                (None, _) => "-",
            }
        )?;
    }
    let bound = match capacity.failing_rps {
        // The bisection has a step limit: say when it stopped short of the precision.
        Some(failing)
            if capacity.capacity_rps > 0.0
                && (failing - capacity.capacity_rps) / capacity.capacity_rps
                    > capacity.precision_pct / 100.0 + 1e-9 =>
        {
            format!(
                "{} req/s failed; the precision of {}% was not reached",
                grouped(failing),
                capacity.precision_pct
            )
        }
        Some(failing) => format!("{} req/s failed", grouped(failing)),
        None if capacity.limited_by_client => format!(
            "every rate up to the client's ceiling of {} req/s passed: raise -c or -m to find the server's",
            grouped(capacity.ceiling_rps)
        ),
        None => "no failing rate found".to_owned(),
    };
    let bound = match capacity.interrupted {
        true => format!("{bound}; the search was interrupted"),
        false => bound,
    };
    let bound = match capacity.capacity_rps > 0.0 {
        true => bound,
        false => format!("{}; {bound}", no_capacity(capacity)),
    };
    writeln!(
        out,
        "capacity: {} req/s ({bound})",
        grouped(capacity.capacity_rps)
    )?;
    if let Some(consistency) = capacity.consistency.as_ref().filter(|c| !c.consistent) {
        writeln!(
            out,
            "the search was inconsistent: steps {} contradict each other (full steps passed up to {} req/s with none below failing; the lowest that failed: {} req/s; {} passed, {} failed): at this step length these rates cannot be told apart. The capacity is somewhere between; use a longer --step-duration, more connections, or an idle machine",
            consistency
                .contradicting_steps
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            grouped(consistency.passed_consistently_rps),
            consistency.lowest_failed_rps.map_or("none".to_owned(), grouped),
            consistency.full_steps_passed,
            consistency.full_steps_failed
        )?;
    }
    if !capacity.latency_at.is_empty() {
        let points: Vec<String> = capacity
            .latency_at
            .iter()
            .map(|point| {
                format!(
                    "{:.0}% ({} req/s) p50 {} p99 {}",
                    point.share_pct,
                    grouped(point.offered_rps),
                    format_micros(point.p50_us as f64),
                    format_micros(point.p99_us as f64)
                )
            })
            .collect();
        writeln!(out, "latency at {}", points.join("; "))?;
    }
    Ok(())
}

/// Why a search found no capacity: no step passed, or only short ones (a rate counts once a full
/// step passed it).
fn no_capacity(capacity: &Capacity) -> &'static str {
    match capacity.steps.iter().any(|step| step.passed == Some(true)) {
        true => "no rate passed a full step",
        false => "no rate passed",
    }
}

/// After a sweep, one line per concurrency level that searched:
/// `capacity: h1 8,450 req/s at p99<20ms; h2c 7,900 req/s (h2c/h1 = 0.93, between 0.89 and
/// 0.98)`: the objectives once, each protocol's ratio to the level's first, with the range the
/// two searches' passing and failing rates leave it. The level's `c=… m=…` is named when the sweep
/// has several levels.
pub(crate) fn sweep_lines(cells: &[Summary]) -> Vec<String> {
    let searched: Vec<(&Summary, &Capacity)> = cells
        .iter()
        .filter_map(|cell| Some((cell, cell.capacity.as_ref()?)))
        .collect();
    let levels = {
        let mut levels: Vec<usize> = searched.iter().map(|(cell, _)| cell.cell.level).collect();
        levels.dedup();
        levels
    };
    levels
        .iter()
        .map(|&level| {
            let at_level: Vec<_> = searched
                .iter()
                .filter(|(cell, _)| cell.cell.level == level)
                .collect();
            let (first, first_capacity) = at_level[0];
            let setting = match levels.len() {
                1 => String::new(),
                _ => format!(" c={} m={}", first.cell.clients, first.cell.streams),
            };
            // A ratio only between two capacities of the same kind: both the server's, or both
            // the client's ceilings (closed-loop throughputs); never with nothing found or an
            // interrupted search.
            let kind = |capacity: &Capacity| {
                (capacity.capacity_rps > 0.0 && !capacity.interrupted)
                    .then_some(capacity.limited_by_client)
            };
            let parts: Vec<String> = at_level
                .iter()
                .enumerate()
                .map(|(position, (cell, capacity))| {
                    let caveat = if capacity.interrupted {
                        " (interrupted)"
                    } else if capacity.capacity_rps <= 0.0 {
                        &format!(" ({})", no_capacity(capacity))
                    } else if capacity.limited_by_client {
                        " (the client's ceiling: raise -c or -m)"
                    } else {
                        ""
                    };
                    let rate = format!(
                        "{} {} req/s{caveat}",
                        cell.cell.protocol,
                        grouped(capacity.capacity_rps)
                    );
                    if position == 0 {
                        format!("{rate} at {}", capacity.objectives.join(", "))
                    } else if kind(capacity).is_some() && kind(capacity) == kind(first_capacity) {
                        // Each capacity lies between the rate that passed and the one that
                        // failed: the ratio between the extremes those allow.
                        let range = match (capacity.failing_rps, first_capacity.failing_rps) {
                            (Some(failing), Some(first_failing)) => format!(
                                ", between {:.2} and {:.2}",
                                capacity.capacity_rps / first_failing,
                                failing / first_capacity.capacity_rps
                            ),
                            _ => String::new(),
                        };
                        format!(
                            "{rate} ({}/{} = {:.2}{range})",
                            cell.cell.protocol,
                            first.cell.protocol,
                            capacity.capacity_rps / first_capacity.capacity_rps
                        )
                    } else {
                        rate
                    }
                })
                .collect();
            format!("capacity{setting}: {}", parts.join("; "))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_grouped_by_thousands() {
        assert_eq!(grouped(0.4), "0");
        assert_eq!(grouped(999.6), "1,000");
        assert_eq!(grouped(8450.0), "8,450");
        assert_eq!(grouped(1_234_567.0), "1,234,567");
    }

    fn full(phase: Phase, rate: f64, passed: bool) -> CapacityStep {
        CapacityStep {
            phase,
            offered_rps: Some(rate),
            achieved_rps: rate,
            measured_s: 3.0,
            done: 3000,
            failed: 0,
            backlog: 0,
            errors_pct: 0.0,
            p50_us: 1000,
            p90_us: 2000,
            p99_us: 3000,
            p99_9_us: 4000,
            max_us: 5000,
            p50_ci: None,
            p99_ci: None,
            passed: Some(passed),
        }
    }

    #[test]
    fn full_steps_that_contradict_each_other_are_named() {
        let agreeing = [
            full(Phase::Ramp, 2000.0, true),
            full(Phase::Bisect, 1500.0, false),
            full(Phase::Bisect, 1250.0, true),
            full(Phase::Bisect, 1375.0, false),
            full(Phase::Load, 625.0, true),
            full(Phase::Load, 1000.0, true),
        ];
        let consistency = Consistency::of(&agreeing);
        assert!(consistency.consistent, "{consistency:?}");
        assert_eq!(consistency.passed_consistently_rps, 1250.0);
        assert_eq!(consistency.lowest_failed_rps, Some(1375.0));
        assert_eq!(
            (consistency.full_steps_passed, consistency.full_steps_failed),
            (3, 2)
        );
        // A short step's pass at 2000 judges nothing; a load point at 80% failing twice does.
        let mut contradicting = agreeing.to_vec();
        contradicting[5] = full(Phase::Load, 1000.0, false);
        contradicting.push(full(Phase::Load, 1000.0, false));
        let consistency = Consistency::of(&contradicting);
        assert!(!consistency.consistent);
        assert_eq!(consistency.contradicting_steps, [3, 6, 7]);
        assert_eq!(consistency.passed_consistently_rps, 625.0);
        assert_eq!(consistency.lowest_failed_rps, Some(1000.0));
        let text = render(&Capacity {
            capacity_rps: 1250.0,
            failing_rps: Some(1375.0),
            objectives: vec!["p99<10ms".into()],
            precision_pct: 10.0,
            step_duration_s: 3.0,
            ceiling_rps: 2000.0,
            limited_by_client: false,
            interrupted: false,
            latency_at: Vec::new(),
            consistency: Some(consistency),
            steps: contradicting,
        });
        assert!(
            text.contains("the search was inconsistent: steps 3, 6, 7 contradict each other (full steps passed up to 625 req/s"),
            "{text}"
        );
    }

    #[test]
    fn a_search_that_stopped_short_of_its_precision_says_so() {
        let capacity = |failing: f64| Capacity {
            capacity_rps: 1000.0,
            failing_rps: Some(failing),
            objectives: vec!["p99<10ms".into()],
            precision_pct: 5.0,
            step_duration_s: 3.0,
            ceiling_rps: 2000.0,
            limited_by_client: false,
            interrupted: false,
            latency_at: Vec::new(),
            consistency: None,
            steps: Vec::new(),
        };
        assert!(render(&capacity(1050.0)).contains("capacity: 1,000 req/s (1,050 req/s failed)\n"));
        assert!(render(&capacity(1200.0)).contains(
            "capacity: 1,000 req/s (1,200 req/s failed; the precision of 5% was not reached)\n"
        ));
    }
}
