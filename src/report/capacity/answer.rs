//! The one answer of a capacity search, computed by [`Answer::of`] from the full steps: the
//! capacity with its interval, the range an inconsistent search leaves, or why there is none; and
//! the ratio of two answers ([`ratio`]). Every output renders these and nothing else: the cell's
//! `capacity:` line, the sweep's closing line, the comparison table (text, CSV, Markdown, HTML)
//! and the JSON, so they cannot state different figures.
//!
//! A rate's verdict is that of most of its full steps ([`RateVerdict`]): the search repeats the
//! rates whose verdicts contradict each other (`app::capacity`). With `--rounds N` every step is
//! taken N times in a row, each round on fresh connections: its N rounds are N consecutive steps
//! of the search, each judged alone, and the rate's verdict counts them all. The interval then
//! shows where the rounds disagreed: it runs from the highest rate every one of whose steps held
//! to the lowest every one of whose steps broke.

use serde::{Deserialize, Serialize};

use super::{grouped, Capacity, CapacityStep, Phase};

/// The full steps taken at one offered rate, by verdict.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RateVerdict {
    /// The rate offered.
    pub(crate) rate: f64,
    /// Numbers (from 1, as the text shows them) of the steps at it that passed.
    pub(crate) passed: Vec<usize>,
    /// Numbers of those that failed.
    pub(crate) failed: Vec<usize>,
    /// How many steps one try of a rate takes: `--rounds` (1 without it).
    pub(crate) rounds: usize,
    /// The rounds of one try at this rate disagreed: some held, some did not.
    pub(crate) split: bool,
}

impl RateVerdict {
    /// Most of the rate's full steps passed. A tie is no pass: a rate holds when it held more
    /// often than not.
    pub(crate) fn holds(&self) -> bool {
        self.passed.len() > self.failed.len()
    }

    /// One more try (its `rounds` steps) could not turn the verdict: its passes and failures
    /// differ by more than that (by two or more without rounds).
    pub(crate) fn settled(&self) -> bool {
        self.passed.len().abs_diff(self.failed.len()) > self.rounds
    }

    /// Every one of its full steps held.
    fn always_held(&self) -> bool {
        self.failed.is_empty()
    }

    /// Every one of its full steps broke.
    fn never_held(&self) -> bool {
        self.passed.is_empty()
    }
}

/// Whether `step` judges its rate: a full step (bisection, load point, repeat) with a verdict.
/// Short ramp steps only point the search; the unpaced ceiling offers no rate.
fn judges(step: &CapacityStep) -> bool {
    matches!(step.phase, Phase::Bisect | Phase::Load | Phase::Repeat)
        && step.offered_rps.is_some()
        && step.passed.is_some()
}

/// The full steps of `steps` grouped by offered rate, rates increasing; `rounds` steps in a row
/// are the rounds of one try (`--rounds`; 1 without it).
pub(crate) fn verdicts(steps: &[CapacityStep], rounds: usize) -> Vec<RateVerdict> {
    let rounds = rounds.max(1);
    let mut verdicts: Vec<RateVerdict> = Vec::new();
    for (index, step) in steps.iter().enumerate().filter(|(_, step)| judges(step)) {
        let rate = step.offered_rps.expect("judges() checked");
        let at = match verdicts.iter().position(|verdict| verdict.rate == rate) {
            Some(at) => at,
            None => {
                verdicts.push(RateVerdict {
                    rate,
                    passed: Vec::new(),
                    failed: Vec::new(),
                    rounds,
                    split: false,
                });
                verdicts.len() - 1
            }
        };
        let verdict = &mut verdicts[at];
        let (same, other) = match step.passed == Some(true) {
            true => (&mut verdict.passed, &verdict.failed),
            false => (&mut verdict.failed, &verdict.passed),
        };
        same.push(index + 1);
        // A step of the same try (numbers from 1: index / rounds is the try) said otherwise.
        let split = other
            .iter()
            .any(|number| (number - 1) / rounds == index / rounds);
        verdict.split |= split;
    }
    verdicts.sort_by(|a, b| a.rate.total_cmp(&b.rate));
    verdicts
}

