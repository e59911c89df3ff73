//! The timers the I/O driver waits with.
//!
//! tokio's timer wheel ticks once a millisecond and rounds every deadline up to the next tick, so
//! a request that `--rate` schedules would start 0.5 ms late on average and up to 1 ms late (more
//! under load). A [`PreciseTimer`] wakes sleepers within microseconds instead: near deadlines wait
//! in a heap owned by the thread, served by one `timerfd` (CLOCK_MONOTONIC, nanosecond
//! resolution) that is re-armed only when the earliest deadline changes. Far deadlines (request
//! timeouts, slow schedules) first wait on tokio's cheap timer and join the heap only for their
//! last stretch, so deadlines that never come (a timeout whose response arrives first) never
//! touch the heap or the timerfd.
//!
//! The driver only knows the [`Timer`] trait (`src/schedule/mod.rs`), so another I/O backend (QUIC, io_uring) can bring
//! its own timer.
//!
//! The timerfd and the wait on tokio's timer are [`crate::time`]'s, shared with the built-in
//! target's `sleep_precisely`.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use super::uring::Uring;
use crate::schedule::Timer;
use crate::time::{approach, TimerFd};

/// One thread's precise timer: a heap of near deadlines served by one timerfd. Single-threaded
/// (its sleepers and [`PreciseTimer::serve`] run on the thread's current-thread runtime).
pub(crate) struct PreciseTimer {
    alarm: Alarm,
    queue: RefCell<Queue>,
}

/// What wakes a [`PreciseTimer`] at its earliest deadline.
enum Alarm {
    /// A timerfd in the runtime's epoll set.
    Fd(TimerFd),
    /// A timeout on the thread's io_uring (`--io uring`): re-arming is one more operation in
    /// the ring's next submission instead of a `timerfd_settime` syscall.
    Ring(Rc<Uring>),
}

impl Alarm {
    fn arm(&self, deadline: Instant) -> io::Result<()> {
        match self {
            Alarm::Fd(fd) => fd.arm(deadline),
            Alarm::Ring(ring) => ring.arm_alarm(deadline),
        }
    }

    async fn expired(&self) -> io::Result<()> {
        match self {
            Alarm::Fd(fd) => fd.expired().await,
            Alarm::Ring(ring) => {
                ring.alarm().await;
                Ok(())
            }
        }
    }
}

/// The sleepers of a [`PreciseTimer`].
#[derive(Default)]
struct Queue {
    /// Deadlines, earliest first, with their sleeper's slot and that slot's generation when the
    /// deadline was pushed. An entry whose slot has moved on belongs to a sleeper that was
    /// dropped (the connection got bytes first) and is skipped when it comes due; as only near
    /// deadlines are pushed, such entries leave within [`NEAR`](crate::time::NEAR) and the heap
    /// stays bounded by the sleeps begun in that window.
    heap: BinaryHeap<Reverse<(Instant, usize, u64)>>,
    /// The sleepers, reused through `free`: no allocation per sleep once the thread warmed up.
    slots: Vec<Sleeper>,
    free: Vec<usize>,
    /// When the timerfd is armed to expire, if it is.
    armed: Option<Instant>,
    /// The serving task re-arms the timerfd once the sleepers it woke have run: until then,
    /// sleepers that arrive leave it alone (it would be set twice per deadline).
    rearming: bool,
}

/// One registered sleep.
#[derive(Default)]
struct Sleeper {
    /// Bumped each time the slot is released: a sleep or heap entry holding an older one is over.
    generation: u64,
    waker: Option<Waker>,
}

impl Queue {
    /// Registers a sleeper; returns its slot and generation, and whether the timerfd must be
    /// re-armed (the deadline is now the earliest).
    fn push(&mut self, deadline: Instant, waker: Waker) -> ((usize, u64), bool) {
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push(Sleeper::default());
            self.slots.len() - 1
        });
        let sleeper = &mut self.slots[slot];
        sleeper.waker = Some(waker);
        let generation = sleeper.generation;
        self.heap.push(Reverse((deadline, slot, generation)));
        let rearm = !self.rearming && self.armed.is_none_or(|armed| deadline < armed);
        ((slot, generation), rearm)
    }

    /// Frees `slot` if it still belongs to `generation`; returns its waker if it did.
    fn release(&mut self, slot: usize, generation: u64) -> Option<Waker> {
        let sleeper = &mut self.slots[slot];
        if sleeper.generation != generation {
            return None;
        }
        sleeper.generation += 1;
        self.free.push(slot);
        sleeper.waker.take()
    }
}

