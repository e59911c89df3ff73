//! HTTP/1.1: a keep-alive connection with up to `-m` requests written ahead (pipelining when
//! `-m > 1`), responses matched in order. Requests are serialized once; responses are parsed in
//! place with httparse and their bodies counted, never kept. See the README for why this replaced
//! hyper's client (hyper cannot pipeline, and costs several times the CPU per request).

use std::collections::VecDeque;
use std::future::poll_fn;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::future::LocalBoxFuture;
use futures_util::FutureExt;
use http::Method;

use super::{
    io_error_kind, transfer, wait_for, ConnEnd, Engine, Io, PathCycle, Session, Slot, Waited,
};
use crate::plan::{RequestTemplate, RunPlan};
use crate::recorder::{ErrorKind, RequestStart, ResponseSample, WireMeter};

/// Bytes read per socket read; also the largest response head accepted.
const READ_BUFFER: usize = 64 * 1024;
/// Header fields parsed per response head.
const MAX_HEADERS: usize = 100;

/// The HTTP/1.1 engine.
pub struct Http1 {
    requests: Vec<Bytes>,
    depth: usize,
    bodyless_responses: bool,
    request_timeout: Option<Duration>,
}

impl Http1 {
    /// Serializes one request per path, once.
    pub fn new(plan: &RunPlan) -> Self {
        let template = &plan.request;
        Http1 {
            requests: template
                .paths
                .iter()
                .map(|path| serialize_request(template, path, &[]))
                .collect(),
            depth: plan.max_concurrent,
            bodyless_responses: template.method == Method::HEAD,
            request_timeout: plan.timeouts.request,
        }
    }

    /// Carries on with a connection that already has one request in flight (sent at `start`) and
    /// `received` bytes of its response read: an h2c upgrade the server declined.
    pub async fn continue_after(
        &self,
        io: Io,
        session: Session<'_>,
        start: RequestStart,
        received: &[u8],
    ) -> ConnEnd {
        self.run(io, session, VecDeque::from([start]), received)
            .await
    }

    async fn run(
        &self,
        mut io: Io,
        session: Session<'_>,
        in_flight: VecDeque<RequestStart>,
        received: &[u8],
    ) -> ConnEnd {
        let paths = PathCycle::starting_at(in_flight.len());
        let mut pipe = Pipe::new(session, in_flight, received, self);
        // Bytes handed over with the connection are parsed before anything is read.
        let mut handed_over = !received.is_empty();
        loop {
            let mut wake = None;
            while !pipe.budget_spent && pipe.in_flight.len() < self.depth {
                match session.next_request() {
                    Slot::Now(start) => {
                        let request = &self.requests[paths.next(self.requests.len())];
                        pipe.outgoing.extend_from_slice(request);
                        pipe.in_flight.push_back(start);
                    }
                    Slot::At(time) => {
                        wake = Some(time);
                        break;
                    }
                    Slot::Done => pipe.budget_spent = true,
                }
            }
            if pipe.in_flight.is_empty() && wake.is_none() {
                return ConnEnd::Finished;
            }
            if !handed_over {
                let deadline = pipe
                    .in_flight
                    .front()
                    .zip(self.request_timeout)
                    .map(|(oldest, limit)| oldest.actual + limit);
                if let Err(end) = pipe.exchange(&mut io, deadline, wake).await {
                    return end;
                }
            }
            handed_over = false;
            if let Some(end) = pipe.deliver() {
                return end;
            }
        }
    }
}

/// One pipelined connection's state: requests in flight, buffers, and the response parser.
struct Pipe<'s> {
    session: Session<'s>,
    in_flight: VecDeque<RequestStart>,
    outgoing: Vec<u8>,
    written: usize,
    incoming: Vec<u8>,
    parsed_to: usize,
    filled_to: usize,
    reader: ResponseReader,
    first_byte: Option<Instant>,
    read_at: Instant,
    eof: bool,
    budget_spent: bool,
}

impl<'s> Pipe<'s> {
    fn new(
        session: Session<'s>,
        mut in_flight: VecDeque<RequestStart>,
        received: &[u8],
        engine: &Http1,
    ) -> Self {
        in_flight.reserve(engine.depth);
        let largest_request = engine.requests.iter().map(Bytes::len).max().unwrap_or(0);
        let mut incoming = vec![0u8; READ_BUFFER.max(received.len())];
        incoming[..received.len()].copy_from_slice(received);
        Pipe {
            session,
            in_flight,
            outgoing: Vec::with_capacity(largest_request * engine.depth),
            written: 0,
            incoming,
            parsed_to: 0,
            filled_to: received.len(),
            reader: ResponseReader::new(engine.bodyless_responses),
            first_byte: None,
            read_at: Instant::now(),
            eof: false,
            budget_spent: false,
        }
    }

