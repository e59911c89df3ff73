//! Hostile gRPC servers: responses that break gRPC's framing or never end, each
//! with the error kind, the bounds of time and memory, and the exact counts it must give.

use super::server::h2::{self, frame, STATUS_200};
use super::server::{hpack, Behaviour, Conn};
use super::{run, Case, Exactly, BASE, TIMEOUT};
use h2load_rs::testkit::h2::{DATA, END_HEADERS, END_STREAM, HEADERS};
use std::time::Duration;

use Behaviour::{H2Reply, Script};

/// The load every case throws: 20 unary calls (on top of the harness's two connections and 1 s
/// request timeout).
const CALLS: &[&str] = &["--grpc", "/h2loadrs.hostile.Svc/Call", "-n", "20"];
/// Fewer calls for servers that hold each one until the request timeout.
const HELD_CALLS: &[&str] = &["--grpc", "/h2loadrs.hostile.Svc/Call", "-n", "4"];

/// `:status: 200` and `content-type: application/grpc`.
fn grpc_headers() -> Vec<u8> {
    [
        STATUS_200,
        &hpack::literal(b"content-type", b"application/grpc"),
    ]
    .concat()
}

/// The response headers of `stream`, not ending it.
fn headers(stream: u32) -> Vec<u8> {
    frame(HEADERS, END_HEADERS, stream, &grpc_headers())
}

/// Trailers with `grpc-status: code` (and nothing else when `code` is `None`), ending `stream`.
fn trailers(stream: u32, code: Option<&[u8]>) -> Vec<u8> {
    let block = match code {
        Some(code) => hpack::literal(b"grpc-status", code),
        None => hpack::literal(b"grpc-message", b"no status here"),
    };
    frame(HEADERS, END_HEADERS | END_STREAM, stream, &block)
}

/// A message with its 5-byte prefix (flag 0).
fn message(bytes: &[u8]) -> Vec<u8> {
    [&[0][..], &(bytes.len() as u32).to_be_bytes(), bytes].concat()
}

/// A well-formed answer, its one message split over three DATA frames.
fn ok_split(stream: u32) -> Vec<u8> {
    let whole = message(b"hello there");
    [
        headers(stream),
        frame(DATA, 0, stream, &whole[..3]),
        frame(DATA, 0, stream, &whole[3..7]),
        frame(DATA, 0, stream, &whole[7..]),
        trailers(stream, Some(b"0")),
    ]
    .concat()
}

fn status_missing(stream: u32) -> Vec<u8> {
    [
        headers(stream),
        frame(DATA, 0, stream, &message(b"hi")),
        trailers(stream, None),
    ]
    .concat()
}

/// A Trailers-Only response: one header section with the status and a percent-encoded
/// `grpc-message`, ending the stream.
fn trailers_only_not_found(stream: u32) -> Vec<u8> {
    let block = [
        grpc_headers(),
        hpack::literal(b"grpc-status", b"5"),
        hpack::literal(b"grpc-message", b"no caf%C3%A9 at 100%25"),
    ]
    .concat();
    frame(HEADERS, END_HEADERS | END_STREAM, stream, &block)
}

/// A 503 without `grpc-status`: the call counts as UNAVAILABLE.
fn http_503(stream: u32) -> Vec<u8> {
    frame(
        HEADERS,
        END_HEADERS | END_STREAM,
        stream,
        &hpack::literal_indexed_name(hpack::STATUS, b"503"),
    )
}

/// A 200 with one message and `grpc-status: 0`, but no `content-type`: grpc-go's client fails
/// it as UNKNOWN ("malformed header: missing HTTP content-type").
fn ok_without_content_type(stream: u32) -> Vec<u8> {
    [
        frame(HEADERS, END_HEADERS, stream, STATUS_200),
        frame(DATA, 0, stream, &message(b"hi")),
        trailers(stream, Some(b"0")),
    ]
    .concat()
}

