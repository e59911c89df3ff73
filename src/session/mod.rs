//! The protocol sessions, h2load's split: each protocol is a session — a state machine fed with
//! received bytes and the time they came (`now`, `at`: its caller's clock), that fills an
//! outgoing buffer and reports request events through a [`Ledger`] — and an I/O driver
//! (`crate::io::driver`) owns the socket, the buffers, the timers, the clock and transport
//! errors for all of them. Neither the sessions nor the [`Ledger`] read a clock or touch a
//! socket, so they are tested with bytes and scripted times alone ([`testing`]).
//!
//! Adding a protocol means adding a session module that implements [`contract::Session`] and a
//! variant of [`any::AnySession`] (and of [`any::Speaks`]).

pub(crate) mod any;
pub(crate) mod contract;
pub(crate) mod events;
mod h1;
pub(crate) mod h2;
pub(crate) mod h3;
pub(crate) mod outgoing;
pub(crate) mod render;
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) mod testing;
mod upgrade;

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::io;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::observe::request_log::{Entry as LogEntry, RequestLog};
use crate::plan::template::{Draw, Rng, PATH_CHOICE};
use crate::plan::{Negotiation, Protocol, RunPlan};
use crate::proto::check::{ResponseCheck, Verdict};
use crate::recorder::messages::{MessageBytes, MessageStream};
use crate::recorder::{
    ErrorKind, Failure, Recorder, RequestStart, ResponseSample, Symptom, WireMeter,
};
use crate::schedule::budget::Budget;
use crate::schedule::pacer::Due;
use crate::schedule::reserve::Supply;
use crate::tls::TlsInfo;

pub(crate) use crate::schedule::pacer::Pacer;
pub(crate) use any::Templates;

/// How a connection ended, from the runner's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConnEnd {
    /// No more requests to send on it: the budget is spent or the run is stopping.
    Finished,
    /// The connection closed or failed while there was still work: reconnect.
    Lost,
}

/// The protocol an established connection will speak, when it is known before the first byte
/// (an h2c upgrade finds out on the connection: `Ok(None)`). `Err` says why the connection is unusable.
pub(crate) fn pick_protocol(
    negotiation: Negotiation,
    tls: Option<&TlsInfo>,
) -> Result<Option<Protocol>, Failure> {
    match negotiation {
        Negotiation::Direct(protocol) => Ok(Some(protocol)),
        Negotiation::H2cUpgrade => Ok(None),
        Negotiation::Quic => Ok(Some(Protocol::H3)),
        Negotiation::Alpn { require } => {
            let alpn = tls.and_then(|info| info.alpn.as_deref());
            let selected = if alpn == Some("h2") {
                Protocol::H2
            } else {
                Protocol::Http1
            };
            if let Some(required) = require.filter(|required| *required != selected) {
                return Err(Failure::new(
                    ErrorKind::Tls,
                    format!(
                        "the server selected {} by ALPN, but --proto {} requires {}",
                        alpn.unwrap_or("nothing (HTTP/1.1)"),
                        if required == Protocol::H2 { "h2" } else { "h1" },
                        required.id()
                    ),
                ));
            }
            Ok(Some(selected))
        }
    }
}

/// The failure for an HTTP/1.1 answer that does not parse (`what: problem`). TLS records there
/// mean a cleartext request went to a TLS port, and the message says so: `invalid HTTP version`
/// alone did not.
fn unparsable_http1(what: &str, problem: impl std::fmt::Display, answer: &[u8]) -> Failure {
    match crate::proto::is_tls_record(answer) {
        true => Failure::protocol(format!(
            "{what}: {problem} (the server answered with TLS: it expects https://)"
        ))
        .showing(Symptom::TlsPort),
        false => Failure::protocol(format!("{what}: {problem}")),
    }
}

/// URLs whose request head or fields are prepared once per thread (HTTP/2 `:path` fields, HTTP/3
/// HEADERS frames); the ones after them are encoded per request, so that a long `-i` list costs
/// no memory per URL in every thread and connection.
const PREPARED_PATHS: usize = 1000;

