//! The run's shared request budget: one counter all threads draw from, so no connection idles while
//! another still has work queued, plus the stop flag that ends a timed or interrupted run. The runner
//! makes it; the engine's [`Ledger`](super::Ledger) draws from it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Requests still to send, shared by every connection of the run.
#[derive(Debug)]
pub(crate) struct Budget {
    limit: Option<u64>,
    issued: AtomicU64,
    stopped: AtomicBool,
    /// The last `{seq}` handed out (templates only).
    numbered: AtomicU64,
    /// When the budget was made: the clock of `stopped_at`.
    made: Instant,
    /// When [`Budget::stop_at`] ended the run, ns after `made` (0: it did not).
    stopped_at: AtomicU64,
}

impl Budget {
    /// A budget of `limit` requests, or unlimited (until [`Budget::stop`]) with `None`.
    pub(crate) fn new(limit: Option<u64>) -> Self {
        Budget {
            limit,
            issued: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
            numbered: AtomicU64::new(0),
            made: Instant::now(),
            stopped_at: AtomicU64::new(0),
        }
    }

    /// Takes one request from the budget; `false` when the budget is spent or the run is stopping.
    pub(crate) fn try_take(&self) -> bool {
        if self.stopped.load(Ordering::Relaxed) {
            return false;
        }
        match self.limit {
            None => true,
            Some(limit) => self
                .issued
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |issued| {
                    (issued < limit).then_some(issued + 1)
                })
                .is_ok(),
        }
    }

    /// The next request number over the whole run, from 1, for `{seq}`: one shared counter, so
    /// numbers are unique and without gaps across threads (taken only when a template uses it).
    pub(crate) fn next_number(&self) -> u64 {
        self.numbered.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Returns a request taken with [`Budget::try_take`] that was never sent.
    pub(crate) fn give_back(&self) {
        if self.limit.is_some() {
            self.issued.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Whether a connection opened now could still get a request.
    pub(crate) fn has_more(&self) -> bool {
        !self.stopped.load(Ordering::Relaxed)
            && self
                .limit
                .is_none_or(|limit| self.issued.load(Ordering::Relaxed) < limit)
    }

    /// Stops handing out requests (the deadline passed, or the user interrupted the run).
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }

    /// Ends the run at `at` (`--until-stable` found the answer sure enough): no more requests,
    /// and a schedule ends there, as at its deadline (its send times after `at` are not missed).
    pub(crate) fn stop_at(&self, at: Instant) {
        let since = at.saturating_duration_since(self.made).as_nanos() as u64;
        self.stopped_at.store(since.max(1), Ordering::Relaxed);
        self.stop();
    }

    /// When [`Budget::stop_at`] ended the run, if it did.
    pub(crate) fn stopped_at(&self) -> Option<Instant> {
        match self.stopped_at.load(Ordering::Relaxed) {
            0 => None,
            since => Some(self.made + Duration::from_nanos(since)),
        }
    }

    /// Requests of a counted budget that were never taken (0 for a timed run).
    pub(crate) fn untaken(&self) -> u64 {
        self.limit.map_or(0, |limit| {
            limit.saturating_sub(self.issued.load(Ordering::Relaxed))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_budget_hands_out_exactly_its_limit() {
        let budget = Budget::new(Some(3));
        assert_eq!((0..10).filter(|_| budget.try_take()).count(), 3);
        assert!(!budget.has_more());
        budget.give_back();
        assert!(budget.has_more());
        assert_eq!(budget.untaken(), 1);
        assert!(budget.try_take());
        assert!(!budget.try_take());
    }

    #[test]
    fn stop_ends_an_unlimited_budget() {
        let budget = Budget::new(None);
        assert!(budget.try_take());
        budget.stop();
        assert!(!budget.try_take());
        assert!(!budget.has_more());
        assert_eq!(budget.untaken(), 0);
    }

    #[test]
    fn threads_share_one_budget() {
        let budget = std::sync::Arc::new(Budget::new(Some(10_000)));
        let taken: usize = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| std::iter::from_fn(|| budget.try_take().then_some(())).count())
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(taken, 10_000);
    }
}
