//! The HTTP/2 session (RFC 9113), written at the frame level for speed: no future or allocation
//! per request, header blocks encoded from prepared fields, and every frame produced while
//! handling a read leaves in one write. See docs/internals.md ("Performance") for why this
//! replaced the `h2` crate.
//!
//! Each connection waits for the server's SETTINGS (part of connecting), then keeps
//! `min(-m, SETTINGS_MAX_CONCURRENT_STREAMS)` streams open. After an h2c upgrade the requests do
//! not wait: the server is already answering stream 1, and one that sees no other stream may end
//! the connection as soon as stream 1 is answered (Apache does). So up to `-m` streams leave with
//! the preface, under the protocol's defaults until the server's SETTINGS arrive (RFC 9113 §3.4,
//! §6.5.2: no stream limit, 65,535-byte windows, 16 KiB frames); streams over the limit it then
//! announces come back REFUSED_STREAM and go again. Response bodies are counted, not kept;
//! receive windows are enforced and replenished as data arrives; request bodies respect the
//! server's windows. Everything a server can make the client hold is bounded (see the limits
//! below and the limits table in docs/reference.md).

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Method;

use super::earliest;
use super::h1::MAX_INTERIM;
use super::outgoing::Outgoing;
use super::render::Renderer;
use super::session::Progress;
use super::{Ledger, Slot, PREPARED_PATHS};
use crate::plan::{H2Settings, RunPlan};
use crate::proto::check::{Checks, ResponseCheck};
use crate::proto::h2::{self as frame, error_code_name, read_u32, write_frame, FrameHead};
use crate::proto::hpack;
use crate::recorder::{ErrorKind, Failure, RequestStart, ResponseSample};

/// Header fields HTTP/2 forbids (RFC 9113 §8.2.2); h2load drops them too.
pub(crate) const CONNECTION_SPECIFIC: [&str; 6] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "host",
];
/// The largest header block accepted, HEADERS and CONTINUATION together, as received.
pub(crate) const MAX_HEADER_BLOCK: usize = 64 * 1024;
/// The largest header list accepted once decoded (names and values): an HPACK bomb stops here.
pub(crate) const MAX_HEADER_LIST: u64 = 64 * 1024;
/// Acknowledgements (PING, SETTINGS) queued while the server does not read them; more is a flood.
pub(crate) const MAX_QUEUED_CONTROL: usize = 1000;
/// Streams the client reset that are remembered, so that frames crossing the RST_STREAM are
/// ignored; a frame on an older stream is ignored too (it cannot be told from those).
const RESETS_KEPT: usize = 256;

/// Requests prepared once per thread: HPACK fields and the shared body.
pub(crate) struct H2Template {
    /// `:method`, `:scheme`, then `:authority` and the other headers; the path goes in between.
    fields: Vec<hpack::Field>,
    /// A `:path` field for each of the first [`PREPARED_PATHS`] URLs, which the encoder may add to
    /// the server's table (4 KiB by default: a few dozen paths at most); the others go as literals.
    paths: Vec<hpack::Field>,
    /// The `:path` name, for literal paths: rendered ones and those past the prepared ones.
    path_literal: hpack::Field,
    body: Bytes,
    lanes: usize,
    settings: H2Settings,
    request_timeout: Option<Duration>,
    checks: Option<Arc<Checks>>,
    /// Templated requests: rendered one by one, their rendered values never indexed.
    renderer: Option<Renderer>,
    /// For each of `fields`, the plan header it comes from (`:authority` and content-length
    /// come from none), to find its template.
    field_headers: Vec<Option<usize>>,
    /// The content-length field of a templated body, whose value is rendered per request.
    content_length: hpack::Field,
    /// Whether each request's body is rendered (a templated body, and a method that sends one).
    renders_body: bool,
    /// Whether requests are HEAD: their responses have no content whatever content-length says.
    head: bool,
}

/// Fields before `:path` in `H2Template::fields` (`:method`, `:scheme`).
const FIELDS_BEFORE_PATH: usize = 2;

/// Streams opened before the server's SETTINGS on an early-data connection, at most: RFC 9113
/// §6.5.2 advises servers to allow no fewer than 100 concurrent streams, so more would risk
/// REFUSED_STREAM once the server's limit is known.
const EARLY_STREAMS: usize = 100;

/// The early data a connection's requests may still ride in before the server's SETTINGS.
#[derive(Debug, Clone, Copy)]
struct EarlyRoom {
    /// Bytes the server's ticket still allows (the preface and SETTINGS come off first).
    left: usize,
    /// The size of the largest request queued so far (the next is taken to be as large: the
    /// first carries every header as a literal, later ones mostly indexes).
    request: usize,
}

impl H2Template {
    pub(crate) fn new(plan: &RunPlan) -> Self {
        let template = &plan.request;
        let scheme: &[u8] = if plan.tls.is_some() {
            b"https"
        } else {
            b"http"
        };
        let mut fields = vec![
            hpack::Field::new(":method", template.method.as_str().as_bytes()),
            hpack::Field::new(":scheme", scheme),
            hpack::Field::new(":authority", template.authority.as_bytes()),
        ];
        let mut field_headers = vec![None; fields.len()];
        for (index, (name, value)) in template.headers.iter().enumerate() {
            if !CONNECTION_SPECIFIC.contains(&name.as_str()) {
                fields.push(hpack::Field::new(name.as_str(), value.as_bytes()));
                field_headers.push(Some(index));
            }
        }
        let renderer = Renderer::new(template);
        let body_templated = renderer.as_ref().is_some_and(Renderer::body_templated)
            && template.method != Method::HEAD;
        if let Some(length) = template.content_length().filter(|_| !body_templated) {
            fields.push(hpack::Field::new(
                "content-length",
                length.to_string().as_bytes(),
            ));
        }
        H2Template {
            fields,
            paths: template
                .paths
                .iter()
                .take(PREPARED_PATHS)
                .map(|path| hpack::Field::new(":path", path.as_bytes()))
                .collect(),
            path_literal: hpack::Field::new(":path", b""),
            body: if template.method == Method::HEAD {
                Bytes::new()
            } else {
                template.body.clone()
            },
            lanes: plan.max_concurrent,
            settings: plan.h2,
            request_timeout: plan.timeouts.request,
            checks: plan.checks.clone(),
            renderer,
            field_headers,
            content_length: hpack::Field::new("content-length", b""),
            renders_body: body_templated,
            head: template.method == Method::HEAD,
        }
    }

    fn field_count(&self) -> usize {
        self.fields.len() + self.paths.len()
    }
}

