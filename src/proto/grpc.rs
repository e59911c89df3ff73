//! gRPC over HTTP/2 (the "gRPC over HTTP2" protocol of grpc/grpc's PROTOCOL-HTTP2.md): the 5-byte
//! message prefix, a reader that splits a response body into messages as its bytes arrive in any
//! pieces, the status codes and their names, the `grpc-timeout` value, what a response's HTTP
//! status and `content-type` decide of its call, and the text of a `grpc-message`. No I/O; messages are counted,
//! never kept.

/// Bytes before each message: the compressed flag, then the length (big-endian `u32`).
pub(crate) const PREFIX_LEN: usize = 5;

/// The status codes (grpc/grpc's doc/statuscodes.md), by number.
pub(crate) const CODE_NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// Codes counted one by one: the 17 defined, then one slot for every number outside them.
pub(crate) const CODE_SLOTS: usize = CODE_NAMES.len() + 1;

/// The slot of `grpc-status` `code` in an array of [`CODE_SLOTS`] counters.
pub(crate) fn code_slot(code: u64) -> usize {
    usize::try_from(code)
        .ok()
        .filter(|code| *code < CODE_NAMES.len())
        .unwrap_or(CODE_NAMES.len())
}

/// The name reports give slot `slot` (see [`code_slot`]).
pub(crate) fn slot_name(slot: usize) -> &'static str {
    CODE_NAMES.get(slot).copied().unwrap_or("OTHER")
}

/// The code named `name` (`UNAVAILABLE`, `unavailable`) or numbered `name` (`14`).
pub(crate) fn parse_code(name: &str) -> Option<u64> {
    if let Ok(number) = name.parse::<u64>() {
        return (number < CODE_NAMES.len() as u64).then_some(number);
    }
    CODE_NAMES
        .iter()
        .position(|known| known.eq_ignore_ascii_case(name))
        .map(|code| code as u64)
}

/// The code of a response's HTTP status (the mapping grpc/grpc's doc/http-grpc-status-mapping.md
/// gives, grpc-go's `HTTPStatusConvTab`): `None` for 200, whose `grpc-status` decides.
pub(crate) fn code_of_http_status(status: u16) -> Option<u64> {
    Some(match status {
        200 => return None,
        400 => 13,
        401 => 16,
        403 => 7,
        404 => 12,
        429 | 502..=504 => 14,
        _ => 2,
    })
}

/// The `content-type` of gRPC, which a subtype may follow after `+` or `;`.
const GRPC_CONTENT_TYPE: &[u8] = b"application/grpc";

/// Whether a `content-type` value, given by its first bytes (at least 17, or all of it when
/// shorter: [`super::fields::MediaType::HEAD`]), names gRPC: `application/grpc` alone or followed by `+` or `;` (grpc-go's
/// `ContentSubtype`: case-sensitive, as gRPC sends it).
pub(crate) fn is_grpc_content_type(head: &[u8]) -> bool {
    match head.strip_prefix(GRPC_CONTENT_TYPE) {
        Some([]) => true,
        Some([next, ..]) => matches!(next, b'+' | b';'),
        None => false,
    }
}

/// The code a response's first header section decides alone, as grpc-go's client judges it: an
/// HTTP status other than 200 maps by [`code_of_http_status`] whatever `grpc-status` says, and a
/// 200 whose `content-type` is missing or not gRPC's is `UNKNOWN` (grpc-go: "malformed header:
/// missing HTTP content-type", its table having no entry for 200). `None`: a gRPC response,
/// whose `grpc-status` decides.
pub(crate) fn code_of_headers(status: u16, grpc_content_type: bool) -> Option<u64> {
    match code_of_http_status(status) {
        None if !grpc_content_type => Some(UNKNOWN),
        code => code,
    }
}

/// `UNKNOWN`'s number.
const UNKNOWN: u64 = 2;

/// The most bytes of a `grpc-message` value kept (as sent, percent-encoded): the text of a status
/// is a line of the report, not a payload.
pub(crate) const STATUS_MESSAGE_KEPT: usize = 1024;

