//! The parser of a response stream (RFC 9114 §4.1): frames in, header sections and body bytes
//! out, with the message rules (content-length, interim responses, trailers) and the checks.

use std::sync::Arc;

use super::qpack::decode_field_section;
use super::varint::Varints;
use super::{
    reserved_http2_frame, H3Error, CANCEL_PUSH, DATA, GOAWAY, H3_EXCESSIVE_LOAD, H3_FRAME_ERROR,
    H3_FRAME_UNEXPECTED, H3_ID_ERROR, H3_MESSAGE_ERROR, HEADERS, MAX_HEADER_BLOCK, MAX_HEADER_LIST,
    MAX_PUSH_ID, PUSH_PROMISE, SETTINGS,
};
use crate::proto::check::{Checks, ResponseCheck};
use crate::proto::events::{EventPlan, ResponseEvents};
use crate::proto::hpack::FieldMatcher;
use crate::proto::{ErrorBody, MAX_INTERIM};

/// A response's header section, as decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Section {
    /// An interim (1xx) response.
    Interim(u16),
    /// The final response's status.
    Final(u16),
    /// Trailers.
    Trailers,
}

/// What a response stream carried, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResponseEvent {
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
pub(crate) struct ResponseParser {
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
    /// The first bytes of the body, if the response is a 4xx/5xx.
    error_body: ErrorBody,
    /// How bodies are read as event streams, and the current body's reading (boxed: a
    /// connection that reads none pays one pointer).
    events: Box<ResponseEvents>,
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
            error_body: ErrorBody::default(),
            events: Box::default(),
        }
    }
}

impl ResponseParser {
    /// A parser that also follows the response checks (`--expect-*`), when there are any.
    pub(crate) fn checking(checks: Option<&Arc<Checks>>) -> Self {
        ResponseParser {
            checks: checks.cloned(),
            matcher: checks.and_then(FieldMatcher::new),
            ..ResponseParser::default()
        }
    }

    /// A parser for the responses to HEAD requests (`head`), which have no content.
    pub(crate) fn answering_head(self, head: bool) -> Self {
        ResponseParser {
            answers_head: head,
            ..self
        }
    }

    /// A parser that reads bodies as event streams as `plan` says.
    pub(crate) fn reading_events(mut self, plan: Option<EventPlan>) -> Self {
        // In the box `new` made: one allocation per reader.
        *self.events = ResponseEvents::new(plan);
        self
    }

    /// The response's event stream.
    pub(crate) fn events(&mut self) -> &mut ResponseEvents {
        &mut self.events
    }

    /// What the response so far has shown of the checks.
    pub(crate) fn check(&self) -> &ResponseCheck {
        &self.check
    }

    /// The first bytes of the response's body when its status is 4xx/5xx.
    pub(crate) fn error_body(&mut self) -> &mut ErrorBody {
        &mut self.error_body
    }

    /// Ready for a new response (the header buffer's capacity is kept).
    pub(crate) fn reset(&mut self) {
        self.head = Varints::default();
        self.frame = Frame::Head;
        self.phase = Phase::AwaitingStatus;
        self.interim = 0;
        self.block.clear();
        self.check = ResponseCheck::default();
        self.content_length = None;
        self.received = 0;
        self.error_body.start();
    }

    /// Parses the next bytes of the stream, handing what they complete to `on`.
    pub(crate) fn feed(
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
                        if let Some(status) = self.status() {
                            self.error_body.gather(status, &input[..take]);
                        }
                        self.events.body(&input[..take]);
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
    pub(crate) fn finish(&self) -> Result<u16, H3Error> {
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
    pub(crate) fn status(&self) -> Option<u16> {
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
                self.events.head(decoded.rules.media.events());
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

#[cfg(test)]
mod tests {
    use super::super::testing::{frame, section};
    use super::super::varint::write_frame_head;
    use super::super::{error_code_name, QPACK_DECOMPRESSION_FAILED};
    use super::*;
    use crate::proto::check::{Mismatch, Verdict};
    use crate::proto::hpack::write_integer;

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
                false,
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
        let body_only = Arc::new(
            Checks::parse(false, &[], &[], Some("lowo"))
                .unwrap()
                .unwrap(),
        );
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
}