/// The SETTINGS payload the client announces (also sent as `HTTP2-Settings` when upgrading).
pub(crate) fn settings_payload(settings: &H2Settings) -> Vec<u8> {
    let mut payload = Vec::with_capacity(24);
    for (id, value) in [
        (
            frame::SETTINGS_HEADER_TABLE_SIZE,
            settings.header_table_size,
        ),
        (frame::SETTINGS_ENABLE_PUSH, 0),
        (frame::SETTINGS_INITIAL_WINDOW_SIZE, settings.stream_window),
        (frame::SETTINGS_MAX_FRAME_SIZE, settings.max_frame_size),
    ] {
        payload.extend_from_slice(&id.to_be_bytes());
        payload.extend_from_slice(&value.to_be_bytes());
    }
    payload
}

/// Stream ids hash to themselves: they are unique, and a map keyed by them needs no mixing.
#[derive(Default)]
struct StreamIdHasher(u64);

impl Hasher for StreamIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, _bytes: &[u8]) {
        unreachable!("only u32 stream ids are hashed");
    }

    fn write_u32(&mut self, id: u32) {
        // Spread consecutive odd ids over the table's buckets.
        self.0 = u64::from(id).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type StreamMap = HashMap<u32, Stream, BuildHasherDefault<StreamIdHasher>>;

/// A request in flight.
#[derive(Debug)]
struct Stream {
    start: RequestStart,
    first_byte: Option<Instant>,
    status: Option<u16>,
    interim: u32,
    /// Bytes received since the last stream WINDOW_UPDATE.
    unacked: i64,
    /// What the server may still send on this stream.
    recv_window: i64,
    /// What the server lets us send on this stream.
    send_window: i64,
    /// Request body bytes not sent yet.
    body_left: usize,
    /// What the response has shown of the response checks.
    check: ResponseCheck,
    /// A rendered body that could not go with its HEADERS (flow control), else the plan's.
    body: Option<Bytes>,
    /// The body length the final response's HEADERS announced (0 for a response with no
    /// content), and the body bytes received: they must agree (RFC 9113 §8.1.1).
    content_length: Option<u64>,
    received: u64,
}

/// A DATA frame whose payload is still arriving.
#[derive(Debug, Clone, Copy)]
struct DataInProgress {
    stream: u32,
    /// Payload bytes still to come (pad length byte, data, padding).
    left: usize,
    /// Whether the pad length byte is still to come.
    padded: bool,
    padding: usize,
    end_stream: bool,
    length: usize,
}

/// A header block spread over HEADERS and CONTINUATION frames.
#[derive(Debug, Default)]
struct HeaderBlock {
    stream: u32,
    end_stream: bool,
    wire_len: usize,
    block: Vec<u8>,
}

/// One HTTP/2 connection's state.
pub(crate) struct H2Session<'t> {
    template: &'t H2Template,
    streams: StreamMap,
    /// Streams in the order they started, for the request timeout. Finished ones are dropped from
    /// the front at each fill, so the front is the oldest live stream and the queue stays as
    /// long as the streams in flight.
    started: VecDeque<(u32, Instant)>,
    /// Streams with request body left to send.
    bodies: VecDeque<u32>,
    next_stream_id: u32,
    /// Until the server's SETTINGS arrive: when connecting gives up waiting for them.
    settings_due: Option<Instant>,
    settings_received: bool,
    /// Whether streams open before the server's SETTINGS arrive (after an h2c upgrade).
    open_before_settings: bool,
    /// On a connection sending early data, until the server's SETTINGS arrive: the room its
    /// requests have to ride in (see [`EarlyRoom`]).
    early: Option<EarlyRoom>,
    /// Whether the server acknowledged our SETTINGS: until then it may assume default windows.
    settings_acked: bool,
    server_max_streams: usize,
    /// Since when requests have been due but the server allowed no stream (MAX_CONCURRENT_STREAMS 0).
    blocked_since: Option<Instant>,
    initial_send_window: i64,
    send_window: i64,
    /// What the server may still send on the connection.
    recv_window: i64,
    max_send_frame: usize,
    unacked: i64,
    data: Option<DataInProgress>,
    headers: Option<HeaderBlock>,
    decoder: hpack::Decoder,
    encoder: hpack::Encoder,
    goaway: Option<u32>,
    /// Acknowledgements queued since the output last drained.
    queued_control: usize,
    budget_spent: bool,
    /// When the next scheduled request is due (`--rate`), if a stream is free for it.
    wake: Option<Instant>,
    /// A rendered header value being encoded (templated requests).
    value: Vec<u8>,
    /// The last [`RESETS_KEPT`] streams the client reset, and the highest forgotten one.
    resets: VecDeque<u32>,
    forgotten_reset: u32,
}

impl<'t> H2Session<'t> {
    /// A session that queues the preface and SETTINGS in `out`. After an h2c upgrade, `upgraded`
    /// is the start of the HTTP/1.1 request whose response arrives on stream 1, and the next
    /// [`H2Session::fill`] queues the other streams behind the preface, for the same write. On a
    /// connection sending TLS early data, `early_data` is how many bytes it may carry: the
    /// requests that fit leave with the preface, before the server's SETTINGS.
    pub(crate) fn new(
        template: &'t H2Template,
        upgraded: Option<RequestStart>,
        settings_due: Option<Instant>,
        early_data: Option<usize>,
        out: &mut Outgoing,
    ) -> Self {
        let settings = template.settings;
        let connection_window = i64::from(settings.connection_window).max(frame::DEFAULT_WINDOW);
        let mut session = H2Session {
            template,
            streams: StreamMap::with_capacity_and_hasher(
                template.lanes.min(1024) + 1,
                Default::default(),
            ),
            started: VecDeque::new(),
            bodies: VecDeque::new(),
            next_stream_id: 1,
            settings_due,
            settings_received: false,
            open_before_settings: upgraded.is_some(),
            early: None,
            settings_acked: false,
            server_max_streams: usize::MAX,
            blocked_since: None,
            initial_send_window: frame::DEFAULT_WINDOW,
            send_window: frame::DEFAULT_WINDOW,
            recv_window: connection_window,
            max_send_frame: frame::MIN_MAX_FRAME_SIZE,
            unacked: 0,
            data: None,
            headers: None,
            decoder: hpack::Decoder::new(settings.header_table_size as usize),
            encoder: hpack::Encoder::new(template.field_count()),
            goaway: None,
            queued_control: 0,
            budget_spent: false,
            wake: None,
            value: Vec::new(),
            resets: VecDeque::new(),
            forgotten_reset: 0,
        };
        if let Some(checks) = &template.checks {
            session.decoder.check_headers(checks);
        }
        let bytes = out.bytes();
        bytes.extend_from_slice(frame::PREFACE);
        write_frame(bytes, frame::SETTINGS, 0, 0, &settings_payload(&settings));
        let extra_window = connection_window - frame::DEFAULT_WINDOW;
        if extra_window > 0 {
            window_update(bytes, 0, extra_window);
        }
        session.early = early_data.map(|room| EarlyRoom {
            left: room.saturating_sub(bytes.len()),
            request: 1,
        });
        if let Some(start) = upgraded {
            // The upgrade request is stream 1, half-closed from our side (RFC 9113 §3.2 of 7540).
            session.streams.insert(1, session.new_stream(start, 0));
            session.track_start(1, start.actual);
            session.next_stream_id = 3;
        }
        session
    }

