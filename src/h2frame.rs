//! The few facts about HTTP/2 frames (RFC 9113 §4.1) that code watching raw bytes needs.

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
pub const PRIORITY: u8 = 0x20;

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
    pub fn encode(&self) -> [u8; HEADER_LEN] {
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
pub fn header_fragment(head: FrameHead, payload: &[u8]) -> Option<&[u8]> {
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
