//! A steered run's backlog: the requests sent before a step's measured part began (by the step
//! before or by its settling) that finish in it. Each step's figures are its own schedule's
//! alone, so their latencies are recorded apart as well, to be taken out of the step's.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use hdrhistogram::Histogram;

use super::hdr::new_histogram;

/// When the current step's measured part began, set by the run's controller and read by every
/// worker with one atomic load per response.
#[derive(Debug)]
pub(crate) struct StepEdge {
    /// Time zero of `since`.
    base: Instant,
    /// The edge, in nanoseconds after `base` (0 before the first step: nothing is backlog).
    since: AtomicU64,
}

impl StepEdge {
    /// No step yet: nothing is backlog.
    pub(crate) fn new() -> Self {
        StepEdge {
            base: Instant::now(),
            since: AtomicU64::new(0),
        }
    }

    /// A measured part begins at `at`.
    pub(crate) fn set(&self, at: Instant) {
        let nanos = at.saturating_duration_since(self.base).as_nanos();
        self.since
            .store(u64::try_from(nanos).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// Whether a request sent at `sent` went before the current measured part.
    fn before(&self, sent: Instant) -> bool {
        let since = self.since.load(Ordering::Relaxed);
        sent.saturating_duration_since(self.base).as_nanos() < u128::from(since)
    }
}

impl Default for StepEdge {
    fn default() -> Self {
        Self::new()
    }
}

/// The latencies of the responses to requests sent before their step's measured part.
#[derive(Debug, Clone)]
pub(crate) struct Backlog {
    edge: Arc<StepEdge>,
    /// Microseconds, from each request's intended start (as the run's histogram).
    pub(crate) latency: Histogram<u64>,
}

impl Backlog {
    /// Nothing yet; backlog is what was sent before `edge`.
    pub(crate) fn new(edge: Arc<StepEdge>) -> Self {
        Backlog {
            edge,
            latency: new_histogram(),
        }
    }

    /// A response to a request sent at `sent` took `latency_us`: kept if it is backlog.
    pub(crate) fn completed(&mut self, sent: Instant, latency_us: u64) {
        if self.edge.before(sent) {
            self.latency.saturating_record(latency_us);
        }
    }
}
