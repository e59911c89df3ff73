//! Precise sleeps: a `timerfd` on CLOCK_MONOTONIC and the hand-over to it from tokio's
//! millisecond timer. The engine's `PreciseTimer` (engine/clock.rs) and the built-in target's
//! delays both wait with these, so they live below both.

use std::io;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use rustix::time::{
    timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags,
    Timespec,
};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// Deadlines at most this far away wait in the precise heap at once; farther ones wait on
/// tokio's timer until [`HAND_OVER`] before them.
pub(crate) const NEAR: Duration = Duration::from_millis(4);
/// How long before a far deadline tokio's timer hands it to the precise one. tokio rounds a
/// deadline up to its next millisecond tick and parks in `epoll_wait`, whose millisecond timeout
/// rounds up again: measured 1.1–1.7 ms late on a loaded 2-core VM. 3 ms leaves over a
/// millisecond to spare (with 1.5 ms, 10 ms sleeps came out up to 0.7 ms late there).
const HAND_OVER: Duration = Duration::from_millis(3);

/// A non-blocking `timerfd` on CLOCK_MONOTONIC (the clock of [`Instant`] on Linux), registered
/// with the runtime.
pub(crate) struct TimerFd {
    fd: AsyncFd<OwnedFd>,
}

impl TimerFd {
    /// A disarmed timer. Must be called inside a tokio runtime.
    pub(crate) fn new() -> io::Result<Self> {
        let fd = timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )?;
        // Deprecated as unsound for inner types whose descriptor can change or close while
        // registered; an `OwnedFd` moved into the `AsyncFd` cannot, and the sound replacement
        // is `unsafe`, which the library does not use.
        #[allow(deprecated)]
        let fd = AsyncFd::with_interest(fd, Interest::READABLE)?;
        Ok(TimerFd { fd })
    }

    /// Arms the timer to expire once, at `deadline` (at once if it has passed), replacing any
    /// earlier setting.
    pub(crate) fn arm(&self, deadline: Instant) -> io::Result<()> {
        // `Instant` is opaque, so the deadline is given relative to now; the syscall follows
        // within a microsecond, and a zero value would disarm the timer instead: 1 ns at least.
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_nanos(1));
        let value = Itimerspec {
            it_interval: Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: Timespec {
                tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
                tv_nsec: left.subsec_nanos().into(),
            },
        };
        timerfd_settime(self.fd.get_ref(), TimerfdTimerFlags::empty(), &value)?;
        Ok(())
    }

    /// Waits until the timer expires. The expiration count is not read (a syscall saved per
    /// wake): each expiry wakes the epoll edge-triggered registration anew, read or not, and
    /// re-arming resets the count.
    pub(crate) async fn expired(&self) -> io::Result<()> {
        self.fd.readable().await?.clear_ready();
        Ok(())
    }
}

/// How long the calling thread has been on a CPU or runnable waiting for one, since it began:
/// the first two fields of Linux's `/proc/thread-self/schedstat` (CPU time and run-queue wait,
/// ns). A thread's wall time minus this is the time it slept (waiting for I/O or a timer), so a
/// thread starved by other processes on its core counts as busy as one working flat out: either
/// way it was not waiting for its peer. `None` where the kernel does not keep it.
pub(crate) fn thread_busy_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let mut fields = stat
        .split_whitespace()
        .map(|field| field.parse::<u64>().ok());
    let (on_cpu, waiting) = (fields.next()??, fields.next()??);
    Some(Duration::from_nanos(on_cpu.saturating_add(waiting)))
}

/// Sleeps for `duration`, precisely, on a timerfd of its own: for tasks that may move between
/// threads (the built-in target's multi-thread runtime). Returns how long it slept. A long sleep
/// holds its timerfd only for its last [`HAND_OVER`]; if no timerfd can be had (out of
/// descriptors), tokio's timer sleeps the rest, and the duration returned shows it.
pub(crate) async fn sleep_precisely(duration: Duration) -> Duration {
    let began = Instant::now();
    sleep_until_precisely(began + duration).await;
    began.elapsed()
}

/// Sleeps until `deadline`, precisely, as [`sleep_precisely`] does: for a schedule of sends
/// (the target's event streams), whose deadlines do not drift with each sleep's lateness.
pub(crate) async fn sleep_until_precisely(deadline: Instant) {
    approach(deadline).await;
    let precise = async {
        let timer = TimerFd::new()?;
        timer.arm(deadline)?;
        // Once: the timer is armed a single time, so its one readiness is the expiry.
        timer.expired().await
    };
    if precise.await.is_err() {
        tokio::time::sleep_until(deadline.into()).await;
    }
}

/// Waits on tokio's cheap timer until [`HAND_OVER`] before `deadline`, if it is far.
pub(crate) async fn approach(deadline: Instant) {
    if deadline.saturating_duration_since(Instant::now()) > NEAR {
        tokio::time::sleep_until((deadline - HAND_OVER).into()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_precise_sleep_reports_what_it_slept() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        // A near sleep, and a far one that tokio's timer hands over to the timerfd.
        for wait in [Duration::from_micros(700), Duration::from_millis(5)] {
            let began = Instant::now();
            let slept = runtime.block_on(sleep_precisely(wait));
            assert!(
                wait <= slept && slept <= began.elapsed(),
                "{slept:?} for {wait:?}"
            );
        }
    }
}
