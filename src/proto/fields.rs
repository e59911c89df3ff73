//! What makes a response's field section malformed (RFC 9113 §8.1.1, §8.2, §8.3.2; RFC 9114
//! §4.1.2, §4.2, §4.3.2), checked as HPACK and QPACK decode it. A name is classed once: a
//! literal one by a byte-class scan as it is read, a static table's by its known text, and a
//! dynamic table entry keeps its class. A literal value is scanned once for the bytes a value
//! must not hold (RFC 9113 §8.2.1, RFC 9114 §4.2). Nothing is allocated.

use super::events::EventFormat;

/// What a field name is to a response's rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameClass {
    /// Any other well-formed name.
    Regular,
    /// `content-length`: its value is checked against the body.
    ContentLength,
    /// `:status`.
    Status,
    /// `grpc-status`: a gRPC call's outcome (in trailers, or a Trailers-Only response).
    GrpcStatus,
    /// `grpc-encoding`: the response's messages may be compressed.
    GrpcEncoding,
    /// `content-type`: a gRPC response must name `application/grpc…`.
    ContentType,
    /// `grpc-message`: the text of a status other than OK (its value is kept, see
    /// [`super::hpack::DecodedBlock::grpc_message`]).
    GrpcMessage,
    /// A pseudo-header other than `:status`: a request's, or one no RFC defines.
    OtherPseudo,
    /// A connection-specific field (RFC 9113 §8.2.2, RFC 9114 §4.2).
    ConnectionSpecific,
    /// Empty, or with an upper-case letter, a control byte, a space or a byte above 0x7e.
    Invalid,
}

/// The connection-specific fields a response must not carry. `te` and `host` concern requests.
const CONNECTION_SPECIFIC: [&[u8]; 5] = [
    b"connection",
    b"keep-alive",
    b"proxy-connection",
    b"transfer-encoding",
    b"upgrade",
];

/// Whether a byte may appear in a field name (RFC 9113 §8.2.1: not 0x00-0x20, A-Z, 0x7f-0xff).
const fn name_byte(byte: u8) -> bool {
    byte > 0x20 && byte < 0x7f && !byte.is_ascii_uppercase()
}

impl NameClass {
    /// The class of a name known to be well formed (a static table's).
    pub(crate) fn of_known(name: &[u8]) -> NameClass {
        match name {
            b":status" => NameClass::Status,
            [b':', ..] => NameClass::OtherPseudo,
            b"content-length" => NameClass::ContentLength,
            b"grpc-status" => NameClass::GrpcStatus,
            b"content-type" => NameClass::ContentType,
            b"grpc-encoding" => NameClass::GrpcEncoding,
            b"grpc-message" => NameClass::GrpcMessage,
            _ if CONNECTION_SPECIFIC.contains(&name) => NameClass::ConnectionSpecific,
            _ => NameClass::Regular,
        }
    }

    /// Whether the rules read its value as a number.
    pub(crate) fn numeric(self) -> bool {
        matches!(
            self,
            NameClass::Status | NameClass::ContentLength | NameClass::GrpcStatus
        )
    }

    /// Whether it is a pseudo-header.
    fn pseudo(self) -> bool {
        matches!(self, NameClass::Status | NameClass::OtherPseudo)
    }
}

/// Classes a literal name fed byte by byte (as it arrives, or as its Huffman code decodes).
/// Only the first bytes are kept: every name with a class of its own is shorter.
#[derive(Debug, Default)]
pub(crate) struct NameScan {
    head: [u8; 20],
    len: usize,
    invalid: bool,
}

impl NameScan {
    /// The next byte of the name.
    pub(crate) fn push(&mut self, byte: u8) {
        // A pseudo-header's leading colon is the one byte outside the name bytes.
        self.invalid |= !(name_byte(byte) && (byte != b':' || self.len == 0));
        if let Some(slot) = self.head.get_mut(self.len) {
            *slot = byte;
        }
        self.len += 1;
    }

    /// The class of the name fed so far (all of it).
    pub(crate) fn class(&self) -> NameClass {
        let pseudo = self.head[0] == b':';
        if self.invalid || self.len == usize::from(pseudo) {
            return NameClass::Invalid;
        }
        match self.head.get(..self.len) {
            Some(name) => NameClass::of_known(name),
            None if pseudo => NameClass::OtherPseudo,
            None => NameClass::Regular,
        }
    }

    /// The class of a name given whole.
    #[cfg(test)]
    pub(crate) fn of(name: &[u8]) -> NameClass {
        let mut scan = NameScan::default();
        name.iter().for_each(|&byte| scan.push(byte));
        scan.class()
    }
}

/// Whether a byte may not appear in a field value at all: NUL, CR or LF.
const fn forbidden_in_value(byte: u8) -> bool {
    matches!(byte, 0 | b'\r' | b'\n')
}

/// Whether a byte may not start or end a field value: a space or a tab.
const fn whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t')
}

