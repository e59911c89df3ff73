//! A churned slot's first request, taken before its connection opens (`--requests-per-connection`,
//! `--no-keepalive`): no connection opens for nothing at the end of a counted or scheduled run,
//! and under a schedule (`--rate`, `--stages`, steering) the slot connects only once that
//! request's send time has come, as a real client connects when it has something to send. The
//! connect, proxy and TLS time then fall inside the request's response time, as a new user's
//! would, instead of the connection opening early and idling until its send time.
//!
//! The schedule sees a thread's state through [`Supply`] (the session layer's `ThreadShared`
//! implements it), and reads the time from the slot's [`Timer`]: the same clock it sleeps on.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;

use super::budget::Budget;
use super::pacer::{Due, Pacer};
use super::Timer;

/// What a slot took before connecting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Reserved {
    /// A request taken from the budget, to be given back if the connection never sends it.
    pub(crate) taken: bool,
    /// The send time taken from the schedule for it: its intended start.
    pub(crate) scheduled: Option<Instant>,
}

/// What a slot draws its requests from: the thread's budget and schedule, and its queue of
/// requests waiting to be sent again. The reservations are provided on it.
pub(crate) trait Supply {
    /// The run's request budget.
    fn budget(&self) -> &Budget;
    /// The thread's schedule, with `--rate`.
    fn pacer(&self) -> Option<&Pacer>;
    /// Whether connections carry `--requests-per-connection` at most.
    fn churned(&self) -> bool;
    /// Whether requests are waiting to be sent again.
    fn has_retries(&self) -> bool;

    /// What a slot about to connect takes first: nothing for its first connection without
    /// `--requests-per-connection`, nor when it reconnects under a schedule; else a request from
    /// the budget (`reconnecting` unscheduled: slots whose connections were lost together near
    /// the end of `-n` all reconnected for the last few requests, 64 to 88 connections for 60
    /// requests that each timed out on its own), once its send time has come under a schedule (the slot
    /// waits here, not connected, with `told` the slot's [`Pacer::come_back_at`] cell,
    /// which its connections carry on). `None`:
    /// nothing is left to connect for. Requests waiting to be sent again need no send time: the
    /// slot connects for them at once.
    async fn reserve_first(
        &self,
        timer: &impl Timer,
        told: &Cell<Option<Instant>>,
        reconnecting: bool,
    ) -> Option<Reserved> {
        let churned = self.churned();
        let takes_first = churned || (reconnecting && self.pacer().is_none());
        if !takes_first {
            return Some(Reserved::default());
        }
        loop {
            let now = timer.now();
            // A ramp's end stops its schedule, not the budget: a connection opened now would
            // carry nothing.
            if self.pacer().is_some_and(|pacer| pacer.past_end(now)) {
                return None;
            }
            let Some(pacer) = self.pacer().filter(|_| !self.has_retries()) else {
                let taken = self.budget().try_take();
                return (taken || self.has_retries()).then_some(Reserved {
                    taken,
                    scheduled: None,
                });
            };
            let wake = match pacer.due(now) {
                _ if !self.budget().has_more() => None,
                Due::Now(intended) => {
                    if self.budget().try_take() {
                        pacer.taken(intended);
                        return Some(Reserved {
                            taken: true,
                            scheduled: Some(intended),
                        });
                    }
                    None
                }
                Due::Wait => Some(pacer.come_back_at(told)),
                Due::Recheck(at) => Some(at),
                Due::Ended => None,
            };
            let Some(wake) = wake else {
                // The others waiting learn at once that the schedule is over.
                pacer.wake.notify_waiters();
                return None;
            };
            tokio::select! {
                () = timer.sleep_until(wake) => {}
                () = pacer.calls_back() => {}
            }
        }
    }

    /// Gives back what a slot took before connecting and never sent: the request to the budget,
    /// its send time to the schedule (another connection sends it, measured from that time).
    fn give_back(&self, reserved: Reserved) {
        if reserved.taken {
            self.budget().give_back();
        }
        if let (Some(pacer), Some(time)) = (self.pacer(), reserved.scheduled) {
            pacer.hand_back(time);
        }
    }

    /// A slot stops; `told` is the send time it was told last, if any. A told time still
    /// untaken is handed on: when it comes, a waiting connection is woken to take it in the
    /// slot's place (or to find the budget spent, and end the others' wait). No one would come
    /// for it else, and the next connection to wake would take it a period late (and its own
    /// time later still). That wake-up is a task of its own, which the end of the thread's
    /// connections does not wait for.
    fn slot_stopped(self: &Rc<Self>, told: Option<Instant>, timer: &Rc<impl Timer + 'static>)
    where
        Self: 'static,
    {
        let Some(pacer) = self.pacer() else {
            return;
        };
        let Some(time) = told.filter(|&time| pacer.still_told(time)) else {
            return;
        };
        let (shared, timer) = (self.clone(), timer.clone());
        tokio::task::spawn_local(async move {
            timer.sleep_until(time).await;
            if let Some(pacer) = shared.pacer() {
                pacer.wake_one_for(time);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::time::Duration;

    use super::*;
    use crate::session::testing;
    use crate::session::Pacer;

    const PERIOD: Duration = Duration::from_millis(40);

    /// Sleeps on tokio's timer: a millisecond is precise enough against a 40 ms period.
    struct TokioTimer;

    impl Timer for TokioTimer {
        fn sleep_until(&self, deadline: Instant) -> impl Future<Output = ()> + '_ {
            tokio::time::sleep_until(deadline.into())
        }
    }

    // Found in review (F1): without the wake-up `slot_stopped` spawns, the waiting slot took the
    // stopped slot's time when its own came, a period late.
    #[test]
    fn a_stopped_slots_told_time_is_taken_on_time_by_a_waiting_slot() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let local = tokio::task::LocalSet::new();
        local.block_on(&runtime, async {
            let mut world = testing::world(&["--rate", "25", "--no-keepalive", "-D", "10s"]);
            let start = Instant::now() + PERIOD;
            world.shared.pacer = Some(Pacer::new(PERIOD, start, None));
            let shared = Rc::new(world.shared);
            let timer = Rc::new(TokioTimer);
            // Slot a waits for the first send time, slot b for the second.
            let stopping = Cell::new(None);
            let pacer = shared.pacer.as_ref().unwrap();
            assert_eq!(pacer.come_back_at(&stopping), start);
            let waiting = tokio::task::spawn_local({
                let (shared, timer) = (shared.clone(), timer.clone());
                async move {
                    let reserved = shared.reserve_first(&*timer, &Cell::new(None), false).await;
                    (reserved, Instant::now())
                }
            });
            tokio::task::yield_now().await;
            assert!(pacer.still_told(start + PERIOD), "slot b waits, told");
            // Slot a stops (its connection was lost, the last it could open) before its time.
            shared.slot_stopped(stopping.take(), &timer);
            let (reserved, at) = waiting.await.unwrap();
            assert_eq!(
                reserved.and_then(|reserved| reserved.scheduled),
                Some(start),
                "slot b takes slot a's time"
            );
            assert!(
                at < start + PERIOD / 2,
                "and takes it when it comes, not a period late: {:?} after it",
                at - start
            );
        });
    }
}
