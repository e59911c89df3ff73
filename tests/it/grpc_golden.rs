//! gRPC's output, text and JSON, kept as it is: a fixed set of gRPC runs against the built-in
//! target (every call shape, and a call that fails with RESOURCE_EXHAUSTED) compared with
//! `tests/it/golden/`, recorded from the commit before gRPC moved onto the message layer (issue
//! 38). What legitimately varies between runs is masked first: timings and the text lines that
//! show them, dates, ports, temporary paths, host facts. Every key, every count, every byte
//! count, every status name and message stays exact, so renaming or dropping a gRPC field, or a
//! count that changes, fails the comparison.
//!
//! `H2LOAD_RS_WRITE_GOLDEN=1 cargo test --test it grpc_golden` writes the files anew (for a
//! change that means to change the output: the diff then shows what changed).

use serde_json::{Map, Value};

use crate::common::h2load_rs;

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/golden");

/// Text rows whose values are times or rates (their label is kept, the rest masked).
const TIMING_ROWS: [&str; 12] = [
    "finished in",
    "time for request",
    "time for connect",
    "time for proxy",
    "time to 1st byte",
    "kernel to client",
    "1st grpc message",
    "grpc msg rtt",
    "req/s",
    "95% interval",
    "95% intervals",
    "start delay",
];

/// JSON members whose whole value depends on timing or the host (its shape too: intervals come
/// and go with the run's length, a confidence interval is one or null, the cause names a busy
/// generator).
const TIMING_VALUES: [&str; 9] = [
    "cause",
    "confidence",
    "hdr",
    "intervals",
    "requests_per_s_ci",
    "requests_per_s_ci_reason",
    "percentiles_ci",
    "started_at",
    "host",
];

/// Byte counts that depend on timing: the HPACK bytes of the response headers (the target's
/// `date` is encoded anew when the second changes during a run) and the total (a server's
/// WINDOW_UPDATEs depend on how much of a request had arrived when it answered). The data
/// bytes, the uncompressed header bytes and every gRPC message byte count stay exact.
const TIMED_BYTES: [&str; 2] = ["header_bytes", "total_bytes"];

/// Integer members that are times, sizes of the process or its id (floats are all masked).
fn timing_integer(key: &str, parent: &str) -> bool {
    parent == "percentiles"
        || TIMED_BYTES.contains(&key)
        || ["_us", "_ms", "_kib"]
            .iter()
            .any(|unit| key.ends_with(unit))
        || key == "pid"
}

/// `text` with the port of the built-in target's loopback URL masked.
fn mask_ports(text: &str) -> String {
    const HOST: &str = "127.0.0.1:";
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(HOST) {
        out.push_str(&rest[..at + HOST.len()]);
        rest = rest[at + HOST.len()..].trim_start_matches(|c: char| c.is_ascii_digit());
        out.push('#');
    }
    out.push_str(rest);
    out
}

/// A command-line word that names a file of this run (the binary, the message, the report).
fn masked_word(word: &str) -> String {
    let is_path = word.starts_with('/')
        && (word.ends_with(".bin") || word.ends_with(".json") || word.ends_with("h2load-rs"));
    if is_path {
        "<path>".to_owned()
    } else {
        mask_ports(word)
    }
}

fn mask_json(value: &mut Value, key: &str, parent: &str) {
    match value {
        Value::Object(members) => mask_members(members, key),
        Value::Array(items) => {
            for item in items {
                mask_json(item, key, parent);
            }
        }
        Value::Number(number) if number.is_f64() || timing_integer(key, parent) => {
            *value = Value::from("#")
        }
        Value::String(text) if key == "command_line" => {
            let words: Vec<String> = text.split(' ').map(masked_word).collect();
            *value = Value::from(words.join(" "));
        }
        Value::String(text) => *value = Value::from(masked_word(text)),
        Value::Bool(_) if parent == "generator" || key == "generator_limited" => {
            *value = Value::from("#")
        }
        _ => {}
    }
}

fn mask_members(members: &mut Map<String, Value>, parent: &str) {
    for (key, value) in members.iter_mut() {
        if TIMING_VALUES.contains(&key.as_str()) || key.ends_with("_hdr") {
            *value = Value::from("#");
        } else {
            mask_json(value, key, parent);
        }
    }
}

/// Whether `line` quotes a duration (a number in µs, us, ms).
fn shows_time(line: &str) -> bool {
    ["us", "µs", "ms"].iter().any(|unit| {
        line.match_indices(unit)
            .any(|(at, _)| line[..at].ends_with(|c: char| c.is_ascii_digit()))
    })
}

fn mask_text(text: &str) -> String {
    let mut out = String::new();
    // Whether a remark in plain words is there at all depends on the timings it quotes (how
    // long responses waited in the kernel) or on the CPU a busy machine gave the runner thread.
    let remark_on_timing =
        |line: &str| line.starts_with("  - ") && (line.contains("% busy") || shows_time(line));
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| !remark_on_timing(line))
        .collect();
    for (at, line) in lines.iter().enumerate() {
        // A plain-words section left with no remark is left out, with its blank line.
        let no_remark = |at: usize| !lines.get(at).is_some_and(|next| next.starts_with("  - "));
        if (*line == "in plain words:" && no_remark(at + 1))
            || (line.is_empty()
                && lines.get(at + 1) == Some(&"in plain words:")
                && no_remark(at + 2))
        {
            continue;
        }
        let label = line.split([':', ',']).next().unwrap_or("").trim();
        let timing = TIMING_ROWS
            .iter()
            .any(|row| label == *row || (*row == "finished in" && label.starts_with(row)));
        match timing {
            true if label.starts_with("finished in") => out.push_str("finished in #"),
            true => {
                let cut = line.find(':').unwrap_or(line.len());
                out.push_str(&line[..cut]);
                out.push_str(": #");
            }
            false if line.starts_with("traffic:") => {
                let masked: Vec<&str> = line["traffic: ".len()..]
                    .split(", ")
                    .map(|part| if part.ends_with(" data") { part } else { "#" })
                    .collect();
                out.push_str("traffic: ");
                out.push_str(&masked.join(", "));
            }
            false => out.push_str(&mask_ports(line)),
        }
        out.push('\n');
    }
    out
}

