//! HTTP/2 client engine (RFC 9113), written at the frame level for speed: one task per connection,
//! no future or allocation per request, header blocks encoded from prepared fields, and every
//! frame produced while handling a read leaves in one write. See the README for why this replaced
//! the `h2` crate on the client side.
//!
//! Each connection waits for the server's SETTINGS, then keeps `min(-m, SETTINGS_MAX_CONCURRENT_STREAMS)`
//! streams open. Response bodies are counted, not kept; receive windows are replenished as data
//! arrives; request bodies respect the server's windows.

pub(crate) mod hpack;
mod huffman;

use std::collections::{HashMap, VecDeque};
use std::future::poll_fn;
use std::hash::{BuildHasherDefault, Hasher};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::future::LocalBoxFuture;
use futures_util::FutureExt;
use http::Method;

use super::{
    io_error_kind, transfer, wait_for, ConnEnd, Engine, Io, PathCycle, Session, Slot, Waited,
};
use crate::h2frame::{self, FrameHead};
use crate::plan::{H2Settings, RunPlan};
use crate::recorder::{ErrorKind, RequestStart, ResponseSample};

const PREFACE: &[u8; h2frame::PREFACE_LEN] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Header fields HTTP/2 forbids (RFC 9113 §8.2.2); h2load drops them too.
const CONNECTION_SPECIFIC: [&str; 6] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "host",
];
/// The window every stream and the connection start with (RFC 9113 §6.9.2).
const DEFAULT_WINDOW: i64 = 65_535;
const MAX_WINDOW: i64 = (1 << 31) - 1;
/// Error code CANCEL, sent when a request times out.
const CANCEL: u32 = 0x8;

/// The HTTP/2 engine (h2c by prior knowledge or after an upgrade, and h2 over TLS).
pub struct H2 {
    /// `:method`, `:scheme`, then `:authority` and the other headers; the path goes in between.
    fields: Vec<hpack::Field>,
    /// One `:path` field per URL.
    paths: Vec<hpack::Field>,
    body: Bytes,
    lanes: usize,
    settings: H2Settings,
    request_timeout: Option<Duration>,
}

/// Fields before `:path` in `H2::fields` (`:method`, `:scheme`).
const FIELDS_BEFORE_PATH: usize = 2;

impl H2 {
    /// Prepares the request's header fields once.
    pub fn new(plan: &RunPlan) -> Self {
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
        for (name, value) in &template.headers {
            if !CONNECTION_SPECIFIC.contains(&name.as_str()) {
                fields.push(hpack::Field::new(name.as_str(), value.as_bytes()));
            }
        }
        if let Some(length) = template.content_length() {
            fields.push(hpack::Field::new(
                "content-length",
                length.to_string().as_bytes(),
            ));
        }
        H2 {
            fields,
            paths: template
                .paths
                .iter()
                .map(|path| hpack::Field::new(":path", path.as_bytes()))
                .collect(),
            body: if template.method == Method::HEAD {
                Bytes::new()
            } else {
                template.body.clone()
            },
            lanes: plan.max_concurrent,
            settings: plan.h2,
            request_timeout: plan.timeouts.request,
        }
    }

    /// Drives a connection. After an h2c upgrade, `upgraded` is the start of the HTTP/1.1 request
    /// whose response arrives on stream 1, and `received` holds bytes read after the `101`.
    pub async fn run(
        &self,
        mut io: Io,
        session: Session<'_>,
        upgraded: Option<RequestStart>,
        received: &[u8],
    ) -> ConnEnd {
        let mut conn = Connection::new(self, session, upgraded, received);
        let mut handed_over = !received.is_empty();
        loop {
            if let Some(end) = conn.open_streams() {
                return end;
            }
            conn.send_bodies();
            if let Some(end) = conn.finished() {
                return end;
            }
            if !handed_over {
                if let Err(end) = conn.exchange(&mut io).await {
                    return end;
                }
            }
            handed_over = false;
            if let Err(failure) = conn.process_frames() {
                return conn.fail_connection(failure);
            }
        }
    }

