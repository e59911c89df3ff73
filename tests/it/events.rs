//! Event streams end to end: the built-in target's `/sse` and `/ndjson` routes over HTTP/1.1,
//! h2c, h2 and HTTP/3 give exact counts (streams, events, data bytes, one time to first event per
//! stream and one gap per later event), `--events` and `--max-event-size` do what they say, and
//! `merge` adds the figures exactly. The timing of events against a known schedule is the truth
//! suite's (tests/truth/events.rs).

use crate::common::{h2load_rs, run_command, url, Run};
use crate::h3::CA;

/// `path` on a target that speaks `proto`: the shared cleartext one, or the TLS one with HTTP/3.
fn url_for(proto: &str, path: &str) -> String {
    match proto {
        "h1" | "h2c" => url(path),
        _ => crate::h3::url(path),
    }
}

/// Runs `args` over `proto` against `path`.
fn run(proto: &str, args: &[&str], path: &str) -> Run {
    let target = url_for(proto, path);
    let mut full = vec!["--proto", proto];
    if matches!(proto, "h2" | "h3") {
        full.extend(["--cacert", CA]);
    }
    full.extend(args);
    full.push(&target);
    h2load_rs(&full)
}

const PROTOCOLS: [&str; 4] = ["h1", "h2c", "h2", "h3"];

#[test]
fn every_protocol_counts_events_and_their_bytes_exactly() {
    for proto in PROTOCOLS {
        // 16 streams of 10 server-sent events of 8 data bytes, 1 ms apart: each event is
        // `data: ` + 8 bytes + an empty line on the wire (16 body bytes).
        let sse = run(proto, &["-c", "2", "-n", "16"], "/sse/10/1/8");
        assert_eq!(sse.output.code, 0, "{proto}: {}", sse.output.stderr);
        assert_eq!(sse.int("requests/succeeded"), 16, "{proto}");
        assert_eq!(sse.int("events/streams"), 16, "{proto}");
        assert_eq!(sse.int("events/events"), 160, "{proto}");
        assert_eq!(sse.int("events/data_bytes"), 160 * 8, "{proto}");
        assert_eq!(sse.num("events/events_per_stream"), 10.0, "{proto}");
        assert_eq!(sse.int("latency/first_event/count"), 16, "{proto}");
        assert_eq!(sse.int("latency/event_gap/count"), 16 * 9, "{proto}");
        assert_eq!(sse.int("traffic/data_bytes"), 160 * 16, "{proto}");
        let events_per_s = sse.num("events/events_per_s");
        let expected = 160.0 / sse.num("elapsed_s");
        assert!(
            (events_per_s - expected).abs() <= expected * 1e-6,
            "{proto}: {events_per_s} events/s, 160 events in the run's elapsed time: {expected}"
        );
        assert!(
            sse.output.stdout.contains("events: 160 ("),
            "{proto}: {}",
            sse.output.stdout
        );
        // NDJSON: 5 lines of a 10-byte JSON string each.
        let ndjson = run(proto, &["-c", "2", "-n", "8"], "/ndjson/5/1/10");
        assert_eq!(ndjson.output.code, 0, "{proto}: {}", ndjson.output.stderr);
        assert_eq!(ndjson.int("events/events"), 40, "{proto}");
        assert_eq!(ndjson.int("events/data_bytes"), 40 * 10, "{proto}");
        assert_eq!(ndjson.int("latency/event_gap/count"), 8 * 4, "{proto}");
        assert_eq!(ndjson.int("traffic/data_bytes"), 40 * 11, "{proto}");
    }
}