/// The highest (`pick`: `f64::max`) or lowest rate of `verdicts`.
fn extreme<'a>(
    verdicts: impl Iterator<Item = &'a RateVerdict>,
    pick: fn(f64, f64) -> f64,
) -> Option<f64> {
    verdicts.map(|verdict| verdict.rate).reduce(pick)
}

/// The rates whose verdict contradicts another's: a rate that held at or above one that did not,
/// and a rate that did not hold at or below one that did. Rates increasing.
pub(crate) fn contradicting(verdicts: &[RateVerdict]) -> Vec<&RateVerdict> {
    let highest_held = verdicts
        .iter()
        .filter(|verdict| verdict.holds())
        .map(|verdict| verdict.rate)
        .reduce(f64::max);
    let lowest_broken = verdicts
        .iter()
        .filter(|verdict| !verdict.holds())
        .map(|verdict| verdict.rate)
        .reduce(f64::min);
    verdicts
        .iter()
        .filter(|verdict| match verdict.holds() {
            true => lowest_broken.is_some_and(|broken| verdict.rate >= broken),
            false => highest_held.is_some_and(|held| verdict.rate <= held),
        })
        .collect()
}

/// Where a consistent capacity lies: from the highest rate at or below it that held in every one
/// of its full steps (`low`; the capacity when none did, and without `--rounds` or repeats the
/// capacity itself) to the lowest above it that broke in every one (`high`; when none did, the
/// lowest that broke in most; `null` when none above broke: the client's ceiling, or a search cut
/// short). With `--rounds` the rates whose rounds disagreed lie inside it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Interval {
    /// Its lower end.
    pub(crate) low: f64,
    /// Its upper end, `None` when open.
    pub(crate) high: Option<f64>,
}

/// What a search found, as every output states it. In JSON one object with the same keys
/// whatever the kind ([`AnswerFields`]), the ones another kind uses `null` or empty.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(into = "AnswerFields", try_from = "AnswerFields")]
pub(crate) enum Answer {
    /// The rates' verdicts agree: every rate up to `capacity_rps` that a full step tried held,
    /// every one above did not.
    Consistent {
        /// The highest rate that held, requests per second.
        capacity_rps: f64,
        /// Where the capacity lies ([`Interval`]): from `capacity_rps`, or below it the highest
        /// rate whose every step held, to the lowest rate that did not hold.
        interval: Interval,
    },
    /// Even after repeating them, some rates' verdicts contradict others': the capacity is only
    /// known to lie between the highest rate that held with none at or below it failing (0 if
    /// none) and the highest rate that held.
    Inconsistent {
        /// The two ends, requests per second.
        between: [f64; 2],
        /// The numbers (from 1) of the steps whose verdict contradicts another's.
        contradicting_steps: Vec<usize>,
    },
    /// No rate held for a full step.
    None {
        /// Why: `no rate passed`, or `no rate passed a full step` (only short steps did).
        reason: String,
    },
}

/// The kind of an [`Answer`], as the JSON names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Consistent,
    Inconsistent,
    None,
}

/// An [`Answer`] as JSON: every kind's keys, stable for scripts and schemas; `capacity_rps`
/// first, as in the cell's `capacity`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
struct AnswerFields {
    capacity_rps: Option<f64>,
    kind: Kind,
    interval: Option<Interval>,
    between: Option<[f64; 2]>,
    contradicting_steps: Vec<usize>,
    reason: Option<String>,
}

impl From<Answer> for AnswerFields {
    fn from(answer: Answer) -> AnswerFields {
        let none = AnswerFields {
            kind: Kind::None,
            capacity_rps: None,
            interval: None,
            between: None,
            contradicting_steps: Vec::new(),
            reason: None,
        };
        match answer {
            Answer::Consistent {
                capacity_rps,
                interval,
            } => AnswerFields {
                kind: Kind::Consistent,
                capacity_rps: Some(capacity_rps),
                interval: Some(interval),
                ..none
            },
            Answer::Inconsistent {
                between,
                contradicting_steps,
            } => AnswerFields {
                kind: Kind::Inconsistent,
                between: Some(between),
                contradicting_steps,
                ..none
            },
            Answer::None { reason } => AnswerFields {
                reason: Some(reason),
                ..none
            },
        }
    }
}

