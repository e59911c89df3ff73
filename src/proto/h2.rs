//! HTTP/2 wire facts (RFC 9113): frame header, frame types, flags, setting ids and error codes,
//! defined once for the client session, the `-v` trace and the fuzz targets.

/// Length of a frame header.
pub const HEADER_LEN: usize = 9;
/// Length of the client connection preface (`PRI * HTTP/2.0...`).
pub const PREFACE_LEN: usize = 24;

/// Frame type DATA.
pub const DATA: u8 = 0x0;
/// Frame type HEADERS.
pub const HEADERS: u8 = 0x1;
/// Frame type RST_STREAM.
pub const RST_STREAM: u8 = 0x3;
/// Frame type SETTINGS.
pub const SETTINGS: u8 = 0x4;
/// Frame type PUSH_PROMISE.
pub const PUSH_PROMISE: u8 = 0x5;
/// Frame type PING.
pub const PING: u8 = 0x6;
/// Frame type GOAWAY.
pub const GOAWAY: u8 = 0x7;
/// Frame type WINDOW_UPDATE.
pub const WINDOW_UPDATE: u8 = 0x8;
/// Frame type CONTINUATION.
pub const CONTINUATION: u8 = 0x9;

/// Flag END_STREAM (DATA, HEADERS).
pub const END_STREAM: u8 = 0x1;
/// Flag ACK (SETTINGS, PING).
pub const ACK: u8 = 0x1;
/// Flag END_HEADERS (HEADERS, CONTINUATION).
pub const END_HEADERS: u8 = 0x4;
/// Flag PADDED (DATA, HEADERS).
pub const PADDED: u8 = 0x8;
/// Flag PRIORITY (HEADERS).
pub(crate) const PRIORITY: u8 = 0x20;

/// Setting SETTINGS_HEADER_TABLE_SIZE.
pub(crate) const SETTINGS_HEADER_TABLE_SIZE: u16 = 0x1;
/// Setting SETTINGS_ENABLE_PUSH.
pub(crate) const SETTINGS_ENABLE_PUSH: u16 = 0x2;
/// Setting SETTINGS_MAX_CONCURRENT_STREAMS.
pub const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
/// Setting SETTINGS_INITIAL_WINDOW_SIZE.
pub const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
/// Setting SETTINGS_MAX_FRAME_SIZE.
pub(crate) const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;

/// Error code NO_ERROR.
pub const NO_ERROR: u32 = 0x0;
/// Error code PROTOCOL_ERROR.
pub(crate) const PROTOCOL_ERROR: u32 = 0x1;
/// Error code INTERNAL_ERROR.
pub const INTERNAL_ERROR: u32 = 0x2;
/// A frame on a stream the peer had ended.
pub(crate) const STREAM_CLOSED: u32 = 0x5;
/// Error code FRAME_SIZE_ERROR.
pub(crate) const FRAME_SIZE_ERROR: u32 = 0x6;
/// Error code REFUSED_STREAM.
pub const REFUSED_STREAM: u32 = 0x7;
/// Error code CANCEL.
pub(crate) const CANCEL: u32 = 0x8;
/// Error code ENHANCE_YOUR_CALM.
pub(crate) const ENHANCE_YOUR_CALM: u32 = 0xb;

/// The client connection preface.
pub const PREFACE: &[u8; PREFACE_LEN] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// The window every stream and the connection start with (RFC 9113 §6.9.2).
pub const DEFAULT_WINDOW: i64 = 65_535;
/// The largest flow-control window (RFC 9113 §6.9.1).
pub(crate) const MAX_WINDOW: i64 = (1 << 31) - 1;
/// The smallest SETTINGS_MAX_FRAME_SIZE (RFC 9113 §6.5.2).
pub(crate) const MIN_MAX_FRAME_SIZE: usize = 16_384;

/// The name of an HTTP/2 error code (RFC 9113 §7).
pub(crate) fn error_code_name(code: u32) -> String {
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

/// A big-endian u32 at the start of `bytes`, if there are four.
pub fn read_u32(bytes: &[u8]) -> Option<u32> {
    bytes
        .first_chunk::<4>()
        .map(|bytes| u32::from_be_bytes(*bytes))
}

/// Appends a frame (header and payload) to `out`.
pub fn write_frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    let head = FrameHead {
        length: payload.len(),
        kind,
        flags,
        stream,
    };
    out.extend_from_slice(&head.encode());
    out.extend_from_slice(payload);
}

/// A decoded frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHead {
    /// Payload length.
    pub length: usize,
    /// Frame type.
    pub kind: u8,
    /// Flags.
    pub flags: u8,
    /// Stream identifier.
    pub stream: u32,
}

impl FrameHead {
    /// Decodes the 9-byte header.
    pub fn parse(head: &[u8; HEADER_LEN]) -> FrameHead {
        FrameHead {
            length: u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize,
            kind: head[3],
            flags: head[4],
            stream: u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff,
        }
    }

    /// Encodes the header (the payload length must fit in 24 bits).
    pub(crate) fn encode(&self) -> [u8; HEADER_LEN] {
        let length = (self.length as u32).to_be_bytes();
        let stream = self.stream.to_be_bytes();
        [
            length[1], length[2], length[3], self.kind, self.flags, stream[0], stream[1],
            stream[2], stream[3],
        ]
    }
}

/// The header block fragment of a HEADERS payload, without its padding and priority fields;
/// `None` when those do not fit in the payload.
pub(crate) fn header_fragment(head: FrameHead, payload: &[u8]) -> Option<&[u8]> {
    let mut fragment = payload;
    if head.flags & PADDED != 0 {
        let (&padding, rest) = fragment.split_first()?;
        fragment = &rest[..rest.len().checked_sub(usize::from(padding))?];
    }
    if head.flags & PRIORITY != 0 {
        fragment = fragment.get(5..)?;
    }
    Some(fragment)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips() {
        let head = FrameHead {
            length: 0x01_02_03,
            kind: HEADERS,
            flags: END_STREAM | END_HEADERS,
            stream: 7,
        };
        assert_eq!(head.encode(), [1, 2, 3, 1, 5, 0, 0, 0, 7]);
        assert_eq!(FrameHead::parse(&head.encode()), head);
    }
}
