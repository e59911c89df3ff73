//! Hostile servers: each case starts a loopback server scripted to misbehave in one way
//! (`server.rs`), runs the built binary against it with a small bounded load, and holds the run to
//! the engines' contract: it ends in bounded time, its peak RSS stays under 100 MB, it exits 1
//! when nothing succeeded and 0 when something did (never a panic), and the JSON report names the
//! expected error kind with counters that add up.
//!
//! README — the cases (behaviour → expected error kind; exit 1 unless noted):
//!
//! | case                               | server behaviour                                      | kind              |
//! |------------------------------------|-------------------------------------------------------|-------------------|
//! | h1_unsolicited_408                 | a `408` right behind each `200` (`--rate 100 -D 2s`)  | protocol, exit 0  |
//! | h1_endless_continue                | `100 Continue` forever                                | protocol/timeout  |
//! | h1_conflicting_content_length      | `Content-Length: 2` and `Content-Length: 5`           | protocol          |
//! | h1_content_length_not_a_number     | `Content-Length: abc`                                 | protocol          |
//! | h1_status_999                      | status 999                                            | protocol          |
//! | h1_bad_status_line                 | `HTP/1.1 200 OK`                                      | protocol          |
//! | h1_slowloris_head                  | head one byte every 200 ms, never finished            | timeout           |
//! | h1_endless_body                    | `Content-Length: 10^12`, bytes forever                | timeout           |
//! | h1_endless_chunked_body            | chunks forever                                        | timeout           |
//! | h1_endless_head                    | header lines forever, never CRLFCRLF                  | protocol          |
//! | h1_thousand_header_lines           | 1000 header lines in one head                         | protocol          |
//! | h1_reset_on_accept                 | TCP RST once the request arrives                      | reset             |
//! | h1_close_on_accept                 | FIN right after accept                                | closed            |
//! | h1_bad_chunk_size                  | chunk size line `zz`                                  | protocol          |
//! | h1_never_answers                   | reads, never answers                                  | timeout           |
//! | h1_close_every_10                  | `Connection: close` on every 10th response (`-m 4`)   | none, retried     |
//! | h1_two_responses_per_request       | two complete `200`s per request (`-m 1`)              | protocol, exit 0  |
//! | h2c_endless_continuation           | HEADERS without END_HEADERS, CONTINUATION forever     | protocol          |
//! | h2c_ping_flood_unread              | PING flood, never reads                               | protocol          |
//! | h2c_settings_flood_unread          | SETTINGS flood, never reads                           | protocol          |
//! | h2c_no_settings                    | reads, never sends SETTINGS                           | connect_timeout   |
//! | h2c_zero_concurrent_streams        | SETTINGS_MAX_CONCURRENT_STREAMS = 0                   | timeout           |
//! | h2c_reset_before_settings          | TCP RST before SETTINGS                               | reset             |
//! | h2c_garbage_instead_of_settings    | bytes that are not a frame                            | protocol          |
//! | h2c_close_on_accept                | FIN right after accept                                | closed            |
//! | h2c_to_tls_alert                   | a TLS alert record                                    | protocol          |
//! | h2c_to_builtin_tls_port            | `h2load-rs serve --tls`                               | protocol          |
//! | h2c_goaway_at_once                 | GOAWAY(0, NO_ERROR) after SETTINGS (`-D 2s`)          | goaway, < 4 s     |
//! | h2c_goaway_every_50                | GOAWAY after every 50th response (`-m 8`)             | none, retried     |
//! | h2c_goaway_every_50_padded         | the same, padded frames, 1000-byte window, 7 streams  | none, retried     |
//! | h2c_goaway_every_50_no_retry       | the same, `--no-retry`                                | goaway, exit 0    |
//! | h2c_hpack_bomb                     | 4 KB dynamic entry referenced 10,000 times            | protocol          |
//! | h2c_window_update_overflow         | WINDOW_UPDATE(0) past 2^31-1                          | protocol          |
//! | h2c_initial_window_too_big         | SETTINGS_INITIAL_WINDOW_SIZE = 2^31                   | protocol          |
//! | h2c_settings_bad_length            | a 5-byte SETTINGS payload                             | protocol          |
//! | h2c_push_promise                   | PUSH_PROMISE before the answer                        | protocol          |
//! | h2c_status_not_a_number            | `:status: abc`                                        | protocol, each    |
//! | h2c_status_missing                 | a header block without `:status`                      | protocol, each    |
//! | h2c_endless_interim                | `:status: 100` blocks forever                         | protocol/timeout  |
//! | h2c_data_past_window               | 1 MB of DATA into a 1023-byte stream window (`-w 10`) | protocol          |
//! | h2c_frame_above_max_frame_size     | a 20,000-byte DATA frame                              | protocol          |
//! | h2c_refused_stream                 | RST_STREAM(REFUSED_STREAM) on every stream            | refused, 60 retried |
//! | h2c_refused_stream_no_retry        | the same, `--no-retry`                                | stream_reset      |
//! | h2c_refuse_every_other_stream      | REFUSED_STREAM on every other stream                  | none, retried     |
//! | h2c_refuse_every_other_stream_paced | the same, `--rate 400 -D 1s`                         | none, retried     |
//! | h2c_internal_error_stream          | RST_STREAM(INTERNAL_ERROR) on every stream            | stream_reset      |
//! | h2c_reset_stream_zero              | RST_STREAM on stream 0                                | protocol          |
//! | h2c_headers_on_even_stream         | HEADERS on stream 2, never promised                   | protocol          |
//! | h2c_data_on_idle_stream            | DATA on an odd stream the client never opened         | protocol          |
//! | h2c_body_shorter_than_length       | `content-length: 10`, 4 bytes of DATA                 | protocol, each    |
//! | h2c_body_longer_than_length        | `content-length: 2`, 4 bytes of DATA                  | protocol, each    |
//! | h2c_upper_case_field_name          | a field named `X-Upper`                               | protocol, each    |
//! | h2c_connection_field               | `connection: keep-alive`                              | protocol, each    |
//! | h2c_transfer_encoding_field        | `transfer-encoding: chunked` (static name)            | protocol, each    |
//! | h2c_line_break_in_value            | `server: a\r\nx-injected: 1`                        | protocol, each    |
//! | h2c_value_with_trailing_space      | `x-padded: "1 "`                                      | protocol, each    |
//! | h2c_pseudo_header_after_field      | `:status` after a regular field                       | protocol, each    |
//! | h2c_two_statuses                   | `:status: 200` and `:status: 204`                     | protocol, each    |
//! | h2c_pseudo_header_in_trailers      | trailers with `:status`                               | protocol, each    |
//! | h2c_data_after_end_stream          | DATA after the END_STREAM of a complete answer (`-m 1`) | protocol per connection, exit 0 |
//! | h2c_interim_then_final             | `103`, then `200` with trailers                       | none, exit 0      |
//! | h2c_length_on_204                  | `204` and `content-length: 10`, no DATA               | none, exit 0      |
//! | h2c_length_on_head                 | `200` and `content-length: 10`, no DATA, to HEAD      | none, exit 0      |
//! | grpc_ok_without_content_type       | `200`, a message, `grpc-status: 0`, no `content-type` | none, 20 `UNKNOWN` |
//! | grpc_ok_with_html_content_type     | the same with `content-type: text/html`               | none, 20 `UNKNOWN` |
//! | grpc_http_503_with_status_ok       | Trailers-Only `503`, gRPC's content-type, status 0    | none, 20 `UNAVAILABLE` |
//! | grpc_http_404_with_status_ok       | the same with `404`                                   | none, 20 `UNIMPLEMENTED` |
//! | grpc_http_401_with_status_ok       | the same with `401`                                   | none, 20 `UNAUTHENTICATED` |
//! | grpc_proxy_502_html                | `502`, `content-type: text/html`, an HTML body        | none, 20 `UNAVAILABLE` |
//! | grpc_proxy_503_html                | the same with `503`                                   | none, 20 `UNAVAILABLE` |
//! | sse_data_line_of_a_gigabyte        | SSE, chunked: one `data:` line of 1 GB, never ended   | event_too_large   |
//! | sse_comment_never_ends             | SSE, close-delimited: a comment line, no newline ever | event_too_large   |
//! | ndjson_line_never_ends             | NDJSON over h2c: one line, no newline ever            | event_too_large, each |
//! | sse_never_ends                     | SSE: an event every 10 ms, forever                    | timeout, events kept |
//! | sse_one_byte_per_second            | SSE: `data: 1` and its empty line, a byte a second    | timeout           |
//! | sse_retry_of_2_pow_64              | `retry: 18446744073709551616`, then an event (h2c)    | none, 20 events   |
//! | sse_invalid_utf8                   | `data:` of bytes that are not UTF-8                   | none, 20 events   |
//! | sse_closed_mid_event               | chunked: an event, half of the next, then FIN         | closed, events kept |
//! | ndjson_last_line_without_newline   | NDJSON, content-length: two lines, the last unended   | none, 40 events   |
//!
//! Reflection services (`reflect.rs`, `--grpc-reflect`): no report is written (the schema never
//! arrives); each run ends within 8 s, under the RSS limit, with exit 1 and one stderr line:
//!
//! | case                               | server behaviour                                      | the line's cause  |
//! |------------------------------------|-------------------------------------------------------|-------------------|
//! | reflect_200000_files_in_one_answer | 200,000 files in one answer                           | more than 1000 files |
//! | reflect_a_million_imports          | one file naming 1,000,000 imports (15 MB)             | more than 10000 imports |
//! | reflect_endless_imports_of_1_mib   | each answer a new 1 MiB file importing another        | more than 16 MiB  |
//! | reflect_trickled_answer            | one byte every 5 ms, never complete                   | no complete answer within 2.0 s |
//!
//! "each": every request fails, and the protocol errors are exactly the requests (a stream
//! error: the connections go on).
//!
//! "retried": every request succeeds, and the report's retried count is exactly the number of
//! requests the server counted as received and never processed.
//!
//! The memory-hungry cases run twice, the second time under `ulimit -v 4000000`.
//! Run: `cargo test --test it hostile::` (add `-- --nocapture` to see every run's summary line).

