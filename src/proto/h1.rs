//! HTTP/1.1 on the wire (RFC 9112): the request head a client sends and an incremental response
//! parser that counts header and body bytes and keeps no body. No I/O: callers feed it bytes.

use std::sync::Arc;

use super::check::{Checks, ResponseCheck};
use super::events::{EventPlan, ResponseEvents};
use super::fields::MediaType;
use super::request::{write_decimal, RequestParts};
use super::ErrorBody;

/// The largest response head accepted (status line and header fields).
pub(crate) const MAX_HEAD: usize = 64 * 1024;
/// Header fields accepted in one response head.
pub(crate) const MAX_HEADERS: usize = 100;

/// A part of a request head whose bytes the caller of [`write_request_head`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeadPart {
    /// The request target (path and query).
    Path,
    /// The value of the template's header at this index.
    Header(usize),
}

/// Appends the head of a request from `template` to `out`: `value` writes the path and the
/// template's header values (as they are, or rendered), `extra` headers follow the template's,
/// then the Content-Length of a `body_len`-byte body when the request declares one. The one
/// writer of HTTP/1.1 request heads, prepared ([`RequestHead`]) or rendered per request.
pub(crate) fn write_request_head(
    out: &mut Vec<u8>,
    template: &RequestParts,
    extra: &[(&str, &str)],
    body_len: usize,
    mut value: impl FnMut(HeadPart, &mut Vec<u8>),
) {
    out.extend_from_slice(template.method.as_str().as_bytes());
    out.push(b' ');
    value(HeadPart::Path, out);
    out.extend_from_slice(b" HTTP/1.1\r\nhost: ");
    out.extend_from_slice(template.authority.as_bytes());
    out.extend_from_slice(b"\r\n");
    for (index, (name, _)) in template.headers.iter().enumerate() {
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        value(HeadPart::Header(index), out);
        out.extend_from_slice(b"\r\n");
    }
    for (name, header) in extra {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if let Some(length) = template.content_length_of(body_len) {
        out.extend_from_slice(b"content-length: ");
        write_decimal(out, length as u64);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// The head of an untemplated request, prepared once for every path: the bytes before and after
/// the path, so a request costs three copies and a list of paths costs no memory per path.
#[derive(Debug, Clone)]
pub(crate) struct RequestHead {
    bytes: Vec<u8>,
    path_at: usize,
}

impl RequestHead {
    /// The head of `template`'s requests, with `extra` headers after the template's; its body
    /// (the template's) is sent after it, separately, so it is never copied.
    pub(crate) fn new(template: &RequestParts, extra: &[(&str, &str)]) -> Self {
        let mut bytes = Vec::new();
        let mut path_at = 0;
        write_request_head(
            &mut bytes,
            template,
            extra,
            template.body.len(),
            |part, out| match part {
                HeadPart::Path => path_at = out.len(),
                HeadPart::Header(index) => {
                    out.extend_from_slice(template.headers[index].1.as_bytes())
                }
            },
        );
        RequestHead { bytes, path_at }
    }

    /// Appends the head for `path`.
    pub(crate) fn write(&self, path: &str, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.bytes[..self.path_at]);
        out.extend_from_slice(path.as_bytes());
        out.extend_from_slice(&self.bytes[self.path_at..]);
    }
}

/// What parsing the received bytes produced.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// The current response needs more bytes.
    NeedMore,
    /// An interim (1xx) response was skipped.
    Interim,
    /// A response completed; `close` when the server will not send another on this connection.
    Complete {
        /// The final status.
        status: u16,
        /// Whether the connection ends after this response.
        close: bool,
    },
}

/// Header and body bytes parsed so far (h2load's "headers" and "data" traffic).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ByteCounts {
    /// Bytes of response heads (interim ones included).
    pub(crate) head: u64,
    /// Bytes of response bodies (chunk framing excluded).
    pub(crate) body: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Head,
    Fixed(u64),
    ChunkSize,
    ChunkData(u64),
    ChunkDataEnd,
    Trailers,
    UntilClose,
}

/// An incremental HTTP/1.1 response parser that counts header and body bytes and keeps no body.
#[derive(Debug)]
pub(crate) struct ResponseReader {
    bodyless: bool,
    part: Part,
    status: u16,
    close: bool,
    /// Bytes of the current trailer section, bounded like a head.
    trailers: usize,
    /// The run's response checks, if any, and what the current response has shown of them.
    checks: Option<Arc<Checks>>,
    check: ResponseCheck,
    /// The first bytes of the current response's body, if it is a 4xx/5xx.
    error_body: ErrorBody,
    /// How bodies are read as event streams, and the current body's reading (boxed: a
    /// connection that reads none pays one pointer).
    events: Box<ResponseEvents>,
}

