//! Hostile reflection services (`--grpc-reflect`): answers too big, too many, too slow or without
//! end. There is no report (the schema never arrives): each run must end within its bound, under
//! the suite's RSS limit, with exit 1 and the one line naming why.

use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use super::grpc::prefix_split_forever;
use super::server::h2::{self, frame, DATA, END_HEADERS, END_STREAM, HEADERS, STATUS_200};
use super::server::{hpack, Behaviour, Conn, Server};
use super::{watch, BIN, RSS_LIMIT_KB};

/// What every failed run says before its cause.
const FAILED: &str =
    "h2load-rs: --grpc-reflect: cannot read t.S's schema from the server's reflection service: ";

/// Runs `--grpc-reflect` with `--request-timeout request_timeout` against a server scripted as
/// `script`; the run must end within `max_secs` (the harness kills it at 15 s), exit 1, and print
/// one line, `FAILED` + a cause `cause` accepts.
fn run(
    name: &str,
    script: fn(Conn),
    request_timeout: &str,
    max_secs: u64,
    cause: impl Fn(&str) -> bool,
) {
    let server = Server::start(Behaviour::Script(script));
    let mut command = Command::new(BIN);
    command
        .args(["--grpc", "/t.S/Do", "--grpc-reflect", "-n", "1", "-c", "1"])
        .args([
            "--connect-timeout",
            "1s",
            "--request-timeout",
            request_timeout,
        ])
        .arg(format!("http://{}/", server.addr))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let outcome = watch(command);
    let summary = format!(
        "{name}: exit {:?}{} in {:.1} s, peak RSS {} MB; stderr: {:?}",
        outcome.status.code(),
        if outcome.killed { " (killed)" } else { "" },
        outcome.wall.as_secs_f64(),
        outcome.peak_rss_kb / 1024,
        outcome.stderr
    );
    eprintln!("{summary}");
    let line = outcome.stderr.strip_suffix('\n').unwrap_or(&outcome.stderr);
    assert!(!outcome.killed, "{summary}");
    assert!(outcome.wall < Duration::from_secs(max_secs), "{summary}");
    assert!(outcome.peak_rss_kb < RSS_LIMIT_KB, "{summary}");
    assert_eq!(outcome.status.code(), Some(1), "{summary}");
    assert!(
        !line.contains('\n') && line.strip_prefix(FAILED).is_some_and(&cause),
        "{summary}"
    );
}

/// A protobuf length-delimited field.
fn field(tag: u8, bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![tag << 3 | 2];
    let mut len = bytes.len();
    while len >= 0x80 {
        out.push(len as u8 | 0x80);
        len >>= 7;
    }
    out.push(len as u8);
    out.extend_from_slice(bytes);
    out
}

/// A `FileDescriptorProto`: its name, the files it imports and a package name of `padding` bytes.
fn file(name: &str, imports: impl Iterator<Item = String>, padding: usize) -> Vec<u8> {
    let mut out = field(1, name.as_bytes());
    out.extend(field(2, &vec![b'p'; padding]));
    for import in imports {
        out.extend(field(3, import.as_bytes()));
    }
    out
}

/// One `ServerReflectionResponse` holding `files`, with its gRPC prefix.
fn answer(files: &[Vec<u8>]) -> Vec<u8> {
    let list: Vec<u8> = files.iter().flat_map(|file| field(1, file)).collect();
    let message = field(4, &list);
    [&[0][..], &(message.len() as u32).to_be_bytes(), &message].concat()
}

/// Headers, `body` in DATA frames of at most 16 KiB, and `grpc-status: 0`, on `stream`.
fn respond(conn: &mut Conn, stream: u32, body: &[u8]) -> bool {
    let headers = [
        STATUS_200,
        &hpack::literal(b"content-type", b"application/grpc"),
    ]
    .concat();
    conn.send(&frame(HEADERS, END_HEADERS, stream, &headers))
        && body
            .chunks(16 * 1024)
            .all(|chunk| conn.send(&frame(DATA, 0, stream, chunk)))
        && conn.send(&frame(
            HEADERS,
            END_HEADERS | END_STREAM,
            stream,
            &hpack::literal(b"grpc-status", b"0"),
        ))
}

/// Every question answered with `body`.
fn answer_each(mut conn: Conn, body: &[u8]) {
    if !h2::handshake(&mut conn, &[]) {
        return;
    }
    while let Some(stream) = h2::next_request(&mut conn) {
        if !respond(&mut conn, stream, body) {
            return;
        }
    }
}

/// 200,000 files in one answer (3 MB), made once (before the run: making it takes a while).
fn many_files_body() -> &'static [u8] {
    static BODY: OnceLock<Vec<u8>> = OnceLock::new();
    BODY.get_or_init(|| {
        let files: Vec<Vec<u8>> = (0..200_000)
            .map(|i| file(&format!("f{i}.proto"), std::iter::empty(), 0))
            .collect();
        answer(&files)
    })
}

fn many_files(conn: Conn) {
    answer_each(conn, many_files_body());
}

/// One file importing 1,000,000 others (15 MB), made once.
fn many_imports_body() -> &'static [u8] {
    static BODY: OnceLock<Vec<u8>> = OnceLock::new();
    BODY.get_or_init(|| {
        let imports = (0..1_000_000).map(|i| format!("d{i}.proto"));
        answer(&[file("a.proto", imports, 0)])
    })
}

fn many_imports(conn: Conn) {
    answer_each(conn, many_imports_body());
}

/// Every question answered with a new 1 MiB file that imports another new one, without end.
fn endless_imports(mut conn: Conn) {
    if !h2::handshake(&mut conn, &[]) {
        return;
    }
    let mut next = 0;
    while let Some(stream) = h2::next_request(&mut conn) {
        let imports = std::iter::once(format!("g{}.proto", next + 1));
        let body = answer(&[file(&format!("g{next}.proto"), imports, 1 << 20)]);
        next += 1;
        if !respond(&mut conn, stream, &body) {
            return;
        }
    }
}

#[test]
fn reflect_200000_files_in_one_answer() {
    many_files_body();
    run(
        "reflect_200000_files_in_one_answer",
        many_files,
        "5s",
        8,
        |cause| cause == "more than 1000 files",
    );
}

#[test]
fn reflect_a_million_imports() {
    many_imports_body();
    run(
        "reflect_a_million_imports",
        many_imports,
        "5s",
        8,
        |cause| cause == "the files name more than 10000 imports",
    );
}

#[test]
fn reflect_endless_imports_of_1_mib() {
    run(
        "reflect_endless_imports_of_1_mib",
        endless_imports,
        "5s",
        8,
        |cause| cause == "the answers hold more than 16 MiB",
    );
}

/// The deadline is `--connect-timeout` + `--request-timeout` (2 s), and the line says how long it
/// waited: at least that, and (on a busy machine) well under the harness's bound.
#[test]
fn reflect_trickled_answer() {
    run(
        "reflect_trickled_answer",
        prefix_split_forever,
        "1s",
        8,
        |cause| {
            let waited = cause
                .strip_prefix("no complete answer within ")
                .and_then(|rest| rest.strip_suffix(" s"))
                .and_then(|seconds| seconds.parse::<f64>().ok());
            waited.is_some_and(|seconds| (2.0..6.0).contains(&seconds))
        },
    );
}
