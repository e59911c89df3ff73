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

mod quic;

use std::cell::{Cell, RefCell};
use std::fmt::Write as _;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::stream::{FuturesUnordered, StreamExt};
use futures_util::FutureExt;
use http::Method;
use quinn::{Connection, ReadError, RecvStream, SendStream, VarInt, WriteError};
use tokio::sync::Notify;

use super::clock::Timer;
use super::driver::ConnLimits;
use super::earliest;
use super::h2::CONNECTION_SPECIFIC;
use super::render::Renderer;
use super::{ConnEnd, Ledger, Slot, PREPARED_PATHS};
use crate::cli::units::format_micros;
use crate::observe::trace::ConnTrace;
use crate::plan::RunPlan;
use crate::proto::check::Checks;
use crate::proto::h3::{
    client_control_stream, encode_field_section, headers_frame, read_varint, write_frame_head,
    ControlEvent, H3Error, ResponseEvent, ResponseParser, Section, UniStreamParser, DATA,
    H3_CLOSED_CRITICAL_STREAM, H3_MESSAGE_ERROR, H3_NO_ERROR, H3_REQUEST_CANCELLED,
    H3_REQUEST_REJECTED, H3_STREAM_CREATION_ERROR, MAX_HEADER_LIST, STREAM_CONTROL,
    STREAM_QPACK_DECODER, STREAM_QPACK_ENCODER,
};
use crate::proto::ResetCode;
use crate::recorder::{ErrorKind, Failure, RequestStart, ResponseSample};
use crate::runner::tls::TlsInfo;
pub(crate) use quic::QuicContext;

#[cfg(test)]
mod tests;

/// Requests prepared once per thread: a HEADERS frame for each of the first [`PREPARED_PATHS`]
/// paths, the body's DATA frame, the opening of the client's control stream.
pub(crate) struct H3Template {
    headers: Vec<Bytes>,
    /// The fields of an untemplated request, with an empty `:path` at [`PATH_FIELD`], for the
    /// paths past the prepared ones.
    fields: Vec<(String, Vec<u8>)>,
    /// The DATA frame's type and length for the body (empty without a body).
    body_head: Bytes,
    body: Bytes,
    control: Bytes,
    lanes: usize,
    request_timeout: Option<Duration>,
    /// How long a lane may wait for stream credit while the connection holds no stream:
    /// `--request-timeout`, else the QUIC idle timeout.
    credit_wait: Duration,
    checks: Option<Arc<Checks>>,
    /// Templated requests, rendered one by one.
    renderer: Option<Renderer>,
    /// Whether requests are HEAD: their responses have no content.
    head: bool,
}

impl H3Template {
    pub(crate) fn new(plan: &RunPlan) -> Self {
        let template = &plan.request;
        let mut fields: Vec<(String, Vec<u8>)> = vec![
            (":method".into(), template.method.as_str().into()),
            (":scheme".into(), b"https".to_vec()),
            (":authority".into(), template.authority.as_bytes().to_vec()),
            (":path".into(), Vec::new()),
        ];
        for (name, value) in &template.headers {
            if !CONNECTION_SPECIFIC.contains(&name.as_str()) {
                fields.push((name.as_str().into(), value.as_bytes().to_vec()));
            }
        }
        if let Some(length) = template.content_length() {
            fields.push(("content-length".into(), length.to_string().into_bytes()));
        }
        let headers = template
            .paths
            .iter()
            .take(PREPARED_PATHS)
            .map(|path| headers_for(&fields, path.as_bytes()))
            .collect();
        let body = if template.method == Method::HEAD {
            Bytes::new()
        } else {
            template.body.clone()
        };
        let mut body_head = Vec::new();
        if !body.is_empty() {
            write_frame_head(&mut body_head, DATA, body.len() as u64);
        }
        H3Template {
            headers,
            fields,
            body_head: body_head.into(),
            body,
            control: client_control_stream().into(),
            lanes: plan.max_concurrent,
            request_timeout: plan.timeouts.request,
            credit_wait: plan.timeouts.request.unwrap_or(plan.timeouts.quic_idle),
            checks: plan.checks.clone(),
            renderer: Renderer::new(template),
            head: template.method == Method::HEAD,
        }
    }

