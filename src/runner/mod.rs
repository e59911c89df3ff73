//! Runs a plan: `-t` OS threads, each with its own current-thread tokio runtime owning its share of
//! the connections (h2load's model), drawing from one shared request budget. The main thread only
//! watches the clock and Ctrl-C, and merges the threads' measurements at the end.

pub mod control;
pub mod net;
pub mod panics;
pub(crate) mod proxy;
pub mod signals;
pub mod steer;
mod tls_resume;

use std::cell::{Cell, RefCell};
use std::panic::AssertUnwindSafe;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{anyhow, bail, Context, Result};
use futures_util::future::join_all;
use tokio::sync::oneshot;
use tokio::task::{JoinHandle, LocalSet};
use tokio_util::sync::CancellationToken;

use crate::engine::budget::Budget;
use crate::engine::clock::PreciseTimer;
use crate::engine::driver::{self, ConnLimits};
use crate::engine::h3::{self, QuicContext};
use crate::engine::pacer::{Source, Steering, Throttle};
use crate::engine::reserve::Reserved;
use crate::engine::uring::Uring;
use crate::engine::{pick_protocol, ConnEnd, ConnState, Ledger, Pacer, Templates, ThreadShared};
use crate::observe::live::{Live, PUBLISH_EVERY};
use crate::observe::request_log::{LogFile, RequestLog};
use crate::observe::trace::{ConnTrace, Tracer};
use crate::plan::stages::Share;
use crate::plan::{IoBackend, Negotiation, Protocol, RunPlan, StopRule};
use crate::recorder::backlog::Backlog;
use crate::recorder::handshakes::Handshake;
use crate::recorder::outcome::Kept;
pub use crate::recorder::outcome::RunOutcome;
use crate::recorder::Failure;
use crate::recorder::{Recorder, WireMeter, WireTotals};
use crate::tls::TlsInfo;
use net::{Established, TappedIo, TlsOutcome, Transport};
use quinn::VarInt;
pub use steer::{steer, Steered};

/// How long in-flight requests may finish after a timed run ends or is interrupted, unless
/// `--request-timeout` says otherwise.
pub const DEFAULT_DRAIN: Duration = Duration::from_secs(1);

/// How often a steered run's workers publish their numbers (its steps are measured from them).
const STEERED_PUBLISH_EVERY: Duration = Duration::from_millis(50);

/// Descriptors kept free for everything but connections (stdio, runtimes, files).
const RESERVED_FDS: u64 = 64;

/// Raises RLIMIT_NOFILE to its hard limit and fails clearly, before any connection is made, if
/// `clients` connections needing `fds_per_client` descriptors each still do not fit.
pub fn ensure_fd_limit(clients: usize, fds_per_client: u64) -> Result<()> {
    let needed = clients as u64 * fds_per_client + RESERVED_FDS;
    let available =
        rlimit::increase_nofile_limit(u64::MAX).context("cannot read the open-file limit")?;
    if available < needed {
        let fit = available.saturating_sub(RESERVED_FDS) / fds_per_client;
        bail!(
            "-c {clients} needs about {needed} open files but the limit is {available}, enough for about {fit} \
             connections; raise the hard limit (e.g. `ulimit -Hn {needed}` as root, or /etc/security/limits.conf)"
        );
    }
    Ok(())
}

/// Numbers connections across threads and cells, for `--log-file`.
static NEXT_CONNECTION_ID: AtomicU64 = AtomicU64::new(1);

/// Where a run writes one line per request (`--log-file`), and as which cell of a sweep.
#[derive(Debug, Clone)]
pub struct CellLog {
    /// The file all threads append to.
    pub file: LogFile,
    /// The cell's number, from 1.
    pub cell: usize,
}

/// Where a run reports besides its result: the per-request log and the live progress.
#[derive(Debug, Clone, Default)]
pub struct Sinks {
    /// `--log-file`.
    pub log: Option<CellLog>,
    /// Progress published for the display (one slot per thread).
    pub live: Option<Arc<Live>>,
    /// The `-v` protocol trace.
    pub trace: Option<Arc<Tracer>>,
}