pub(crate) mod server;

use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use server::scripts;
use server::{Behaviour, Server};

const BIN: &str = env!("CARGO_BIN_EXE_h2load-rs");
/// A run still going after this long is killed and the case fails.
const HARD_LIMIT: Duration = Duration::from_secs(15);
/// How often the child's peak RSS is sampled.
const SAMPLE_EVERY: Duration = Duration::from_millis(20);
/// Peak RSS a run may reach, in kB.
const RSS_LIMIT_KB: u64 = 100 * 1024;
/// Runs the binary (the script's arguments) under a 4 GB address-space limit.
const ULIMIT_V: &str = r#"ulimit -v 4000000; exec "$@""#;
/// Flags every run gets, so that nothing a server does can hold a request for long.
const BOUNDS: [&str; 6] = [
    "-c",
    "2",
    "--connect-timeout",
    "1s",
    "--request-timeout",
    "1s",
];

/// One hostile case: a server, the load thrown at it, and what the run must report.
struct Case {
    /// How the server misbehaves.
    server: Behaviour,
    /// Load and protocol flags (on top of [`BOUNDS`], `--json` and the server's URL).
    args: &'static [&'static str],
    /// The run must count errors of at least one of these kinds.
    expect_kind: &'static [&'static str],
    /// The exit code: 1 when no request succeeded, 0 when some did.
    expect_exit: i32,
    /// Wall-clock bound of the run, in seconds.
    max_secs: u64,
    /// Text stderr must contain.
    stderr_has: Option<&'static str>,
    /// Also run under `ulimit -v` (memory-hungry cases).
    under_ulimit: bool,
    /// What the run must make of the requests the server never processed.
    unprocessed: Unprocessed,
    /// Exact counts the run must report, if the case knows them.
    exactly: Option<Exactly>,
    /// gRPC calls the report must count by `grpc-status` name (`grpc.statuses`), exactly.
    grpc_statuses: &'static [(&'static str, u64)],
    /// Where `grpc_statuses` are named: the text the report must give as the first not-OK
    /// call's `grpc-message` (`grpc.first_status_message.text`), `None` for none.
    grpc_message: Option<&'static str>,
    /// The events the report must count (`events.events`), for event-stream servers.
    events: Events,
}

