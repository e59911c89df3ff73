//! One request lane: a request stream at a time, a request on each, written while its response
//! is read and parsed; how each request ended ([`LaneOutcome`]) goes to the ledger.

use std::cell::Cell;
use std::time::Instant;

use futures_util::FutureExt;
use quinn::{ReadError, RecvStream, SendStream, VarInt, WriteError};

use super::{Held, InFlight, Shared};
use crate::io::quic;
use crate::proto::h3::{
    H3Error, ResponseEvent, ResponseParser, Section, H3_MESSAGE_ERROR, H3_NO_ERROR,
    H3_REQUEST_CANCELLED, H3_REQUEST_REJECTED,
};
use crate::proto::ResetCode;
use crate::recorder::{ErrorKind, Failure, RequestStart, ResponseSample};
use crate::schedule::Timer;
use crate::session::events::EventTiming;
use crate::session::NextRequest;
use crate::units::format_micros;

/// How one request ended.
enum LaneOutcome {
    Complete(ResponseSample),
    /// The server rejected it unprocessed (H3_REQUEST_REJECTED) or a GOAWAY says it was not
    /// processed: it may go again.
    Unprocessed(ErrorKind),
    /// The server reset the response stream with this code.
    Reset(u64),
    /// It failed on its own; the connection goes on.
    Failed(ErrorKind),
    /// Its response was malformed (RFC 9114 §4.1.2): a protocol error, its stream reset with
    /// H3_MESSAGE_ERROR; the connection goes on.
    Malformed,
}

/// One request lane: a stream at a time, a request on each, until the ledger says done.
pub(super) async fn lane(
    shared: &Shared<'_>,
    index: usize,
    opened: Option<(SendStream, RecvStream)>,
    timer: &impl Timer,
) -> Result<(), Failure> {
    let ledger = shared.ledger;
    let mut reading = Reading {
        parser: ResponseParser::checking(shared.template.checks.as_ref())
            .answering_head(shared.template.head)
            .reading_events(shared.template.events),
        timing: EventTiming::default(),
    };
    let mut opened = opened.map(|pair| Held::new(pair, &shared.streams_held));
    loop {
        if shared.goaway.get().is_some() || !ledger.may_have_more() {
            if let Some(stream) = opened.as_mut() {
                stream.cancel(H3_REQUEST_CANCELLED);
            }
            return Ok(());
        }
        let mut stream = match opened.take() {
            Some(stream) => stream,
            None => match open_stream(shared, timer).await? {
                Some(stream) => stream,
                None => continue,
            },
        };
        let Some(mut start) = take_request(shared, timer).await else {
            stream.cancel(H3_REQUEST_CANCELLED);
            return Ok(());
        };
        let path = ledger.pick_path(&mut start);
        let id = stream.id();
        shared.in_flight.borrow_mut()[index] = Some(InFlight {
            start,
            id,
            headers: (0, 0),
        });
        reading.parser.reset();
        let outcome =
            exchange(shared, index, &mut stream, path, start, &mut reading, timer).await?;
        let Reading { parser, timing } = &mut reading;
        timing.ended(parser.events(), &start, Instant::now(), &ledger);
        let request = shared.in_flight.borrow_mut()[index]
            .take()
            .expect("the lane's request is in flight");
        match outcome {
            LaneOutcome::Complete(sample) => {
                shared.count_headers(&request);
                let status = sample.status;
                ledger.complete(sample, parser.check());
                ledger.error_response(status, parser.error_body());
            }
            // Not processed: its headers (an interim response at most) are not counted, so
            // that a request sent again counts its response's once.
            LaneOutcome::Unprocessed(kind) => {
                stream.cancel(H3_REQUEST_CANCELLED);
                let at = Instant::now();
                if !ledger.retry(start, kind, at) {
                    ledger.fail(start, kind, at);
                }
            }
            LaneOutcome::Reset(code) => {
                shared.count_headers(&request);
                ledger.fail_stream_reset(start, ResetCode::H3(code), Instant::now());
            }
            LaneOutcome::Failed(kind) => {
                shared.count_headers(&request);
                stream.cancel(H3_REQUEST_CANCELLED);
                ledger.fail(start, kind, Instant::now());
            }
            LaneOutcome::Malformed => {
                shared.count_headers(&request);
                stream.cancel(H3_MESSAGE_ERROR);
                ledger.fail(start, ErrorKind::Protocol, Instant::now());
            }
        }
    }
}

