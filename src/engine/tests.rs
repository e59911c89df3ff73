//! Sessions fed byte sequences, with no socket and no runtime: every frame split at every byte
//! boundary, CONTINUATION, padding, windows, GOAWAY, RST_STREAM, pipelined HTTP/1.1 bodies of
//! every kind, and the limits a hostile server runs into.

use std::time::{Duration, Instant};

use super::driver::feed;
use super::outgoing::Outgoing;
use super::session::{AnySession, Progress};
use super::testing::{converse, drain, open, world, Outcome, World};
use super::{ConnState, Ledger, Retry};
use crate::plan::Protocol;
use crate::proto::h2::{self as frame, write_frame};
use crate::recorder::ErrorKind;

fn kind(outcome: &Outcome) -> Option<ErrorKind> {
    outcome.failure.as_ref().map(|failure| failure.kind)
}

/// The requests waiting in the thread's queue to be sent again.
fn queued(world: &World) -> Vec<Retry> {
    world.shared.retries.borrow().iter().copied().collect()
}

// ---- HTTP/1.1 ----

#[test]
fn pipelined_h1_responses_split_at_every_byte() {
    let mut server = Vec::new();
    server.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
    server.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
    server.extend_from_slice(b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n");
    server.extend_from_slice(b"3\r\nabc\r\n0\r\n\r\n");
    server.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    for piece in [1, 2, 5, 13, server.len()] {
        let world = world(&["--h1", "-m", "4", "-n", "3"]);
        let outcome = converse(&world, Protocol::Http1, &server, piece);
        assert_eq!(outcome.failure, None, "piece {piece}");
        assert_eq!(outcome.counters.done, 3, "piece {piece}");
        assert_eq!(outcome.counters.succeeded, 2, "piece {piece}");
        assert_eq!(outcome.wire.data, 5 + 3, "piece {piece}");
        assert_eq!(outcome.wire.headers, 38 + 25 + 54 + 38, "piece {piece}");
        let requests = outcome.sent.windows(4).filter(|w| w == b"GET ").count();
        assert_eq!(requests, 3, "all three requests went out at once");
    }
}

#[test]
fn h1_body_delimited_by_close_completes_at_eof() {
    let world = world(&["--h1", "-n", "1"]);
    let (ledger, mut out, mut session) = open(&world, Protocol::Http1, None);
    session.fill(&ledger, &mut out).unwrap();
    let mut pending = Vec::new();
    let at = Instant::now();
    feed(
        &mut session,
        b"HTTP/1.0 200 OK\r\n\r\nuntil close",
        &mut pending,
        at,
        &ledger,
        &mut out,
    )
    .unwrap();
    assert_eq!(world.shared.recorder.borrow().counters.done, 0);
    session.on_eof(at, &ledger).unwrap();
    assert_eq!(world.shared.recorder.borrow().counters.succeeded, 1);
    assert_eq!(world.shared.wire.totals().data, 11);
    assert_eq!(session.fill(&ledger, &mut out), Ok(Progress::Finished));
}

#[test]
fn h1_response_nothing_asked_for_is_a_protocol_error() {
    let world = world(&["--h1", "-n", "1"]);
    let server =
        b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 408 Request Timeout\r\n\r\n";
    let outcome = converse(&world, Protocol::Http1, server, server.len());
    assert_eq!(kind(&outcome), Some(ErrorKind::Protocol));
    assert_eq!(outcome.counters.succeeded, 1);
}

#[test]
fn h1_endless_interim_responses_are_cut_off() {
    let world = world(&["--h1", "-n", "1"]);
    let server = b"HTTP/1.1 100 Continue\r\n\r\n".repeat(17);
    let outcome = converse(&world, Protocol::Http1, &server, 100);
    assert_eq!(kind(&outcome), Some(ErrorKind::Protocol));
    assert_eq!(outcome.errors, [(ErrorKind::Protocol, 1)]);
}

/// `Connection: close` on the first of three pipelined responses.
const CLOSE: &[u8] = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";

#[test]
fn h1_server_closing_with_requests_unanswered_fails_them_as_closed_unless_retried() {
    // POST is not idempotent; --no-retry is h2load's accounting.
    for flags in [&["--method", "POST"][..], &["--no-retry"]] {
        let world = world(&[&["--h1", "-m", "3", "-n", "3"], flags].concat());
        let (ledger, mut out, mut session) = open(&world, Protocol::Http1, None);
        session.fill(&ledger, &mut out).unwrap();
        let mut pending = Vec::new();
        let at = Instant::now();
        feed(&mut session, CLOSE, &mut pending, at, &ledger, &mut out).unwrap();
        let failure = session.fill(&ledger, &mut out).unwrap_err();
        assert_eq!(failure.kind, ErrorKind::Closed, "{flags:?}");
        assert_eq!(session.fail_all(&failure, &ledger), 2, "{flags:?}");
        let recorder = world.shared.recorder.borrow();
        assert_eq!(recorder.counters.errored, 2, "{flags:?}");
        assert_eq!(recorder.retried.total(), 0, "{flags:?}");
    }
}

#[test]
fn h1_requests_unanswered_at_close_go_again_on_the_next_connection() {
    let mut world = world(&["--h1", "-m", "3", "-n", "3"]);
    let (ledger, mut out, mut session) = open(&world, Protocol::Http1, None);
    session.fill(&ledger, &mut out).unwrap();
    let mut pending = Vec::new();
    feed(
        &mut session,
        CLOSE,
        &mut pending,
        Instant::now(),
        &ledger,
        &mut out,
    )
    .unwrap();
    assert_eq!(session.fill(&ledger, &mut out), Ok(Progress::Reconnect));
    assert_eq!(world.conn.in_flight.get(), 0, "moved to the queue");
    let queued: Vec<_> = queued(&world).iter().map(|r| r.start).collect();
    // The connection completed a request before it closed: the re-sends are free.
    assert_eq!(
        queued
            .iter()
            .map(|s| (s.sequence, s.retries, s.resent))
            .collect::<Vec<_>>(),
        [(2, 0, true), (3, 0, true)]
    );
    drop((ledger, session));
    world.conn = ConnState::default();
    let outcome = converse(&world, Protocol::Http1, &OK.repeat(2), 7);
    assert_eq!(outcome.failure, None);
    assert_eq!(outcome.sent.windows(4).filter(|w| w == b"GET ").count(), 2);
    let c = outcome.counters;
    assert_eq!((c.started, c.done, c.succeeded, c.failed), (3, 3, 3, 0));
    let recorder = world.shared.recorder.borrow();
    assert_eq!(recorder.retried.closed, 2);
    assert_eq!(recorder.retried.total(), 2);
    assert_eq!(world.conn.in_flight.get(), 0);
    assert!(world.shared.retries.borrow().is_empty());
}

#[test]
fn h1_close_in_the_middle_of_a_response_fails_everything_in_flight() {
    let world = world(&["--h1", "-m", "2", "-n", "2"]);
    let (ledger, mut out, mut session) = open(&world, Protocol::Http1, None);
    session.fill(&ledger, &mut out).unwrap();
    let mut pending = Vec::new();
    let at = Instant::now();
    let cut = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf";
    feed(&mut session, cut, &mut pending, at, &ledger, &mut out).unwrap();
    let failure = session.on_eof(at, &ledger).unwrap_err();
    assert_eq!(failure.kind, ErrorKind::Closed);
    assert_eq!(session.fail_all(&failure, &ledger), 2);
    assert_eq!(world.shared.recorder.borrow().retried.total(), 0);
}

#[test]
fn h1_request_timeout_fires_from_the_oldest_request() {
    let world = world(&["--h1", "-n", "1", "--request-timeout", "50ms"]);
    let (ledger, mut out, mut session) = open(&world, Protocol::Http1, None);
    let sent = Instant::now();
    session.fill(&ledger, &mut out).unwrap();
    let due = session.next_timer().expect("a deadline");
    assert!(
        due >= sent + Duration::from_millis(50)
            && due <= Instant::now() + Duration::from_millis(50)
    );
    assert_eq!(
        session.on_timer(due - Duration::from_millis(1), &ledger, &mut out),
        Ok(())
    );
    let failure = session.on_timer(due, &ledger, &mut out).unwrap_err();
    assert_eq!(failure.kind, ErrorKind::Timeout);
}

// ---- HTTP/2 ----

/// Frames a server sends: built with the same encoder the client uses.
#[derive(Default)]
struct Server(Vec<u8>);

impl Server {
    fn frame(mut self, kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Self {
        write_frame(&mut self.0, kind, flags, stream, payload);
        self
    }

    fn settings(self, settings: &[(u16, u32)]) -> Self {
        let mut payload = Vec::new();
        for (id, value) in settings {
            payload.extend_from_slice(&id.to_be_bytes());
            payload.extend_from_slice(&value.to_be_bytes());
        }
        self.frame(frame::SETTINGS, 0, 0, &payload)
    }

    /// `:status 200` (static index 8), whole.
    fn ok(self, stream: u32, end_stream: bool) -> Self {
        let flags = frame::END_HEADERS | if end_stream { frame::END_STREAM } else { 0 };
        self.frame(frame::HEADERS, flags, stream, &[0x88])
    }

    fn data(self, stream: u32, body: &[u8], end_stream: bool) -> Self {
        self.frame(
            frame::DATA,
            if end_stream { frame::END_STREAM } else { 0 },
            stream,
            body,
        )
    }
}

#[test]
fn h2_streams_with_padding_and_continuation_split_at_every_byte() {
    // Stream 1: HEADERS padded with priority, split over CONTINUATION; DATA padded.
    let mut padded_headers = vec![3u8]; // pad length
    padded_headers.extend_from_slice(&[0, 0, 0, 0, 16]); // priority
    padded_headers.extend_from_slice(&[0x88, 0x40]); // :status 200, then a literal with indexing (name follows)
    padded_headers.extend_from_slice(&[0, 0, 0]); // padding
    let mut padded_data = vec![4u8];
    padded_data.extend_from_slice(b"body");
    padded_data.extend_from_slice(&[0; 4]);
    let server = Server::default()
        .settings(&[(frame::SETTINGS_MAX_CONCURRENT_STREAMS, 100)])
        .frame(frame::SETTINGS, frame::ACK, 0, &[])
        .frame(
            frame::HEADERS,
            frame::PADDED | frame::PRIORITY,
            1,
            &padded_headers,
        )
        .frame(
            frame::CONTINUATION,
            frame::END_HEADERS,
            1,
            &[0x01, b'x', 0x01, b'y'],
        )
        .frame(
            frame::DATA,
            frame::PADDED | frame::END_STREAM,
            1,
            &padded_data,
        )
        .ok(3, false)
        .data(3, b"0123456789", false)
        .frame(frame::PING, 0, 0, &[7; 8])
        .data(3, b"", true);
    for piece in [1, 2, 7, 64, server.0.len()] {
        let world = world(&["--proto", "h2c", "-m", "2", "-n", "2"]);
        let outcome = converse(&world, Protocol::H2c, &server.0, piece);
        assert_eq!(outcome.failure, None, "piece {piece}");
        assert_eq!(outcome.counters.succeeded, 2, "piece {piece}");
        assert_eq!(
            outcome.wire.data,
            4 + 10,
            "piece {piece}: padding is not data"
        );
        assert!(outcome.sent.starts_with(frame::PREFACE), "piece {piece}");
        let ping_ack = [
            0,
            0,
            8,
            frame::PING,
            frame::ACK,
            0,
            0,
            0,
            0,
            7,
            7,
            7,
            7,
            7,
            7,
            7,
            7,
        ];
        assert!(
            outcome.sent.windows(ping_ack.len()).any(|w| w == ping_ack),
            "piece {piece}"
        );
    }
}

/// GOAWAY(NO_ERROR) naming `last` as the last stream processed.
fn goaway(last: u32) -> Vec<u8> {
    [last.to_be_bytes(), frame::NO_ERROR.to_be_bytes()].concat()
}

/// Streams 1, 3 and 5 (`-m 3 -n 3`, plus `flags`) on a connection whose server answers stream 1
/// and sends GOAWAY naming it the last stream processed.
fn goaway_after_stream_1(flags: &[&str]) -> (World, Outcome) {
    let world = world(&[&["--proto", "h2c", "-m", "3", "-n", "3"], flags].concat());
    let server = Server::default()
        .settings(&[])
        .frame(frame::GOAWAY, 0, 0, &goaway(1))
        .ok(1, true);
    let outcome = converse(&world, Protocol::H2c, &server.0, 5);
    (world, outcome)
}

#[test]
fn h2_goaway_fails_only_the_streams_above_last_stream_id_with_no_retry() {
    let (world, outcome) = goaway_after_stream_1(&["--no-retry"]);
    assert_eq!(outcome.failure, None);
    assert_eq!(outcome.counters.succeeded, 1);
    assert_eq!(outcome.errors, [(ErrorKind::Goaway, 2)]);
    assert_eq!(world.shared.recorder.borrow().retried.total(), 0);
}

#[test]
fn h2_goaway_streams_above_last_stream_id_go_again_on_a_new_connection() {
    let (mut world, outcome) = goaway_after_stream_1(&[]);
    assert_eq!(outcome.failure, None);
    assert_eq!(outcome.errors, []);
    assert_eq!(world.conn.in_flight.get(), 0, "1 done, 2 in the queue");
    let queued: Vec<_> = queued(&world).iter().map(|r| (r.start, r.kind)).collect();
    assert_eq!(queued.len(), 2);
    for (start, kind) in &queued {
        assert_eq!((start.retries, *kind), (1, ErrorKind::Goaway));
        assert!(start.intended <= start.actual, "the first schedule is kept");
    }
    world.conn = ConnState::default();
    let second = Server::default().settings(&[]).ok(1, true).ok(3, true);
    let outcome = converse(&world, Protocol::H2c, &second.0, 5);
    assert_eq!(outcome.failure, None);
    assert_eq!(outcome.errors, []);
    let c = outcome.counters;
    assert_eq!((c.started, c.done, c.succeeded, c.failed), (3, 3, 3, 0));
    assert_eq!(world.shared.recorder.borrow().retried.goaway, 2);
    assert_eq!(
        world.conn.requests.get(),
        2,
        "the retries only: -n is spent"
    );
}

#[test]
fn h2_goaway_after_a_completed_request_is_a_free_retry() {
    // A server rotating connections as it serves (stream 1 answered, then GOAWAY): the re-sends
    // do not count against --max-retries, so even 0 lets them through.
    let mut world = world(&["--proto", "h2c", "-m", "3", "-n", "3", "--max-retries", "0"]);
    let first = Server::default()
        .settings(&[])
        .ok(1, true)
        .frame(frame::GOAWAY, 0, 0, &goaway(1));
    let outcome = converse(&world, Protocol::H2c, &first.0, 5);
    assert_eq!((outcome.failure, outcome.errors), (None, vec![]));
    let queued: Vec<_> = queued(&world).iter().map(|r| r.start).collect();
    assert_eq!(
        queued
            .iter()
            .map(|s| (s.retries, s.resent))
            .collect::<Vec<_>>(),
        [(0, true), (0, true)]
    );
    world.conn = ConnState::default();
    let second = Server::default().settings(&[]).ok(1, true).ok(3, true);
    let outcome = converse(&world, Protocol::H2c, &second.0, 5);
    assert_eq!((outcome.failure, outcome.errors), (None, vec![]));
    let c = outcome.counters;
    assert_eq!((c.started, c.done, c.succeeded, c.failed), (3, 3, 3, 0));
    assert_eq!(world.shared.recorder.borrow().retried.goaway, 2);
}

#[test]
fn h2_refused_streams_go_again_on_the_same_connection_up_to_max_retries() {
    let refuse = |server: Server, id: u32| {
        server.frame(
            frame::RST_STREAM,
            0,
            id,
            &frame::REFUSED_STREAM.to_be_bytes(),
        )
    };
    // Stream 1 refused, sent again as 5 and answered; 3 answered.
    let world_ok = world(&["--proto", "h2c", "-m", "2", "-n", "2"]);
    let server = refuse(Server::default().settings(&[]), 1)
        .ok(3, true)
        .ok(5, true);
    let outcome = converse(&world_ok, Protocol::H2c, &server.0, 3);
    assert_eq!(outcome.failure, None);
    assert_eq!(outcome.errors, []);
    assert_eq!(
        (outcome.counters.started, outcome.counters.succeeded),
        (2, 2)
    );
    assert_eq!(world_ok.shared.recorder.borrow().retried.refused, 1);
    // Refused on the first attempt and on its one retry: it fails as `refused`.
    let world_no = world(&["--proto", "h2c", "-n", "1", "--max-retries", "1"]);
    let server = refuse(refuse(Server::default().settings(&[]), 1), 3);
    let outcome = converse(&world_no, Protocol::H2c, &server.0, 3);
    assert_eq!(outcome.failure, None);
    assert_eq!(outcome.errors, [(ErrorKind::Refused, 1)]);
    let c = outcome.counters;
    assert_eq!((c.started, c.done, c.failed, c.errored), (1, 1, 1, 1));
    let recorder = world_no.shared.recorder.borrow();
    assert_eq!(recorder.retried.refused, 1);
    assert!(recorder.stream_reset_codes.is_empty());
    assert!(recorder
        .first_error
        .as_deref()
        .is_some_and(|e| e.contains("in 2 attempts (refused)")));
}

#[test]
fn h2_goaway_before_any_request_is_a_named_failure() {
    let world = world(&["--proto", "h2c", "-n", "3"]);
    let (ledger, mut out, mut session) = open(&world, Protocol::H2c, None);
    session.fill(&ledger, &mut out).unwrap();
    let server = Server::default()
        .settings(&[])
        .frame(frame::GOAWAY, 0, 0, &[0; 8]);
    let mut pending = Vec::new();
    let failure = feed(
        &mut session,
        &server.0,
        &mut pending,
        Instant::now(),
        &ledger,
        &mut out,
    )
    .unwrap_err();
    assert_eq!(failure.kind, ErrorKind::Goaway);
    assert!(failure
        .message
        .contains("GOAWAY (NO_ERROR) before the first request"));
    assert_eq!(world.shared.recorder.borrow().counters.started, 0);
}

#[test]
fn h2_stream_reset_is_counted_with_its_code() {
    let world = world(&["--proto", "h2c", "-m", "2", "-n", "2", "--no-retry"]);
    let server = Server::default()
        .settings(&[])
        .frame(
            frame::RST_STREAM,
            0,
            1,
            &frame::REFUSED_STREAM.to_be_bytes(),
        )
        .ok(3, true);
    let outcome = converse(&world, Protocol::H2c, &server.0, 3);
    assert_eq!(outcome.failure, None);
    assert_eq!(outcome.errors, [(ErrorKind::StreamReset, 1)]);
    let recorder = world.shared.recorder.borrow();
    assert_eq!(
        recorder
            .stream_reset_codes
            .get(&crate::proto::ResetCode::H2(frame::REFUSED_STREAM)),
        Some(&1)
    );
}

#[test]
fn h2_receive_window_is_enforced_and_replenished() {
    let world = world(&["--proto", "h2c", "-n", "1"]);
    let chunk = vec![0u8; 16_384];
    // 65,535 bytes fit the default windows and earn WINDOW_UPDATEs; one more byte beyond the
    // replenished window would not, but here the client hands windows back at half.
    let mut server = Server::default().settings(&[]).ok(1, false);
    for _ in 0..3 {
        server = server.data(1, &chunk, false);
    }
    server = server.data(1, &chunk[..16_383], true);
    let outcome = converse(&world, Protocol::H2c, &server.0, 1000);
    assert_eq!(outcome.failure, None);
    assert_eq!(outcome.wire.data, 65_535);
    let window_updates = outcome
        .sent
        .windows(2)
        .filter(|w| w[1] == frame::WINDOW_UPDATE && w[0] == 4)
        .count();
    assert!(window_updates >= 1, "the client handed its windows back");

    // With our SETTINGS acknowledged, a stream window of 2^14-1 is what the server may send.
    let small = self::world(&["--proto", "h2c", "-n", "1", "-w", "14"]);
    let server = Server::default()
        .settings(&[])
        .frame(frame::SETTINGS, frame::ACK, 0, &[])
        .ok(1, false)
        .data(1, &chunk, true);
    let outcome = converse(&small, Protocol::H2c, &server.0, 1 << 20);
    assert_eq!(kind(&outcome), Some(ErrorKind::Protocol));
    assert!(outcome
        .failure
        .unwrap()
        .message
        .contains("FLOW_CONTROL_ERROR"));
}

#[test]
fn h2_window_update_overflow_and_zero_increment_are_protocol_errors() {
    for increment in [0x7fff_ffffu32, 0] {
        let world = world(&["--proto", "h2c", "-n", "1"]);
        let server = Server::default().settings(&[]).frame(
            frame::WINDOW_UPDATE,
            0,
            0,
            &increment.to_be_bytes(),
        );
        let outcome = converse(&world, Protocol::H2c, &server.0, 4);
        assert_eq!(
            kind(&outcome),
            Some(ErrorKind::Protocol),
            "increment {increment}"
        );
        assert_eq!(
            outcome.errors,
            [(ErrorKind::Protocol, 1)],
            "the stream in flight failed"
        );
    }
}

#[test]
fn h2_endless_continuation_stops_at_the_header_block_limit() {
    let world = world(&["--proto", "h2c", "-n", "1"]);
    let mut server = Server::default()
        .settings(&[])
        .frame(frame::HEADERS, 0, 1, &[0x88]);
    for _ in 0..100 {
        server = server.frame(frame::CONTINUATION, 0, 1, &[0x88; 1000]);
    }
    let outcome = converse(&world, Protocol::H2c, &server.0, 4096);
    assert!(outcome
        .failure
        .unwrap()
        .message
        .contains("header block larger than 64 KiB"));
}

#[test]
fn h2_ping_flood_unread_is_cut_off_with_enhance_your_calm() {
    let world = world(&["--proto", "h2c", "-n", "1"]);
    let mut server = Server::default().settings(&[]);
    for _ in 0..1500 {
        server = server.frame(frame::PING, 0, 0, &[1; 8]);
    }
    let outcome = converse(&world, Protocol::H2c, &server.0, 17 * 10);
    let failure = outcome.failure.expect("a flood is an error");
    assert_eq!(failure.kind, ErrorKind::Protocol);
    assert!(failure.message.contains("without reading"));
    let mut goaway = Vec::new();
    write_frame(
        &mut goaway,
        frame::GOAWAY,
        0,
        0,
        &[0, 0, 0, 1, 0, 0, 0, frame::ENHANCE_YOUR_CALM as u8],
    );
    assert!(outcome.sent.ends_with(&goaway));
}

#[test]
fn h2_frames_the_client_cannot_accept_are_protocol_errors() {
    let too_long = vec![0u8; 16_385];
    let cases: [(&str, Server); 4] = [
        (
            "push",
            Server::default().settings(&[]).frame(
                frame::PUSH_PROMISE,
                frame::END_HEADERS,
                1,
                &[0, 0, 0, 2, 0x88],
            ),
        ),
        ("even stream", Server::default().settings(&[]).ok(2, true)),
        (
            "idle stream",
            Server::default().settings(&[]).data(9, b"x", true),
        ),
        (
            "frame size",
            Server::default().settings(&[]).data(1, &too_long, true),
        ),
    ];
    for (name, server) in cases {
        let world = world(&["--proto", "h2c", "-n", "1"]);
        let outcome = converse(&world, Protocol::H2c, &server.0, 3);
        assert_eq!(
            kind(&outcome),
            Some(ErrorKind::Protocol),
            "{name}: {:?}",
            outcome.failure
        );
    }
}

/// An HPACK literal field with a new name, not indexed.
fn literal(name: &str, value: &str) -> Vec<u8> {
    let mut field = vec![0x00, name.len() as u8];
    field.extend_from_slice(name.as_bytes());
    field.push(value.len() as u8);
    field.extend_from_slice(value.as_bytes());
    field
}

/// A whole header block on `stream`.
fn block(server: Server, stream: u32, end_stream: bool, fields: &[&[u8]]) -> Server {
    let flags = frame::END_HEADERS | if end_stream { frame::END_STREAM } else { 0 };
    server.frame(frame::HEADERS, flags, stream, &fields.concat())
}

/// RST_STREAM(`id`, PROTOCOL_ERROR) as the client sends it.
fn protocol_error_reset(id: u32) -> Vec<u8> {
    let mut reset = Vec::new();
    write_frame(
        &mut reset,
        frame::RST_STREAM,
        0,
        id,
        &frame::PROTOCOL_ERROR.to_be_bytes(),
    );
    reset
}

#[test]
fn h2_malformed_responses_fail_their_stream_alone() {
    const OK: &[u8] = &[0x88]; // :status 200
    let length = |value| literal("content-length", value);
    // Each case answers stream 1 malformed, then stream 3 well: one error, one success, the
    // connection goes on. `reset`: whether stream 1 is still open when it is found malformed
    // (the request has no body, so once the server ends the stream it is closed: no RST).
    let cases: Vec<(&str, Server, bool)> = vec![
        (
            "body shorter than content-length",
            block(Server::default(), 1, false, &[OK, &length("5")]).data(1, b"abc", true),
            false,
        ),
        (
            "body longer than content-length",
            block(Server::default(), 1, false, &[OK, &length("2")]).data(1, b"abc", true),
            true,
        ),
        (
            "upper-case name",
            block(Server::default(), 1, true, &[OK, &literal("X-Up", "1")]),
            false,
        ),
        (
            "connection",
            block(
                Server::default(),
                1,
                true,
                &[OK, &literal("connection", "close")],
            ),
            false,
        ),
        (
            "keep-alive",
            block(
                Server::default(),
                1,
                true,
                &[OK, &literal("keep-alive", "5")],
            ),
            false,
        ),
        (
            "proxy-connection",
            block(
                Server::default(),
                1,
                false,
                &[OK, &literal("proxy-connection", "x")],
            )
            .data(1, b"", true),
            true,
        ),
        (
            "transfer-encoding (static name)",
            block(
                Server::default(),
                1,
                false,
                &[OK, &[0x0f, 42, 7], b"chunked"],
            ),
            true,
        ),
        (
            "upgrade",
            block(
                Server::default(),
                1,
                true,
                &[OK, &literal("upgrade", "h2c")],
            ),
            false,
        ),
        (
            "pseudo-header after a regular field",
            block(Server::default(), 1, true, &[&literal("x-a", "1"), OK]),
            false,
        ),
        (
            "two :status",
            block(Server::default(), 1, true, &[OK, &[0x89]]),
            false,
        ),
        (
            "request pseudo-header",
            block(Server::default(), 1, true, &[OK, &[0x84]]),
            false,
        ),
        (
            ":status of two digits",
            block(Server::default(), 1, true, &[&[0x08, 2], b"20"]),
            false,
        ),
        (
            ":status 999",
            block(Server::default(), 1, true, &[&[0x08, 3], b"999"]),
            false,
        ),
        (
            ":status 101",
            block(Server::default(), 1, true, &[&[0x08, 3], b"101"]),
            false,
        ),
        (
            "no :status",
            block(Server::default(), 1, true, &[&literal("a", "b")]),
            false,
        ),
        (
            "interim response ending the stream",
            block(Server::default(), 1, true, &[&[0x08, 3], b"103"]),
            false,
        ),
        (
            "NUL in a value",
            block(Server::default(), 1, true, &[OK, &literal("x-a", "a\0b")]),
            false,
        ),
        (
            "CR in a value of a static name (server)",
            block(Server::default(), 1, true, &[OK, &[0x0f, 39, 3], b"a\rb"]),
            false,
        ),
        (
            "LF in a Huffman-coded value (a\\na)",
            block(
                Server::default(),
                1,
                true,
                &[
                    OK,
                    &[0x00, 3],
                    b"x-h",
                    &[0x85, 0x1f, 0xff, 0xff, 0xff, 0x83],
                ],
            ),
            false,
        ),
        (
            "a value with a leading space",
            block(Server::default(), 1, true, &[OK, &literal("x-a", " a")]),
            false,
        ),
        (
            "a value with a trailing tab, indexed",
            block(
                Server::default(),
                1,
                false,
                &[OK, &[0x40, 3], b"x-a", &[2], b"a\t"],
            )
            .data(1, b"", true),
            true,
        ),
        (
            "LF in a trailer's value",
            Server::default().ok(1, false).data(1, b"x", false).frame(
                frame::HEADERS,
                frame::END_HEADERS | frame::END_STREAM,
                1,
                &literal("x-t", "a\nb"),
            ),
            false,
        ),
        (
            "DATA before HEADERS",
            Server::default().data(1, b"x", false).ok(1, true),
            true,
        ),
        (
            "pseudo-header in trailers",
            Server::default()
                .ok(1, false)
                .data(1, b"x", false)
                .ok(1, true),
            false,
        ),
        (
            "trailers that do not end the stream",
            Server::default()
                .ok(1, false)
                .frame(frame::HEADERS, frame::END_HEADERS, 1, &literal("x-t", "1"))
                .data(1, b"", true),
            true,
        ),
    ];
    for (name, case, reset) in cases {
        let mut server = Server::default().settings(&[]);
        server.0.extend_from_slice(&case.0);
        let server = block(server, 3, false, &[OK, &length("2")]).data(3, b"ok", true);
        for piece in [1, 5, server.0.len()] {
            let world = world(&["--proto", "h2c", "-m", "2", "-n", "2"]);
            let outcome = converse(&world, Protocol::H2c, &server.0, piece);
            assert_eq!(outcome.failure, None, "{name}, piece {piece}");
            let counters = outcome.counters;
            assert_eq!(
                (counters.done, counters.succeeded, counters.failed),
                (2, 1, 1),
                "{name}, piece {piece}"
            );
            assert_eq!(outcome.errors, [(ErrorKind::Protocol, 1)], "{name}");
            let sent_reset = outcome
                .sent
                .windows(13)
                .any(|w| w == protocol_error_reset(1));
            assert_eq!(sent_reset, reset, "{name}, piece {piece}");
            let error = world.shared.recorder.borrow().first_error.clone();
            assert!(
                error.is_some_and(|e| e.starts_with("a malformed HTTP/2 response: ")),
                "{name}"
            );
        }
    }
}

#[test]
fn h2_a_response_complete_before_its_request_body_resets_the_rest() {
    // A 100 kB body: the first 65,535 bytes fit the initial windows, the rest waits for a
    // WINDOW_UPDATE. The server answers at once and ends its side; more window then arrives.
    // Before the fix the client kept the stream half open, never sending the rest nor RST_STREAM.
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body");
    std::fs::write(&body, vec![b'x'; 100_000]).unwrap();
    let server = Server::default().settings(&[]).ok(1, true).frame(
        frame::WINDOW_UPDATE,
        0,
        0,
        &100_000u32.to_be_bytes(),
    );
    for piece in [1, server.0.len()] {
        let world = world(&["--proto", "h2c", "-n", "1", "-d", body.to_str().unwrap()]);
        let outcome = converse(&world, Protocol::H2c, &server.0, piece);
        assert_eq!(outcome.failure, None, "piece {piece}");
        let counters = outcome.counters;
        assert_eq!((counters.done, counters.succeeded), (1, 1), "piece {piece}");
        let sent = outcome.sent.strip_prefix(frame::PREFACE).unwrap();
        let on_stream_1: Vec<u8> = frames(sent)
            .into_iter()
            .filter(|&(_, stream)| stream == 1)
            .map(|(kind, _)| kind)
            .collect();
        // HEADERS, then DATA up to the window (16 KiB frames), then the reset and nothing more.
        let resets = on_stream_1
            .iter()
            .filter(|&&kind| kind == frame::RST_STREAM);
        assert_eq!(resets.count(), 1, "piece {piece}: {on_stream_1:?}");
        assert_eq!(
            on_stream_1.last(),
            Some(&frame::RST_STREAM),
            "piece {piece}"
        );
        let mut no_error = Vec::new();
        write_frame(
            &mut no_error,
            frame::RST_STREAM,
            0,
            1,
            &frame::NO_ERROR.to_be_bytes(),
        );
        assert!(sent.windows(13).any(|w| w == no_error), "piece {piece}");
    }
}

#[test]
fn h2_responses_with_no_content_interim_and_trailers_are_well_formed() {
    const OK: &[u8] = &[0x88];
    let length = |value| literal("content-length", value);
    let early_hints: &[u8] = &[0x08, 3, b'1', b'0', b'3'];
    let cases: Vec<(&[&str], Server)> = vec![
        // 204 and 304 may announce a length they do not send.
        (
            &[],
            block(Server::default(), 1, true, &[&[0x89], &length("5")]),
        ),
        (
            &[],
            block(Server::default(), 1, true, &[&[0x8b], &length("10")]),
        ),
        // So may the answer to HEAD.
        (
            &["--method", "HEAD"],
            block(Server::default(), 1, true, &[OK, &length("10")]),
        ),
        // Interim responses, then the final one, its body in two frames, and trailers.
        (
            &[],
            block(Server::default(), 1, false, &[early_hints])
                .frame(frame::HEADERS, frame::END_HEADERS, 1, early_hints)
                .frame(
                    frame::HEADERS,
                    frame::END_HEADERS,
                    1,
                    &[OK, &length("4")].concat(),
                )
                .data(1, b"ab", false)
                .data(1, b"cd", false)
                .frame(
                    frame::HEADERS,
                    frame::END_HEADERS | frame::END_STREAM,
                    1,
                    &literal("x-trailer", "1"),
                ),
        ),
    ];
    for (flags, case) in cases {
        let mut server = Server::default().settings(&[]);
        server.0.extend_from_slice(&case.0);
        let mut args = vec!["--proto", "h2c", "-n", "1"];
        args.extend(flags);
        let world = world(&args);
        let outcome = converse(&world, Protocol::H2c, &server.0, 3);
        assert_eq!(outcome.failure, None, "{flags:?}");
        assert_eq!(
            outcome.counters.succeeded, 1,
            "{flags:?} {:?}",
            outcome.errors
        );
    }
}

#[test]
fn h2_frames_on_a_stream_the_server_ended_are_stream_closed() {
    // DATA or HEADERS after END_STREAM (or after the server's RST_STREAM): the response was
    // complete, the connection is not (GOAWAY STREAM_CLOSED).
    let after_end = Server::default().settings(&[]).ok(1, true);
    let after_reset = Server::default().settings(&[]).frame(
        frame::RST_STREAM,
        0,
        1,
        &frame::INTERNAL_ERROR.to_be_bytes(),
    );
    for (name, server, succeeded) in [
        ("DATA after END_STREAM", after_end.data(1, b"x", true), 1),
        (
            "HEADERS after END_STREAM",
            Server::default().settings(&[]).ok(1, true).ok(1, true),
            1,
        ),
        ("DATA after RST_STREAM", after_reset.data(1, b"x", true), 0),
    ] {
        let world = world(&["--proto", "h2c", "-n", "1"]);
        let outcome = converse(&world, Protocol::H2c, &server.0, server.0.len());
        let failure = outcome.failure.expect(name);
        assert_eq!(failure.kind, ErrorKind::Protocol, "{name}");
        assert!(
            failure.message.contains("STREAM_CLOSED"),
            "{name}: {failure:?}"
        );
        assert_eq!(outcome.counters.succeeded, succeeded, "{name}");
        let goaway = [&1u32.to_be_bytes()[..], &frame::STREAM_CLOSED.to_be_bytes()].concat();
        assert!(outcome.sent.ends_with(&goaway), "{name}");
    }
    // Frames crossing the client's own RST_STREAM are ignored.
    let mut server = block(
        Server::default().settings(&[]),
        1,
        false,
        &[&[0x88], &literal("content-length", "1")],
    );
    server = server
        .data(1, b"xy", false)
        .data(1, b"more", true)
        .ok(3, true);
    let world = world(&["--proto", "h2c", "-m", "2", "-n", "2"]);
    let outcome = converse(&world, Protocol::H2c, &server.0, 4);
    assert_eq!(outcome.failure, None);
    assert_eq!(
        (outcome.counters.succeeded, outcome.counters.failed),
        (1, 1)
    );
    assert_eq!(outcome.errors, [(ErrorKind::Protocol, 1)]);
}

#[test]
fn h2_first_bytes_that_are_not_http2_are_named() {
    let cases: [(&[u8], &str); 3] = [
        (b"\x15\x03\x03\x00\x02\x02\x46", "TLS"),
        (b"HTTP/1.1 400 Bad Request\r\n\r\n", "HTTP/1.1"),
        (&[0, 0, 0, frame::HEADERS, 4, 0, 0, 0, 1], "not SETTINGS"),
    ];
    for (bytes, named) in cases {
        let world = world(&["--proto", "h2c", "-n", "1"]);
        let outcome = converse(&world, Protocol::H2c, bytes, 1);
        let failure = outcome.failure.expect("not HTTP/2");
        assert_eq!(failure.kind, ErrorKind::Protocol);
        assert!(failure.message.contains(named), "{}", failure.message);
    }
}

#[test]
fn h2_settings_wait_is_bounded_and_zero_streams_is_not_ready() {
    let world = world(&["--proto", "h2c", "-n", "1", "--request-timeout", "1s"]);
    let due = Instant::now() + Duration::from_millis(10);
    let (ledger, mut out, mut session) = open(&world, Protocol::H2c, Some(due));
    assert_eq!(session.fill(&ledger, &mut out), Ok(Progress::Continue));
    assert_eq!(session.next_timer(), Some(due));
    let failure = session.on_timer(due, &ledger, &mut out).unwrap_err();
    assert_eq!(failure.kind, ErrorKind::ConnectTimeout);
    assert!(!session.is_ready());

    let (_, mut out, mut session) = open(&world, Protocol::H2c, Some(due));
    let server = Server::default().settings(&[(frame::SETTINGS_MAX_CONCURRENT_STREAMS, 0)]);
    let mut pending = Vec::new();
    feed(
        &mut session,
        &server.0,
        &mut pending,
        Instant::now(),
        &ledger,
        &mut out,
    )
    .unwrap();
    assert_eq!(session.fill(&ledger, &mut out), Ok(Progress::Continue));
    assert!(
        !session.is_ready(),
        "a server allowing no streams cannot carry requests"
    );
    let blocked_until = session
        .next_timer()
        .expect("the wait for a stream is bounded");
    assert!(blocked_until <= Instant::now() + Duration::from_secs(1));
    let failure = session
        .on_timer(blocked_until, &ledger, &mut out)
        .unwrap_err();
    assert_eq!(failure.kind, ErrorKind::Timeout);
    assert_eq!(world.shared.recorder.borrow().counters.started, 0);
}

#[test]
fn h2_request_timeout_cancels_only_the_late_stream() {
    let world = world(&[
        "--proto",
        "h2c",
        "-m",
        "2",
        "-n",
        "2",
        "--request-timeout",
        "1s",
    ]);
    let (ledger, mut out, mut session) = open(&world, Protocol::H2c, None);
    let mut pending = Vec::new();
    let server = Server::default().settings(&[]);
    feed(
        &mut session,
        &server.0,
        &mut pending,
        Instant::now(),
        &ledger,
        &mut out,
    )
    .unwrap();
    session.fill(&ledger, &mut out).unwrap();
    let answer = Server::default().ok(3, true);
    feed(
        &mut session,
        &answer.0,
        &mut pending,
        Instant::now(),
        &ledger,
        &mut out,
    )
    .unwrap();
    let due = session.next_timer().expect("stream 1 has a deadline");
    session.on_timer(due, &ledger, &mut out).unwrap();
    let recorder = world.shared.recorder.borrow();
    assert_eq!(recorder.counters.succeeded, 1);
    assert_eq!(recorder.counters.timeout, 1);
    let cancel = [
        0,
        0,
        4,
        frame::RST_STREAM,
        0,
        0,
        0,
        0,
        1,
        0,
        0,
        0,
        frame::CANCEL as u8,
    ];
    assert!(drain(&mut out).ends_with(&cancel));
}

// ---- h2c Upgrade ----

/// The server's answer when it takes the upgrade.
const SWITCHING: &[u8] =
    b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";

/// An upgrade connection (`-m 2 -n 2`) over `server` bytes in pieces of `piece` bytes, and the
/// protocol it settled on.
fn upgrade(server: &[u8], piece: usize) -> (Outcome, Option<Protocol>) {
    let world = world(&["--proto", "h2c-upgrade", "-m", "2", "-n", "2"]);
    let outcome = converse(&world, None, server, piece);
    (outcome, world.conn.protocol.get())
}

#[test]
fn upgrade_101_hands_over_to_http2_with_stream_1_open() {
    let mut server = SWITCHING.to_vec();
    server.extend(
        Server::default()
            .settings(&[])
            .ok(1, false)
            .data(1, b"first", true)
            .0,
    );
    for piece in [1, 7, server.len()] {
        let (outcome, protocol) = upgrade(&server, piece);
        assert_eq!(outcome.failure, None, "piece {piece}");
        assert_eq!(protocol, Some(Protocol::H2c), "piece {piece}");
        assert_eq!(
            outcome.counters.succeeded, 1,
            "piece {piece}: stream 1 answered"
        );
        assert_eq!(outcome.wire.data, 5, "piece {piece}");
        let sent = String::from_utf8_lossy(&outcome.sent);
        assert!(sent.starts_with("GET / HTTP/1.1\r\n"), "piece {piece}");
        assert!(sent.contains("upgrade: h2c"), "piece {piece}");
        assert!(
            outcome
                .sent
                .windows(frame::PREFACE_LEN)
                .any(|w| w == frame::PREFACE),
            "piece {piece}"
        );
    }
}

/// The frames in `bytes` (whole ones, as the client writes them): type and stream of each.
fn frames(mut bytes: &[u8]) -> Vec<(u8, u32)> {
    let mut frames = Vec::new();
    while let Some(head) = bytes.first_chunk::<{ frame::HEADER_LEN }>() {
        let head = frame::FrameHead::parse(head);
        frames.push((head.kind, head.stream));
        bytes = &bytes[frame::HEADER_LEN + head.length..];
    }
    assert!(bytes.is_empty(), "a partial frame");
    frames
}

/// What the client writes in answer to `server` (whole heads and frames), as one turn of the
/// driver: read, fill, write.
fn answer(
    session: &mut AnySession<'_>,
    ledger: &Ledger<'_>,
    out: &mut Outgoing,
    server: &[u8],
) -> Vec<u8> {
    let mut pending = Vec::new();
    feed(session, server, &mut pending, Instant::now(), ledger, out).unwrap();
    assert!(pending.is_empty(), "whole heads and frames only");
    session.fill(ledger, out).unwrap();
    drain(out)
}

#[test]
fn upgraded_connection_sends_its_requests_with_the_preface_before_the_server_settings() {
    // Apache ends an upgraded connection once no stream is open: streams 3 and 5 must reach it
    // while stream 1 is, so they leave in the same write as the preface.
    let world = world(&[
        "--proto",
        "h2c-upgrade",
        "-m",
        "3",
        "-n",
        "10",
        "--request-timeout",
        "1h",
    ]);
    let ready_by = Instant::now() + Duration::from_secs(10);
    let (ledger, mut out, mut session) = open(&world, None, Some(ready_by));
    session.fill(&ledger, &mut out).unwrap();
    assert!(drain(&mut out).starts_with(b"GET / HTTP/1.1\r\n"));
    let write = answer(&mut session, &ledger, &mut out, SWITCHING);
    let after_preface = write
        .strip_prefix(frame::PREFACE)
        .expect("the write starts with the preface");
    assert_eq!(
        frames(after_preface),
        [
            (frame::SETTINGS, 0),
            (frame::WINDOW_UPDATE, 0),
            (frame::HEADERS, 3),
            (frame::HEADERS, 5),
        ],
        "-m 3: stream 1 is the upgrade request"
    );
    assert_eq!(world.shared.recorder.borrow().counters.started, 3);
    assert!(
        !session.is_ready(),
        "ready once the server's SETTINGS arrive"
    );
    assert_eq!(
        session.next_timer(),
        Some(ready_by),
        "--connect-timeout still bounds the wait for the SETTINGS"
    );
    let failure = session.on_timer(ready_by, &ledger, &mut out).unwrap_err();
    assert_eq!(failure.kind, ErrorKind::ConnectTimeout);
}

#[test]
fn early_data_streams_before_the_server_settings_only_fit_its_room_and_the_default_limit() {
    // `--tls-early-data -m 300`: the HEADERS streams queued with the preface, before the
    // server's SETTINGS, on a connection sending `early_data` bytes of early data (`None`: a
    // full handshake, which waits for the server's limits).
    let streams_before_settings = |early_data: Option<usize>| {
        let world = world(&["--proto", "h2c", "-m", "300", "-n", "600"]);
        let ledger = Ledger::new(&world.shared, &world.conn, 0);
        let mut out = Outgoing::default();
        let mut session = AnySession::new(
            &world.templates,
            Some(Protocol::H2c),
            None,
            early_data,
            &mut out,
        );
        session.fill(&ledger, &mut out).unwrap();
        let write = drain(&mut out);
        let after_preface = write.strip_prefix(frame::PREFACE).unwrap().to_vec();
        let headers = frames(&after_preface)
            .iter()
            .filter(|(kind, _)| *kind == frame::HEADERS)
            .count();
        assert_eq!(
            world.shared.recorder.borrow().counters.started,
            headers as u64
        );
        (headers, write.len())
    };
    assert_eq!(streams_before_settings(None).0, 0);
    // nghttpx's 16 KiB: RFC 9113's advised floor of 100 concurrent streams is the limit.
    assert_eq!(streams_before_settings(Some(16 * 1024)).0, 100);
    // Less room: only what fits (the preface, SETTINGS and WINDOW_UPDATE, then the requests).
    let (all, bytes) = streams_before_settings(Some(16 * 1024));
    let room = bytes - 30;
    let (fitting, sent) = streams_before_settings(Some(room));
    assert!(
        sent <= room,
        "{sent} bytes sent in {room} bytes of early data"
    );
    // Room is kept for one more request as large as the first (all literals), ~10 indexed ones.
    assert!((all - 10..all).contains(&fitting), "{fitting} streams");
    assert_eq!(streams_before_settings(Some(0)).0, 0);
}

#[test]
fn upgraded_connection_keeps_to_the_server_limit_once_its_settings_arrive() {
    // Three streams left before the SETTINGS announced 2: the server refuses stream 5, which goes
    // again as stream 7 once a stream is free, and never more than 2 are open.
    let world = world(&["--proto", "h2c-upgrade", "-m", "3", "-n", "3"]);
    let (ledger, mut out, mut session) = open(&world, None, None);
    session.fill(&ledger, &mut out).unwrap();
    drain(&mut out);
    // The streams the client opens in answer to `server`.
    let mut opened = |server: &[u8]| -> Vec<u32> {
        let write = answer(&mut session, &ledger, &mut out, server);
        let write = write.strip_prefix(frame::PREFACE).unwrap_or(&write);
        frames(write)
            .into_iter()
            .filter(|(kind, _)| *kind == frame::HEADERS)
            .map(|(_, stream)| stream)
            .collect()
    };
    assert_eq!(opened(SWITCHING), [3, 5]);
    let limited = Server::default()
        .settings(&[(frame::SETTINGS_MAX_CONCURRENT_STREAMS, 2)])
        .frame(
            frame::RST_STREAM,
            0,
            5,
            &frame::REFUSED_STREAM.to_be_bytes(),
        );
    assert!(opened(&limited.0).is_empty(), "1 and 3 are open");
    assert_eq!(opened(&Server::default().ok(1, true).0), [7]);
    assert!(opened(&Server::default().ok(3, true).ok(7, true).0).is_empty());
    let c = world.shared.recorder.borrow().counters;
    assert_eq!((c.started, c.succeeded, c.failed), (3, 3, 0));
    assert_eq!(world.shared.recorder.borrow().retried.refused, 1);
}

#[test]
fn upgraded_connection_sends_again_what_a_goaway_left_unprocessed() {
    // Apache's way: after the upgrade, stream 1 is answered and GOAWAY names it the last one.
    let mut server = SWITCHING.to_vec();
    server.extend(Server::default().settings(&[]).0);
    // The answers come once the client has opened stream 3.
    let opened = server.len();
    server.extend(
        Server::default()
            .ok(1, true)
            .frame(frame::GOAWAY, 0, 0, &goaway(1))
            .0,
    );
    let world = world(&["--proto", "h2c-upgrade", "-m", "2", "-n", "2"]);
    let outcome = converse(&world, None, &server, opened);
    assert_eq!(outcome.failure, None);
    assert_eq!(
        (outcome.counters.started, outcome.counters.succeeded),
        (2, 1)
    );
    assert_eq!(world.shared.recorder.borrow().retried.goaway, 1);
    assert_eq!(world.shared.retries.borrow().len(), 1);
}

#[test]
fn upgrade_closed_unanswered_goes_again() {
    let world = world(&["--proto", "h2c-upgrade", "-n", "1"]);
    let (ledger, mut out, mut session) = open(&world, None, None);
    session.fill(&ledger, &mut out).unwrap();
    assert_eq!(session.on_eof(Instant::now(), &ledger), Ok(()));
    assert_eq!(world.shared.recorder.borrow().retried.closed, 1);
    assert_eq!(world.shared.retries.borrow().len(), 1);
}

#[test]
fn upgrade_declined_goes_on_as_http1_with_the_answer_as_first_response() {
    let server = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nyes";
    // Whole responses at most: a server answers the second request only once it was sent.
    for piece in [1, 5, 40] {
        let (outcome, protocol) = upgrade(server, piece);
        assert_eq!(outcome.failure, None, "piece {piece}");
        assert_eq!(protocol, Some(Protocol::Http1), "piece {piece}");
        assert_eq!(outcome.counters.succeeded, 2, "piece {piece}");
        assert_eq!(outcome.wire.data, 5, "piece {piece}");
    }
}

#[test]
fn upgrade_answered_with_http2_frames_is_named() {
    let server = Server::default().settings(&[]).0;
    let (outcome, _) = upgrade(&server, server.len());
    let failure = outcome.failure.expect("not an HTTP/1.1 answer");
    assert_eq!(failure.kind, ErrorKind::Protocol);
    assert!(
        failure.message.contains("prior knowledge only"),
        "{}",
        failure.message
    );
}

// ---- --rate ----

#[test]
fn waiting_connections_come_back_one_per_send_time_and_wake_when_the_schedule_ends() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};

    let mut world = world(&["--h1", "-n", "1"]);
    let period = Duration::from_millis(1);
    let start = Instant::now() + Duration::from_secs(1);
    world.shared.pacer = Some(super::Pacer::new(period, start, None));
    let (a, b) = (ConnState::default(), ConnState::default());
    let (ledger_a, ledger_b) = (
        Ledger::new(&world.shared, &a, 0),
        Ledger::new(&world.shared, &b, 1),
    );
    let at = |ledger: &Ledger<'_>| match ledger.next_request() {
        super::Slot::At(time) => time,
        other => panic!("expected to wait, got {other:?}"),
    };
    assert_eq!(at(&ledger_a), start);
    assert_eq!(at(&ledger_b), start + period, "one waiter per send time");
    assert_eq!(at(&ledger_a), start, "a connection keeps its time");
    // Whoever finds the first time due takes it: a's time is gone, b's stands.
    let pacer = world.shared.pacer.as_ref().unwrap();
    pacer.next.set(start + period);
    assert_eq!(at(&ledger_b), start + period);
    assert_eq!(at(&ledger_a), start + 2 * period);

    // b waits; a finds the one request taken (the schedule is over) and wakes b at once.
    assert!(world.shared.budget.try_take());
    pacer.next.set(Instant::now());
    let mut context = Context::from_waker(Waker::noop());
    let mut waiting = Box::pin(ledger_b.schedule_calls_back());
    assert_eq!(waiting.as_mut().poll(&mut context), Poll::Pending);
    assert_eq!(ledger_a.next_request(), super::Slot::Done);
    assert_eq!(waiting.as_mut().poll(&mut context), Poll::Ready(()));
}