/// When a connection may send its next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NextRequest {
    /// Now: the request is counted as sent, with these times.
    Now(RequestStart),
    /// Not before this time (`--rate`); ask again then.
    At(Instant),
    /// Never: the budget is spent or the run is stopping.
    Done,
}

/// Bytes one thread reads at a time, shared by its connections.
pub(crate) const READ_BUFFER: usize = 256 * 1024;

/// The buffer a thread's connections read into, one at a time.
pub(crate) fn read_buffer() -> RefCell<Vec<u8>> {
    RefCell::new(vec![0; READ_BUFFER])
}

/// What all connections of one runner thread share. Single-threaded: interior mutability, no locks.
pub(crate) struct ThreadShared {
    /// The run's plan.
    pub(crate) plan: Arc<RunPlan>,
    /// The run's request budget (shared with other threads).
    pub(crate) budget: Arc<Budget>,
    /// This thread's measurements.
    pub(crate) recorder: RefCell<Recorder>,
    /// This thread's byte counts.
    pub(crate) wire: Rc<WireMeter>,
    /// This thread's schedule, with `--rate`.
    pub(crate) pacer: Option<Pacer>,
    /// This thread's part of `--log-file`.
    pub(crate) request_log: Option<RefCell<RequestLog>>,
    /// The buffer this thread's connections read into, one at a time.
    pub(crate) read_buffer: RefCell<Vec<u8>>,
    /// Requests the server never processed, waiting for a connection to send them again.
    pub(crate) retries: RefCell<VecDeque<Retry>>,
    /// The run-wide number of this thread's first client slot (`{conn}` counts from it).
    pub(crate) first_slot: u64,
    /// This thread's TLS settings (https): the plan's, with a session cache of the thread's own
    /// under `--tls-resume`.
    pub(crate) tls: Option<crate::plan::TlsPlan>,
    /// Per client slot, the index of the next path in turn: it outlives the slot's connections,
    /// so churn (`--requests-per-connection`, `--no-keepalive`) keeps the keep-alive mix.
    pub(crate) path_cursors: Vec<Cell<usize>>,
}

/// A request the server never processed, to be sent again.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Retry {
    /// Its first scheduled send (kept: latency counts from it), path and retries so far.
    start: RequestStart,
    /// Why it goes again (goaway, refused, closed): what it fails as if no attempt gets through.
    kind: ErrorKind,
}

impl Supply for ThreadShared {
    fn budget(&self) -> &Budget {
        &self.budget
    }

    fn pacer(&self) -> Option<&Pacer> {
        self.pacer.as_ref()
    }

    fn churned(&self) -> bool {
        self.plan.requests_per_connection.is_some()
    }

    /// A slot must connect for them even when the budget is spent.
    fn has_retries(&self) -> bool {
        !self.retries.borrow().is_empty()
    }
}

impl ThreadShared {
    /// Fails the requests still waiting to be sent again once the thread's connections are
    /// done (at `now`): none could carry them.
    pub(crate) fn fail_unsent_retries(&self, now: Instant) {
        let mut recorder = self.recorder.borrow_mut();
        for Retry { start, kind } in self.retries.borrow_mut().drain(..) {
            if recorder.is_measured(start.intended) {
                recorder.requests_failed(1, kind);
                recorder.path_failed(start.path);
                if let Some(log) = &self.request_log {
                    log.borrow_mut().record(LogEntry {
                        start,
                        response: None,
                        end: now,
                        connection: 0,
                        protocol: None,
                    });
                }
            }
        }
    }
}

