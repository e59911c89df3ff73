//! Sessions on a scripted clock (`converse_scripted`), as quinn-proto's tests drive a connection:
//! the server's bytes arrive at t0 plus chosen offsets, and the durations the recorder keeps are
//! exactly the script's differences: a response's latency (send to last byte), its time to first
//! byte, and for gRPC the time to the first message and a message's round trip. The offsets stay
//! under 2048 µs, where a histogram of 3 significant digits holds every microsecond exactly.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::plan::Protocol;
use crate::proto::h2 as frame;
use crate::session::testing::{converse_scripted, literal, message, world, Server};

fn us(micros: u64) -> Duration {
    Duration::from_micros(micros)
}

/// The values `histogram` holds, lowest first, each with its count.
fn values(histogram: &Histogram<u64>) -> Vec<(u64, u64)> {
    (histogram.iter_recorded())
        .map(|value| (value.value_iterated_to(), value.count_at_value()))
        .collect()
}

#[test]
fn an_http1_response_times_are_the_scripts() {
    let world = world(&["-n", "2", "-m", "1"]);
    let t0 = Instant::now();
    // The first response: its head at +300 µs, its body at +1100 µs; the second request goes
    // then, and its response arrives whole at +1900 µs.
    let head = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n".as_slice();
    let whole = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody".as_slice();
    let outcome = converse_scripted(
        &world,
        Protocol::Http1,
        t0,
        &[(us(300), head), (us(1100), b"body"), (us(1900), whole)],
    );
    assert_eq!(outcome.failure, None);
    assert_eq!(outcome.counters.succeeded, 2);
    let recorder = world.shared.recorder.borrow();
    assert_eq!(
        values(&recorder.request),
        [(800, 1), (1100, 1)],
        "+1100 − 0 and +1900 − 1100"
    );
    assert_eq!(
        values(&recorder.ttfb),
        [(300, 1), (800, 1)],
        "+300 − 0 and +1900 − 1100"
    );
}

#[test]
fn an_h2_response_is_timed_from_the_send_the_servers_settings_allowed() {
    let world = world(&["-n", "1"]);
    let t0 = Instant::now();
    // Requests wait for the server's SETTINGS (+200 µs): the request goes then, its headers come
    // at +700 µs and its body at +1500 µs.
    let settings = Server::default().settings(&[]).0;
    let headers = Server::default().ok(1, false).0;
    let body = Server::default().data(1, b"body", true).0;
    let outcome = converse_scripted(
        &world,
        Protocol::H2c,
        t0,
        &[(us(200), &settings), (us(700), &headers), (us(1500), &body)],
    );
    assert_eq!(outcome.failure, None);
    assert_eq!(outcome.counters.succeeded, 1);
    let recorder = world.shared.recorder.borrow();
    assert_eq!(values(&recorder.request), [(1300, 1)], "+1500 − 200");
    assert_eq!(values(&recorder.ttfb), [(500, 1)], "+700 − 200");
}

#[test]
fn a_grpc_call_times_its_first_message_and_its_round_trips() {
    let argv = [
        "--grpc",
        "/t.S/M",
        "--grpc-shape",
        "bidi",
        "--grpc-stream-messages",
        "2",
        "-n",
        "1",
    ];
    let world = world(&argv);
    let t0 = Instant::now();
    let settings = Server::default().settings(&[]).0;
    let headers = [vec![0x88], literal("content-type", b"application/grpc")].concat();
    let head = Server::default()
        .frame(frame::HEADERS, frame::END_HEADERS, 1, &headers)
        .0;
    let reply = Server::default().data(1, &message(b"hi"), false).0;
    let trailers = Server::default()
        .frame(
            frame::HEADERS,
            frame::END_HEADERS | frame::END_STREAM,
            1,
            &literal("grpc-status", b"0"),
        )
        .0;
    // The call opens at +100 µs (the server's SETTINGS) with its first message; the reply to it
    // comes at +600 µs, and the second message leaves then; its reply comes at +1000 µs, and the
    // call ends at +1400 µs.
    let outcome = converse_scripted(
        &world,
        Protocol::H2c,
        t0,
        &[
            (us(100), &settings),
            (us(300), &head),
            (us(600), &reply),
            (us(1000), &reply),
            (us(1400), &trailers),
        ],
    );
    assert_eq!(outcome.failure, None);
    assert_eq!(outcome.counters.succeeded, 1);
    let recorder = world.shared.recorder.borrow();
    assert_eq!(recorder.messages.sent.messages, 2);
    assert_eq!(recorder.messages.received.messages, 2);
    assert_eq!(values(&recorder.request), [(1300, 1)], "+1400 − 100");
    assert_eq!(values(&recorder.ttfb), [(200, 1)], "+300 − 100");
    let first = recorder
        .messages
        .first_message
        .as_ref()
        .expect("a first message");
    assert_eq!(values(first), [(500, 1)], "+600 − 100");
    let round_trips = recorder.messages.round_trip.as_ref().expect("round trips");
    assert_eq!(
        values(round_trips),
        [(400, 1), (500, 1)],
        "+1000 − 600 and +600 − 100"
    );
}