impl PreciseTimer {
    /// A timer for this thread. Must be called inside its runtime; [`PreciseTimer::serve`] must
    /// run on the same thread for sleepers to wake.
    pub(crate) fn new() -> io::Result<Self> {
        Ok(PreciseTimer {
            alarm: Alarm::Fd(TimerFd::new()?),
            queue: RefCell::default(),
        })
    }

    /// A timer for this thread whose deadlines are timeouts on the thread's `ring`.
    pub(crate) fn on_ring(ring: Rc<Uring>) -> Self {
        PreciseTimer {
            alarm: Alarm::Ring(ring),
            queue: RefCell::default(),
        }
    }

    /// Wakes sleepers as their deadlines come. Runs until the timerfd fails (it does not in
    /// practice): then it returns the error.
    pub(crate) async fn serve(&self) -> io::Result<()> {
        loop {
            self.alarm.expired().await?;
            if self.wake_due() {
                // The woken connections send before the timerfd is re-armed for the next
                // deadline: that syscall would otherwise sit between a deadline and its send
                // (13 µs at the p50 of `--rate 2000 -c 8` here).
                run_after_woken().await;
            }
            self.arm_next()?;
        }
    }

    /// Wakes every sleeper whose deadline has passed, leaving the timerfd disarmed; says whether
    /// it woke any.
    fn wake_due(&self) -> bool {
        let mut queue = self.queue.borrow_mut();
        queue.armed = None;
        let now = Instant::now();
        let mut woke = false;
        while let Some(&Reverse((deadline, slot, generation))) = queue.heap.peek() {
            if deadline > now {
                break;
            }
            queue.heap.pop();
            // Waking only schedules the task (this thread polls it later): no re-entry here.
            if let Some(waker) = queue.release(slot, generation) {
                waker.wake();
                woke = true;
            }
        }
        queue.rearming = woke;
        woke
    }

    /// Arms the timerfd for the earliest deadline still waiting, unless a sleeper that arrived
    /// since armed it for that one or an earlier one.
    fn arm_next(&self) -> io::Result<()> {
        let mut queue = self.queue.borrow_mut();
        queue.rearming = false;
        let Some(&Reverse((deadline, _, _))) = queue.heap.peek() else {
            return Ok(());
        };
        if queue.armed.is_some_and(|armed| armed <= deadline) {
            return Ok(());
        }
        queue.armed = Some(deadline);
        self.alarm.arm(deadline)
    }
}

/// Lets the tasks woken before it run first: it asks to be polled again, which puts its task
/// behind them in the thread's run queue. Unlike `tokio::task::yield_now`, it does not make the
/// runtime poll its I/O driver first (one more syscall per deadline, measured at +20% CPU at
/// 20,000 requests/s).
async fn run_after_woken() {
    let mut asked = false;
    std::future::poll_fn(|cx| {
        if asked {
            return Poll::Ready(());
        }
        asked = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await;
}

impl Timer for PreciseTimer {
    async fn sleep_until(&self, deadline: Instant) {
        approach(deadline).await;
        PreciseSleep {
            timer: self,
            deadline,
            registered: None,
        }
        .await;
    }
}

/// A sleep in a [`PreciseTimer`]'s heap.
struct PreciseSleep<'t> {
    timer: &'t PreciseTimer,
    deadline: Instant,
    /// Slot and generation once registered.
    registered: Option<(usize, u64)>,
}

impl Future for PreciseSleep<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut queue = self.timer.queue.borrow_mut();
        if let Some((slot, generation)) = self.registered {
            let sleeper = &mut queue.slots[slot];
            if sleeper.generation != generation {
                // The timer released the slot when the deadline came.
                drop(queue);
                self.registered = None;
                return Poll::Ready(());
            }
            match &mut sleeper.waker {
                Some(waker) if waker.will_wake(cx.waker()) => {}
                waker => *waker = Some(cx.waker().clone()),
            }
            return Poll::Pending;
        }
        if Instant::now() >= self.deadline {
            return Poll::Ready(());
        }
        let (registered, rearm) = queue.push(self.deadline, cx.waker().clone());
        if rearm {
            if let Err(error) = self.timer.alarm.arm(self.deadline) {
                // Cannot happen with a valid timerfd; sleeping on tokio's timer would hide the
                // loss of precision, so fail loudly.
                panic!("cannot arm the timerfd: {error}");
            }
            queue.armed = Some(self.deadline);
        }
        drop(queue);
        self.registered = Some(registered);
        Poll::Pending
    }
}

