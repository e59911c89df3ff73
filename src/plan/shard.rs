//! `--shard I/N`: this process runs part I of N of the scenario, so that N machines (an Indexed
//! Job's pods) together run it once. The value type and its exact split of counts; the plan
//! applies it to `-n`, `-c`, `--rate` and `--stages`.

use serde::{Deserialize, Serialize};

/// The most shards a scenario splits into.
pub(crate) const MAX_SHARDS: u64 = 10_000;

/// The environment variable an Indexed Job sets to each pod's index, from 0.
pub(crate) const JOB_INDEX_VAR: &str = "JOB_COMPLETION_INDEX";

/// Part `index` (from 1) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Shard {
    /// Which part, from 1.
    pub(crate) index: u64,
    /// Of how many.
    pub(crate) count: u64,
}

impl Shard {
    /// `I/N`, or `N` alone with the index from [`JOB_INDEX_VAR`] (from 0, as Kubernetes counts).
    pub(crate) fn parse(text: &str) -> Result<Shard, String> {
        Self::parse_with(text, std::env::var(JOB_INDEX_VAR).ok().as_deref())
    }

    /// [`Shard::parse`] with the job index given.
    pub(crate) fn parse_with(text: &str, job_index: Option<&str>) -> Result<Shard, String> {
        let number = |digits: &str, what: &str| {
            digits
                .trim()
                .parse::<u64>()
                .map_err(|_| format!("{what} must be a whole number, not '{digits}'"))
        };
        let (index, count) = match text.split_once('/') {
            Some((index, count)) => (
                number(index, "the shard's index")?,
                number(count, "the number of shards")?,
            ),
            None => {
                let count = number(text, "the number of shards")?;
                let Some(job_index) = job_index else {
                    return Err(format!(
                        "--shard {text} takes its index from {JOB_INDEX_VAR} (an Indexed Job's pod index), which is not set: give I/N"
                    ));
                };
                let index = number(job_index, JOB_INDEX_VAR)?;
                (index.saturating_add(1), count)
            }
        };
        if !(1..=MAX_SHARDS).contains(&count) {
            return Err(format!(
                "the number of shards must be 1..={MAX_SHARDS}, not {count}"
            ));
        }
        if !(1..=count).contains(&index) {
            return Err(format!(
                "shard {index} of {count} does not exist: the index runs from 1 to {count}"
            ));
        }
        Ok(Shard { index, count })
    }

    /// Why a load cannot be split into `self.count` parts (`requests`: its `-n` total for a cell
    /// of `clients` connections, if counted), if it cannot: a part with no connection or
    /// request, or a mode whose one decider must see the whole load (`find_max`,
    /// `until_stable`: whether it searches or measures until stable).
    pub(crate) fn refusal(
        &self,
        find_max: bool,
        until_stable: bool,
        clients: u64,
        requests: Option<u64>,
    ) -> Option<String> {
        let shard = self;
        if find_max {
            return Some("--shard cannot split --find-max: its search decides each step from the whole load, which one machine must see; run it on one machine".to_owned());
        }
        if until_stable {
            return Some("--shard cannot split --until-stable: each part would stop on its own intervals, so the parts would not add up to one run; give -D or -n".to_owned());
        }
        if clients < shard.count {
            return Some(format!(
                "-c {clients} leaves shard {shard} without a connection: give -c at least {}",
                shard.count
            ));
        }
        match requests {
            Some(n) if n < shard.count => Some(format!(
                "-n {n} leaves shard {shard} without a request: give -n at least {}",
                shard.count
            )),
            _ => None,
        }
    }

    /// This shard's part of `total` things split between the shards: `total / N` each, and one
    /// more for each of the first `total % N` (the parts add up to `total`).
    pub(crate) fn part(&self, total: u64) -> u64 {
        total / self.count + u64::from(self.index <= total % self.count)
    }

    /// Where this shard's send times fall in each period of its paced schedule: a shard takes
    /// every N-th send time of the whole schedule, from the I-th, so shard I's are `(I - 1) / N`
    /// of its own period late (the whole schedule's times striped across the shards, as k6's
    /// execution segments stripe iterations).
    pub(crate) fn phase(&self) -> f64 {
        (self.index - 1) as f64 / self.count as f64
    }
}

/// The whole scenario a `--shard` part belongs to, as each part records it: a part's own
/// `clients`, `requests` and rate are its share, so parts of different scenarios (`-c 30` and
/// `-c 31` split in 3 make parts of 10 and 11 alike) are told apart by these, which `merge`
/// compares.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Whole {
    /// The cell's `-c`, before the split.
    pub(crate) clients: u64,
    /// Its `-n` before the split (`None`: a timed run).
    pub(crate) requests: Option<u64>,
    /// Its `--rate` before the split, requests/s (`None`: unpaced).
    pub(crate) rate_per_s: Option<f64>,
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_add_up_to_the_whole_with_the_remainder_first() {
        for (total, count) in [(10, 3), (7, 7), (1_000_001, 4), (5, 1)] {
            let parts: Vec<u64> = (1..=count)
                .map(|index| Shard { index, count }.part(total))
                .collect();
            assert_eq!(parts.iter().sum::<u64>(), total, "{total} over {count}");
            assert!(parts
                .windows(2)
                .all(|pair| pair[0] >= pair[1] && pair[0] - pair[1] <= 1));
        }
        assert_eq!(Shard { index: 1, count: 3 }.part(10), 4);
        assert_eq!(Shard { index: 3, count: 3 }.part(10), 3);
    }

    #[test]
    fn an_index_comes_from_the_value_or_the_job() {
        assert_eq!(
            Shard::parse_with("2/3", None),
            Ok(Shard { index: 2, count: 3 })
        );
        assert_eq!(
            Shard::parse_with("3", Some("0")),
            Ok(Shard { index: 1, count: 3 })
        );
        assert_eq!(
            Shard::parse_with("3", Some("2")),
            Ok(Shard { index: 3, count: 3 })
        );
        for (text, job, says) in [
            ("3", None, "JOB_COMPLETION_INDEX"),
            ("3", Some("3"), "shard 4 of 3 does not exist"),
            ("0/3", None, "shard 0 of 3 does not exist"),
            ("4/3", None, "shard 4 of 3 does not exist"),
            ("1/0", None, "must be 1..=10000"),
            ("a/3", None, "whole number"),
            (
                "3",
                Some("x"),
                "JOB_COMPLETION_INDEX must be a whole number",
            ),
        ] {
            let error = Shard::parse_with(text, job).unwrap_err();
            assert!(error.contains(says), "{text}: {error}");
        }
        assert_eq!(Shard { index: 1, count: 4 }.phase(), 0.0);
        assert_eq!(Shard { index: 3, count: 4 }.phase(), 0.5);
    }
}
