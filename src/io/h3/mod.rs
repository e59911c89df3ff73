//! The HTTP/3 engine (RFC 9114) on quinn's QUIC streams. Unlike the byte-stream sessions it
//! cannot hand quinn a socket: quinn owns the thread's UDP socket, its timers and loss recovery,
//! so this engine drives quinn's streams directly while sharing the run's ledger, failures,
//! limits and recorder events with the other protocols.
//!
//! A connection keeps `-m` request lanes. Each lane opens a bidirectional stream (quinn waits
//! for the server's stream credit, so `initial_max_streams_bidi` is honoured), takes a request
//! from the ledger, writes the HEADERS frame prepared once per run (and the body's DATA frame)
//! and finishes its side while it feeds the response to a [`ResponseParser`] as quinn hands
//! over chunks. Every chunk read, on any stream, counts in the traffic total as it arrives.
//! Nothing is allocated per request on this side: the frames are shared [`Bytes`], the parser
//! and its buffer are the lane's. The server's unidirectional streams are read beside the lanes:
//! its control stream (SETTINGS, GOAWAY) and the QPACK streams, which carry nothing the client
//! needs as it allows no dynamic table (see [`crate::proto::h3`]).
//!
//! The parts: `template.rs` (the request frames prepared once), `lane.rs` (one request stream
//! at a time), `control.rs` (the client's control stream and the server's unidirectional
//! streams), `describe.rs` (TLS facts, and what the `-v` trace says of the QUIC handshake and end; the
//! trace reads the streams' bytes, handed to it as they are written and read), `quic.rs` (the endpoint,
//! connecting, QUIC errors); this file runs a connection's tasks and holds what they share.

mod control;
mod describe;
mod lane;

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use futures_util::stream::{FuturesUnordered, StreamExt};
use futures_util::FutureExt;
use quinn::{Connection, RecvStream, SendStream, VarInt};
use tokio::sync::Notify;

use crate::io::driver::ConnLimits;
use crate::io::quic;
pub(crate) use crate::io::quic::QuicContext;
use crate::observe::trace::ConnTrace;
use crate::proto::h3::{ControlEvent, H3Error, H3_NO_ERROR, H3_STREAM_CREATION_ERROR};
use crate::recorder::{ErrorKind, Failure, RequestStart};
use crate::schedule::Timer;
use crate::session::earliest;
pub(crate) use crate::session::h3::H3Template;
use crate::session::{ConnEnd, Ledger};
use control::{open_control, server_streams};
pub(crate) use describe::tls_info;
use describe::{describe_end, describe_handshake};
use lane::lane;

#[cfg(test)]
mod tests;

/// What the lanes of one connection share.
struct Shared<'c> {
    conn: &'c Connection,
    template: &'c H3Template,
    ledger: Ledger<'c>,
    /// Each lane's request in flight: what fails if the connection is lost.
    in_flight: RefCell<Vec<Option<InFlight>>>,
    /// Request streams the lanes hold now.
    streams_held: Cell<usize>,
    /// The stream id of the server's GOAWAY: requests on streams from it on were not processed.
    goaway: Cell<Option<u64>>,
    goaway_seen: Notify,
    /// When something last arrived (`-N`).
    last_read: Cell<Instant>,
    /// The `-v` trace, if this connection is traced.
    trace: Option<RefCell<ConnTrace>>,
    /// Which of the server's control, QPACK encoder and decoder streams have opened (bit:
    /// the stream type): each may open once.
    critical_opened: Cell<u8>,
}

/// A lane's request in flight.
#[derive(Debug, Clone, Copy)]
struct InFlight {
    start: RequestStart,
    /// Its stream's id.
    id: u64,
    /// Its response's header bytes so far (as received, and decoded): counted once its fate is
    /// known, and not at all if it goes again, so a retried request's headers count once.
    headers: (u64, u64),
}

/// A request stream a lane holds, counted while held: a lane waiting for stream credit tells
/// a server that allows none from one whose streams are all busy.
struct Held<'c> {
    send: SendStream,
    recv: RecvStream,
    held: &'c Cell<usize>,
}

impl<'c> Held<'c> {
    fn new((send, recv): (SendStream, RecvStream), held: &'c Cell<usize>) -> Self {
        held.set(held.get() + 1);
        Held { send, recv, held }
    }