#[test]
fn a_timed_run_tells_no_send_time_past_its_end_and_ends_its_waiters_there() {
    let mut world = world(&["--h1", "-D", "10s"]);
    let period = Duration::from_millis(100);
    let start = Instant::now() + Duration::from_secs(1);
    let ends = start + period + period / 2;
    world.shared.pacer = Some(super::Pacer::new(period, start, Some(ends)));
    let conns = [
        ConnState::default(),
        ConnState::default(),
        ConnState::default(),
    ];
    let told: Vec<_> = conns
        .iter()
        .map(|conn| Ledger::new(&world.shared, conn, 0).next_request())
        .collect();
    assert_eq!(
        told,
        [
            super::Slot::At(start),
            super::Slot::At(start + period),
            super::Slot::At(ends)
        ],
        "the third send time is past the end: that connection comes back at the end"
    );
    // At the end, whoever asks learns the schedule is over and wakes the rest.
    let mut late = super::Pacer::new(period, Instant::now() + period, Some(Instant::now()));
    std::mem::swap(world.shared.pacer.as_mut().unwrap(), &mut late);
    let ledger = Ledger::new(&world.shared, &conns[0], 0);
    assert_eq!(ledger.next_request(), super::Slot::Done);
    assert_eq!(conns[0].requests.get(), 0, "nothing sent");
}

