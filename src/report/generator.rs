//! Whether h2load-rs itself set the result: each runner thread's busy share, and the verdict the
//! report gives in plain words, in the JSON and in the comparison table.

use serde::{Deserialize, Serialize};

/// A runner thread busy at least this share of its time was rarely waiting for the server: the
/// generator, not the server, set the pace (or shared it).
pub(crate) const LIMITED_BUSY: f64 = 0.9;

/// How busy the generator's runner threads were.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct GeneratorLoad {
    /// Each runner thread's busy share, percent: the part of its time it was on a CPU or
    /// runnable waiting for one, not asleep waiting for I/O or a timer.
    pub(crate) thread_busy_pct: Vec<f64>,
    /// A thread was busy at least 90% of its time: h2load-rs itself may have bounded the result.
    /// Only said of a run whose requests mostly succeeded (`report::cause::generator_fair`): a
    /// run busy failing was not measuring the server.
    pub(crate) limited: bool,
}

impl GeneratorLoad {
    /// The verdict on threads of these busy shares (0 to 1); `fair` when the run's requests
    /// mostly succeeded, so the threads were busy measuring (else no verdict).
    pub(crate) fn new(busy: &[f64], fair: bool) -> Self {
        GeneratorLoad {
            thread_busy_pct: busy.iter().map(|share| 100.0 * share).collect(),
            limited: fair && busy.iter().any(|share| *share >= LIMITED_BUSY),
        }
    }

    /// The busiest thread and its share, percent.
    fn busiest(&self) -> Option<(usize, f64)> {
        self.thread_busy_pct
            .iter()
            .copied()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// The plain-words sentence of a limited generator; `None` when no thread was.
    pub(crate) fn sentence(&self) -> Option<String> {
        if !self.limited {
            return None;
        }
        let (thread, busy) = self.busiest()?;
        let threads = self.thread_busy_pct.len();
        Some(format!(
            "runner thread {thread} was {busy:.0}% busy, rarely waiting for the server: this is h2load-rs's limit (or a CPU it shares), not necessarily the server's; raise -t (now {threads}) or give it an idle core, and compare"
        ))
    }

    /// The threads of several reports (merge): every thread's share, limited if any was.
    pub(crate) fn add(&mut self, other: &GeneratorLoad) {
        self.thread_busy_pct
            .extend_from_slice(&other.thread_busy_pct);
        self.limited |= other.limited;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_busy_nine_tenths_of_the_time_limits_the_run() {
        let calm = GeneratorLoad::new(&[0.2, 0.89], true);
        assert!(!calm.limited);
        assert_eq!(calm.sentence(), None);
        // Busy failing is no verdict on the generator.
        assert!(!GeneratorLoad::new(&[0.3, 0.97], false).limited);
        let busy = GeneratorLoad::new(&[0.3, 0.97], true);
        assert!(busy.limited);
        let sentence = busy.sentence().unwrap();
        assert!(
            sentence.starts_with("runner thread 1 was 97% busy"),
            "{sentence}"
        );
        assert!(sentence.contains("raise -t (now 2)"), "{sentence}");
        let mut merged = calm.clone();
        merged.add(&busy);
        assert!(merged.limited);
        assert_eq!(merged.thread_busy_pct.len(), 4);
    }
}