/// The text a `grpc-message` value stands for: percent-decoded (gRPC percent-encodes UTF-8 in it;
/// a `%` not followed by two hex digits stays as it is), as [`crate::error::peer_text`] shows a
/// peer's words: on one line, escaped, cut.
pub(crate) fn status_message_text(value: &[u8]) -> String {
    let hex = |byte: u8| char::from(byte).to_digit(16);
    let mut bytes = Vec::with_capacity(value.len());
    let mut rest = value;
    while let Some((&byte, after)) = rest.split_first() {
        match (byte, after) {
            (b'%', [high, low, tail @ ..]) if hex(*high).is_some() && hex(*low).is_some() => {
                bytes.push((hex(*high).unwrap_or(0) * 16 + hex(*low).unwrap_or(0)) as u8);
                rest = tail;
            }
            _ => {
                bytes.push(byte);
                rest = after;
            }
        }
    }
    crate::error::peer_text(&bytes)
}

/// Appends the 5-byte prefix of an uncompressed message of `len` bytes.
pub(crate) fn write_prefix(out: &mut Vec<u8>, len: usize) {
    out.push(0);
    out.extend_from_slice(&(len as u32).to_be_bytes());
}

/// Appends a `grpc-timeout` value for `timeout`: the fewest digits (at most 8) in the finest unit
/// that holds it, rounded up so the server's deadline is never shorter than the client's.
pub(crate) fn write_timeout(out: &mut Vec<u8>, timeout: std::time::Duration) {
    const UNITS: [(u128, u8); 6] = [
        (1, b'n'),
        (1_000, b'u'),
        (1_000_000, b'm'),
        (1_000_000_000, b'S'),
        (60_000_000_000, b'M'),
        (3_600_000_000_000, b'H'),
    ];
    let nanos = timeout.as_nanos().max(1);
    for (unit, letter) in UNITS {
        let count = nanos.div_ceil(unit);
        if count < 100_000_000 || letter == b'H' {
            out.extend_from_slice(count.min(99_999_999).to_string().as_bytes());
            out.push(letter);
            return;
        }
    }
}

/// Why a response body is not a sequence of well-formed messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FramingError {
    /// A compressed flag that is neither 0 nor 1.
    BadFlag(u8),
    /// A message marked compressed on a response with no `grpc-encoding`.
    CompressedWithoutEncoding,
    /// A message longer than the limit.
    TooLarge(u32),
}

impl FramingError {
    /// In words, for the first error's line.
    pub(crate) fn describe(self, limit: u32) -> String {
        match self {
            FramingError::BadFlag(flag) => {
                format!("a gRPC message prefix with compressed flag {flag} (only 0 and 1 exist)")
            }
            FramingError::CompressedWithoutEncoding => {
                "a gRPC message marked compressed in a response without grpc-encoding".to_owned()
            }
            FramingError::TooLarge(len) => {
                format!("a gRPC message of {len} bytes, over the {limit}-byte limit")
            }
        }
    }
}

/// A message completed by [`MessageReader::feed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Message {
    /// Its length, prefix excluded.
    pub(crate) len: u32,
    /// Where it ended in the input fed: its last byte's offset, plus one.
    pub(crate) end: usize,
}

/// Splits a response body into messages as its bytes arrive, in pieces of any size: it keeps
/// the prefix read so far (at most 5 bytes) and how much of the current message is left.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct MessageReader {
    prefix: [u8; PREFIX_LEN],
    /// Prefix bytes read of the next message (0 to 5).
    prefix_read: u8,
    /// Message bytes still to come after a complete prefix.
    left: u32,
    /// Whether a prefix has been read and its message is not complete yet.
    in_message: bool,
    /// Messages completed.
    pub(crate) messages: u64,
    /// Message bytes (prefixes excluded) received.
    pub(crate) message_bytes: u64,
}

