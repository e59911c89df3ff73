//! A server's words are text: an error text, a `grpc-message`, a proxy's reason phrase, a header
//! value and GOAWAY's debug data shown with `-v`, each carrying a window title (`ESC ] 0 ; … BEL`),
//! a cleared screen (`ESC [ 2 J`) and, where the field can hold one, a newline with a forged line
//! of ours behind it. None of it may reach the terminal raw: each shows escaped, on one line.

use super::server::h2::{self, frame, STATUS_200};
use super::server::{hpack, Behaviour, Conn, Server};
use crate::common::{h2load_rs, Run};
use h2load_rs::testkit::h2::{END_HEADERS, END_STREAM, GOAWAY, HEADERS};

/// What drives a terminal, with no newline (for fields that end at one).
const CONTROL: &[u8] = b"\x1b]0;owned\x07\x1b[2J";
/// The same with a newline and a line that would pass for ours.
const FORGED: &[u8] = b"\x1b]0;owned\x07\x1b[2J\nh2load-rs: forged all fine";
/// What drives a terminal in bytes an HTTP/1.1 reason phrase may hold (obs-text): the C1
/// control CSI in UTF-8 clearing the screen, and a right-to-left override.
const C1_CONTROL: &[u8] = b"\xc2\x9b2J\xe2\x80\xaeowned";
/// Characters that must never reach the terminal raw.
const RAW: [char; 4] = ['\x1b', '\x07', '\u{9b}', '\u{202e}'];

/// Holds `run`'s stdout and stderr to the rule: none of [`RAW`] and no forged line, and the
/// escaped form of the words, `escaped`, is there (they were shown, not dropped; or the words
/// of ours around them, where they are dropped).
fn shown_as_text(case: &str, run: &Run, escaped: &str) {
    let output = format!("{}{}", run.output.stdout, run.output.stderr);
    assert!(
        !output.contains(RAW),
        "{case}: raw control characters reach the terminal:\n{output}"
    );
    assert!(
        !output
            .lines()
            .any(|line| line.starts_with("h2load-rs: forged")),
        "{case}: a forged line starts a line:\n{output}"
    );
    assert!(
        output.contains(escaped),
        "{case}: the words are shown, escaped ({escaped}):\n{output}"
    );
}

/// Every call fails with `grpc-status: 13` and a percent-encoded `grpc-message` of [`FORGED`].
fn grpc_forged_message(stream: u32) -> Vec<u8> {
    let encoded: String = FORGED
        .iter()
        .map(|&byte| match byte {
            b' '..=b'~' if byte != b'%' => char::from(byte).to_string(),
            _ => format!("%{byte:02X}"),
        })
        .collect();
    let head = [
        STATUS_200,
        &hpack::literal(b"content-type", b"application/grpc"),
        &hpack::literal(b"grpc-status", b"13"),
        &hpack::literal(b"grpc-message", encoded.as_bytes()),
    ]
    .concat();
    frame(HEADERS, END_HEADERS | END_STREAM, stream, &head)
}

/// Answers the first request, then says GOAWAY with [`FORGED`] as its debug data.
fn goaway_forged(mut conn: Conn) {
    if !h2::handshake(&mut conn, &[]) {
        return;
    }
    if let Some(stream) = h2::next_request(&mut conn) {
        let goaway = [&stream.to_be_bytes()[..], &[0, 0, 0, 0], FORGED].concat();
        if conn.send(&h2::ok(stream)) && conn.send(&frame(GOAWAY, 0, 0, &goaway)) {
            conn.discard_until_closed();
        }
    }
}

/// Answers every HTTP/1.1 request with a header whose value is [`CONTROL`].
fn h1_control_header(conn: Conn) {
    let reply = [
        &b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nx-note: "[..],
        CONTROL,
        b"\r\n\r\nok",
    ]
    .concat();
    super::server::answer_each_h1(conn, &reply);
}

/// A proxy that refuses CONNECT with [`C1_CONTROL`] as its reason phrase.
fn proxy_control_reason(mut conn: Conn) {
    if conn.read_h1_head() {
        let reply = [
            &b"HTTP/1.1 403 "[..],
            C1_CONTROL,
            b"\r\ncontent-length: 0\r\n\r\n",
        ]
        .concat();
        conn.send(&reply);
        conn.close_gracefully();
    }
}