impl TryFrom<AnswerFields> for Answer {
    type Error = String;

    fn try_from(fields: AnswerFields) -> Result<Answer, String> {
        let lacks = |key: &str| format!("a {:?} capacity answer without `{key}`", fields.kind);
        Ok(match fields.kind {
            Kind::Consistent => Answer::Consistent {
                capacity_rps: fields.capacity_rps.ok_or_else(|| lacks("capacity_rps"))?,
                interval: fields.interval.ok_or_else(|| lacks("interval"))?,
            },
            Kind::Inconsistent => Answer::Inconsistent {
                between: fields.between.ok_or_else(|| lacks("between"))?,
                contradicting_steps: fields.contradicting_steps,
            },
            Kind::None => Answer::None {
                reason: fields.reason.ok_or_else(|| lacks("reason"))?,
            },
        })
    }
}

impl Answer {
    /// The answer `steps` give (numbered from 1 in the order taken), each try of a rate
    /// `rounds` steps in a row (`--rounds`; 1 without it).
    pub(crate) fn of(steps: &[CapacityStep], rounds: usize) -> Answer {
        let verdicts = verdicts(steps, rounds);
        let held = || verdicts.iter().filter(|verdict| verdict.holds());
        let Some(highest) = held().map(|verdict| verdict.rate).reduce(f64::max) else {
            let short_pass = steps
                .iter()
                .any(|step| step.phase == Phase::Ramp && step.passed == Some(true));
            return Answer::None {
                reason: match short_pass {
                    true => "no rate passed a full step",
                    false => "no rate passed",
                }
                .to_owned(),
            };
        };
        let contradicting = contradicting(&verdicts);
        if contradicting.is_empty() {
            let above = || verdicts.iter().filter(|verdict| verdict.rate > highest);
            return Answer::Consistent {
                capacity_rps: highest,
                interval: Interval {
                    // Held rates are at most `highest`; one with no failure held every time.
                    low: extreme(held().filter(|verdict| verdict.always_held()), f64::max)
                        .unwrap_or(highest),
                    high: extreme(above().filter(|verdict| verdict.never_held()), f64::min)
                        .or_else(|| extreme(above(), f64::min)),
                },
            };
        }
        let consistently = held()
            .filter(|verdict| {
                verdicts
                    .iter()
                    .all(|other| other.holds() || other.rate > verdict.rate)
            })
            .map(|verdict| verdict.rate)
            .fold(0.0, f64::max);
        let mut contradicting_steps: Vec<usize> = contradicting
            .iter()
            .flat_map(|verdict| match verdict.holds() {
                true => verdict.passed.clone(),
                false => verdict.failed.clone(),
            })
            .collect();
        contradicting_steps.sort_unstable();
        Answer::Inconsistent {
            between: [consistently, highest],
            contradicting_steps,
        }
    }

    /// The answer of a report written before answers were recorded (`diff` and `merge` read
    /// older reports).
    pub(crate) fn unrecorded() -> Answer {
        Answer::None {
            reason: "not recorded by the version that wrote this report".to_owned(),
        }
    }

    /// The capacity, when the search was consistent.
    pub(crate) fn capacity_rps(&self) -> Option<f64> {
        match self {
            Answer::Consistent { capacity_rps, .. } => Some(*capacity_rps),
            _ => None,
        }
    }

