//! A thread's schedule of send times: `--rate` (a constant period), `--stages` (a ramp, each send
//! time computed from the inverse of the cumulative count) or a steered run (the rate the
//! controller last set, read with one atomic load per request); spaced evenly, or with
//! `--arrival poisson` as a Poisson process ([`Gaps`]).

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::plan::stages::Share;
use crate::plan::template::Rng;
use crate::recorder::backlog::StepEdge;
use crate::recorder::outcome::Kept;
use crate::units::MAX_DURATION;

/// What a steered run offers at the moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Offered {
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
pub(crate) struct Throttle {
    offered: AtomicU64,
    /// Counts the changes, so a pacer notices one with a single load.
    epoch: AtomicU64,
    /// Counts the renewals of the connections ([`Throttle::renew_connections`]): a connection
    /// opened under an earlier one takes no more requests and closes, and its slot connects
    /// again.
    generation: AtomicU64,
    /// Wakes the connections waiting for a send time, so a change applies at once.
    changed: tokio::sync::Notify,
    /// Where the current step's measured part began: the requests sent before it are its
    /// backlog (the workers' recorders keep their latencies apart).
    pub(crate) edge: Arc<StepEdge>,
}

impl Throttle {
    /// A throttle that offers nothing yet.
    pub(crate) fn new() -> Self {
        Throttle {
            offered: AtomicU64::new(Offered::Paused.to_bits()),
            epoch: AtomicU64::new(0),
            generation: AtomicU64::new(0),
            changed: tokio::sync::Notify::new(),
            edge: Arc::new(StepEdge::new()),
        }
    }

    /// Offers `offered` from now on, on every thread.
    pub(crate) fn set(&self, offered: Offered) {
        self.offered.store(offered.to_bits(), Ordering::Relaxed);
        // Release: a pacer that sees the new epoch sees the new rate.
        self.epoch.fetch_add(1, Ordering::Release);
        self.changed.notify_waiters();
    }

    /// Closes every connection once its requests in flight are answered and opens a new one in
    /// its place (`--find-max --rounds`: each round on fresh connections). The connections
    /// waiting for a send time are woken to find out.
    pub(crate) fn renew_connections(&self) {
        self.generation.fetch_add(1, Ordering::Relaxed);
        self.changed.notify_waiters();
    }
}

/// A thread's view of a [`Throttle`].
#[derive(Debug)]
pub(crate) struct Steering {
    throttle: Arc<Throttle>,
    /// The throttle's epoch this thread last applied.
    seen: Cell<u64>,
    offered: Cell<Offered>,
    /// The thread's fraction of the total rate.
    fraction: f64,
}