    fn field_count(&self) -> usize {
        self.fields.len() + self.paths.len()
    }
}

impl Engine for H2 {
    fn drive<'a>(&'a self, io: Io, session: Session<'a>) -> LocalBoxFuture<'a, ConnEnd> {
        self.run(io, session, None, &[]).boxed_local()
    }
}

/// The SETTINGS payload the client announces (also sent as `HTTP2-Settings` when upgrading).
pub fn settings_payload(settings: &H2Settings) -> Vec<u8> {
    let mut payload = Vec::with_capacity(24);
    for (id, value) in [
        (0x1u16, settings.header_table_size),
        (0x2, 0), // ENABLE_PUSH
        (0x4, settings.stream_window),
        (0x5, settings.max_frame_size),
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
    /// Bytes received since the last stream WINDOW_UPDATE.
    unacked: i64,
    /// What the server lets us send on this stream.
    send_window: i64,
    /// Request body bytes not sent yet.
    body_left: usize,
}

/// Why the connection cannot continue.
struct Failure {
    kind: ErrorKind,
    message: String,
}

fn protocol_error(message: impl Into<String>) -> Failure {
    Failure {
        kind: ErrorKind::Protocol,
        message: message.into(),
    }
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
struct Connection<'a> {
    engine: &'a H2,
    session: Session<'a>,
    paths: PathCycle,
    out: Vec<u8>,
    written: usize,
    input: Vec<u8>,
    parsed_to: usize,
    filled_to: usize,
    read_at: Instant,
    eof: bool,
    streams: StreamMap,
    /// Streams in the order they started, for the request timeout (completed ones are skipped lazily).
    started: VecDeque<(u32, Instant)>,
    /// Streams with request body left to send.
    bodies: VecDeque<u32>,
    next_stream_id: u32,
    settings_received: bool,
    server_max_streams: usize,
    initial_send_window: i64,
    send_window: i64,
    max_send_frame: usize,
    unacked: i64,
    data: Option<DataInProgress>,
    headers: Option<HeaderBlock>,
    decoder: hpack::Decoder,
    encoder: hpack::Encoder,
    goaway: Option<u32>,
    budget_spent: bool,
    /// When the next scheduled request is due (`--rate`), if a stream is free for it.
    wake: Option<Instant>,
}

impl<'a> Connection<'a> {
    fn new(
        engine: &'a H2,
        session: Session<'a>,
        upgraded: Option<RequestStart>,
        received: &[u8],
    ) -> Self {
        let settings = engine.settings;
        let input_size = (256 * 1024)
            .max(h2frame::HEADER_LEN + settings.max_frame_size as usize)
            .max(received.len());
        let mut input = vec![0; input_size];
        input[..received.len()].copy_from_slice(received);
        let mut conn = Connection {
            engine,
            session,
            paths: PathCycle::starting_at(usize::from(upgraded.is_some())),
            out: Vec::with_capacity(16 * 1024),
            written: 0,
            input,
            parsed_to: 0,
            filled_to: received.len(),
            read_at: Instant::now(),
            eof: false,
            streams: StreamMap::with_capacity_and_hasher(
                engine.lanes.min(1024) + 1,
                Default::default(),
            ),
            started: VecDeque::new(),
            bodies: VecDeque::new(),
            next_stream_id: 1,
            settings_received: false,
            server_max_streams: usize::MAX,
            initial_send_window: DEFAULT_WINDOW,
            send_window: DEFAULT_WINDOW,
            max_send_frame: 16_384,
            unacked: 0,
            data: None,
            headers: None,
            decoder: hpack::Decoder::new(settings.header_table_size as usize),
            encoder: hpack::Encoder::new(engine.field_count()),
            goaway: None,
            budget_spent: false,
            wake: None,
        };
        conn.out.extend_from_slice(PREFACE);
        let payload = settings_payload(&settings);
        conn.frame(h2frame::SETTINGS, 0, 0, &payload);
        let extra_window = i64::from(settings.connection_window) - DEFAULT_WINDOW;
        if extra_window > 0 {
            conn.window_update(0, extra_window);
        }
        if let Some(start) = upgraded {
            // The upgrade request is stream 1, half-closed from our side (RFC 7540 §3.2).
            conn.streams.insert(1, conn.new_stream(start, 0));
            conn.track_start(1, start.actual);
            conn.next_stream_id = 3;
        }
        conn
    }

    fn new_stream(&self, start: RequestStart, body_left: usize) -> Stream {
        Stream {
            start,
            first_byte: None,
            status: None,
            unacked: 0,
            send_window: self.initial_send_window,
            body_left,
        }
    }

    fn track_start(&mut self, id: u32, start: Instant) {
        if self.engine.request_timeout.is_some() {
            self.started.push_back((id, start));
        }
    }

    /// Appends a frame to the output.
    fn frame(&mut self, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
        let head = FrameHead {
            length: payload.len(),
            kind,
            flags,
            stream,
        };
        self.out.extend_from_slice(&head.encode());
        self.out.extend_from_slice(payload);
    }

    fn window_update(&mut self, stream: u32, increment: i64) {
        self.frame(
            h2frame::WINDOW_UPDATE,
            0,
            stream,
            &(increment as u32).to_be_bytes(),
        );
    }

    /// Opens streams up to the lane count; `Some` ends the connection (stream ids ran out).
    fn open_streams(&mut self) -> Option<ConnEnd> {
        self.wake = None;
        if !self.settings_received || self.goaway.is_some() {
            return None;
        }
        let limit = self.engine.lanes.min(self.server_max_streams);
        while !self.budget_spent && self.streams.len() < limit {
            if self.next_stream_id > MAX_WINDOW as u32 {
                // Stream ids are spent: finish what is open, then reconnect.
                return self.streams.is_empty().then_some(ConnEnd::Lost);
            }
            let start = match self.session.next_request() {
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
            self.write_headers(id);
            let body_left = self.engine.body.len();
            self.streams.insert(id, self.new_stream(start, body_left));
            self.track_start(id, start.actual);
            if body_left > 0 {
                self.bodies.push_back(id);
            }
        }
        None
    }

    /// Appends the request's HEADERS (and CONTINUATION, if the block exceeds the server's frame size).
    fn write_headers(&mut self, id: u32) {
        let engine = self.engine;
        let head_at = self.out.len();
        self.out.extend_from_slice(&[0; h2frame::HEADER_LEN]);
        self.encoder.begin_block(&mut self.out);
        let path = self.paths.next(engine.paths.len());
        for (slot, field) in engine.fields[..FIELDS_BEFORE_PATH].iter().enumerate() {
            self.encoder.encode(&mut self.out, slot, field);
        }
        self.encoder.encode(
            &mut self.out,
            engine.fields.len() + path,
            &engine.paths[path],
        );
        for (slot, field) in engine.fields.iter().enumerate().skip(FIELDS_BEFORE_PATH) {
            self.encoder.encode(&mut self.out, slot, field);
        }
        let end_stream = if engine.body.is_empty() {
            h2frame::END_STREAM
        } else {
            0
        };
        let block_len = self.out.len() - head_at - h2frame::HEADER_LEN;
        if block_len <= self.max_send_frame {
            let head = FrameHead {
                length: block_len,
                kind: h2frame::HEADERS,
                flags: end_stream | h2frame::END_HEADERS,
                stream: id,
            };
            self.out[head_at..head_at + h2frame::HEADER_LEN].copy_from_slice(&head.encode());
            return;
        }
        let block = self.out.split_off(head_at + h2frame::HEADER_LEN);
        self.out.truncate(head_at);
        let mut chunks = block.chunks(self.max_send_frame).peekable();
        let mut kind = h2frame::HEADERS;
        let mut flags = end_stream;
        while let Some(chunk) = chunks.next() {
            if chunks.peek().is_none() {
                flags |= h2frame::END_HEADERS;
            }
            self.frame(kind, flags, id, chunk);
            kind = h2frame::CONTINUATION;
            flags = 0;
        }
    }

    /// Sends as much pending request body as the server's windows allow.
    fn send_bodies(&mut self) {
        let body = self.engine.body.clone();
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
                let from = body.len() - stream.body_left;
                stream.body_left -= chunk;
                stream.send_window -= chunk as i64;
                self.send_window -= chunk as i64;
                let flags = if stream.body_left == 0 {
                    h2frame::END_STREAM
                } else {
                    0
                };
                let head = FrameHead {
                    length: chunk,
                    kind: h2frame::DATA,
                    flags,
                    stream: id,
                };
                self.out.extend_from_slice(&head.encode());
                self.out.extend_from_slice(&body[from..from + chunk]);
            }
            self.bodies.pop_front();
        }
    }

    /// Writes what is queued and reads what arrives (within the oldest request's timeout).
    async fn exchange(&mut self, io: &mut Io) -> Result<(), ConnEnd> {
        if self.parsed_to > 0 {
            self.input.copy_within(self.parsed_to..self.filled_to, 0);
            self.filled_to -= self.parsed_to;
            self.parsed_to = 0;
        }
        let deadline = self.next_deadline();
        let (out, written, input) = (
            &mut self.out,
            &mut self.written,
            &mut self.input[self.filled_to..],
        );
        let step = poll_fn(|cx| transfer(io, out, written, input, cx));
        let read = match wait_for(step, deadline, self.wake).await {
            Waited::Io(read) => read,
            Waited::TimedOut => {
                self.time_out_oldest();
                return Ok(());
            }
            Waited::Woke => return Ok(()),
        };
        self.read_at = Instant::now();
        match read {
            Ok(0) => self.eof = true,
            Ok(count) => self.filled_to += count,
            Err(error) => {
                return Err(self.fail_connection(Failure {
                    kind: io_error_kind(&error),
                    message: format!("HTTP/2 connection failed: {error}"),
                }))
            }
        }
        Ok(())
    }

    fn next_deadline(&mut self) -> Option<Instant> {
        let limit = self.engine.request_timeout?;
        while let Some(&(id, start)) = self.started.front() {
            match self.streams.get(&id) {
                Some(stream) if stream.start.actual == start => return Some(start + limit),
                _ => {
                    self.started.pop_front();
                }
            }
        }
        None
    }

    /// The oldest request ran out of time: cancel just that stream.
    fn time_out_oldest(&mut self) {
        let Some((id, _)) = self.started.pop_front() else {
            return;
        };
        if let Some(stream) = self.streams.remove(&id) {
            self.frame(h2frame::RST_STREAM, 0, id, &CANCEL.to_be_bytes());
            self.session.fail(stream.start, ErrorKind::Timeout);
        }
    }

    /// Handles every complete frame in the input (and the part of a DATA frame that has arrived).
    fn process_frames(&mut self) -> Result<(), Failure> {
        loop {
            if let Some(data) = self.data {
                if !self.consume_data(data)? {
                    return Ok(());
                }
                continue;
            }
            let available = self.filled_to - self.parsed_to;
            let Some(head) =
                self.input[self.parsed_to..self.filled_to].first_chunk::<{ h2frame::HEADER_LEN }>()
            else {
                return Ok(());
            };
            let head = FrameHead::parse(head);
            if head.length > self.engine.settings.max_frame_size as usize {
                return Err(protocol_error(format!(
                    "the server sent a {}-byte frame, over our MAX_FRAME_SIZE",
                    head.length
                )));
            }
            if self.headers.is_some() && head.kind != h2frame::CONTINUATION {
                return Err(protocol_error(
                    "a header block was interrupted by another frame",
                ));
            }
            if head.kind == h2frame::DATA {
                self.parsed_to += h2frame::HEADER_LEN;
                self.data = Some(DataInProgress {
                    stream: head.stream,
                    left: head.length,
                    padded: head.flags & h2frame::PADDED != 0,
                    padding: 0,
                    end_stream: head.flags & h2frame::END_STREAM != 0,
                    length: head.length,
                });
                continue;
            }
            if available < h2frame::HEADER_LEN + head.length {
                return Ok(());
            }
            let from = self.parsed_to + h2frame::HEADER_LEN;
            self.parsed_to = from + head.length;
            let payload = std::mem::take(&mut self.input);
            let result = self.handle_frame(head, &payload[from..from + head.length]);
            self.input = payload;
            result?;
        }
    }

    /// Counts the arrived part of a DATA frame; `false` when more bytes are needed.
    fn consume_data(&mut self, mut data: DataInProgress) -> Result<bool, Failure> {
        let mut available = self.filled_to - self.parsed_to;
        if data.padded && data.left > 0 {
            if available == 0 {
                self.data = Some(data);
                return Ok(false);
            }
            data.padding = usize::from(self.input[self.parsed_to]);
            data.padded = false;
            data.left -= 1;
            self.parsed_to += 1;
            available -= 1;
            if data.padding > data.left {
                return Err(protocol_error("DATA padding longer than the frame"));
            }
        }
        let take = data.left.min(available);
        let body_bytes = take.min(data.left.saturating_sub(data.padding));
        if body_bytes > 0 && self.streams.contains_key(&data.stream) {
            self.session.wire().add_data(body_bytes as u64);
        }
        data.left -= take;
        self.parsed_to += take;
        if data.left > 0 {
            self.data = Some(data);
            return Ok(false);
        }
        self.data = None;
        self.data_frame_done(data);
        Ok(true)
    }

    /// A whole DATA frame arrived: hand its window back, and finish the stream at END_STREAM.
    fn data_frame_done(&mut self, data: DataInProgress) {
        let length = data.length as i64;
        self.unacked += length;
        if self.unacked >= i64::from(self.engine.settings.connection_window) / 2 {
            let increment = std::mem::take(&mut self.unacked);
            self.window_update(0, increment);
        }
        if data.end_stream {
            self.finish_stream(data.stream);
            return;
        }
        let half_window = i64::from(self.engine.settings.stream_window) / 2;
        if let Some(stream) = self.streams.get_mut(&data.stream) {
            stream.unacked += length;
            if stream.unacked >= half_window {
                let increment = std::mem::take(&mut stream.unacked);
                self.window_update(data.stream, increment);
            }
        }
    }

    fn handle_frame(&mut self, head: FrameHead, payload: &[u8]) -> Result<(), Failure> {
        match head.kind {
            h2frame::HEADERS => self.on_headers(head, payload),
            h2frame::CONTINUATION => self.on_continuation(head, payload),
            h2frame::RST_STREAM => {
                let code = read_u32(payload).ok_or_else(|| protocol_error("short RST_STREAM"))?;
                if let Some(stream) = self.streams.remove(&head.stream) {
                    self.session.note_error(|| {
                        format!("the server reset a stream ({})", error_code_name(code))
                    });
                    self.session.fail_stream_reset(stream.start, code);
                }
                Ok(())
            }
            h2frame::SETTINGS => self.on_settings(head, payload),
            h2frame::PING if head.flags & h2frame::ACK == 0 => {
                self.frame(h2frame::PING, h2frame::ACK, 0, payload);
                Ok(())
            }
            h2frame::GOAWAY => self.on_goaway(payload),
            h2frame::WINDOW_UPDATE => {
                let increment = i64::from(
                    read_u32(payload).ok_or_else(|| protocol_error("short WINDOW_UPDATE"))?
                        & 0x7fff_ffff,
                );
                if head.stream == 0 {
                    self.send_window += increment;
                } else if let Some(stream) = self.streams.get_mut(&head.stream) {
                    stream.send_window += increment;
                }
                Ok(())
            }
            h2frame::PUSH_PROMISE => Err(protocol_error(
                "the server pushed although we disabled push",
            )),
            // PRIORITY, PING acknowledgements and unknown frame types need nothing.
            _ => Ok(()),
        }
    }

    fn on_headers(&mut self, head: FrameHead, payload: &[u8]) -> Result<(), Failure> {
        let block = h2frame::header_fragment(head, payload)
            .ok_or_else(|| protocol_error("HEADERS padding or priority longer than the frame"))?;
        let mut pending = HeaderBlock {
            stream: head.stream,
            end_stream: head.flags & h2frame::END_STREAM != 0,
            wire_len: head.length,
            block: Vec::new(),
        };
        if head.flags & h2frame::END_HEADERS != 0 {
            return self.on_header_block(&pending, block);
        }
        pending.block.extend_from_slice(block);
        self.headers = Some(pending);
        Ok(())
    }

    fn on_continuation(&mut self, head: FrameHead, payload: &[u8]) -> Result<(), Failure> {
        let mut pending = self
            .headers
            .take()
            .ok_or_else(|| protocol_error("CONTINUATION without HEADERS"))?;
        if pending.stream != head.stream {
            return Err(protocol_error("CONTINUATION on another stream"));
        }
        pending.block.extend_from_slice(payload);
        pending.wire_len += head.length;
        if head.flags & h2frame::END_HEADERS != 0 {
            let block = std::mem::take(&mut pending.block);
            return self.on_header_block(&pending, &block);
        }
        self.headers = Some(pending);
        Ok(())
    }

    /// A complete header block: decode it (always, to keep HPACK in step) and apply it to its stream.
    fn on_header_block(&mut self, pending: &HeaderBlock, block: &[u8]) -> Result<(), Failure> {
        let decoded = self
            .decoder
            .decode(block)
            .map_err(|error| protocol_error(format!("invalid response headers: {}", error.0)))?;
        let Some(stream) = self.streams.get_mut(&pending.stream) else {
            return Ok(());
        };
        self.session
            .wire()
            .add_headers(pending.wire_len as u64, decoded.uncompressed);
        match decoded.status {
            // Informational responses precede the real one.
            Some(100..=199) => {}
            Some(status) if stream.status.is_none() => {
                stream.status = Some(status);
                stream.first_byte = Some(self.read_at);
            }
            None if stream.status.is_none() => {
                return Err(protocol_error("a response without :status"))
            }
            _ => {} // trailers
        }
        if pending.end_stream {
            self.finish_stream(pending.stream);
        }
        Ok(())
    }

    fn on_settings(&mut self, head: FrameHead, payload: &[u8]) -> Result<(), Failure> {
        if head.flags & h2frame::ACK != 0 {
            return Ok(());
        }
        if payload.len() % 6 != 0 {
            return Err(protocol_error("SETTINGS payload not a multiple of 6"));
        }
        for setting in payload.chunks_exact(6) {
            let value = u32::from_be_bytes([setting[2], setting[3], setting[4], setting[5]]);
            match u16::from_be_bytes([setting[0], setting[1]]) {
                0x1 => self.encoder.server_table_size(value as usize),
                0x3 => self.server_max_streams = value as usize,
                0x4 => {
                    if i64::from(value) > MAX_WINDOW {
                        return Err(protocol_error("INITIAL_WINDOW_SIZE above 2^31-1"));
                    }
                    let delta = i64::from(value) - self.initial_send_window;
                    self.initial_send_window = i64::from(value);
                    for stream in self.streams.values_mut() {
                        stream.send_window += delta;
                    }
                }
                0x5 => self.max_send_frame = value as usize,
                _ => {}
            }
        }
        self.frame(h2frame::SETTINGS, h2frame::ACK, 0, &[]);
        if !self.settings_received {
            self.settings_received = true;
            self.session
                .note_effective_concurrency(self.engine.lanes.min(self.server_max_streams));
        }
        Ok(())
    }

    /// GOAWAY: streams above the last one the server will process were never processed; they fail
    /// (not retried silently), and no new stream opens on this connection.
    fn on_goaway(&mut self, payload: &[u8]) -> Result<(), Failure> {
        let last = read_u32(payload).ok_or_else(|| protocol_error("short GOAWAY"))? & 0x7fff_ffff;
        let code = payload.get(4..8).and_then(read_u32).unwrap_or(0);
        if code != 0 {
            self.session
                .note_error(|| format!("the server sent GOAWAY with {}", error_code_name(code)));
        }
        self.goaway = Some(last);
        let unprocessed: Vec<u32> = self
            .streams
            .keys()
            .copied()
            .filter(|id| *id > last)
            .collect();
        for id in unprocessed {
            if let Some(stream) = self.streams.remove(&id) {
                self.session.fail(stream.start, ErrorKind::Goaway);
            }
        }
        Ok(())
    }

    fn finish_stream(&mut self, id: u32) {
        let Some(stream) = self.streams.remove(&id) else {
            return;
        };
        let Some(status) = stream.status else {
            self.session.fail(stream.start, ErrorKind::Protocol);
            return;
        };
        self.session.complete(ResponseSample {
            start: stream.start,
            first_byte: stream.first_byte.unwrap_or(self.read_at),
            end: self.read_at,
            status,
        });
    }

    /// Whether the connection is done: `Some` when nothing is in flight and nothing more will be sent.
    fn finished(&mut self) -> Option<ConnEnd> {
        if self.eof {
            if self.streams.is_empty() {
                return Some(if self.budget_spent {
                    ConnEnd::Finished
                } else {
                    ConnEnd::Lost
                });
            }
            return Some(self.fail_connection(Failure {
                kind: ErrorKind::Closed,
                message:
                    "the server closed an HTTP/2 connection with requests in flight".to_owned(),
            }));
        }
        if !self.streams.is_empty() {
            return None;
        }
        if self.budget_spent {
            Some(ConnEnd::Finished)
        } else if self.goaway.is_some() {
            Some(ConnEnd::Lost)
        } else {
            None
        }
    }

    /// Fails every request in flight; the connection must be replaced.
    fn fail_connection(&mut self, failure: Failure) -> ConnEnd {
        let message = failure.message;
        self.session.note_error(|| message);
        for (_, stream) in self.streams.drain() {
            self.session.fail(stream.start, failure.kind);
        }
        ConnEnd::Lost
    }
}

/// The name of an HTTP/2 error code (RFC 9113 §7).
pub fn error_code_name(code: u32) -> String {
    const NAMES: [&str; 14] = [
        "NO_ERROR",
        "PROTOCOL_ERROR",
        "INTERNAL_ERROR",
        "FLOW_CONTROL_ERROR",
        "SETTINGS_TIMEOUT",
        "STREAM_CLOSED",
        "FRAME_SIZE_ERROR",
        "REFUSED_STREAM",
        "CANCEL",
        "COMPRESSION_ERROR",
        "CONNECT_ERROR",
        "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY",
        "HTTP_1_1_REQUIRED",
    ];
    NAMES
        .get(code as usize)
        .map_or_else(|| format!("{code:#x}"), |name| name.to_string())
}

fn read_u32(bytes: &[u8]) -> Option<u32> {
    bytes
        .first_chunk::<4>()
        .map(|bytes| u32::from_be_bytes(*bytes))
}
