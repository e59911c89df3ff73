//! HTTP/3 (RFC 9114) and QPACK (RFC 9204) as a load generator needs them, as bytes only (no
//! runtime, no QUIC): variable-length integers, the client's control stream, request field
//! sections encoded once per run, and parsers for a response stream and the server's
//! unidirectional streams, fed with chunks of any size split anywhere.
//!
//! The client announces SETTINGS_QPACK_MAX_TABLE_CAPACITY = 0 and SETTINGS_QPACK_BLOCKED_STREAMS
//! = 0, so a conforming server can only use the static table and literals: a reference to the
//! dynamic table in a response is a QPACK_DECOMPRESSION_FAILED connection error (RFC 9204 §2.2.3,
//! §4.5.1.1), and the encoder and decoder streams carry nothing the client must act on.

use std::fmt;

use std::sync::Arc;

use super::check::{Checks, ResponseCheck};
use super::hpack::{
    read_integer, read_prefixed_string, write_integer, DecodedBlock, Entry, FieldMatcher,
};

/// Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2).
pub const STREAM_CONTROL: u64 = 0x00;
/// A server push stream: never allowed, as the client sends no MAX_PUSH_ID.
pub const STREAM_PUSH: u64 = 0x01;
/// The QPACK encoder stream.
pub const STREAM_QPACK_ENCODER: u64 = 0x02;
/// The QPACK decoder stream.
pub const STREAM_QPACK_DECODER: u64 = 0x03;

/// Frame types (RFC 9114 §7.2).
pub const DATA: u64 = 0x00;
/// HEADERS.
pub const HEADERS: u64 = 0x01;
/// CANCEL_PUSH.
pub const CANCEL_PUSH: u64 = 0x03;
/// SETTINGS.
pub const SETTINGS: u64 = 0x04;
/// PUSH_PROMISE.
pub const PUSH_PROMISE: u64 = 0x05;
/// GOAWAY.
pub const GOAWAY: u64 = 0x07;
/// MAX_PUSH_ID.
pub const MAX_PUSH_ID: u64 = 0x0d;

/// SETTINGS_QPACK_MAX_TABLE_CAPACITY (RFC 9204 §5).
pub const SETTINGS_QPACK_MAX_TABLE_CAPACITY: u64 = 0x01;
/// SETTINGS_MAX_FIELD_SECTION_SIZE (RFC 9114 §7.2.4.1).
pub const SETTINGS_MAX_FIELD_SECTION_SIZE: u64 = 0x06;
/// SETTINGS_QPACK_BLOCKED_STREAMS (RFC 9204 §5).
pub const SETTINGS_QPACK_BLOCKED_STREAMS: u64 = 0x07;

/// H3_NO_ERROR: a graceful close.
pub const H3_NO_ERROR: u64 = 0x100;
/// H3_GENERAL_PROTOCOL_ERROR.
pub const H3_GENERAL_PROTOCOL_ERROR: u64 = 0x101;
/// H3_STREAM_CREATION_ERROR.
pub const H3_STREAM_CREATION_ERROR: u64 = 0x103;
/// H3_CLOSED_CRITICAL_STREAM.
pub const H3_CLOSED_CRITICAL_STREAM: u64 = 0x104;
/// H3_FRAME_UNEXPECTED.
pub const H3_FRAME_UNEXPECTED: u64 = 0x105;
/// H3_FRAME_ERROR.
pub const H3_FRAME_ERROR: u64 = 0x106;
/// H3_EXCESSIVE_LOAD.
pub const H3_EXCESSIVE_LOAD: u64 = 0x107;
/// H3_ID_ERROR.
pub const H3_ID_ERROR: u64 = 0x108;
/// H3_SETTINGS_ERROR.
pub const H3_SETTINGS_ERROR: u64 = 0x109;
/// H3_MISSING_SETTINGS.
pub const H3_MISSING_SETTINGS: u64 = 0x10a;
/// H3_REQUEST_REJECTED: the server did not process the request; it may go again.
pub const H3_REQUEST_REJECTED: u64 = 0x10b;
/// H3_REQUEST_CANCELLED.
pub const H3_REQUEST_CANCELLED: u64 = 0x10c;
/// H3_MESSAGE_ERROR.
pub const H3_MESSAGE_ERROR: u64 = 0x10e;
/// QPACK_DECOMPRESSION_FAILED.
pub const QPACK_DECOMPRESSION_FAILED: u64 = 0x200;

/// Names of the HTTP/3 and QPACK error codes (RFC 9114 §8.1, RFC 9204 §6).
const ERROR_NAMES: [(u64, &str); 20] = [
    (0x100, "H3_NO_ERROR"),
    (0x101, "H3_GENERAL_PROTOCOL_ERROR"),
    (0x102, "H3_INTERNAL_ERROR"),
    (0x103, "H3_STREAM_CREATION_ERROR"),
    (0x104, "H3_CLOSED_CRITICAL_STREAM"),
    (0x105, "H3_FRAME_UNEXPECTED"),
    (0x106, "H3_FRAME_ERROR"),
    (0x107, "H3_EXCESSIVE_LOAD"),
    (0x108, "H3_ID_ERROR"),
    (0x109, "H3_SETTINGS_ERROR"),
    (0x10a, "H3_MISSING_SETTINGS"),
    (0x10b, "H3_REQUEST_REJECTED"),
    (0x10c, "H3_REQUEST_CANCELLED"),
    (0x10d, "H3_REQUEST_INCOMPLETE"),
    (0x10e, "H3_MESSAGE_ERROR"),
    (0x10f, "H3_CONNECT_ERROR"),
    (0x110, "H3_VERSION_FALLBACK"),
    (0x200, "QPACK_DECOMPRESSION_FAILED"),
    (0x201, "QPACK_ENCODER_STREAM_ERROR"),
    (0x202, "QPACK_DECODER_STREAM_ERROR"),
];

/// The name of an HTTP/3 error code; reserved (GREASE) and unknown codes by number.
pub fn error_code_name(code: u64) -> String {
    match ERROR_NAMES.iter().find(|(known, _)| *known == code) {
        Some((_, name)) => (*name).to_owned(),
        None => format!("HTTP/3 error 0x{code:x}"),
    }
}

/// The largest HEADERS frame accepted, as received.
pub const MAX_HEADER_BLOCK: u64 = 64 * 1024;
/// The largest field section accepted once decoded (names and values), also announced as
/// SETTINGS_MAX_FIELD_SECTION_SIZE.
pub const MAX_HEADER_LIST: u64 = 64 * 1024;
/// The largest SETTINGS frame accepted from the server.
const MAX_SETTINGS: u64 = 16 * 1024;
/// Interim (1xx) responses accepted before one request's final response.
pub const MAX_INTERIM: u32 = 16;

/// A violation of HTTP/3 or QPACK: the code that names it and what was wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct H3Error {
    /// The HTTP/3 error code (RFC 9114 §8.1, RFC 9204 §6).
    pub code: u64,
    /// What the peer did.
    pub reason: &'static str,
}

impl H3Error {
    const fn new(code: u64, reason: &'static str) -> Self {
        H3Error { code, reason }
    }
}

impl fmt::Display for H3Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.reason, error_code_name(self.code))
    }
}

/// The largest value of a QUIC variable-length integer.
pub const MAX_VARINT: u64 = (1 << 62) - 1;