/// The state of one live connection that outlives its driver (the runner reads it afterwards).
#[derive(Debug, Default)]
pub(crate) struct ConnState {
    /// The connection's number, unique in the process (for `--log-file`).
    pub(crate) id: u64,
    /// The protocol it speaks, once known.
    pub(crate) protocol: Cell<Option<Protocol>>,
    /// Requests sent on this connection.
    pub(crate) requests: Cell<u64>,
    /// Measured requests sent on this connection and not yet finished.
    pub(crate) in_flight: Cell<u64>,
    /// Responses completed on this connection: whether the server made progress on it.
    pub(crate) completed: Cell<u64>,
    /// The send time `--rate` told this connection to come back at while it waits ([`Pacer`]),
    /// carried over from its slot's connection before it (the slot keeps the time it was told).
    pub(crate) come_back_at: Cell<Option<Instant>>,
    /// A request taken from the budget for this connection before it opened
    /// (`--requests-per-connection`), not sent yet: its first request uses it.
    pub(crate) reserved: Cell<bool>,
    /// The send time taken from the schedule for that request before connecting (`--rate` with
    /// churn, see [`reserve`]): its intended start.
    pub(crate) scheduled: Cell<Option<Instant>>,
    /// The steered run's connection generation when it opened ([`Pacer::generation`]).
    pub(crate) generation: u64,
}

impl ConnState {
    /// Whether the connection has carried its `--requests-per-connection`, or a steered run
    /// renewed its connections since it opened: it takes no more requests and closes once they
    /// are answered, and its slot connects again.
    pub(crate) fn retiring(&self, shared: &ThreadShared) -> bool {
        shared
            .plan
            .requests_per_connection
            .is_some_and(|limit| self.requests.get() >= limit)
            || shared
                .pacer
                .as_ref()
                .is_some_and(|pacer| pacer.generation() != self.generation)
    }
}

/// A session's handle on the world while it drives one connection: it takes requests from the
/// run's budget and schedule, and records what became of them.
#[derive(Clone, Copy)]
pub(crate) struct Ledger<'a> {
    shared: &'a ThreadShared,
    conn: &'a ConnState,
    slot: usize,
}

impl<'a> Ledger<'a> {
    /// A ledger for client slot `slot` (a thread-local index) on connection `conn`.
    pub(crate) fn new(shared: &'a ThreadShared, conn: &'a ConnState, slot: usize) -> Self {
        Ledger { shared, conn, slot }
    }

    /// The next request this connection may send at `now` (the caller's clock): now (it is
    /// counted as sent, `now` its actual start), not before some time (`--rate`), or never (the budget is spent or the run is stopping, and no request
    /// waits to be sent again). A request waiting to be sent again goes first, at once: it takes
    /// nothing from the budget or the schedule and was counted as started the first time.
    pub(crate) fn next_request(&self, now: Instant) -> NextRequest {
        if self.conn.retiring(self.shared) {
            return NextRequest::Done;
        }
        let retry = self.shared.retries.borrow_mut().pop_front();
        if let Some(Retry { start, .. }) = retry {
            let start = RequestStart {
                actual: now,
                sequence: self.next_sequence(),
                ..start
            };
            if self.shared.recorder.borrow().is_measured(start.intended) {
                self.conn.in_flight.set(self.conn.in_flight.get() + 1);
            }
            return NextRequest::Now(start);
        }
        let scheduled = self.conn.scheduled.take();
        let intended = match (scheduled, &self.shared.pacer) {
            (Some(intended), _) => intended,
            (None, Some(pacer)) => match pacer.due(now) {
                Due::Now(intended) => intended,
                Due::Wait => return NextRequest::At(pacer.come_back_at(&self.conn.come_back_at)),
                Due::Recheck(at) => return NextRequest::At(at),
                Due::Ended => {
                    pacer.wake.notify_waiters();
                    return NextRequest::Done;
                }
            },
            (None, None) => now,
        };
        if !(self.conn.reserved.replace(false) || self.shared.budget.try_take()) {
            if let Some(pacer) = &self.shared.pacer {
                pacer.wake.notify_waiters();
            }
            return NextRequest::Done;
        }
        if let Some(pacer) = self.shared.pacer.as_ref().filter(|_| scheduled.is_none()) {
            pacer.taken(intended);
        }
        let mut start = RequestStart::first(intended, now, self.next_sequence());
        if self.shared.plan.request.numbered {
            start.number = self.shared.budget.next_number();
        }
        let mut recorder = self.shared.recorder.borrow_mut();
        if recorder.is_measured(intended) {
            self.conn.in_flight.set(self.conn.in_flight.get() + 1);
            recorder.request_started(start);
        }
        NextRequest::Now(start)
    }

