//! A thread's schedule of send times: `--rate` (a constant period), `--stages` (a ramp, each send
//! time computed from the inverse of the cumulative count) or a steered run (the rate the
//! controller last set, read with one atomic load per request).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cli::limits::MAX_DURATION;
use crate::plan::stages::Share;

/// What a steered run offers at the moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Offered {
    /// Nothing: connections stay open and idle (before the first step).
    Paused,
    /// This many requests per second, in total.
    Paced(f64),
    /// As fast as `-c`/`-m` allow: each request's intended start is its actual one.
    Unpaced,
    /// The run is ending: no more requests.
    Stopped,
}

impl Offered {
    /// One word holds it: the rate's bits, infinity for unpaced, zero paused, -1 stopped.
    fn to_bits(self) -> u64 {
        match self {
            Offered::Paused => 0f64,
            Offered::Paced(rate) => rate,
            Offered::Unpaced => f64::INFINITY,
            Offered::Stopped => -1.0,
        }
        .to_bits()
    }

    fn from_bits(bits: u64) -> Offered {
        match f64::from_bits(bits) {
            rate if rate.is_infinite() => Offered::Unpaced,
            rate if rate > 0.0 => Offered::Paced(rate),
            rate if rate < 0.0 => Offered::Stopped,
            _ => Offered::Paused,
        }
    }
}

/// The rate a steered run's controller sets and every thread's pacer reads: no lock, one atomic
/// load per request to see whether it changed.
#[derive(Debug)]
pub struct Throttle {
    offered: AtomicU64,
    /// Counts the changes, so a pacer notices one with a single load.
    epoch: AtomicU64,
    /// Wakes the connections waiting for a send time, so a change applies at once.
    changed: tokio::sync::Notify,
}

impl Throttle {
    /// A throttle that offers nothing yet.
    pub fn new() -> Self {
        Throttle {
            offered: AtomicU64::new(Offered::Paused.to_bits()),
            epoch: AtomicU64::new(0),
            changed: tokio::sync::Notify::new(),
        }
    }

    /// Offers `offered` from now on, on every thread.
    pub fn set(&self, offered: Offered) {
        self.offered.store(offered.to_bits(), Ordering::Relaxed);
        // Release: a pacer that sees the new epoch sees the new rate.
        self.epoch.fetch_add(1, Ordering::Release);
        self.changed.notify_waiters();
    }
}

/// A thread's view of a [`Throttle`].
#[derive(Debug)]
pub struct Steering {
    throttle: Arc<Throttle>,
    /// The throttle's epoch this thread last applied.
    seen: Cell<u64>,
    offered: Cell<Offered>,
    /// The thread's fraction of the total rate.
    fraction: f64,
}

impl Steering {
    /// The share `fraction` of what `throttle` offers.
    pub fn new(throttle: Arc<Throttle>, fraction: f64) -> Self {
        Steering {
            throttle,
            seen: Cell::new(0),
            offered: Cell::new(Offered::Paused),
            fraction,
        }
    }

    /// What is offered now, if it changed since the last call.
    fn changed(&self) -> Option<Offered> {
        let epoch = self.throttle.epoch.load(Ordering::Acquire);
        if epoch == self.seen.get() {
            return None;
        }
        self.seen.set(epoch);
        let offered = Offered::from_bits(self.throttle.offered.load(Ordering::Relaxed));
        self.offered.set(offered);
        Some(offered)
    }
}

/// Where a thread's send times come from.
#[derive(Debug)]
pub enum Source {
    /// `--rate`: one request every period.
    Constant(Duration),
    /// `--stages`: this thread's share of the ramp.
    Stages(Share),
    /// A steered run: what the controller last set.
    Steered(Steering),
}

/// Whether a request may go now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    /// Now, with this intended start.
    Now(Instant),
    /// Not yet: the connection waits (see [`Pacer::come_back_at`]).
    Wait,
    /// Never: the schedule has ended.
    Ended,
    /// Nothing is offered (a steered run between steps): ask again at this time.
    Recheck(Instant),
}

/// How often a connection of a paused steered run looks at the throttle again.
const RECHECK_PAUSED: Duration = Duration::from_millis(50);

/// How long after the end of a timed schedule a send time due before the end may still go: a
/// connection's wake-up can be a little late, but a backlog an overloaded server left is not
/// sent after the end (a ramp's deadline does not stop the budget, its schedule does).
const LATE_AT_END: Duration = Duration::from_millis(5);