/// Appends a QUIC variable-length integer (RFC 9000 §16), in its shortest form.
pub fn write_varint(out: &mut Vec<u8>, value: u64) {
    debug_assert!(value <= MAX_VARINT);
    if value < 1 << 6 {
        out.push(value as u8);
    } else if value < 1 << 14 {
        out.extend_from_slice(&(value as u16 | 0x4000).to_be_bytes());
    } else if value < 1 << 30 {
        out.extend_from_slice(&(value as u32 | 0x8000_0000).to_be_bytes());
    } else {
        out.extend_from_slice(&(value | 0xc000_0000_0000_0000).to_be_bytes());
    }
}

/// Reads a variable-length integer at the start of `input`: its value and length, or `None`
/// when `input` holds only part of it.
pub fn read_varint(input: &[u8]) -> Option<(u64, usize)> {
    let first = *input.first()?;
    let length = 1usize << (first >> 6);
    let bytes = input.get(..length)?;
    let value = bytes[1..]
        .iter()
        .fold(u64::from(first & 0x3f), |value, byte| {
            (value << 8) | u64::from(*byte)
        });
    Some((value, length))
}

/// Appends a frame's type and length.
pub fn write_frame_head(out: &mut Vec<u8>, kind: u64, length: u64) {
    write_varint(out, kind);
    write_varint(out, length);
}

/// The opening of the client's control stream: its type and the SETTINGS frame (no dynamic
/// table, no blocked streams, field sections up to [`MAX_HEADER_LIST`]).
pub fn client_control_stream() -> Vec<u8> {
    let mut payload = Vec::new();
    for (id, value) in [
        (SETTINGS_QPACK_MAX_TABLE_CAPACITY, 0),
        (SETTINGS_QPACK_BLOCKED_STREAMS, 0),
        (SETTINGS_MAX_FIELD_SECTION_SIZE, MAX_HEADER_LIST),
    ] {
        write_varint(&mut payload, id);
        write_varint(&mut payload, value);
    }
    let mut out = Vec::new();
    write_varint(&mut out, STREAM_CONTROL);
    write_frame_head(&mut out, SETTINGS, payload.len() as u64);
    out.extend_from_slice(&payload);
    out
}

/// The QPACK static table (RFC 9204 Appendix A), 0-based as in the protocol.
const STATIC_TABLE: [(&str, &str); 99] = [
    (":authority", ""),
    (":path", "/"),
    ("age", "0"),
    ("content-disposition", ""),
    ("content-length", "0"),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("referer", ""),
    ("set-cookie", ""),
    (":method", "CONNECT"),
    (":method", "DELETE"),
    (":method", "GET"),
    (":method", "HEAD"),
    (":method", "OPTIONS"),
    (":method", "POST"),
    (":method", "PUT"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "103"),
    (":status", "200"),
    (":status", "304"),
    (":status", "404"),
    (":status", "503"),
    ("accept", "*/*"),
    ("accept", "application/dns-message"),
    ("accept-encoding", "gzip, deflate, br"),
    ("accept-ranges", "bytes"),
    ("access-control-allow-headers", "cache-control"),
    ("access-control-allow-headers", "content-type"),
    ("access-control-allow-origin", "*"),
    ("cache-control", "max-age=0"),
    ("cache-control", "max-age=2592000"),
    ("cache-control", "max-age=604800"),
    ("cache-control", "no-cache"),
    ("cache-control", "no-store"),
    ("cache-control", "public, max-age=31536000"),
    ("content-encoding", "br"),
    ("content-encoding", "gzip"),
    ("content-type", "application/dns-message"),
    ("content-type", "application/javascript"),
    ("content-type", "application/json"),
    ("content-type", "application/x-www-form-urlencoded"),
    ("content-type", "image/gif"),
    ("content-type", "image/jpeg"),
    ("content-type", "image/png"),
    ("content-type", "text/css"),
    ("content-type", "text/html; charset=utf-8"),
    ("content-type", "text/plain"),
    ("content-type", "text/plain;charset=utf-8"),
    ("range", "bytes=0-"),
    ("strict-transport-security", "max-age=31536000"),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains",
    ),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains; preload",
    ),
    ("vary", "accept-encoding"),
    ("vary", "origin"),
    ("x-content-type-options", "nosniff"),
    ("x-xss-protection", "1; mode=block"),
    (":status", "100"),
    (":status", "204"),
    (":status", "206"),
    (":status", "302"),
    (":status", "400"),
    (":status", "403"),
    (":status", "421"),
    (":status", "425"),
    (":status", "500"),
    ("accept-language", ""),
    ("access-control-allow-credentials", "FALSE"),
    ("access-control-allow-credentials", "TRUE"),
    ("access-control-allow-headers", "*"),
    ("access-control-allow-methods", "get"),
    ("access-control-allow-methods", "get, post, options"),
    ("access-control-allow-methods", "options"),
    ("access-control-expose-headers", "content-length"),
    ("access-control-request-headers", "content-type"),
    ("access-control-request-method", "get"),
    ("access-control-request-method", "post"),
    ("alt-svc", "clear"),
    ("authorization", ""),
    (
        "content-security-policy",
        "script-src 'none'; object-src 'none'; base-uri 'none'",
    ),
    ("early-data", "1"),
    ("expect-ct", ""),
    ("forwarded", ""),
    ("if-range", ""),
    ("origin", ""),
    ("purpose", "prefetch"),
    ("server", ""),
    ("timing-allow-origin", "*"),
    ("upgrade-insecure-requests", "1"),
    ("user-agent", ""),
    ("x-forwarded-for", ""),
    ("x-frame-options", "deny"),
    ("x-frame-options", "sameorigin"),
];

/// The position in [`STATIC_TABLE`] of `name: value`, or of the first entry named `name`.
fn static_index(name: &str, value: &[u8]) -> (Option<usize>, Option<usize>) {
    let exact = STATIC_TABLE
        .iter()
        .position(|(n, v)| *n == name && v.as_bytes() == value);
    let named = STATIC_TABLE.iter().position(|(n, _)| *n == name);
    (exact, named)
}

/// Encodes a request's field section (RFC 9204 §4.5) once, with static-table references where
/// the table has the field or its name and literals otherwise (no Huffman: the server decodes
/// it once per request, and plain literals cost it least). Names must be lower-case.
pub fn encode_field_section(fields: &[(&str, &[u8])]) -> Vec<u8> {
    // Required Insert Count 0 and Delta Base 0: no dynamic table.
    let mut out = vec![0, 0];
    for (name, value) in fields {
        match static_index(name, value) {
            (Some(index), _) => write_integer(&mut out, index, 6, 0xc0),
            (None, Some(index)) => {
                write_integer(&mut out, index, 4, 0x50);
                write_integer(&mut out, value.len(), 7, 0);
                out.extend_from_slice(value);
            }
            (None, None) => {
                write_integer(&mut out, name.len(), 3, 0x20);
                out.extend_from_slice(name.as_bytes());
                write_integer(&mut out, value.len(), 7, 0);
                out.extend_from_slice(value);
            }
        }
    }
    out
}

/// A HEADERS frame carrying `section`.
pub fn headers_frame(section: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(section.len() + 8);
    write_frame_head(&mut out, HEADERS, section.len() as u64);
    out.extend_from_slice(section);
    out
}

