//! Tests of the receive side (`recv.rs`): frames split anywhere, decoded header blocks, DATA
//! and its padding.

use crate::engine::testing::{converse, world};
use crate::plan::Protocol;
use crate::proto::h2::{self as frame, write_frame};
use crate::recorder::ErrorKind;

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
