//! Starting a run's worker threads and supervising them to the end (the deadline, the drain
//! period, the signals), then merging what they measured into one [`RunOutcome`].

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{anyhow, Context, Result};
use futures_util::future::join_all;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::stable::{UntilStable, LOOK_EVERY};
use super::worker::{ThreadResult, Worker};
use super::{panics, signals, Sinks, DEFAULT_DRAIN};
use crate::io::stamped;
use crate::plan::{IoBackend, Negotiation, RunPlan, StopRule};
use crate::recorder::outcome::{Kept, RunOutcome};
use crate::recorder::{Recorder, WireTotals};
use crate::schedule::budget::Budget;
use crate::schedule::pacer::Throttle;

/// A run whose worker threads are going: [`Launched::finish`] waits for them and merges what
/// they measured.
pub(super) struct Launched {
    plan: Arc<RunPlan>,
    results: Vec<oneshot::Receiver<Result<ThreadResult>>>,
    budget: Arc<Budget>,
    abandon: CancellationToken,
    start: Instant,
    start_wall: SystemTime,
    measure_start: Instant,
    deadline: Option<Instant>,
    drain: Duration,
    /// Whether latency counts from intended starts (a schedule, or a steered run).
    paced: bool,
    /// `--until-stable`: the looks that may stop the run early.
    stable: Option<UntilStable>,
    /// The main thread's runtime: the deadline, the signals, a steered run's steps.
    pub(super) controller: tokio::runtime::Runtime,
}

impl Launched {
    /// Starts the plan's worker threads; with `throttle`, their schedule is the one it sets (a
    /// steered run).
    pub(super) fn start(
        plan: Arc<RunPlan>,
        sinks: Sinks,
        throttle: Option<Arc<Throttle>>,
    ) -> Result<Self> {
        let controller = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the controller runtime")?;
        // TCP read by epoll is stamped with each read's arrival (QUIC and io_uring reads are not).
        if plan.io == IoBackend::Epoll && plan.negotiation != Negotiation::Quic {
            stamped::hold_stamping_on();
        }
        let start = Instant::now();
        let start_wall = SystemTime::now();
        let (budget_limit, measure_start, deadline) = match plan.stop {
            // A steered run's steps end it, not a deadline.
            _ if throttle.is_some() => (None, start, None),
            StopRule::Requests(n) => (Some(n), start, None),
            StopRule::Duration { warm_up, measure } => {
                (None, start + warm_up, Some(start + warm_up + measure))
            }
        };
        let budget = Arc::new(Budget::new(budget_limit));
        let abandon = CancellationToken::new();
        let drain = plan.timeouts.request.unwrap_or(DEFAULT_DRAIN);

        let mut results = Vec::with_capacity(plan.threads);
        for index in 0..plan.threads {
            let slots =
                plan.clients / plan.threads + usize::from(index < plan.clients % plan.threads);
            let (sender, receiver) = oneshot::channel();
            let worker = Worker {
                plan: plan.clone(),
                budget: budget.clone(),
                abandon: abandon.clone(),
                run_start: start,
                measure_start,
                deadline,
                slots,
                index,
                sinks: sinks.clone(),
                throttle: throttle.clone(),
            };
            std::thread::Builder::new()
                .name(format!("h2load-rs-{index}"))
                .spawn(move || {
                    // A panic becomes this thread's error, so the run fails with its message.
                    let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
                        panics::inject("worker");
                        worker.run()
                    }))
                    .unwrap_or_else(|payload| {
                        Err(anyhow!(
                            "worker thread {index} panicked: {}",
                            panics::message(payload.as_ref())
                        ))
                    });
                    // The receiver only disappears if the controller itself failed.
                    let _ = sender.send(result);
                })
                .context("cannot start a worker thread")?;
            results.push(receiver);
        }
        let paced = plan.paced() || throttle.is_some();
        // A steered run's steps decide its end; `--find-max` and `--until-stable` do not mix.
        let stable = match (plan.until_stable, &sinks.live, &throttle) {
            (Some(target), Some(live), None) => Some(UntilStable::new(target, live.clone())),
            _ => None,
        };
        Ok(Launched {
            plan,
            results,
            budget,
            abandon,
            start,
            start_wall,
            measure_start,
            deadline,
            drain,
            paced,
            stable,
            controller,
        })
    }

    /// Waits for the workers (after stopping them, with `stop_now`: requests in flight then
    /// have the drain period to finish) and merges what they measured.
    pub(super) fn finish(self, stop_now: bool) -> Result<RunOutcome> {
        let Launched {
            plan,
            results,
            budget,
            abandon,
            start,
            start_wall,
            measure_start,
            deadline,
            drain,
            paced,
            mut stable,
            controller,
        } = self;
        let (threads, interrupted, stopped_stable) = controller.block_on(supervise(
            results,
            &budget,
            &abandon,
            Limits {
                deadline,
                drain,
                stop_now,
                // A timed schedule ends itself at the deadline, and a send time due before it
                // still goes when its connection wakes a little late: the counts stay exact.
                schedule_ends: plan.paced(),
            },
            stable.as_mut().map(|stable| (stable, measure_start)),
        ));

        let mut merged = Recorder::new(measure_start, 0, plan.interval, paced);
        let mut wire = WireTotals::default();
        let mut last_end = measure_start;
        let mut schedule: Option<Kept> = None;
        let mut threads_busy = Vec::new();
        for thread in threads {
            let thread = thread?;
            threads_busy.push(thread.busy);
            merged.merge(thread.recorder);
            wire.add(thread.wire);
            last_end = last_end.max(thread.ended);
            schedule = match (schedule, thread.schedule) {
                (Some(sum), Some(kept)) => Some(sum.add(kept)),
                (sum, kept) => sum.or(kept),
            };
        }
        let never_sent = if interrupted { 0 } else { budget.untaken() };
        merged.never_sent(never_sent);
        let in_flight_at_stop = merged.counters.started - merged.counters.done;
        Ok(RunOutcome {
            recorder: merged,
            wire,
            elapsed: last_end.saturating_duration_since(measure_start),
            never_sent,
            in_flight_at_stop,
            // An interrupted schedule did not end: what it had left is not missed.
            schedule: schedule.filter(|_| !interrupted),
            interrupted,
            measure_start_wall: start_wall + (measure_start - start),
            threads_busy,
            stability: stable.map(|stable| {
                stable
                    .stability(stopped_stable.map(|at| at.saturating_duration_since(measure_start)))
            }),
        })
    }
}