/// Decodes a response field section for its `:status`, size and the response rules, and with a
/// `matcher` the `--expect-header` checks its fields meet. Only the static table and literals
/// are accepted: the client disabled the dynamic table, so any reference to it is
/// QPACK_DECOMPRESSION_FAILED.
pub(crate) fn decode_field_section(
    block: &[u8],
    mut matcher: Option<&mut FieldMatcher>,
) -> Result<DecodedBlock, H3Error> {
    const DYNAMIC: H3Error = H3Error::new(
        QPACK_DECOMPRESSION_FAILED,
        "a reference to the QPACK dynamic table, which the client set to 0 bytes",
    );
    let failed =
        |error: super::hpack::HpackError| H3Error::new(QPACK_DECOMPRESSION_FAILED, error.0);
    let out_of_range = H3Error::new(
        QPACK_DECOMPRESSION_FAILED,
        "a static table index beyond the table",
    );
    let mut rest = block;
    if read_integer(&mut rest, 8).map_err(failed)? != 0 {
        return Err(DYNAMIC);
    }
    // The base only locates dynamic entries, which cannot occur.
    read_integer(&mut rest, 7).map_err(failed)?;
    let mut decoded = DecodedBlock::default();
    while let Some(&first) = rest.first() {
        let name = if first & 0x80 != 0 {
            if first & 0x40 == 0 {
                return Err(DYNAMIC);
            }
            let index = read_integer(&mut rest, 6).map_err(failed)?;
            let (name, value) = STATIC_TABLE.get(index).ok_or(out_of_range)?;
            decoded.add(&Entry::known(name, value, matcher.as_deref()));
            continue;
        } else if first & 0x40 != 0 {
            if first & 0x10 == 0 {
                return Err(DYNAMIC);
            }
            let index = read_integer(&mut rest, 4).map_err(failed)?;
            let (name, _) = STATIC_TABLE.get(index).ok_or(out_of_range)?;
            let named = Entry::known(name, "", matcher.as_deref());
            (named.name_len, named.class, named.names)
        } else if first & 0x20 != 0 {
            let name = read_prefixed_string(&mut rest, 3).map_err(failed)?;
            let names = matcher
                .as_deref_mut()
                .map_or(0, |matcher| matcher.names(&name));
            (name.len, name.name_class(), names)
        } else {
            // Post-base references (0001xxxx, 0000xxxx) always name dynamic entries.
            return Err(DYNAMIC);
        };
        let value = read_prefixed_string(&mut rest, 7).map_err(failed)?;
        decoded.add(&Entry::with_value(name, &value, matcher.as_deref_mut()));
    }
    Ok(decoded)
}

/// Collects up to two variable-length integers that may arrive split across reads (a frame's
/// type and length, or a stream's type).
#[derive(Debug, Default, Clone, Copy)]
struct Varints {
    bytes: [u8; 16],
    len: usize,
}

impl Varints {
    /// The bytes `count` integers take, as far as the bytes so far tell.
    fn needed(&self, count: usize) -> usize {
        let mut at = 0;
        for _ in 0..count {
            let Some(first) = self.bytes.get(at).filter(|_| at < self.len) else {
                return at + 1;
            };
            at += 1 << (first >> 6);
        }
        at
    }

    /// Takes bytes from `input` until `count` integers are complete; returns the bytes it used
    /// and the integers once complete (it is then empty again).
    fn collect(&mut self, input: &[u8], count: usize) -> (usize, Option<[u64; 2]>) {
        let mut used = 0;
        loop {
            let needed = self.needed(count);
            if self.len >= needed {
                let mut values = [0; 2];
                let mut at = 0;
                for value in values.iter_mut().take(count) {
                    let (read, length) =
                        read_varint(&self.bytes[at..self.len]).expect("the bytes are complete");
                    *value = read;
                    at += length;
                }
                self.len = 0;
                return (used, Some(values));
            }
            if used == input.len() {
                return (used, None);
            }
            let take = (needed - self.len).min(input.len() - used);
            self.bytes[self.len..self.len + take].copy_from_slice(&input[used..used + take]);
            self.len += take;
            used += take;
        }
    }
}

/// Whether `kind` is a frame type HTTP/2 had and HTTP/3 reserves (RFC 9114 §7.2.8): receiving
/// one is H3_FRAME_UNEXPECTED.
fn reserved_http2_frame(kind: u64) -> bool {
    matches!(kind, 0x02 | 0x06 | 0x08 | 0x09)
}

/// A response's header section, as decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// An interim (1xx) response.
    Interim(u16),
    /// The final response's status.
    Final(u16),
    /// Trailers.
    Trailers,
}

/// What a response stream carried, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseEvent {
    /// A HEADERS frame: which section, its payload length as received (QPACK-compressed) and its
    /// decoded size (names and values).
    Headers {
        /// Which section it was.
        section: Section,
        /// The frame's payload length.
        wire_len: u64,
        /// Names and values, decoded.
        uncompressed: u64,
    },
    /// Response body bytes (part of a DATA frame).
    Data(usize),
}

/// Where a stream is inside its frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frame {
    /// Reading a frame's type and length.
    Head,
    /// A HEADERS payload (gathered, then decoded) with this much left.
    Headers { left: u64, length: u64 },
    /// A DATA payload (counted, not kept) with this much left.
    Data { left: u64 },
    /// Another frame's payload (gathered when `kind` needs it) with this much left.
    Other { kind: u64, left: u64 },
}

/// How far a response has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    AwaitingStatus,
    Body(u16),
    Trailed(u16),
}

/// A response stream's parser (RFC 9114 §4.1): bytes in, [`ResponseEvent`]s out. Holds at most
/// one HEADERS payload ([`MAX_HEADER_BLOCK`]); reusable for the next request with
/// [`ResponseParser::reset`], which keeps its buffer.
#[derive(Debug)]
pub struct ResponseParser {
    head: Varints,
    frame: Frame,
    phase: Phase,
    interim: u32,
    block: Vec<u8>,
    /// The run's response checks, if any, and what this response has shown of them.
    checks: Option<Arc<Checks>>,
    matcher: Option<FieldMatcher>,
    check: ResponseCheck,
    /// Whether it answers HEAD: a response with no content, whatever its content-length.
    answers_head: bool,
    /// The body length the final response announced (0 when it has no content), and the body
    /// bytes received: they must agree (RFC 9114 §4.1.2).
    content_length: Option<u64>,
    received: u64,
}

impl Default for ResponseParser {
    fn default() -> Self {
        ResponseParser {
            head: Varints::default(),
            frame: Frame::Head,
            phase: Phase::AwaitingStatus,
            interim: 0,
            block: Vec::new(),
            checks: None,
            matcher: None,
            check: ResponseCheck::default(),
            answers_head: false,
            content_length: None,
            received: 0,
        }
    }
}

impl ResponseParser {
    /// A parser that also follows the response checks (`--expect-*`), when there are any.
    pub fn checking(checks: Option<&Arc<Checks>>) -> Self {
        ResponseParser {
            checks: checks.cloned(),
            matcher: checks.and_then(FieldMatcher::new),
            ..ResponseParser::default()
        }
    }

    /// A parser for the responses to HEAD requests (`head`), which have no content.
    pub fn answering_head(self, head: bool) -> Self {
        ResponseParser {
            answers_head: head,
            ..self
        }
    }

    /// What the response so far has shown of the checks.
    pub fn check(&self) -> &ResponseCheck {
        &self.check
    }

    /// Ready for a new response (the header buffer's capacity is kept).
    pub fn reset(&mut self) {
        self.head = Varints::default();
        self.frame = Frame::Head;
        self.phase = Phase::AwaitingStatus;
        self.interim = 0;
        self.block.clear();
        self.check = ResponseCheck::default();
        self.content_length = None;
        self.received = 0;
    }

