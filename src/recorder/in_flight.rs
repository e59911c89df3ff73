//! The time-weighted count of measured requests in flight, kept by the [`Recorder`](super::Recorder).

use std::time::Instant;

/// How many measured requests were in flight over time: its integral gives the time-weighted
/// mean, which tells a rate that the concurrency could not carry (in flight at the limit most of
/// the time) from one that slow responses held up for a while (stalls).
#[derive(Debug, Clone, Copy)]
pub(crate) struct InFlightMeter {
    pub(super) count: u64,
    since: Instant,
    /// Requests × seconds in flight so far.
    pub(crate) integral: f64,
}

impl InFlightMeter {
    pub(super) fn new(start: Instant) -> Self {
        InFlightMeter {
            count: 0,
            since: start,
            integral: 0.0,
        }
    }

    /// The count changes at `at` (events may arrive slightly out of order: time never goes back).
    pub(super) fn change(&mut self, at: Instant, started: u64, ended: u64) {
        if at > self.since {
            self.integral += self.count as f64 * (at - self.since).as_secs_f64();
            self.since = at;
        }
        self.count = (self.count + started).saturating_sub(ended);
    }
}