    fn id(&self) -> u64 {
        VarInt::from(self.send.id()).into_inner()
    }

    /// Abandons the stream in both directions with `code`.
    fn cancel(&mut self, code: u64) {
        let code = VarInt::from_u64(code).expect("a valid varint");
        let _ = self.send.reset(code);
        let _ = self.recv.stop(code);
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.held.set(self.held.get() - 1);
    }
}

impl Shared<'_> {
    /// Counts a request's response headers, once its fate is known.
    fn count_headers(&self, request: &InFlight) {
        let (wire, uncompressed) = request.headers;
        self.ledger.wire().add_headers(wire, uncompressed);
    }

    /// The server's control stream said something.
    fn on_control(&self, event: ControlEvent) {
        if let ControlEvent::Goaway(id) = event {
            self.goaway.set(Some(id));
            self.goaway_seen.notify_waiters();
        }
    }

    /// Hands bytes sent on stream `id` to the `-v` trace, if this connection is traced.
    fn trace_sent(&self, id: u64, bytes: &[u8]) {
        if let Some(trace) = &self.trace {
            trace.borrow_mut().on_stream_sent(id, bytes);
        }
    }

    /// Hands bytes received on stream `id` to the `-v` trace, if this connection is traced.
    fn trace_received(&self, id: u64, bytes: &[u8]) {
        if let Some(trace) = &self.trace {
            trace.borrow_mut().on_stream_received(id, bytes);
        }
    }

    /// Shows what quinn tells of the connection in the `-v` trace, if it is traced.
    fn trace_quic(&self, line: impl FnOnce() -> String) {
        if let Some(trace) = &self.trace {
            trace.borrow().quic_line(line());
        }
    }

    /// The server opened its stream of critical type `kind`: a second one is
    /// H3_STREAM_CREATION_ERROR (RFC 9114 §6.2.1, RFC 9204 §4.2).
    fn critical_opened(&self, kind: u64) -> Result<(), Failure> {
        let bit = 1 << kind;
        let opened = self.critical_opened.get();
        if opened & bit != 0 {
            return Err(self.violation(H3Error {
                code: H3_STREAM_CREATION_ERROR,
                reason: "the server opened a second control or QPACK stream of one type",
            }));
        }
        self.critical_opened.set(opened | bit);
        Ok(())
    }

    /// Whether a GOAWAY says the request on stream `id` was not processed.
    fn unprocessed(&self, id: u64) -> bool {
        self.goaway.get().is_some_and(|last| id >= last)
    }

    /// A protocol violation by the server: close the connection with its code.
    fn violation(&self, error: H3Error) -> Failure {
        self.conn.close(
            VarInt::from_u64(error.code).unwrap_or(VarInt::MAX),
            error.reason.as_bytes(),
        );
        Failure::protocol(format!("the server broke HTTP/3: {error}"))
    }
}

/// Drives one established HTTP/3 connection until the budget is spent, the server ends it, or
/// it fails. Its deadlines wait on `timer`.
pub(crate) async fn drive(
    conn: Connection,
    template: &H3Template,
    ledger: Ledger<'_>,
    limits: ConnLimits,
    timer: &impl Timer,
    trace: Option<ConnTrace>,
) -> ConnEnd {
    // The streams the server's transport parameters allow at once are known from the
    // handshake: opening them now tells the effective concurrency, min(-m,
    // initial_max_streams_bidi), as SETTINGS_MAX_CONCURRENT_STREAMS tells it for h2.
    let mut first = Vec::with_capacity(template.lanes);
    while first.len() < template.lanes {
        match conn.open_bi().now_or_never() {
            Some(Ok(pair)) => first.push(Some(pair)),
            _ => break,
        }
    }
    let lanes_open = first.len();
    ledger.note_effective_concurrency(lanes_open);
    first.resize_with(template.lanes, || None);
    let shared = Shared {
        conn: &conn,
        template,
        ledger,
        in_flight: RefCell::new(vec![None; template.lanes]),
        streams_held: Cell::new(0),
        goaway: Cell::new(None),
        goaway_seen: Notify::new(),
        last_read: Cell::new(Instant::now()),
        trace: trace.map(RefCell::new),
        critical_opened: Cell::new(0),
    };
    shared.trace_quic(|| describe_handshake(&conn, template, lanes_open));
    // Held open for the connection's life: closing it is H3_CLOSED_CRITICAL_STREAM. Opening
    // it waits for the server's credit, so -T/-N bound it too.
    let control = tokio::select! {
        biased;
        control = open_control(&shared, timer) => control,
        failure = watchdog(&shared, limits, timer) => Err(failure),
    };
    let failure = match control {
        Err(failure) => Some(failure),
        Ok(_control) => run_tasks(&shared, first, limits, timer).await,
    };
    shared.trace_quic(|| describe_end(&conn.stats()));
    let end = match failure {
        Some(failure) => {
            lose(&shared, failure);
            ConnEnd::Lost
        }
        None if shared.goaway.get().is_some() => {
            if ledger.requests_taken() == 0 {
                ledger.connection_failed(Failure::new(
                    ErrorKind::Goaway,
                    "the server sent GOAWAY before the first request",
                ));
            }
            ConnEnd::Lost
        }
        None => ConnEnd::Finished,
    };
    conn.close(VarInt::from_u64(H3_NO_ERROR).expect("a valid varint"), b"");
    end
}