    fn new_stream(&self, start: RequestStart, body_left: usize) -> Stream {
        Stream {
            start,
            first_byte: None,
            status: None,
            interim: 0,
            unacked: 0,
            recv_window: self.stream_recv_window(),
            send_window: self.initial_send_window,
            body_left,
            check: ResponseCheck::default(),
            body: None,
            content_length: None,
            received: 0,
        }
    }

    /// What the server may send on a new stream: our SETTINGS_INITIAL_WINDOW_SIZE once it has
    /// acknowledged it, the larger of that and the default before.
    fn stream_recv_window(&self) -> i64 {
        let ours = i64::from(self.template.settings.stream_window);
        if self.settings_acked {
            ours
        } else {
            ours.max(frame::DEFAULT_WINDOW)
        }
    }

    fn track_start(&mut self, id: u32, start: Instant) {
        if self.template.request_timeout.is_some() {
            self.started.push_back((id, start));
        }
    }

    /// Whether the connection can carry requests: the server's SETTINGS arrived and allow streams.
    /// After an h2c upgrade requests are in flight before then, but the handshake still ends
    /// with the server's SETTINGS.
    pub(crate) fn is_ready(&self) -> bool {
        self.settings_received && self.server_max_streams > 0
    }

    pub(crate) fn fill(
        &mut self,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<Progress, Failure> {
        if out.is_empty() {
            self.queued_control = 0;
        }
        while let Some(&(id, _)) = self.started.front() {
            if self.streams.contains_key(&id) {
                break;
            }
            self.started.pop_front();
        }
        if let Some(progress) = self.open_streams(ledger, out) {
            return Ok(progress);
        }
        self.send_bodies(out);
        Ok(self.progress())
    }

    /// Opens streams up to the lane count; `Some` ends the connection (stream ids ran out).
    fn open_streams(&mut self, ledger: &Ledger<'_>, out: &mut Outgoing) -> Option<Progress> {
        self.wake = None;
        if self.goaway.is_some() {
            return None;
        }
        let mut limit = self.template.lanes.min(self.server_max_streams);
        if !(self.settings_received || self.open_before_settings) {
            // Full handshakes wait for the server's limits; early data may not.
            self.early?;
            limit = limit.min(EARLY_STREAMS);
        }
        if limit == 0 && !self.budget_spent {
            self.blocked_since.get_or_insert_with(Instant::now);
            return None;
        }
        self.blocked_since = None;
        let mut queued = out.bytes().len();
        while !self.budget_spent && self.streams.len() < limit {
            if self.early_room_spent(out.bytes().len() - queued) {
                break;
            }
            queued = out.bytes().len();
            if self.next_stream_id > frame::MAX_WINDOW as u32 {
                // Stream ids are spent: finish what is open, then reconnect.
                return self.streams.is_empty().then_some(Progress::Reconnect);
            }
            let mut start = match ledger.next_request() {
                Slot::Now(start) => start,
                Slot::At(time) => {
                    self.wake = Some(time);
                    break;
                }
                Slot::Done => {
                    self.budget_spent = true;
                    break;
                }
            };
            let id = self.next_stream_id;
            // --log-file derives stream ids from the request's number on the connection.
            debug_assert_eq!(u64::from(id), 2 * u64::from(start.sequence) - 1);
            self.next_stream_id += 2;
            let path = ledger.pick_path(&mut start);
            match &self.template.renderer {
                Some(renderer) if self.template.renders_body => {
                    self.write_rendered(renderer, id, path, start, ledger, out);
                    continue;
                }
                Some(renderer) => self.write_rendered_headers(
                    renderer,
                    id,
                    path,
                    &start,
                    ledger,
                    None,
                    out.bytes(),
                ),
                None => self.write_headers(id, path, ledger, out.bytes()),
            }
            let body_left = self.template.body.len();
            self.streams.insert(id, self.new_stream(start, body_left));
            self.track_start(id, start.actual);
            if body_left > 0 {
                self.bodies.push_back(id);
            }
        }
        self.early_room_spent(out.bytes().len() - queued);
        None
    }

    /// Before the server's SETTINGS on a connection sending early data: takes the `written`
    /// bytes of the last request off the room left, and says whether another as large as the
    /// largest so far might not fit (it then waits for the SETTINGS instead of leaving after the
    /// handshake, outside the early data, before the server's limits are known).
    fn early_room_spent(&mut self, written: usize) -> bool {
        match &mut self.early {
            Some(early) if !self.settings_received => {
                if written > 0 {
                    early.left = early.left.saturating_sub(written);
                    early.request = early.request.max(written);
                }
                early.left < early.request
            }
            _ => false,
        }
    }

    /// Appends the request's HEADERS (and CONTINUATION, if the block exceeds the server's frame size).
    fn write_headers(&mut self, id: u32, path: usize, ledger: &Ledger<'_>, out: &mut Vec<u8>) {
        let template = self.template;
        let head_at = self.begin_headers(out);
        self.write_path(path, ledger, out);
        for (slot, field) in template.fields.iter().enumerate().skip(FIELDS_BEFORE_PATH) {
            self.encoder.encode(out, slot, field);
        }
        self.frame_header_block(id, head_at, template.body.is_empty(), out);
    }

    /// Leaves room for a frame head, begins a header block and encodes the fields before
    /// `:path`; returns where the frame head goes (see [`H2Session::frame_header_block`]).
    fn begin_headers(&mut self, out: &mut Vec<u8>) -> usize {
        let head_at = out.len();
        out.extend_from_slice(&[0; frame::HEADER_LEN]);
        self.encoder.begin_block(out);
        for (slot, field) in self.template.fields[..FIELDS_BEFORE_PATH]
            .iter()
            .enumerate()
        {
            self.encoder.encode(out, slot, field);
        }
        head_at
    }

    /// Appends the `:path` of URL `path`: its prepared field, else a literal.
    fn write_path(&mut self, path: usize, ledger: &Ledger<'_>, out: &mut Vec<u8>) {
        let template = self.template;
        match template.paths.get(path) {
            Some(field) => self
                .encoder
                .encode(out, template.fields.len() + path, field),
            None => template
                .path_literal
                .encode_unindexed(out, ledger.path(path).as_bytes()),
        }
    }

    /// Opens stream `id` for a request with a templated body: its HEADERS (see
    /// [`H2Session::write_rendered_headers`]), then the rendered body, at once when the windows
    /// let it go with the HEADERS (no allocation), else kept with the stream.
    fn write_rendered(
        &mut self,
        renderer: &Renderer,
        id: u32,
        path: usize,
        start: RequestStart,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) {
        renderer.with_body(&start, ledger, |body| {
            self.write_rendered_headers(
                renderer,
                id,
                path,
                &start,
                ledger,
                Some(body.len()),
                out.bytes(),
            );
            let mut stream = self.new_stream(start, body.len());
            let room = self.send_window.min(stream.send_window).max(0) as usize;
            if !body.is_empty() && body.len() <= room {
                let mut chunks = body.chunks(self.max_send_frame).peekable();
                while let Some(chunk) = chunks.next() {
                    let last = chunks.peek().is_none();
                    let flags = if last { frame::END_STREAM } else { 0 };
                    write_frame(out.bytes(), frame::DATA, flags, id, chunk);
                }
                self.send_window -= body.len() as i64;
                stream.send_window -= body.len() as i64;
                stream.body_left = 0;
            } else if !body.is_empty() {
                stream.body = Some(Bytes::copy_from_slice(body));
                self.bodies.push_back(id);
            }
            self.streams.insert(id, stream);
            self.track_start(id, start.actual);
        });
    }

    /// The HEADERS of a templated request, with the rendered path and header values as literals
    /// never indexed; `body_len` is a rendered body's length (`None`: the plan's body, whose
    /// content-length is among the prepared fields).
    #[allow(clippy::too_many_arguments)]
    fn write_rendered_headers(
        &mut self,
        renderer: &Renderer,
        id: u32,
        path: usize,
        start: &RequestStart,
        ledger: &Ledger<'_>,
        body_len: Option<usize>,
        out: &mut Vec<u8>,
    ) {
        let template = self.template;
        let head_at = self.begin_headers(out);
        if renderer.path_templated(path) {
            self.value.clear();
            renderer.path(path, start, ledger, &mut self.value);
            template.path_literal.encode_unindexed(out, &self.value);
        } else {
            self.write_path(path, ledger, out);
        }
        for (slot, field) in template.fields.iter().enumerate().skip(FIELDS_BEFORE_PATH) {
            match template.field_headers[slot].filter(|&header| renderer.header_templated(header)) {
                Some(header) => {
                    self.value.clear();
                    renderer.header_value(header, start, ledger, &mut self.value);
                    field.encode_unindexed(out, &self.value);
                }
                None => self.encoder.encode(out, slot, field),
            }
        }
        let length = body_len.and_then(|len| renderer.content_length(len));
        if let Some(length) = length {
            self.value.clear();
            crate::plan::template::write_decimal(&mut self.value, length as u64);
            template.content_length.encode_unindexed(out, &self.value);
        }
        let end_stream = body_len.map_or(template.body.is_empty(), |len| len == 0);
        self.frame_header_block(id, head_at, end_stream, out);
    }

    /// Frames the header block written after `head_at` (where a frame head's room was left) as
    /// HEADERS, and CONTINUATION frames if it exceeds the server's frame size.
    fn frame_header_block(
        &mut self,
        id: u32,
        head_at: usize,
        end_of_request: bool,
        out: &mut Vec<u8>,
    ) {
        let end_stream = if end_of_request { frame::END_STREAM } else { 0 };
        let block_len = out.len() - head_at - frame::HEADER_LEN;
        if block_len <= self.max_send_frame {
            let head = FrameHead {
                length: block_len,
                kind: frame::HEADERS,
                flags: end_stream | frame::END_HEADERS,
                stream: id,
            };
            out[head_at..head_at + frame::HEADER_LEN].copy_from_slice(&head.encode());
            return;
        }
        let block = out.split_off(head_at + frame::HEADER_LEN);
        out.truncate(head_at);
        let mut chunks = block.chunks(self.max_send_frame).peekable();
        let mut kind = frame::HEADERS;
        let mut flags = end_stream;
        while let Some(chunk) = chunks.next() {
            if chunks.peek().is_none() {
                flags |= frame::END_HEADERS;
            }
            write_frame(out, kind, flags, id, chunk);
            kind = frame::CONTINUATION;
            flags = 0;
        }
    }

    /// Sends as much pending request body as the server's windows allow.
    fn send_bodies(&mut self, out: &mut Outgoing) {
        let template = self.template;
        while let Some(&id) = self.bodies.front() {
            let Some(stream) = self.streams.get_mut(&id) else {
                self.bodies.pop_front();
                continue;
            };
            while stream.body_left > 0 {
                let room = self.send_window.min(stream.send_window).max(0) as usize;
                let chunk = stream.body_left.min(room).min(self.max_send_frame);
                if chunk == 0 {
                    return;
                }
                let body = stream.body.as_ref().unwrap_or(&template.body);
                let from = body.len() - stream.body_left;
                let data = body.slice(from..from + chunk);
                stream.body_left -= chunk;
                stream.send_window -= chunk as i64;
                self.send_window -= chunk as i64;
                let flags = if stream.body_left == 0 {
                    frame::END_STREAM
                } else {
                    0
                };
                let head = FrameHead {
                    length: chunk,
                    kind: frame::DATA,
                    flags,
                    stream: id,
                };
                out.bytes().extend_from_slice(&head.encode());
                out.push_body(&data);
            }
            self.bodies.pop_front();
        }
    }

    /// Whether the connection is done.
    fn progress(&self) -> Progress {
        if !self.streams.is_empty() {
            return Progress::Continue;
        }
        if self.budget_spent {
            Progress::Finished
        } else if self.goaway.is_some() {
            Progress::Reconnect
        } else {
            Progress::Continue
        }
    }

    pub(crate) fn on_eof(&mut self) -> Result<(), Failure> {
        if self.streams.is_empty() {
            if !self.settings_received {
                return Err(Failure::new(
                    ErrorKind::Closed,
                    "the server closed the connection before its HTTP/2 SETTINGS",
                ));
            }
            return Ok(());
        }
        Err(Failure::new(
            ErrorKind::Closed,
            "the server closed an HTTP/2 connection with requests in flight",
        ))
    }

    pub(crate) fn next_timer(&self) -> Option<Instant> {
        let limit = self.template.request_timeout;
        // The front may have finished since the last fill: then the timer fires early, and
        // `on_timer` drops it without cancelling anything.
        let oldest = self
            .started
            .front()
            .zip(limit)
            .map(|((_, start), limit)| *start + limit);
        let blocked = self
            .blocked_since
            .zip(limit)
            .map(|(since, limit)| since + limit);
        // The SETTINGS deadline (cleared once they arrive) does not hide the streams': after an
        // upgrade, streams are in flight before the SETTINGS.
        earliest(
            self.settings_due,
            earliest(earliest(oldest, blocked), self.wake),
        )
    }

    pub(crate) fn on_timer(
        &mut self,
        now: Instant,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<(), Failure> {
        // `settings_due` is cleared when the SETTINGS arrive.
        if self.settings_due.is_some_and(|due| now >= due) {
            return Err(Failure::new(
                ErrorKind::ConnectTimeout,
                "the server sent no HTTP/2 SETTINGS within --connect-timeout",
            ));
        }
        let Some(limit) = self.template.request_timeout else {
            return Ok(());
        };
        if self.blocked_since.is_some_and(|since| now >= since + limit) {
            return Err(Failure::new(
                ErrorKind::Timeout,
                "the server allows no concurrent streams (SETTINGS_MAX_CONCURRENT_STREAMS 0): requests ran past --request-timeout waiting for one",
            ));
        }
        // Cancel every stream past its deadline, oldest first (client-side timeouts).
        while let Some(&(id, start)) = self.started.front() {
            // Stream ids are never reused on a connection: one still in the map is the same request.
            let live = self.streams.contains_key(&id);
            if live && now < start + limit {
                break;
            }
            self.started.pop_front();
            if live {
                let stream = self.streams.remove(&id).expect("checked live");
                self.reset(id, frame::CANCEL, out.bytes());
                ledger.fail(stream.start, ErrorKind::Timeout);
            }
        }
        Ok(())
    }

    pub(crate) fn fail_all(&mut self, kind: ErrorKind, ledger: &Ledger<'_>) -> usize {
        let count = self.streams.len();
        for (_, stream) in self.streams.drain() {
            ledger.fail(stream.start, kind);
        }
        count
    }

    /// Handles every complete frame in `input` (and the part of a DATA frame that has arrived);
    /// returns how much it used.
    pub(crate) fn on_read(
        &mut self,
        input: &[u8],
        at: Instant,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<usize, Failure> {
        let mut used = 0;
        loop {
            if let Some(data) = self.data {
                let (taken, done) = self.consume_data(data, &input[used..], ledger, out.bytes())?;
                used += taken;
                if !done {
                    return Ok(used);
                }
                self.data_frame_done(data, at, ledger, out.bytes());
                continue;
            }
            let rest = &input[used..];
            let Some(head) = rest.first_chunk::<{ frame::HEADER_LEN }>() else {
                if !self.settings_received {
                    if let Some(problem) = not_http2(rest) {
                        return Err(Failure::protocol(problem));
                    }
                }
                return Ok(used);
            };
            if !self.settings_received {
                if let Some(problem) = not_http2(rest) {
                    return Err(Failure::protocol(problem));
                }
            }
            let head = FrameHead::parse(head);
            if !self.settings_received && head.kind != frame::SETTINGS {
                return Err(Failure::protocol(format!(
                    "the server's first HTTP/2 frame is not SETTINGS (type {:#x}): is it an HTTP/2 server?",
                    head.kind
                )));
            }
            if head.length > self.template.settings.max_frame_size as usize {
                return Err(self.connection_error(
                    out,
                    frame::FRAME_SIZE_ERROR,
                    format!(
                        "the server sent a {}-byte frame, over our MAX_FRAME_SIZE",
                        head.length
                    ),
                ));
            }
            if self.headers.is_some() && head.kind != frame::CONTINUATION {
                return Err(Failure::protocol(
                    "a header block was interrupted by another frame",
                ));
            }
            if head.kind == frame::DATA {
                self.check_response_stream(head.stream, "DATA")?;
                self.start_data(head)?;
                match self.streams.get(&head.stream) {
                    None => self.on_closed_stream(head.stream, "DATA", out)?,
                    Some(stream) if stream.status.is_none() => {
                        let reason = "DATA before the response's HEADERS";
                        self.malformed(head.stream, reason, false, ledger, out.bytes());
                    }
                    Some(_) => {}
                }
                used += frame::HEADER_LEN;
                continue;
            }
            if rest.len() < frame::HEADER_LEN + head.length {
                return Ok(used);
            }
            let payload = &rest[frame::HEADER_LEN..frame::HEADER_LEN + head.length];
            used += frame::HEADER_LEN + head.length;
            self.handle_frame(head, payload, at, ledger, out)?;
        }
    }

    /// HEADERS and DATA may only come on streams we opened: never on stream 0, a server-side
    /// (even) id, or an id we have not used yet. Closed streams are fine (we may have reset them).
    fn check_response_stream(&self, id: u32, what: &str) -> Result<(), Failure> {
        if id == 0 || id.is_multiple_of(2) || id >= self.next_stream_id {
            return Err(Failure::protocol(format!(
                "the server sent {what} on stream {id}, which the client never opened"
            )));
        }
        Ok(())
    }

    /// A DATA frame header arrived: charge its length to the receive windows.
    fn start_data(&mut self, head: FrameHead) -> Result<(), Failure> {
        let length = head.length as i64;
        self.recv_window -= length;
        let stream_overrun = self.streams.get_mut(&head.stream).is_some_and(|stream| {
            stream.recv_window -= length;
            stream.recv_window < 0
        });
        if self.recv_window < 0 || stream_overrun {
            return Err(Failure::protocol(
                "the server sent more DATA than the flow-control window allows (FLOW_CONTROL_ERROR)",
            ));
        }
        self.data = Some(DataInProgress {
            stream: head.stream,
            left: head.length,
            padded: head.flags & frame::PADDED != 0,
            padding: 0,
            end_stream: head.flags & frame::END_STREAM != 0,
            length: head.length,
        });
        Ok(())
    }

    /// Counts the arrived part of a DATA frame: how much of `input` it used, and whether the frame is complete.
    fn consume_data(
        &mut self,
        mut data: DataInProgress,
        mut input: &[u8],
        ledger: &Ledger<'_>,
        out: &mut Vec<u8>,
    ) -> Result<(usize, bool), Failure> {
        let mut used = 0;
        if data.padded && data.left > 0 {
            let Some((&padding, rest)) = input.split_first() else {
                return Ok((0, false));
            };
            data.padding = usize::from(padding);
            data.padded = false;
            data.left -= 1;
            used += 1;
            input = rest;
            if data.padding > data.left {
                return Err(Failure::protocol("DATA padding longer than the frame"));
            }
        }
        let take = data.left.min(input.len());
        let body_bytes = take.min(data.left.saturating_sub(data.padding));
        if body_bytes > 0 {
            if let Some(stream) = self.streams.get_mut(&data.stream) {
                ledger.wire().add_data(body_bytes as u64);
                if let Some(checks) = &self.template.checks {
                    checks.scan_body(&mut stream.check.body, &input[..body_bytes]);
                }
                stream.received += body_bytes as u64;
                if stream
                    .content_length
                    .is_some_and(|length| stream.received > length)
                {
                    let reason = "a body longer than its content-length (or a response that has none with DATA)";
                    self.malformed(data.stream, reason, false, ledger, out);
                }
            }
        }
        data.left -= take;
        used += take;
        if data.left > 0 {
            self.data = Some(data);
            return Ok((used, false));
        }
        self.data = None;
        Ok((used, true))
    }

    /// A whole DATA frame arrived: hand its window back, and finish the stream at END_STREAM.
    fn data_frame_done(
        &mut self,
        data: DataInProgress,
        at: Instant,
        ledger: &Ledger<'_>,
        out: &mut Vec<u8>,
    ) {
        let length = data.length as i64;
        self.unacked += length;
        if self.unacked >= i64::from(self.template.settings.connection_window) / 2 {
            let increment = std::mem::take(&mut self.unacked);
            self.recv_window += increment;
            window_update(out, 0, increment);
        }
        if data.end_stream {
            self.finish_stream(data.stream, at, ledger, out);
            return;
        }
        let half_window = i64::from(self.template.settings.stream_window) / 2;
        if let Some(stream) = self.streams.get_mut(&data.stream) {
            stream.unacked += length;
            if stream.unacked >= half_window {
                let increment = std::mem::take(&mut stream.unacked);
                stream.recv_window += increment;
                window_update(out, data.stream, increment);
            }
        }
    }

    fn handle_frame(
        &mut self,
        head: FrameHead,
        payload: &[u8],
        at: Instant,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<(), Failure> {
        match head.kind {
            frame::HEADERS => {
                self.check_response_stream(head.stream, "HEADERS")?;
                self.on_headers(head, payload, at, ledger, out)
            }
            frame::CONTINUATION => self.on_continuation(head, payload, at, ledger, out),
            frame::RST_STREAM => {
                if head.stream == 0 || head.stream >= self.next_stream_id {
                    return Err(Failure::protocol(format!(
                        "the server reset stream {}, which the client never opened",
                        head.stream
                    )));
                }
                let code =
                    read_u32(payload).ok_or_else(|| Failure::protocol("short RST_STREAM"))?;
                if let Some(stream) = self.streams.remove(&head.stream) {
                    // A refused stream was never processed (RFC 9113 §8.7): it goes again.
                    if code == frame::REFUSED_STREAM
                        && ledger.retry(stream.start, ErrorKind::Refused)
                    {
                        // Even when the budget is spent, this connection can send it.
                        self.budget_spent = false;
                    } else {
                        ledger.note_error(|| {
                            format!("the server reset a stream ({})", error_code_name(code))
                        });
                        ledger.fail_stream_reset(stream.start, crate::proto::ResetCode::H2(code));
                    }
                }
                Ok(())
            }
            frame::SETTINGS => self.on_settings(head, payload, ledger, out),
            frame::PING if head.flags & frame::ACK == 0 => {
                if payload.len() != 8 {
                    return Err(Failure::protocol("PING payload not 8 bytes"));
                }
                write_frame(out.bytes(), frame::PING, frame::ACK, 0, payload);
                self.count_control(out)
            }
            frame::GOAWAY => self.on_goaway(payload, ledger),
            frame::WINDOW_UPDATE => self.on_window_update(head, payload),
            frame::PUSH_PROMISE => Err(Failure::protocol(
                "the server pushed although we disabled push",
            )),
            // PRIORITY, PING acknowledgements and unknown frame types need nothing.
            _ => Ok(()),
        }
    }

    /// One more acknowledgement queued: a server that floods them while not reading is cut off.
    fn count_control(&mut self, out: &mut Outgoing) -> Result<(), Failure> {
        self.queued_control += 1;
        if self.queued_control > MAX_QUEUED_CONTROL {
            return Err(self.connection_error(
                out,
                frame::ENHANCE_YOUR_CALM,
                format!(
                    "the server sent over {MAX_QUEUED_CONTROL} PING/SETTINGS frames without reading our acknowledgements"
                ),
            ));
        }
        Ok(())
    }

    /// Queues GOAWAY with `code` (the connection closes after it) and names the failure.
    fn connection_error(&mut self, out: &mut Outgoing, code: u32, message: String) -> Failure {
        let last = self.next_stream_id.saturating_sub(2);
        let mut payload = [0u8; 8];
        payload[..4].copy_from_slice(&last.to_be_bytes());
        payload[4..].copy_from_slice(&code.to_be_bytes());
        write_frame(out.bytes(), frame::GOAWAY, 0, 0, &payload);
        Failure::protocol(message)
    }

    fn on_window_update(&mut self, head: FrameHead, payload: &[u8]) -> Result<(), Failure> {
        let increment = i64::from(
            read_u32(payload).ok_or_else(|| Failure::protocol("short WINDOW_UPDATE"))?
                & 0x7fff_ffff,
        );
        let window = if head.stream == 0 {
            &mut self.send_window
        } else if let Some(stream) = self.streams.get_mut(&head.stream) {
            &mut stream.send_window
        } else {
            return Ok(());
        };
        if increment == 0 {
            return Err(Failure::protocol("WINDOW_UPDATE with an increment of 0"));
        }
        *window += increment;
        if *window > frame::MAX_WINDOW {
            return Err(Failure::protocol(
                "WINDOW_UPDATE took a flow-control window above 2^31-1 (FLOW_CONTROL_ERROR)",
            ));
        }
        Ok(())
    }

    fn on_headers(
        &mut self,
        head: FrameHead,
        payload: &[u8],
        at: Instant,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<(), Failure> {
        let block = frame::header_fragment(head, payload).ok_or_else(|| {
            Failure::protocol("HEADERS padding or priority longer than the frame")
        })?;
        let mut pending = HeaderBlock {
            stream: head.stream,
            end_stream: head.flags & frame::END_STREAM != 0,
            wire_len: head.length,
            block: Vec::new(),
        };
        if head.flags & frame::END_HEADERS != 0 {
            return self.on_header_block(&pending, block, at, ledger, out);
        }
        pending.block.extend_from_slice(block);
        self.headers = Some(pending);
        Ok(())
    }

    fn on_continuation(
        &mut self,
        head: FrameHead,
        payload: &[u8],
        at: Instant,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<(), Failure> {
        let mut pending = self
            .headers
            .take()
            .ok_or_else(|| Failure::protocol("CONTINUATION without HEADERS"))?;
        if pending.stream != head.stream {
            return Err(Failure::protocol("CONTINUATION on another stream"));
        }
        pending.wire_len += head.length;
        if pending.wire_len > MAX_HEADER_BLOCK {
            return Err(Failure::protocol(format!(
                "a response header block larger than {} KiB (HEADERS and CONTINUATION)",
                MAX_HEADER_BLOCK / 1024
            )));
        }
        pending.block.extend_from_slice(payload);
        if head.flags & frame::END_HEADERS != 0 {
            let block = std::mem::take(&mut pending.block);
            return self.on_header_block(&pending, &block, at, ledger, out);
        }
        self.headers = Some(pending);
        Ok(())
    }

    /// A complete header block: decode it (always, to keep HPACK in step) and apply it to its
    /// stream. A malformed one fails its stream alone (RFC 9113 §8.1.1).
    fn on_header_block(
        &mut self,
        pending: &HeaderBlock,
        block: &[u8],
        at: Instant,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<(), Failure> {
        let decoded = self
            .decoder
            .decode(block)
            .map_err(|error| Failure::protocol(format!("invalid response headers: {}", error.0)))?;
        if decoded.uncompressed > MAX_HEADER_LIST {
            return Err(Failure::protocol(format!(
                "a response header list of {} bytes decoded, over the {} KiB limit",
                decoded.uncompressed,
                MAX_HEADER_LIST / 1024
            )));
        }
        let head = self.template.head;
        let Some(stream) = self.streams.get_mut(&pending.stream) else {
            return self.on_closed_stream(pending.stream, "HEADERS", out);
        };
        ledger
            .wire()
            .add_headers(pending.wire_len as u64, decoded.uncompressed);
        let rules = decoded.rules;
        let malformed = match (stream.status, decoded.status) {
            _ if rules.malformed.is_some() => rules.malformed,
            (None, None) => Some("a response without a valid :status"),
            (None, Some(status)) if !(100..=599).contains(&status) || status == 101 => {
                Some("a :status outside 100-599, or 101 (not allowed in HTTP/2)")
            }
            (None, Some(100..=199)) if pending.end_stream => {
                Some("an interim (1xx) response that ends the stream")
            }
            (None, Some(100..=199)) => {
                stream.interim += 1;
                if stream.interim > MAX_INTERIM {
                    return Err(Failure::protocol(format!(
                        "more than {MAX_INTERIM} interim (1xx) responses to one request"
                    )));
                }
                None
            }
            (None, Some(status)) => {
                stream.status = Some(status);
                stream.first_byte = Some(at);
                stream.check.headers = decoded.matched;
                // Responses with no content (RFC 9110 §6.4.1) may announce a length anyway.
                let no_content = head || status == 204 || status == 304;
                stream.content_length = if no_content {
                    Some(0)
                } else {
                    rules.content_length
                };
                None
            }
            (Some(_), _) if rules.pseudo => Some("a pseudo-header in trailers"),
            (Some(_), _) if !pending.end_stream => Some("trailers that do not end the stream"),
            (Some(_), _) => None,
        };
        if let Some(reason) = malformed {
            self.malformed(
                pending.stream,
                reason,
                pending.end_stream,
                ledger,
                out.bytes(),
            );
        } else if pending.end_stream {
            self.finish_stream(pending.stream, at, ledger, out.bytes());
        }
        Ok(())
    }

    /// A frame on a stream no longer open. Ignored when the client reset the stream (frames may
    /// cross its RST_STREAM) or a GOAWAY left it unprocessed; after the server ended it
    /// (END_STREAM, RST_STREAM), a connection error STREAM_CLOSED (RFC 9113 §5.1).
    fn on_closed_stream(&mut self, id: u32, what: &str, out: &mut Outgoing) -> Result<(), Failure> {
        let reset_by_us = id <= self.forgotten_reset || self.resets.contains(&id);
        if reset_by_us || self.goaway.is_some_and(|last| id > last) {
            return Ok(());
        }
        Err(self.connection_error(
            out,
            frame::STREAM_CLOSED,
            format!("the server sent {what} on stream {id} after ending it (STREAM_CLOSED)"),
        ))
    }

    /// A malformed response (RFC 9113 §8.1.1), a stream error: its request fails once, as a
    /// protocol error, and the stream is reset with PROTOCOL_ERROR unless both sides ended it
    /// (`ended`: the server did).
    fn malformed(
        &mut self,
        id: u32,
        reason: &'static str,
        ended: bool,
        ledger: &Ledger<'_>,
        out: &mut Vec<u8>,
    ) {
        let Some(stream) = self.streams.remove(&id) else {
            return;
        };
        if !ended || stream.body_left > 0 {
            self.reset(id, frame::PROTOCOL_ERROR, out);
        }
        ledger.note_error(|| format!("a malformed HTTP/2 response: {reason}"));
        ledger.fail(stream.start, ErrorKind::Protocol);
    }

    /// Resets stream `id` with `code`, remembering it: frames may still come for it.
    fn reset(&mut self, id: u32, code: u32, out: &mut Vec<u8>) {
        write_frame(out, frame::RST_STREAM, 0, id, &code.to_be_bytes());
        if self.resets.len() == RESETS_KEPT {
            let forgotten = self.resets.pop_front().expect("the queue is full");
            self.forgotten_reset = self.forgotten_reset.max(forgotten);
        }
        self.resets.push_back(id);
    }

    fn on_settings(
        &mut self,
        head: FrameHead,
        payload: &[u8],
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<(), Failure> {
        if head.flags & frame::ACK != 0 {
            if !self.settings_acked {
                // Our SETTINGS_INITIAL_WINDOW_SIZE now holds for the streams already open too.
                let before = self.stream_recv_window();
                self.settings_acked = true;
                let delta = self.stream_recv_window() - before;
                for stream in self.streams.values_mut() {
                    stream.recv_window += delta;
                }
            }
            return Ok(());
        }
        if !payload.len().is_multiple_of(6) {
            return Err(Failure::protocol("SETTINGS payload not a multiple of 6"));
        }
        for setting in payload.chunks_exact(6) {
            let value = u32::from_be_bytes([setting[2], setting[3], setting[4], setting[5]]);
            match u16::from_be_bytes([setting[0], setting[1]]) {
                frame::SETTINGS_HEADER_TABLE_SIZE => self.encoder.server_table_size(value as usize),
                frame::SETTINGS_MAX_CONCURRENT_STREAMS => self.server_max_streams = value as usize,
                frame::SETTINGS_INITIAL_WINDOW_SIZE => {
                    if i64::from(value) > frame::MAX_WINDOW {
                        return Err(Failure::protocol("INITIAL_WINDOW_SIZE above 2^31-1"));
                    }
                    let delta = i64::from(value) - self.initial_send_window;
                    self.initial_send_window = i64::from(value);
                    for stream in self.streams.values_mut() {
                        stream.send_window += delta;
                    }
                }
                frame::SETTINGS_MAX_FRAME_SIZE => {
                    if !(frame::MIN_MAX_FRAME_SIZE..1 << 24).contains(&(value as usize)) {
                        return Err(Failure::protocol(format!(
                            "MAX_FRAME_SIZE {value} outside 2^14..2^24-1"
                        )));
                    }
                    self.max_send_frame = value as usize;
                }
                _ => {}
            }
        }
        write_frame(out.bytes(), frame::SETTINGS, frame::ACK, 0, &[]);
        if !self.settings_received {
            self.settings_received = true;
            self.settings_due = None;
            ledger.note_effective_concurrency(self.template.lanes.min(self.server_max_streams));
            return Ok(());
        }
        self.count_control(out)
    }

    /// GOAWAY: streams above the last one the server will process were never processed (RFC 9113
    /// §6.8); they go again on another connection (they fail with `--no-retry`), and no new
    /// stream opens on this one.
    fn on_goaway(&mut self, payload: &[u8], ledger: &Ledger<'_>) -> Result<(), Failure> {
        let last =
            read_u32(payload).ok_or_else(|| Failure::protocol("short GOAWAY"))? & 0x7fff_ffff;
        let code = payload
            .get(4..8)
            .and_then(read_u32)
            .unwrap_or(frame::NO_ERROR);
        if self.next_stream_id == 1 {
            return Err(Failure::new(
                ErrorKind::Goaway,
                format!(
                    "the server sent GOAWAY ({}) before the first request",
                    error_code_name(code)
                ),
            ));
        }
        if code != frame::NO_ERROR {
            ledger.note_error(|| format!("the server sent GOAWAY with {}", error_code_name(code)));
        }
        self.goaway = Some(last);
        let mut unprocessed: Vec<u32> = self
            .streams
            .keys()
            .copied()
            .filter(|id| *id > last)
            .collect();
        // Oldest first, so they go again in the order they were sent (the map has no order).
        unprocessed.sort_unstable();
        for id in unprocessed {
            if let Some(stream) = self.streams.remove(&id) {
                if !ledger.retry(stream.start, ErrorKind::Goaway) {
                    ledger.fail(stream.start, ErrorKind::Goaway);
                }
            }
        }
        Ok(())
    }

    /// The server ended stream `id`: its response is complete, unless its body fell short of
    /// its content-length (malformed).
    fn finish_stream(&mut self, id: u32, at: Instant, ledger: &Ledger<'_>, out: &mut Vec<u8>) {
        let Some(stream) = self.streams.get(&id) else {
            return;
        };
        if stream
            .content_length
            .is_some_and(|length| length != stream.received)
        {
            let reason = "a body shorter than its content-length";
            return self.malformed(id, reason, true, ledger, out);
        }
        let Some(stream) = self.streams.remove(&id) else {
            return;
        };
        if stream.body_left > 0 {
            // The server answered before the whole body went: the rest is abandoned, and
            // RST_STREAM closes our half of the stream, which would otherwise stay open on the
            // server (RFC 9113 §8.1). NO_ERROR: the response is complete, nothing failed.
            self.reset(id, frame::NO_ERROR, out);
        }
        let Some(status) = stream.status else {
            ledger.fail(stream.start, ErrorKind::Protocol);
            return;
        };
        ledger.complete(
            ResponseSample {
                start: stream.start,
                first_byte: stream.first_byte.unwrap_or(at),
                end: at,
                status,
            },
            &stream.check,
        );
    }
}

/// What a server that answers the preface with something other than HTTP/2 speaks, if the
/// first bytes tell: TLS records (an h2c request to a TLS port) or an HTTP/1.1 response.
fn not_http2(first: &[u8]) -> Option<&'static str> {
    if crate::proto::is_tls_record(first) {
        return Some("the server answered with TLS: it expects https:// (h2 over TLS), not h2c");
    }
    if first.starts_with(b"HTTP/1.")
        || (first.len() < 7 && b"HTTP/1.".starts_with(first) && !first.is_empty())
    {
        return Some("the server answered in HTTP/1.1: it does not speak h2c by prior knowledge (try --proto h2c-upgrade or h1)");
    }
    None
}

fn window_update(out: &mut Vec<u8>, stream: u32, increment: i64) {
    write_frame(
        out,
        frame::WINDOW_UPDATE,
        0,
        stream,
        &(increment as u32).to_be_bytes(),
    );
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::super::driver::feed;
    use super::super::session::AnySession;
    use super::super::testing::{converse, open, world};
    use super::*;
    use crate::plan::Protocol;

    #[test]
    fn checks_read_decoded_headers_and_unpadded_data_split_anywhere() {
        let mut server = Vec::new();
        write_frame(&mut server, frame::SETTINGS, 0, 0, &[]);
        write_frame(&mut server, frame::SETTINGS, frame::ACK, 0, &[]);
        // Stream 1: `x-a: 1` inserted in the dynamic table; a body of "bo" and "xx" whose
        // padding ("dy") would complete "body" if it were searched.
        let head = [0x88, 0x40, 0x03, b'x', b'-', b'a', 0x01, b'1'];
        write_frame(&mut server, frame::HEADERS, frame::END_HEADERS, 1, &head);
        write_frame(
            &mut server,
            frame::DATA,
            frame::PADDED,
            1,
            &[2, b'b', b'o', b'd', b'y'],
        );
        write_frame(&mut server, frame::DATA, frame::END_STREAM, 1, b"xx");
        // Stream 3: the field by its dynamic table index; "body" over two DATA frames.
        write_frame(
            &mut server,
            frame::HEADERS,
            frame::END_HEADERS,
            3,
            &[0x88, 0xbe],
        );
        write_frame(&mut server, frame::DATA, 0, 3, b"bo");
        write_frame(&mut server, frame::DATA, frame::END_STREAM, 3, b"dy");
        for piece in [1, 2, 3, 5, 7, server.len()] {
            let world = world(&[
                "--proto",
                "h2c",
                "-m",
                "2",
                "-n",
                "2",
                "--expect-header",
                "X-A: 1",
                "--expect-body-contains",
                "body",
            ]);
            let outcome = converse(&world, Protocol::H2c, &server, piece);
            assert_eq!(outcome.failure, None, "piece {piece}");
            let counters = outcome.counters;
            assert_eq!(
                (counters.succeeded, counters.failed),
                (1, 1),
                "piece {piece}"
            );
            assert_eq!(outcome.errors, [(ErrorKind::Check, 1)], "piece {piece}");
            let recorder = world.shared.recorder.borrow();
            assert_eq!(
                recorder.checks.first_mismatch.as_deref(),
                Some("the body does not contain \"body\" (searched 4 bytes)"),
                "piece {piece}"
            );
        }
    }

    #[test]
    fn the_timeout_queue_holds_only_streams_in_flight() {
        let world = world(&[
            "--proto",
            "h2c",
            "-m",
            "4",
            "-n",
            "1000",
            "--request-timeout",
            "10s",
        ]);
        let (ledger, mut out, mut session) = open(&world, Protocol::H2c, None);
        let mut pending = Vec::new();
        let mut settings = Vec::new();
        write_frame(&mut settings, frame::SETTINGS, 0, 0, &[]);
        feed(
            &mut session,
            &settings,
            &mut pending,
            Instant::now(),
            &ledger,
            &mut out,
        )
        .unwrap();
        for round in 0..250u32 {
            session.fill(&ledger, &mut out).unwrap();
            let mut answers = Vec::new();
            for lane in 0..4 {
                let id = 1 + 2 * (4 * round + lane);
                write_frame(
                    &mut answers,
                    frame::HEADERS,
                    frame::END_HEADERS | frame::END_STREAM,
                    id,
                    &[0x88],
                );
            }
            feed(
                &mut session,
                &answers,
                &mut pending,
                Instant::now(),
                &ledger,
                &mut out,
            )
            .unwrap();
            let AnySession::H2(h2) = &session else {
                unreachable!("an h2c session")
            };
            assert!(
                h2.started.len() <= 8,
                "round {round}: {} tracked",
                h2.started.len()
            );
        }
        assert_eq!(world.shared.recorder.borrow().counters.succeeded, 1000);
    }
}