    /// Parses the next bytes of the stream, handing what they complete to `on`.
    pub fn feed(
        &mut self,
        mut input: &[u8],
        mut on: impl FnMut(ResponseEvent),
    ) -> Result<(), H3Error> {
        loop {
            match self.frame {
                Frame::Head => {
                    if input.is_empty() {
                        return Ok(());
                    }
                    let (used, head) = self.head.collect(input, 2);
                    input = &input[used..];
                    if let Some([kind, length]) = head {
                        self.frame = self.start_frame(kind, length)?;
                    }
                }
                Frame::Data { left } => {
                    let take = left.min(input.len() as u64) as usize;
                    self.received += take as u64;
                    if self
                        .content_length
                        .is_some_and(|length| self.received > length)
                    {
                        return Err(H3Error::new(
                            H3_MESSAGE_ERROR,
                            "a body longer than its content-length (or a response that has none with DATA)",
                        ));
                    }
                    if take > 0 {
                        if let Some(checks) = &self.checks {
                            checks.scan_body(&mut self.check.body, &input[..take]);
                        }
                        on(ResponseEvent::Data(take));
                    }
                    input = &input[take..];
                    if left > take as u64 {
                        self.frame = Frame::Data {
                            left: left - take as u64,
                        };
                        return Ok(());
                    }
                    self.frame = Frame::Head;
                }
                Frame::Headers { left, length } => {
                    let take = left.min(input.len() as u64) as usize;
                    self.block.extend_from_slice(&input[..take]);
                    input = &input[take..];
                    if left > take as u64 {
                        self.frame = Frame::Headers {
                            left: left - take as u64,
                            length,
                        };
                        return Ok(());
                    }
                    self.frame = Frame::Head;
                    let event = self.on_headers(length)?;
                    on(event);
                }
                Frame::Other { kind, left } => {
                    let take = left.min(input.len() as u64) as usize;
                    input = &input[take..];
                    if left > take as u64 {
                        self.frame = Frame::Other {
                            kind,
                            left: left - take as u64,
                        };
                        return Ok(());
                    }
                    self.frame = Frame::Head;
                }
            }
        }
    }

    /// The stream ended: the final status when the response was complete.
    pub fn finish(&self) -> Result<u16, H3Error> {
        if self.frame != Frame::Head || self.head.len > 0 {
            return Err(H3Error::new(
                H3_FRAME_ERROR,
                "the response stream ended inside a frame",
            ));
        }
        match self.phase {
            Phase::AwaitingStatus => Err(H3Error::new(
                H3_MESSAGE_ERROR,
                "the response stream ended before a final response",
            )),
            _ if self
                .content_length
                .is_some_and(|length| length != self.received) =>
            {
                Err(H3Error::new(
                    H3_MESSAGE_ERROR,
                    "a body shorter than its content-length",
                ))
            }
            Phase::Body(status) | Phase::Trailed(status) => Ok(status),
        }
    }

    /// The final status, once received.
    pub fn status(&self) -> Option<u16> {
        match self.phase {
            Phase::AwaitingStatus => None,
            Phase::Body(status) | Phase::Trailed(status) => Some(status),
        }
    }

    fn start_frame(&mut self, kind: u64, length: u64) -> Result<Frame, H3Error> {
        const UNEXPECTED: fn(&'static str) -> H3Error =
            |reason| H3Error::new(H3_FRAME_UNEXPECTED, reason);
        match kind {
            DATA => match self.phase {
                Phase::AwaitingStatus => Err(UNEXPECTED("DATA before the response's HEADERS")),
                Phase::Trailed(_) => Err(UNEXPECTED("DATA after the trailers")),
                Phase::Body(_) => Ok(Frame::Data { left: length }),
            },
            HEADERS => {
                if matches!(self.phase, Phase::Trailed(_)) {
                    return Err(UNEXPECTED("HEADERS after the trailers"));
                }
                if length > MAX_HEADER_BLOCK {
                    return Err(H3Error::new(
                        H3_EXCESSIVE_LOAD,
                        "a HEADERS frame larger than 64 KiB",
                    ));
                }
                self.block.clear();
                Ok(Frame::Headers {
                    left: length,
                    length,
                })
            }
            PUSH_PROMISE => Err(H3Error::new(
                H3_ID_ERROR,
                "PUSH_PROMISE, though the client allowed no push (no MAX_PUSH_ID)",
            )),
            SETTINGS | GOAWAY | MAX_PUSH_ID | CANCEL_PUSH => {
                Err(UNEXPECTED("a control frame on a request stream"))
            }
            kind if reserved_http2_frame(kind) => {
                Err(UNEXPECTED("a frame type reserved since HTTP/2"))
            }
            // Unknown and reserved (GREASE) types are skipped (RFC 9114 §9).
            kind => Ok(Frame::Other { kind, left: length }),
        }
    }

    fn on_headers(&mut self, wire_len: u64) -> Result<ResponseEvent, H3Error> {
        let decoded = decode_field_section(&self.block, self.matcher.as_mut())?;
        if decoded.uncompressed > MAX_HEADER_LIST {
            return Err(H3Error::new(
                H3_EXCESSIVE_LOAD,
                "a response field section over 64 KiB decoded",
            ));
        }
        let malformed = |reason| Err(H3Error::new(H3_MESSAGE_ERROR, reason));
        if let Some(reason) = decoded.rules.malformed {
            return malformed(reason);
        }
        let section = match (self.phase, decoded.status) {
            (Phase::AwaitingStatus, None) => {
                return Err(H3Error::new(
                    H3_MESSAGE_ERROR,
                    "a response without a valid :status",
                ))
            }
            (Phase::AwaitingStatus, Some(status))
                if !(100..=599).contains(&status) || status == 101 =>
            {
                return Err(H3Error::new(
                    H3_MESSAGE_ERROR,
                    "a :status outside 100-599, or 101 (not allowed in HTTP/3)",
                ))
            }
            (Phase::AwaitingStatus, Some(status)) if status < 200 => {
                self.interim += 1;
                if self.interim > MAX_INTERIM {
                    return Err(H3Error::new(
                        H3_EXCESSIVE_LOAD,
                        "more than 16 interim (1xx) responses to one request",
                    ));
                }
                Section::Interim(status)
            }
            (Phase::AwaitingStatus, Some(status)) => {
                self.phase = Phase::Body(status);
                self.check.headers = decoded.matched;
                // Responses with no content (RFC 9110 §6.4.1) may announce a length anyway.
                let no_content = self.answers_head || status == 204 || status == 304;
                self.content_length = if no_content {
                    Some(0)
                } else {
                    decoded.rules.content_length
                };
                Section::Final(status)
            }
            (_, _) if decoded.rules.pseudo => return malformed("a pseudo-header in trailers"),
            (Phase::Body(status) | Phase::Trailed(status), _) => {
                self.phase = Phase::Trailed(status);
                Section::Trailers
            }
        };
        Ok(ResponseEvent::Headers {
            section,
            wire_len,
            uncompressed: decoded.uncompressed,
        })
    }
}

/// What the server's control stream said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlEvent {
    /// One setting of the server's SETTINGS.
    Setting {
        /// Its identifier.
        id: u64,
        /// Its value.
        value: u64,
    },
    /// The end of the server's SETTINGS.
    SettingsDone,
    /// GOAWAY: requests on streams with this id or above were not processed.
    Goaway(u64),
}