impl MessageReader {
    /// Reads `input`, calling `each` for every message it completes. `compressed_allowed`: the
    /// response named a `grpc-encoding`; `limit`: the longest message accepted.
    pub(crate) fn feed(
        &mut self,
        mut input: &[u8],
        compressed_allowed: bool,
        limit: u32,
        mut each: impl FnMut(Message),
    ) -> Result<(), FramingError> {
        let fed = input.len();
        while !input.is_empty() {
            if !self.in_message {
                let want = PREFIX_LEN - usize::from(self.prefix_read);
                let take = want.min(input.len());
                let at = usize::from(self.prefix_read);
                self.prefix[at..at + take].copy_from_slice(&input[..take]);
                self.prefix_read += take as u8;
                input = &input[take..];
                if usize::from(self.prefix_read) < PREFIX_LEN {
                    return Ok(());
                }
                let flag = self.prefix[0];
                let len = u32::from_be_bytes([
                    self.prefix[1],
                    self.prefix[2],
                    self.prefix[3],
                    self.prefix[4],
                ]);
                match flag {
                    0 => {}
                    1 if compressed_allowed => {}
                    1 => return Err(FramingError::CompressedWithoutEncoding),
                    other => return Err(FramingError::BadFlag(other)),
                }
                if len > limit {
                    return Err(FramingError::TooLarge(len));
                }
                self.prefix_read = 0;
                self.left = len;
                self.in_message = true;
            }
            let take = (self.left as usize).min(input.len());
            self.left -= take as u32;
            self.message_bytes += take as u64;
            input = &input[take..];
            if self.left == 0 {
                self.in_message = false;
                self.messages += 1;
                each(Message {
                    len: self.prefix_u32(),
                    end: fed - input.len(),
                });
            }
        }
        Ok(())
    }

    fn prefix_u32(&self) -> u32 {
        u32::from_be_bytes([
            self.prefix[1],
            self.prefix[2],
            self.prefix[3],
            self.prefix[4],
        ])
    }

    /// Whether the body read so far ends between messages (nothing cut short).
    pub(crate) fn at_boundary(&self) -> bool {
        !self.in_message && self.prefix_read == 0
    }