#[test]
fn an_event_past_the_limit_fails_its_request_as_event_too_large() {
    for proto in PROTOCOLS {
        // Each event's line is `data: ` + 8 bytes, longer than 4.
        let cut = run(
            proto,
            &["-c", "1", "-n", "6", "--max-event-size", "4"],
            "/sse/3/1/8",
        );
        assert_ne!(cut.output.code, 0, "{proto}");
        assert_eq!(cut.int("requests/failed"), 6, "{proto}");
        assert_eq!(cut.int("request_errors/event_too_large"), 6, "{proto}");
        assert_eq!(cut.int("events/events"), 0, "{proto}");
        assert!(
            cut.output.stderr.contains("--max-event-size (4 bytes)"),
            "{proto}: {}",
            cut.output.stderr
        );
        // At the limit exactly, the same stream reads whole.
        let whole = run(
            proto,
            &["-c", "1", "-n", "2", "--max-event-size", "14"],
            "/sse/3/1/8",
        );
        assert_eq!(
            whole.int("events/events"),
            6,
            "{proto}: {}",
            whole.output.stderr
        );
    }
}

#[test]
fn events_off_reads_none_and_a_forced_format_reads_every_response() {
    let off = run("h2c", &["-n", "4", "--events", "off"], "/sse/3/1/8");
    assert_eq!(off.int("requests/succeeded"), 4);
    assert!(off.cell().get("events").is_none(), "{}", off.cell());
    assert!(off.cell()["latency"].get("first_event").is_none());
    // A plain response is no event stream unless a format is forced: `/bytes/64` is one line
    // with no end, which NDJSON reads as one event at the body's end and SSE as none.
    let plain = run("h1", &["-n", "4"], "/bytes/64");
    assert!(plain.cell().get("events").is_none(), "{}", plain.cell());
    let ndjson = run("h1", &["-n", "4", "--events", "ndjson"], "/bytes/64");
    assert_eq!(ndjson.int("events/streams"), 4);
    assert_eq!(ndjson.int("events/events"), 4);
    assert_eq!(ndjson.int("events/data_bytes"), 4 * 64);
    let sse = run("h1", &["-n", "4", "--events", "sse"], "/bytes/64");
    assert_eq!(
        (sse.int("events/streams"), sse.int("events/events")),
        (4, 0)
    );
    for bad in [
        vec!["--events", "xml"],
        vec!["--max-event-size", "0"],
        vec!["--max-event-size", "1Q"],
    ] {
        let mut args = vec!["-n", "1"];
        args.extend(&bad);
        let refused = run("h1", &args, "/sse/1/0");
        assert_eq!(refused.output.code, 2, "{bad:?}: {}", refused.output.stderr);
        assert_eq!(
            refused.output.stderr.trim().lines().count(),
            1,
            "{bad:?}: {}",
            refused.output.stderr
        );
    }
}

#[test]
fn merge_adds_the_event_figures_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one.json");
    let one = one.to_str().unwrap();
    let target = url("/sse/4/1/8");
    let first = h2load_rs(&["-c", "2", "-n", "6", &target]);
    std::fs::write(one, serde_json::to_vec(&first.json).unwrap()).unwrap();
    let twice = dir.path().join("twice.json");
    let twice = twice.to_str().unwrap();
    let merged = run_command(
        env!("CARGO_BIN_EXE_h2load-rs"),
        &["merge", one, one, "--json", twice],
    );
    assert_eq!(merged.code, 0, "{}", merged.stderr);
    let merged: serde_json::Value = serde_json::from_slice(&std::fs::read(twice).unwrap()).unwrap();
    let cell = &merged["cells"][0];
    assert_eq!(cell["events"]["streams"], 12);
    assert_eq!(cell["events"]["events"], 48);
    assert_eq!(cell["events"]["data_bytes"], 48 * 8);
    assert_eq!(cell["events"]["events_per_stream"], 4.0);
    assert_eq!(cell["latency"]["first_event"]["count"], 12);
    assert_eq!(cell["latency"]["event_gap"]["count"], 36);
    let diff = run_command(env!("CARGO_BIN_EXE_h2load-rs"), &["diff", twice, twice]);
    assert_eq!(diff.code, 0, "{}", diff.stderr);
}

