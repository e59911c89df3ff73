//! Protocol engines: each drives one established connection until the budget is spent or the
//! connection is lost. The runner owns connecting, reconnecting and timeouts around them; engines
//! report every request through a [`Session`] and know nothing of reports.
//!
//! Adding a protocol means adding a module with an [`Engine`] and one line in [`for_plan`].

pub(crate) mod h1;
pub(crate) mod h2;

pub use h2::error_code_name;
mod h2c_upgrade;

use std::cell::{Cell, RefCell};
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use futures_util::future::LocalBoxFuture;

use crate::budget::Budget;
use crate::net::{TappedIo, Transport};
use http::{HeaderMap, HeaderValue};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::plan::{Negotiation, Protocol, RequestTemplate, RunPlan};
use crate::recorder::{ErrorKind, Recorder, RequestStart, ResponseSample, WireMeter};
use crate::request_log::{Entry as LogEntry, RequestLog};
use crate::tls::TlsInfo;

/// The connection an engine is handed.
pub type Io = TappedIo<Transport>;

/// How a connection ended, from the runner's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnEnd {
    /// No more requests to send on it: the budget is spent or the run is stopping.
    Finished,
    /// The connection closed or failed while there was still work: reconnect.
    Lost,
}

/// One protocol's way of driving a connection.
pub trait Engine {
    /// Drives `io` until the budget is spent or the connection is lost, reporting through `session`.
    fn drive<'a>(&'a self, io: Io, session: Session<'a>) -> LocalBoxFuture<'a, ConnEnd>;
}

/// The engines of one runner thread; each connection is driven by the one its protocol needs.
pub struct Engines {
    http1: Box<dyn Engine>,
    h2: Box<dyn Engine>,
    h2c_upgrade: Option<Box<dyn Engine>>,
}

impl Engines {
    /// Prepares the engines a plan can need (once per runner thread).
    pub fn new(plan: &RunPlan) -> Self {
        let h2c_upgrade: Option<Box<dyn Engine>> = match plan.negotiation {
            Negotiation::H2cUpgrade => Some(Box::new(h2c_upgrade::H2cUpgrade::new(plan))),
            _ => None,
        };
        Engines {
            http1: Box::new(h1::Http1::new(plan)),
            h2: Box::new(h2::H2::new(plan)),
            h2c_upgrade,
        }
    }

    /// The engine for an established connection and, when it is already known, the protocol it
    /// will speak (an h2c upgrade finds out on the connection). `Err` says why the connection is unusable.
    pub fn pick(
        &self,
        negotiation: Negotiation,
        tls: Option<&TlsInfo>,
    ) -> Result<(&dyn Engine, Option<Protocol>), String> {
        let protocol = match negotiation {
            Negotiation::Direct(protocol) => protocol,
            Negotiation::H2cUpgrade => {
                let engine = self
                    .h2c_upgrade
                    .as_deref()
                    .expect("built for upgrade plans");
                return Ok((engine, None));
            }
            Negotiation::Alpn { require } => {
                let alpn = tls.and_then(|info| info.alpn.as_deref());
                let selected = if alpn == Some("h2") {
                    Protocol::H2
                } else {
                    Protocol::Http1
                };
                if let Some(required) = require.filter(|required| *required != selected) {
                    return Err(format!(
                        "the server selected {} by ALPN, but --proto {} requires {}",
                        alpn.unwrap_or("nothing (HTTP/1.1)"),
                        if required == Protocol::H2 { "h2" } else { "h1" },
                        required.id()
                    ));
                }
                selected
            }
        };
        let engine = match protocol {
            Protocol::Http1 => &self.http1,
            Protocol::H2c | Protocol::H2 => &self.h2,
        };
        Ok((engine.as_ref(), Some(protocol)))
    }
}

/// When a connection may send its next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// Now: the request is counted as sent, with these times.
    Now(RequestStart),
    /// Not before this time (`--rate`); ask again then.
    At(Instant),
    /// Never: the budget is spent or the run is stopping.
    Done,
}

/// A thread's share of `--rate`: the schedule its connections take send times from, in turn.
#[derive(Debug)]
pub struct Pacer {
    /// Time between two scheduled requests of this thread.
    pub period: std::time::Duration,
    /// The next scheduled send time.
    pub next: Cell<Instant>,
}

/// What all connections of one runner thread share. Single-threaded: interior mutability, no locks.
pub struct ThreadShared {
    /// The run's plan.
    pub plan: Arc<RunPlan>,
    /// The run's request budget (shared with other threads).
    pub budget: Arc<Budget>,
    /// This thread's measurements.
    pub recorder: RefCell<Recorder>,
    /// This thread's byte counts.
    pub wire: Rc<WireMeter>,
    /// This thread's schedule, with `--rate`.
    pub pacer: Option<Pacer>,
    /// This thread's part of `--log-file`.
    pub request_log: Option<RefCell<RequestLog>>,
}