    /// Writes queued requests and reads what arrives: until `deadline` (the oldest request's
    /// timeout) or `wake` (the next scheduled send). `Err` ends the connection.
    async fn exchange(
        &mut self,
        io: &mut Io,
        deadline: Option<Instant>,
        wake: Option<Instant>,
    ) -> Result<(), ConnEnd> {
        if self.parsed_to > 0 {
            self.incoming.copy_within(self.parsed_to..self.filled_to, 0);
            self.filled_to -= self.parsed_to;
            self.parsed_to = 0;
        }
        if self.filled_to == self.incoming.len() {
            self.session
                .note_error(|| "HTTP/1.1 response head larger than 64 KiB".to_owned());
            return Err(self.fail_all(ErrorKind::Protocol));
        }
        let (outgoing, written, incoming) = (
            &mut self.outgoing,
            &mut self.written,
            &mut self.incoming[self.filled_to..],
        );
        let step = poll_fn(|cx| transfer(io, outgoing, written, incoming, cx));
        let read = match wait_for(step, deadline, wake).await {
            Waited::Io(read) => read,
            Waited::TimedOut => return Err(self.fail_all(ErrorKind::Timeout)),
            Waited::Woke => return Ok(()),
        };
        self.read_at = Instant::now();
        match read {
            Ok(0) => self.eof = true,
            Ok(count) => self.filled_to += count,
            Err(error) => {
                self.session
                    .note_error(|| format!("HTTP/1.1 connection failed: {error}"));
                return Err(self.fail_all(io_error_kind(&error)));
            }
        }
        Ok(())
    }

    /// Parses what has arrived and records completed responses; `Some` when the connection is over.
    fn deliver(&mut self) -> Option<ConnEnd> {
        loop {
            if self.first_byte.is_none() && self.parsed_to < self.filled_to {
                self.first_byte = Some(self.read_at);
            }
            let unparsed = &self.incoming[self.parsed_to..self.filled_to];
            let (used, event) = match self.reader.step(unparsed, self.session.wire()) {
                Ok(progress) => progress,
                Err(problem) => {
                    self.session
                        .note_error(|| format!("invalid HTTP/1.1 response: {problem}"));
                    return Some(self.fail_all(ErrorKind::Protocol));
                }
            };
            self.parsed_to += used;
            let event = match event {
                Event::NeedMore if self.eof => self.reader.finish_at_eof(),
                event => event,
            };
            match event {
                Event::NeedMore => break,
                Event::Interim => {}
                Event::Complete { status, close } => {
                    let start = self
                        .in_flight
                        .pop_front()
                        .expect("a response answers a sent request");
                    self.session.complete(ResponseSample {
                        start,
                        first_byte: self.first_byte.take().unwrap_or(self.read_at),
                        end: self.read_at,
                        status,
                    });
                    if close || self.eof {
                        return Some(self.closed_by_server());
                    }
                    if self.in_flight.is_empty() {
                        break;
                    }
                }
            }
        }
        self.eof.then(|| self.closed_by_server())
    }

    /// The server ended the connection; requests it had not answered are lost (never retried silently).
    fn closed_by_server(&mut self) -> ConnEnd {
        if self.in_flight.is_empty() && self.budget_spent {
            return ConnEnd::Finished;
        }
        if !self.in_flight.is_empty() {
            let unanswered = self.in_flight.len();
            let midway = self.reader.is_mid_response();
            self.session.note_error(|| match midway {
                true => "the server closed an HTTP/1.1 connection in the middle of a response".to_owned(),
                false => format!("the server closed an HTTP/1.1 connection with {unanswered} request(s) unanswered"),
            });
        }
        self.fail_all(ErrorKind::Closed)
    }

    /// Every request in flight failed with `kind`; the connection must be replaced.
    fn fail_all(&mut self, kind: ErrorKind) -> ConnEnd {
        for start in self.in_flight.drain(..) {
            self.session.fail(start, kind);
        }
        ConnEnd::Lost
    }
}

impl Engine for Http1 {
    fn drive<'a>(&'a self, io: Io, session: Session<'a>) -> LocalBoxFuture<'a, ConnEnd> {
        self.run(io, session, VecDeque::new(), &[]).boxed_local()
    }
}

/// Serializes a request for `path` from the template, with `extra` headers after the template's.
pub fn serialize_request(template: &RequestTemplate, path: &str, extra: &[(&str, &str)]) -> Bytes {
    let mut wire = format!(
        "{} {path} HTTP/1.1\r\nhost: {}\r\n",
        template.method, template.authority
    )
    .into_bytes();
    let headers = template
        .headers
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_bytes()))
        .chain(extra.iter().map(|(name, value)| (*name, value.as_bytes())));
    for (name, value) in headers {
        wire.extend_from_slice(name.as_bytes());
        wire.extend_from_slice(b": ");
        wire.extend_from_slice(value);
        wire.extend_from_slice(b"\r\n");
    }
    if let Some(length) = template.content_length() {
        wire.extend_from_slice(format!("content-length: {length}\r\n").as_bytes());
    }
    wire.extend_from_slice(b"\r\n");
    wire.extend_from_slice(&template.body);
    Bytes::from(wire)
}

/// What parsing the received bytes produced.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// The current response needs more bytes.
    NeedMore,
    /// An interim (1xx) response was skipped.
    Interim,
    /// A response completed; `close` when the server will not send another on this connection.
    Complete { status: u16, close: bool },
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
}