/// The same with `content-type: text/html`: not gRPC's either, UNKNOWN.
fn ok_with_html_content_type(stream: u32) -> Vec<u8> {
    let block = [STATUS_200, &hpack::literal(b"content-type", b"text/html")].concat();
    [
        frame(HEADERS, END_HEADERS, stream, &block),
        frame(DATA, 0, stream, &message(b"hi")),
        trailers(stream, Some(b"0")),
    ]
    .concat()
}

/// A Trailers-Only answer of HTTP status `status` (three digits), gRPC's `content-type` and
/// `grpc-status: 0`: the HTTP status decides, whatever the `grpc-status` says.
fn status_with_grpc_ok(stream: u32, status: &[u8]) -> Vec<u8> {
    let block = [
        hpack::literal_indexed_name(hpack::STATUS, status),
        hpack::literal(b"content-type", b"application/grpc"),
        hpack::literal(b"grpc-status", b"0"),
        hpack::literal(b"grpc-message", b"all is well"),
    ]
    .concat();
    frame(HEADERS, END_HEADERS | END_STREAM, stream, &block)
}

fn http_503_with_grpc_ok(stream: u32) -> Vec<u8> {
    status_with_grpc_ok(stream, b"503")
}

fn http_404_with_grpc_ok(stream: u32) -> Vec<u8> {
    status_with_grpc_ok(stream, b"404")
}

fn http_401_with_grpc_ok(stream: u32) -> Vec<u8> {
    status_with_grpc_ok(stream, b"401")
}

/// A proxy's error page: HTTP status `status`, `content-type: text/html` and an HTML body
/// (whose `<` would be a compressed flag of 60 if read as gRPC messages).
fn proxy_html(stream: u32, status: &[u8]) -> Vec<u8> {
    let block = [
        hpack::literal_indexed_name(hpack::STATUS, status),
        hpack::literal(b"content-type", b"text/html"),
    ]
    .concat();
    [
        frame(HEADERS, END_HEADERS, stream, &block),
        frame(
            DATA,
            END_STREAM,
            stream,
            b"<html><body><h1>502 Bad Gateway</h1></body></html>",
        ),
    ]
    .concat()
}

fn proxy_502_html(stream: u32) -> Vec<u8> {
    proxy_html(stream, b"502")
}

fn proxy_503_html(stream: u32) -> Vec<u8> {
    proxy_html(stream, b"503")
}

/// A prefix announcing a message of 4 GiB - 1, then a little of it.
fn length_4gb(stream: u32) -> Vec<u8> {
    [
        headers(stream),
        frame(DATA, 0, stream, &[0, 0xff, 0xff, 0xff, 0xff, b'x', b'x']),
    ]
    .concat()
}

/// Headers, one DATA frame of `body` (a message with a prefix of its own), then OK.
fn one_frame_then_ok(stream: u32, body: &[u8]) -> Vec<u8> {
    [
        headers(stream),
        frame(DATA, 0, stream, body),
        trailers(stream, Some(b"0")),
    ]
    .concat()
}

/// A message flagged compressed (1) in a response without `grpc-encoding`.
fn compressed_without_encoding(stream: u32) -> Vec<u8> {
    one_frame_then_ok(stream, &[1, 0, 0, 0, 2, 0x78, 0x9c])
}

/// A compressed flag of 2, which does not exist.
fn flag_two(stream: u32) -> Vec<u8> {
    one_frame_then_ok(stream, &[2, 0, 0, 0, 1, b'x'])
}

/// Two messages in one DATA frame, then OK: a unary call has exactly one.
fn two_messages(stream: u32) -> Vec<u8> {
    one_frame_then_ok(stream, &[message(b"one"), message(b"two")].concat())
}

/// The stream ends three bytes into a ten-byte message.
fn cut_message(stream: u32) -> Vec<u8> {
    [
        headers(stream),
        frame(
            DATA,
            END_STREAM,
            stream,
            &[0, 0, 0, 0, 10, b'a', b'b', b'c'],
        ),
    ]
    .concat()
}