impl ResponseReader {
    /// A reader; `bodyless` for responses to HEAD, which never have a body.
    pub(crate) fn new(bodyless: bool) -> Self {
        ResponseReader {
            bodyless,
            part: Part::Head,
            status: 0,
            close: false,
            trailers: 0,
            checks: None,
            check: ResponseCheck::default(),
            error_body: ErrorBody::default(),
            events: Box::default(),
        }
    }

    /// The reader, reading bodies as event streams as `plan` says.
    pub(crate) fn reading_events(mut self, plan: Option<EventPlan>) -> Self {
        // In the box `new` made: one allocation per reader.
        *self.events = ResponseEvents::new(plan);
        self
    }

    /// The current response's event stream.
    pub(crate) fn events(&mut self) -> &mut ResponseEvents {
        &mut self.events
    }

    /// The first bytes of the last final response's body when its status was 4xx/5xx.
    pub(crate) fn error_body(&mut self) -> &mut ErrorBody {
        &mut self.error_body
    }

    /// A reader that also follows the response checks (`--expect-*`), when there are any.
    pub(crate) fn checking(bodyless: bool, checks: Option<&Arc<Checks>>) -> Self {
        ResponseReader {
            checks: checks.cloned(),
            ..ResponseReader::new(bodyless)
        }
    }

    /// What the last final response's head and body have shown of the checks.
    pub(crate) fn check(&self) -> &ResponseCheck {
        &self.check
    }

    /// Searches body bytes for `--expect-body-contains`, and keeps an error body's first bytes.
    fn scan(&mut self, body: &[u8]) {
        if let Some(checks) = &self.checks {
            checks.scan_body(&mut self.check.body, body);
        }
        self.error_body.gather(self.status, body);
        self.events.body(body);
    }

    /// Consumes a prefix of `bytes`, adding what it parsed to `counts`; returns how much it used
    /// and what that produced. `Err` names what makes the response invalid.
    pub(crate) fn step(
        &mut self,
        bytes: &[u8],
        counts: &mut ByteCounts,
    ) -> Result<(usize, Event), String> {
        let mut used = 0;
        loop {
            let rest = &bytes[used..];
            match self.part {
                Part::Head => {
                    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
                    let mut response = httparse::Response::new(&mut headers);
                    let head_len = match response.parse(rest) {
                        Ok(httparse::Status::Complete(len)) if len > MAX_HEAD => {
                            return Err(format!(
                                "response head larger than {} KiB",
                                MAX_HEAD / 1024
                            ))
                        }
                        Ok(httparse::Status::Complete(len)) => len,
                        Ok(httparse::Status::Partial) if rest.len() > MAX_HEAD => {
                            return Err(format!(
                                "response head larger than {} KiB",
                                MAX_HEAD / 1024
                            ))
                        }
                        Ok(httparse::Status::Partial) => return Ok((used, Event::NeedMore)),
                        Err(httparse::Error::TooManyHeaders) => {
                            return Err(format!("more than {MAX_HEADERS} header fields"))
                        }
                        Err(error) => return Err(error.to_string()),
                    };
                    used += head_len;
                    counts.head += head_len as u64;
                    let status = response.code.unwrap_or(0);
                    if !(100..=599).contains(&status) {
                        return Err(format!("status {status} outside 100-599"));
                    }
                    if status == 101 {
                        return Err("unexpected 101 Switching Protocols".to_owned());
                    }
                    if status < 200 {
                        return Ok((used, Event::Interim));
                    }
                    self.status = status;
                    self.error_body.start();
                    self.part = self.body_kind(&response)?;
                    if let Some(checks) = &self.checks {
                        self.check = ResponseCheck::default();
                        for header in response.headers.iter() {
                            self.check.headers |=
                                checks.field(header.name.as_bytes(), header.value);
                        }
                    }
                }
                Part::Fixed(left) => {
                    let take = left.min(rest.len() as u64);
                    counts.body += take;
                    self.scan(&rest[..take as usize]);
                    used += take as usize;
                    self.part = Part::Fixed(left - take);
                    if left == take {
                        return Ok((used, self.complete()));
                    }
                    return Ok((used, Event::NeedMore));
                }
                Part::ChunkSize => match httparse::parse_chunk_size(rest) {
                    Ok(httparse::Status::Complete((len, 0))) => {
                        used += len;
                        self.trailers = 0;
                        self.part = Part::Trailers;
                    }
                    Ok(httparse::Status::Complete((len, size))) => {
                        used += len;
                        self.part = Part::ChunkData(size);
                    }
                    Ok(httparse::Status::Partial) if rest.len() > MAX_HEAD => {
                        return Err("chunk size line too long".to_owned())
                    }
                    Ok(httparse::Status::Partial) => return Ok((used, Event::NeedMore)),
                    Err(_) => return Err("invalid chunk size line".to_owned()),
                },
                Part::ChunkData(left) => {
                    let take = left.min(rest.len() as u64);
                    counts.body += take;
                    self.scan(&rest[..take as usize]);
                    used += take as usize;
                    if left != take {
                        self.part = Part::ChunkData(left - take);
                        return Ok((used, Event::NeedMore));
                    }
                    self.part = Part::ChunkDataEnd;
                }
                Part::ChunkDataEnd => {
                    if rest.len() < 2 {
                        return Ok((used, Event::NeedMore));
                    }
                    if &rest[..2] != b"\r\n" {
                        return Err("chunk data not followed by CRLF".to_owned());
                    }
                    used += 2;
                    self.part = Part::ChunkSize;
                }
                Part::Trailers => {
                    let Some(line_end) = rest.windows(2).position(|pair| pair == b"\r\n") else {
                        if self.trailers + rest.len() > MAX_HEAD {
                            return Err(format!("trailers larger than {} KiB", MAX_HEAD / 1024));
                        }
                        return Ok((used, Event::NeedMore));
                    };
                    used += line_end + 2;
                    self.trailers += line_end + 2;
                    if self.trailers > MAX_HEAD {
                        return Err(format!("trailers larger than {} KiB", MAX_HEAD / 1024));
                    }
                    if line_end == 0 {
                        return Ok((used, self.complete()));
                    }
                }
                Part::UntilClose => {
                    counts.body += rest.len() as u64;
                    self.scan(rest);
                    return Ok((bytes.len(), Event::NeedMore));
                }
            }
        }
    }