    /// The frames of request `start` for path `path`: HEADERS, the DATA frame's head and the
    /// body. A templated request is rendered into new buffers (quinn takes ownership of what it
    /// sends, so there is no buffer to reuse); literals only, QPACK's dynamic table is off.
    fn frames(&self, path: usize, start: &RequestStart, ledger: &Ledger<'_>) -> [Bytes; 3] {
        let Some(renderer) = &self.renderer else {
            let headers = match self.headers.get(path) {
                Some(prepared) => prepared.clone(),
                None => headers_for(&self.fields, ledger.path(path).as_bytes()),
            };
            return [headers, self.body_head.clone(), self.body.clone()];
        };
        let request = renderer.request();
        let mut path_value = Vec::new();
        renderer.path(path, start, ledger, &mut path_value);
        let mut rest: Vec<(&str, Vec<u8>)> = Vec::new();
        for (index, (name, _)) in request.headers.iter().enumerate() {
            if !CONNECTION_SPECIFIC.contains(&name.as_str()) {
                let mut value = Vec::new();
                renderer.header_value(index, start, ledger, &mut value);
                rest.push((name.as_str(), value));
            }
        }
        let body = if renderer.body_templated() && request.method != Method::HEAD {
            renderer.with_body(start, ledger, Bytes::copy_from_slice)
        } else {
            self.body.clone()
        };
        if let Some(length) = renderer.content_length(body.len()) {
            rest.push(("content-length", length.to_string().into_bytes()));
        }
        let mut fields: Vec<(&str, &[u8])> = vec![
            (":method", request.method.as_str().as_bytes()),
            (":scheme", b"https"),
            (":authority", request.authority.as_bytes()),
            (":path", &path_value),
        ];
        fields.extend(rest.iter().map(|(name, value)| (*name, value.as_slice())));
        let mut body_head = Vec::new();
        if !body.is_empty() {
            write_frame_head(&mut body_head, DATA, body.len() as u64);
        }
        [
            Bytes::from(headers_frame(&encode_field_section(&fields))),
            Bytes::from(body_head),
            body,
        ]
    }
}

/// Where `:path` is among an untemplated request's fields.
const PATH_FIELD: usize = 3;