#[test]
fn a_send_time_due_before_the_end_goes_just_after_it_but_a_backlog_does_not() {
    let mut world = world(&["--h1", "-D", "10s"]);
    let conn = ConnState::default();
    let now = Instant::now();
    // Due 1 ms before an end that passed 1 ms ago: a late wake-up, it still goes.
    let ends = now - Duration::from_millis(1);
    let late = super::Pacer::new(
        Duration::from_secs(1),
        ends - Duration::from_millis(1),
        Some(ends),
    );
    world.shared.pacer = Some(late);
    let ledger = Ledger::new(&world.shared, &conn, 0);
    assert!(matches!(ledger.next_request(), super::Slot::Now(_)));
    // Due 1 s before an end that passed 50 ms ago (an overloaded server's backlog): over.
    let ends = now - Duration::from_millis(50);
    let backlog = super::Pacer::new(
        Duration::from_millis(1),
        ends - Duration::from_secs(1),
        Some(ends),
    );
    world.shared.pacer = Some(backlog);
    let ledger = Ledger::new(&world.shared, &conn, 0);
    assert_eq!(ledger.next_request(), super::Slot::Done);
}

// ---- --stages and the steered run ----

#[test]
fn a_ramp_tells_waiting_connections_the_send_times_of_its_curve() {
    use super::pacer::Source;
    use crate::plan::stages::{Share, Stage, Stages};

    let mut world = world(&["--h1", "-D", "10s"]);
    // A step to 1000/s held for 1 s: a request every ms, the first half a period in.
    let stages = Stages::new(
        0.0,
        ["0s:1000", "1s:1000"]
            .iter()
            .map(|text| Stage::parse(text).unwrap())
            .collect(),
    )
    .unwrap();
    let start = Instant::now() + Duration::from_secs(1);
    let ends = start + Duration::from_secs(1);
    world.shared.pacer = Some(super::Pacer::with_source(
        Source::Stages(Share::new(stages, 1.0)),
        start,
        Some(ends),
    ));
    let conns = [ConnState::default(), ConnState::default()];
    let told: Vec<_> = conns
        .iter()
        .map(|conn| Ledger::new(&world.shared, conn, 0).next_request())
        .collect();
    let at = |micros| super::Slot::At(start + Duration::from_micros(micros));
    assert_eq!(
        told,
        [at(500), at(1500)],
        "one waiter per send time of the curve"
    );
}