/// Runs the plan to the end and returns what was measured.
pub fn run(plan: Arc<RunPlan>, sinks: Sinks) -> Result<RunOutcome> {
    Launched::start(plan, sinks, None)?.finish(false)
}

/// A run whose worker threads are going: [`Launched::finish`] waits for them and merges what
/// they measured.
struct Launched {
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
    /// The main thread's runtime: the deadline, the signals, a steered run's steps.
    controller: tokio::runtime::Runtime,
}

impl Launched {
    /// Starts the plan's worker threads; with `throttle`, their schedule is the one it sets (a
    /// steered run).
    fn start(plan: Arc<RunPlan>, sinks: Sinks, throttle: Option<Arc<Throttle>>) -> Result<Self> {
        let controller = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the controller runtime")?;
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
            controller,
        })
    }

    /// Waits for the workers (after stopping them, with `stop_now`: requests in flight then
    /// have the drain period to finish) and merges what they measured.
    fn finish(self, stop_now: bool) -> Result<RunOutcome> {
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
            controller,
        } = self;
        let (threads, interrupted) = controller.block_on(control(
            results,
            &budget,
            &abandon,
            deadline,
            drain,
            stop_now,
            // A timed schedule ends itself at the deadline, and a send time due before it
            // still goes when its connection wakes a little late: the counts stay exact.
            plan.paced(),
        ));

        let mut merged = Recorder::new(measure_start, 0, plan.interval, paced);
        let mut wire = WireTotals::default();
        let mut last_end = measure_start;
        let mut schedule: Option<Kept> = None;
        for thread in threads {
            let thread = thread?;
            merged.merge(thread.recorder);
            wire.add(thread.wire);
            last_end = last_end.max(thread.ended);
            schedule = match (schedule, thread.schedule) {
                (Some(sum), Some(kept)) => Some(sum.add(kept)),
                (sum, kept) => sum.or(kept),
            };
        }
        let never_sent = if interrupted { 0 } else { budget.untaken() };
        merged.counters.failed += never_sent;
        merged.counters.errored += never_sent;
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
        })
    }
}

