//! One worker thread of a run: its current-thread runtime, its timer (on its io_uring ring with
//! `--io uring`), its share of the client slots and of the schedule, and what it hands back.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use futures_util::future::join_all;
use quinn::VarInt;
use tokio::runtime::Runtime;
use tokio::task::{JoinHandle, LocalSet};
use tokio_util::sync::CancellationToken;

use super::slot::run_slot;
use super::Sinks;
use crate::io::clock::PreciseTimer;
use crate::io::connect::Connector;
use crate::io::h3::QuicContext;
use crate::io::tls_resume;
use crate::io::uring::Uring;
use crate::observe::live::{Live, PUBLISH_EVERY};
use crate::observe::request_log::RequestLog;
use crate::plan::stages::Share;
use crate::plan::Arrival;
use crate::plan::{IoBackend, Negotiation, RunPlan};
use crate::recorder::outcome::Kept;
use crate::recorder::{Recorder, WireMeter, WireTotals};
use crate::schedule::budget::Budget;
use crate::schedule::pacer::{Gaps, Source, Steering, Throttle};
use crate::session::{Pacer, Templates, ThreadShared};
use crate::time::thread_busy_time;

/// How often a steered run's workers publish their numbers (its steps are measured from them).
const STEERED_PUBLISH_EVERY: Duration = Duration::from_millis(50);
/// How long a thread waits for its QUIC connections' closes to leave at the end.
const QUIC_CLOSE_WAIT: Duration = Duration::from_millis(100);

/// What one worker thread hands back.
pub(super) struct ThreadResult {
    pub(super) recorder: Recorder,
    pub(super) wire: WireTotals,
    pub(super) ended: Instant,
    /// The share of its time the thread was working or waiting for a CPU, not asleep waiting
    /// for I/O or a timer (0 where the kernel does not tell).
    pub(super) busy: f64,
    /// How the thread's share of a timed schedule was kept.
    pub(super) schedule: Option<Kept>,
}

/// One worker thread's share of the run.
pub(super) struct Worker {
    pub(super) plan: Arc<RunPlan>,
    pub(super) budget: Arc<Budget>,
    pub(super) abandon: CancellationToken,
    pub(super) run_start: Instant,
    pub(super) measure_start: Instant,
    /// The end of a timed run (`-D`).
    pub(super) deadline: Option<Instant>,
    pub(super) slots: usize,
    pub(super) index: usize,
    pub(super) sinks: Sinks,
    /// A steered run's rate, which replaces the plan's schedule.
    pub(super) throttle: Option<Arc<Throttle>>,
}

impl Worker {
    /// This thread's share of the schedule, in proportion to its connections, if there is one.
    fn pacer(&self) -> Option<Pacer> {
        let fraction = self.slots as f64 / self.plan.clients as f64;
        let source = match (&self.throttle, &self.plan.stages, self.plan.rate) {
            (Some(throttle), _, _) => Source::Steered(Steering::new(throttle.clone(), fraction)),
            (None, Some(stages), _) => {
                let share = Share::new(stages.clone(), fraction);
                Source::Stages(match &self.plan.shard {
                    Some(shard) => share.striped(shard),
                    None => share,
                })
            }
            // Rounded up to the nanosecond: rounded down, `-D 1s --rate 300` had a 301st send
            // time (300 periods of 3,333,333 ns end before 1 s).
            (None, None, Some(rate)) => Source::Constant(Duration::from_nanos(
                (self.plan.clients as f64 * 1e9 / (rate * self.slots as f64)).ceil() as u64,
            )),
            (None, None, None) => return None,
        };
        // A shard's constant schedule takes every N-th send time of the whole from the I-th:
        // its own period (N whole periods) starts (I - 1) whole periods late.
        let start = match (&source, &self.plan.shard) {
            (Source::Constant(period), Some(shard)) => {
                self.run_start + period.mul_f64(shard.phase())
            }
            _ => self.run_start,
        };
        let gaps = (self.plan.arrival == Arrival::Poisson)
            .then(|| Gaps::new(self.plan.seed, self.gap_stream()));
        Some(Pacer::with_source(source, gaps, start, self.deadline))
    }

    /// This thread's stream of Poisson gaps: one per thread, and per `--shard`, so the parts of
    /// a sharded run given one `--seed` do not send in step (their union stays a Poisson process).
    fn gap_stream(&self) -> u64 {
        let shard = self.plan.shard.map_or(0, |shard| shard.index - 1);
        (shard << 16) + self.index as u64
    }

    /// The run-wide number of this thread's first client slot: threads before it hold
    /// `clients / threads` slots each, and the first `clients % threads` of them one more.
    fn first_slot(&self) -> u64 {
        let (even, extra) = (
            self.plan.clients / self.plan.threads,
            self.plan.clients % self.plan.threads,
        );
        (self.index * even + self.index.min(extra)) as u64
    }