impl Drop for PreciseSleep<'_> {
    fn drop(&mut self) {
        if let Some((slot, generation)) = self.registered {
            self.timer.queue.borrow_mut().release(slot, generation);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;
    use std::time::Duration;

    use super::*;

    /// Runs what `body` makes on a current-thread runtime, with its timer served beside it.
    fn with_timer<F: Future>(body: impl FnOnce(Rc<PreciseTimer>) -> F) -> F::Output {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _guard = runtime.enter();
        let timer = Rc::new(PreciseTimer::new().unwrap());
        runtime.block_on(async {
            tokio::select! {
                biased;
                output = body(timer.clone()) => output,
                error = timer.serve() => panic!("the timer failed: {error:?}"),
            }
        })
    }

    #[test]
    fn near_and_far_sleeps_end_at_their_deadline_not_before() {
        let (mut lateness, mut baseline) = with_timer(|timer| async move {
            let (mut lateness, mut baseline) = (Vec::new(), Vec::new());
            // Deadlines off tokio's millisecond ticks: its timer would be ~500 µs late at the median.
            for wait in [50, 300, 900, 1_700, 2_500, 4_300].repeat(3) {
                let deadline = Instant::now() + Duration::from_micros(wait);
                timer.sleep_until(deadline).await;
                let now = Instant::now();
                assert!(now >= deadline, "woke {:?} early", deadline - now);
                lateness.push(now - deadline);
                // The machine's own noise, measured beside each sleep: a plain thread sleep of the
                // same length (a busy machine wakes every sleeper late, not only this timer).
                let began = Instant::now();
                std::thread::sleep(Duration::from_micros(wait));
                baseline.push(began.elapsed() - Duration::from_micros(wait));
            }
            (lateness, baseline)
        });
        lateness.sort();
        baseline.sort();
        // The median is a few µs on an idle machine; 100 µs allows for a shared CI machine, plus
        // the thread sleeps' median lateness up to 300 µs (so a millisecond timer, ~500 µs late,
        // still fails on a machine whose sleepers wake 300 µs late or more).
        let median = lateness[lateness.len() / 2];
        let noise = baseline[baseline.len() / 2].min(Duration::from_micros(300));
        assert!(
            median < Duration::from_micros(100) + noise,
            "median {median:?} late, widened by {noise:?} (thread sleeps' median): {lateness:?}"
        );
    }

    #[test]
    fn dropped_sleeps_leave_no_waker_and_their_slots_are_reused() {
        with_timer(|timer| async move {
            let far = Instant::now() + Duration::from_millis(1);
            for _ in 0..100 {
                // Polled once (registered), then dropped: the connection got bytes first.
                let sleep = timer.sleep_until(far);
                tokio::select! {
                    biased;
                    () = sleep => unreachable!("the deadline is 1 ms away"),
                    () = std::future::ready(()) => {}
                }
            }
            {
                let queue = timer.queue.borrow();
                assert_eq!(queue.slots.len(), 1, "one slot, reused");
                assert!(queue.slots.iter().all(|sleeper| sleeper.waker.is_none()));
            }
            timer.sleep_until(far + Duration::from_micros(100)).await;
            let queue = timer.queue.borrow();
            assert!(
                queue.heap.is_empty(),
                "stale entries left with their deadline"
            );
            assert_eq!(queue.free.len(), queue.slots.len());
        });
    }
}