    /// Whether a request may still come: the budget is not spent or a request waits to be sent
    /// again (the HTTP/3 engine opens no stream for a request that cannot come).
    pub(crate) fn may_have_more(&self) -> bool {
        (self.conn.reserved.get() || self.shared.budget.has_more() || self.shared.has_retries())
            && !self.conn.retiring(self.shared)
    }

    /// Renders `template`, `part` of the request `start` (see [`Rng::for_request`]), into
    /// `out`: `{seq}` is the request's number, `{conn}` this slot's run-wide number.
    pub(crate) fn render(
        &self,
        template: &crate::plan::template::Template,
        start: &RequestStart,
        part: u64,
        out: &mut Vec<u8>,
    ) {
        template.render(
            out,
            &mut Draw {
                seq: start.number,
                conn: self.shared.first_slot + self.slot as u64,
                rng: Rng::for_request(self.shared.plan.seed, start.number, part),
            },
        );
    }

    /// The path of a request about to be sent: a request sent again keeps its own, a new one
    /// takes the slot's next in turn (as h2load does per client, across the slot's connections),
    /// or a random one with `--urls-random` (and remembers it, should it be sent again).
    pub(crate) fn pick_path(&self, start: &mut RequestStart) -> usize {
        if !start.resent {
            let plan = &self.shared.plan;
            let count = plan.request.paths.len();
            let index = if plan.request.random_paths {
                Rng::for_request(plan.seed, start.number, PATH_CHOICE).below(count as u64) as usize
            } else {
                let cursor = &self.shared.path_cursors[self.slot];
                let index = cursor.get() % count;
                cursor.set(index + 1);
                index
            };
            start.path = u32::try_from(index).expect("paths are counted in u32");
        }
        start.path as usize
    }

