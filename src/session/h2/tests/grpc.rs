//! gRPC calls on the session: a response split at every byte gives the same count of messages,
//! bytes and statuses; the status (and its `grpc-message`) comes from trailers or a Trailers-Only
//! response; the request carries gRPC's fields and its framed message.

use crate::plan::Protocol;
use crate::proto::h2 as frame;
use crate::recorder::ErrorKind;
use crate::session::testing::{converse, literal, message, world, Server};

#[test]
fn calls_split_at_every_byte_count_messages_and_statuses() {
    let argv = ["--grpc", "/t.S/M", "-m", "2", "-n", "2"];
    let headers = [vec![0x88], literal("content-type", b"application/grpc")].concat();
    // Stream 1: a message over two DATA frames, then trailers with OK. Stream 3: Trailers-Only
    // with NOT_FOUND.
    let reply = message(b"hello!");
    let server = Server::default()
        .settings(&[])
        .frame(frame::HEADERS, frame::END_HEADERS, 1, &headers)
        .data(1, &reply[..4], false)
        .data(1, &reply[4..], false)
        .frame(
            frame::HEADERS,
            frame::END_HEADERS | frame::END_STREAM,
            1,
            &literal("grpc-status", b"0"),
        )
        .frame(
            frame::HEADERS,
            frame::END_HEADERS | frame::END_STREAM,
            3,
            &[
                headers.clone(),
                literal("grpc-status", b"5"),
                literal("grpc-message", b"no such thing%21"),
            ]
            .concat(),
        );
    for piece in 1..=server.0.len() {
        let world = world(&argv);
        let outcome = converse(&world, Protocol::H2c, &server.0, piece);
        assert_eq!(outcome.failure, None, "piece {piece}");
        assert_eq!(
            (outcome.counters.succeeded, outcome.counters.failed),
            (1, 1),
            "piece {piece}"
        );
        assert!(outcome.errors.is_empty(), "piece {piece}");
        let recorder = world.shared.recorder.borrow();
        let grpc = &recorder.grpc;
        assert_eq!(
            grpc.named_codes().collect::<Vec<_>>(),
            [("OK", 1), ("NOT_FOUND", 1)],
            "piece {piece}"
        );
        let messages = &recorder.messages;
        assert_eq!(messages.received.messages, 1, "piece {piece}");
        assert_eq!(messages.received.message_bytes, 6, "piece {piece}");
        assert_eq!(messages.received.prefix_bytes, 5, "piece {piece}");
        assert_eq!(messages.sent.messages, 2, "piece {piece}");
        assert_eq!(messages.sent.prefix_bytes, 10, "piece {piece}");
        assert_eq!(messages.sent.message_bytes, 0, "piece {piece}");
        let said = recorder.grpc_status_message.as_ref().unwrap();
        assert_eq!(
            (said.status.as_str(), said.text.as_str()),
            ("NOT_FOUND", "no such thing!"),
            "piece {piece}"
        );
    }
}

#[test]
fn the_request_is_a_post_with_grpc_fields_and_a_framed_message() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("m.bin");
    std::fs::write(&file, [0x0a, 1, b'x']).unwrap();
    let argv = [
        "--grpc",
        "t.S.M",
        "--grpc-binary-file",
        file.to_str().unwrap(),
        "--request-timeout",
        "1500ms",
        "-H",
        "x-tenant: a",
        "-n",
        "1",
    ];
    let world = world(&argv);
    let outcome = converse(
        &world,
        Protocol::H2c,
        &Server::default().settings(&[]).0,
        64,
    );
    let sent = &outcome.sent[frame::PREFACE.len()..];
    let mut at = 0;
    let mut fields = Vec::new();
    let mut body = Vec::new();
    while at + frame::HEADER_LEN <= sent.len() {
        let head = frame::FrameHead::parse(sent[at..].first_chunk().unwrap());
        let payload = &sent[at + frame::HEADER_LEN..at + frame::HEADER_LEN + head.length];
        match head.kind {
            frame::HEADERS => fields.push(payload.to_vec()),
            frame::DATA => body.extend_from_slice(payload),
            _ => {}
        }
        at += frame::HEADER_LEN + head.length;
    }
    assert_eq!(fields.len(), 1);
    let text = String::from_utf8_lossy(&fields[0]).into_owned();
    for expected in [
        "/t.S/M",
        "application/grpc",
        "trailers",
        "grpc-timeout",
        "1500000u",
        "x-tenant",
    ] {
        assert!(text.contains(expected), "{expected} not in {text:?}");
    }
    // POST is static entry 3 (0x83).
    assert!(fields[0].contains(&0x83));
    assert_eq!(body, [0, 0, 0, 0, 3, 0x0a, 1, b'x']);
}

#[test]
fn a_response_without_grpc_status_fails_its_call() {
    let headers = [vec![0x88], literal("content-type", b"application/grpc")].concat();
    let server = Server::default()
        .settings(&[])
        .frame(frame::HEADERS, frame::END_HEADERS, 1, &headers)
        .data(1, &message(b"x"), true);
    let world = world(&["--grpc", "/t.S/M", "-n", "1"]);
    let outcome = converse(&world, Protocol::H2c, &server.0, 3);
    assert_eq!(outcome.errors, [(ErrorKind::GrpcStatusMissing, 1)]);
    assert_eq!(world.shared.recorder.borrow().messages.received.messages, 1);
}
