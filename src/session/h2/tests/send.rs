//! Tests of the send side (`send.rs`): request bodies within the server's windows, streams that
//! leave with the early data before the server's SETTINGS.

use std::time::Instant;

use crate::plan::Protocol;
use crate::proto::h2::{self as frame, write_frame};
use crate::session::any::{AnySession, Speaks};
use crate::session::outgoing::Outgoing;
use crate::session::testing::{converse, drain, frames, world, Server};
use crate::session::Ledger;

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
fn early_data_streams_before_the_server_settings_only_fit_its_room_and_the_default_limit() {
    // `--tls-early-data -m 300`: the HEADERS streams queued with the preface, before the
    // server's SETTINGS, on a connection sending `early_data` bytes of early data (`None`: a
    // full handshake, which waits for the server's limits).
    let streams_before_settings = |early_data: Option<usize>| {
        let world = world(&["--proto", "h2c", "-m", "300", "-n", "600"]);
        let ledger = Ledger::new(&world.shared, &world.conn, 0);
        let mut out = Outgoing::default();
        let mut session = AnySession::new(&world.templates, Speaks::H2, None, early_data, &mut out);
        session.fill(Instant::now(), &ledger, &mut out).unwrap();
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