    /// The figure as every output shows it: `8,450 req/s (8,450–8,870)`, `at least 8,450 req/s`
    /// (no rate above failed; `at least 8,450 req/s (every step at 8,000 held)` when the
    /// capacity's own steps disagreed), `inconsistent: between 1,748 and 3,497 req/s`, `none (no rate
    /// passed)`.
    pub(crate) fn figure(&self) -> String {
        match self {
            Answer::Consistent {
                capacity_rps,
                interval,
            } => match interval.high {
                Some(high) => format!(
                    "{} req/s ({}–{})",
                    grouped(*capacity_rps),
                    grouped(interval.low),
                    grouped(high)
                ),
                // Rounds (or repeats) that disagreed at the capacity: the highest rate that held
                // every time is what the interval has.
                None if interval.low < *capacity_rps => format!(
                    "at least {} req/s (every step at {} held)",
                    grouped(*capacity_rps),
                    grouped(interval.low)
                ),
                None => format!("at least {} req/s", grouped(*capacity_rps)),
            },
            Answer::Inconsistent { between, .. } => format!(
                "inconsistent: between {} and {} req/s",
                grouped(between[0]),
                grouped(between[1])
            ),
            Answer::None { reason } => format!("none ({reason})"),
        }
    }

    /// The figure as columns for programs (CSV): the capacity (`inconsistent`, `none`), the low
    /// and the high end, whole requests per second, empty when unknown.
    pub(crate) fn columns(&self) -> [String; 3] {
        let whole = |rate: f64| format!("{rate:.0}");
        match self {
            Answer::Consistent {
                capacity_rps,
                interval,
            } => [
                whole(*capacity_rps),
                whole(interval.low),
                interval.high.map_or_else(String::new, whole),
            ],
            Answer::Inconsistent { between, .. } => [
                "inconsistent".to_owned(),
                whole(between[0]),
                whole(between[1]),
            ],
            Answer::None { .. } => ["none".to_owned(), String::new(), String::new()],
        }
    }
}

/// A cell's capacity over its level's first cell's: `h2c/h1 = 1.06 (1.01–1.09)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct CapacityRatio {
    /// `h2c/h1`.
    pub(crate) label: String,
    /// The ratio of the two capacities.
    pub(crate) ratio: f64,
    /// The range the two intervals leave it (`null`: either is open).
    pub(crate) interval: Option<Interval>,
}

impl CapacityRatio {
    /// `h2c/h1 = 1.06 (1.01–1.09)`, or without the range when it has none.
    pub(crate) fn text(&self) -> String {
        match self.interval {
            Some(Interval {
                low,
                high: Some(high),
            }) => format!("{} = {:.2} ({low:.2}–{high:.2})", self.label, self.ratio),
            _ => format!("{} = {:.2}", self.label, self.ratio),
        }
    }
}