#[test]
fn a_steered_pacer_follows_its_throttle_and_wakes_its_waiters_on_a_change() {
    use super::pacer::{Offered, Source, Steering, Throttle};
    use std::future::Future;
    use std::sync::Arc;
    use std::task::{Context, Poll, Waker};

    let mut world = world(&["--h1", "-D", "10s"]);
    let throttle = Arc::new(Throttle::new());
    world.shared.pacer = Some(super::Pacer::with_source(
        Source::Steered(Steering::new(throttle.clone(), 1.0)),
        Instant::now(),
        None,
    ));
    let conn = ConnState::default();
    let ledger = Ledger::new(&world.shared, &conn, 0);
    // Paused: the connection waits until the rate changes, looking again every 50 ms (a
    // change between its look and its wait would not wake it).
    for _ in 0..2 {
        let asked = Instant::now();
        match ledger.next_request() {
            super::Slot::At(time) => assert!(
                time >= asked + Duration::from_millis(50)
                    && time <= Instant::now() + Duration::from_millis(50)
            ),
            other => panic!("a paused run sends nothing, got {other:?}"),
        }
    }
    let mut context = Context::from_waker(Waker::noop());
    let mut waiting = Box::pin(ledger.schedule_calls_back());
    assert_eq!(waiting.as_mut().poll(&mut context), Poll::Pending);
    throttle.set(Offered::Paced(1000.0));
    assert_eq!(waiting.as_mut().poll(&mut context), Poll::Ready(()));
    // The new rate starts at once; the time told under the old one no longer holds.
    let before = Instant::now();
    let first = match ledger.next_request() {
        super::Slot::Now(start) => start.intended,
        other => panic!("the first request of the step goes now, got {other:?}"),
    };
    assert!(first >= before);
    assert_eq!(
        ledger.next_request(),
        super::Slot::At(first + Duration::from_millis(1)),
        "1000/s: the next a millisecond later"
    );
    // Unpaced: every request goes at once, intended when sent.
    throttle.set(Offered::Unpaced);
    for _ in 0..3 {
        assert!(
            matches!(ledger.next_request(), super::Slot::Now(start) if start.intended == start.actual)
        );
    }
    throttle.set(Offered::Stopped);
    assert_eq!(ledger.next_request(), super::Slot::Done);
}