/// The state of one live connection that outlives its engine future (for connection timeouts).
#[derive(Debug, Default)]
pub struct ConnState {
    /// The connection's number, unique in the process (for `--log-file`).
    pub id: u64,
    /// The protocol it speaks, once known.
    pub protocol: Cell<Option<Protocol>>,
    /// Requests sent on this connection.
    pub requests: Cell<u64>,
    /// Measured requests sent on this connection and not yet finished.
    pub in_flight: Cell<u64>,
}

/// An engine's handle on the world while it drives one connection.
#[derive(Clone, Copy)]
pub struct Session<'a> {
    shared: &'a ThreadShared,
    conn: &'a ConnState,
    slot: usize,
}

impl<'a> Session<'a> {
    /// A session for client slot `slot` (a thread-local index) on connection `conn`.
    pub fn new(shared: &'a ThreadShared, conn: &'a ConnState, slot: usize) -> Self {
        Session { shared, conn, slot }
    }

    /// The run's plan.
    pub fn plan(&self) -> &'a RunPlan {
        &self.shared.plan
    }

    /// The next request this connection may send: now (it is counted as sent), not before some
    /// time (`--rate`), or never (the budget is spent or the run is stopping).
    pub fn next_request(&self) -> Slot {
        let now = Instant::now();
        let intended = match &self.shared.pacer {
            Some(pacer) if pacer.next.get() > now => return Slot::At(pacer.next.get()),
            Some(pacer) => pacer.next.get(),
            None => now,
        };
        if !self.shared.budget.try_take() {
            return Slot::Done;
        }
        if let Some(pacer) = &self.shared.pacer {
            pacer.next.set(intended + pacer.period);
        }
        let sequence = self.conn.requests.get() + 1;
        self.conn.requests.set(sequence);
        let start = RequestStart {
            intended,
            actual: now,
            sequence: u32::try_from(sequence).unwrap_or(u32::MAX),
        };
        let mut recorder = self.shared.recorder.borrow_mut();
        if recorder.is_measured(intended) {
            self.conn.in_flight.set(self.conn.in_flight.get() + 1);
            recorder.request_started(start);
        }
        Slot::Now(start)
    }

    /// Waits for and takes the next request (for engines that have nothing else to do meanwhile).
    pub async fn next_request_when_due(&self) -> Option<RequestStart> {
        loop {
            match self.next_request() {
                Slot::Now(start) => return Some(start),
                Slot::At(time) => tokio::time::sleep_until(time.into()).await,
                Slot::Done => return None,
            }
        }
    }

    /// Records a completed response.
    pub fn complete(&self, sample: ResponseSample) {
        let mut recorder = self.shared.recorder.borrow_mut();
        if recorder.is_measured(sample.start.intended) {
            self.conn.in_flight.set(self.conn.in_flight.get() - 1);
            recorder.response(self.slot, sample);
            let response = Some((sample.first_byte, sample.status));
            self.log(sample.start, response, sample.end);
        }
    }

    /// Records a request that ended without a complete response.
    pub fn fail(&self, start: RequestStart, kind: ErrorKind) {
        let mut recorder = self.shared.recorder.borrow_mut();
        if recorder.is_measured(start.intended) {
            self.conn.in_flight.set(self.conn.in_flight.get() - 1);
            recorder.requests_failed(1, kind);
            self.log(start, None, Instant::now());
        }
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

    /// Records a request whose HTTP/2 stream the server reset with `code`.
    pub fn fail_stream_reset(&self, start: RequestStart, code: u32) {
        self.fail(start, ErrorKind::StreamReset);
        let mut recorder = self.shared.recorder.borrow_mut();
        if recorder.is_measured(start.intended) {
            *recorder.stream_reset_codes.entry(code).or_default() += 1;
        }
    }

    /// Tells the user, once per run, why a connection was lost.
    pub fn note_error(&self, message: impl FnOnce() -> String) {
        let mut recorder = self.shared.recorder.borrow_mut();
        if recorder.first_error.is_none() {
            recorder.note_error(message());
        }
    }

    /// Records the protocol this connection settled on.
    pub fn note_protocol(&self, protocol: Protocol) {
        self.conn.protocol.set(Some(protocol));
        self.shared.recorder.borrow_mut().note_protocol(protocol);
    }

    /// Tells the user, once per run, something that is not an error.
    pub fn warn(&self, message: impl FnOnce() -> String) {
        self.shared.recorder.borrow_mut().warn(message());
    }

    /// Records the per-connection concurrency this connection settled on.
    pub fn note_effective_concurrency(&self, value: usize) {
        self.shared
            .recorder
            .borrow_mut()
            .note_effective_concurrency(value);
    }

    /// The thread's byte counters.
    pub fn wire(&self) -> &'a WireMeter {
        &self.shared.wire
    }
}

