//! What a run has measured so far, for the progress display and the live metrics
//! (`--metrics-listen`). Each worker thread publishes a copy of its counters and latency histogram
//! a few times a second, and once more with its final numbers when it ends, so the hot path never
//! shares anything with the readers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::recorder::hdr::new_histogram;
use crate::recorder::{ErrorKind, Recorder};

/// How often workers publish.
pub(crate) const PUBLISH_EVERY: Duration = Duration::from_millis(200);

/// One worker's latest numbers.
#[derive(Debug)]
struct Published {
    /// When it was published (`None`: not yet).
    at: Option<Instant>,
    /// Whether it was the worker's last publication.
    ended: bool,
    done: u64,
    failed: u64,
    errored: u64,
    request: Histogram<u64>,
    /// Of `request`, a steered run's backlog (see [`crate::recorder::backlog`]).
    backlog: Histogram<u64>,
    tallies: Tallies,
}

/// The counts the live metrics show besides [`Snapshot`]'s.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tallies {
    /// Responses that met their checks, by status class: 1xx..5xx (index 0..4).
    pub(crate) status_classes: [u64; 5],
    /// Requests that ended without a response, by kind, in [`ErrorKind::ALL`] order, and under
    /// [`ErrorKind::Check`] the responses that failed a check (so with `status_classes` they
    /// add up to `done`).
    pub(crate) request_errors: [u64; ErrorKind::ALL.len()],
    /// Connections established.
    pub(crate) connections_opened: u64,
    /// Connections open now.
    pub(crate) connections_active: u64,
    /// Measured requests in flight now.
    pub(crate) in_flight: u64,
}

