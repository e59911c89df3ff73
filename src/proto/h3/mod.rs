//! HTTP/3 (RFC 9114) and QPACK (RFC 9204) as a load generator needs them, as bytes only (no
//! runtime, no QUIC): variable-length integers, the client's control stream, request field
//! sections encoded once per run, and parsers for a response stream and the server's
//! unidirectional streams, fed with chunks of any size split anywhere.
//!
//! The client announces SETTINGS_QPACK_MAX_TABLE_CAPACITY = 0 and SETTINGS_QPACK_BLOCKED_STREAMS
//! = 0, so a conforming server can only use the static table and literals: a reference to the
//! dynamic table in a response is a QPACK_DECOMPRESSION_FAILED connection error (RFC 9204 §2.2.3,
//! §4.5.1.1), and the encoder and decoder streams carry nothing the client must act on.
//!
//! This file holds what the parts share: stream, frame and setting types, error codes and their
//! names, limits, [`H3Error`]. The parts: `varint.rs`, `qpack.rs`, `response.rs`, `control.rs`.

mod control;
mod qpack;
mod response;
#[cfg(test)]
mod testing;
pub(crate) mod varint;

use std::fmt;

pub(crate) use control::{client_control_stream, ControlEvent, UniStreamParser};
pub(crate) use qpack::decode_field_section;
pub(crate) use qpack::{encode_field_section, headers_frame};
pub(crate) use response::{ResponseEvent, ResponseParser, Section};
pub(crate) use varint::{read_varint, write_frame_head};

/// Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2).
pub(crate) const STREAM_CONTROL: u64 = 0x00;
/// A server push stream: never allowed, as the client sends no MAX_PUSH_ID.
pub(crate) const STREAM_PUSH: u64 = 0x01;
/// The QPACK encoder stream.
pub(crate) const STREAM_QPACK_ENCODER: u64 = 0x02;
/// The QPACK decoder stream.
pub(crate) const STREAM_QPACK_DECODER: u64 = 0x03;

/// Frame types (RFC 9114 §7.2).
pub(crate) const DATA: u64 = 0x00;
/// HEADERS.
pub(crate) const HEADERS: u64 = 0x01;
/// CANCEL_PUSH.
pub(crate) const CANCEL_PUSH: u64 = 0x03;
/// SETTINGS.
pub(crate) const SETTINGS: u64 = 0x04;
/// PUSH_PROMISE.
pub(crate) const PUSH_PROMISE: u64 = 0x05;
/// GOAWAY.
pub(crate) const GOAWAY: u64 = 0x07;
/// MAX_PUSH_ID.
pub(crate) const MAX_PUSH_ID: u64 = 0x0d;

/// SETTINGS_QPACK_MAX_TABLE_CAPACITY (RFC 9204 §5).
pub(crate) const SETTINGS_QPACK_MAX_TABLE_CAPACITY: u64 = 0x01;
/// SETTINGS_MAX_FIELD_SECTION_SIZE (RFC 9114 §7.2.4.1).
pub(crate) const SETTINGS_MAX_FIELD_SECTION_SIZE: u64 = 0x06;
/// SETTINGS_QPACK_BLOCKED_STREAMS (RFC 9204 §5).
pub(crate) const SETTINGS_QPACK_BLOCKED_STREAMS: u64 = 0x07;

/// H3_NO_ERROR: a graceful close.
pub(crate) const H3_NO_ERROR: u64 = 0x100;
/// H3_STREAM_CREATION_ERROR.
pub(crate) const H3_STREAM_CREATION_ERROR: u64 = 0x103;
/// H3_CLOSED_CRITICAL_STREAM.
pub(crate) const H3_CLOSED_CRITICAL_STREAM: u64 = 0x104;
/// H3_FRAME_UNEXPECTED.
pub(crate) const H3_FRAME_UNEXPECTED: u64 = 0x105;
/// H3_FRAME_ERROR.
pub(crate) const H3_FRAME_ERROR: u64 = 0x106;
/// H3_EXCESSIVE_LOAD.
pub(crate) const H3_EXCESSIVE_LOAD: u64 = 0x107;
/// H3_ID_ERROR.
pub(crate) const H3_ID_ERROR: u64 = 0x108;
/// H3_SETTINGS_ERROR.
pub(crate) const H3_SETTINGS_ERROR: u64 = 0x109;
/// H3_MISSING_SETTINGS.
pub(crate) const H3_MISSING_SETTINGS: u64 = 0x10a;
/// H3_REQUEST_REJECTED: the server did not process the request; it may go again.
pub(crate) const H3_REQUEST_REJECTED: u64 = 0x10b;
/// H3_REQUEST_CANCELLED.
pub(crate) const H3_REQUEST_CANCELLED: u64 = 0x10c;
/// H3_MESSAGE_ERROR.
pub(crate) const H3_MESSAGE_ERROR: u64 = 0x10e;
/// QPACK_DECOMPRESSION_FAILED.
pub(crate) const QPACK_DECOMPRESSION_FAILED: u64 = 0x200;

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
pub(crate) fn error_code_name(code: u64) -> String {
    match ERROR_NAMES.iter().find(|(known, _)| *known == code) {
        Some((_, name)) => (*name).to_owned(),
        None => format!("HTTP/3 error 0x{code:x}"),
    }
}

/// A setting's name (RFC 9114 §7.2.4.1, RFC 9204 §5, RFC 9220, RFC 9297), without its
/// `SETTINGS_` prefix; others by number.
pub(crate) fn setting_name(id: u64) -> String {
    match id {
        SETTINGS_QPACK_MAX_TABLE_CAPACITY => "QPACK_MAX_TABLE_CAPACITY".to_owned(),
        SETTINGS_MAX_FIELD_SECTION_SIZE => "MAX_FIELD_SECTION_SIZE".to_owned(),
        SETTINGS_QPACK_BLOCKED_STREAMS => "QPACK_BLOCKED_STREAMS".to_owned(),
        0x08 => "ENABLE_CONNECT_PROTOCOL".to_owned(),
        0x33 => "H3_DATAGRAM".to_owned(),
        other => format!("0x{other:x}"),
    }
}

/// The largest HEADERS frame accepted, as received.
pub(crate) const MAX_HEADER_BLOCK: u64 = 64 * 1024;
/// The largest field section accepted once decoded (names and values), also announced as
/// SETTINGS_MAX_FIELD_SECTION_SIZE.
pub(crate) const MAX_HEADER_LIST: u64 = 64 * 1024;
/// The largest SETTINGS frame accepted from the server.
const MAX_SETTINGS: u64 = 16 * 1024;

/// A violation of HTTP/3 or QPACK: the code that names it and what was wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct H3Error {
    /// The HTTP/3 error code (RFC 9114 §8.1, RFC 9204 §6).
    pub(crate) code: u64,
    /// What the peer did.
    pub(crate) reason: &'static str,
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

/// Whether `kind` is a frame type HTTP/2 had and HTTP/3 reserves (RFC 9114 §7.2.8): receiving
/// one is H3_FRAME_UNEXPECTED.
fn reserved_http2_frame(kind: u64) -> bool {
    matches!(kind, 0x02 | 0x06 | 0x08 | 0x09)
}

#[cfg(test)]
mod tests {
    use super::*;

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