/// Runs h2load-rs with `args` (`{file}` stands for the message file) and returns its masked
/// output: the text report with stderr after it, and the JSON.
fn masked_run(args: &[&str], file: &str) -> (String, String, i32) {
    let args: Vec<&str> = args
        .iter()
        .map(|arg| if *arg == "{file}" { file } else { arg })
        .collect();
    let run = h2load_rs(&args);
    let mut json = run.json;
    assert!(json.is_object(), "no JSON report: {}", run.output.stderr);
    mask_json(&mut json, "", "");
    let text = format!(
        "{}--- stderr ---\n{}",
        mask_text(&run.output.stdout),
        mask_text(&run.output.stderr)
    );
    let json = serde_json::to_string_pretty(&json).unwrap() + "\n";
    (text, json, run.output.code)
}

/// Compares `actual` with the golden file `name` (or writes it, with `H2LOAD_RS_WRITE_GOLDEN`).
fn compare(name: &str, actual: &str) {
    let path = format!("{GOLDEN}/{name}");
    if std::env::var_os("H2LOAD_RS_WRITE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    if expected != actual {
        let first = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(expected.lines().count().min(actual.lines().count()));
        panic!(
            "{name} differs from its golden file at line {}:\n  golden: {:?}\n  now:    {:?}\n\
             the whole output now:\n{actual}",
            first + 1,
            expected.lines().nth(first),
            actual.lines().nth(first),
        );
    }
}

#[test]
fn grpc_output_is_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("m.bin");
    std::fs::write(&small, [7u8; 300]).unwrap();
    // One over the 4 MiB a gRPC server takes: the built-in target ends the call with
    // RESOURCE_EXHAUSTED.
    let big = dir.path().join("big.bin");
    std::fs::write(&big, vec![0u8; (4 << 20) + 1]).unwrap();
    let (small, big) = (small.to_str().unwrap(), big.to_str().unwrap());
    let load = ["-n", "40", "-c", "2", "-m", "4"];
    let streams = ["--grpc-stream-messages", "5"];
    let runs: [(&str, &str, &[&str], i32); 5] = [
        ("unary", small, &[], 0),
        ("server", small, &[], 0),
        ("client", small, &streams, 0),
        ("bidi", small, &streams, 0),
        ("exhausted", big, &[], 1),
    ];
    for (name, file, extra, code) in runs {
        let shape = if name == "exhausted" { "client" } else { name };
        let mut args = vec![
            "--grpc",
            "/any.Echo/Call",
            "--grpc-shape",
            shape,
            "--grpc-binary-file",
            "{file}",
        ];
        args.extend(extra);
        match name {
            "exhausted" => args.extend(["-n", "3", "-c", "1"]),
            _ => args.extend(load),
        }
        let (text, json, exit) = masked_run(&args, file);
        assert_eq!(exit, code, "{name}:\n{text}");
        compare(&format!("grpc_{name}.txt"), &text);
        compare(&format!("grpc_{name}.json"), &json);
    }
}

#[test]
fn the_masks_keep_counts_and_keys() {
    // The masks hide times only: a count, a byte count and a status stay as they are.
    let mut json = serde_json::json!({
        "grpc": {"sent": {"messages": 200, "message_bytes": 60000}, "statuses": {"OK": 40}},
        "latency": {"grpc_round_trip": {"count": 200, "min": 214.0,
            "percentiles": {"p50": 1370}, "confidence": {"p50": null}}},
        "timeline": {"start_unix_ms": 1796191792207_u64, "intervals": [{"completed": 3}]},
    });
    mask_json(&mut json, "", "");
    assert_eq!(
        json,
        serde_json::json!({
            "grpc": {"sent": {"messages": 200, "message_bytes": 60000}, "statuses": {"OK": 40}},
            "latency": {"grpc_round_trip": {"count": 200, "min": "#",
                "percentiles": {"p50": "#"}, "confidence": "#"}},
            "timeline": {"start_unix_ms": "#", "intervals": "#"},
        })
    );
    let text = "finished in 28.30ms, 1413.41 req/s\n\
        grpc messages: sent 200 messages (60000 message bytes + 1000 prefix bytes)\n\
        grpc msg rtt    :      156us      2.38ms\n\
        no URL given: measuring the built-in target at http://127.0.0.1:38427 (path /ping)\n";
    assert_eq!(
        mask_text(text),
        "finished in #\n\
        grpc messages: sent 200 messages (60000 message bytes + 1000 prefix bytes)\n\
        grpc msg rtt    : #\n\
        no URL given: measuring the built-in target at http://127.0.0.1:# (path /ping)\n"
    );
}