/// A unidirectional stream from the server (RFC 9114 §6.2): its type, then for the control
/// stream its frames. QPACK streams carry nothing the client needs (no dynamic table), and
/// unknown (reserved) types are read and ignored; both are drained. A push stream is an
/// error: the client allows no push.
#[derive(Debug, Default)]
pub struct UniStreamParser {
    kind: Option<u64>,
    head: Varints,
    frame: Option<(u64, u64)>,
    payload: Vec<u8>,
    settings_seen: bool,
    goaway: Option<u64>,
}

impl UniStreamParser {
    /// The stream's type, once read.
    pub fn kind(&self) -> Option<u64> {
        self.kind
    }

    /// Parses the next bytes of the stream, handing control events to `on`.
    pub fn feed(
        &mut self,
        mut input: &[u8],
        mut on: impl FnMut(ControlEvent),
    ) -> Result<(), H3Error> {
        if self.kind.is_none() {
            let (used, kind) = self.head.collect(input, 1);
            input = &input[used..];
            let Some([kind, _]) = kind else {
                return Ok(());
            };
            if kind == STREAM_PUSH {
                return Err(H3Error::new(
                    H3_ID_ERROR,
                    "a push stream, though the client allowed no push (no MAX_PUSH_ID)",
                ));
            }
            self.kind = Some(kind);
        }
        if self.kind != Some(STREAM_CONTROL) {
            return Ok(());
        }
        loop {
            match self.frame {
                None => {
                    if input.is_empty() {
                        return Ok(());
                    }
                    let (used, head) = self.head.collect(input, 2);
                    input = &input[used..];
                    if let Some([kind, length]) = head {
                        self.start_control_frame(kind, length)?;
                    }
                }
                Some((kind, left)) => {
                    let take = left.min(input.len() as u64) as usize;
                    if matches!(kind, SETTINGS | GOAWAY) {
                        self.payload.extend_from_slice(&input[..take]);
                    }
                    input = &input[take..];
                    if left > take as u64 {
                        self.frame = Some((kind, left - take as u64));
                        return Ok(());
                    }
                    self.frame = None;
                    match kind {
                        SETTINGS => self.on_settings(&mut on)?,
                        GOAWAY => self.on_goaway(&mut on)?,
                        _ => {}
                    }
                }
            }
        }
    }

    fn start_control_frame(&mut self, kind: u64, length: u64) -> Result<(), H3Error> {
        let unexpected = |reason| Err(H3Error::new(H3_FRAME_UNEXPECTED, reason));
        if !self.settings_seen && kind != SETTINGS {
            return Err(H3Error::new(
                H3_MISSING_SETTINGS,
                "the server's control stream did not start with SETTINGS",
            ));
        }
        match kind {
            SETTINGS if self.settings_seen => return unexpected("a second SETTINGS frame"),
            SETTINGS if length > MAX_SETTINGS => {
                return Err(H3Error::new(
                    H3_EXCESSIVE_LOAD,
                    "a SETTINGS frame larger than 16 KiB",
                ))
            }
            SETTINGS => self.settings_seen = true,
            GOAWAY if length > 8 => {
                return Err(H3Error::new(H3_FRAME_ERROR, "a GOAWAY frame over 8 bytes"))
            }
            DATA | HEADERS | PUSH_PROMISE | MAX_PUSH_ID => {
                return unexpected("a request or client frame on the control stream")
            }
            kind if reserved_http2_frame(kind) => {
                return unexpected("a frame type reserved since HTTP/2")
            }
            _ => {}
        }
        self.payload.clear();
        self.frame = Some((kind, length));
        Ok(())
    }

    fn on_settings(&mut self, on: &mut impl FnMut(ControlEvent)) -> Result<(), H3Error> {
        let malformed = H3Error::new(H3_FRAME_ERROR, "a SETTINGS frame cut inside a setting");
        let mut ids = Vec::new();
        let mut rest = &self.payload[..];
        while !rest.is_empty() {
            let (id, used) = read_varint(rest).ok_or(malformed)?;
            rest = &rest[used..];
            let (value, used) = read_varint(rest).ok_or(malformed)?;
            rest = &rest[used..];
            if (0x02..=0x05).contains(&id) {
                return Err(H3Error::new(
                    H3_SETTINGS_ERROR,
                    "a setting reserved since HTTP/2",
                ));
            }
            ids.push(id);
            on(ControlEvent::Setting { id, value });
        }
        ids.sort_unstable();
        if ids.windows(2).any(|pair| pair[0] == pair[1]) {
            return Err(H3Error::new(H3_SETTINGS_ERROR, "a setting given twice"));
        }
        on(ControlEvent::SettingsDone);
        Ok(())
    }

    fn on_goaway(&mut self, on: &mut impl FnMut(ControlEvent)) -> Result<(), H3Error> {
        let id = match read_varint(&self.payload) {
            Some((id, used)) if used == self.payload.len() => id,
            _ => return Err(H3Error::new(H3_FRAME_ERROR, "a malformed GOAWAY frame")),
        };
        if id % 4 != 0 {
            return Err(H3Error::new(
                H3_ID_ERROR,
                "GOAWAY naming a stream that is not a client request stream",
            ));
        }
        if self.goaway.is_some_and(|previous| id > previous) {
            return Err(H3Error::new(
                H3_ID_ERROR,
                "a GOAWAY raising the id of an earlier one",
            ));
        }
        self.goaway = Some(id);
        on(ControlEvent::Goaway(id));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::check::{Mismatch, Verdict};
    use super::*;

    fn varint(value: u64) -> Vec<u8> {
        let mut out = Vec::new();
        write_varint(&mut out, value);
        out
    }

    fn frame(kind: u64, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        write_frame_head(&mut out, kind, payload.len() as u64);
        out.extend_from_slice(payload);
        out
    }

    /// A field section: no dynamic table, then the given field lines.
    fn section(lines: &[u8]) -> Vec<u8> {
        let mut out = vec![0, 0];
        out.extend_from_slice(lines);
        out
    }

    #[test]
    fn varints_follow_rfc_9000() {
        // RFC 9000 §A.1's examples, and the shortest form for each length.
        for (bytes, value) in [
            (&[0x25][..], 37),
            (&[0x40, 0x25][..], 37),
            (&[0x7b, 0xbd][..], 15_293),
            (&[0x9d, 0x7f, 0x3e, 0x7d][..], 494_878_333),
            (
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c][..],
                151_288_809_941_952_652,
            ),
        ] {
            assert_eq!(read_varint(bytes), Some((value, bytes.len())));
            assert_eq!(read_varint(&bytes[..bytes.len() - 1]), None);
        }
        for value in [
            0,
            63,
            64,
            16_383,
            16_384,
            (1 << 30) - 1,
            1 << 30,
            MAX_VARINT,
        ] {
            let bytes = varint(value);
            let expected_len = match value {
                0..=63 => 1,
                64..=16_383 => 2,
                16_384..=0x3fff_ffff => 4,
                _ => 8,
            };
            assert_eq!(bytes.len(), expected_len, "{value}");
            assert_eq!(read_varint(&bytes), Some((value, expected_len)));
        }
    }