    /// Runs this thread's share: sets up its runtime, timer and what its connections share, runs
    /// its client slots until they end (or the drain period is abandoned), and hands back what
    /// they measured.
    pub(super) fn run(self) -> Result<ThreadResult> {
        let began = (Instant::now(), thread_busy_time());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start a worker runtime")?;
        let (ring, timer) = self.ring_and_timer(&runtime)?;
        let shared = Rc::new(self.thread_shared());
        let templates = Rc::new(Templates::new(&self.plan));
        let local = LocalSet::new();
        let quic = self.quic(&local, &runtime, &shared)?;
        // The bytes of the warm-up (`--warm-up-time`), which the measured period leaves out;
        // `None` until it ends, so a run stopped during its warm-up (a signal) measured none.
        let warm_up_bytes = Rc::new(Cell::new(None));
        let ended = local.block_on(
            &runtime,
            self.run_slots(
                shared.clone(),
                templates,
                quic.clone(),
                ring.clone(),
                timer.clone(),
                warm_up_bytes.clone(),
            ),
        )?;
        drop(local);
        // After the connections and the timer: the ring's teardown waits for the kernel to
        // finish with them.
        drop(timer);
        drop(ring);
        // Working, or runnable and waiting for a CPU: the time the thread was not asleep
        // waiting for I/O or a timer, over its life.
        let busy = match (began.1, thread_busy_time()) {
            (Some(before), Some(after)) => {
                let elapsed = ended.saturating_duration_since(began.0).as_secs_f64();
                if elapsed > 0.0 {
                    (after.saturating_sub(before).as_secs_f64() / elapsed).min(1.0)
                } else {
                    0.0
                }
            }
            _ => 0.0,
        };
        Ok(self.collect(shared, warm_up_bytes.get(), ended, busy))
    }

    /// The thread's timer, and with `--io uring` the ring it then runs on.
    fn ring_and_timer(&self, runtime: &Runtime) -> Result<(Option<Rc<Uring>>, Rc<PreciseTimer>)> {
        // --io uring: one ring for all of this thread's TCP and unix-socket connections, and
        // their deadlines (HTTP/3 runs on quinn's UDP socket).
        let ring = match self.plan.io {
            IoBackend::Uring { sqpoll } if self.plan.negotiation != Negotiation::Quic => {
                let _runtime = runtime.enter();
                Some(
                    Uring::new(self.slots, sqpoll)
                        .context("cannot set up the thread's io_uring (--io uring)")?,
                )
            }
            _ => None,
        };
        let timer = Rc::new(match &ring {
            Some(ring) => PreciseTimer::on_ring(ring.clone()),
            None => {
                let _runtime = runtime.enter();
                PreciseTimer::new().context("cannot create the thread's timer (timerfd)")?
            }
        });
        Ok((ring, timer))
    }

    /// What this thread's connections share: the plan, the budget, this thread's recorder and
    /// share of the schedule, the request log, the TLS session cache.
    fn thread_shared(&self) -> ThreadShared {
        let pacer = self.pacer();
        let first_slot = self.first_slot();
        let mut recorder = Recorder::new(
            self.measure_start,
            self.slots,
            self.plan.interval,
            self.plan.paced() || self.throttle.is_some(),
        );
        recorder.track_paths(self.plan.request.paths.len());
        if let Some(throttle) = &self.throttle {
            recorder.track_backlog(throttle.edge.clone());
        }
        ThreadShared {
            plan: self.plan.clone(),
            budget: self.budget.clone(),
            recorder: RefCell::new(recorder),
            wire: Rc::new(WireMeter::default()),
            pacer,
            request_log: self
                .sinks
                .log
                .clone()
                .map(|log| RefCell::new(RequestLog::new(log.file, log.cell))),
            read_buffer: crate::session::read_buffer(),
            retries: RefCell::default(),
            first_slot,
            tls: self
                .plan
                .tls
                .as_ref()
                .map(|plan| tls_resume::thread_plan(plan, self.slots)),
            path_cursors: (0..self.slots).map(|_| Cell::new(0)).collect(),
        }
    }

    /// HTTP/3: the thread's QUIC endpoint; its warning goes to the recorder, its socket to the
    /// `-v` trace.
    fn quic(
        &self,
        local: &LocalSet,
        runtime: &Runtime,
        shared: &ThreadShared,
    ) -> Result<Option<Rc<QuicContext>>> {
        // HTTP/3: one endpoint, one UDP socket, for all of this thread's connections; quinn's
        // drivers run on the LocalSet, beside the connections' tasks.
        let quic = match (&self.plan.negotiation, &self.plan.tls) {
            (Negotiation::Quic, Some(tls)) => {
                Some(Rc::new(local.block_on(runtime, async {
                    QuicContext::new(&self.plan, tls)
                })?))
            }
            _ => None,
        };
        if let Some(quic) = &quic {
            if let Some(warning) = &quic.warning {
                shared.recorder.borrow_mut().warn(warning.clone());
            }
            if let Some(tracer) = &self.sinks.trace {
                tracer.note(&format!("thread {}: {}", self.index, quic.socket));
            }
        }
        Ok(quic)
    }