#[test]
fn fail_if_judges_the_event_figures_and_the_search_refuses_them() {
    // 16 streams of 10 events 1 ms apart: 144 gaps of about 1 ms, enough for a p50.
    let args = |threshold: &'static str| ["-c", "2", "-n", "16", "--fail-if", threshold];
    let held = run("h2c", &args("event_gap_p50>500ms"), "/sse/10/1/8");
    assert_eq!(held.output.code, 0, "{}", held.output.stderr);
    let threshold = &held.cell()["thresholds"][0];
    assert_eq!(threshold["breached"], false, "{threshold}");
    assert_eq!(threshold["judged"], true, "{threshold}");
    // Its value is the cell's own p50 (the truth suite tests it against the schedule).
    assert_eq!(
        threshold["value"].as_f64(),
        held.cell()["latency"]["event_gap"]["percentiles"]["p50"].as_f64(),
        "{threshold}"
    );
    assert!(threshold["ci"].is_object(), "an interval: {threshold}");
    let breached = run("h2c", &args("first_event_p50>500us"), "/sse/10/1/8");
    assert_eq!(breached.output.code, 3, "{}", breached.output.stderr);
    assert!(
        breached.output.stderr.contains("first_event_p50"),
        "{}",
        breached.output.stderr
    );
    // A cell that read no event cannot judge an event figure either way.
    let no_events = run(
        "h2c",
        &["-n", "16", "--fail-if", "first_event_p99>1us"],
        "/ping",
    );
    assert_eq!(no_events.output.code, 0, "{}", no_events.output.stderr);
    assert_eq!(no_events.cell()["thresholds"][0]["judged"], false);
    assert!(
        no_events
            .output
            .stderr
            .contains("threshold not judged: first_event_p99>1us"),
        "{}",
        no_events.output.stderr
    );
    let search = run(
        "h2c",
        &["--find-max", "--slo", "event_gap_p99<50ms"],
        "/sse/10/1/8",
    );
    assert_eq!(search.output.code, 2, "{}", search.output.stderr);
    assert!(search
        .output
        .stderr
        .contains("event figures are thresholds of --fail-if"));
}

#[test]
fn the_comparison_exports_carry_the_event_figures() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("cells.csv");
    let markdown = dir.path().join("cells.md");
    let target = url("/sse/4/1/8");
    let sweep = h2load_rs(&[
        "--proto",
        "h1,h2c",
        "-c",
        "2",
        "-n",
        "8",
        "--csv",
        csv.to_str().unwrap(),
        "--markdown",
        markdown.to_str().unwrap(),
        &target,
    ]);
    assert_eq!(sweep.output.code, 0, "{}", sweep.output.stderr);
    let csv = std::fs::read_to_string(csv).unwrap();
    let mut lines = csv.lines();
    let titles: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = |title: &str| {
        titles
            .iter()
            .position(|t| *t == title)
            .unwrap_or_else(|| panic!("no {title} column: {titles:?}"))
    };
    let (rate, first, gap) = (
        column("events/s"),
        column("1st event p99"),
        column("event gap p50"),
    );
    for (cell, line) in lines.enumerate() {
        let fields: Vec<&str> = line.split(',').collect();
        let figure = |at: usize| fields[at].parse::<f64>().unwrap();
        // Each column is the cell's own figure (ms with two decimals for latencies).
        let json = |path: &str| sweep.num(&format!("/cells/{cell}/{path}"));
        assert!(
            (figure(rate) - json("events/events_per_s")).abs() < 0.1,
            "{line}"
        );
        let first_ms = json("latency/first_event/percentiles/p99") / 1000.0;
        let gap_ms = json("latency/event_gap/percentiles/p50") / 1000.0;
        assert!((figure(first) - first_ms).abs() < 0.006, "{line}");
        assert!((figure(gap) - gap_ms).abs() < 0.006, "{line}");
    }
    let markdown = std::fs::read_to_string(markdown).unwrap();
    assert!(markdown.contains("| events/s |"), "{markdown}");
    assert!(markdown.contains("| event gap p99 |"), "{markdown}");
}