/// A lane's reading of its current response: the parser, and the timing of its events.
struct Reading {
    parser: ResponseParser,
    timing: EventTiming,
}

/// Waits for the server's credit for a request stream; `None` when a GOAWAY came meanwhile.
/// A server may hold its credit while the connection's other streams are busy, but one that
/// allows no stream at all while none is open (`initial_max_streams_bidi` 0, no MAX_STREAMS)
/// fails the connection after the credit wait, as h2 does with SETTINGS_MAX_CONCURRENT_STREAMS 0.
async fn open_stream<'c>(
    shared: &'c Shared<'c>,
    timer: &impl Timer,
) -> Result<Option<Held<'c>>, Failure> {
    // Mostly the credit is there: take it without setting up the waits for GOAWAY and time.
    if let Some(opened) = shared.conn.open_bi().now_or_never() {
        let pair = opened.map_err(|error| quic::connection_failure(&error))?;
        return Ok(Some(Held::new(pair, &shared.streams_held)));
    }
    let limit = shared.template.credit_wait;
    let mut since = Instant::now();
    loop {
        tokio::select! {
            opened = shared.conn.open_bi() => {
                let pair = opened.map_err(|error| quic::connection_failure(&error))?;
                return Ok(Some(Held::new(pair, &shared.streams_held)));
            }
            () = shared.goaway_seen.notified() => return Ok(None),
            () = timer.sleep_until(since + limit) => {
                if shared.streams_held.get() > 0 {
                    since = Instant::now();
                    continue;
                }
                shared.ledger.closed_by_client();
                let waited = match shared.template.request_timeout {
                    Some(_) => "ran past --request-timeout".to_owned(),
                    None => format!("waited {}", format_micros(limit.as_micros() as f64)),
                };
                return Err(Failure::new(
                    ErrorKind::Timeout,
                    format!("the server allows no concurrent request streams (initial_max_streams_bidi 0, no MAX_STREAMS): requests {waited} waiting for one"),
                ));
            }
        }
    }
}

/// The lane's next request, or `None` when none will come on this connection: the budget is
/// spent, or a GOAWAY came, also while the lane waited for `--rate`'s send time (a request
/// must not go out past a GOAWAY, nor a retry bounce between the closing connection's lanes).
async fn take_request(shared: &Shared<'_>, timer: &impl Timer) -> Option<RequestStart> {
    loop {
        if shared.goaway.get().is_some() {
            return None;
        }
        match shared.ledger.next_request(Instant::now()) {
            NextRequest::Now(start) => return Some(start),
            NextRequest::At(at) => tokio::select! {
                () = timer.sleep_until(at) => {}
                () = shared.ledger.schedule_calls_back() => {}
                () = shared.goaway_seen.notified() => {}
            },
            NextRequest::Done => return None,
        }
    }
}

