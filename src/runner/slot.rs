//! One client slot: a connection (TCP, a unix socket, or QUIC), replaced whenever it is lost, until
//! the thread's work is done; what each connection records when it is set up and when it ends.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;

use crate::io::clock::PreciseTimer;
use crate::io::driver::{self, ConnLimits};
use crate::io::h3::{self, QuicContext};
use crate::io::net::{self, Established, TappedIo, TlsOutcome, Transport};
use crate::io::uring::Uring;
use crate::observe::trace::{ConnTrace, Tracer};
use crate::plan::{Negotiation, Protocol, RunPlan};
use crate::recorder::handshakes::Handshake;
use crate::recorder::Failure;
use crate::schedule::reserve::{Reserved, Supply};
use crate::session::{pick_protocol, ConnEnd, ConnState, Ledger, Templates, ThreadShared};
use crate::tls::TlsInfo;

/// Numbers connections across threads and cells, for `--log-file`.
static NEXT_CONNECTION_ID: AtomicU64 = AtomicU64::new(1);

/// One client slot: a connection, replaced whenever it is lost, until the budget is spent and no
/// request of the thread waits to be sent again. The send time the slot was told last goes on
/// when it stops ([`Supply::slot_stopped`]).
pub(super) async fn run_slot(
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
                shared.recorder.borrow_mut().connect_failed(failure);
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
    let retired = conn.retiring(shared);
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
        generation: shared.pacer.as_ref().map_or(0, |pacer| pacer.generation()),
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
                shared.recorder.borrow_mut().connect_failed(failure);
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