/// A connection's concurrent work: its lanes, and the watchers that end it.
type Task<'a> = Pin<Box<dyn Future<Output = Result<(), Failure>> + 'a>>;

/// Runs the lanes (one per entry of `opened`) beside the server's streams, the connection's
/// close and its `-T`/`-N` limits, until every lane is done (`None`) or something fails. Each
/// is polled only when woken: a wake-up costs the lanes that have something to do, not all.
async fn run_tasks<'a>(
    shared: &'a Shared<'a>,
    opened: Vec<Option<(SendStream, RecvStream)>>,
    limits: ConnLimits,
    timer: &'a impl Timer,
) -> Option<Failure> {
    let mut lanes = opened.len();
    let mut tasks: FuturesUnordered<Task<'a>> = opened
        .into_iter()
        .enumerate()
        .map(|(index, opened)| Box::pin(lane(shared, index, opened, timer)) as Task<'a>)
        .collect();
    tasks.push(Box::pin(async { Err(server_streams(shared).await) }));
    tasks.push(Box::pin(async {
        Err(quic::connection_failure(&shared.conn.closed().await))
    }));
    tasks.push(Box::pin(async move {
        Err(watchdog(shared, limits, timer).await)
    }));
    while let Some(done) = tasks.next().await {
        match done {
            Ok(()) if lanes > 1 => lanes -= 1,
            Ok(()) => return None,
            Err(failure) => return Some(failure),
        }
    }
    None
}

/// The connection cannot go on: the requests in flight fail with the failure's kind, except
/// those a GOAWAY said were not processed, which go again.
fn lose(shared: &Shared<'_>, failure: Failure) {
    let ledger = &shared.ledger;
    let now = Instant::now();
    let mut failed = 0;
    for request in shared
        .in_flight
        .borrow_mut()
        .iter_mut()
        .filter_map(Option::take)
    {
        if shared.unprocessed(request.id) && ledger.retry(request.start, ErrorKind::Goaway, now) {
            continue;
        }
        shared.count_headers(&request);
        ledger.fail(request.start, failure.kind, now);
        failed += 1;
    }
    if failed > 0 {
        ledger.note_error(|| failure.message);
    } else if matches!(failure.kind, ErrorKind::Protocol | ErrorKind::Goaway)
        || ledger.requests_taken() == 0
    {
        // Nothing to blame it on: a failed connection, its kind named (a connection lost
        // before its first request would otherwise leave no trace but a concurrency of 0).
        ledger.connection_failed(failure);
    }
}

/// `-T` and `-N`: the connection's own limits.
async fn watchdog(shared: &Shared<'_>, limits: ConnLimits, timer: &impl Timer) -> Failure {
    loop {
        let silent_until = limits
            .inactivity
            .map(|limit| shared.last_read.get() + limit);
        let Some(wake) = earliest(limits.active_until, silent_until) else {
            return std::future::pending().await;
        };
        if Instant::now() >= wake {
            shared.ledger.closed_by_client();
            return Failure::new(
                ErrorKind::Timeout,
                "a connection reached its -T/-N limit and the client closed it",
            );
        }
        timer.sleep_until(wake).await;
    }
}