impl Tallies {
    /// What `recorder` holds now; `ended`: its thread is done, so nothing is open or in flight
    /// any more (what was still in flight when the run stopped waiting was abandoned).
    fn of(recorder: &Recorder, ended: bool) -> Self {
        let mut request_errors = [0; ErrorKind::ALL.len()];
        for (slot, (_, count)) in request_errors.iter_mut().zip(recorder.request_errors()) {
            *slot = count;
        }
        // `request_errors` is in report order (`ErrorKind::ALL`), not the kinds' own indexes.
        let check = ErrorKind::ALL
            .iter()
            .position(|kind| *kind == ErrorKind::Check)
            .expect("ALL holds every kind");
        request_errors[check] += recorder.checks.failed;
        let mut status_classes = recorder.status_classes;
        for (class, failed) in status_classes.iter_mut().zip(recorder.check_failed_classes) {
            *class -= failed;
        }
        let live = |count: u64| if ended { 0 } else { count };
        Tallies {
            status_classes,
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
pub(crate) struct Live {
    threads: Vec<Mutex<Published>>,
    /// Asks each worker to publish now (a steered run's step edges): one per worker, as
    /// `notify_one` keeps the request for a worker busy publishing when it comes.
    ask: Vec<tokio::sync::Notify>,
    /// The rate a steered run offers now, as f64 bits; NaN when it offers none (unpaced or
    /// paused). Set by the run's controller, read by the live metrics.
    offered: AtomicU64,
}

/// The whole run so far.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Progress {
    /// Requests finished (with or without a response).
    pub(crate) done: u64,
    /// Requests that ended without a response.
    pub(crate) errored: u64,
    /// The 99th percentile of request latency, once there is one.
    pub(crate) p99: Option<Duration>,
}

impl Live {
    /// Room for `threads` workers.
    pub(crate) fn new(threads: usize) -> Self {
        let published = || {
            Mutex::new(Published {
                at: None,
                ended: false,
                done: 0,
                failed: 0,
                errored: 0,
                request: new_histogram(),
                backlog: new_histogram(),
                tallies: Tallies::default(),
            })
        };
        Live {
            threads: (0..threads).map(|_| published()).collect(),
            ask: (0..threads).map(|_| tokio::sync::Notify::new()).collect(),
            offered: AtomicU64::new(f64::NAN.to_bits()),
        }
    }

    /// Whether every worker has published its final numbers.
    pub(crate) fn all_ended(&self) -> bool {
        self.threads.iter().all(|thread| {
            thread
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .ended
        })
    }

    /// Completes when the controller asks worker `thread` to publish ([`Live::fresh_snapshot`]).
    pub(crate) async fn asked(&self, thread: usize) {
        self.ask[thread].notified().await;
    }

    /// Asks every worker to publish now and waits (at most `patience`) until each has, or has
    /// ended; then [`Live::snapshot`]. A step measured between two of these counts what was
    /// finished between its edges, not up to a publishing period off at each.
    pub(crate) fn fresh_snapshot(&self, patience: Duration) -> Snapshot {
        let asked = Instant::now();
        for ask in &self.ask {
            ask.notify_one();
        }
        let fresh = |thread: &Mutex<Published>| {
            let published = thread
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            published.ended || published.at.is_some_and(|at| at >= asked)
        };
        while !self.threads.iter().all(fresh) && asked.elapsed() < patience {
            std::thread::sleep(Duration::from_micros(200));
        }
        self.snapshot()
    }

    /// A steered run now offers `rate` requests per second (`None`: unpaced).
    pub(crate) fn set_offered(&self, rate: Option<f64>) {
        let bits = rate.unwrap_or(f64::NAN).to_bits();
        self.offered.store(bits, Ordering::Relaxed);
    }

    /// The rate a steered run offers now, if it offers one.
    pub(crate) fn offered(&self) -> Option<f64> {
        Some(f64::from_bits(self.offered.load(Ordering::Relaxed))).filter(|rate| !rate.is_nan())
    }

    /// Worker `thread` publishes what its recorder holds.
    pub(crate) fn publish(&self, thread: usize, recorder: &Recorder) {
        self.replace(thread, recorder, false);
    }

    /// Worker `thread` publishes its final numbers: its work has ended.
    pub(crate) fn publish_final(&self, thread: usize, recorder: &Recorder) {
        self.replace(thread, recorder, true);
    }

    fn replace(&self, thread: usize, recorder: &Recorder, ended: bool) {
        let mut published = self.threads[thread]
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        published.at = Some(Instant::now());
        published.ended = ended;
        published.done = recorder.counters.done;
        published.failed = recorder.counters.failed;
        published.errored = recorder.counters.errored;
        published.tallies = Tallies::of(recorder, ended);
        published.request.reset();
        // Both come from `new_histogram`, so their bounds match.
        let _ = published.request.add(&recorder.request);
        if let Some(backlog) = &recorder.backlog {
            published.backlog.reset();
            let _ = published.backlog.add(&backlog.latency);
        }
    }

    /// The totals across workers, with their merged latency histogram.
    pub(crate) fn snapshot(&self) -> Snapshot {
        let mut snapshot = Snapshot {
            done: 0,
            failed: 0,
            errored: 0,
            request: new_histogram(),
            backlog: new_histogram(),
            tallies: Tallies::default(),
            threads: Vec::with_capacity(self.threads.len()),
        };
        for thread in &self.threads {
            let published = thread
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            snapshot.threads.push(Mark {
                at: published.at,
                done: published.done,
            });
            snapshot.done += published.done;
            snapshot.failed += published.failed;
            snapshot.errored += published.errored;
            snapshot.tallies.add(&published.tallies);
            // Both come from `new_histogram`, so their bounds match.
            let _ = snapshot.request.add(&published.request);
            let _ = snapshot.backlog.add(&published.backlog);
        }
        snapshot
    }

    /// The totals across workers, for the progress display.
    pub(crate) fn progress(&self) -> Progress {
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
pub(crate) struct Snapshot {
    /// Requests finished (with or without a response).
    pub(crate) done: u64,
    /// Requests that did not succeed (error statuses and errors).
    pub(crate) failed: u64,
    /// Requests that ended without a response.
    pub(crate) errored: u64,
    /// Request latency.
    pub(crate) request: Histogram<u64>,
    /// Of `request`, a steered run's responses to requests sent before their step's measured
    /// part began.
    pub(crate) backlog: Histogram<u64>,
    /// Requests by outcome, connections, requests in flight.
    pub(crate) tallies: Tallies,
    /// Each worker's count and when it published it: a rate between two snapshots is exact
    /// only over each worker's own publishing times.
    pub(crate) threads: Vec<Mark>,
}

/// One worker's finished requests as of its last publishing.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mark {
    /// When the worker published (`None`: not yet).
    pub(crate) at: Option<Instant>,
    /// Requests finished by then.
    pub(crate) done: u64,
}

impl Snapshot {
    /// Requests finished per second between `before` and this snapshot: each worker's count
    /// over its own publishing times (workers publish on their own clocks, up to a publishing
    /// period apart), `measured` for a worker that did not publish twice in between.
    pub(crate) fn rate_since(&self, before: &Snapshot, measured: Duration) -> f64 {
        self.threads
            .iter()
            .zip(&before.threads)
            .map(|(after, before)| {
                let done = after.done.saturating_sub(before.done) as f64;
                match Self::span(before, after).unwrap_or(measured).as_secs_f64() {
                    seconds if seconds > 0.0 => done / seconds,
                    _ => 0.0,
                }
            })
            .sum()
    }

    /// How long the workers measured between `before` and this snapshot: the mean of their own
    /// spans between publications, the window [`Snapshot::rate_since`] counts over (the caller's
    /// clock reads the edges later than the workers, by whatever it waited for the last of them
    /// and for a CPU); `measured` when no worker published twice in between.
    pub(crate) fn span_since(&self, before: &Snapshot, measured: Duration) -> Duration {
        let (total, count) = self
            .threads
            .iter()
            .zip(&before.threads)
            .filter_map(|(after, before)| Self::span(before, after))
            .fold((Duration::ZERO, 0), |(total, count), span| {
                (total + span, count + 1)
            });
        match count {
            0 => measured,
            count => total / count,
        }
    }

    /// One worker's span between its publications `before` and `after`, if it published at both.
    fn span(before: &Mark, after: &Mark) -> Option<Duration> {
        match (before.at, after.at) {
            (Some(from), Some(to)) if to > from => Some(to - from),
            _ => None,
        }
    }
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
                        grpc: None,
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
                    grpc: None,
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

    #[test]
    fn a_rate_between_snapshots_counts_each_worker_over_its_own_publishing_times() {
        let t0 = Instant::now();
        let at = |millis| Some(t0 + Duration::from_millis(millis));
        let snapshot = |marks: Vec<Mark>| Snapshot {
            done: marks.iter().map(|mark| mark.done).sum(),
            failed: 0,
            errored: 0,
            request: new_histogram(),
            backlog: new_histogram(),
            tallies: Tallies::default(),
            threads: marks,
        };
        // Worker 0 published 40 ms into the window and 10 ms before its end: 900 requests in
        // 950 ms; worker 1 at both edges: 1000 in 1 s. Over the nominal second they would be
        // 1900/s; they are 947.4 + 1000.
        let before = snapshot(vec![
            Mark {
                at: at(40),
                done: 100,
            },
            Mark { at: at(0), done: 0 },
        ]);
        let after = snapshot(vec![
            Mark {
                at: at(990),
                done: 1000,
            },
            Mark {
                at: at(1000),
                done: 1000,
            },
        ]);
        let rate = after.rate_since(&before, Duration::from_secs(1));
        assert!((rate - (900.0 / 0.95 + 1000.0)).abs() < 1e-6, "{rate}");
        // They measured for 975 ms on average, whatever the caller's clock read.
        assert_eq!(
            after.span_since(&before, Duration::from_secs(2)),
            Duration::from_millis(975)
        );
        // A worker that has not published twice counts over the nominal length.
        let unpublished = snapshot(vec![Mark { at: None, done: 0 }]);
        let later = snapshot(vec![Mark {
            at: at(5),
            done: 50,
        }]);
        assert_eq!(
            later.rate_since(&unpublished, Duration::from_millis(500)),
            100.0
        );
        assert_eq!(
            later.span_since(&unpublished, Duration::from_millis(500)),
            Duration::from_millis(500)
        );
    }
}