/// The events a run must count.
#[derive(Clone, Copy)]
enum Events {
    /// Nothing to check.
    Unchecked,
    /// Exactly this many.
    Exactly(u64),
    /// At least this many (a stream cut by a timeout keeps the events it had).
    AtLeast(u64),
}

/// Exact counts of a run: requests succeeded and failed, and errors of one kind.
#[derive(Clone, Copy)]
struct Exactly {
    succeeded: u64,
    failed: u64,
    errors: (&'static str, u64),
}

/// What a run must make of the requests the server received and never processed.
#[derive(Clone, Copy)]
enum Unprocessed {
    /// Nothing to check.
    Unchecked,
    /// Sent again: every request succeeds, nothing fails, and the report's retried total is the
    /// server's count of requests it never processed (above 0).
    Retried,
    /// Sent again this many times in all: each request ran out of retries.
    RetriedTimes(u64),
    /// Failed with this error kind, as many as the server counted, none retried (`--no-retry`).
    Failed(&'static str),
}

/// What most cases expect; each case overrides the rest.
const BASE: Case = Case {
    server: Behaviour::Script(scripts::never_answer),
    args: &[],
    expect_kind: &[],
    expect_exit: 1,
    max_secs: 5,
    stderr_has: None,
    under_ulimit: false,
    unprocessed: Unprocessed::Unchecked,
    exactly: None,
    grpc_statuses: &[],
    grpc_message: None,
    events: Events::Unchecked,
};

/// Every one of `n` requests succeeds, with no protocol error.
const fn all_succeed(n: u64) -> Option<Exactly> {
    Some(Exactly {
        succeeded: n,
        failed: 0,
        errors: ("protocol", 0),
    })
}

/// Every one of `n` requests fails with one protocol error (a malformed response).
const fn each_malformed(n: u64) -> Option<Exactly> {
    Some(Exactly {
        succeeded: 0,
        failed: n,
        errors: ("protocol", n),
    })
}

const PROTOCOL: &[&str] = &["protocol"];
const TIMEOUT: &[&str] = &["timeout"];

/// What one run of the binary did.
struct Outcome {
    status: ExitStatus,
    killed: bool,
    wall: Duration,
    peak_rss_kb: u64,
    stderr: String,
    json: Value,
}

/// Runs `case` (twice when it runs under `ulimit -v` too) and fails with every broken promise.
fn run(name: &str, case: &Case) {
    let server = Server::start(case.server);
    let mut failures = Vec::new();
    for limited in [false, true]
        .into_iter()
        .take(1 + usize::from(case.under_ulimit))
    {
        let label = if limited {
            format!("{name} (ulimit -v)")
        } else {
            name.to_owned()
        };
        let outcome = launch(case, server.addr, limited);
        let summary = summarize(&outcome);
        eprintln!("{label}: {summary}");
        let never_processed = match case.unprocessed {
            Unprocessed::Unchecked => 0,
            _ => server.never_processed(),
        };
        let problems = problems(case, &outcome, never_processed);
        if !problems.is_empty() {
            failures.push(format!(
                "{label}: {summary}\n  - {}",
                problems.join("\n  - ")
            ));
        }
    }
    drop(server);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Starts the binary against `addr` and watches it until it exits or is killed.
fn launch(case: &Case, addr: std::net::SocketAddr, limited: bool) -> Outcome {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("out.json");
    let url = format!("http://{addr}/");
    let mut command = if limited {
        let mut sh = Command::new("sh");
        sh.args(["-c", ULIMIT_V, "sh", BIN]);
        sh
    } else {
        Command::new(BIN)
    };
    command
        .args(case.args)
        .args(BOUNDS)
        .arg("--json")
        .arg(&json)
        .arg(&url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let outcome = watch(command);
    Outcome {
        json: read_json(&json),
        ..outcome
    }
}

/// Runs `command`, sampling its peak RSS, killing it at [`HARD_LIMIT`].
fn watch(mut command: Command) -> Outcome {
    let started = Instant::now();
    let mut child = command.spawn().expect("the binary starts");
    let mut stderr = child.stderr.take().expect("piped stderr");
    // Drained on the side, so a chatty child never blocks on a full pipe.
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        text
    });
    let mut peak_rss_kb = 0;
    let mut killed = false;
    let status = loop {
        // Sampled before try_wait: once reaped, the process (a zombie until then) has no VmHWM.
        peak_rss_kb = peak_rss_kb.max(vm_hwm_kb(child.id()).unwrap_or(0));
        if let Some(status) = child.try_wait().expect("wait for the child") {
            break status;
        }
        if started.elapsed() > HARD_LIMIT {
            killed = true;
            let _ = child.kill();
            break child.wait().expect("reap the killed child");
        }
        std::thread::sleep(SAMPLE_EVERY);
    };
    Outcome {
        status,
        killed,
        wall: started.elapsed(),
        peak_rss_kb,
        stderr: reader.join().unwrap_or_default(),
        json: Value::Null,
    }
}

/// The process's peak resident set size (VmHWM), in kB.
pub(crate) fn vm_hwm_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn read_json(path: &Path) -> Value {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or(Value::Null)
}

/// One line saying what the run did, for failures and for `--nocapture`.
fn summarize(outcome: &Outcome) -> String {
    let cell = &outcome.json["cells"][0];
    let first_line = outcome.stderr.lines().find(|line| !line.trim().is_empty());
    format!(
        "exit {}{} in {:.1} s, peak RSS {} MB, errors {}, requests {} of {} succeeded, retried {}; stderr: {}",
        outcome
            .status
            .code()
            .map_or("by signal".to_owned(), |code| code.to_string()),
        if outcome.killed { " (killed)" } else { "" },
        outcome.wall.as_secs_f64(),
        outcome.peak_rss_kb / 1024,
        cell["errors"],
        cell["requests"]["succeeded"],
        cell["requests"]["total"],
        cell["requests"]["retried"],
        first_line.unwrap_or("(empty)"),
    )
}

/// Every way the run broke the case's contract; `never_processed` is the server's count.
fn problems(case: &Case, outcome: &Outcome, never_processed: u64) -> Vec<String> {
    let mut found = process_problems(case, outcome);
    match outcome.json["cells"].get(0) {
        Some(cell) => {
            found.extend(report_problems(case, cell));
            found.extend(unprocessed_problems(
                case.unprocessed,
                cell,
                never_processed,
            ));
        }
        None => found.push("no JSON report was written".to_owned()),
    }
    found
}

/// Whether the requests the server never processed were retried or failed as the case expects.
fn unprocessed_problems(expected: Unprocessed, cell: &Value, never_processed: u64) -> Vec<String> {
    let count = |path: &str| cell.pointer(path).and_then(Value::as_u64).unwrap_or(0);
    let retried: u64 = ["goaway", "refused", "closed"]
        .iter()
        .map(|reason| count(&format!("/requests/retried/{reason}")))
        .sum();
    let errors = |kind: &str| count(&format!("/errors/{kind}"));
    let (checks, server_left_some) = match expected {
        Unprocessed::Unchecked => (vec![], false),
        Unprocessed::Retried => (
            vec![
                ("retried", retried, never_processed),
                (
                    "succeeded",
                    count("/requests/succeeded"),
                    count("/requests/total"),
                ),
            ],
            true,
        ),
        Unprocessed::RetriedTimes(times) => (vec![("retried", retried, times)], false),
        Unprocessed::Failed(kind) => (
            vec![
                ("retried", retried, 0),
                (kind, errors(kind), never_processed),
            ],
            true,
        ),
    };
    let mut found: Vec<String> = checks
        .into_iter()
        .filter(|(_, actual, wanted)| actual != wanted)
        .map(|(what, actual, wanted)| format!("{what} {actual}, expected {wanted}"))
        .collect();
    if server_left_some && never_processed == 0 {
        found.push("the server left no request unprocessed".to_owned());
    }
    found
}

/// Time, memory, exit code and stderr.
fn process_problems(case: &Case, outcome: &Outcome) -> Vec<String> {
    let code = outcome.status.code();
    let mut found = Vec::new();
    if outcome.killed {
        found.push(format!("still running after {HARD_LIMIT:?}: killed"));
    }
    if outcome.wall > Duration::from_secs(case.max_secs) {
        found.push(format!(
            "took {:.1} s, bound {} s",
            outcome.wall.as_secs_f64(),
            case.max_secs
        ));
    }
    if outcome.peak_rss_kb >= RSS_LIMIT_KB {
        found.push(format!(
            "peak RSS {} MB, bound 100 MB",
            outcome.peak_rss_kb / 1024
        ));
    }
    if code != Some(case.expect_exit) {
        found.push(format!("exit code {code:?}, expected {}", case.expect_exit));
    }
    if outcome.stderr.contains("panicked") {
        found.push("panicked".to_owned());
    }
    if let Some(needle) = case.stderr_has {
        if !outcome.stderr.contains(needle) {
            found.push(format!("stderr does not mention {needle}"));
        }
    }
    found
}

/// Error kinds and counters of the JSON report's cell.
fn report_problems(case: &Case, cell: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let errors = cell["errors"].as_object().cloned().unwrap_or_default();
    let counted = |kind: &str| errors.get(kind).and_then(Value::as_u64).unwrap_or(0);
    if case.expect_kind.is_empty() {
        if !errors.is_empty() {
            found.push(format!("errors counted: {errors:?}"));
        }
    } else if !case.expect_kind.iter().any(|kind| counted(kind) > 0) {
        found.push(format!(
            "no {} errors counted",
            case.expect_kind.join(" or ")
        ));
    }
    if errors.contains_key("unknown") {
        found.push("an error of kind \"unknown\"".to_owned());
    }
    found.extend(counter_problems(cell));
    for (name, wanted) in case.grpc_statuses {
        let actual = cell
            .pointer(&format!("/grpc/statuses/{name}"))
            .and_then(Value::as_u64)
            .unwrap_or(0);
        if actual != *wanted {
            found.push(format!(
                "grpc status {name}: {actual}, expected exactly {wanted}"
            ));
        }
    }
    let message = cell.pointer("/grpc/first_status_message/text");
    if !case.grpc_statuses.is_empty() && message.and_then(Value::as_str) != case.grpc_message {
        found.push(format!(
            "grpc message {message:?}, expected {:?}",
            case.grpc_message
        ));
    }
    let events = cell.pointer("/events/events").and_then(Value::as_u64);
    match case.events {
        Events::Unchecked => {}
        Events::Exactly(wanted) if events != Some(wanted) => {
            found.push(format!("events {events:?}, expected exactly {wanted}"));
        }
        Events::AtLeast(least) if events.is_none_or(|events| events < least) => {
            found.push(format!("events {events:?}, expected at least {least}"));
        }
        Events::Exactly(_) | Events::AtLeast(_) => {}
    }
    if let Some(exactly) = case.exactly {
        let count = |path: &str| cell.pointer(path).and_then(Value::as_u64).unwrap_or(0);
        let (kind, errors) = exactly.errors;
        for (what, actual, wanted) in [
            ("succeeded", count("/requests/succeeded"), exactly.succeeded),
            ("failed", count("/requests/failed"), exactly.failed),
            (kind, counted(kind), errors),
        ] {
            if actual != wanted {
                found.push(format!("{what} {actual}, expected exactly {wanted}"));
            }
        }
    }
    found
}

/// The request counters add up: every request of the total succeeded, failed or was still in
/// flight at the stop, and every finished one is a response (by status class) or an error.
fn counter_problems(cell: &Value) -> Vec<String> {
    let count = |path: &str| cell.pointer(path).and_then(Value::as_u64);
    let requests = |name: &str| count(&format!("/requests/{name}"));
    let classes: Option<u64> = ["1xx", "2xx", "3xx", "4xx", "5xx"]
        .iter()
        .map(|class| count(&format!("/status_codes/{class}")))
        .sum();
    let (Some(total), Some(done), Some(succeeded), Some(failed), Some(errored)) = (
        requests("total"),
        requests("done"),
        requests("succeeded"),
        requests("failed"),
        requests("errored"),
    ) else {
        return vec!["request counters missing from the JSON".to_owned()];
    };
    let in_flight = requests("in_flight_at_stop").unwrap_or(0);
    let never_sent = requests("never_sent").unwrap_or(0);
    let mut found = Vec::new();
    if succeeded + failed + in_flight != total {
        found.push(format!(
            "succeeded {succeeded} + failed {failed} + in flight {in_flight} != total {total}"
        ));
    }
    if classes.map(|responses| responses + errored) != Some(done + never_sent) {
        found.push(format!(
            "status classes {classes:?} + errored {errored} != done {done} + never sent {never_sent}"
        ));
    }
    found
}

/// One `#[test]` per case, each a single row handed to [`run`].
macro_rules! cases {
    ($($name:ident => $case:expr;)*) => {
        $(
            #[test]
            fn $name() {
                run(stringify!($name), &$case);
            }
        )*
    };
}

use Behaviour::{H1Reply, H2Reply, Script};

cases! {
    // ---- HTTP/1.1 ----
    h1_unsolicited_408 => Case {
        server: H1Reply(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok\
                          HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n"),
        args: &["--h1", "--rate", "100", "-D", "2s"],
        expect_kind: PROTOCOL,
        expect_exit: 0,
        ..BASE
    };
    h1_endless_continue => Case {
        server: Script(scripts::h1_endless_continue),
        args: &["--h1", "-n", "4"],
        expect_kind: &["protocol", "timeout"],
        under_ulimit: true,
        ..BASE
    };
    h1_conflicting_content_length => Case {
        server: H1Reply(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\nok"),
        args: &["--h1", "-n", "20"],
        expect_kind: PROTOCOL,
        ..BASE
    };
    h1_content_length_not_a_number => Case {
        server: H1Reply(b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\nok"),
        args: &["--h1", "-n", "20"],
        expect_kind: PROTOCOL,
        ..BASE
    };
    h1_status_999 => Case {
        server: H1Reply(b"HTTP/1.1 999 Whatever\r\nContent-Length: 2\r\n\r\nok"),
        args: &["--h1", "-n", "20"],
        expect_kind: PROTOCOL,
        ..BASE
    };
    h1_bad_status_line => Case {
        server: H1Reply(b"HTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
        args: &["--h1", "-n", "20"],
        expect_kind: PROTOCOL,
        ..BASE
    };
    h1_slowloris_head => Case {
        server: Script(scripts::h1_slow_head),
        args: &["--h1", "-n", "4"],
        expect_kind: TIMEOUT,
        ..BASE
    };
    h1_endless_body => Case {
        server: Script(scripts::h1_endless_body),
        args: &["--h1", "-n", "4"],
        expect_kind: TIMEOUT,
        under_ulimit: true,
        ..BASE
    };
    h1_endless_chunked_body => Case {
        server: Script(scripts::h1_endless_chunked),
        args: &["--h1", "-n", "4"],
        expect_kind: TIMEOUT,
        ..BASE
    };
    h1_endless_head => Case {
        server: Script(scripts::h1_endless_head),
        args: &["--h1", "-n", "20"],
        expect_kind: PROTOCOL,
        under_ulimit: true,
        ..BASE
    };
    h1_thousand_header_lines => Case {
        server: Script(scripts::h1_thousand_headers),
        args: &["--h1", "-n", "20"],
        expect_kind: PROTOCOL,
        ..BASE
    };
    h1_reset_on_accept => Case {
        server: Script(scripts::reset_on_accept),
        args: &["--h1", "-n", "20"],
        expect_kind: &["reset"],
        ..BASE
    };
    h1_close_on_accept => Case {
        server: Script(scripts::close_on_accept),
        args: &["--h1", "-n", "20"],
        expect_kind: &["closed"],
        ..BASE
    };
    h1_bad_chunk_size => Case {
        server: H1Reply(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nok\r\n0\r\n\r\n"),
        args: &["--h1", "-n", "20"],
        expect_kind: PROTOCOL,
        ..BASE
    };
    h1_never_answers => Case {
        server: Script(scripts::never_answer),
        args: &["--h1", "-n", "4"],
        expect_kind: TIMEOUT,
        ..BASE
    };
    h1_close_every_10 => Case {
        server: Script(scripts::h1_close_every_10),
        args: &["--h1", "-m", "4", "-n", "200"],
        expect_exit: 0,
        unprocessed: Unprocessed::Retried,
        ..BASE
    };
    h1_two_responses_per_request => Case {
        server: H1Reply(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok\
                          HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
        args: &["--h1", "-m", "1", "-n", "20"],
        expect_kind: PROTOCOL,
        // Every request got its answer; the extra responses fail the connections, not requests.
        expect_exit: 0,
        ..BASE
    };

    // ---- h2c: the connection ----
    h2c_endless_continuation => Case {
        server: Script(scripts::h2_endless_continuation),
        args: &["--proto", "h2c", "-n", "20"],
        expect_kind: PROTOCOL,
        under_ulimit: true,
        ..BASE
    };
    h2c_ping_flood_unread => Case {
        server: Script(scripts::h2_ping_flood_unread),
        args: &["--proto", "h2c", "-n", "20"],
        expect_kind: PROTOCOL,
        under_ulimit: true,
        ..BASE
    };
    h2c_settings_flood_unread => Case {
        server: Script(scripts::h2_settings_flood_unread),
        args: &["--proto", "h2c", "-n", "20"],
        expect_kind: PROTOCOL,
        ..BASE
    };
    h2c_no_settings => Case {
        server: Script(scripts::h2_no_settings),
        args: &["--proto", "h2c", "-n", "4"],
        expect_kind: &["connect_timeout"],
        ..BASE
    };
    h2c_zero_concurrent_streams => Case {
        server: Script(scripts::h2_zero_streams),
        args: &["--proto", "h2c", "-n", "4"],
        expect_kind: TIMEOUT,
        ..BASE
    };
    h2c_reset_before_settings => Case {
        server: Script(scripts::reset_on_accept),
        args: &["--proto", "h2c", "-n", "20"],
        expect_kind: &["reset"],
        ..BASE
    };
    h2c_garbage_instead_of_settings => Case {
        server: Script(scripts::h2_garbage_preface),
        args: &["--proto", "h2c", "-n", "20"],
        expect_kind: PROTOCOL,
        ..BASE
    };
    h2c_close_on_accept => Case {
        server: Script(scripts::close_on_accept),
        args: &["--proto", "h2c", "-n", "20"],
        expect_kind: &["closed"],
        ..BASE
    };
    h2c_to_tls_alert => Case {
        server: Script(scripts::tls_alert),
        args: &["--proto", "h2c", "-n", "20"],
        expect_kind: PROTOCOL,
        ..BASE
    };
    h2c_to_builtin_tls_port => Case {
        server: Behaviour::BuiltinTls,
        args: &["--proto", "h2c", "-n", "20"],
        expect_kind: PROTOCOL,
        ..BASE
    };
    h2c_goaway_at_once => Case {
        server: Script(scripts::h2_goaway_at_once),
        args: &["--proto", "h2c", "-D", "2s"],
        expect_kind: &["goaway"],
        max_secs: 4,
        stderr_has: Some("GOAWAY"),
        ..BASE
    };
    h2c_goaway_every_50 => Case {
        server: Script(scripts::h2_goaway_every_50),
        args: &["--proto", "h2c", "-m", "8", "-n", "1000"],
        expect_exit: 0,
        unprocessed: Unprocessed::Retried,
        ..BASE
    };
    h2c_goaway_every_50_padded => Case {
        server: Script(scripts::h2_goaway_every_50_padded),
        args: &["--proto", "h2c", "-m", "10", "-n", "1000"],
        expect_exit: 0,
        unprocessed: Unprocessed::Retried,
        ..BASE
    };
    h2c_goaway_every_50_no_retry => Case {
        server: Script(scripts::h2_goaway_every_50),
        args: &["--proto", "h2c", "-m", "8", "-n", "1000", "--no-retry"],
        expect_kind: &["goaway"],
        expect_exit: 0,
        unprocessed: Unprocessed::Failed("goaway"),
        ..BASE
    };
    h2c_refuse_every_other_stream_paced => Case {
        server: Script(scripts::h2_refuse_every_other_stream),
        // A refused request goes again at once, outside the schedule.
        args: &["--proto", "h2c", "--rate", "400", "-D", "1s"],
        expect_exit: 0,
        unprocessed: Unprocessed::Retried,
        ..BASE
    };
    h2c_window_update_overflow => Case {
        server: Script(scripts::h2_window_overflow),
        args: &["--proto", "h2c", "-n", "20"],
        expect_kind: PROTOCOL,
        ..BASE
    };
    h2c_initial_window_too_big => Case {
        server: Script(scripts::h2_initial_window_too_big),
        args: &["--proto", "h2c", "-n", "20"],
        expect_kind: PROTOCOL,
        ..BASE
    };
    h2c_settings_bad_length => Case {
        server: Script(scripts::h2_settings_bad_length),
        args: &["--proto", "h2c", "-n", "20"],
        expect_kind: PROTOCOL,
        ..BASE
    };

    // ---- h2c: responses ----
    h2c_hpack_bomb => Case {
        server: H2Reply(scripts::h2_hpack_bomb),
        args: &["--proto", "h2c", "-n", "20"],
        expect_kind: PROTOCOL,
        under_ulimit: true,
        ..BASE
    };
    h2c_push_promise => Case {
        server: H2Reply(scripts::h2_push_promise),
        args: &["--proto", "h2c", "-n", "20"],
        expect_kind: PROTOCOL,
        ..BASE
    };
    h2c_status_not_a_number => Case {
        server: H2Reply(scripts::h2_status_not_a_number),
        args: &["--proto", "h2c", "-n", "20"],
        expect_kind: PROTOCOL,
        exactly: each_malformed(20),
        ..BASE
    };
    h2c_status_missing => Case {
        server: H2Reply(scripts::h2_status_missing),
        args: &["--proto", "h2c", "-n", "20"],
        expect_kind: PROTOCOL,
        exactly: each_malformed(20),
        ..BASE
    };
    h2c_endless_interim => Case {
        server: Script(scripts::h2_endless_interim),
        args: &["--proto", "h2c", "-n", "4"],
        expect_kind: &["protocol", "timeout"],
        ..BASE
    };
    h2c_data_past_window => Case {
        server: H2Reply(scripts::h2_data_past_window),
        args: &["--proto", "h2c", "-w", "10", "-n", "20"],
        expect_kind: PROTOCOL,
        ..BASE
    };
    h2c_frame_above_max_frame_size => Case {
        server: H2Reply(scripts::h2_oversized_frame),
        args: &["--proto", "h2c", "-n", "20"],
        expect_kind: PROTOCOL,
        ..BASE
    };
    h2c_refused_stream => Case {
        server: H2Reply(scripts::h2_refuse_every_stream),
        args: &["--proto", "h2c", "-n", "20"],
        expect_kind: &["refused"],
        // Each of the 20 requests is sent 4 times: 3 retries each.
        unprocessed: Unprocessed::RetriedTimes(60),
        ..BASE
    };
    h2c_refused_stream_no_retry => Case {
        server: H2Reply(scripts::h2_refuse_every_stream),
        args: &["--proto", "h2c", "-n", "20", "--no-retry"],
        expect_kind: &["stream_reset"],
        unprocessed: Unprocessed::RetriedTimes(0),
        ..BASE
    };
    h2c_refuse_every_other_stream => Case {
        server: Script(scripts::h2_refuse_every_other_stream),
        // One stream at a time, so a refused request is the next stream, which is answered
        // (with more, a retry can land on refused streams four times in a row and fail).
        args: &["--proto", "h2c", "-n", "200"],
        expect_exit: 0,
        unprocessed: Unprocessed::Retried,
        ..BASE
    };
    h2c_internal_error_stream => Case {
        server: H2Reply(scripts::h2_reset_every_stream),
        args: &["--proto", "h2c", "-n", "20"],
        expect_kind: &["stream_reset"],
        ..BASE
    };
    h2c_reset_stream_zero => Case {
        server: H2Reply(scripts::h2_reset_stream_zero),
        args: &["--proto", "h2c", "-n", "20"],
        expect_kind: PROTOCOL,
        ..BASE
    };
    h2c_headers_on_even_stream => Case {
        server: H2Reply(scripts::h2_headers_on_even_stream),
        args: &["--proto", "h2c", "-n", "20"],
        expect_kind: PROTOCOL,
        ..BASE
    };
    h2c_data_on_idle_stream => Case {
        server: H2Reply(scripts::h2_data_on_idle_stream),
        args: &["--proto", "h2c", "-n", "20"],
        expect_kind: PROTOCOL,
        ..BASE
    };
    h2c_body_shorter_than_length => Case {
        server: H2Reply(scripts::h2_body_shorter_than_length),
        args: &["--proto", "h2c", "-m", "4", "-n", "20"],
        expect_kind: PROTOCOL,
        exactly: each_malformed(20),
        ..BASE
    };
    h2c_body_longer_than_length => Case {
        server: H2Reply(scripts::h2_body_longer_than_length),
        args: &["--proto", "h2c", "-m", "4", "-n", "20"],
        expect_kind: PROTOCOL,
        exactly: each_malformed(20),
        ..BASE
    };
    h2c_upper_case_field_name => Case {
        server: H2Reply(scripts::h2_upper_case_field_name),
        args: &["--proto", "h2c", "-m", "4", "-n", "20"],
        expect_kind: PROTOCOL,
        exactly: each_malformed(20),
        ..BASE
    };
    h2c_connection_field => Case {
        server: H2Reply(scripts::h2_connection_field),
        args: &["--proto", "h2c", "-m", "4", "-n", "20"],
        expect_kind: PROTOCOL,
        exactly: each_malformed(20),
        ..BASE
    };
    h2c_transfer_encoding_field => Case {
        server: H2Reply(scripts::h2_transfer_encoding_field),
        args: &["--proto", "h2c", "-m", "4", "-n", "20"],
        expect_kind: PROTOCOL,
        exactly: each_malformed(20),
        ..BASE
    };
    h2c_line_break_in_value => Case {
        server: H2Reply(scripts::h2_line_break_in_value),
        args: &["--proto", "h2c", "-m", "4", "-n", "20"],
        expect_kind: PROTOCOL,
        exactly: each_malformed(20),
        ..BASE
    };
    h2c_value_with_trailing_space => Case {
        server: H2Reply(scripts::h2_value_with_trailing_space),
        args: &["--proto", "h2c", "-m", "4", "-n", "20"],
        expect_kind: PROTOCOL,
        exactly: each_malformed(20),
        ..BASE
    };
    h2c_pseudo_header_after_field => Case {
        server: H2Reply(scripts::h2_pseudo_header_after_field),
        args: &["--proto", "h2c", "-m", "4", "-n", "20"],
        expect_kind: PROTOCOL,
        exactly: each_malformed(20),
        ..BASE
    };
    h2c_two_statuses => Case {
        server: H2Reply(scripts::h2_two_statuses),
        args: &["--proto", "h2c", "-m", "4", "-n", "20"],
        expect_kind: PROTOCOL,
        exactly: each_malformed(20),
        ..BASE
    };
    h2c_pseudo_header_in_trailers => Case {
        server: H2Reply(scripts::h2_pseudo_header_in_trailers),
        args: &["--proto", "h2c", "-m", "4", "-n", "20"],
        expect_kind: PROTOCOL,
        exactly: each_malformed(20),
        ..BASE
    };
    h2c_data_after_end_stream => Case {
        server: H2Reply(scripts::h2_data_after_end_stream),
        // One write holds the answer and the DATA after it: the connection fails (GOAWAY
        // STREAM_CLOSED) with no request in flight, and the next one carries on.
        args: &["--proto", "h2c", "-m", "1", "-n", "10"],
        expect_kind: PROTOCOL,
        expect_exit: 0,
        exactly: Some(Exactly {
            succeeded: 10,
            failed: 0,
            errors: ("protocol", 10),
        }),
        ..BASE
    };
    h2c_interim_then_final => Case {
        server: H2Reply(scripts::h2_interim_then_final),
        args: &["--proto", "h2c", "-m", "4", "-n", "20"],
        expect_exit: 0,
        exactly: all_succeed(20),
        ..BASE
    };
    h2c_length_on_204 => Case {
        server: H2Reply(scripts::h2_no_content_with_length),
        args: &["--proto", "h2c", "-m", "4", "-n", "20"],
        expect_exit: 0,
        exactly: all_succeed(20),
        ..BASE
    };
    h2c_length_on_head => Case {
        server: H2Reply(scripts::h2_head_answer_with_length),
        args: &["--proto", "h2c", "--method", "HEAD", "-m", "4", "-n", "20"],
        expect_exit: 0,
        exactly: all_succeed(20),
        ..BASE
    };
}

#[test]
fn h2c_answers_before_the_upload_ends_get_their_streams_reset() {
    // 100 kB uploads, more than the 65,535-byte windows the server never raises, answered as
    // their HEADERS arrive. Before the fix the client stopped sending without RST_STREAM,
    // leaving every stream half open on the server.
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body");
    std::fs::write(&body, vec![b'u'; 100_000]).unwrap();
    let server = Server::start(Script(scripts::h2_answer_uploads_early));
    let url = format!("http://{}/", server.addr);
    let args = ["--proto", "h2c", "-c", "1", "-m", "1", "-n", "10", "-d"];
    let args: Vec<&str> = args
        .into_iter()
        .chain([body.to_str().unwrap(), &url])
        .collect();
    let run = crate::common::h2load_rs(&args);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    assert_eq!(run.int("requests/succeeded"), 10, "{}", run.output.stdout);
    // Every connection's script has seen the client go.
    server.never_processed();
    let resets = scripts::EARLY_ANSWER_RESETS.load(std::sync::atomic::Ordering::SeqCst);
    // One at a time: each stream is reset before the next request goes; the tenth ends with
    // the connection, which the client closes once its last response is in.
    assert_eq!(resets, 9, "RST_STREAM(NO_ERROR) frames received");
}

mod events;
mod grpc;
mod reflect;
mod words;