/// A message and no trailers: the stream never ends.
fn no_trailers(stream: u32) -> Vec<u8> {
    [headers(stream), frame(DATA, 0, stream, &message(b"hi"))].concat()
}

/// The handshake, the connection's first call, and its response headers: the call's stream id,
/// or `None` once the client has gone.
fn answer_first_call(conn: &mut Conn) -> Option<u32> {
    if !h2::handshake(conn, &[]) {
        return None;
    }
    let stream = h2::next_request(conn)?;
    conn.send(&headers(stream)).then_some(stream)
}

/// Each call: headers, then a prefix and message one byte per DATA frame, every 5 ms, forever
/// (the prefix announces 1 MiB, so the message never completes within the run).
pub(super) fn prefix_split_forever(mut conn: Conn) {
    let Some(stream) = answer_first_call(&mut conn) else {
        return;
    };
    let prefix = [0u8, 0, 0x10, 0, 0];
    for byte in prefix.into_iter().chain(std::iter::repeat(b'x')) {
        if !conn.send(&frame(DATA, 0, stream, &[byte])) {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Each call: headers, then 1 KiB messages as fast as the client reads, forever.
fn endless_stream(mut conn: Conn) {
    let Some(stream) = answer_first_call(&mut conn) else {
        return;
    };
    let batch = frame(DATA, 0, stream, &message(&[b'x'; 1024]).repeat(15));
    // The client's windows stop this unless it reads, which it does; the run's request timeout
    // ends the call, and the send fails once the client closes.
    while conn.send(&batch) {}
}

/// Each connection: the handshake, then every byte the client sends read and nothing answered.
fn silent_after_handshake(mut conn: Conn) {
    if h2::handshake(&mut conn, &[]) {
        conn.discard_until_closed();
    }
}

/// All 20 calls failed with no error kind (`grpc_framing`, say): each ended with a status not OK.
const NOT_OK: Option<Exactly> = Some(Exactly {
    succeeded: 0,
    failed: 20,
    errors: ("grpc_framing", 0),
});

/// Exactly `n` calls failed with `kind`, none succeeded.
const fn each_failed(n: u64, kind: &'static str) -> Option<Exactly> {
    Some(Exactly {
        succeeded: 0,
        failed: n,
        errors: (kind, n),
    })
}

cases! {
    grpc_well_formed_split_message => Case {
        server: H2Reply(ok_split),
        args: CALLS,
        expect_exit: 0,
        exactly: super::all_succeed(20),
        grpc_statuses: &[("OK", 20)],
        ..BASE
    };
    grpc_status_missing => Case {
        server: H2Reply(status_missing),
        args: CALLS,
        expect_kind: &["grpc_status_missing"],
        exactly: each_failed(20, "grpc_status_missing"),
        ..BASE
    };
    grpc_trailers_only => Case {
        server: H2Reply(trailers_only_not_found),
        args: CALLS,
        // A status other than OK fails the call, as no error: no kind is counted.
        exactly: Some(Exactly { succeeded: 0, failed: 20, errors: ("grpc_status_missing", 0) }),
        grpc_statuses: &[("NOT_FOUND", 20)],
        grpc_message: Some("no café at 100%"),
        ..BASE
    };
    grpc_http_503_without_status => Case {
        server: H2Reply(http_503),
        args: CALLS,
        grpc_statuses: &[("UNAVAILABLE", 20)],
        ..BASE
    };
    grpc_ok_without_content_type => Case {
        server: H2Reply(ok_without_content_type),
        args: CALLS,
        exactly: NOT_OK,
        grpc_statuses: &[("OK", 0), ("UNKNOWN", 20)],
        ..BASE
    };
    grpc_ok_with_html_content_type => Case {
        server: H2Reply(ok_with_html_content_type),
        args: CALLS,
        exactly: NOT_OK,
        grpc_statuses: &[("OK", 0), ("UNKNOWN", 20)],
        ..BASE
    };
    // The HTTP status decides; the grpc-message of a response that is not gRPC's is not kept.
    grpc_http_503_with_status_ok => Case {
        server: H2Reply(http_503_with_grpc_ok),
        args: CALLS,
        exactly: NOT_OK,
        grpc_statuses: &[("OK", 0), ("UNAVAILABLE", 20)],
        ..BASE
    };
    grpc_http_404_with_status_ok => Case {
        server: H2Reply(http_404_with_grpc_ok),
        args: CALLS,
        exactly: NOT_OK,
        grpc_statuses: &[("OK", 0), ("UNIMPLEMENTED", 20)],
        ..BASE
    };
    grpc_http_401_with_status_ok => Case {
        server: H2Reply(http_401_with_grpc_ok),
        args: CALLS,
        exactly: NOT_OK,
        grpc_statuses: &[("OK", 0), ("UNAUTHENTICATED", 20)],
        ..BASE
    };
    grpc_proxy_502_html => Case {
        server: H2Reply(proxy_502_html),
        args: CALLS,
        exactly: NOT_OK,
        grpc_statuses: &[("UNAVAILABLE", 20)],
        ..BASE
    };
    grpc_proxy_503_html => Case {
        server: H2Reply(proxy_503_html),
        args: CALLS,
        exactly: NOT_OK,
        grpc_statuses: &[("UNAVAILABLE", 20)],
        ..BASE
    };
    grpc_length_prefix_4gb => Case {
        server: H2Reply(length_4gb),
        args: CALLS,
        expect_kind: &["grpc_too_large"],
        exactly: each_failed(20, "grpc_too_large"),
        under_ulimit: true,
        ..BASE
    };
    grpc_compressed_without_encoding => Case {
        server: H2Reply(compressed_without_encoding),
        args: CALLS,
        expect_kind: &["grpc_compressed"],
        exactly: each_failed(20, "grpc_compressed"),
        ..BASE
    };
    grpc_compressed_flag_two => Case {
        server: H2Reply(flag_two),
        args: CALLS,
        expect_kind: &["grpc_framing"],
        exactly: each_failed(20, "grpc_framing"),
        ..BASE
    };
    grpc_unary_with_two_messages => Case {
        server: H2Reply(two_messages),
        args: CALLS,
        expect_kind: &["grpc_framing"],
        exactly: each_failed(20, "grpc_framing"),
        ..BASE
    };
    grpc_message_cut_by_end_of_stream => Case {
        server: H2Reply(cut_message),
        args: CALLS,
        expect_kind: &["grpc_framing"],
        exactly: each_failed(20, "grpc_framing"),
        ..BASE
    };
    grpc_trailers_never_sent => Case {
        server: H2Reply(no_trailers),
        args: HELD_CALLS,
        expect_kind: TIMEOUT,
        exactly: each_failed(4, "timeout"),
        ..BASE
    };
    grpc_prefix_split_forever => Case {
        server: Script(prefix_split_forever),
        args: HELD_CALLS,
        expect_kind: TIMEOUT,
        exactly: each_failed(4, "timeout"),
        under_ulimit: true,
        ..BASE
    };
    // A bidirectional call sending 5000 messages back to back to a server that never answers:
    // it stops at 1024 replies owed (no busy loop, no unbounded queue), and times out.
    grpc_bidi_never_answered => Case {
        server: Script(silent_after_handshake),
        args: &[
            "--grpc", "/h2loadrs.hostile.Svc/Call", "--grpc-shape", "bidi",
            "--grpc-stream-messages", "5000", "--grpc-stream-interval", "0", "-n", "4",
        ],
        expect_kind: TIMEOUT,
        exactly: each_failed(4, "timeout"),
        under_ulimit: true,
        ..BASE
    };
    grpc_endless_stream => Case {
        server: Script(endless_stream),
        args: HELD_CALLS,
        expect_kind: TIMEOUT,
        exactly: each_failed(4, "timeout"),
        under_ulimit: true,
        ..BASE
    };
}