impl Steering {
    /// The share `fraction` of what `throttle` offers.
    pub(crate) fn new(throttle: Arc<Throttle>, fraction: f64) -> Self {
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
pub(crate) enum Source {
    /// `--rate`: one request every period.
    Constant(Duration),
    /// `--stages`: this thread's share of the ramp.
    Stages(Share),
    /// A steered run: what the controller last set.
    Steered(Steering),
}

/// Poisson arrivals (`--arrival poisson`). An even schedule puts send time k at position k on
/// the count axis (k periods in; a ramp's at k + ½ of its cumulative count); a Poisson one at
/// S_k = E_0 + … + E_k, the E_i exponential with mean 1, so the gaps are exponential with mean
/// one period and a ramp's become an inhomogeneous Poisson process (time rescaling). Each E_i
/// comes from the seed, the thread and i alone, so a run with the same seed repeats its send
/// times exactly, and the threads' streams are independent (their union is a Poisson process of
/// the whole rate).
#[derive(Debug)]
pub(crate) struct Gaps {
    seed: u64,
    thread: u64,
    /// Positions computed, (k, S_k), each read on in order, so each next one costs one draw: the
    /// schedule's next send time, and the latest one told to a waiting connection, which runs
    /// ahead of it. (One alone would go back to S_0 at each send after a told one: a sum over the
    /// whole run per request.)
    cursors: [Cell<(u64, f64)>; 2],
}

/// The `part` of [`Rng::for_request`] the send-time gaps draw from, apart from every request's
/// placeholders (parts 0 and up) and its URL choice (`u64::MAX`); one per thread below it.
const GAPS_PART: u64 = u64::MAX / 2;

/// The `part` a drawn count of send times ([`Gaps::count_after`]) comes from, one per thread.
const COUNT_PART: u64 = u64::MAX / 4;

/// How many send times a Poisson schedule's count sums gap by gap at most (a few milliseconds):
/// beyond, the count of the rest is drawn at once. Summing is one draw per send time, and the
/// end of a run at `--rate 100000000` would sum 10^8 a second of `-D` (11 s after a 2 s run; a
/// week after `-D 720h` against a refused port).
const SUMMED_AT_MOST: f64 = 65_536.0;

/// A uniform in (0, 1] from a random word: never 0, whose logarithm is infinite.
fn unit(word: u64) -> f64 {
    ((word >> 11) + 1) as f64 / (1u64 << 53) as f64
}

impl Gaps {
    /// Thread `thread`'s gaps for `--seed` `seed`.
    pub(crate) fn new(seed: u64, thread: u64) -> Self {
        let gaps = Gaps {
            seed,
            thread,
            cursors: [Cell::new((0, 0.0)), Cell::new((0, 0.0))],
        };
        let first = (0, gaps.gap(0));
        gaps.cursors.iter().for_each(|cursor| cursor.set(first));
        gaps
    }

    /// E_index: exponential with mean 1.
    fn gap(&self, index: u64) -> f64 {
        let word = Rng::for_request(self.seed, index, GAPS_PART + self.thread).next_u64();
        -unit(word).ln()
    }

    /// How many send times follow S_index before a position `mean` further on: a Poisson count
    /// of mean `mean` (the gaps are memoryless), drawn as the normal law of the same mean and
    /// variance, which is within 1/√mean of it (the mean is past [`SUMMED_AT_MOST`]: 0.4%).
    /// From the seed, the thread and `index` alone, as the gaps are.
    fn count_after(&self, index: u64, mean: f64) -> u64 {
        let mut rng = Rng::for_request(self.seed, index, COUNT_PART + self.thread);
        let (radius, angle) = (unit(rng.next_u64()), unit(rng.next_u64()));
        let normal = (-2.0 * radius.ln()).sqrt() * (std::f64::consts::TAU * angle).cos();
        // At most 8.6 deviations off (a unit is at least 2^-53): never below zero.
        (mean + mean.sqrt() * normal).round().max(0.0) as u64
    }

    /// S_index, the position of send time `index` on the count axis.
    fn position(&self, index: u64) -> f64 {
        // The cursor furthest along that is not past `index`; else the one least along, from S_0.
        let [one, other] = &self.cursors;
        let (behind, ahead) = match one.get().0 <= other.get().0 {
            true => (one, other),
            false => (other, one),
        };
        let cursor = if ahead.get().0 <= index {
            ahead
        } else {
            behind
        };
        let (mut at, mut position) = cursor.get();
        if index < at {
            (at, position) = (0, self.gap(0));
        }
        while at < index {
            at += 1;
            position += self.gap(at);
        }
        cursor.set((at, position));
        position
    }
}

/// Whether a request may go now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Due {
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
/// (busy) delays only that one request. A told time survives its connection: the slot's next
/// connection comes back at it, and a slot that stops wakes another connection at it
/// (`Supply::slot_stopped`). A time taken for a request that was never sent (a churned
/// connection lost before its first request) is handed back: it goes before the next scheduled
/// one, at once, to a waiting connection woken for it, still measured from that time. When the
/// schedule ends (the budget is spent, the run stops, or a timed run's end comes), the first
/// connection to find out wakes the others at once through `wake`, so none sleeps past the end.
#[derive(Debug)]
pub(crate) struct Pacer {
    source: Source,
    /// Poisson arrivals; `None`: evenly spaced.
    gaps: Option<Gaps>,
    /// Time zero of the schedule.
    start: Instant,
    /// The next scheduled send time.
    pub(crate) next: Cell<Instant>,
    /// Its number in the schedule (from 0).
    index: Cell<u64>,
    /// The latest send time a waiting connection was told, once one was, and its number.
    told: Cell<Option<(Instant, u64)>>,
    /// Send times taken for requests that were never sent, handed back: they go before `next`,
    /// earliest first (kept last). Empty but for a connection lost before its first request.
    returned: RefCell<Vec<Instant>>,
    /// The end of a timed run (`-D`, `--stages`): no send time at or after it.
    ends: Option<Instant>,
    /// Wakes the connections waiting for a send time: all of them once the schedule has ended,
    /// one when a send time no connection is waiting for comes (a handed-back time, a stopped
    /// slot's told time).
    pub(crate) wake: tokio::sync::Notify,
}

impl Pacer {
    /// A schedule of one request every `period`, from `start` (until `ends`, if given).
    #[cfg(test)]
    pub(crate) fn new(period: Duration, start: Instant, ends: Option<Instant>) -> Self {
        Self::with_source(Source::Constant(period), None, start, ends)
    }

    /// A schedule whose times come from `source`, spaced by `gaps` (Poisson) or evenly, from
    /// `start` (until `ends`, if given).
    pub(crate) fn with_source(
        source: Source,
        gaps: Option<Gaps>,
        start: Instant,
        ends: Option<Instant>,
    ) -> Self {
        // A steered run's first send time is its first rate's; the others' is known now.
        let first = start + Self::offset(&source, gaps.as_ref(), 0).unwrap_or_default();
        Pacer {
            source,
            gaps,
            start,
            next: Cell::new(first),
            index: Cell::new(0),
            told: Cell::new(None),
            returned: RefCell::new(Vec::new()),
            ends,
            wake: tokio::sync::Notify::new(),
        }
    }

    /// The steered run's connection generation ([`Throttle::renew_connections`]); 0 for any
    /// other schedule, whose connections are never renewed.
    pub(crate) fn generation(&self) -> u64 {
        match &self.source {
            Source::Steered(steering) => steering.throttle.generation.load(Ordering::Relaxed),
            Source::Constant(_) | Source::Stages(_) => 0,
        }
    }

    /// Whether a request may be sent at `now`, and with which intended start.
    pub(crate) fn due(&self, now: Instant) -> Due {
        if self.past_end(now) {
            return Due::Ended;
        }
        if let Source::Steered(steering) = &self.source {
            if let Some(offered) = steering.changed() {
                // A new rate starts now: times told or handed back under the old one no longer
                // hold (each step's count is the new rate's alone).
                self.told.set(None);
                self.returned.borrow_mut().clear();
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
        let first = self.first();
        if first > now {
            Due::Wait
        } else {
            Due::Now(first)
        }
    }

    /// The earliest send time not taken: a handed-back one, else the next scheduled.
    fn first(&self) -> Instant {
        let next = self.next.get();
        self.returned
            .borrow()
            .last()
            .map_or(next, |&time| time.min(next))
    }

    /// Whether a timed schedule has ended at `now`: no send time is left before its end. A send
    /// time before the end is still due just after it (a late wake-up), not later.
    pub(crate) fn past_end(&self, now: Instant) -> bool {
        self.ends
            .is_some_and(|ends| now >= ends && (self.first() >= ends || now >= ends + LATE_AT_END))
    }

    /// The send time `intended` (from [`Self::due`]) was taken: the schedule moves on, unless it
    /// was a handed-back time.
    pub(crate) fn taken(&self, intended: Instant) {
        let mut returned = self.returned.borrow_mut();
        if returned.last() == Some(&intended) {
            returned.pop();
            return;
        }
        drop(returned);
        let index = self.index.get();
        self.index.set(index + 1);
        self.next.set(self.after(intended, index));
    }

    /// The send time that follows number `index`, scheduled at `time`.
    fn after(&self, time: Instant, index: u64) -> Instant {
        match (&self.source, &self.gaps) {
            (Source::Constant(period), None) => time + *period,
            // From the start, as `scheduled_time` counts them: the same instants to the
            // nanosecond, so a timed run's accounting of them agrees.
            (Source::Constant(_), Some(_)) | (Source::Stages(_), _) => self
                .scheduled_time(index + 1)
                .unwrap_or(time + MAX_DURATION),
            (Source::Steered(steering), gaps) => match steering.offered.get() {
                Offered::Paced(rate) => {
                    let gap = gaps.as_ref().map_or(1.0, |gaps| gaps.gap(index + 1));
                    time + Duration::from_secs_f64(gap / (rate * steering.fraction))
                }
                Offered::Unpaced => time,
                Offered::Paused | Offered::Stopped => time + MAX_DURATION,
            },
        }
    }

    /// Send time number `index` (from 0) of a schedule known in advance (not a steered one);
    /// `None` past any representable time.
    fn scheduled_time(&self, index: u64) -> Option<Instant> {
        self.start
            .checked_add(Self::offset(&self.source, self.gaps.as_ref(), index)?)
    }

    /// How long after the start send time `index` of `source`, spaced by `gaps`, is due;
    /// `None` for a steered run (known only as it goes) or past any representable time.
    fn offset(source: &Source, gaps: Option<&Gaps>, index: u64) -> Option<Duration> {
        match (source, gaps) {
            // `taken` adds the period to each time: the k-th is k periods after the start.
            (Source::Constant(period), None) => Some(Duration::from_nanos(
                u64::try_from(period.as_nanos() * u128::from(index)).ok()?,
            )),
            (Source::Constant(period), Some(gaps)) => {
                Duration::try_from_secs_f64(period.as_secs_f64() * gaps.position(index)).ok()
            }
            (Source::Stages(share), None) => Some(share.send_time(index)),
            (Source::Stages(share), Some(gaps)) => Some(share.time_at(gaps.position(index))),
            (Source::Steered(_), _) => None,
        }
    }

    /// How many send times of the schedule come before `at` (times are non-decreasing in their
    /// number: a doubling search, then a binary one; Poisson times see [`Self::poisson_before`]).
    fn count_before(&self, at: Instant) -> u64 {
        let before = |index| self.scheduled_time(index).is_some_and(|time| time < at);
        if let Some(gaps) = &self.gaps {
            return self.poisson_before(gaps, at, before);
        }
        if !before(0) {
            return 0;
        }
        // before(low) holds; find a high where it does not.
        let (mut low, mut high) = (0, 1);
        while before(high) {
            low = high;
            high = high.saturating_mul(2);
            if high == u64::MAX {
                return high;
            }
        }
        while high - low > 1 {
            let middle = low + (high - low) / 2;
            if before(middle) {
                low = middle;
            } else {
                high = middle;
            }
        }
        high
    }

    /// [`Self::count_before`] for Poisson times (`before` tells whether number k is before
    /// `at`): each position costs a draw in order, so they are counted one by one from the last
    /// one drawn (the pacer's, else the first) while fewer than [`SUMMED_AT_MOST`] are expected
    /// before `at`; the count of more is drawn at once, so the end of a run costs milliseconds
    /// at any rate and `-D`.
    fn poisson_before(&self, gaps: &Gaps, at: Instant, before: impl Fn(u64) -> bool) -> u64 {
        // A cursor's own position costs no draw.
        let furthest = gaps.cursors.iter().map(|cursor| cursor.get().0);
        let Some(mut index) = furthest
            .filter(|&index| before(index))
            .max()
            .or_else(|| before(0).then_some(0))
        else {
            return 0;
        };
        let from = gaps.position(index);
        let Some(until) = self.position_at(at, from) else {
            return u64::MAX;
        };
        if until - from > SUMMED_AT_MOST {
            return (index + 1).saturating_add(gaps.count_after(index, until - from));
        }
        while before(index + 1) {
            index += 1;
        }
        index + 1
    }

    /// The position on the count axis (see [`Gaps`]) where the schedule reaches `at`, knowing
    /// that it is past `from`, to within a thousandth: a doubling search, then a binary one (the
    /// time of a position is non-decreasing); `None` past any representable time.
    fn position_at(&self, at: Instant, from: f64) -> Option<f64> {
        let until = at.saturating_duration_since(self.start);
        let time_of = |position: f64| match &self.source {
            Source::Constant(period) => {
                Duration::try_from_secs_f64(period.as_secs_f64() * position).ok()
            }
            Source::Stages(share) => Some(share.time_at(position)),
            Source::Steered(_) => None,
        };
        let (mut low, mut step) = (from, 1.0);
        while time_of(low + step)? < until {
            low += step;
            step *= 2.0;
            // A ramp's times stop at its end: a time past it is never reached.
            if step > u64::MAX as f64 {
                return None;
            }
        }
        let mut high = low + step;
        while high - low > 1e-3 {
            let middle = low + (high - low) / 2.0;
            if middle <= low || middle >= high {
                break;
            }
            match time_of(middle) {
                Some(time) if time < until => low = middle,
                _ => high = middle,
            }
        }
        Some(low)
    }

    /// How a timed schedule was kept from `measured_from` to its end, once its connections are
    /// done; `None` for a schedule without an end (`-n`) or known only as it goes (steered).
    /// Send times are taken in order (but for handed-back ones, which were counted taken), so
    /// the first `index` were taken and the handed-back ones still here were not sent.
    /// `stopped`: an earlier end (`--until-stable` stopped the run there).
    pub(crate) fn kept(&self, measured_from: Instant, stopped: Option<Instant>) -> Option<Kept> {
        let ends = self.ends?;
        let ends = stopped.map_or(ends, |stopped| stopped.min(ends));
        if matches!(self.source, Source::Steered(_)) {
            return None;
        }
        // Every send time before the next one was taken, so before the end: when the next is
        // past it too, they are all the end's, exactly, at no cost.
        let before_end = match self.next.get() >= ends {
            true => self.index.get(),
            false => self.count_before(ends),
        };
        let warm_up = self.count_before(measured_from);
        let scheduled = before_end.saturating_sub(warm_up);
        let taken = self.index.get().saturating_sub(warm_up);
        let unsent = self
            .returned
            .borrow()
            .iter()
            .filter(|&&time| time >= measured_from)
            .count() as u64;
        Some(Kept {
            scheduled,
            missed: scheduled.saturating_sub(taken) + unsent,
        })
    }

    /// The send time `intended`, taken for a request that was never sent, goes back to the
    /// schedule: it is due again (before any later one), and a waiting connection wakes to take it.
    pub(crate) fn hand_back(&self, intended: Instant) {
        let mut returned = self.returned.borrow_mut();
        let at = returned.partition_point(|&time| time > intended);
        returned.insert(at, intended);
        self.wake.notify_one();
    }

    /// Whether `time`, told to a waiting connection, is still untaken and still in the schedule.
    pub(crate) fn still_told(&self, time: Instant) -> bool {
        time >= self.next.get() && self.told.get().is_some_and(|(last, _)| time <= last)
    }

    /// At the told time `time` of a slot that stopped: wakes a waiting connection to take it in
    /// the slot's place, if it is still untaken.
    pub(crate) fn wake_one_for(&self, time: Instant) {
        if self.next.get() <= time {
            self.wake.notify_one();
        }
    }

    /// When a connection that must wait should come back: at the time it (or its slot's
    /// connection before it) was told if that one is still untaken and still in the schedule,
    /// else at the first time not told to another connection; at the end of a timed run at the
    /// latest, to learn that it is over.
    pub(crate) fn come_back_at(&self, held: &Cell<Option<Instant>>) -> Instant {
        if let Some(time) = held.get().filter(|&time| self.still_told(time)) {
            return time;
        }
        let next = self.next.get();
        let told = self.told.get();
        let (time, index) = match told {
            Some((last, index)) if last >= next => (self.after(last, index), index + 1),
            _ => (next, self.index.get()),
        };
        self.told.set(Some((time, index)));
        let time = self.ends.map_or(time, |ends| time.min(ends));
        held.set(Some(time));
        time
    }

    /// Completes when a waiting connection should look at the schedule again (`wake`: it
    /// ended, or a send time came that no connection waits for) or a steered run's rate changed;
    /// only a steered run pays for waiting on both.
    pub(crate) async fn calls_back(&self) {
        match &self.source {
            Source::Steered(steering) => tokio::select! {
                biased;
                () = self.wake.notified() => {}
                () = steering.throttle.changed.notified() => {}
            },
            Source::Constant(_) | Source::Stages(_) => self.wake.notified().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    use super::*;

    const PERIOD: Duration = Duration::from_millis(10);

    /// Takes the send time due at `now`, which must be one: its intended start.
    fn take(pacer: &Pacer, now: Instant) -> Instant {
        match pacer.due(now) {
            Due::Now(intended) => {
                pacer.taken(intended);
                intended
            }
            other => panic!("a send time is due at {now:?}: {other:?}"),
        }
    }

    /// Whether a connection waiting on the pacer's calls back was woken.
    fn woken(waiting: &mut std::pin::Pin<&mut impl Future<Output = ()>>) -> bool {
        waiting
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
            == Poll::Ready(())
    }

    #[test]
    fn a_handed_back_time_goes_again_first_and_once() {
        let start = Instant::now();
        let pacer = Pacer::new(PERIOD, start, None);
        let at = |periods: u32| start + PERIOD * periods;
        assert_eq!(take(&pacer, at(0)), at(0));
        assert_eq!(take(&pacer, at(1)), at(1));
        assert_eq!(take(&pacer, at(2)), at(2));
        // The requests of times 0 and 1 were never sent (their connections were lost first).
        pacer.hand_back(at(1));
        pacer.hand_back(at(0));
        // Due at once, earliest first, each with its own intended start, before time 3.
        let now = at(2) + PERIOD / 2;
        assert_eq!(take(&pacer, now), at(0));
        assert_eq!(take(&pacer, now), at(1));
        assert_eq!(pacer.due(now), Due::Wait, "none twice, and time 3 not yet");
        assert_eq!(
            take(&pacer, at(3)),
            at(3),
            "the schedule goes on where it was"
        );
        assert_eq!(take(&pacer, at(4)), at(4));
    }

    #[test]
    fn a_handed_back_time_wakes_one_waiting_connection() {
        let start = Instant::now();
        let pacer = Pacer::new(PERIOD, start, None);
        let intended = take(&pacer, start);
        let mut first = pin!(pacer.calls_back());
        let mut second = pin!(pacer.calls_back());
        assert!(!woken(&mut first) && !woken(&mut second));
        pacer.hand_back(intended);
        assert!(
            woken(&mut first) && !woken(&mut second),
            "one connection comes for one time"
        );
    }

    #[test]
    fn a_handed_back_time_before_the_end_still_goes_just_after_it() {
        let start = Instant::now();
        let ends = start + 3 * PERIOD;
        let pacer = Pacer::new(PERIOD, start, Some(ends));
        for periods in 0..3 {
            assert_eq!(
                take(&pacer, start + PERIOD * periods),
                start + PERIOD * periods
            );
        }
        assert!(
            pacer.past_end(ends),
            "every send time before the end was taken"
        );
        pacer.hand_back(start + 2 * PERIOD);
        assert!(!pacer.past_end(ends));
        assert_eq!(take(&pacer, ends + LATE_AT_END / 2), start + 2 * PERIOD);
        assert!(pacer.past_end(ends));
    }

    #[test]
    fn a_told_time_is_told_again_only_to_the_cell_that_holds_it() {
        let start = Instant::now() + Duration::from_secs(1);
        let pacer = Pacer::new(PERIOD, start, None);
        let (slot_a, slot_b) = (Cell::new(None), Cell::new(None));
        assert_eq!(pacer.come_back_at(&slot_a), start);
        assert_eq!(pacer.come_back_at(&slot_b), start + PERIOD);
        // Slot a's connection closed; its next connection carries the slot's cell on and comes
        // back at the same time. A new cell (no carry) would be told a third time, and no one
        // would come at the first.
        let carried = Cell::new(slot_a.take());
        assert_eq!(pacer.come_back_at(&carried), start);
        assert_eq!(pacer.come_back_at(&Cell::new(None)), start + 2 * PERIOD);
        assert!(pacer.still_told(start));
        take(&pacer, start);
        assert!(!pacer.still_told(start), "taken");
        assert!(pacer.still_told(start + PERIOD));
    }

    #[test]
    fn a_stopped_slots_told_time_wakes_one_connection_only_while_untaken() {
        let start = Instant::now();
        let pacer = Pacer::new(PERIOD, start + PERIOD, None);
        let mut waiting = pin!(pacer.calls_back());
        assert!(!woken(&mut waiting));
        let told = pacer.come_back_at(&Cell::new(None));
        // Taken already (by a connection that found it due): no one is woken for it.
        take(&pacer, told);
        pacer.wake_one_for(told);
        assert!(!woken(&mut waiting));
        let told = pacer.come_back_at(&Cell::new(None));
        pacer.wake_one_for(told);
        assert!(woken(&mut waiting));
    }

    #[test]
    fn a_timed_schedule_counts_the_send_times_it_missed() {
        let start = Instant::now();
        // Times 0, 10, 20 and 30 ms come before the end at 35 ms.
        let pacer = Pacer::new(PERIOD, start, Some(start + PERIOD * 7 / 2));
        assert_eq!(
            pacer.kept(start, None),
            Some(Kept {
                scheduled: 4,
                missed: 4
            })
        );
        let first = take(&pacer, start);
        take(&pacer, start + PERIOD);
        // The first one's connection was lost before sending it: it was not sent either.
        pacer.hand_back(first);
        assert_eq!(
            pacer.kept(start, None),
            Some(Kept {
                scheduled: 4,
                missed: 3
            })
        );
        // A warm-up until 15 ms: times 20 and 30 are measured, and neither was taken.
        assert_eq!(
            pacer.kept(start + PERIOD * 3 / 2, None),
            Some(Kept {
                scheduled: 2,
                missed: 2
            })
        );
        assert_eq!(
            Pacer::new(PERIOD, start, None).kept(start, None),
            None,
            "-n"
        );
    }

    #[test]
    fn a_ramps_schedule_holds_the_area_under_its_curve() {
        // From 100/s to 300/s over 1 s: 200 send times, on two threads of one connection each.
        let ramp = crate::plan::stages::Stages::new(
            100.0,
            vec![crate::plan::stages::Stage::parse("1s:300").unwrap()],
        )
        .unwrap();
        let start = Instant::now();
        let ends = Some(start + Duration::from_secs(1));
        let kept: Vec<Kept> = (0..2)
            .map(|_| {
                let share = Share::new(ramp.clone(), 0.5);
                Pacer::with_source(Source::Stages(share), None, start, ends)
                    .kept(start, None)
                    .unwrap()
            })
            .collect();
        assert_eq!(
            kept[0].add(kept[1]),
            Kept {
                scheduled: 200,
                missed: 200
            }
        );
    }

    #[test]
    fn a_new_steered_rate_drops_the_times_handed_back_under_the_old_one() {
        let throttle = Arc::new(Throttle::new());
        let start = Instant::now();
        let pacer = Pacer::with_source(
            Source::Steered(Steering::new(throttle.clone(), 1.0)),
            None,
            start,
            None,
        );
        throttle.set(Offered::Paced(100.0));
        let intended = take(&pacer, start);
        pacer.hand_back(intended);
        assert_eq!(pacer.due(start), Due::Now(intended));
        throttle.set(Offered::Paced(200.0));
        let now = start + PERIOD;
        assert_eq!(pacer.due(now), Due::Now(now), "the new rate starts now");
        pacer.taken(now);
        assert_eq!(pacer.due(now), Due::Wait);
    }
}

#[cfg(test)]
mod ledger_tests;
