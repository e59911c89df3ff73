//! What a run has measured so far, for the progress display and the live metrics
//! (`--metrics-listen`). Each worker thread publishes a copy of its counters and latency histogram
//! a few times a second, and once more with its final numbers when it ends, so the hot path never
//! shares anything with the readers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::recorder::hdr::new_histogram;
use crate::recorder::{ErrorKind, Recorder};

/// How often workers publish.
pub const PUBLISH_EVERY: Duration = Duration::from_millis(200);

/// One worker's latest numbers.
#[derive(Debug)]
struct Published {
    done: u64,
    failed: u64,
    errored: u64,
    request: Histogram<u64>,
    tallies: Tallies,
}

/// The counts the live metrics show besides [`Snapshot`]'s.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tallies {
    /// Responses by status class: 1xx..5xx (index 0..4).
    pub status_classes: [u64; 5],
    /// Requests that ended without a response, by kind, in [`ErrorKind::ALL`] order.
    pub request_errors: [u64; ErrorKind::ALL.len()],
    /// Connections established.
    pub connections_opened: u64,
    /// Connections open now.
    pub connections_active: u64,
    /// Measured requests in flight now.
    pub in_flight: u64,
}

impl Tallies {
    /// What `recorder` holds now; `ended`: its thread is done, so nothing is open or in flight
    /// any more (what was still in flight when the run stopped waiting was abandoned).
    fn of(recorder: &Recorder, ended: bool) -> Self {
        let mut request_errors = [0; ErrorKind::ALL.len()];
        for (slot, (_, count)) in request_errors.iter_mut().zip(recorder.request_errors()) {
            *slot = count;
        }
        let live = |count: u64| if ended { 0 } else { count };
        Tallies {
            status_classes: recorder.status_classes,
            request_errors,
            connections_opened: recorder.connections_opened,
            connections_active: live(
                recorder
                    .connections_opened
                    .saturating_sub(recorder.connections_ended),
            ),
            in_flight: live(recorder.in_flight_now()),
        }
    }

    fn add(&mut self, other: &Tallies) {
        for (mine, theirs) in self.status_classes.iter_mut().zip(other.status_classes) {
            *mine += theirs;
        }
        for (mine, theirs) in self.request_errors.iter_mut().zip(other.request_errors) {
            *mine += theirs;
        }
        self.connections_opened += other.connections_opened;
        self.connections_active += other.connections_active;
        self.in_flight += other.in_flight;
    }
}

/// The progress of a run, as its workers last published it.
#[derive(Debug)]
pub struct Live {
    threads: Vec<Mutex<Published>>,
    /// The rate a steered run offers now, as f64 bits; NaN when it offers none (unpaced or
    /// paused). Set by the run's controller, read by the live metrics.
    offered: AtomicU64,
}

/// The whole run so far.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Requests finished (with or without a response).
    pub done: u64,
    /// Requests that ended without a response.
    pub errored: u64,
    /// The 99th percentile of request latency, once there is one.
    pub p99: Option<Duration>,
}

impl Live {
    /// Room for `threads` workers.
    pub fn new(threads: usize) -> Self {
        let published = || {
            Mutex::new(Published {
                done: 0,
                failed: 0,
                errored: 0,
                request: new_histogram(),
                tallies: Tallies::default(),
            })
        };
        Live {
            threads: (0..threads).map(|_| published()).collect(),
            offered: AtomicU64::new(f64::NAN.to_bits()),
        }
    }

    /// A steered run now offers `rate` requests per second (`None`: unpaced).
    pub fn set_offered(&self, rate: Option<f64>) {
        let bits = rate.unwrap_or(f64::NAN).to_bits();
        self.offered.store(bits, Ordering::Relaxed);
    }

    /// The rate a steered run offers now, if it offers one.
    pub fn offered(&self) -> Option<f64> {
        Some(f64::from_bits(self.offered.load(Ordering::Relaxed))).filter(|rate| !rate.is_nan())
    }

    /// Worker `thread` publishes what its recorder holds.
    pub fn publish(&self, thread: usize, recorder: &Recorder) {
        self.replace(thread, recorder, false);
    }

    /// Worker `thread` publishes its final numbers: its work has ended.
    pub fn publish_final(&self, thread: usize, recorder: &Recorder) {
        self.replace(thread, recorder, true);
    }

