//! The connection cap of the target (`serve --max-connections`), shared by its TCP, unix and
//! QUIC listeners, and what accept loops do when the cap is reached or accepting fails: one
//! stderr line a second at most, with a count, and no spinning.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The shortest time between two lines about refused connections or failed accepts.
const LOG_EVERY: Duration = Duration::from_secs(1);

/// Waits after a failed accept (out of descriptors, say): doubled at each failure in a row up to
/// [`MAX_BACKOFF`], so connections can close meanwhile instead of the loop spinning.
const FIRST_BACKOFF: Duration = Duration::from_millis(10);
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// A place for one connection, given back when dropped.
pub(super) type Place = OwnedSemaphorePermit;

/// At most `max` connections at once over every listener of the target.
#[derive(Debug)]
pub(super) struct Gate {
    places: Arc<Semaphore>,
    max: usize,
    refused: Mutex<Tally>,
}

impl Gate {
    pub(super) fn new(max: usize) -> Gate {
        Gate {
            places: Arc::new(Semaphore::new(max)),
            max,
            refused: Mutex::new(Tally::default()),
        }
    }

    /// A place for a connection just accepted, or `None` (the caller closes it at once) when all
    /// are taken; refusals are reported on stderr at most once a second, counted.
    pub(super) fn admit(&self) -> Option<Place> {
        let place = self.places.clone().try_acquire_owned().ok();
        if place.is_none() {
            let mut refused = self.refused.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(count) = refused.count(Instant::now()) {
                errln!(
                    "h2load-rs serve: {count} connection(s) closed at once: --max-connections {} reached",
                    self.max
                );
            }
        }
        place
    }
}

/// Events counted between two stderr lines.
#[derive(Debug, Default)]
struct Tally {
    unreported: u64,
    reported_at: Option<Instant>,
}

impl Tally {
    /// Counts one event at `now`; the count to report if a line is due (the first event is
    /// reported at once, the next ones together at least [`LOG_EVERY`] later).
    fn count(&mut self, now: Instant) -> Option<u64> {
        self.unreported += 1;
        let due = self
            .reported_at
            .is_none_or(|at| now.saturating_duration_since(at) >= LOG_EVERY);
        due.then(|| {
            self.reported_at = Some(now);
            std::mem::take(&mut self.unreported)
        })
    }
}

/// What an accept loop does after accepting fails: report it (at most once a second) and wait,
/// longer at each failure in a row.
#[derive(Debug, Default)]
pub(super) struct AcceptFailures {
    tally: Tally,
    in_a_row: u32,
}

impl AcceptFailures {
    /// Reports `error` if a line is due, then waits before the next accept.
    pub(super) async fn failed(&mut self, error: io::Error) {
        if let Some(count) = self.tally.count(Instant::now()) {
            errln!("h2load-rs serve: accept failed {count} time(s), retrying: {error}");
        }
        let wait = FIRST_BACKOFF.saturating_mul(1 << self.in_a_row.min(7));
        self.in_a_row += 1;
        tokio::time::sleep(wait.min(MAX_BACKOFF)).await;
    }

    /// An accept succeeded: the next failure waits the shortest time again.
    pub(super) fn succeeded(&mut self) {
        self.in_a_row = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_at_once_then_at_most_one_a_second_with_the_count() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let mut tally = Tally::default();
        assert_eq!(tally.count(at(0)), Some(1));
        for ms in 1..1000 {
            assert_eq!(tally.count(at(ms)), None, "{ms}");
        }
        assert_eq!(tally.count(at(1000)), Some(1000));
        assert_eq!(tally.count(at(1500)), None);
        assert_eq!(tally.count(at(2600)), Some(2));
    }

    #[test]
    fn places_are_given_back() {
        let gate = Gate::new(2);
        let first = gate.admit().unwrap();
        let _second = gate.admit().unwrap();
        assert!(gate.admit().is_none());
        drop(first);
        assert!(gate.admit().is_some());
    }
}