/// How a run may end besides its workers finishing: the deadline, the drain period after it,
/// and whether to stop at once.
struct Limits {
    deadline: Option<Instant>,
    drain: Duration,
    /// Stop the run at once (a steered run's end).
    stop_now: bool,
    /// The deadline only starts the drain period, the workers' schedule ending by itself.
    schedule_ends: bool,
}

/// Waits for the workers while enforcing the deadline, the drain period and the signals that stop a
/// run (SIGINT, SIGTERM, SIGHUP: see [`signals`], which also quits on a later one), and with
/// `stable` (`--until-stable`, and the start of the measured period) its looks, which stop the run
/// as the deadline would once the answer is sure enough. Returns the workers' results, whether
/// a signal interrupted the run, and when `stable` stopped it.
async fn supervise(
    results: Vec<oneshot::Receiver<Result<ThreadResult>>>,
    budget: &Budget,
    abandon: &CancellationToken,
    limits: Limits,
    mut stable: Option<(&mut UntilStable, Instant)>,
) -> (Vec<Result<ThreadResult>>, bool, Option<Instant>) {
    let Limits {
        deadline,
        drain,
        stop_now,
        schedule_ends,
    } = limits;
    let workers = join_all(results);
    tokio::pin!(workers);
    let mut interrupted = false;
    let mut abandon_at: Option<Instant> = None;
    let mut stopped_stable = None;
    if stop_now {
        budget.stop();
        abandon_at = Some(Instant::now() + drain);
    }
    // The first look at the start of the measured period, then one a second.
    let mut next_look = stable.as_ref().map(|(_, measure_start)| *measure_start);
    loop {
        tokio::select! {
            results = &mut workers => {
                let results = results
                    .into_iter()
                    .map(|result| result.unwrap_or_else(|_| Err(anyhow!("a worker thread ended without a result"))))
                    .collect();
                // The workers can end (the deadline, every connection failed) in the same wake-up
                // as the signal: a run that a signal asked to stop is interrupted either way.
                return (results, interrupted || signals::received().is_some(), stopped_stable);
            }
            _ = sleep_until_some(deadline), if abandon_at.is_none() => {
                if !schedule_ends {
                    budget.stop();
                }
                abandon_at = Some(Instant::now() + drain);
            }
            _ = sleep_until_some(next_look), if abandon_at.is_none() => {
                let now = Instant::now();
                next_look = next_look.map(|at| at + LOOK_EVERY);
                if let Some((stable, _)) = stable.as_mut() {
                    if stable.look(now) {
                        // Sure enough: the run ends here, its schedule too.
                        budget.stop_at(now);
                        stopped_stable = Some(now);
                        abandon_at = Some(now + drain);
                    }
                }
            }
            () = signals::requested(), if !interrupted => {
                errln!(
                    "interrupted: finishing requests in flight (signal again after {} s to quit at once)",
                    signals::ONE_REQUEST.as_secs()
                );
                interrupted = true;
                budget.stop();
                let by = Instant::now() + drain;
                abandon_at = Some(abandon_at.map_or(by, |at| at.min(by)));
            }
            _ = sleep_until_some(abandon_at) => abandon.cancel(),
        }
    }
}

/// Sleeps until `at`, or forever when there is no such time.
async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}
