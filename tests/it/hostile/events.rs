//! Hostile event-stream servers: lines that never end, streams that never end or trickle, odd
//! fields and bytes, streams cut mid-event. Each run is bounded in time and memory (the reader
//! keeps no line, so a gigabyte line costs a counter), names its error kind, and counts the
//! events it had.

use std::time::Duration;

use super::server::h2::{self, frame, STATUS_200};
use super::server::{hpack, Behaviour, Conn};
use super::{run, Case, Events, Exactly, BASE, TIMEOUT};
use h2load_rs::testkit::h2::{DATA, END_HEADERS, END_STREAM, HEADERS};

use Behaviour::{H1Reply, H2Reply, Script};

const SSE_HEAD: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";

/// A chunk of `bytes`.
fn chunk(bytes: &[u8]) -> Vec<u8> {
    [format!("{:x}\r\n", bytes.len()).as_bytes(), bytes, b"\r\n"].concat()
}

/// Each request: an SSE head, then one `data:` line of `x` forever (1 GB and more).
fn data_line_of_a_gigabyte(mut conn: Conn) {
    if conn.read_h1_head() && conn.send(SSE_HEAD) && conn.send(&chunk(b"data: ")) {
        conn.send_forever(&chunk(&[b'x'; 64 * 1024]));
    }
}

/// Each request: a close-delimited SSE body, one comment line that never ends.
fn comment_never_ends(mut conn: Conn) {
    if conn.read_h1_head()
        && conn.send(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n: ")
    {
        conn.send_forever(&[b'x'; 64 * 1024]);
    }
}

/// Each request: events 10 ms apart, forever.
fn never_ends(mut conn: Conn) {
    if conn.read_h1_head() && conn.send(SSE_HEAD) {
        while conn.send(&chunk(b"data: tick\n\n")) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Each request: one event, a byte a second.
fn one_byte_per_second(mut conn: Conn) {
    if conn.read_h1_head() && conn.send(SSE_HEAD) {
        let bytes: Vec<u8> = b"data: 1\n\n"
            .iter()
            .flat_map(|&byte| chunk(&[byte]))
            .collect();
        conn.dribble(bytes, Duration::from_secs(1));
    }
}

/// Each request: an event, half of the next, then a FIN in the middle of the chunked body.
fn closed_mid_event(mut conn: Conn) {
    if conn.read_h1_head() && conn.send(SSE_HEAD) && conn.send(&chunk(b"data: one\n\ndata: tw")) {
        conn.close_gracefully();
    }
}

/// The head of an h2c event stream of `format` (`content-type`), not ending it.
fn h2_head(stream: u32, content_type: &[u8]) -> Vec<u8> {
    let block = [STATUS_200, &hpack::literal(b"content-type", content_type)].concat();
    frame(HEADERS, END_HEADERS, stream, &block)
}

/// An event after a `retry:` of 2^64 (past any integer a client might parse it into).
fn retry_of_2_pow_64(stream: u32) -> Vec<u8> {
    [
        h2_head(stream, b"text/event-stream"),
        frame(
            DATA,
            END_STREAM,
            stream,
            b"retry: 18446744073709551616\ndata: after\n\n",
        ),
    ]
    .concat()
}

/// The first stream of each connection: an NDJSON line that never ends, 16 KiB a frame.
fn endless_ndjson_line(mut conn: Conn) {
    if !h2::handshake(&mut conn, &[]) {
        return;
    }
    while let Some(stream) = h2::next_request(&mut conn) {
        if !conn.send(&h2_head(stream, b"application/x-ndjson")) {
            return;
        }
        // 80 frames of 16 KiB (1.25 MiB, past the 1 MiB limit), within the stream's and the
        // connection's windows; the next request's stream gets the same.
        for _ in 0..80 {
            if !conn.send(&frame(DATA, 0, stream, &[b'{'; 16 * 1024])) {
                return;
            }
        }
    }
}

cases! {
    sse_data_line_of_a_gigabyte => Case {
        server: Script(data_line_of_a_gigabyte),
        args: &["--h1", "-n", "4"],
        expect_kind: &["event_too_large"],
        stderr_has: Some("--max-event-size"),
        under_ulimit: true,
        exactly: Some(Exactly { succeeded: 0, failed: 4, errors: ("event_too_large", 4) }),
        events: Events::Exactly(0),
        ..BASE
    };
    sse_comment_never_ends => Case {
        server: Script(comment_never_ends),
        args: &["--h1", "-n", "4"],
        expect_kind: &["event_too_large"],
        exactly: Some(Exactly { succeeded: 0, failed: 4, errors: ("event_too_large", 4) }),
        events: Events::Exactly(0),
        ..BASE
    };
    ndjson_line_never_ends => Case {
        server: Script(endless_ndjson_line),
        args: &["-n", "4", "-m", "1"],
        expect_kind: &["event_too_large"],
        under_ulimit: true,
        exactly: Some(Exactly { succeeded: 0, failed: 4, errors: ("event_too_large", 4) }),
        events: Events::Exactly(0),
        ..BASE
    };
    sse_never_ends => Case {
        server: Script(never_ends),
        args: &["--h1", "-n", "2"],
        expect_kind: TIMEOUT,
        // Two streams, each 1 s at an event every 10 ms until the request timeout.
        events: Events::AtLeast(20),
        ..BASE
    };
    sse_one_byte_per_second => Case {
        server: Script(one_byte_per_second),
        args: &["--h1", "-n", "2"],
        expect_kind: TIMEOUT,
        events: Events::Exactly(0),
        ..BASE
    };
    sse_retry_of_2_pow_64 => Case {
        server: H2Reply(retry_of_2_pow_64),
        args: &["-n", "20"],
        expect_exit: 0,
        exactly: super::all_succeed(20),
        events: Events::Exactly(20),
        ..BASE
    };
    sse_invalid_utf8 => Case {
        server: H1Reply(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 12\r\n\r\ndata: \xff\xfe\xc3\n\n\n"),
        args: &["--h1", "-n", "20"],
        expect_exit: 0,
        exactly: super::all_succeed(20),
        events: Events::Exactly(20),
        ..BASE
    };
    sse_closed_mid_event => Case {
        server: Script(closed_mid_event),
        args: &["--h1", "-n", "4", "--no-retry"],
        expect_kind: &["closed"],
        exactly: Some(Exactly { succeeded: 0, failed: 4, errors: ("closed", 4) }),
        // The whole event before the cut of each stream; not the half one.
        events: Events::Exactly(4),
        ..BASE
    };
    ndjson_last_line_without_newline => Case {
        server: H1Reply(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nContent-Length: 12\r\n\r\n{\"a\":1}\n{\"b\""),
        args: &["--h1", "-n", "20"],
        expect_exit: 0,
        exactly: super::all_succeed(20),
        events: Events::Exactly(40),
        ..BASE
    };
}