// ---- Connection lifecycle ----

#[test]
fn h1_connection_retires_after_its_requests_per_connection() {
    let world = world(&[
        "--h1",
        "-m",
        "8",
        "-n",
        "10",
        "--requests-per-connection",
        "3",
    ]);
    let (ledger, mut out, mut session) = open(&world, Protocol::Http1, None);
    assert_eq!(session.fill(&ledger, &mut out), Ok(Progress::Continue));
    let sent = drain(&mut out);
    assert_eq!(sent.windows(4).filter(|w| w == b"GET ").count(), 3);
    assert!(world.conn.retiring(&world.shared.plan));
    assert!(
        !ledger.may_have_more(),
        "a retiring connection takes nothing more"
    );
    let mut pending = Vec::new();
    let responses = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".repeat(3);
    feed(
        &mut session,
        &responses,
        &mut pending,
        Instant::now(),
        &ledger,
        &mut out,
    )
    .unwrap();
    // Answered: the connection is done; the rest of the budget is for the next one.
    assert_eq!(session.fill(&ledger, &mut out), Ok(Progress::Finished));
    assert_eq!(world.shared.recorder.borrow().counters.succeeded, 3);
    assert!(world.shared.budget.has_more());
}

#[test]
fn no_keepalive_sends_one_request_with_connection_close() {
    let world = world(&["--h1", "-m", "4", "-n", "5", "--no-keepalive"]);
    let (ledger, mut out, mut session) = open(&world, Protocol::Http1, None);
    session.fill(&ledger, &mut out).unwrap();
    let sent = String::from_utf8(drain(&mut out)).unwrap();
    assert_eq!(sent.matches("GET ").count(), 1, "{sent}");
    assert!(sent.contains("\r\nconnection: close\r\n"), "{sent}");
}

#[test]
fn a_reserved_request_is_the_connections_first() {
    let world = world(&["--h1", "-n", "1", "--requests-per-connection", "1"]);
    // The slot took the only request before connecting.
    assert!(world.shared.budget.try_take());
    world.conn.reserved.set(true);
    let (ledger, mut out, mut session) = open(&world, Protocol::Http1, None);
    assert!(ledger.may_have_more());
    session.fill(&ledger, &mut out).unwrap();
    assert_eq!(world.conn.requests.get(), 1);
    assert!(!world.conn.reserved.get());
    assert_eq!(world.shared.recorder.borrow().counters.started, 1);
}