    fn replace(&self, thread: usize, recorder: &Recorder, ended: bool) {
        let mut published = self.threads[thread]
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        published.done = recorder.counters.done;
        published.failed = recorder.counters.failed;
        published.errored = recorder.counters.errored;
        published.tallies = Tallies::of(recorder, ended);
        published.request.reset();
        // Both come from `new_histogram`, so their bounds match.
        let _ = published.request.add(&recorder.request);
    }

    /// The totals across workers, with their merged latency histogram.
    pub fn snapshot(&self) -> Snapshot {
        let mut snapshot = Snapshot {
            done: 0,
            failed: 0,
            errored: 0,
            request: new_histogram(),
            tallies: Tallies::default(),
        };
        for thread in &self.threads {
            let published = thread
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            snapshot.done += published.done;
            snapshot.failed += published.failed;
            snapshot.errored += published.errored;
            snapshot.tallies.add(&published.tallies);
            // Both come from `new_histogram`, so their bounds match.
            let _ = snapshot.request.add(&published.request);
        }
        snapshot
    }

    /// The totals across workers, for the progress display.
    pub fn progress(&self) -> Progress {
        let snapshot = self.snapshot();
        Progress {
            done: snapshot.done,
            errored: snapshot.errored,
            p99: (!snapshot.request.is_empty())
                .then(|| Duration::from_micros(snapshot.request.value_at_quantile(0.99))),
        }
    }
}

/// Everything the workers last published, added up: the counters of [`Recorder`] and its request
/// latency histogram (microseconds, from each request's intended start).
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Requests finished (with or without a response).
    pub done: u64,
    /// Requests that did not succeed (error statuses and errors).
    pub failed: u64,
    /// Requests that ended without a response.
    pub errored: u64,
    /// Request latency.
    pub request: Histogram<u64>,
    /// Requests by outcome, connections, requests in flight.
    pub tallies: Tallies,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::{RequestStart, ResponseSample};
    use std::time::Instant;

    #[test]
    fn progress_adds_up_the_workers() {
        let live = Live::new(2);
        assert_eq!(live.progress().p99, None);
        let t0 = Instant::now();
        for (thread, millis) in [(0, 2), (1, 40)] {
            let mut recorder = Recorder::new(
                t0,
                1,
                crate::plan::TimelineInterval::choose(
                    Some(Duration::from_secs(1)),
                    &crate::plan::StopRule::Requests(1),
                ),
                false,
            );
            for _ in 0..50 {
                let start = RequestStart::first(t0, t0, 1);
                let end = t0 + Duration::from_millis(millis);
                recorder.response(
                    0,
                    ResponseSample {
                        start,
                        first_byte: end,
                        end,
                        status: 200,
                    },
                );
            }
            recorder.requests_failed(3, crate::recorder::ErrorKind::Reset);
            live.publish(thread, &recorder);
            // Publishing again replaces, never adds.
            live.publish(thread, &recorder);
        }
        let progress = live.progress();
        assert_eq!((progress.done, progress.errored), (106, 6));
        let p99 = progress.p99.unwrap().as_millis();
        assert!((39..=41).contains(&p99), "{p99}");
    }

    #[test]
    fn tallies_show_what_is_open_until_the_final_publish() {
        let live = Live::new(2);
        let t0 = Instant::now();
        let interval = crate::plan::TimelineInterval::choose(
            Some(Duration::from_secs(1)),
            &crate::plan::StopRule::Requests(1),
        );
        for thread in 0..2 {
            let mut recorder = Recorder::new(t0, 1, interval, false);
            // Two connections, one of which ended; three requests sent, one answered 404.
            recorder.connected(0, t0, t0);
            recorder.connected(0, t0, t0);
            recorder.connection_ended();
            for _ in 0..3 {
                recorder.request_started(RequestStart::first(t0, t0, 1));
            }
            recorder.response(
                0,
                ResponseSample {
                    start: RequestStart::first(t0, t0, 1),
                    first_byte: t0,
                    end: t0,
                    status: 404,
                },
            );
            // Counts add up across threads; only the thread still running has anything open.
            live.publish(thread, &recorder);
            let tallies = live.snapshot().tallies;
            let threads = thread as u64 + 1;
            assert_eq!(tallies.connections_opened, 2 * threads);
            assert_eq!(tallies.status_classes, [0, 0, 0, threads, 0]);
            assert_eq!((tallies.connections_active, tallies.in_flight), (1, 2));
            live.publish_final(thread, &recorder);
            let tallies = live.snapshot().tallies;
            assert_eq!(tallies.connections_opened, 2 * threads);
            assert_eq!((tallies.connections_active, tallies.in_flight), (0, 0));
        }
    }
}