    #[test]
    fn request_sections_use_the_static_table_and_literals() {
        // RFC 9204 §B.1: `:path /index.html` as a literal with a static name reference.
        assert_eq!(
            encode_field_section(&[(":path", b"/index.html")]),
            [&[0x00, 0x00, 0x51, 0x0b][..], b"/index.html"].concat()
        );
        let encoded = encode_field_section(&[
            (":method", b"GET"),    // exact: index 17
            (":scheme", b"https"),  // exact: index 23
            ("user-agent", b"x/1"), // name: index 95
            ("x-custom", b"v"),     // literal name
        ]);
        let expected = [
            &[0x00, 0x00, 0xc0 | 17, 0xc0 | 23][..],
            &[0x5f, 95 - 15, 0x03],
            b"x/1",
            &[0x20 | 7, 0x01],
            b"x-custom",
            &[0x01],
            b"v",
        ]
        .concat();
        assert_eq!(encoded, expected);
        // Decoding what was encoded counts every name and value.
        let decoded = decode_field_section(&encoded, None).unwrap();
        assert_eq!(decoded.status, None);
        assert_eq!(
            decoded.uncompressed,
            (7 + 3 + 7 + 5 + 10 + 3 + 8 + 1) as u64
        );
    }

    #[test]
    fn statuses_decode_from_every_representation() {
        // Indexed static entry 25 is `:status 200`.
        let indexed = decode_field_section(&section(&[0xc0 | 25]), None).unwrap();
        assert_eq!(indexed.status, Some(200));
        assert_eq!(indexed.uncompressed, 10);
        // Name reference to entry 24 (`:status`), value "201".
        let named =
            decode_field_section(&section(&[0x5f, 24 - 15, 0x03, b'2', b'0', b'1']), None).unwrap();
        assert_eq!(named.status, Some(201));
        // The same with a Huffman-coded value: "302" is 0x64 0x02 (RFC 7541 §C.4).
        let huffman =
            decode_field_section(&section(&[0x5f, 24 - 15, 0x82, 0x64, 0x02]), None).unwrap();
        assert_eq!(huffman.status, Some(302));
        assert_eq!(huffman.uncompressed, 10);
        // A literal name: length 7 fills the 3-bit prefix, so a continuation byte of 0 follows.
        let literal = decode_field_section(
            &[&section(&[0x27, 0x00])[..], b":status", &[0x03], b"404"].concat(),
            None,
        )
        .unwrap();
        assert_eq!(literal.status, Some(404));
        // A non-numeric status is no status.
        let bad =
            decode_field_section(&section(&[0x5f, 24 - 15, 0x03, b'2', b'x', b'1']), None).unwrap();
        assert_eq!(bad.status, None);
    }

    #[test]
    fn dynamic_references_fail_decompression() {
        for block in [
            &[0x01, 0x00][..],               // Required Insert Count 1
            &section(&[0x80 | 1])[..],       // indexed, dynamic
            &section(&[0x40 | 1, 0x00])[..], // name reference, dynamic
            &section(&[0x10])[..],           // indexed post-base
            &section(&[0x00, 0x00])[..],     // literal with post-base name reference
        ] {
            let error = decode_field_section(block, None).unwrap_err();
            assert_eq!(error.code, QPACK_DECOMPRESSION_FAILED, "{block:02x?}");
        }
        let out_of_range = decode_field_section(&section(&[0xff, 0x30]), None).unwrap_err();
        assert_eq!(out_of_range.code, QPACK_DECOMPRESSION_FAILED);
        let truncated = decode_field_section(&section(&[0x5f]), None).unwrap_err();
        assert_eq!(truncated.code, QPACK_DECOMPRESSION_FAILED);
    }

    /// What a whole response stream yields: header sections, body bytes, and its final status.
    #[derive(Debug, Default, Clone, PartialEq)]
    struct Seen {
        sections: Vec<(Section, u64, u64)>,
        data: u64,
    }

    fn parse_in_pieces(stream: &[u8], cuts: &[usize]) -> Result<(Seen, u16), H3Error> {
        let mut parser = ResponseParser::default();
        let mut seen = Seen::default();
        let mut from = 0;
        for &to in cuts.iter().chain([stream.len()].iter()) {
            parser.feed(&stream[from..to], |event| match event {
                ResponseEvent::Headers {
                    section,
                    wire_len,
                    uncompressed,
                } => seen.sections.push((section, wire_len, uncompressed)),
                ResponseEvent::Data(length) => seen.data += length as u64,
            })?;
            from = to;
        }
        let status = parser.finish()?;
        Ok((seen, status))
    }

    /// A 103 interim response, a 200 with content-type, a GREASE frame, 5 + 6 body bytes in two
    /// DATA frames (one empty between them) and trailers.
    fn full_response() -> (Vec<u8>, Seen) {
        let interim = section(&[0xc0 | 24]);
        let head = section(&[0xc0 | 25, 0xc0 | 53]);
        // `etag: x`, a literal with a reference to static name 7.
        let trailers = section(&[0x50 | 7, 0x01, b'x']);
        let stream = [
            frame(HEADERS, &interim),
            frame(HEADERS, &head),
            frame(0x21, b"grease!"),
            frame(DATA, b"hello"),
            frame(DATA, b""),
            frame(DATA, b"world!"),
            frame(HEADERS, &trailers),
        ]
        .concat();
        let seen = Seen {
            sections: vec![
                (Section::Interim(103), interim.len() as u64, 10),
                (Section::Final(200), head.len() as u64, 10 + 12 + 10),
                (Section::Trailers, trailers.len() as u64, 5),
            ],
            data: 11,
        };
        (stream, seen)
    }

    #[test]
    fn checks_see_the_final_headers_and_the_body_split_anywhere() {
        let owned = |items: &[&str]| {
            items
                .iter()
                .map(|item| item.to_string())
                .collect::<Vec<_>>()
        };
        // content-type from the static table, custom-key (a literal name, Huffman-coded like its
        // value, RFC 7541 C.4.3), etag (only in the trailers: not the response's headers), and
        // a body string that spans the two non-empty DATA frames.
        let checks = Arc::new(
            Checks::parse(
                &[],
                &owned(&[
                    "content-type: text/plain",
                    "Custom-Key: custom-value",
                    "etag",
                ]),
                Some("lowo"),
            )
            .unwrap()
            .unwrap(),
        );
        let (plain, _) = full_response();
        let custom = [
            &[
                0x20 | 0x08 | 0x07,
                0x01,
                0x25,
                0xa8,
                0x49,
                0xe9,
                0x5b,
                0xa9,
                0x7d,
                0x7f,
            ][..],
            &[
                0x80 | 9,
                0x25,
                0xa8,
                0x49,
                0xe9,
                0x5b,
                0xb8,
                0xe8,
                0xb4,
                0xbf,
            ],
        ]
        .concat();
        let head = [section(&[0xc0 | 25, 0xc0 | 53]), custom].concat();
        let stream = [
            frame(HEADERS, &head),
            frame(DATA, b"hello"),
            frame(DATA, b""),
            frame(DATA, b"world!"),
            frame(HEADERS, &section(&[0x50 | 7, 0x01, b'x'])),
        ]
        .concat();
        for cut in 0..=stream.len() {
            let mut parser = ResponseParser::checking(Some(&checks));
            parser.feed(&stream[..cut], |_| {}).unwrap();
            parser.feed(&stream[cut..], |_| {}).unwrap();
            let status = parser.finish().unwrap();
            assert_eq!(parser.check().headers, 0b011, "cut at {cut}");
            assert_eq!(
                checks.judge(status, parser.check()),
                Verdict::Failed(Mismatch::Header(2)),
                "cut at {cut}"
            );
            // The same parser, reset, follows the next response afresh.
            parser.reset();
            parser.feed(&plain, |_| {}).unwrap();
            assert_eq!(parser.check().headers, 0b001, "cut at {cut}");
        }
        let body_only = Arc::new(Checks::parse(&[], &[], Some("lowo")).unwrap().unwrap());
        let mut parser = ResponseParser::checking(Some(&body_only));
        parser.feed(&stream, |_| {}).unwrap();
        assert_eq!(body_only.judge(200, parser.check()), Verdict::Passed);
    }

