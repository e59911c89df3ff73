//! What a `--find-max` search found in a cell: the capacity, the steps tried, the latency below
//! it; and its text, one block per cell. Its one answer is `answer.rs`; the lines across a
//! sweep's cells, `sweep.rs`.

use std::fmt::Write;

use serde::{Deserialize, Serialize};

pub(crate) mod answer;
pub(crate) mod sweep;

use crate::stats::confidence::Bounds;
use crate::units::format_micros;
pub(crate) use answer::Answer;

/// The outcome of a capacity search. `capacity_rps` is its first numeric field (scripts read it
/// first); it and every other output come from `answer` ([`Answer::of`]).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Capacity {
    /// The capacity when the search was consistent, requests per second: the highest rate that
    /// held for its full steps; `None` when the search was inconsistent or found none.
    pub(crate) capacity_rps: Option<f64>,
    /// What the search found, as every output states it (in a report from before it was
    /// recorded: none, with that reason).
    #[serde(default = "Answer::unrecorded")]
    pub(crate) answer: Answer,
    /// The lowest rate whose full steps broke an objective, above a consistent capacity (`null`:
    /// none did, or the search was not consistent).
    pub(crate) failing_rps: Option<f64>,
    /// The objectives, canonically spelled (`p99<100ms`).
    pub(crate) objectives: Vec<String>,
    /// The precision asked for: the search stops when `(failing - capacity) / capacity` is at
    /// most this, in percent.
    pub(crate) precision_pct: f64,
    /// Length of a full step's measured part, seconds.
    pub(crate) step_duration_s: f64,
    /// `--rounds`: how many times each step was taken in a row, each round on fresh connections;
    /// `steps` holds every round, the rounds of one step consecutive (1 without it).
    #[serde(default = "one_round")]
    pub(crate) rounds: usize,
    /// What the unpaced step achieved with this cell's `-c`/`-m`: the most the client can offer.
    pub(crate) ceiling_rps: f64,
    /// Every rate up to the ceiling passed: the capacity is the client's (raise `-c`/`-m`),
    /// not the server's.
    pub(crate) limited_by_client: bool,
    /// A signal ended the search early: the capacity is what it had found by then.
    pub(crate) interrupted: bool,
    /// Latency at 50%, 80% and 100% of a consistent capacity (100%: the step that established
    /// it); empty otherwise.
    pub(crate) latency_at: Vec<LoadPoint>,
    /// Every step, in the order tried.
    pub(crate) steps: Vec<CapacityStep>,
}

/// A report from before `--rounds` searched: one round a step.
fn one_round() -> usize {
    1
}

/// The settings a search ran with, as its report shows them.
#[derive(Debug, Clone)]
pub(crate) struct SearchSettings {
    /// The objectives, canonically spelled.
    pub(crate) objectives: Vec<String>,
    /// `--precision`, percent.
    pub(crate) precision_pct: f64,
    /// A full step's measured length, seconds.
    pub(crate) step_duration_s: f64,
    /// `--rounds`: the times each step is taken in a row.
    pub(crate) rounds: usize,
}

/// The shares of the capacity `latency_at` reports, the last the capacity itself.
pub(crate) const LOAD_SHARES: [f64; 3] = [0.5, 0.8, 1.0];

impl Capacity {
    /// The outcome of a search that took `steps` (the first the unpaced one, which measured
    /// `ceiling_rps`; each step `settings.rounds` times in a row): its [`Answer`], and the fields
    /// that restate it.
    pub(crate) fn new(
        settings: SearchSettings,
        ceiling_rps: f64,
        interrupted: bool,
        steps: Vec<CapacityStep>,
    ) -> Capacity {
        let answer = Answer::of(&steps, settings.rounds);
        let (capacity_rps, failing_rps) = match &answer {
            Answer::Consistent {
                capacity_rps,
                interval,
            } => (Some(*capacity_rps), interval.high),
            _ => (None, None),
        };
        // Only a climb that went through the ceiling, uncut, leaves no rate failing.
        let limited_by_client = capacity_rps.is_some() && failing_rps.is_none() && !interrupted;
        let latency_at = capacity_rps.map_or_else(Vec::new, |capacity| {
            LOAD_SHARES
                .into_iter()
                .filter_map(|share| {
                    let rate = share * capacity;
                    // The last full step at that rate (a load point's rate is computed alike;
                    // with rounds, its last round).
                    let step = steps.iter().rev().find(|step| {
                        step.phase != Phase::Ramp
                            && step.offered_rps.is_some_and(|offered| {
                                (offered - rate).abs() <= 1e-9 * rate.max(1.0)
                            })
                    })?;
                    Some(LoadPoint {
                        share_pct: 100.0 * share,
                        offered_rps: rate,
                        achieved_rps: step.achieved_rps,
                        p50_us: step.p50_us,
                        p99_us: step.p99_us,
                    })
                })
                .collect()
        });
        Capacity {
            capacity_rps,
            answer,
            failing_rps,
            objectives: settings.objectives,
            precision_pct: settings.precision_pct,
            step_duration_s: settings.step_duration_s,
            rounds: settings.rounds,
            ceiling_rps,
            limited_by_client,
            interrupted,
            latency_at,
            steps,
        }
    }
}