/// Waits for the workers while enforcing the deadline, the drain period and the signals that stop a
/// run (SIGINT, SIGTERM, SIGHUP: see [`signals`], which also quits on a later one). `stop_now`
/// stops the run at once (a steered run's end); with `schedule_ends` the deadline only starts the
/// drain period, the workers' schedule ending by itself.
async fn control(
    results: Vec<oneshot::Receiver<Result<ThreadResult>>>,
    budget: &Budget,
    abandon: &CancellationToken,
    deadline: Option<Instant>,
    drain: Duration,
    stop_now: bool,
    schedule_ends: bool,
) -> (Vec<Result<ThreadResult>>, bool) {
    let workers = join_all(results);
    tokio::pin!(workers);
    let mut interrupted = false;
    let mut abandon_at: Option<Instant> = None;
    if stop_now {
        budget.stop();
        abandon_at = Some(Instant::now() + drain);
    }
    loop {
        tokio::select! {
            results = &mut workers => {
                let results = results
                    .into_iter()
                    .map(|result| result.unwrap_or_else(|_| Err(anyhow!("a worker thread ended without a result"))))
                    .collect();
                // The workers can end (the deadline, every connection failed) in the same wake-up
                // as the signal: a run that a signal asked to stop is interrupted either way.
                return (results, interrupted || signals::received().is_some());
            }
            _ = sleep_until_some(deadline), if abandon_at.is_none() => {
                if !schedule_ends {
                    budget.stop();
                }
                abandon_at = Some(Instant::now() + drain);
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

/// Pauses (while the metrics linger, or for `--start-at`); `true` when a signal asked to stop
/// during the pause. After a signal that came before (the one that stopped the run), only a later
/// one (which quits) ends it.
pub fn pause(duration: Duration) -> bool {
    let stopping = signals::received().is_some();
    sleep_unless_stopped(duration, !stopping)
}

/// Whether io_uring is usable here: the engine's probe, which [`plan::build`](crate::plan::build)
/// takes for `--io uring` and `--io auto`, for callers outside the crate (tests, benches).
pub fn uring_verdict() -> Result<(), String> {
    crate::engine::uring::probe::check()
}

/// Pauses between a sweep's cells, unless a signal asked to stop, before (while the exports were
/// written) or during the pause.
pub(crate) fn cool_down(duration: Duration) {
    sleep_unless_stopped(duration, true);
}

/// Sleeps for `duration`, or until a signal asks to stop if `stoppable`; `true` if one did.
fn sleep_unless_stopped(duration: Duration, stoppable: bool) -> bool {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        std::thread::sleep(duration);
        return false;
    };
    runtime.block_on(async {
        tokio::select! {
            _ = tokio::time::sleep(duration) => false,
            () = signals::requested(), if stoppable => true,
        }
    })
}

/// Sleeps until `at`, or forever when there is no such time.
async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// What one worker thread hands back.
struct ThreadResult {
    recorder: Recorder,
    wire: WireTotals,
    ended: Instant,
    /// How the thread's share of a timed schedule was kept.
    schedule: Option<Kept>,
}

/// One worker thread's share of the run.
struct Worker {
    plan: Arc<RunPlan>,
    budget: Arc<Budget>,
    abandon: CancellationToken,
    run_start: Instant,
    measure_start: Instant,
    /// The end of a timed run (`-D`).
    deadline: Option<Instant>,
    slots: usize,
    index: usize,
    sinks: Sinks,
    /// A steered run's rate, which replaces the plan's schedule.
    throttle: Option<Arc<Throttle>>,
}

impl Worker {
    /// This thread's share of the schedule, in proportion to its connections, if there is one.
    fn pacer(&self) -> Option<Pacer> {
        let fraction = self.slots as f64 / self.plan.clients as f64;
        let source = match (&self.throttle, &self.plan.stages, self.plan.rate) {
            (Some(throttle), _, _) => Source::Steered(Steering::new(throttle.clone(), fraction)),
            (None, Some(stages), _) => Source::Stages(Share::new(stages.clone(), fraction)),
            // Rounded up to the nanosecond: rounded down, `-D 1s --rate 300` had a 301st send
            // time (300 periods of 3,333,333 ns end before 1 s).
            (None, None, Some(rate)) => Source::Constant(Duration::from_nanos(
                (self.plan.clients as f64 * 1e9 / (rate * self.slots as f64)).ceil() as u64,
            )),
            (None, None, None) => return None,
        };
        Some(Pacer::with_source(source, self.run_start, self.deadline))
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

    fn run(self) -> Result<ThreadResult> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start a worker runtime")?;
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
            recorder.backlog = Some(Backlog::new(throttle.edge.clone()));
        }
        let shared = Rc::new(ThreadShared {
            plan: self.plan.clone(),
            budget: self.budget,
            recorder: RefCell::new(recorder),
            wire: Rc::new(WireMeter::default()),
            pacer,
            request_log: self
                .sinks
                .log
                .map(|log| RefCell::new(RequestLog::new(log.file, log.cell))),
            read_buffer: driver::read_buffer(),
            retries: RefCell::default(),
            first_slot,
            tls: self
                .plan
                .tls
                .as_ref()
                .map(|plan| tls_resume::thread_plan(plan, self.slots)),
            path_cursors: (0..self.slots).map(|_| Cell::new(0)).collect(),
        });
        let templates = Rc::new(Templates::new(&self.plan));
        let local = LocalSet::new();
        // HTTP/3: one endpoint, one UDP socket, for all of this thread's connections; quinn's
        // drivers run on the LocalSet, beside the connections' tasks.
        let quic = match (&self.plan.negotiation, &self.plan.tls) {
            (Negotiation::Quic, Some(tls)) => {
                Some(Rc::new(local.block_on(&runtime, async {
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
        // The bytes of the warm-up (`--warm-up-time`), which the measured period leaves out;
        // `None` until it ends, so a run stopped during its warm-up (a signal) measured none.
        let warm_up_bytes = Rc::new(Cell::new(None));
        let live = self.sinks.live.clone();
        let ended = local.block_on(&runtime, {
            let shared = shared.clone();
            let timer = timer.clone();
            let warm_up_bytes = warm_up_bytes.clone();
            let quic = quic.clone();
            let ring = ring.clone();
            async move {
                if self.measure_start > Instant::now() {
                    let wire = shared.wire.clone();
                    tokio::task::spawn_local(async move {
                        tokio::time::sleep_until(self.measure_start.into()).await;
                        warm_up_bytes.set(Some(wire.totals()));
                    });
                } else {
                    warm_up_bytes.set(Some(WireTotals::default()));
                }
                if let Some(live) = self.sinks.live {
                    // A steered run's steps are measured from these: publish often enough that a
                    // step of a few seconds is measured to within a fraction of a percent.
                    let every = if self.throttle.is_some() {
                        STEERED_PUBLISH_EVERY
                    } else {
                        PUBLISH_EVERY
                    };
                    tokio::task::spawn_local(publish_progress(
                        shared.clone(),
                        live,
                        self.index,
                        every,
                    ));
                }
                let mut slots: Vec<_> = (0..self.slots).map(|slot| {
                    let trace = self.sinks.trace.clone();
                    tokio::task::spawn_local(run_slot(
                        shared.clone(),
                        templates.clone(),
                        quic.clone(),
                        ring.clone(),
                        timer.clone(),
                        slot,
                        trace,
                    ))
                }).collect();
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
        })?;
        drop(local);
        // After the connections and the timer: the ring's teardown waits for the kernel to
        // finish with them.
        drop(timer);
        drop(ring);
        let shared = Rc::try_unwrap(shared)
            .ok()
            .expect("connection tasks end with their LocalSet");
        shared.fail_unsent_retries();
        let schedule = (shared.pacer.as_ref()).and_then(|pacer| pacer.kept(self.measure_start));
        let mut recorder = shared.recorder.into_inner();
        if let Some(Err(problem)) = shared.request_log.map(|log| log.into_inner().finish()) {
            recorder.warn(problem);
        }
        // The exact totals, so a last look (a final scrape of --metrics-listen) sees them, not
        // the numbers of up to PUBLISH_EVERY ago.
        if let Some(live) = live {
            live.publish_final(self.index, &recorder);
        }
        Ok(ThreadResult {
            recorder,
            wire: warm_up_bytes
                .get()
                .map_or_else(WireTotals::default, |warm_up| {
                    shared.wire.totals().since(warm_up)
                }),
            ended,
            schedule,
        })
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

/// One client slot: a connection, replaced whenever it is lost, until the budget is spent and no
/// request of the thread waits to be sent again. The send time the slot was told last goes on
/// when it stops ([`ThreadShared::slot_stopped`]).
async fn run_slot(
    shared: Rc<ThreadShared>,
    templates: Rc<Templates>,
    quic: Option<Rc<QuicContext>>,
    ring: Option<Rc<Uring>>,
    timer: Rc<PreciseTimer>,
    slot: usize,
    tracer: Option<Arc<Tracer>>,
) {
    let told = Cell::new(None);
    match quic {
        Some(quic) => run_quic_slot(&shared, &quic, &timer, slot, tracer, &told).await,
        None => run_tcp_slot(&shared, &templates, ring, &timer, slot, tracer, &told).await,
    }
    shared.slot_stopped(told.take(), &timer);
}

/// [`run_slot`] over TCP (or a unix socket); `told` is the slot's told send time.
async fn run_tcp_slot(
    shared: &Rc<ThreadShared>,
    templates: &Templates,
    ring: Option<Rc<Uring>>,
    timer: &PreciseTimer,
    slot: usize,
    tracer: Option<Arc<Tracer>>,
    told: &Cell<Option<Instant>>,
) {
    let plan = shared.plan.clone();
    let timeouts = plan.timeouts;
    let mut lost_unused = 0;
    let mut reconnecting = false;
    while shared.budget.has_more() || shared.has_retries() {
        let Some(reserved) = shared.reserve_first(timer, told, reconnecting).await else {
            return;
        };
        reconnecting = true;
        let began = Instant::now();
        let connected = net::establish(
            &plan.destination.route,
            shared.tls.as_ref(),
            timeouts.connect,
            ring.as_ref(),
        )
        .await
        .and_then(|established| {
            let protocol = connection_protocol(&established, plan.negotiation)?;
            Ok((established, protocol))
        });
        let (established, protocol) = match connected {
            Ok(connected) => connected,
            Err(failure) => {
                shared.give_back(reserved);
                shared
                    .recorder
                    .borrow_mut()
                    .connect_failed(failure.kind, failure.message);
                return;
            }
        };
        let connected = Instant::now();
        if let Some(took) = established.proxy_time {
            shared.recorder.borrow_mut().proxy_connected(took);
        }
        let (conn, trace) = on_connected(
            shared,
            tracer.as_ref(),
            slot,
            began..connected,
            (established.tls, protocol),
            (reserved, told),
        );
        let mut transport = established.transport;
        transport.on_handshake_settled(record_handshake(shared, began..connected));
        let early_data = transport.early_data_room();
        let mut io = TappedIo::new(transport, shared.wire.clone()).traced(trace);
        let limits = ConnLimits {
            early_data,
            ..conn_limits(&plan, began)
        };
        let ledger = Ledger::new(shared, &conn, slot);
        let end = driver::drive(
            &mut io,
            templates,
            protocol,
            ledger,
            limits,
            &shared.read_buffer,
            timer,
        )
        .await;
        shared.recorder.borrow_mut().connection_ended();
        if slot_done(shared, &conn, end, told, &mut lost_unused) {
            return;
        }
    }
}

/// Records the TLS handshake of a connection set up over `setup` when it ends (the end of
/// `setup`, unless early data left before it), counted with the connection whatever becomes of
/// the connection afterwards.
fn record_handshake(
    shared: &Rc<ThreadShared>,
    setup: std::ops::Range<Instant>,
) -> impl FnOnce(TlsOutcome) {
    let shared = shared.clone();
    move |outcome: TlsOutcome| {
        let mut recorder = shared.recorder.borrow_mut();
        let handshake = Handshake {
            resumed: outcome.resumed,
            early_data: outcome.early_data,
            time: outcome.settled.unwrap_or(setup.end) - setup.start,
        };
        recorder.handshake(setup.start, handshake);
        if let Some(info) = outcome.late_info {
            recorder.note_tls(info);
        }
    }
}

/// The protocol an established connection speaks ([`pick_protocol`]). Early data leaves before
/// ALPN answers: in the protocol asked for (the plan then offers only its ALPN id).
fn connection_protocol(
    established: &Established,
    negotiation: Negotiation,
) -> Result<Option<Protocol>, Failure> {
    match (&established.transport, negotiation) {
        (
            Transport::EarlyTls(_),
            Negotiation::Alpn {
                require: Some(required),
            },
        ) => Ok(Some(required)),
        _ => pick_protocol(negotiation, established.tls.as_ref()),
    }
}

/// How many connections in a row a slot may lose before their first request before it stops: a
/// server that drops some connections (overload, a limit per client) is survived, one that
/// closes every connection ends the run after a few attempts per slot instead of reconnecting
/// for ever.
const LOST_UNUSED_IN_A_ROW: u32 = 3;

/// Whether a slot whose connection ended with `end` stops: its work is done (a connection
/// retired by `--requests-per-connection` is replaced while work remains), or its last
/// [`LOST_UNUSED_IN_A_ROW`] connections were all lost before carrying a single request
/// (`lost_unused` counts them; a connection that carried one starts the count again). What it
/// took before connecting and never sent goes back; the send time it was told stays the slot's
/// (`told`).
fn slot_done(
    shared: &ThreadShared,
    conn: &ConnState,
    end: ConnEnd,
    told: &Cell<Option<Instant>>,
    lost_unused: &mut u32,
) -> bool {
    shared.give_back(Reserved {
        taken: conn.reserved.get(),
        scheduled: conn.scheduled.take(),
    });
    told.set(conn.come_back_at.take());
    let retired = conn.retiring(&shared.plan);
    *lost_unused = if conn.requests.get() == 0 {
        *lost_unused + 1
    } else {
        0
    };
    (end == ConnEnd::Finished && !retired && !shared.has_retries())
        || *lost_unused >= LOST_UNUSED_IN_A_ROW
}

/// Records an established connection (its setup time, TLS, protocol) and starts its state and
/// its `-v` trace, if it is among the traced ones. The connection carries what its slot took
/// before connecting, and the send time the slot was told.
fn on_connected(
    shared: &ThreadShared,
    tracer: Option<&Arc<Tracer>>,
    slot: usize,
    setup: std::ops::Range<Instant>,
    (tls, protocol): (Option<TlsInfo>, Option<Protocol>),
    (reserved, told): (Reserved, &Cell<Option<Instant>>),
) -> (ConnState, Option<ConnTrace>) {
    let id = NEXT_CONNECTION_ID.fetch_add(1, Ordering::Relaxed);
    let std::ops::Range {
        start: began,
        end: connected,
    } = setup;
    let trace =
        tracer.and_then(|tracer| tracer.connected(id, connected - began, tls.as_ref(), protocol));
    let mut recorder = shared.recorder.borrow_mut();
    recorder.connected(slot, began, connected);
    if let Some(info) = tls {
        recorder.note_tls(info);
    }
    if let Some(protocol) = protocol {
        recorder.note_protocol(protocol);
    }
    let conn = ConnState {
        id,
        protocol: Cell::new(protocol),
        come_back_at: Cell::new(told.take()),
        reserved: Cell::new(reserved.taken),
        scheduled: Cell::new(reserved.scheduled),
        ..ConnState::default()
    };
    (conn, trace)
}

/// A connection's `-T`, `-N` and handshake limits, for a connection begun at `began`.
fn conn_limits(plan: &RunPlan, began: Instant) -> ConnLimits {
    let timeouts = plan.timeouts;
    ConnLimits {
        active_until: timeouts.connection_active.map(|limit| began + limit),
        inactivity: timeouts.connection_inactivity,
        ready_by: timeouts.connect.map(|limit| began + limit),
        early_data: None,
    }
}

/// How long a thread waits for its QUIC connections' closes to leave at the end.
const QUIC_CLOSE_WAIT: Duration = Duration::from_millis(100);

/// [`run_slot`] for HTTP/3: QUIC connections on the thread's endpoint.
async fn run_quic_slot(
    shared: &Rc<ThreadShared>,
    quic: &QuicContext,
    timer: &PreciseTimer,
    slot: usize,
    tracer: Option<Arc<Tracer>>,
    told: &Cell<Option<Instant>>,
) {
    let plan = shared.plan.clone();
    let mut lost_unused = 0;
    let mut reconnecting = false;
    while shared.budget.has_more() || shared.has_retries() {
        let Some(reserved) = shared.reserve_first(timer, told, reconnecting).await else {
            return;
        };
        reconnecting = true;
        let began = Instant::now();
        let connection = match quic.connect(plan.timeouts.connect).await {
            Ok(connection) => connection,
            Err(failure) => {
                shared.give_back(reserved);
                shared
                    .recorder
                    .borrow_mut()
                    .connect_failed(failure.kind, failure.message);
                return;
            }
        };
        let tls = h3::tls_info(&connection);
        let (conn, trace) = on_connected(
            shared,
            tracer.as_ref(),
            slot,
            began..Instant::now(),
            (Some(tls), Some(Protocol::H3)),
            (reserved, told),
        );
        let ledger = Ledger::new(shared, &conn, slot);
        let end = h3::drive(
            connection,
            &quic.template,
            ledger,
            conn_limits(&plan, began),
            timer,
            trace,
        )
        .await;
        shared.recorder.borrow_mut().connection_ended();
        if slot_done(shared, &conn, end, told, &mut lost_unused) {
            return;
        }
    }
}