/// Whether a field value is malformed (RFC 9113 §8.2.1, RFC 9114 §4.2): a NUL, CR or LF in it,
/// or a space or tab at either end.
pub(crate) fn value_malformed(value: &[u8]) -> bool {
    match (value.first(), value.last()) {
        (Some(&first), Some(&last)) if whitespace(first) || whitespace(last) => true,
        _ => memchr::memchr3(0, b'\r', b'\n', value).is_some(),
    }
}

/// [`value_malformed`] for a value fed byte by byte (as its Huffman code decodes).
#[derive(Debug, Default)]
pub(crate) struct ValueScan {
    len: usize,
    last: u8,
    malformed: bool,
}

impl ValueScan {
    /// The next byte of the value.
    pub(crate) fn push(&mut self, byte: u8) {
        self.malformed |= forbidden_in_value(byte) || (self.len == 0 && whitespace(byte));
        self.last = byte;
        self.len += 1;
    }

    /// Whether the value fed so far (all of it) is malformed.
    pub(crate) fn malformed(&self) -> bool {
        self.malformed || (self.len > 0 && whitespace(self.last))
    }
}

/// The rules a response field section is held to, field by field in order; the first broken
/// one is kept (the section is still decoded to the end, to keep HPACK's table in step).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SectionRules {
    regular_seen: bool,
    status_seen: bool,
    /// Whether the section had a pseudo-header (trailers must not).
    pub(crate) pseudo: bool,
    /// What `content-length` said, if the section had one.
    pub(crate) content_length: Option<u64>,
    /// The first rule the section broke.
    pub(crate) malformed: Option<&'static str>,
    /// What `grpc-status` said, if the section had one (`u64::MAX`: not a number).
    pub(crate) grpc_status: Option<u64>,
    /// Whether the section had a `grpc-encoding` (compressed messages are then allowed).
    pub(crate) grpc_encoding: bool,
    /// What its `content-type` names.
    pub(crate) media: MediaType,
}

impl SectionRules {
    /// A field named `class` whose value is `len` bytes long, spells `number` (see [`decimal`];
    /// only `:status` and `content-length` need it), is malformed or not (see
    /// [`value_malformed`]) and, for a `content-type`, names `media`.
    pub(crate) fn field(
        &mut self,
        class: NameClass,
        len: usize,
        number: Option<u64>,
        bad_value: bool,
        media: MediaType,
    ) {
        let broken = match class {
            NameClass::Invalid => Some("a field name that is empty or not lower-case ASCII"),
            _ if bad_value => Some(
                "a field value with NUL, CR or LF, or a space or tab at its start or end",
            ),
            NameClass::ConnectionSpecific => Some(
                "a connection-specific field (connection, keep-alive, proxy-connection, transfer-encoding or upgrade)",
            ),
            NameClass::OtherPseudo => Some("a pseudo-header other than :status in a response"),
            _ if class.pseudo() && self.regular_seen => {
                Some("a pseudo-header after a regular field")
            }
            NameClass::Status if self.status_seen => Some("two :status fields"),
            NameClass::Status if len != 3 || number.is_none() => {
                Some("a :status that is not three digits")
            }
            NameClass::ContentLength => match (number, self.content_length) {
                (None, _) => Some("a content-length that is not a number"),
                (Some(length), Some(earlier)) if length != earlier => {
                    Some("two content-length fields that disagree")
                }
                (length, _) => {
                    self.content_length = length;
                    None
                }
            },
            NameClass::GrpcStatus => {
                self.grpc_status = Some(number.unwrap_or(u64::MAX));
                None
            }
            NameClass::GrpcEncoding => {
                self.grpc_encoding = true;
                None
            }
            NameClass::ContentType => {
                self.media = media;
                None
            }
            _ => None,
        };
        self.pseudo |= class.pseudo();
        self.regular_seen |= !class.pseudo();
        self.status_seen |= class == NameClass::Status;
        if self.malformed.is_none() {
            self.malformed = broken;
        }
    }
}

/// What a response's `content-type` names, as far as reading its body goes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MediaType {
    /// Anything else, or no content-type.
    #[default]
    Other,
    /// gRPC (see [`super::grpc::is_grpc_content_type`]).
    Grpc,
    /// An event stream (see [`EventFormat::of_content_type`]).
    Events(EventFormat),
}

impl MediaType {
    /// Bytes of a value [`MediaType::of`] needs to see: the longest name it knows, a `;` and
    /// room for spaces before it.
    pub(crate) const HEAD: usize = 32;

    /// What a `content-type` value, given by its first [`MediaType::HEAD`] bytes (or all of it
    /// when shorter), names.
    pub(crate) fn of(head: &[u8]) -> MediaType {
        if super::grpc::is_grpc_content_type(head) {
            MediaType::Grpc
        } else {
            EventFormat::of_content_type(head).map_or(MediaType::Other, MediaType::Events)
        }
    }

    /// The event format it names, if any.
    pub(crate) fn events(self) -> Option<EventFormat> {
        match self {
            MediaType::Events(format) => Some(format),
            _ => None,
        }
    }
}