/// Why a step was run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Phase {
    /// Unpaced: how fast the client can go.
    Ceiling,
    /// A short step of the coarse ramp (shares of the ceiling).
    Ramp,
    /// A full step of the bisection, or the full step confirming a rate a short step passed.
    Bisect,
    /// A full step below the capacity, for the latency there.
    Load,
    /// A full step at a rate whose verdict contradicted another rate's, taken again.
    Repeat,
}

impl Phase {
    /// The phase as the report and the JSON name it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Phase::Ceiling => "ceiling",
            Phase::Ramp => "ramp",
            Phase::Bisect => "bisect",
            Phase::Load => "load",
            Phase::Repeat => "repeat",
        }
    }
}

/// One step of the search, over its measured part.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct CapacityStep {
    /// Why it was run.
    pub(crate) phase: Phase,
    /// The rate offered (`null`: unpaced).
    pub(crate) offered_rps: Option<f64>,
    /// The rate achieved.
    pub(crate) achieved_rps: f64,
    /// Length of the measured part, seconds.
    pub(crate) measured_s: f64,
    /// Requests finished in it.
    pub(crate) done: u64,
    /// Of them, failed.
    pub(crate) failed: u64,
    /// Responses finished in it to requests sent before it (by its settling or the step
    /// before): in none of its other figures.
    #[serde(default)]
    pub(crate) backlog: u64,
    /// `failed / done`, percent.
    pub(crate) errors_pct: f64,
    /// Request latency percentiles, µs, from each request's scheduled start.
    pub(crate) p50_us: u64,
    /// 90th percentile.
    pub(crate) p90_us: u64,
    /// 99th percentile.
    pub(crate) p99_us: u64,
    /// 99.9th percentile.
    pub(crate) p99_9_us: u64,
    /// Largest.
    pub(crate) max_us: u64,
    /// The 95% confidence interval of `p50_us`, as if the step's samples were independent (a
    /// step has no timeline of its own to measure their dependence: too narrow where they move
    /// together); `null` without samples.
    #[serde(default)]
    pub(crate) p50_ci: Option<Bounds<u64>>,
    /// The same for `p99_us`.
    #[serde(default)]
    pub(crate) p99_ci: Option<Bounds<u64>>,
    /// Every objective held and at least 97% of the offered rate was achieved (`null` for the
    /// unpaced step, which offers no rate).
    pub(crate) passed: Option<bool>,
}

