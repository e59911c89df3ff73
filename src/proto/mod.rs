//! Wire formats, with no I/O and no runtime: HTTP/1.1 request heads and the response parser,
//! HTTP/2 frames, HPACK and its Huffman code, HTTP/3 frames and QPACK, gRPC's message framing, event streams (SSE, NDJSON). Used by the protocol sessions, the `-v` trace and
//! the fuzz targets alike.

pub(crate) mod check;
pub(crate) mod events;
pub(crate) mod fields;
pub(crate) mod grpc;
pub(crate) mod h1;
pub(crate) mod h2;
pub(crate) mod h3;
pub(crate) mod hpack;
mod huffman;
pub(crate) mod request;

/// Interim (1xx) responses accepted before one request's final response, for every protocol
/// (h1, h2, h3); more is a protocol error.
pub(crate) const MAX_INTERIM: u32 = 16;

/// How much of a 4xx/5xx response's body a session keeps for the report (of the first such
/// response only): enough for an error page's title or a JSON error's message.
pub(crate) const ERROR_BODY_KEPT: usize = 200;

/// The first bytes of the body of the 4xx/5xx response a parser is reading, gathered until the
/// connection hands one over ([`ErrorBody::stop`]): no allocation before the first error
/// response, none after.
#[derive(Debug, Default)]
pub(crate) struct ErrorBody {
    stopped: bool,
    bytes: Vec<u8>,
}

impl ErrorBody {
    /// A new response begins.
    pub(crate) fn start(&mut self) {
        self.bytes.clear();
    }

    /// A piece of the body of a response with `status`: kept if it is an error and room is left.
    pub(crate) fn gather(&mut self, status: u16, piece: &[u8]) {
        if status >= 400 && !self.stopped {
            let room = ERROR_BODY_KEPT.saturating_sub(self.bytes.len());
            self.bytes
                .extend_from_slice(&piece[..piece.len().min(room)]);
        }
    }

    /// What was kept of the current (or last) response's body.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Keeps no more: the run has the one it reports.
    pub(crate) fn stop(&mut self) {
        self.stopped = true;
        self.bytes = Vec::new();
    }
}

/// Whether `first`, a server's first bytes, start a TLS record (a handshake or an alert, major
/// version 3): what a TLS port answers a cleartext request with.
pub(crate) fn is_tls_record(first: &[u8]) -> bool {
    first.len() >= 2 && matches!(first[0], 0x15 | 0x16) && first[1] == 0x03
}

/// A code a server reset a request's stream with, kept whole with the protocol whose table
/// names it: HTTP/2's codes are 32-bit, HTTP/3's are 62-bit varints (reserved GREASE codes
/// included), and the two tables overlap (0x8 is HTTP/2's CANCEL, no HTTP/3 code).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum ResetCode {
    /// An HTTP/2 RST_STREAM error code.
    H2(u32),
    /// An HTTP/3 application error code (RESET_STREAM).
    H3(u64),
}

impl ResetCode {
    /// The code's name in its protocol's table, or its number when the table has none.
    pub(crate) fn name(self) -> String {
        match self {
            ResetCode::H2(code) => h2::error_code_name(code),
            ResetCode::H3(code) => h3::error_code_name(code),
        }
    }
}