    #[test]
    fn a_response_parses_the_same_split_anywhere() {
        let (stream, expected) = full_response();
        assert_eq!(
            parse_in_pieces(&stream, &[]).unwrap(),
            (expected.clone(), 200)
        );
        for cut in 0..=stream.len() {
            assert_eq!(
                parse_in_pieces(&stream, &[cut]).unwrap(),
                (expected.clone(), 200),
                "cut at {cut}"
            );
        }
        for first in 0..stream.len() {
            for second in first..stream.len() {
                let (seen, status) = parse_in_pieces(&stream, &[first, second]).unwrap();
                assert_eq!((seen.sections.len(), seen.data, status), (3, 11, 200));
            }
        }
        let every_byte: Vec<usize> = (1..stream.len()).collect();
        assert_eq!(
            parse_in_pieces(&stream, &every_byte).unwrap(),
            (expected, 200)
        );
    }

    #[test]
    fn a_parser_is_reused_after_reset() {
        let (stream, _) = full_response();
        let mut parser = ResponseParser::default();
        parser.feed(&stream[..4], |_| {}).unwrap();
        parser.reset();
        let mut data = 0;
        parser
            .feed(&stream, |event| {
                if let ResponseEvent::Data(length) = event {
                    data += length;
                }
            })
            .unwrap();
        assert_eq!((parser.finish(), data), (Ok(200), 11));
    }

    #[test]
    fn malformed_responses_are_named() {
        let ok = frame(HEADERS, &section(&[0xc0 | 25]));
        let cases: [(Vec<u8>, u64); 12] = [
            (frame(DATA, b"x"), H3_FRAME_UNEXPECTED),
            (
                [ok.clone(), frame(SETTINGS, b"")].concat(),
                H3_FRAME_UNEXPECTED,
            ),
            (
                [ok.clone(), frame(GOAWAY, &[0])].concat(),
                H3_FRAME_UNEXPECTED,
            ),
            ([ok.clone(), frame(0x02, b"")].concat(), H3_FRAME_UNEXPECTED),
            (frame(PUSH_PROMISE, &[0]), H3_ID_ERROR),
            (
                [ok.clone(), frame(HEADERS, &section(&[])), frame(DATA, b"")].concat(),
                H3_FRAME_UNEXPECTED,
            ),
            (
                frame(HEADERS, &section(&[0x50 | 2, 0x01, b'1'])),
                H3_MESSAGE_ERROR,
            ),
            (
                frame(HEADERS, &section(&[0x5f, 9, 0x03, b'6', b'0', b'0'])),
                H3_MESSAGE_ERROR,
            ),
            (
                frame(HEADERS, &section(&[0x5f, 9, 0x03, b'1', b'0', b'1'])),
                H3_MESSAGE_ERROR,
            ),
            (frame(HEADERS, &[0x80]), QPACK_DECOMPRESSION_FAILED),
            (
                {
                    let mut head = Vec::new();
                    write_frame_head(&mut head, HEADERS, MAX_HEADER_BLOCK + 1);
                    head
                },
                H3_EXCESSIVE_LOAD,
            ),
            (
                frame(HEADERS, &section(&[0xc0 | 24])).repeat(17),
                H3_EXCESSIVE_LOAD,
            ),
        ];
        for (stream, code) in cases {
            let error = parse_in_pieces(&stream, &[]).unwrap_err();
            assert_eq!(
                error_code_name(error.code),
                error_code_name(code),
                "{stream:02x?}: {error}"
            );
        }
        // Sixteen interim responses are allowed.
        let sixteen = [
            frame(HEADERS, &section(&[0xc0 | 24])).repeat(16),
            ok.clone(),
        ]
        .concat();
        assert_eq!(parse_in_pieces(&sixteen, &[]).unwrap().1, 200);
    }

    /// A field line from the static table.
    fn indexed(index: usize) -> Vec<u8> {
        let mut out = Vec::new();
        write_integer(&mut out, index, 6, 0xc0);
        out
    }

    /// A field line with a literal name and value.
    fn named(name: &str, value: &str) -> Vec<u8> {
        let mut out = Vec::new();
        write_integer(&mut out, name.len(), 3, 0x20);
        out.extend_from_slice(name.as_bytes());
        write_integer(&mut out, value.len(), 7, 0);
        out.extend_from_slice(value.as_bytes());
        out
    }

    /// A HEADERS frame of these field lines.
    fn headers(lines: &[Vec<u8>]) -> Vec<u8> {
        frame(HEADERS, &section(&lines.concat()))
    }

    #[test]
    fn malformed_messages_are_message_errors() {
        let status = || indexed(25); // :status 200
        let length = |value| named("content-length", value);
        let cases: Vec<(&str, Vec<u8>)> = vec![
            (
                "body shorter than content-length",
                [headers(&[status(), length("5")]), frame(DATA, b"abc")].concat(),
            ),
            (
                "body longer than content-length",
                [headers(&[status(), length("2")]), frame(DATA, b"abc")].concat(),
            ),
            (
                "body longer over two frames",
                [
                    headers(&[status(), indexed(4)]), // content-length: 0
                    frame(DATA, b""),
                    frame(DATA, b"x"),
                ]
                .concat(),
            ),
            (
                "204 with DATA",
                [headers(&[indexed(64)]), frame(DATA, b"x")].concat(),
            ),
            ("upper-case name", headers(&[status(), named("X-Up", "1")])),
            (
                "connection",
                headers(&[status(), named("connection", "close")]),
            ),
            ("keep-alive", headers(&[status(), named("keep-alive", "1")])),
            (
                "proxy-connection",
                headers(&[status(), named("proxy-connection", "x")]),
            ),
            (
                "transfer-encoding",
                headers(&[status(), named("transfer-encoding", "chunked")]),
            ),
            ("upgrade", headers(&[status(), named("upgrade", "h3")])),
            (
                "pseudo-header after a regular field",
                headers(&[named("x-a", "1"), status()]),
            ),
            ("two :status", headers(&[status(), indexed(27)])),
            ("request pseudo-header", headers(&[status(), indexed(1)])),
            (":status of two digits", headers(&[named(":status", "20")])),
            (
                "content-length not a number",
                headers(&[status(), length("5x")]),
            ),
            (
                "pseudo-header in trailers",
                [headers(&[status()]), headers(&[indexed(25)])].concat(),
            ),
        ];
        for (name, stream) in cases {
            for cut in [0, 1, stream.len() / 2] {
                let error = parse_in_pieces(&stream, &[cut]).unwrap_err();
                assert_eq!(
                    error_code_name(error.code),
                    "H3_MESSAGE_ERROR",
                    "{name}: {error}"
                );
            }
        }
    }