/// The template's headers (less those named in `skip`) as a map, with Content-Length when the
/// request declares one. Engines whose library takes a `HeaderMap` clone this per request.
pub fn header_map(template: &RequestTemplate, skip: &[&str]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (name, value) in &template.headers {
        if !skip.contains(&name.as_str()) {
            headers.append(name.clone(), value.clone());
        }
    }
    if let Some(length) = template.content_length() {
        headers.insert(http::header::CONTENT_LENGTH, HeaderValue::from(length));
    }
    headers
}

/// How an I/O error on an established connection is counted.
pub fn io_error_kind(error: &io::Error) -> ErrorKind {
    match error.kind() {
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::BrokenPipe
        | io::ErrorKind::ConnectionAborted => ErrorKind::Reset,
        _ => ErrorKind::Closed,
    }
}

/// How waiting on a connection ended.
#[derive(Debug)]
pub enum Waited<T> {
    /// The I/O step finished.
    Io(T),
    /// The request deadline passed first.
    TimedOut,
    /// The wake time (the next scheduled send) came first.
    Woke,
}

/// Runs an I/O step until it finishes, the oldest request's `deadline` passes, or `wake` comes.
/// The steps engines pass here keep their state outside the future, so stopping one loses nothing.
pub async fn wait_for<F: std::future::Future>(
    step: F,
    deadline: Option<Instant>,
    wake: Option<Instant>,
) -> Waited<F::Output> {
    let until = match (deadline, wake) {
        (Some(deadline), Some(wake)) => Some(deadline.min(wake)),
        (deadline, wake) => deadline.or(wake),
    };
    let Some(until) = until else {
        return Waited::Io(step.await);
    };
    match tokio::time::timeout_at(until.into(), step).await {
        Ok(output) => Waited::Io(output),
        Err(_) if deadline.is_some_and(|deadline| Instant::now() >= deadline) => Waited::TimedOut,
        Err(_) => Waited::Woke,
    }
}

/// Cycles through the plan's paths, as h2load does per client.
#[derive(Debug, Default)]
pub struct PathCycle {
    next: Cell<usize>,
}

impl PathCycle {
    /// A cycle whose first path is the one at `index`.
    pub fn starting_at(index: usize) -> Self {
        PathCycle {
            next: Cell::new(index),
        }
    }

    /// The index of the next path among `count`.
    pub fn next(&self, count: usize) -> usize {
        let index = self.next.get() % count;
        self.next.set(index + 1);
        index
    }
}

/// Writes what is queued and reads what has arrived, in one poll, so a long pipeline of writes never
/// blocks behind responses the server is waiting to send. Resolves with the bytes read (0 at EOF).
pub fn transfer<S: AsyncRead + AsyncWrite + Unpin>(
    io: &mut S,
    outgoing: &mut Vec<u8>,
    written: &mut usize,
    incoming: &mut [u8],
    cx: &mut Context<'_>,
) -> Poll<io::Result<usize>> {
    while *written < outgoing.len() {
        match Pin::new(&mut *io).poll_write(cx, &outgoing[*written..]) {
            Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
            Poll::Ready(Ok(count)) => *written += count,
            Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
            Poll::Pending => break,
        }
    }
    if *written == outgoing.len() && *written > 0 {
        outgoing.clear();
        *written = 0;
        if let Poll::Ready(Err(error)) = Pin::new(&mut *io).poll_flush(cx) {
            return Poll::Ready(Err(error));
        }
    }
    // Take everything that has arrived, so one round of processing (and one write) covers it all.
    let mut total = 0;
    while total < incoming.len() {
        let mut buffer = ReadBuf::new(&mut incoming[total..]);
        match Pin::new(&mut *io).poll_read(cx, &mut buffer) {
            Poll::Ready(Ok(())) if buffer.filled().is_empty() => break,
            Poll::Ready(Ok(())) => total += buffer.filled().len(),
            Poll::Ready(Err(error)) if total == 0 => return Poll::Ready(Err(error)),
            Poll::Pending if total == 0 => return Poll::Pending,
            Poll::Ready(Err(_)) | Poll::Pending => break,
        }
    }
    Poll::Ready(Ok(total))
}
