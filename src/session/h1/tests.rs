//! Tests of the HTTP/1.1 session fed byte sequences: pipelined responses split at every byte,
//! bodies delimited by close, interim responses, closes with requests unanswered, the request
//! timeout.

use std::time::{Duration, Instant};

use crate::plan::Protocol;
use crate::recorder::ErrorKind;
use crate::session::any::feed;
use crate::session::contract::Progress;
use crate::session::testing::{converse, kind, open, queued, world};
use crate::session::ConnState;

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
    session.fill(Instant::now(), &ledger, &mut out).unwrap();
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
    assert_eq!(
        session.fill(Instant::now(), &ledger, &mut out),
        Ok(Progress::Finished)
    );
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
        session.fill(Instant::now(), &ledger, &mut out).unwrap();
        let mut pending = Vec::new();
        let at = Instant::now();
        feed(&mut session, CLOSE, &mut pending, at, &ledger, &mut out).unwrap();
        let failure = session.fill(Instant::now(), &ledger, &mut out).unwrap_err();
        assert_eq!(failure.kind, ErrorKind::Closed, "{flags:?}");
        assert_eq!(session.fail_all(&failure, at, &ledger), 2, "{flags:?}");
        let recorder = world.shared.recorder.borrow();
        assert_eq!(recorder.counters.errored, 2, "{flags:?}");
        assert_eq!(recorder.retried.total(), 0, "{flags:?}");
    }
}

#[test]
fn h1_requests_unanswered_at_close_go_again_on_the_next_connection() {
    let mut world = world(&["--h1", "-m", "3", "-n", "3"]);
    let (ledger, mut out, mut session) = open(&world, Protocol::Http1, None);
    session.fill(Instant::now(), &ledger, &mut out).unwrap();
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
    assert_eq!(
        session.fill(Instant::now(), &ledger, &mut out),
        Ok(Progress::Reconnect)
    );
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
    session.fill(Instant::now(), &ledger, &mut out).unwrap();
    let mut pending = Vec::new();
    let at = Instant::now();
    let cut = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf";
    feed(&mut session, cut, &mut pending, at, &ledger, &mut out).unwrap();
    let failure = session.on_eof(at, &ledger).unwrap_err();
    assert_eq!(failure.kind, ErrorKind::Closed);
    assert_eq!(session.fail_all(&failure, at, &ledger), 2);
    assert_eq!(world.shared.recorder.borrow().retried.total(), 0);
}

#[test]
fn h1_request_timeout_fires_from_the_oldest_request() {
    let world = world(&["--h1", "-n", "1", "--request-timeout", "50ms"]);
    let (ledger, mut out, mut session) = open(&world, Protocol::Http1, None);
    let sent = Instant::now();
    session.fill(Instant::now(), &ledger, &mut out).unwrap();
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