/// The number a field value spells: only ASCII digits, at least one, within a u64.
pub(crate) fn decimal(text: &[u8]) -> Option<u64> {
    if text.is_empty() {
        return None;
    }
    text.iter().try_fold(0u64, |number, &byte| {
        byte.is_ascii_digit().then_some(())?;
        number.checked_mul(10)?.checked_add(u64::from(byte - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_classed_by_their_bytes() {
        for (name, class) in [
            (&b"server"[..], NameClass::Regular),
            (b"x-a_b.c~1", NameClass::Regular),
            (b"a-name-longer-than-twenty-bytes", NameClass::Regular),
            (b"content-length", NameClass::ContentLength),
            (b":status", NameClass::Status),
            (b":path", NameClass::OtherPseudo),
            (
                b":a-pseudo-header-longer-than-twenty",
                NameClass::OtherPseudo,
            ),
            (b"connection", NameClass::ConnectionSpecific),
            (b"transfer-encoding", NameClass::ConnectionSpecific),
            (b"Server", NameClass::Invalid),
            (b"a-name-longer-than-twenty-bytes-X", NameClass::Invalid),
            (b":Status", NameClass::Invalid),
            (b"x y", NameClass::Invalid),
            (b"x\x7f", NameClass::Invalid),
            (b"x\xc3\xa9", NameClass::Invalid),
            (b"a:b", NameClass::Invalid),
            (b":", NameClass::Invalid),
            (b"", NameClass::Invalid),
        ] {
            assert_eq!(NameScan::of(name), class, "{}", name.escape_ascii());
        }
    }

    /// The rules applied to `name: value` fields.
    fn rules(fields: &[&str]) -> SectionRules {
        let mut rules = SectionRules::default();
        for field in fields {
            let (name, value) = field.split_once(": ").expect("name: value");
            let value = value.as_bytes();
            let bad = value_malformed(value);
            let mut scan = ValueScan::default();
            value.iter().for_each(|&byte| scan.push(byte));
            assert_eq!(scan.malformed(), bad, "{field:?}: both scans agree");
            let head = &value[..value.len().min(MediaType::HEAD)];
            rules.field(
                NameScan::of(name.as_bytes()),
                value.len(),
                decimal(value),
                bad,
                MediaType::of(head),
            );
        }
        rules
    }

    #[test]
    fn sections_keep_the_first_rule_they_break() {
        let ok = rules(&[":status: 200", "content-length: 5", "content-length: 5"]);
        assert_eq!(
            (ok.malformed, ok.content_length, ok.pseudo),
            (None, Some(5), true)
        );
        let fine = rules(&["x-a: a \t b", "x-b: ", "x-c: é"]);
        assert_eq!(fine.malformed, None, "inner spaces, empty, UTF-8");
        let cases: [(&str, &[&[&str]]); 8] = [
            (
                "a field value with NUL, CR or LF, or a space or tab at its start or end",
                &[
                    &["x-a: a\0b"],
                    &["x-a: a\rb"],
                    &["x-a: a\n"],
                    &["x-a:  a"],
                    &["x-a: a "],
                    &["x-a: \t"],
                    &[":status: 200", "x-a: \ta"],
                ],
            ),
            ("two :status fields", &[&[":status: 200", ":status: 204"]]),
            (
                "a pseudo-header after a regular field",
                &[&["server: x", ":status: 200"]],
            ),
            (
                "a :status that is not three digits",
                &[&[":status: 20"], &[":status: +20"], &[":status: 2000"]],
            ),
            (
                "two content-length fields that disagree",
                &[&["content-length: 5", "content-length: 6"]],
            ),
            (
                "a content-length that is not a number",
                &[&["content-length: -1"], &["content-length: "]],
            ),
            (
                "a pseudo-header other than :status in a response",
                &[&[":method: GET"]],
            ),
            (
                "a field name that is empty or not lower-case ASCII",
                &[&["X-Up: 1", "connection: close"]],
            ),
        ];
        for (broken, sections) in cases {
            for fields in sections {
                assert_eq!(rules(fields).malformed, Some(broken), "{fields:?}");
            }
        }
        assert!(rules(&["keep-alive: 1"])
            .malformed
            .is_some_and(|reason| reason.starts_with("a connection-specific")));
        let media = |field| rules(&[field]).media;
        assert_eq!(
            media("content-type: application/grpc+proto"),
            MediaType::Grpc
        );
        assert_eq!(media("content-type: text/html"), MediaType::Other);
        assert_eq!(media("x-a: application/grpc"), MediaType::Other);
        assert_eq!(
            media("content-type: text/event-stream; charset=utf-8"),
            MediaType::Events(EventFormat::Sse)
        );
        assert_eq!(
            media("content-type: application/x-ndjson"),
            MediaType::Events(EventFormat::Ndjson)
        );
        assert_eq!(decimal(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(decimal(b"18446744073709551616"), None, "past u64");
    }
}