    /// Body bytes the response being read still has to send for sure: the rest of a
    /// Content-Length body, or of the current chunk (0 when that is not known).
    pub(crate) fn body_due(&self) -> u64 {
        match self.part {
            Part::Fixed(left) | Part::ChunkData(left) => left,
            _ => 0,
        }
    }

    /// Whether part of a response has been read (its end has not).
    pub(crate) fn is_mid_response(&self) -> bool {
        self.part != Part::Head
    }

    /// The connection reached EOF: a response delimited by the close completes; anything else is cut short.
    pub(crate) fn finish_at_eof(&mut self) -> Event {
        if self.part == Part::UntilClose {
            self.complete()
        } else {
            Event::NeedMore
        }
    }

    fn complete(&mut self) -> Event {
        self.part = Part::Head;
        Event::Complete {
            status: self.status,
            close: self.close,
        }
    }

    fn body_kind(&mut self, response: &httparse::Response<'_, '_>) -> Result<Part, String> {
        let mut content_length = None;
        let mut chunked = false;
        let mut close = response.version == Some(0);
        let mut media = MediaType::Other;
        for header in response.headers.iter() {
            let value = std::str::from_utf8(header.value).unwrap_or("");
            if header.name.eq_ignore_ascii_case("content-length") {
                content_length = Some(merge_content_length(content_length, value)?);
            } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = value
                    .split(',')
                    .any(|coding| coding.trim().eq_ignore_ascii_case("chunked"));
            } else if header.name.eq_ignore_ascii_case("content-type") {
                media = MediaType::of(&header.value[..header.value.len().min(MediaType::HEAD)]);
            } else if header.name.eq_ignore_ascii_case("connection") {
                for option in value.split(',').map(str::trim) {
                    if option.eq_ignore_ascii_case("close") {
                        close = true;
                    } else if option.eq_ignore_ascii_case("keep-alive") {
                        close = false;
                    }
                }
            }
        }
        self.close = close;
        self.events.head(media.events());
        Ok(
            if self.bodyless || self.status == 204 || self.status == 304 {
                Part::Fixed(0)
            } else if chunked {
                Part::ChunkSize
            } else if let Some(length) = content_length {
                Part::Fixed(length)
            } else {
                self.close = true;
                Part::UntilClose
            },
        )
    }
}

