//! Tests of the control frames (`control.rs`, and RST_STREAM as `recv.rs` reads it): GOAWAY and
//! the streams it leaves unprocessed, refused and reset streams, WINDOW_UPDATE, the PING flood,
//! a server that does not speak HTTP/2.

use std::time::Instant;

use crate::plan::Protocol;
use crate::proto::h2::{self as frame, write_frame};
use crate::recorder::{ErrorKind, Symptom};
use crate::session::any::feed;
use crate::session::testing::{
    converse, goaway, kind, open, queued, world, Conversation, Server, World,
};
use crate::session::ConnState;

/// Streams 1, 3 and 5 (`-m 3 -n 3`, plus `flags`) on a connection whose server answers stream 1
/// and sends GOAWAY naming it the last stream processed.
fn goaway_after_stream_1(flags: &[&str]) -> (World, Conversation) {
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
    session.fill(Instant::now(), &ledger, &mut out).unwrap();
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

/// grpc-go's habit: a PING with its responses, over a long call whose requests keep the output
/// busy. Each acknowledgement is written soon after it is queued, but the output is never
/// empty (the driver writes all but the last byte each time): 3,000 PINGs over the connection's
/// life are no flood, since no more than one acknowledgement is ever unwritten.
#[test]
fn h2_pings_whose_acks_are_written_are_no_flood_though_the_output_never_empties() {
    let world = world(&["--proto", "h2c", "-n", "1"]);
    let (ledger, mut out, mut session) = open(&world, Protocol::H2c, None);
    session.fill(Instant::now(), &ledger, &mut out).unwrap();
    let settings = Server::default().settings(&[]);
    let ping = Server::default().frame(frame::PING, 0, 0, &[1; 8]);
    let mut pending = Vec::new();
    for (index, bytes) in std::iter::once(&settings.0)
        .chain(std::iter::repeat_n(&ping.0, 3000))
        .enumerate()
    {
        let at = Instant::now();
        feed(&mut session, bytes, &mut pending, at, &ledger, &mut out)
            .and_then(|()| session.fill(at, &ledger, &mut out).map(|_| ()))
            .unwrap_or_else(|failure| panic!("frame {index}: {failure:?}"));
        let unwritten = out.queued_end() - out.written();
        out.advance(unwritten as usize - 1);
        assert!(!out.is_empty());
    }
}

#[test]
fn h2_first_bytes_that_are_not_http2_are_named() {
    let cases: [(&[u8], &str, Option<Symptom>); 3] = [
        (
            b"\x15\x03\x03\x00\x02\x02\x46",
            "TLS",
            Some(Symptom::TlsPort),
        ),
        (
            b"HTTP/1.1 400 Bad Request\r\n\r\n",
            "HTTP/1.1",
            Some(Symptom::Http1Only),
        ),
        (
            &[0, 0, 0, frame::HEADERS, 4, 0, 0, 0, 1],
            "not SETTINGS",
            None,
        ),
    ];
    for (bytes, named, symptom) in cases {
        let world = world(&["--proto", "h2c", "-n", "1"]);
        let outcome = converse(&world, Protocol::H2c, bytes, 1);
        let failure = outcome.failure.expect("not HTTP/2");
        assert_eq!(failure.kind, ErrorKind::Protocol);
        assert!(failure.message.contains(named), "{}", failure.message);
        assert_eq!(failure.symptom, symptom, "{}", failure.message);
    }
}