    /// The plan's path at `index` (as given, before any rendering).
    pub(crate) fn path(&self, index: usize) -> &'a str {
        &self.shared.plan.request.paths[index]
    }

    /// Requests this connection has taken so far.
    pub(crate) fn requests_taken(&self) -> u64 {
        self.conn.requests.get()
    }

    /// Completes when the schedule calls waiting connections back early (never without a
    /// schedule): it ended, a send time came that no connection waits for, or a steered run's
    /// rate changed. A connection waiting for its send time then asks again at once.
    pub(crate) async fn schedule_calls_back(&self) {
        match &self.shared.pacer {
            Some(pacer) => pacer.calls_back().await,
            None => std::future::pending().await,
        }
    }

    /// Numbers a request sent on this connection (from 1).
    fn next_sequence(&self) -> u32 {
        let sequence = self.conn.requests.get() + 1;
        self.conn.requests.set(sequence);
        u32::try_from(sequence).unwrap_or(u32::MAX)
    }

    /// A request the server provably never processed (`kind`: goaway, refused or closed, learnt
    /// at `at`) goes
    /// back to the thread's queue, for this connection or another to send again; once it has
    /// been sent `--max-retries` times more, it fails with `kind`. `false` with `--no-retry`:
    /// nothing was done, the caller counts it as before.
    ///
    /// A re-send after a GOAWAY or a close does not count against `--max-retries` when the
    /// connection had completed a request: the server is rotating connections while it serves
    /// (Apache ends every upgraded connection that runs out of streams), not refusing work.
    /// The run still ends: every such re-send follows a completed request. A refused stream
    /// always counts, as it is re-sent on the same connection.
    pub(crate) fn retry(&self, start: RequestStart, kind: ErrorKind, at: Instant) -> bool {
        let Some(max_retries) = self.shared.plan.max_retries else {
            return false;
        };
        let charged = kind == ErrorKind::Refused || self.conn.completed.get() == 0;
        if charged && start.retries >= max_retries {
            self.note_error(|| {
                format!(
                    "the server did not process a request in {} attempts ({})",
                    u32::from(max_retries) + 1,
                    kind.name()
                )
            });
            self.fail(start, kind, at);
            return true;
        }
        let mut recorder = self.shared.recorder.borrow_mut();
        if recorder.is_measured(start.intended) {
            self.conn.in_flight.set(self.conn.in_flight.get() - 1);
            recorder.request_retried(kind);
        }
        let start = RequestStart {
            retries: start.retries + u8::from(charged),
            resent: true,
            ..start
        };
        self.shared
            .retries
            .borrow_mut()
            .push_back(Retry { start, kind });
        true
    }

    /// Records a completed response, judged by the response checks if the run has any (`check`
    /// is what its headers and body showed of them).
    pub(crate) fn complete(&self, sample: ResponseSample, check: &ResponseCheck) {
        self.conn.completed.set(self.conn.completed.get() + 1);
        let mut recorder = self.shared.recorder.borrow_mut();
        if recorder.is_measured(sample.start.intended) {
            self.conn.in_flight.set(self.conn.in_flight.get() - 1);
            match &self.shared.plan.checks {
                None => recorder.response(self.slot, sample),
                Some(checks) => match checks.judge(sample.grpc.unwrap_or(sample.status), check) {
                    Verdict::Passed => recorder.response_passed(self.slot, sample),
                    Verdict::ErrorStatus => recorder.response(self.slot, sample),
                    Verdict::Failed(mismatch) => {
                        recorder
                            .response_failed_check(self.slot, sample, || checks.describe(mismatch))
                    }
                },
            }
            let response = Some((sample.first_byte, sample.status));
            self.log(sample.start, response, sample.end);
        }
    }

    /// Responses completed on this connection so far.
    pub(crate) fn responses_completed(&self) -> u64 {
        self.conn.completed.get()
    }

    /// A read at `at` completed `responses` responses whose newest byte had waited `waited` in
    /// the kernel.
    pub(crate) fn received_after(&self, at: Instant, waited: Duration, responses: u64) {
        self.shared
            .recorder
            .borrow_mut()
            .received_after(at, waited, responses);
    }

    /// Records a request that ended at `at` without a complete response.
    pub(crate) fn fail(&self, start: RequestStart, kind: ErrorKind, at: Instant) {
        let mut recorder = self.shared.recorder.borrow_mut();
        if recorder.is_measured(start.intended) {
            self.conn.in_flight.set(self.conn.in_flight.get() - 1);
            recorder.requests_failed(1, kind);
            recorder.path_failed(start.path);
            self.log(start, None, at);
        }
    }

    /// The stream of request `start` sent `bytes`, its messages, as the protocol counts them
    /// when it commits them to the stream (the layer's round trips count from when one has
    /// left: [`MessageStream::left`]).
    pub(crate) fn message_sent(&self, start: &RequestStart, bytes: MessageBytes) {
        self.shared
            .recorder
            .borrow_mut()
            .message_sent(start.intended, bytes);
    }

    /// `count` messages of the stream of request `start` (its state: `stream`) arrived whole
    /// at `now`: the message layer's figures for each.
    pub(crate) fn messages_received(
        &self,
        start: &RequestStart,
        stream: &mut MessageStream,
        count: u64,
        now: Instant,
    ) {
        let mut recorder = self.shared.recorder.borrow_mut();
        for _ in 0..count {
            recorder.message_received(start.intended, stream.received(now));
        }
    }

    /// The response to request `start` began an event stream.
    pub(crate) fn event_stream_opened(&self, start: &RequestStart) {
        self.shared
            .recorder
            .borrow_mut()
            .event_stream_opened(start.intended);
    }

    /// The stream of request `start` ended having received `received`, its messages as its
    /// framing read them (the bytes of one cut short included).
    pub(crate) fn message_stream_ended(&self, start: &RequestStart, received: MessageBytes) {
        self.shared
            .recorder
            .borrow_mut()
            .message_stream_ended(start.intended, received);
    }

    /// A gRPC call `start` ended with status `code`, not OK, saying `text` in its
    /// `grpc-message`: the first such text is the report's.
    pub(crate) fn grpc_status_message(&self, start: &RequestStart, code: u64, text: &str) {
        self.shared
            .recorder
            .borrow_mut()
            .grpc_status_message(start.intended, code, text);
    }

    /// Records a request whose stream the server reset with `code` (read at `at`).
    pub(crate) fn fail_stream_reset(
        &self,
        start: RequestStart,
        code: crate::proto::ResetCode,
        at: Instant,
    ) {
        self.fail(start, ErrorKind::StreamReset, at);
        self.shared
            .recorder
            .borrow_mut()
            .stream_reset(start.intended, code);
    }

    /// Records a connection that failed with no request to blame: before it became usable, or
    /// with a protocol error while idle.
    pub(crate) fn connection_failed(&self, failure: Failure) {
        self.shared.recorder.borrow_mut().connect_failed(failure);
    }

    /// Adds a measured request to `--log-file`, if there is one.
    fn log(&self, start: RequestStart, response: Option<(Instant, u16)>, end: Instant) {
        if let Some(log) = &self.shared.request_log {
            log.borrow_mut().record(LogEntry {
                start,
                response,
                end,
                connection: self.conn.id,
                protocol: self.conn.protocol.get(),
            });
        }
    }

    /// Tells the user, once per run, why a connection was lost.
    pub(crate) fn note_error(&self, message: impl FnOnce() -> String) {
        let mut recorder = self.shared.recorder.borrow_mut();
        if recorder.first_error.is_none() {
            recorder.note_error(message());
        }
    }

    /// Keeps what `failure` says about the server, if it is the first to say something.
    pub(crate) fn note_symptom(&self, failure: &Failure) {
        if failure.symptom.is_some() {
            self.shared.recorder.borrow_mut().note_symptom(failure);
        }
    }

    /// A response completed with `status`: if it is a 4xx/5xx, the run keeps its status and the
    /// first bytes of its body (`body`) unless it has one, and the connection gathers no more
    /// (one per connection at most, so nothing is copied once the run has its one).
    pub(crate) fn error_response(&self, status: u16, body: &mut crate::proto::ErrorBody) {
        if status < 400 {
            return;
        }
        let mut recorder = self.shared.recorder.borrow_mut();
        if recorder.wants_error_body() {
            recorder.error_response(crate::recorder::ErrorResponse {
                status,
                body: body.bytes().to_vec(),
            });
        }
        body.stop();
    }

    /// Records that the client closed this connection itself (a timeout), not the server.
    pub(crate) fn closed_by_client(&self) {
        self.shared.recorder.borrow_mut().closed_by_client();
    }

    /// Records the protocol this connection settled on.
    pub(crate) fn note_protocol(&self, protocol: Protocol) {
        self.conn.protocol.set(Some(protocol));
        self.shared.recorder.borrow_mut().note_protocol(protocol);
    }

    /// Tells the user, once per run, something that is not an error.
    pub(crate) fn warn(&self, message: impl FnOnce() -> String) {
        self.shared.recorder.borrow_mut().warn(message());
    }

    /// Records the per-connection concurrency this connection settled on.
    pub(crate) fn note_effective_concurrency(&self, value: usize) {
        self.shared
            .recorder
            .borrow_mut()
            .note_effective_concurrency(value);
    }

    /// The thread's byte counters.
    pub(crate) fn wire(&self) -> &'a WireMeter {
        &self.shared.wire
    }
}

/// The earlier of two optional times.
pub(crate) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// How an I/O error on an established connection is counted.
pub(crate) fn io_error_kind(error: &io::Error) -> ErrorKind {
    match error.kind() {
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::BrokenPipe
        | io::ErrorKind::ConnectionAborted => ErrorKind::Reset,
        _ => ErrorKind::Closed,
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod timing_tests;