/// The latency at a share of the capacity.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct LoadPoint {
    /// Share of the capacity, percent (50, 80, 100).
    pub(crate) share_pct: f64,
    /// The rate offered.
    pub(crate) offered_rps: f64,
    /// The rate achieved.
    pub(crate) achieved_rps: f64,
    /// Median latency, µs.
    pub(crate) p50_us: u64,
    /// 99th percentile, µs.
    pub(crate) p99_us: u64,
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
    let rounds = capacity.rounds.max(1);
    writeln!(
        out,
        "\ncapacity search: {}; steps of {:.1}s, precision {}%{}",
        capacity.objectives.join(", "),
        capacity.step_duration_s,
        capacity.precision_pct,
        match rounds {
            1 => String::new(),
            rounds => format!(", {rounds} rounds a step, each on fresh connections"),
        }
    )?;
    // `bisect 2/3` takes a wider column than the phase alone.
    let width = match rounds {
        1 => 8,
        _ => 12,
    };
    writeln!(
        out,
        "  {:>4}  {:<width$} {:>10} {:>10} {:>9} {:>9} {:>8}  result",
        "step", "phase", "offered", "achieved", "p50", "p99", "failed"
    )?;
    for (index, step) in capacity.steps.iter().enumerate() {
        // With rounds, the round of its step: `bisect 2/3`.
        let phase = match rounds {
            1 => step.phase.name().to_owned(),
            rounds => format!("{} {}/{rounds}", step.phase.name(), index % rounds + 1),
        };
        writeln!(
            out,
            "  {:>4}  {:<width$} {:>10} {:>10} {:>9} {:>9} {:>7.2}%  {}",
            index + 1,
            phase,
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
    writeln!(out, "capacity: {}", line(capacity))?;
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

/// The cell's `capacity:` line after `capacity: `: the answer's figure, then what qualifies it.
fn line(capacity: &Capacity) -> String {
    let mut notes = Vec::new();
    match &capacity.answer {
        Answer::Consistent {
            capacity_rps,
            interval,
        } => match interval.high {
            // The bisection has a step limit: say when it stopped short of the precision.
            Some(high)
                if (high - capacity_rps) / capacity_rps
                    > capacity.precision_pct / 100.0 + 1e-9 =>
            {
                notes.push(format!(
                    "the precision of {}% was not reached",
                    capacity.precision_pct
                ))
            }
            None if capacity.limited_by_client => notes.push(format!(
                "every rate up to the client's ceiling of {} req/s passed: raise -c or -m to find the server's",
                grouped(capacity.ceiling_rps)
            )),
            _ => {}
        },
        Answer::Inconsistent {
            contradicting_steps,
            ..
        } => notes.push(format!(
            "steps {} contradict each other, repeated as far as the search allows: at this step length these rates cannot be told apart; use a longer --step-duration, more connections, or an idle machine",
            contradicting_steps
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Answer::None { .. } => {}
    }
    if capacity.interrupted {
        notes.push("the search was interrupted".to_owned());
    }
    let mut line = capacity.answer.figure();
    for note in notes {
        line.push_str("; ");
        line.push_str(&note);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::answer::tests::{search, step as full};
    use super::*;

    #[test]
    fn rates_are_grouped_by_thousands() {
        assert_eq!(grouped(0.4), "0");
        assert_eq!(grouped(999.6), "1,000");
        assert_eq!(grouped(8450.0), "8,450");
        assert_eq!(grouped(1_234_567.0), "1,234,567");
    }

    fn settings(precision_pct: f64) -> SearchSettings {
        SearchSettings {
            objectives: vec!["p99<10ms".into()],
            precision_pct,
            step_duration_s: 3.0,
            rounds: 1,
        }
    }

    #[test]
    fn the_cell_line_states_the_answer_and_what_qualifies_it() {
        let capacity = Capacity::new(settings(10.0), 2000.0, false, search(true));
        assert_eq!(capacity.capacity_rps, Some(1250.0));
        assert_eq!(capacity.failing_rps, Some(1375.0));
        assert!(!capacity.limited_by_client);
        // The load points at 50% and 80% and the step that established it.
        let shares: Vec<f64> = capacity.latency_at.iter().map(|p| p.share_pct).collect();
        assert_eq!(shares, [50.0, 80.0, 100.0]);
        assert!(render(&capacity).contains("\ncapacity: 1,250 req/s (1,250–1,375)\n"));
        // A load point at 80% failing below the capacity's pass: a range, no latency points.
        let capacity = Capacity::new(settings(10.0), 2000.0, false, search(false));
        assert_eq!(capacity.capacity_rps, None);
        assert_eq!(capacity.failing_rps, None);
        assert!(capacity.latency_at.is_empty());
        let text = render(&capacity);
        assert!(
            text.contains("\ncapacity: inconsistent: between 625 and 1,250 req/s; steps 4, 7 contradict each other, repeated as far"),
            "{text}"
        );
    }

    #[test]
    fn a_search_that_stopped_short_of_its_precision_says_so() {
        let capacity = |failing: f64| {
            Capacity::new(
                settings(5.0),
                2000.0,
                false,
                vec![
                    full(Phase::Bisect, 1000.0, true),
                    full(Phase::Bisect, failing, false),
                ],
            )
        };
        assert!(render(&capacity(1050.0)).contains("capacity: 1,000 req/s (1,000–1,050)\n"));
        assert!(render(&capacity(1200.0)).contains(
            "capacity: 1,000 req/s (1,000–1,200); the precision of 5% was not reached\n"
        ));
        // Every rate up to the ceiling passed: the client's limit; a signal says so too.
        let open = Capacity::new(
            settings(5.0),
            2000.0,
            false,
            vec![full(Phase::Bisect, 2000.0, true)],
        );
        assert!(open.limited_by_client);
        assert!(render(&open).contains("capacity: at least 2,000 req/s; every rate up to the client's ceiling of 2,000 req/s passed: raise -c or -m to find the server's\n"));
        let cut = Capacity::new(
            settings(5.0),
            2000.0,
            true,
            vec![full(Phase::Bisect, 1000.0, true)],
        );
        assert!(!cut.limited_by_client);
        assert!(
            render(&cut).contains("capacity: at least 1,000 req/s; the search was interrupted\n")
        );
    }
}
