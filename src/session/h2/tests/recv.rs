//! Tests of the receive side (`recv.rs`): frames split anywhere, decoded header blocks, DATA
//! and its padding.

use crate::plan::Protocol;
use crate::proto::h2::{self as frame, write_frame};
use crate::recorder::ErrorKind;
use crate::session::testing::{converse, kind, world, Server};

#[test]
fn checks_read_decoded_headers_and_unpadded_data_split_anywhere() {
    let mut server = Vec::new();
    write_frame(&mut server, frame::SETTINGS, 0, 0, &[]);
    write_frame(&mut server, frame::SETTINGS, frame::ACK, 0, &[]);
    // Stream 1: `x-a: 1` inserted in the dynamic table; a body of "bo" and "xx" whose
    // padding ("dy") would complete "body" if it were searched.
    let head = [0x88, 0x40, 0x03, b'x', b'-', b'a', 0x01, b'1'];
    write_frame(&mut server, frame::HEADERS, frame::END_HEADERS, 1, &head);
    write_frame(
        &mut server,
        frame::DATA,
        frame::PADDED,
        1,
        &[2, b'b', b'o', b'd', b'y'],
    );
    write_frame(&mut server, frame::DATA, frame::END_STREAM, 1, b"xx");
    // Stream 3: the field by its dynamic table index; "body" over two DATA frames.
    write_frame(
        &mut server,
        frame::HEADERS,
        frame::END_HEADERS,
        3,
        &[0x88, 0xbe],
    );
    write_frame(&mut server, frame::DATA, 0, 3, b"bo");
    write_frame(&mut server, frame::DATA, frame::END_STREAM, 3, b"dy");
    for piece in [1, 2, 3, 5, 7, server.len()] {
        let world = world(&[
            "--proto",
            "h2c",
            "-m",
            "2",
            "-n",
            "2",
            "--expect-header",
            "X-A: 1",
            "--expect-body-contains",
            "body",
        ]);
        let outcome = converse(&world, Protocol::H2c, &server, piece);
        assert_eq!(outcome.failure, None, "piece {piece}");
        let counters = outcome.counters;
        assert_eq!(
            (counters.succeeded, counters.failed),
            (1, 1),
            "piece {piece}"
        );
        assert_eq!(outcome.errors, [(ErrorKind::Check, 1)], "piece {piece}");
        let recorder = world.shared.recorder.borrow();
        assert_eq!(
            recorder.checks.first_mismatch.as_deref(),
            Some("the body does not contain \"body\" (searched 4 bytes)"),
            "piece {piece}"
        );
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