    /// Prefix bytes of the messages read (5 per message, and those of one begun).
    pub(crate) fn prefix_bytes(&self) -> u64 {
        self.messages * PREFIX_LEN as u64
            + if self.in_message {
                PREFIX_LEN as u64
            } else {
                u64::from(self.prefix_read)
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn framed(messages: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for message in messages {
            write_prefix(&mut out, message.len());
            out.extend_from_slice(message);
        }
        out
    }

    #[test]
    fn status_messages_are_percent_decoded_and_escaped_onto_one_line() {
        assert_eq!(
            status_message_text(b"no healthy upstream"),
            "no healthy upstream"
        );
        // grpc-go encodes '%' and bytes outside 0x20-0x7e; UTF-8 comes back whole.
        assert_eq!(
            status_message_text(b"50%25 d%C3%A9j%C3%A0 vu"),
            "50% déjà vu"
        );
        // Control characters are escaped: a newline cannot start a line of ours.
        assert_eq!(status_message_text(b"a%0Ab%09c%1B[2J"), r"a\nb\tc\u{1b}[2J");
        // A '%' without two hex digits after it is kept; bytes that are not UTF-8 are replaced.
        assert_eq!(status_message_text(b"100% %zz %4"), "100% %zz %4");
        assert_eq!(status_message_text(b"%FFok"), "\u{fffd}ok");
    }

    #[test]
    fn messages_are_found_whatever_the_pieces() {
        let body = framed(&[b"hello", b"", &[7u8; 300]]);
        for piece in 1..=body.len() {
            let mut reader = MessageReader::default();
            let mut lens = Vec::new();
            // Each message's end, as an offset in the whole body.
            let mut ends = Vec::new();
            for (index, chunk) in body.chunks(piece).enumerate() {
                reader
                    .feed(chunk, false, 1000, |message| {
                        lens.push(message.len);
                        ends.push(index * piece + message.end);
                    })
                    .unwrap();
            }
            assert_eq!(lens, [5, 0, 300], "pieces of {piece}");
            assert_eq!(ends, [10, 15, 320], "pieces of {piece}");
            assert!(reader.at_boundary());
            assert_eq!(reader.messages, 3);
            assert_eq!(reader.message_bytes, 305);
            assert_eq!(reader.prefix_bytes(), 15);
        }
    }

    #[test]
    fn a_cut_message_is_not_at_a_boundary() {
        let body = framed(&[b"hello"]);
        for cut in 1..body.len() {
            let mut reader = MessageReader::default();
            reader.feed(&body[..cut], false, 1000, |_| {}).unwrap();
            assert!(!reader.at_boundary(), "cut at {cut}");
            assert_eq!(reader.messages, 0);
        }
    }

    #[test]
    fn bad_prefixes_are_named() {
        let mut reader = MessageReader::default();
        assert_eq!(
            reader.feed(&[2, 0, 0, 0, 0], false, 10, |_| {}),
            Err(FramingError::BadFlag(2))
        );
        let mut reader = MessageReader::default();
        assert_eq!(
            reader.feed(&[1, 0, 0, 0, 1, 9], false, 10, |_| {}),
            Err(FramingError::CompressedWithoutEncoding)
        );
        let mut reader = MessageReader::default();
        assert_eq!(reader.feed(&[1, 0, 0, 0, 1, 9], true, 10, |_| {}), Ok(()));
        let mut reader = MessageReader::default();
        assert_eq!(
            reader.feed(&[0, 0xff, 0xff, 0xff, 0xff], false, 4 << 20, |_| {}),
            Err(FramingError::TooLarge(u32::MAX))
        );
    }

    #[test]
    fn codes_have_names_and_slots() {
        assert_eq!(slot_name(code_slot(0)), "OK");
        assert_eq!(slot_name(code_slot(14)), "UNAVAILABLE");
        assert_eq!(slot_name(code_slot(16)), "UNAUTHENTICATED");
        assert_eq!(slot_name(code_slot(17)), "OTHER");
        assert_eq!(slot_name(code_slot(u64::MAX)), "OTHER");
        assert_eq!(parse_code("deadline_exceeded"), Some(4));
        assert_eq!(parse_code("14"), Some(14));
        assert_eq!(parse_code("17"), None);
        assert_eq!(parse_code("nope"), None);
        assert_eq!(code_of_http_status(200), None);
        assert_eq!(code_of_http_status(503), Some(14));
        assert_eq!(code_of_http_status(404), Some(12));
        assert_eq!(code_of_http_status(500), Some(2));
        assert_eq!(code_of_http_status(401), Some(16));
        assert_eq!(code_of_http_status(403), Some(7));
        assert_eq!(code_of_http_status(429), Some(14));
        assert_eq!(code_of_http_status(400), Some(13));
        // The headers decide before any grpc-status: a 200 only with gRPC's content-type.
        assert_eq!(code_of_headers(200, true), None);
        assert_eq!(code_of_headers(200, false), Some(2));
        assert_eq!(code_of_headers(502, true), Some(14));
        assert_eq!(code_of_headers(404, false), Some(12));
    }

    #[test]
    fn grpc_content_types_are_told_from_others() {
        for (value, grpc) in [
            (&b"application/grpc"[..], true),
            (b"application/grpc+proto", true),
            (b"application/grpc;charset=utf-8", true),
            (b"application/grpc+", true),
            (b"application/grpcx", false),
            (b"application/grpc-web", false),
            (b"Application/grpc", false),
            (b"text/html", false),
            (b"application/json", false),
            (b"", false),
        ] {
            let head = &value[..value.len().min(super::super::fields::MediaType::HEAD)];
            assert_eq!(is_grpc_content_type(head), grpc, "{}", value.escape_ascii());
        }
    }

    #[test]
    fn timeouts_are_rounded_up_into_eight_digits() {
        let text = |timeout| {
            let mut out = Vec::new();
            write_timeout(&mut out, timeout);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(text(Duration::from_millis(1500)), "1500000u");
        assert_eq!(text(Duration::from_secs(5)), "5000000u");
        assert_eq!(text(Duration::from_secs(120)), "120000m");
        assert_eq!(text(Duration::from_nanos(1)), "1n");
        assert_eq!(text(Duration::from_nanos(100_000_001)), "100001u");
        assert_eq!(text(Duration::from_secs(1_000_000)), "1000000S");
    }
}