    #[test]
    fn messages_with_no_content_interim_and_trailers_are_well_formed() {
        let length = |value| named("content-length", value);
        for stream in [
            // 204 and 304 may announce a length they do not send.
            headers(&[indexed(64), length("5")]),
            headers(&[indexed(26), length("10")]),
            // Interim responses, the final one, its body in two frames, and trailers.
            [
                headers(&[indexed(24)]),
                headers(&[indexed(25), length("4")]),
                frame(DATA, b"ab"),
                frame(DATA, b"cd"),
                headers(&[named("x-trailer", "1")]),
            ]
            .concat(),
        ] {
            assert!(parse_in_pieces(&stream, &[1]).is_ok(), "{stream:02x?}");
        }
        // A HEAD's answer announces the length of what GET would get.
        let mut head = ResponseParser::default().answering_head(true);
        head.feed(&headers(&[indexed(25), length("10")]), |_| {})
            .unwrap();
        assert_eq!(head.finish(), Ok(200));
        head.reset();
        let error = head.feed(
            &[headers(&[indexed(25)]), frame(DATA, b"x")].concat(),
            |_| {},
        );
        assert_eq!(error.unwrap_err().code, H3_MESSAGE_ERROR);
    }

    #[test]
    fn a_stream_ending_early_is_named() {
        let ok = frame(HEADERS, &section(&[0xc0 | 25]));
        let mut parser = ResponseParser::default();
        assert_eq!(parser.finish().unwrap_err().code, H3_MESSAGE_ERROR);
        parser.feed(&ok[..ok.len() - 1], |_| {}).unwrap();
        assert_eq!(parser.finish().unwrap_err().code, H3_FRAME_ERROR);
        parser.feed(&ok[ok.len() - 1..], |_| {}).unwrap();
        assert_eq!(parser.status(), Some(200));
        // Half a frame head.
        parser.feed(&[0x40], |_| {}).unwrap();
        assert_eq!(parser.finish().unwrap_err().code, H3_FRAME_ERROR);
        // An interim response only.
        let mut interim = ResponseParser::default();
        interim
            .feed(&frame(HEADERS, &section(&[0xc0 | 24])), |_| {})
            .unwrap();
        assert_eq!(interim.finish().unwrap_err().code, H3_MESSAGE_ERROR);
    }

    fn control(frames: &[Vec<u8>]) -> Vec<u8> {
        [varint(STREAM_CONTROL), frames.concat()].concat()
    }

    fn settings(pairs: &[(u64, u64)]) -> Vec<u8> {
        let payload: Vec<u8> = pairs
            .iter()
            .flat_map(|(id, value)| [varint(*id), varint(*value)].concat())
            .collect();
        frame(SETTINGS, &payload)
    }

    fn control_events(stream: &[u8], cut: usize) -> Result<Vec<ControlEvent>, H3Error> {
        let mut parser = UniStreamParser::default();
        let mut events = Vec::new();
        parser.feed(&stream[..cut], |event| events.push(event))?;
        parser.feed(&stream[cut..], |event| events.push(event))?;
        Ok(events)
    }

    #[test]
    fn the_control_stream_parses_split_anywhere() {
        let stream = control(&[
            settings(&[
                (SETTINGS_QPACK_MAX_TABLE_CAPACITY, 4096),
                (0x1f * 3 + 0x21, 7),
            ]),
            frame(0x21, b"ignored"),
            frame(CANCEL_PUSH, &[0]),
            frame(GOAWAY, &varint(400)),
            frame(GOAWAY, &varint(8)),
        ]);
        let expected = vec![
            ControlEvent::Setting {
                id: SETTINGS_QPACK_MAX_TABLE_CAPACITY,
                value: 4096,
            },
            ControlEvent::Setting {
                id: 0x1f * 3 + 0x21,
                value: 7,
            },
            ControlEvent::SettingsDone,
            ControlEvent::Goaway(400),
            ControlEvent::Goaway(8),
        ];
        for cut in 0..=stream.len() {
            assert_eq!(
                control_events(&stream, cut).unwrap(),
                expected,
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn the_clients_control_stream_says_no_dynamic_table() {
        let events = control_events(&client_control_stream(), 0).unwrap();
        assert_eq!(
            events,
            [
                ControlEvent::Setting {
                    id: SETTINGS_QPACK_MAX_TABLE_CAPACITY,
                    value: 0
                },
                ControlEvent::Setting {
                    id: SETTINGS_QPACK_BLOCKED_STREAMS,
                    value: 0
                },
                ControlEvent::Setting {
                    id: SETTINGS_MAX_FIELD_SECTION_SIZE,
                    value: MAX_HEADER_LIST
                },
                ControlEvent::SettingsDone,
            ]
        );
    }

    #[test]
    fn control_stream_violations_are_named() {
        let cases = [
            (control(&[frame(GOAWAY, &[0])]), H3_MISSING_SETTINGS),
            (
                control(&[settings(&[]), settings(&[])]),
                H3_FRAME_UNEXPECTED,
            ),
            (control(&[settings(&[(0x02, 1)])]), H3_SETTINGS_ERROR),
            (
                control(&[settings(&[(0x06, 1), (0x06, 2)])]),
                H3_SETTINGS_ERROR,
            ),
            (control(&[frame(SETTINGS, &[0x06])]), H3_FRAME_ERROR),
            (
                control(&[settings(&[]), frame(DATA, b"")]),
                H3_FRAME_UNEXPECTED,
            ),
            (
                control(&[settings(&[]), frame(0x08, b"")]),
                H3_FRAME_UNEXPECTED,
            ),
            (
                control(&[settings(&[]), frame(GOAWAY, &varint(5))]),
                H3_ID_ERROR,
            ),
            (
                control(&[
                    settings(&[]),
                    frame(GOAWAY, &varint(4)),
                    frame(GOAWAY, &varint(8)),
                ]),
                H3_ID_ERROR,
            ),
            (
                control(&[settings(&[]), frame(GOAWAY, &[0, 0])]),
                H3_FRAME_ERROR,
            ),
            (varint(STREAM_PUSH), H3_ID_ERROR),
        ];
        for (stream, code) in cases {
            let error = control_events(&stream, 0).unwrap_err();
            assert_eq!(
                error_code_name(error.code),
                error_code_name(code),
                "{stream:02x?}"
            );
        }
    }

    #[test]
    fn other_streams_are_drained() {
        for kind in [STREAM_QPACK_ENCODER, STREAM_QPACK_DECODER, 0x21] {
            let mut parser = UniStreamParser::default();
            let stream = [varint(kind), vec![0x3f, 0xe1, 0x1f, 0x00]].concat();
            let mut events = 0;
            parser.feed(&stream, |_| events += 1).unwrap();
            assert_eq!((parser.kind(), events), (Some(kind), 0));
        }
    }

    #[test]
    fn the_fuzz_entry_point_agrees_with_itself() {
        let (stream, _) = full_response();
        let garbage: Vec<u8> = (0..=255u8).rev().collect();
        for input in [&stream[..], &stream[..stream.len() / 2], &garbage, &[]] {
            for piece in [0, 1, 2, 7, 100] {
                crate::fuzzing::h3_response(input, piece);
            }
        }
    }

    #[test]
    fn error_codes_have_names() {
        assert_eq!(error_code_name(H3_NO_ERROR), "H3_NO_ERROR");
        assert_eq!(error_code_name(H3_REQUEST_REJECTED), "H3_REQUEST_REJECTED");
        assert_eq!(error_code_name(0x202), "QPACK_DECODER_STREAM_ERROR");
        assert_eq!(error_code_name(0x21), "HTTP/3 error 0x21");
        let error = H3Error::new(H3_FRAME_ERROR, "cut");
        assert_eq!(error.to_string(), "cut (H3_FRAME_ERROR)");
    }
}