/// Adds one Content-Length field (possibly a list, `5, 5`) to what earlier fields said: every
/// value must be the same number (RFC 9112 §6.3: differing values make the message invalid).
fn merge_content_length(known: Option<u64>, value: &str) -> Result<u64, String> {
    let mut length = known;
    for item in value.split(',') {
        let item = item.trim();
        if item.is_empty() || !item.bytes().all(|byte| byte.is_ascii_digit()) {
            return Err(format!("bad Content-Length '{value}'"));
        }
        let parsed = item
            .parse::<u64>()
            .map_err(|_| format!("bad Content-Length '{value}'"))?;
        match length {
            Some(earlier) if earlier != parsed => {
                return Err(format!(
                    "conflicting Content-Length values {earlier} and {parsed}"
                ))
            }
            _ => length = Some(parsed),
        }
    }
    length.ok_or_else(|| format!("bad Content-Length '{value}'"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `wire` to a reader in pieces of `piece` bytes, returning completed statuses and byte counts.
    fn parse_in_pieces(wire: &[u8], piece: usize, eof: bool) -> (Vec<(u16, bool)>, ByteCounts) {
        let mut counts = ByteCounts::default();
        let mut reader = ResponseReader::new(false);
        let mut buffer = Vec::new();
        let mut completed = Vec::new();
        let mut chunks = wire.chunks(piece).peekable();
        while let Some(chunk) = chunks.next() {
            buffer.extend_from_slice(chunk);
            let last = chunks.peek().is_none();
            loop {
                let (used, event) = reader.step(&buffer, &mut counts).expect("valid response");
                buffer.drain(..used);
                let event = if event == Event::NeedMore && last && eof {
                    reader.finish_at_eof()
                } else {
                    event
                };
                match event {
                    Event::NeedMore => break,
                    Event::Interim => {}
                    Event::Complete { status, close } => completed.push((status, close)),
                }
            }
        }
        (completed, counts)
    }

    /// Feeds `wire` to `reader` in two pieces cut at `cut`, calling `complete` with the reader
    /// and the status at each final response.
    fn feed_cut(
        reader: &mut ResponseReader,
        counts: &mut ByteCounts,
        wire: &[u8],
        cut: usize,
        mut complete: impl FnMut(&ResponseReader, u16),
    ) {
        let mut buffer = Vec::new();
        for piece in [&wire[..cut], &wire[cut..]] {
            buffer.extend_from_slice(piece);
            loop {
                let (used, event) = reader.step(&buffer, counts).unwrap();
                buffer.drain(..used);
                match event {
                    Event::NeedMore => break,
                    Event::Interim => {}
                    Event::Complete { status, .. } => complete(reader, status),
                }
            }
        }
    }

    #[test]
    fn content_length_chunked_and_interim_responses_in_one_stream() {
        let mut wire = Vec::new();
        wire.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
        wire.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
        wire.extend_from_slice(b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n");
        wire.extend_from_slice(
            b"3;ext=1\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nx-trailer: t\r\n\r\n",
        );
        wire.extend_from_slice(b"HTTP/1.1 204 No Content\r\n\r\n");
        wire.extend_from_slice(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
        );
        for piece in [1, 3, 7, 64, wire.len()] {
            let (completed, counts) = parse_in_pieces(&wire, piece, false);
            assert_eq!(
                completed,
                [(200, false), (404, false), (204, false), (200, true)],
                "piece {piece}"
            );
            assert_eq!(counts.body, 5 + 3 + 16 + 2, "piece {piece}");
            assert_eq!(counts.head, 38 + 25 + 54 + 27 + 57, "piece {piece}");
        }
    }

    #[test]
    fn checks_follow_final_heads_and_bodies_split_anywhere() {
        use crate::proto::check::{Mismatch, Verdict};
        let headers = ["x-kind: final", "server"].map(String::from);
        let checks = Arc::new(
            Checks::parse(false, &[], &headers, Some("abcd"))
                .unwrap()
                .unwrap(),
        );
        let mut wire = Vec::new();
        // The interim response's fields are not the response's.
        wire.extend_from_slice(b"HTTP/1.1 100 Continue\r\nserver: interim\r\n\r\n");
        wire.extend_from_slice(
            b"HTTP/1.1 200 OK\r\nX-Kind:  final \r\nTransfer-Encoding: chunked\r\n\r\n",
        );
        wire.extend_from_slice(b"2\r\nab\r\n3\r\ncdx\r\n0\r\n\r\n");
        wire.extend_from_slice(b"HTTP/1.1 200 OK\r\nServer: s\r\nContent-Length: 4\r\n\r\nabdc");
        for cut in 0..=wire.len() {
            let mut reader = ResponseReader::checking(false, Some(&checks));
            let mut counts = ByteCounts::default();
            let mut verdicts = Vec::new();
            feed_cut(&mut reader, &mut counts, &wire, cut, |reader, status| {
                verdicts.push(checks.judge(status, reader.check()));
            });
            assert_eq!(
                verdicts,
                [
                    Verdict::Failed(Mismatch::Header(1)),
                    Verdict::Failed(Mismatch::Header(0))
                ],
                "cut at {cut}"
            );
        }
        let body_only = Arc::new(
            Checks::parse(false, &[], &[], Some("abcd"))
                .unwrap()
                .unwrap(),
        );
        let (mut reader, mut counts) = (
            ResponseReader::checking(false, Some(&body_only)),
            ByteCounts::default(),
        );
        let head =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n2\r\ncd\r\n0\r\n\r\n";
        assert_eq!(reader.step(head, &mut counts).unwrap().0, head.len());
        assert_eq!(body_only.judge(200, reader.check()), Verdict::Passed);
    }

    #[test]
    fn an_error_body_is_kept_to_its_first_bytes_split_anywhere_and_no_other() {
        let body = [b'x'; 300];
        let mut wire = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec();
        wire.extend(b"HTTP/1.1 503 Busy\r\nTransfer-Encoding: chunked\r\n\r\n12c\r\n");
        wire.extend(body);
        wire.extend(b"\r\n0\r\n\r\n");
        for cut in 1..wire.len() {
            let (mut reader, mut counts) = (ResponseReader::new(false), ByteCounts::default());
            let mut kept = Vec::new();
            feed_cut(&mut reader, &mut counts, &wire, cut, |reader, status| {
                kept.push((status, reader.error_body.bytes().to_vec()));
            });
            assert_eq!(
                kept,
                [
                    (200, vec![]),
                    (503, body[..super::super::ERROR_BODY_KEPT].to_vec())
                ],
                "cut at {cut}"
            );
            reader.error_body().stop();
            assert!(reader.error_body().bytes().is_empty());
        }
    }

    #[test]
    fn body_without_length_ends_at_eof() {
        let wire = b"HTTP/1.0 200 OK\r\n\r\nstreamed until close";
        let (completed, counts) = parse_in_pieces(wire, 4, true);
        assert_eq!(completed, [(200, true)]);
        assert_eq!(counts.body, 20);
    }

    fn first_error(wire: &[u8]) -> String {
        let mut counts = ByteCounts::default();
        let mut reader = ResponseReader::new(false);
        let mut rest = wire;
        loop {
            match reader.step(rest, &mut counts) {
                Ok((_, Event::NeedMore)) => {
                    panic!("no error in {:?}", String::from_utf8_lossy(wire))
                }
                Ok((used, _)) => rest = &rest[used..],
                Err(error) => return error,
            }
        }
    }

    #[test]
    fn malformed_responses_are_errors() {
        assert!(!first_error(b"HTTP/1.1 abc\r\n\r\n").is_empty());
        assert!(first_error(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n")
            .contains("bad Content-Length"));
        assert!(
            first_error(b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n")
                .contains("bad Content-Length")
        );
        assert_eq!(
            first_error(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
            "invalid chunk size line"
        );
        assert_eq!(
            first_error(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\n"),
            "conflicting Content-Length values 5 and 7"
        );
        assert_eq!(
            first_error(b"HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n"),
            "conflicting Content-Length values 5 and 6"
        );
        assert_eq!(
            first_error(b"HTTP/1.1 999 Odd\r\n\r\n"),
            "status 999 outside 100-599"
        );
        assert_eq!(
            first_error(b"HTTP/1.1 099 Odd\r\n\r\n"),
            "status 99 outside 100-599"
        );
    }

    #[test]
    fn repeated_equal_content_lengths_are_one() {
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2, 2\r\n\r\nok";
        let (completed, counts) = parse_in_pieces(wire, 3, false);
        assert_eq!(completed, [(200, false)]);
        assert_eq!(counts.body, 2);
    }

    #[test]
    fn heads_and_header_counts_are_bounded() {
        let mut endless = b"HTTP/1.1 200 OK\r\nx-filler: ".to_vec();
        endless.resize(MAX_HEAD + 1, b'a');
        assert_eq!(first_error(&endless), "response head larger than 64 KiB");
        let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
        for _ in 0..=MAX_HEADERS {
            many.extend_from_slice(b"a: b\r\n");
        }
        many.extend_from_slice(b"\r\n");
        assert_eq!(first_error(&many), "more than 100 header fields");
    }
}