impl ResponseReader {
    pub(crate) fn new(bodyless: bool) -> Self {
        ResponseReader {
            bodyless,
            part: Part::Head,
            status: 0,
            close: false,
        }
    }

    /// Consumes a prefix of `bytes`; returns how much it used and what that produced.
    pub(crate) fn step(
        &mut self,
        bytes: &[u8],
        wire: &WireMeter,
    ) -> Result<(usize, Event), String> {
        let mut used = 0;
        loop {
            let rest = &bytes[used..];
            match self.part {
                Part::Head => {
                    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
                    let mut response = httparse::Response::new(&mut headers);
                    let head_len = match response.parse(rest) {
                        Ok(httparse::Status::Complete(len)) => len,
                        Ok(httparse::Status::Partial) => return Ok((used, Event::NeedMore)),
                        Err(error) => return Err(error.to_string()),
                    };
                    used += head_len;
                    wire.add_headers(head_len as u64, head_len as u64);
                    let status = response.code.unwrap_or(0);
                    if (100..200).contains(&status) && status != 101 {
                        return Ok((used, Event::Interim));
                    }
                    if status == 101 {
                        return Err("unexpected 101 Switching Protocols".to_owned());
                    }
                    self.status = status;
                    self.part = self.body_kind(&response)?;
                }
                Part::Fixed(left) => {
                    let take = left.min(rest.len() as u64);
                    wire.add_data(take);
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
                        self.part = Part::Trailers;
                    }
                    Ok(httparse::Status::Complete((len, size))) => {
                        used += len;
                        self.part = Part::ChunkData(size);
                    }
                    Ok(httparse::Status::Partial) => return Ok((used, Event::NeedMore)),
                    Err(_) => return Err("invalid chunk size line".to_owned()),
                },
                Part::ChunkData(left) => {
                    let take = left.min(rest.len() as u64);
                    wire.add_data(take);
                    used += take as usize;
                    self.part = if left == take {
                        Part::ChunkDataEnd
                    } else {
                        Part::ChunkData(left - take)
                    };
                    if left != take {
                        return Ok((used, Event::NeedMore));
                    }
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
                        return Ok((used, Event::NeedMore));
                    };
                    used += line_end + 2;
                    if line_end == 0 {
                        return Ok((used, self.complete()));
                    }
                }
                Part::UntilClose => {
                    wire.add_data(rest.len() as u64);
                    return Ok((bytes.len(), Event::NeedMore));
                }
            }
        }
    }

    /// Whether part of a response has been read (its end has not).
    fn is_mid_response(&self) -> bool {
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
        for header in response.headers.iter() {
            let value = std::str::from_utf8(header.value).unwrap_or("");
            if header.name.eq_ignore_ascii_case("content-length") {
                let length = value
                    .trim()
                    .parse::<u64>()
                    .map_err(|_| format!("bad Content-Length '{value}'"))?;
                content_length = Some(length);
            } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = value
                    .split(',')
                    .any(|coding| coding.trim().eq_ignore_ascii_case("chunked"));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `wire` to a reader in pieces of `piece` bytes, returning completed statuses and byte counts.
    fn parse_in_pieces(wire: &[u8], piece: usize, eof: bool) -> (Vec<(u16, bool)>, u64, u64) {
        let meter = WireMeter::default();
        let mut reader = ResponseReader::new(false);
        let mut buffer = Vec::new();
        let mut completed = Vec::new();
        let mut chunks = wire.chunks(piece).peekable();
        while let Some(chunk) = chunks.next() {
            buffer.extend_from_slice(chunk);
            let last = chunks.peek().is_none();
            loop {
                let (used, event) = reader.step(&buffer, &meter).expect("valid response");
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
        let totals = meter.totals();
        (completed, totals.headers, totals.data)
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
            let (completed, headers, data) = parse_in_pieces(&wire, piece, false);
            assert_eq!(
                completed,
                [(200, false), (404, false), (204, false), (200, true)],
                "piece {piece}"
            );
            assert_eq!(data, 5 + 3 + 16 + 2, "piece {piece}");
            assert_eq!(headers, 38 + 25 + 54 + 27 + 57, "piece {piece}");
        }
    }

    #[test]
    fn body_without_length_ends_at_eof() {
        let wire = b"HTTP/1.0 200 OK\r\n\r\nstreamed until close";
        let (completed, _, data) = parse_in_pieces(wire, 4, true);
        assert_eq!(completed, [(200, true)]);
        assert_eq!(data, 20);
    }

    #[test]
    fn malformed_responses_are_errors() {
        let meter = WireMeter::default();
        assert!(ResponseReader::new(false)
            .step(b"HTTP/1.1 abc\r\n\r\n", &meter)
            .is_err());
        let mut reader = ResponseReader::new(false);
        assert!(reader
            .step(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", &meter)
            .is_err());
        let mut reader = ResponseReader::new(false);
        assert!(reader
            .step(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                &meter
            )
            .is_err());
    }
}