/// Sends one request on its stream and reads the response, within `--request-timeout`. The
/// request is written while the response is read: a server may answer (and stream an upload
/// back) before it has read the whole body. `Err`: the connection is lost (or the server broke
/// the protocol) and the request is still in flight.
async fn exchange(
    shared: &Shared<'_>,
    index: usize,
    stream: &mut Held<'_>,
    path: usize,
    start: RequestStart,
    reading: &mut Reading,
    timer: &impl Timer,
) -> Result<LaneOutcome, Failure> {
    let template = shared.template;
    let wire = shared.ledger.wire();
    let id = stream.id();
    let lost = |error: quinn::ConnectionError| quic::connection_failure(&error);
    let written = Cell::new(false);
    let Held { send, recv, .. } = stream;
    let Reading { parser, timing } = reading;
    let work = async {
        let mut frames = template.frames(path, &start, &shared.ledger);
        let count = if frames[2].is_empty() { 1 } else { 3 };
        // Kept for the trace: `write_all_chunks` consumes the frames it sends.
        let traced = shared.trace.as_ref().map(|_| frames.clone());
        let write = async {
            let result = send.write_all_chunks(&mut frames[..count]).await;
            if result.is_ok() {
                let _ = send.finish();
                written.set(true);
                for chunk in traced.iter().flat_map(|frames| &frames[..count]) {
                    shared.trace_sent(id, chunk);
                }
            }
            result
        };
        tokio::pin!(write);
        // One wait for GOAWAY for the whole exchange, renewed only when one comes: a new one
        // per chunk would register and unregister it with the Notify each time.
        let goaway = shared.goaway_seen.notified();
        tokio::pin!(goaway);
        let mut writing = true;
        let mut first_byte = None;
        loop {
            let read = tokio::select! {
                biased;
                result = &mut write, if writing => {
                    writing = false;
                    match result {
                        Ok(()) => {}
                        Err(WriteError::Stopped(code)) if code.into_inner() == H3_REQUEST_REJECTED => {
                            return Ok(LaneOutcome::Unprocessed(ErrorKind::Refused))
                        }
                        // The server may stop reading once it has what it needs; the response
                        // still comes.
                        Err(WriteError::Stopped(_)) => {}
                        Err(WriteError::ConnectionLost(error)) => return Err(lost(error)),
                        Err(_) => return Ok(LaneOutcome::Failed(ErrorKind::Closed)),
                    }
                    continue;
                }
                read = recv.read_chunk(usize::MAX, true) => read,
                () = &mut goaway => {
                    if shared.unprocessed(id) {
                        return Ok(LaneOutcome::Unprocessed(ErrorKind::Goaway));
                    }
                    goaway.set(shared.goaway_seen.notified());
                    continue;
                }
            };
            let at = Instant::now();
            match read {
                Ok(Some(chunk)) => {
                    shared.last_read.set(at);
                    wire.add_total(chunk.bytes.len() as u64);
                    shared.trace_received(id, &chunk.bytes);
                    let fed = parser.feed(&chunk.bytes, |event| match event {
                        ResponseEvent::Headers {
                            section,
                            wire_len,
                            uncompressed,
                        } => {
                            if let Some(request) = shared.in_flight.borrow_mut()[index].as_mut() {
                                request.headers.0 += wire_len;
                                request.headers.1 += uncompressed;
                            }
                            if let Section::Final(_) = section {
                                first_byte = Some(at);
                            }
                        }
                        ResponseEvent::Data(length) => {
                            wire.add_data(length as u64);
                        }
                    });
                    match fed {
                        Ok(()) => {
                            if let Err(error) =
                                timing.arrived(parser.events(), &start, at, &shared.ledger)
                            {
                                shared.ledger.note_error(|| error.to_string());
                                return Ok(LaneOutcome::Failed(ErrorKind::EventTooLarge));
                            }
                        }
                        // A malformed message spoils this request only (RFC 9114 §4.1.2).
                        Err(error) if error.code == H3_MESSAGE_ERROR => {
                            return Ok(malformed(shared, error));
                        }
                        Err(error) => return Err(shared.violation(error)),
                    }
                }
                Ok(None) => {
                    return match parser.finish() {
                        Ok(status) => Ok(LaneOutcome::Complete(ResponseSample {
                            start,
                            first_byte: first_byte.unwrap_or(at),
                            end: at,
                            status,
                            grpc: None,
                        })),
                        Err(error) if error.code == H3_MESSAGE_ERROR => {
                            Ok(malformed(shared, error))
                        }
                        Err(error) => Err(shared.violation(error)),
                    }
                }
                Err(ReadError::Reset(code)) if code.into_inner() == H3_REQUEST_REJECTED => {
                    return Ok(LaneOutcome::Unprocessed(ErrorKind::Refused))
                }
                Err(ReadError::Reset(code)) => return Ok(LaneOutcome::Reset(code.into_inner())),
                Err(ReadError::ConnectionLost(error)) => return Err(lost(error)),
                Err(_) => return Ok(LaneOutcome::Failed(ErrorKind::Closed)),
            }
        }
    };
    let outcome = match template.request_timeout {
        Some(limit) => tokio::select! {
            biased;
            outcome = work => outcome,
            () = timer.sleep_until(start.actual + limit) => Ok(LaneOutcome::Failed(ErrorKind::Timeout)),
        },
        None => work.await,
    };
    if !written.get() {
        // The exchange ended before the whole request was written: the rest is not sent, and
        // the stream is reset rather than left to finish half-written. A server that answered
        // before reading it all (RFC 9114 §4.1) gets H3_NO_ERROR.
        let code = match outcome {
            Ok(LaneOutcome::Complete(_)) => H3_NO_ERROR,
            _ => H3_REQUEST_CANCELLED,
        };
        let _ = send.reset(VarInt::from_u64(code).expect("a valid varint"));
    }
    outcome
}

/// A malformed response: said once, and the request fails alone.
fn malformed(shared: &Shared<'_>, error: H3Error) -> LaneOutcome {
    shared
        .ledger
        .note_error(|| format!("a malformed HTTP/3 response: {}", error.reason));
    LaneOutcome::Malformed
}
