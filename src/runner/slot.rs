//! One client slot: a connection (TCP, a unix socket, or QUIC: whatever the thread's
//! [`Connector`] makes), replaced whenever it is lost, until the thread's work is done; what each
//! connection records when it is set up and when it ends.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;

use crate::io::clock::PreciseTimer;
use crate::io::connect::{Connection, Connector};
use crate::io::driver::{self, ConnLimits};
use crate::io::h3;
use crate::io::net::{Established, TappedIo, TlsOutcome, Transport};
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
    connector: Rc<Connector>,
    timer: Rc<PreciseTimer>,
    slot: usize,
    tracer: Option<Arc<Tracer>>,
) {
    let told = Cell::new(None);
    let plan = shared.plan.clone();
    let mut lost_unused = 0;
    let mut reconnecting = false;
    while shared.budget.has_more() || shared.has_retries() {
        let Some(reserved) = shared.reserve_first(&*timer, &told, reconnecting).await else {
            break;
        };
        reconnecting = true;
        let began = Instant::now();
        let opened = connector
            .connect(
                &plan.destination.route,
                shared.tls.as_ref(),
                plan.timeouts.connect,
            )
            .await
            .and_then(|connection| Opened::of(connection, plan.negotiation));
        let opened = match opened {
            Ok(opened) => opened,
            Err(failure) => {
                shared.give_back(reserved);
                shared.recorder.borrow_mut().connect_failed(failure);
                break;
            }
        };
        let connected = Instant::now();
        if let Connection::Stream(Established {
            proxy_time: Some(took),
            ..
        }) = &opened.connection
        {
            shared.recorder.borrow_mut().proxy_connected(*took);
        }
        let (conn, trace) = on_connected(
            &shared,
            tracer.as_ref(),
            slot,
            began..connected,
            (opened.tls, opened.protocol),
            (reserved, &told),
        );
        let ledger = Ledger::new(&shared, &conn, slot);
        let limits = conn_limits(&plan, began);
        let end = match opened.connection {
            Connection::Stream(established) => {
                let mut transport = established.transport;
                transport.on_handshake_settled(record_handshake(&shared, began..connected));
                let limits = ConnLimits {
                    early_data: transport.early_data_room(),
                    ..limits
                };
                let mut io = TappedIo::new(transport, shared.wire.clone()).traced(trace);
                driver::drive(
                    &mut io,
                    &templates,
                    opened.protocol,
                    ledger,
                    limits,
                    &shared.read_buffer,
                    &*timer,
                )
                .await
            }
            Connection::Quic(connection) => {
                let template = templates
                    .h3
                    .as_ref()
                    .expect("an HTTP/3 plan prepares its requests");
                h3::drive(connection, template, ledger, limits, &*timer, trace).await
            }
        };
        shared.recorder.borrow_mut().connection_ended();
        if slot_done(&shared, &conn, end, &told, &mut lost_unused) {
            break;
        }
    }
    shared.slot_stopped(told.take(), &timer);
}

/// A connection just made, with what it negotiated: its TLS parameters and the protocol it
/// speaks (None: the session finds out, as an h2c upgrade does).
struct Opened {
    connection: Connection,
    tls: Option<TlsInfo>,
    protocol: Option<Protocol>,
}

impl Opened {
    /// What `connection` negotiated ([`connection_protocol`]; QUIC speaks HTTP/3).
    fn of(connection: Connection, negotiation: Negotiation) -> Result<Opened, Failure> {
        Ok(match connection {
            Connection::Stream(mut established) => Opened {
                protocol: connection_protocol(&established, negotiation)?,
                tls: established.tls.take(),
                connection: Connection::Stream(established),
            },
            Connection::Quic(quic) => Opened {
                tls: Some(h3::tls_info(&quic)),
                protocol: Some(Protocol::H3),
                connection: Connection::Quic(quic),
            },
        })
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
