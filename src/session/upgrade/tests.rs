//! Tests of the h2c upgrade session: the `HTTP2-Settings` header, a 101 handing over to HTTP/2
//! with stream 1 open and the other streams leaving with the preface, an upgrade declined or
//! answered with HTTP/2 frames.

use std::time::{Duration, Instant};

use super::*;
use crate::plan::Protocol;
use crate::proto::h2 as frame;
use crate::recorder::ErrorKind;
use crate::session::any::feed;
use crate::session::any::AnySession;
use crate::session::outgoing::Outgoing;
use crate::session::testing::{converse, drain, frames, goaway, open, world, Conversation, Server};
use crate::session::Ledger;

#[test]
fn http2_settings_header_encodes_the_settings_payload() {
    let settings = H2Settings {
        stream_window: 65_535,
        connection_window: 65_535,
        max_frame_size: 16_384,
        header_table_size: 4_096,
    };
    let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(http2_settings(&settings))
        .unwrap();
    assert_eq!(
        decoded,
        [0, 1, 0, 0, 0x10, 0, 0, 2, 0, 0, 0, 0, 0, 4, 0, 0, 0xff, 0xff, 0, 5, 0, 0, 0x40, 0]
    );
}

/// The server's answer when it takes the upgrade.
const SWITCHING: &[u8] =
    b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";

/// An upgrade connection (`-m 2 -n 2`) over `server` bytes in pieces of `piece` bytes, and the
/// protocol it settled on.
fn upgrade(server: &[u8], piece: usize) -> (Conversation, Option<Protocol>) {
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
    session.fill(Instant::now(), ledger, out).unwrap();
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
    session.fill(Instant::now(), &ledger, &mut out).unwrap();
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
fn upgraded_connection_keeps_to_the_server_limit_once_its_settings_arrive() {
    // Three streams left before the SETTINGS announced 2: the server refuses stream 5, which goes
    // again as stream 7 once a stream is free, and never more than 2 are open.
    let world = world(&["--proto", "h2c-upgrade", "-m", "3", "-n", "3"]);
    let (ledger, mut out, mut session) = open(&world, None, None);
    session.fill(Instant::now(), &ledger, &mut out).unwrap();
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
    session.fill(Instant::now(), &ledger, &mut out).unwrap();
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
