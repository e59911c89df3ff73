//! What a run has measured so far, for the progress display. Each worker thread publishes a copy
//! of its counters and latency histogram a few times a second, so the hot path never shares
//! anything with the display.

use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::recorder::hdr::new_histogram;
use crate::recorder::Recorder;

/// How often workers publish.
pub const PUBLISH_EVERY: Duration = Duration::from_millis(200);

/// One worker's latest numbers.
#[derive(Debug)]
struct Published {
    done: u64,
    failed: u64,
    errored: u64,
    request: Histogram<u64>,
}

/// The progress of a run, as its workers last published it.
#[derive(Debug)]
pub struct Live {
    threads: Vec<Mutex<Published>>,
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
            })
        };
        Live {
            threads: (0..threads).map(|_| published()).collect(),
        }
    }

    /// Worker `thread` publishes what its recorder holds.
    pub fn publish(&self, thread: usize, recorder: &Recorder) {
        let mut published = self.threads[thread]
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        published.done = recorder.counters.done;
        published.failed = recorder.counters.failed;
        published.errored = recorder.counters.errored;
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
        };
        for thread in &self.threads {
            let published = thread
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            snapshot.done += published.done;
            snapshot.failed += published.failed;
            snapshot.errored += published.errored;
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
}