/// A thread's share of the schedule: the send times its connections take, in turn.
///
/// A connection that must wait is told when to come back: at a send time no other waiting
/// connection was told, so one connection wakes per scheduled request instead of every idle
/// one (at `-c 1000` the herd cost a third of a core and pushed the p99 start delay to 40 ms).
/// Whoever finds a send time due takes it, told or not, so a time whose connection cannot come
/// (closed, busy) delays only that one request. When the schedule ends (the budget is spent, the
/// run stops, or a timed run's end comes), the first connection to find out wakes the others at
/// once through `over`, so none sleeps past the end.
#[derive(Debug)]
pub struct Pacer {
    source: Source,
    /// Time zero of the schedule.
    start: Instant,
    /// The next scheduled send time.
    pub(super) next: Cell<Instant>,
    /// Its number in the schedule (from 0).
    index: Cell<u64>,
    /// The latest send time a waiting connection was told, once one was, and its number.
    told: Cell<Option<(Instant, u64)>>,
    /// The end of a timed run (`-D`, `--stages`): no send time at or after it.
    ends: Option<Instant>,
    /// Wakes the connections still waiting once the schedule has ended.
    pub(super) over: tokio::sync::Notify,
}

impl Pacer {
    /// A schedule of one request every `period`, from `start` (until `ends`, if given).
    #[cfg(test)]
    pub fn new(period: Duration, start: Instant, ends: Option<Instant>) -> Self {
        Self::with_source(Source::Constant(period), start, ends)
    }

    /// A schedule whose times come from `source`, from `start` (until `ends`, if given).
    pub fn with_source(source: Source, start: Instant, ends: Option<Instant>) -> Self {
        let first = match &source {
            Source::Stages(share) => start + share.send_time(0),
            Source::Constant(_) | Source::Steered(_) => start,
        };
        Pacer {
            source,
            start,
            next: Cell::new(first),
            index: Cell::new(0),
            told: Cell::new(None),
            ends,
            over: tokio::sync::Notify::new(),
        }
    }

    /// Whether a request may be sent at `now`, and with which intended start.
    pub(super) fn due(&self, now: Instant) -> Due {
        if self.past_end(now) {
            return Due::Ended;
        }
        if let Source::Steered(steering) = &self.source {
            if let Some(offered) = steering.changed() {
                // A new rate starts now: times told under the old one no longer hold.
                self.told.set(None);
                self.next.set(match offered {
                    Offered::Paced(_) | Offered::Unpaced => now,
                    Offered::Paused | Offered::Stopped => now + MAX_DURATION,
                });
            }
            match steering.offered.get() {
                Offered::Unpaced => return Due::Now(now),
                Offered::Stopped => return Due::Ended,
                // A change wakes the waiters, but one that lands between a connection's look at
                // the throttle and its wait would be missed: it looks again soon all the same.
                Offered::Paused => return Due::Recheck(now + RECHECK_PAUSED),
                Offered::Paced(_) => {}
            }
        }
        let next = self.next.get();
        if next > now {
            Due::Wait
        } else {
            Due::Now(next)
        }
    }

    /// Whether a timed schedule has ended at `now`: no send time is left before its end. A send
    /// time before the end is still due just after it (a late wake-up), not later.
    pub(crate) fn past_end(&self, now: Instant) -> bool {
        self.ends.is_some_and(|ends| {
            now >= ends && (self.next.get() >= ends || now >= ends + LATE_AT_END)
        })
    }

    /// The send time `intended` (from [`Self::due`]) was taken: the schedule moves on.
    pub(super) fn taken(&self, intended: Instant) {
        let index = self.index.get();
        self.index.set(index + 1);
        self.next.set(self.after(intended, index));
    }

    /// The send time that follows number `index`, scheduled at `time`.
    fn after(&self, time: Instant, index: u64) -> Instant {
        match &self.source {
            Source::Constant(period) => time + *period,
            Source::Stages(share) => self.start + share.send_time(index + 1),
            Source::Steered(steering) => match steering.offered.get() {
                Offered::Paced(rate) => {
                    time + Duration::from_secs_f64(1.0 / (rate * steering.fraction))
                }
                Offered::Unpaced => time,
                Offered::Paused | Offered::Stopped => time + MAX_DURATION,
            },
        }
    }

    /// When a connection that must wait should come back: at the time it was told before if
    /// that one is still untaken and still in the schedule, else at the first time not told to
    /// another connection; at the end of a timed run at the latest, to learn that it is over.
    pub(super) fn come_back_at(&self, held: &Cell<Option<Instant>>) -> Instant {
        let next = self.next.get();
        let told = self.told.get();
        let still_told =
            |time: &Instant| *time >= next && told.is_some_and(|(last, _)| *time <= last);
        if let Some(time) = held.get().filter(still_told) {
            return time;
        }
        let (time, index) = match told {
            Some((last, index)) if last >= next => (self.after(last, index), index + 1),
            _ => (next, self.index.get()),
        };
        self.told.set(Some((time, index)));
        let time = self.ends.map_or(time, |ends| time.min(ends));
        held.set(Some(time));
        time
    }

    /// Completes when the schedule has ended (`over`) or a steered run's rate changed; only a
    /// steered run pays for waiting on both.
    pub(super) async fn over_or_changed(&self) {
        match &self.source {
            Source::Steered(steering) => tokio::select! {
                biased;
                () = self.over.notified() => {}
                () = steering.throttle.changed.notified() => {}
            },
            Source::Constant(_) | Source::Stages(_) => self.over.notified().await,
        }
    }
}