/// The HEADERS frame of `fields` (an untemplated request's) with `path` as its `:path`.
fn headers_for(fields: &[(String, Vec<u8>)], path: &[u8]) -> Bytes {
    let fields: Vec<(&str, &[u8])> = fields
        .iter()
        .enumerate()
        .map(|(index, (name, value))| {
            let value = if index == PATH_FIELD { path } else { value };
            (name.as_str(), value)
        })
        .collect();
    Bytes::from(headers_frame(&encode_field_section(&fields)))
}

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
    /// The server's SETTINGS as the trace shows them, gathered until they end.
    settings_seen: RefCell<String>,
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
        let Some(trace) = &self.trace else {
            return;
        };
        let mut seen = self.settings_seen.borrow_mut();
        match event {
            ControlEvent::Setting { id, value } => {
                let separator = if seen.is_empty() { "" } else { ", " };
                let _ = write!(seen, "{separator}{}={value}", setting_name(id));
            }
            ControlEvent::SettingsDone => {
                let settings = std::mem::take(&mut *seen);
                trace.borrow().h3_line(format!(
                    "recv SETTINGS <{}> on the control stream",
                    if settings.is_empty() {
                        "none"
                    } else {
                        &settings
                    }
                ));
            }
            ControlEvent::Goaway(id) => trace
                .borrow()
                .h3_line(format!("recv GOAWAY <stream_id={id}>")),
        }
    }

    /// Shows a line of the `-v` trace, if this connection is traced.
    fn trace_line(&self, line: impl FnOnce() -> String) {
        if let Some(trace) = &self.trace {
            trace.borrow().h3_line(line());
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
        settings_seen: RefCell::default(),
        critical_opened: Cell::new(0),
    };
    shared.trace_line(|| describe_handshake(&conn, template, lanes_open));
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
    shared.trace_line(|| describe_end(&conn.stats()));
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

/// Opens the client's control stream with the client's SETTINGS, within the credit wait.
async fn open_control(shared: &Shared<'_>, timer: &impl Timer) -> Result<SendStream, Failure> {
    let lost = |error: quinn::ConnectionError| quic::connection_failure(&error);
    let limit = shared.template.credit_wait;
    let mut control = tokio::select! {
        opened = shared.conn.open_uni() => opened.map_err(lost)?,
        () = timer.sleep_until(Instant::now() + limit) => {
            shared.ledger.closed_by_client();
            return Err(Failure::new(
                ErrorKind::Timeout,
                format!(
                    "the server allows no unidirectional stream (initial_max_streams_uni 0): the client's HTTP/3 control stream waited {} for one",
                    format_micros(limit.as_micros() as f64)
                ),
            ));
        }
    };
    match control.write_chunk(shared.template.control.clone()).await {
        Ok(()) => {
            shared.trace_line(|| {
                format!(
                    "send SETTINGS <QPACK_MAX_TABLE_CAPACITY=0, QPACK_BLOCKED_STREAMS=0, MAX_FIELD_SECTION_SIZE={MAX_HEADER_LIST}> on control stream {}",
                    VarInt::from(control.id())
                )
            });
            Ok(control)
        }
        Err(WriteError::ConnectionLost(error)) => Err(lost(error)),
        Err(error) => Err(Failure::protocol(format!(
            "the server refused the client's control stream: {error}"
        ))),
    }
}

/// The connection cannot go on: the requests in flight fail with the failure's kind, except
/// those a GOAWAY said were not processed, which go again.
fn lose(shared: &Shared<'_>, failure: Failure) {
    let ledger = &shared.ledger;
    let mut failed = 0;
    for request in shared
        .in_flight
        .borrow_mut()
        .iter_mut()
        .filter_map(Option::take)
    {
        if shared.unprocessed(request.id) && ledger.retry(request.start, ErrorKind::Goaway) {
            continue;
        }
        shared.count_headers(&request);
        ledger.fail(request.start, failure.kind);
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

/// Accepts and reads the server's unidirectional streams; returns when one breaks the protocol
/// or the connection is lost.
async fn server_streams(shared: &Shared<'_>) -> Failure {
    let mut readers = FuturesUnordered::new();
    loop {
        tokio::select! {
            accepted = shared.conn.accept_uni() => match accepted {
                Ok(stream) => readers.push(read_server_stream(shared, stream)),
                Err(error) => return quic::connection_failure(&error),
            },
            Some(Err(failure)) = readers.next(), if !readers.is_empty() => return failure,
        }
    }
}

/// Reads one of the server's unidirectional streams to its end.
async fn read_server_stream(shared: &Shared<'_>, mut stream: RecvStream) -> Result<(), Failure> {
    let mut parser = UniStreamParser::default();
    loop {
        let critical = matches!(
            parser.kind(),
            Some(STREAM_CONTROL | STREAM_QPACK_ENCODER | STREAM_QPACK_DECODER)
        );
        if parser.kind().is_some() && !critical {
            // An unknown (reserved) stream type: not read (RFC 9114 §6.2.3).
            let _ =
                stream.stop(VarInt::from_u64(H3_STREAM_CREATION_ERROR).expect("a valid varint"));
            return Ok(());
        }
        let chunk = match stream.read_chunk(usize::MAX, true).await {
            Ok(Some(chunk)) => chunk,
            Ok(None) | Err(ReadError::Reset(_)) if critical => {
                return Err(shared.violation(H3Error {
                    code: H3_CLOSED_CRITICAL_STREAM,
                    reason: "the server closed its control or a QPACK stream",
                }))
            }
            Err(ReadError::ConnectionLost(error)) => return Err(quic::connection_failure(&error)),
            Ok(None) | Err(_) => return Ok(()),
        };
        shared.last_read.set(Instant::now());
        shared.ledger.wire().add_total(chunk.bytes.len() as u64);
        let known = parser.kind();
        parser
            .feed(&chunk.bytes, |event| shared.on_control(event))
            .map_err(|error| shared.violation(error))?;
        if let (None, Some(kind @ (STREAM_CONTROL | STREAM_QPACK_ENCODER | STREAM_QPACK_DECODER))) =
            (known, parser.kind())
        {
            shared.critical_opened(kind)?;
        }
        // The control stream shows in its SETTINGS line.
        if let (None, Some(kind)) = (known, parser.kind().filter(|kind| *kind != STREAM_CONTROL)) {
            shared.trace_line(|| {
                let name = match kind {
                    STREAM_QPACK_ENCODER => "QPACK encoder".to_owned(),
                    STREAM_QPACK_DECODER => "QPACK decoder".to_owned(),
                    other => format!("unknown type 0x{other:x}, not read"),
                };
                format!("recv stream {}: {name}", VarInt::from(stream.id()))
            });
        }
    }
}

/// How one request ended.
enum Outcome {
    Complete(ResponseSample),
    /// The server rejected it unprocessed (H3_REQUEST_REJECTED) or a GOAWAY says it was not
    /// processed: it may go again.
    Unprocessed(ErrorKind),
    /// The server reset the response stream with this code.
    Reset(u64),
    /// It failed on its own; the connection goes on.
    Failed(ErrorKind),
    /// Its response was malformed (RFC 9114 §4.1.2): a protocol error, its stream reset with
    /// H3_MESSAGE_ERROR; the connection goes on.
    Malformed,
}

/// One request lane: a stream at a time, a request on each, until the ledger says done.
async fn lane(
    shared: &Shared<'_>,
    index: usize,
    opened: Option<(SendStream, RecvStream)>,
    timer: &impl Timer,
) -> Result<(), Failure> {
    let ledger = shared.ledger;
    let mut parser = ResponseParser::checking(shared.template.checks.as_ref())
        .answering_head(shared.template.head);
    let mut opened = opened.map(|pair| Held::new(pair, &shared.streams_held));
    loop {
        if shared.goaway.get().is_some() || !ledger.may_have_more() {
            if let Some(stream) = opened.as_mut() {
                stream.cancel(H3_REQUEST_CANCELLED);
            }
            return Ok(());
        }
        let mut stream = match opened.take() {
            Some(stream) => stream,
            None => match open_stream(shared, timer).await? {
                Some(stream) => stream,
                None => continue,
            },
        };
        let Some(mut start) = take_request(shared, timer).await else {
            stream.cancel(H3_REQUEST_CANCELLED);
            return Ok(());
        };
        let path = ledger.pick_path(&mut start);
        let id = stream.id();
        shared.in_flight.borrow_mut()[index] = Some(InFlight {
            start,
            id,
            headers: (0, 0),
        });
        parser.reset();
        let outcome = exchange(shared, index, &mut stream, path, start, &mut parser, timer).await?;
        let request = shared.in_flight.borrow_mut()[index]
            .take()
            .expect("the lane's request is in flight");
        match outcome {
            Outcome::Complete(sample) => {
                shared.count_headers(&request);
                ledger.complete(sample, parser.check());
            }
            // Not processed: its headers (an interim response at most) are not counted, so
            // that a request sent again counts its response's once.
            Outcome::Unprocessed(kind) => {
                stream.cancel(H3_REQUEST_CANCELLED);
                if !ledger.retry(start, kind) {
                    ledger.fail(start, kind);
                }
            }
            Outcome::Reset(code) => {
                shared.count_headers(&request);
                ledger.fail_stream_reset(start, ResetCode::H3(code));
            }
            Outcome::Failed(kind) => {
                shared.count_headers(&request);
                stream.cancel(H3_REQUEST_CANCELLED);
                ledger.fail(start, kind);
            }
            Outcome::Malformed => {
                shared.count_headers(&request);
                stream.cancel(H3_MESSAGE_ERROR);
                ledger.fail(start, ErrorKind::Protocol);
            }
        }
    }
}

/// Waits for the server's credit for a request stream; `None` when a GOAWAY came meanwhile.
/// A server may hold its credit while the connection's other streams are busy, but one that
/// allows no stream at all while none is open (`initial_max_streams_bidi` 0, no MAX_STREAMS)
/// fails the connection after the credit wait, as h2 does with SETTINGS_MAX_CONCURRENT_STREAMS 0.
async fn open_stream<'c>(
    shared: &'c Shared<'c>,
    timer: &impl Timer,
) -> Result<Option<Held<'c>>, Failure> {
    // Mostly the credit is there: take it without setting up the waits for GOAWAY and time.
    if let Some(opened) = shared.conn.open_bi().now_or_never() {
        let pair = opened.map_err(|error| quic::connection_failure(&error))?;
        return Ok(Some(Held::new(pair, &shared.streams_held)));
    }
    let limit = shared.template.credit_wait;
    let mut since = Instant::now();
    loop {
        tokio::select! {
            opened = shared.conn.open_bi() => {
                let pair = opened.map_err(|error| quic::connection_failure(&error))?;
                return Ok(Some(Held::new(pair, &shared.streams_held)));
            }
            () = shared.goaway_seen.notified() => return Ok(None),
            () = timer.sleep_until(since + limit) => {
                if shared.streams_held.get() > 0 {
                    since = Instant::now();
                    continue;
                }
                shared.ledger.closed_by_client();
                let waited = match shared.template.request_timeout {
                    Some(_) => "ran past --request-timeout".to_owned(),
                    None => format!("waited {}", format_micros(limit.as_micros() as f64)),
                };
                return Err(Failure::new(
                    ErrorKind::Timeout,
                    format!("the server allows no concurrent request streams (initial_max_streams_bidi 0, no MAX_STREAMS): requests {waited} waiting for one"),
                ));
            }
        }
    }
}

/// The lane's next request, or `None` when none will come on this connection: the budget is
/// spent, or a GOAWAY came, also while the lane waited for `--rate`'s send time (a request
/// must not go out past a GOAWAY, nor a retry bounce between the closing connection's lanes).
async fn take_request(shared: &Shared<'_>, timer: &impl Timer) -> Option<RequestStart> {
    loop {
        if shared.goaway.get().is_some() {
            return None;
        }
        match shared.ledger.next_request() {
            Slot::Now(start) => return Some(start),
            Slot::At(at) => tokio::select! {
                () = timer.sleep_until(at) => {}
                () = shared.ledger.schedule_calls_back() => {}
                () = shared.goaway_seen.notified() => {}
            },
            Slot::Done => return None,
        }
    }
}

/// Sends one request on its stream and reads the response, within `--request-timeout`. The
/// request is written while the response is read: a server may answer (and stream an upload
/// back) before it has read the whole body. `Err`: the connection is lost (or the server broke
/// the protocol) and the request is still in flight.
async fn exchange(
    shared: &Shared<'_>,
    index: usize,
    stream: &mut Held<'_>,
    path: usize,
    start: RequestStart,
    parser: &mut ResponseParser,
    timer: &impl Timer,
) -> Result<Outcome, Failure> {
    let template = shared.template;
    let wire = shared.ledger.wire();
    let id = stream.id();
    let lost = |error: quinn::ConnectionError| quic::connection_failure(&error);
    let written = Cell::new(false);
    let Held { send, recv, .. } = stream;
    let work = async {
        let mut frames = template.frames(path, &start, &shared.ledger);
        let count = if frames[2].is_empty() { 1 } else { 3 };
        // Read before writing: `write_all_chunks` consumes the frames it sends.
        let headers_len = read_varint(&frames[0][1..]).map_or(0, |(length, _)| length);
        let write = async {
            let result = send.write_all_chunks(&mut frames[..count]).await;
            if result.is_ok() {
                let _ = send.finish();
                written.set(true);
                if let Some(trace) = &shared.trace {
                    trace.borrow_mut().h3_headers(id, headers_len, None);
                }
            }
            result
        };
        tokio::pin!(write);
        // One wait for GOAWAY for the whole exchange, renewed only when one comes: a new one
        // per chunk would register and unregister it with the Notify each time.
        let goaway = shared.goaway_seen.notified();
        tokio::pin!(goaway);
        let mut writing = true;
        let mut first_byte = None;
        loop {
            let read = tokio::select! {
                biased;
                result = &mut write, if writing => {
                    writing = false;
                    match result {
                        Ok(()) => {}
                        Err(WriteError::Stopped(code)) if code.into_inner() == H3_REQUEST_REJECTED => {
                            return Ok(Outcome::Unprocessed(ErrorKind::Refused))
                        }
                        // The server may stop reading once it has what it needs; the response
                        // still comes.
                        Err(WriteError::Stopped(_)) => {}
                        Err(WriteError::ConnectionLost(error)) => return Err(lost(error)),
                        Err(_) => return Ok(Outcome::Failed(ErrorKind::Closed)),
                    }
                    continue;
                }
                read = recv.read_chunk(usize::MAX, true) => read,
                () = &mut goaway => {
                    if shared.unprocessed(id) {
                        return Ok(Outcome::Unprocessed(ErrorKind::Goaway));
                    }
                    goaway.set(shared.goaway_seen.notified());
                    continue;
                }
            };
            let at = Instant::now();
            match read {
                Ok(Some(chunk)) => {
                    shared.last_read.set(at);
                    wire.add_total(chunk.bytes.len() as u64);
                    let fed = parser.feed(&chunk.bytes, |event| match event {
                        ResponseEvent::Headers {
                            section,
                            wire_len,
                            uncompressed,
                        } => {
                            if let Some(request) = shared.in_flight.borrow_mut()[index].as_mut() {
                                request.headers.0 += wire_len;
                                request.headers.1 += uncompressed;
                            }
                            let status = match section {
                                Section::Final(status) => {
                                    first_byte = Some(at);
                                    Some(status)
                                }
                                Section::Interim(status) => Some(status),
                                Section::Trailers => None,
                            };
                            if let Some(trace) = &shared.trace {
                                trace.borrow_mut().h3_headers(
                                    id,
                                    wire_len,
                                    Some((status, uncompressed)),
                                );
                            }
                        }
                        ResponseEvent::Data(length) => {
                            wire.add_data(length as u64);
                            if let Some(trace) = &shared.trace {
                                trace.borrow().h3_data(id, length);
                            }
                        }
                    });
                    match fed {
                        Ok(()) => {}
                        // A malformed message spoils this request only (RFC 9114 §4.1.2).
                        Err(error) if error.code == H3_MESSAGE_ERROR => {
                            return Ok(malformed(shared, error));
                        }
                        Err(error) => return Err(shared.violation(error)),
                    }
                }
                Ok(None) => {
                    return match parser.finish() {
                        Ok(status) => Ok(Outcome::Complete(ResponseSample {
                            start,
                            first_byte: first_byte.unwrap_or(at),
                            end: at,
                            status,
                        })),
                        Err(error) if error.code == H3_MESSAGE_ERROR => {
                            Ok(malformed(shared, error))
                        }
                        Err(error) => Err(shared.violation(error)),
                    }
                }
                Err(ReadError::Reset(code)) if code.into_inner() == H3_REQUEST_REJECTED => {
                    return Ok(Outcome::Unprocessed(ErrorKind::Refused))
                }
                Err(ReadError::Reset(code)) => return Ok(Outcome::Reset(code.into_inner())),
                Err(ReadError::ConnectionLost(error)) => return Err(lost(error)),
                Err(_) => return Ok(Outcome::Failed(ErrorKind::Closed)),
            }
        }
    };
    let outcome = match template.request_timeout {
        Some(limit) => tokio::select! {
            biased;
            outcome = work => outcome,
            () = timer.sleep_until(start.actual + limit) => Ok(Outcome::Failed(ErrorKind::Timeout)),
        },
        None => work.await,
    };
    if !written.get() {
        // The exchange ended before the whole request was written: the rest is not sent, and
        // the stream is reset rather than left to finish half-written. A server that answered
        // before reading it all (RFC 9114 §4.1) gets H3_NO_ERROR.
        let code = match outcome {
            Ok(Outcome::Complete(_)) => H3_NO_ERROR,
            _ => H3_REQUEST_CANCELLED,
        };
        let _ = send.reset(VarInt::from_u64(code).expect("a valid varint"));
    }
    outcome
}

/// A malformed response: said once, and the request fails alone.
fn malformed(shared: &Shared<'_>, error: H3Error) -> Outcome {
    shared
        .ledger
        .note_error(|| format!("a malformed HTTP/3 response: {}", error.reason));
    Outcome::Malformed
}

/// What is known of an HTTP/3 connection's TLS: QUIC always runs TLS 1.3 and the ALPN is
/// quinn's to tell; quinn keeps rustls's session to itself, so the cipher suite and the key
/// exchange group are `unknown` (docs/json.md says so).
pub(crate) fn tls_info(conn: &Connection) -> TlsInfo {
    TlsInfo {
        version: "TLSv1.3".to_owned(),
        cipher: "unknown".to_owned(),
        key_exchange: "unknown".to_owned(),
        alpn: Some(alpn(conn)),
    }
}

/// The protocol ALPN settled on.
fn alpn(conn: &Connection) -> String {
    conn.handshake_data()
        .and_then(|data| data.downcast::<quinn::crypto::rustls::HandshakeData>().ok())
        .and_then(|data| data.protocol)
        .map_or("none".to_owned(), |id| {
            String::from_utf8_lossy(&id).into_owned()
        })
}

/// The trace's line for a connection's handshake: what QUIC settled on and what quinn tells of
/// the path and the server's transport parameters.
fn describe_handshake(conn: &Connection, template: &H3Template, lanes_open: usize) -> String {
    let alpn = alpn(conn);
    let path = conn.stats().path;
    let streams = if lanes_open < template.lanes {
        format!(
            "the server allows {lanes_open} concurrent request streams (initial_max_streams_bidi)"
        )
    } else {
        format!("the server allows at least the {lanes_open} request streams asked for")
    };
    format!(
        "QUIC v1 handshake done: TLSv1.3, ALPN {alpn}; RTT {}, path MTU {} bytes, congestion window {} bytes; {streams}",
        format_micros(path.rtt.as_micros() as f64),
        path.current_mtu,
        path.cwnd
    )
}

/// The trace's line for a connection's end: what quinn counted, to tell a stall's cause (lost
/// datagrams, a small congestion window, stream credit that came late, ACK traffic).
fn describe_end(stats: &quinn::ConnectionStats) -> String {
    let path = &stats.path;
    format!(
        "QUIC connection done: sent {} datagrams in {} sends ({} bytes), received {} in {} receives ({} bytes); ACK frames sent {}, received {}; MAX_STREAMS received {}, STREAMS_BLOCKED sent {}; lost packets {}, congestion events {}; RTT {} (min {}), congestion window {} bytes",
        stats.udp_tx.datagrams,
        stats.udp_tx.ios,
        stats.udp_tx.bytes,
        stats.udp_rx.datagrams,
        stats.udp_rx.ios,
        stats.udp_rx.bytes,
        stats.frame_tx.acks,
        stats.frame_rx.acks,
        stats.frame_rx.max_streams_bidi,
        stats.frame_tx.streams_blocked_bidi,
        path.lost_packets,
        path.congestion_events,
        format_micros(path.rtt.as_micros() as f64),
        format_micros(path.min_rtt.as_micros() as f64),
        path.cwnd
    )
}

/// A setting's name in the trace (RFC 9114 §7.2.4.1, RFC 9204 §5, RFC 9220, RFC 9297).
fn setting_name(id: u64) -> String {
    match id {
        0x01 => "QPACK_MAX_TABLE_CAPACITY".to_owned(),
        0x06 => "MAX_FIELD_SECTION_SIZE".to_owned(),
        0x07 => "QPACK_BLOCKED_STREAMS".to_owned(),
        0x08 => "ENABLE_CONNECT_PROTOCOL".to_owned(),
        0x33 => "H3_DATAGRAM".to_owned(),
        other => format!("0x{other:x}"),
    }
}