/// The ratio of `capacity` (labelled `label`) to `first`'s: only between two consistent answers
/// of the same kind (both bounded by a failing rate, or both the client's ceiling), never with an
/// inconsistent search, one that found nothing or one a signal cut short. Its range: from the
/// lowest `capacity` may be over the highest `first` may be, to the reverse.
pub(crate) fn ratio(label: String, capacity: &Capacity, first: &Capacity) -> Option<CapacityRatio> {
    let bounded = |capacity: &Capacity| match capacity.answer {
        Answer::Consistent {
            capacity_rps,
            interval,
        } if !capacity.interrupted => Some((capacity_rps, interval)),
        _ => None,
    };
    let ((mine, my_interval), (theirs, their_interval)) = (bounded(capacity)?, bounded(first)?);
    if my_interval.high.is_some() != their_interval.high.is_some() || their_interval.low <= 0.0 {
        return None;
    }
    let interval = my_interval
        .high
        .zip(their_interval.high)
        .map(|(high, first_high)| Interval {
            low: my_interval.low / first_high,
            high: Some(high / their_interval.low),
        });
    Some(CapacityRatio {
        label,
        ratio: mine / theirs,
        interval,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A step at `rate` of `phase`, passed or not.
    pub(crate) fn step(phase: Phase, rate: f64, passed: bool) -> CapacityStep {
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

    fn ceiling(rate: f64) -> CapacityStep {
        CapacityStep {
            offered_rps: None,
            passed: None,
            ..step(Phase::Ceiling, rate, true)
        }
    }

    /// A search of a capacity between 1250 and 1375: the ceiling, a short pass at 2000, a
    /// bisection and load points at 625 and 1000, the last passing or not.
    pub(crate) fn search(passes_at_1000: bool) -> Vec<CapacityStep> {
        vec![
            ceiling(2000.0),
            step(Phase::Ramp, 2000.0, true),
            step(Phase::Bisect, 1500.0, false),
            step(Phase::Bisect, 1250.0, true),
            step(Phase::Bisect, 1375.0, false),
            step(Phase::Load, 625.0, true),
            step(Phase::Load, 1000.0, passes_at_1000),
        ]
    }

    #[test]
    fn agreeing_full_steps_give_the_capacity_and_its_interval() {
        let steps = search(true);
        let answer = Answer::of(&steps, 1);
        assert_eq!(
            answer,
            Answer::Consistent {
                capacity_rps: 1250.0,
                interval: Interval {
                    low: 1250.0,
                    high: Some(1375.0)
                }
            }
        );
        assert_eq!(answer.capacity_rps(), Some(1250.0));
        assert_eq!(answer.figure(), "1,250 req/s (1,250–1,375)");
        assert_eq!(answer.columns(), ["1250", "1250", "1375"]);
        // Every rate passed: the capacity is only known from below.
        let open = Answer::of(
            &steps[..2]
                .iter()
                .cloned()
                .chain([step(Phase::Bisect, 2000.0, true)])
                .collect::<Vec<_>>(),
            1,
        );
        assert_eq!(open.figure(), "at least 2,000 req/s");
        assert_eq!(open.columns(), ["2000", "2000", ""]);
    }

    #[test]
    fn contradicting_full_steps_give_a_range_and_name_the_steps() {
        // A load point at 1000 fails below a bisection pass at 1250: steps 4 and 7.
        let steps = search(false);
        let answer = Answer::of(&steps, 1);
        assert_eq!(
            answer,
            Answer::Inconsistent {
                between: [625.0, 1250.0],
                contradicting_steps: vec![4, 7]
            }
        );
        assert_eq!(answer.capacity_rps(), None);
        assert_eq!(answer.figure(), "inconsistent: between 625 and 1,250 req/s");
        assert_eq!(answer.columns(), ["inconsistent", "625", "1250"]);
        // Repeated twice, the 1000 passes both times: most of its steps passed, and the answer
        // is one figure again.
        let mut repeated = steps.to_vec();
        repeated.push(step(Phase::Repeat, 1000.0, true));
        repeated.push(step(Phase::Repeat, 1000.0, true));
        assert_eq!(Answer::of(&repeated, 1).capacity_rps(), Some(1250.0));
        let verdicts = verdicts(&repeated, 1);
        let at_1000 = verdicts.iter().find(|v| v.rate == 1000.0).unwrap();
        assert_eq!(
            (at_1000.passed.clone(), at_1000.failed.clone()),
            (vec![8, 9], vec![7])
        );
        assert!(at_1000.holds() && !at_1000.settled());
        // One pass, one failure: a tie is no pass, and still a contradiction.
        repeated.pop();
        assert!(matches!(
            Answer::of(&repeated, 1),
            Answer::Inconsistent {
                between: [625.0, 1250.0],
                ..
            }
        ));
        // The lowest full step failing: nothing held consistently, the range starts at 0.
        let lowest = [
            ceiling(2000.0),
            step(Phase::Bisect, 500.0, false),
            step(Phase::Bisect, 1000.0, true),
        ];
        assert_eq!(
            Answer::of(&lowest, 1).figure(),
            "inconsistent: between 0 and 1,000 req/s"
        );
    }

    /// A try of `rounds.len()` rounds at `rate`: each round passed or not.
    fn rounds(phase: Phase, rate: f64, rounds: &[bool]) -> Vec<CapacityStep> {
        rounds
            .iter()
            .map(|passed| step(phase, rate, *passed))
            .collect()
    }

    #[test]
    fn with_rounds_every_round_counts_and_the_interval_spans_where_they_disagreed() {
        let steps: Vec<CapacityStep> = [
            vec![ceiling(2000.0); 3],
            rounds(Phase::Ramp, 2000.0, &[true; 3]),
            rounds(Phase::Bisect, 1500.0, &[false; 3]),
            rounds(Phase::Bisect, 1250.0, &[true, true, false]),
            rounds(Phase::Bisect, 1375.0, &[true, false, false]),
            rounds(Phase::Load, 625.0, &[true; 3]),
            rounds(Phase::Load, 1000.0, &[true; 3]),
        ]
        .concat();
        // 1250 held in most of its rounds, 1375 broke in most: the capacity is 1250; 1000 held
        // in every round, 1500 broke in every one.
        let answer = Answer::of(&steps, 3);
        assert_eq!(
            answer,
            Answer::Consistent {
                capacity_rps: 1250.0,
                interval: Interval {
                    low: 1000.0,
                    high: Some(1500.0)
                }
            }
        );
        assert_eq!(answer.figure(), "1,250 req/s (1,000–1,500)");
        // No rate above failed: open, its low end said in words.
        let open: Vec<CapacityStep> = steps
            .iter()
            .filter(|step| step.offered_rps.is_none_or(|rate| rate <= 1250.0))
            .cloned()
            .collect();
        let open = Answer::of(&open, 3);
        assert_eq!(
            open.figure(),
            "at least 1,250 req/s (every step at 1,000 held)"
        );
        assert_eq!(open.columns(), ["1250", "1000", ""]);
        let verdicts = verdicts(&steps, 3);
        let split: Vec<f64> = verdicts
            .iter()
            .filter(|v| v.split)
            .map(|v| v.rate)
            .collect();
        assert_eq!(split, [1250.0, 1375.0]);
        // One more try of three rounds could turn 1250's 2 to 1, and 1500's 0 to 3 too.
        let at = |rate: f64| verdicts.iter().find(|v| v.rate == rate).unwrap();
        assert!(!at(1250.0).settled() && !at(1500.0).settled());
        // A failure in another try at the same rate does not split either: 1000 taken again.
        let mut again = steps.clone();
        again.extend(rounds(Phase::Repeat, 1000.0, &[false; 3]));
        let verdicts = super::verdicts(&again, 3);
        let at_1000 = verdicts.iter().find(|v| v.rate == 1000.0).unwrap();
        assert!(!at_1000.split && !at_1000.holds());
        // As one round each, the same steps are other tries: 1250's third step is its own.
        assert!(super::verdicts(&steps, 1).iter().all(|v| !v.split));
    }

    #[test]
    fn every_kind_has_the_same_json_keys_and_reads_back() {
        for answer in [
            Answer::Consistent {
                capacity_rps: 1250.0,
                interval: Interval {
                    low: 1250.0,
                    high: None,
                },
            },
            Answer::Inconsistent {
                between: [625.0, 1250.0],
                contradicting_steps: vec![4, 7],
            },
            Answer::None {
                reason: "no rate passed".into(),
            },
        ] {
            let json = serde_json::to_value(&answer).unwrap();
            let mut keys: Vec<&String> = json.as_object().unwrap().keys().collect();
            keys.sort();
            assert_eq!(
                keys,
                [
                    "between",
                    "capacity_rps",
                    "contradicting_steps",
                    "interval",
                    "kind",
                    "reason"
                ]
            );
            assert_eq!(serde_json::from_value::<Answer>(json).unwrap(), answer);
        }
        // A report from before answers were recorded still reads.
        let older = serde_json::json!({"capacity_rps": 0.0, "failing_rps": null, "objectives": [],
            "precision_pct": 5.0, "step_duration_s": 3.0, "ceiling_rps": 100.0,
            "limited_by_client": false, "interrupted": false, "latency_at": [], "steps": []});
        let read: Capacity = serde_json::from_value(older).unwrap();
        assert_eq!(read.answer, Answer::unrecorded());
        let broken = serde_json::json!({"kind": "consistent", "capacity_rps": null,
            "interval": null, "between": null, "contradicting_steps": [], "reason": null});
        assert!(serde_json::from_value::<Answer>(broken).is_err());
    }

    #[test]
    fn no_full_step_that_held_is_no_capacity() {
        let none = [ceiling(2000.0), step(Phase::Ramp, 500.0, false)];
        assert_eq!(
            Answer::of(&none, 1),
            Answer::None {
                reason: "no rate passed".into()
            }
        );
        assert_eq!(Answer::of(&none, 1).figure(), "none (no rate passed)");
        assert_eq!(Answer::of(&none, 1).columns(), ["none", "", ""]);
        let short = [
            ceiling(2000.0),
            step(Phase::Ramp, 500.0, true),
            step(Phase::Bisect, 500.0, false),
        ];
        assert_eq!(
            Answer::of(&short, 1).figure(),
            "none (no rate passed a full step)"
        );
        assert_eq!(Answer::of(&short, 1).capacity_rps(), None);
    }

    fn searched(answer: Answer, limited_by_client: bool, interrupted: bool) -> Capacity {
        Capacity {
            capacity_rps: answer.capacity_rps(),
            answer,
            failing_rps: None,
            objectives: Vec::new(),
            precision_pct: 5.0,
            step_duration_s: 3.0,
            rounds: 1,
            ceiling_rps: 0.0,
            limited_by_client,
            interrupted,
            latency_at: Vec::new(),
            steps: Vec::new(),
        }
    }

    fn consistent(low: f64, high: Option<f64>) -> Answer {
        Answer::Consistent {
            capacity_rps: low,
            interval: Interval { low, high },
        }
    }

    #[test]
    fn a_ratio_comes_from_the_two_answers_and_their_intervals() {
        let h1 = searched(consistent(1000.0, Some(1100.0)), false, false);
        let h2c = searched(consistent(1200.0, Some(1250.0)), false, false);
        let found = ratio("h2c/h1".into(), &h2c, &h1).unwrap();
        assert_eq!(found.ratio, 1.2);
        let interval = found.interval.unwrap();
        assert!((interval.low - 1200.0 / 1100.0).abs() < 1e-12);
        assert_eq!(interval.high, Some(1.25));
        assert_eq!(found.text(), "h2c/h1 = 1.20 (1.09–1.25)");
        // Two client ceilings: a ratio of throughputs, without a range.
        let (a, b) = (
            searched(consistent(1000.0, None), true, false),
            searched(consistent(1500.0, None), true, false),
        );
        assert_eq!(ratio("b/a".into(), &b, &a).unwrap().text(), "b/a = 1.50");
        // Never between two kinds, with an inconsistent search, nothing found or a signal.
        assert_eq!(ratio("x".into(), &b, &h1), None);
        let inconsistent = searched(
            Answer::Inconsistent {
                between: [500.0, 1200.0],
                contradicting_steps: vec![3, 5],
            },
            false,
            false,
        );
        assert_eq!(ratio("x".into(), &inconsistent, &h1), None);
        assert_eq!(ratio("x".into(), &h1, &inconsistent), None);
        let none = searched(
            Answer::None {
                reason: "no rate passed".into(),
            },
            false,
            false,
        );
        assert_eq!(ratio("x".into(), &none, &h1), None);
        let cut = searched(consistent(1200.0, Some(1250.0)), false, true);
        assert_eq!(ratio("x".into(), &cut, &h1), None);
        // Rounds that disagreed widen an interval below the capacity: the ratio is of the two
        // capacities, its range from the intervals.
        let widened = searched(
            Answer::Consistent {
                capacity_rps: 1200.0,
                interval: Interval {
                    low: 1100.0,
                    high: Some(1250.0),
                },
            },
            false,
            false,
        );
        let found = ratio("h2c/h1".into(), &widened, &h1).unwrap();
        assert_eq!(found.ratio, 1.2);
        assert_eq!(found.interval.unwrap().low, 1.0);
    }
}