    /// The thread's tasks beside its client slots: the warm-up's end (its bytes are left out)
    /// and the progress published for the display.
    fn spawn_observers(
        &self,
        shared: &Rc<ThreadShared>,
        warm_up_bytes: Rc<Cell<Option<WireTotals>>>,
    ) {
        if self.measure_start > Instant::now() {
            let wire = shared.wire.clone();
            let measure_start = self.measure_start;
            tokio::task::spawn_local(async move {
                tokio::time::sleep_until(measure_start.into()).await;
                warm_up_bytes.set(Some(wire.totals()));
            });
        } else {
            warm_up_bytes.set(Some(WireTotals::default()));
        }
        if let Some(live) = self.sinks.live.clone() {
            // A steered run's steps are measured from these: publish often enough that a
            // step of a few seconds is measured to within a fraction of a percent.
            let every = if self.throttle.is_some() {
                STEERED_PUBLISH_EVERY
            } else {
                PUBLISH_EVERY
            };
            tokio::task::spawn_local(publish_progress(shared.clone(), live, self.index, every));
        }
    }

    /// Runs the thread's client slots until they end, the drain period is abandoned, or the ring
    /// or the timer fails; returns when they ended.
    async fn run_slots(
        &self,
        shared: Rc<ThreadShared>,
        templates: Rc<Templates>,
        quic: Option<Rc<QuicContext>>,
        ring: Option<Rc<Uring>>,
        timer: Rc<PreciseTimer>,
        warm_up_bytes: Rc<Cell<Option<WireTotals>>>,
    ) -> Result<Instant> {
        self.spawn_observers(&shared, warm_up_bytes);
        let connector = Rc::new(Connector::new(quic.clone(), ring.clone()));
        let mut slots: Vec<_> = (0..self.slots)
            .map(|slot| {
                let trace = self.sinks.trace.clone();
                tokio::task::spawn_local(run_slot(
                    shared.clone(),
                    templates.clone(),
                    connector.clone(),
                    timer.clone(),
                    slot,
                    trace,
                ))
            })
            .collect();
        let pump = async {
            match &ring {
                Some(ring) => ring.clone().pump().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = join_all(slots.iter_mut()) => {}
            _ = self.abandon.cancelled() => {}
            // Returns only if the ring fails: no connection could make progress.
            Err(error) = pump => return Err(error).context("the thread's io_uring failed"),
            // Returns only if the timerfd fails: the connections' deadlines would never come.
            Err(error) = timer.serve() => return Err(error).context("the thread's timer failed"),
        }
        let ended = Instant::now();
        if let Some(quic) = quic {
            // The connections' tasks go first, never to be polled again: requests still
            // in flight (an abandoned drain) stay unfinished, as with TCP, instead of
            // failing when the endpoint closes under them.
            slots.iter().for_each(JoinHandle::abort);
            // Let the connections' CONNECTION_CLOSE frames leave, briefly (not part of
            // the run's time): a server that never hears them holds their state until
            // its idle timeout.
            quic.endpoint.close(VarInt::from_u32(0x100), b"");
            let _ = tokio::time::timeout(QUIC_CLOSE_WAIT, quic.endpoint.wait_idle()).await;
        }
        Ok(ended)
    }

    /// What the thread hands back once its connections are gone: requests still waiting to be
    /// sent again fail, the request log ends, the final numbers are published.
    fn collect(
        &self,
        shared: Rc<ThreadShared>,
        warm_up_bytes: Option<WireTotals>,
        ended: Instant,
        busy: f64,
    ) -> ThreadResult {
        let shared = Rc::try_unwrap(shared)
            .ok()
            .expect("connection tasks end with their LocalSet");
        shared.fail_unsent_retries(Instant::now());
        let schedule = (shared.pacer.as_ref())
            .and_then(|pacer| pacer.kept(self.measure_start, self.budget.stopped_at()));
        let mut recorder = shared.recorder.into_inner();
        if let Some(Err(problem)) = shared.request_log.map(|log| log.into_inner().finish()) {
            recorder.warn(problem);
        }
        // The exact totals, so a last look (a final scrape of --metrics-listen) sees them, not
        // the numbers of up to PUBLISH_EVERY ago.
        if let Some(live) = &self.sinks.live {
            live.publish_final(self.index, &recorder);
        }
        ThreadResult {
            recorder,
            wire: warm_up_bytes.map_or_else(WireTotals::default, |warm_up| {
                shared.wire.totals().since(warm_up)
            }),
            ended,
            busy,
            schedule,
        }
    }
}

/// Publishes this thread's numbers for the progress display until the thread's work ends.
async fn publish_progress(
    shared: Rc<ThreadShared>,
    live: Arc<Live>,
    thread: usize,
    every: Duration,
) {
    let mut ticks = tokio::time::interval(every);
    loop {
        // A steered run's controller asks for a publication at each step's edges.
        tokio::select! {
            _ = ticks.tick() => {}
            () = live.asked(thread) => {}
        }
        live.publish(thread, &shared.recorder.borrow());
    }
}