#[test]
fn a_grpc_message_shows_as_text() {
    let server = Server::start(Behaviour::H2Reply(grpc_forged_message));
    let url = format!("http://{}", server.addr);
    let run = h2load_rs(&["--grpc", "/h2loadrs.hostile.Svc/Call", "-n", "3", &url]);
    assert_eq!(run.output.code, 1, "{}", run.output.stderr);
    assert_eq!(run.int("requests/failed"), 3);
    shown_as_text(
        "grpc-message",
        &run,
        r"\u{1b}]0;owned\u{7}\u{1b}[2J\nh2load-rs: forged",
    );
}

#[test]
fn goaway_debug_data_shows_as_text_in_the_trace() {
    let server = Server::start(Behaviour::Script(goaway_forged));
    let url = format!("http://{}", server.addr);
    let run = h2load_rs(&["--proto", "h2c", "-v", "-n", "1", &url]);
    assert_eq!(run.int("requests/succeeded"), 1, "{}", run.output.stderr);
    shown_as_text(
        "GOAWAY debug data with -v",
        &run,
        r"\u{1b}]0;owned\u{7}\u{1b}[2J\nh2load-rs: forged",
    );
}

/// Control characters are not allowed in a field value (RFC 9110 §5.5): the response is a
/// protocol error, and the trace shows the head it refused as text.
#[test]
fn a_header_value_shows_as_text_in_the_trace() {
    let server = Server::start(Behaviour::Script(h1_control_header));
    let url = format!("http://{}", server.addr);
    let run = h2load_rs(&["--h1", "-v", "-n", "2", &url]);
    assert_eq!(run.int("errors/protocol"), 2, "{}", run.output.stderr);
    shown_as_text(
        "a header value with -v",
        &run,
        r"x-note: \u{1b}]0;owned\u{7}\u{1b}[2J",
    );
}

#[test]
fn a_proxy_s_reason_phrase_shows_as_text() {
    let proxy = Server::start(Behaviour::Script(proxy_control_reason));
    let proxy_url = format!("http://{}", proxy.addr);
    // Never reached: the proxy refuses the tunnel.
    let run = h2load_rs(&["--proxy", &proxy_url, "-n", "2", "http://127.0.0.1:9/"]);
    assert_eq!(run.output.code, 1, "{}", run.output.stderr);
    // httparse gives no reason phrase that holds obs-text: the words are dropped, not shown.
    shown_as_text(
        "a proxy's reason phrase",
        &run,
        "proxy answered 403 to CONNECT",
    );
}

/// A report file is no more to be trusted than a server: its first error and its cause set to
/// [`FORGED`] show as text in what `merge` prints of it.
#[test]
fn a_report_file_s_words_show_as_text_in_merge() {
    let server = Server::start(Behaviour::H1Reply(
        b"HTTP/1.1 200 OK\r\ncontent-length: abc\r\n\r\n",
    ));
    let url = format!("http://{}", server.addr);
    let run = h2load_rs(&["--h1", "-n", "3", &url]);
    assert_eq!(run.int("errors/protocol"), 3, "{}", run.output.stderr);
    let mut report = run.json.clone();
    let forged = String::from_utf8_lossy(FORGED);
    report["cells"][0]["first_error"] = forged.clone().into();
    report["cells"][0]["cause"]["text"] = forged.into();
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("forged.json");
    std::fs::write(&path, serde_json::to_vec(&report).expect("JSON")).expect("written");
    let path = path.to_str().expect("UTF-8 path");
    let merged = crate::common::run_command(env!("CARGO_BIN_EXE_h2load-rs"), &["merge", path]);
    let merged = Run {
        output: merged,
        json: serde_json::Value::Null,
    };
    assert_eq!(merged.output.code, 0, "{}", merged.output.stderr);
    shown_as_text(
        "a report's first error in merge",
        &merged,
        r"\u{1b}]0;owned\u{7}\u{1b}[2J\nh2load-rs: forged",
    );
}