#[test]
fn an_http1_event_stream_times_each_event_from_the_send_split_anywhere() {
    let world = world(&["-n", "1"]);
    let t0 = Instant::now();
    // The head at +200 µs; an event split across two reads (+400 µs, +450 µs: it completes at
    // +450), one at +950 µs and one at +1650 µs whose data line comes in the same read as the
    // chunk that ends the body. Gaps: 500 and 700 µs; data bytes 1 + 1 + 2.
    let head =
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
    let outcome = converse_scripted(
        &world,
        Protocol::Http1,
        t0,
        &[
            (us(200), head.as_slice()),
            (us(400), b"5\r\ndata:\r\n"),
            (us(450), b"4\r\n 1\n\n\r\n"),
            (us(950), b"9\r\ndata: 2\n\n\r\n"),
            (us(1650), b"a\r\ndata: 34\n\n\r\n0\r\n\r\n"),
        ],
    );
    assert_eq!(outcome.failure, None);
    assert_eq!(outcome.counters.succeeded, 1);
    let recorder = world.shared.recorder.borrow();
    let messages = &recorder.messages;
    assert_eq!(messages.streams, 1);
    assert_eq!(messages.arrived(), 3);
    assert_eq!(
        (messages.received.messages, messages.received.message_bytes),
        (3, 4)
    );
    let first = messages.first_message.as_ref().expect("a first event");
    assert_eq!(values(first), [(450, 1)], "+450 − 0");
    let gaps = messages.gaps.as_ref().expect("gaps");
    assert_eq!(values(gaps), [(500, 1), (700, 1)]);
}

#[test]
fn an_h2_event_stream_times_its_events_and_a_too_long_line_fails_only_its_stream() {
    let world = world(&["-n", "2", "-m", "2", "--max-event-size", "16"]);
    let t0 = Instant::now();
    let settings = Server::default().settings(&[]).0;
    let head = |stream| {
        let headers = [vec![0x88], literal("content-type", b"application/x-ndjson")].concat();
        Server::default()
            .frame(frame::HEADERS, frame::END_HEADERS, stream, &headers)
            .0
    };
    // Stream 1: NDJSON lines at +500 and +800 µs, the last one without its newline, ended at
    // +1200 µs (an event then). Stream 3: a line longer than 16 bytes: reset, event_too_large.
    let outcome = converse_scripted(
        &world,
        Protocol::H2c,
        t0,
        &[
            (us(100), &settings),
            (us(300), &[head(1), head(3)].concat()),
            (us(500), &Server::default().data(1, b"{\"a\":1}\n", false).0),
            (
                us(800),
                &Server::default().data(1, b"{\"b\":2}\n{", false).0,
            ),
            (us(900), &Server::default().data(3, &[b'x'; 17], false).0),
            (us(1200), &Server::default().data(1, b"}", true).0),
        ],
    );
    assert_eq!(outcome.failure, None);
    assert_eq!(outcome.counters.succeeded, 1);
    assert_eq!(
        outcome.errors,
        [(crate::recorder::ErrorKind::EventTooLarge, 1)]
    );
    let recorder = world.shared.recorder.borrow();
    let messages = &recorder.messages;
    assert_eq!((messages.streams, messages.arrived()), (2, 3));
    assert_eq!(messages.received.message_bytes, 7 + 7 + 2);
    let first = messages.first_message.as_ref().expect("a first event");
    assert_eq!(values(first), [(400, 1)], "+500 − 100");
    let gaps = messages.gaps.as_ref().expect("gaps");
    assert_eq!(values(gaps), [(300, 1), (400, 1)]);
}
