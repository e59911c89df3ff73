//! `merge` and `diff` read back every report the tool writes (each merges with itself, merges
//! again and diffs): runs that never connected (requests never sent are errored, not done), timed
//! out, were interrupted, missed send times, did no request, warmed up, failed checks, and h3 runs.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{assert_usage_error, run_command, url};

const BIN: &str = env!("CARGO_BIN_EXE_h2load-rs");

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// A loopback URL on a TCP port nothing listens on (free when the test asked for it).
fn refusing_url() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("http://127.0.0.1:{port}/ping")
}

/// Runs h2load-rs with `args` into `dir/report.json`, whatever its exit status (a run that fails
/// still writes its report), and returns the report's path.
fn report(dir: &Path, args: &[&str]) -> PathBuf {
    let path = dir.join("report.json");
    let mut full = args.to_vec();
    full.extend(["-q", "--json", path.to_str().unwrap()]);
    let run = run_command(BIN, &full);
    assert!(!run.stderr.contains("panicked"), "{full:?}: {}", run.stderr);
    assert!(
        path.exists(),
        "{full:?} wrote no report (status {}): {}",
        run.code,
        run.stderr
    );
    path
}

/// The counts of the first cell's `requests` that merging adds up.
const COUNTS: [&str; 8] = [
    "total",
    "started",
    "done",
    "succeeded",
    "failed",
    "errored",
    "timeout",
    "never_sent",
];

/// Merges `report` with itself, that merge with it once more, and diffs it against itself: each
/// succeeds, and the second merge's counts are three times the report's. Returns the report's
/// first cell, for the caller to check the run was of the kind it meant.
fn assert_read_back(report: &Path) -> serde_json::Value {
    let dir = report.parent().unwrap();
    let one = report.to_str().unwrap();
    let twice = dir.join("twice.json");
    let twice = twice.to_str().unwrap();
    let thrice = dir.join("thrice.json");
    let thrice = thrice.to_str().unwrap();
    for args in [
        vec!["merge", one, one, "--json", twice],
        vec!["merge", twice, one, "--json", thrice],
        vec!["diff", one, one],
    ] {
        let output = run_command(BIN, &args);
        assert_eq!(output.code, 0, "{args:?}: {}", output.stderr);
    }
    let cell = json(report)["cells"][0].clone();
    let merged = &json(Path::new(thrice))["cells"][0];
    for count in COUNTS {
        let value = |cell: &serde_json::Value| cell["requests"][count].as_u64().unwrap();
        assert_eq!(value(merged), 3 * value(&cell), "requests.{count}");
    }
    cell
}

fn count(cell: &serde_json::Value, path: &str) -> u64 {
    path.split('.')
        .fold(cell, |value, key| &value[key])
        .as_u64()
        .unwrap_or_else(|| panic!("{path} in {cell}"))
}

#[test]
fn a_run_that_never_connected_merges_and_diffs() {
    // Before the fix: "requests.errored (100) is more than requests.done (0)".
    let dir = tempfile::tempdir().unwrap();
    let target = refusing_url();
    let cell = assert_read_back(&report(dir.path(), &["-n", "100", "-c", "2", &target]));
    assert_eq!(count(&cell, "requests.done"), 0);
    assert_eq!(count(&cell, "requests.never_sent"), 100);
    assert_eq!(count(&cell, "requests.errored"), 100);
}

#[test]
fn a_timed_run_that_never_connected_merges_and_diffs() {
    let dir = tempfile::tempdir().unwrap();
    let target = refusing_url();
    let cell = assert_read_back(&report(dir.path(), &["-D", "1s", "-c", "2", &target]));
    assert_eq!(count(&cell, "requests.done"), 0);
    assert_eq!(count(&cell, "connections.failed"), 2);
}

#[test]
fn an_h3_run_that_never_connected_merges_and_diffs() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let target = format!("https://127.0.0.1:{port}/ping");
    let args = [
        "--proto",
        "h3",
        "--cacert",
        crate::h3::CA,
        "--connect-timeout",
        "1s",
        "-n",
        "10",
        &target,
    ];
    let cell = assert_read_back(&report(dir.path(), &args));
    assert_eq!(count(&cell, "requests.done"), 0);
    assert_eq!(count(&cell, "requests.never_sent"), 10);
}

#[test]
fn an_h3_run_merges_and_diffs() {
    let dir = tempfile::tempdir().unwrap();
    let target = crate::h3::url("/ping");
    let args = [
        "--proto",
        "h3",
        "--cacert",
        crate::h3::CA,
        "-c",
        "2",
        "-m",
        "2",
        "-n",
        "200",
        &target,
    ];
    let cell = assert_read_back(&report(dir.path(), &args));
    assert_eq!(count(&cell, "requests.succeeded"), 200);
}

#[test]
fn a_run_whose_requests_timed_out_merges_and_diffs() {
    let dir = tempfile::tempdir().unwrap();
    let target = url("/delay/2000");
    let args = [
        "--h1",
        "-c",
        "1",
        "-n",
        "3",
        "--request-timeout",
        "100ms",
        &target,
    ];
    let cell = assert_read_back(&report(dir.path(), &args));
    assert_eq!(count(&cell, "requests.timeout"), 3);
}

#[test]
fn a_run_with_no_request_done_merges_and_diffs() {
    // Its one request is still in flight when the drain (1 s) ends.
    let dir = tempfile::tempdir().unwrap();
    let target = url("/delay/5000");
    let cell = assert_read_back(&report(
        dir.path(),
        &["--h1", "-c", "1", "-D", "1s", &target],
    ));
    assert_eq!(count(&cell, "requests.done"), 0);
    assert_eq!(count(&cell, "requests.in_flight_at_stop"), 1);
}

#[test]
fn a_rate_with_missed_sends_merges_and_diffs() {
    // One connection, 50 ms a request: at most 20 of the 100 send times a second are taken.
    let dir = tempfile::tempdir().unwrap();
    let target = url("/delay/50");
    let args = ["--h1", "-c", "1", "--rate", "100", "-D", "1s", &target];
    let cell = assert_read_back(&report(dir.path(), &args));
    assert!(count(&cell, "rate.missed") > 0, "{}", cell["rate"]);
}

#[test]
fn a_warm_up_with_requests_across_its_end_merges_and_diffs() {
    let dir = tempfile::tempdir().unwrap();
    let target = url("/delay/70");
    let args = [
        "--h1",
        "-c",
        "2",
        "--warm-up-time",
        "300ms",
        "-D",
        "1s",
        &target,
    ];
    let cell = assert_read_back(&report(dir.path(), &args));
    assert!(count(&cell, "requests.done") > 0);
}

#[test]
fn a_run_whose_responses_failed_a_check_merges_and_diffs() {
    // Failed, not errored: the responses arrived and are timed.
    let dir = tempfile::tempdir().unwrap();
    let target = url("/ping");
    let args = ["--h1", "-n", "20", "--expect-status", "201", &target];
    let cell = assert_read_back(&report(dir.path(), &args));
    assert_eq!(count(&cell, "requests.failed"), 20);
    assert_eq!(count(&cell, "checks.failed"), 20);
}

#[test]
fn an_interrupted_run_merges_and_diffs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.json");
    let target = url("/delay/10");
    let args = ["--h1", "-c", "2", "-n", "1000000", "--json"];
    let mut child = Command::new(BIN)
        .args(args)
        .arg(&path)
        .arg(&target)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The signals are watched from before the cell starts.
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut printed = String::new();
    while !printed.contains("starting benchmark") {
        let read = stdout.read_line(&mut printed).unwrap();
        assert!(read > 0, "no 'starting benchmark' on stdout: {printed}");
    }
    std::thread::sleep(Duration::from_millis(500));
    let killed = Command::new("kill")
        .args(["-s", "INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    std::io::copy(&mut stdout, &mut std::io::sink()).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let cell = assert_read_back(&path);
    assert_eq!(cell["interrupted"], true);
    assert!(count(&cell, "requests.done") > 0);
}

/// Parts run with `--until-stable` merge into a whole judged on its own intervals: the merged
/// half-widths are those of the merged p99's and rate's 95% intervals (narrower than a part's:
/// twice the samples), not the first part's; the target is the tightest part's.
#[test]
fn until_stable_parts_merge_into_a_whole_judged_on_its_own_intervals() {
    let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let target = url("/ping");
    let part = |dir: &Path, pct: &str| {
        report(
            dir,
            &[
                "--h1",
                "-c",
                "4",
                "-D",
                "2s",
                "--until-stable",
                pct,
                &target,
            ],
        )
    };
    let (a, b) = (part(first.path(), "5%"), part(second.path(), "3%"));
    let merged_path = first.path().join("merged.json");
    // `merge A B --json merged.json`, which must succeed; the merged report's first cell.
    let merge_two = |a: &Path, b: &Path| {
        let (a, b, out) = (
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            merged_path.to_str().unwrap(),
        );
        let output = run_command(BIN, &["merge", a, b, "--json", out]);
        assert_eq!(output.code, 0, "{}", output.stderr);
        json(&merged_path)["cells"][0].clone()
    };
    let merged = merge_two(&a, &b);
    let cell = &merged;
    let stable = &cell["until_stable"];
    assert_eq!(stable["target_pct"], 3.0, "{stable}");
    let half = |value: f64, bounds: &serde_json::Value| {
        let (low, high) = (
            bounds["ci_low"].as_f64().unwrap(),
            bounds["ci_high"].as_f64().unwrap(),
        );
        100.0 * (high - value).max(value - low) / value
    };
    let p99 = cell["latency"]["request"]["percentiles"]["p99"]
        .as_f64()
        .unwrap();
    let p99_half = half(p99, &cell["latency"]["request"]["confidence"]["p99"]);
    let rate_half = half(
        cell["requests_per_s"].as_f64().unwrap(),
        &cell["requests_per_s_ci"],
    );
    let close = |reported: &serde_json::Value, computed: f64| {
        (reported.as_f64().unwrap() - computed).abs() < 1e-9 * computed.max(1.0)
    };
    assert!(close(&stable["p99_half_width_pct"], p99_half), "{stable}");
    assert!(close(&stable["rate_half_width_pct"], rate_half), "{stable}");
    assert_eq!(
        stable["reached"],
        p99_half <= 3.0 && rate_half <= 3.0,
        "{stable}"
    );
    let parts = [json(&a), json(&b)];
    let stops: Vec<Option<f64>> = parts
        .iter()
        .map(|part| part["cells"][0]["until_stable"]["stopped_after_s"].as_f64())
        .collect();
    match stops.iter().copied().collect::<Option<Vec<f64>>>() {
        Some(all) => assert_eq!(
            stable["stopped_after_s"].as_f64(),
            Some(all.into_iter().fold(0.0, f64::max))
        ),
        None => assert!(stable["stopped_after_s"].is_null(), "{stable}"),
    }
    // Without the flag in every part, the whole ran with none.
    let plain = report(second.path(), &["--h1", "-c", "4", "-D", "1s", &target]);
    assert!(merge_two(&a, &plain)["until_stable"].is_null());
}

/// `merge --fail-if` reads its thresholds on the merged cell (histograms added, counts summed):
/// exit status 3 on a breach, 0 otherwise, as a run's `--fail-if`.
#[test]
fn fail_if_on_the_merged_histograms_gates_a_distributed_run() {
    let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let target = url("/ping");
    let a = report(first.path(), &["-n", "250", "-c", "2", &target]);
    let b = report(second.path(), &["-n", "250", "-c", "2", &target]);
    let merged = first.path().join("merged.json");
    let merge = |gate: &str| {
        run_command(
            BIN,
            &[
                "merge",
                a.to_str().unwrap(),
                b.to_str().unwrap(),
                "--fail-if",
                gate,
                "--fail-if",
                "errors>1%",
                "--json",
                merged.to_str().unwrap(),
            ],
        )
    };
    let breached = merge("p99>1us");
    assert_eq!(breached.code, 3, "{}", breached.stderr);
    assert!(
        breached.stderr.contains("threshold breached: p99"),
        "{}",
        breached.stderr
    );
    let cell = &json(&merged)["cells"][0];
    assert_eq!(cell["requests"]["done"], 500);
    let thresholds = cell["thresholds"].as_array().unwrap();
    assert_eq!(thresholds.len(), 2);
    // The merged p99 is the value read, and the errors share is 0 of 500.
    assert_eq!(
        thresholds[0]["value"].as_f64(),
        cell["latency"]["request"]["percentiles"]["p99"].as_f64()
    );
    assert_eq!(
        (&thresholds[0]["breached"], &thresholds[1]["breached"]),
        (&true.into(), &false.into())
    );
    let held = merge("p99>1h");
    assert_eq!(held.code, 0, "{}", held.stderr);
    assert!(
        !held.stderr.contains("threshold breached"),
        "{}",
        held.stderr
    );
    // A bad expression is a usage error, before anything is read.
    let output = run_command(
        BIN,
        &["merge", a.to_str().unwrap(), "--fail-if", "p99>>1ms"],
    );
    assert_eq!(output.code, 2, "{}", output.stderr);
}

/// The report at `path` with `edit` applied to its first cell, written to `dir/name`.
fn edited_copy(
    path: &Path,
    dir: &Path,
    name: &str,
    edit: impl FnOnce(&mut serde_json::Value),
) -> String {
    let mut document = json(path);
    edit(&mut document["cells"][0]);
    let copy = dir.join(name);
    std::fs::write(&copy, serde_json::to_vec(&document).unwrap()).unwrap();
    copy.to_str().unwrap().to_owned()
}

#[test]
fn a_shard_that_cannot_exist_is_a_usage_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let target = url("/ping");
    let part = report(dir, &["-n", "30", "-c", "3", "--shard", "1/3", &target]);
    for (index, count) in [
        (0u64, 3u64),
        (5, 3),
        (2, 1),
        (0, 0),
        (1, u64::MAX),
        (1, 1_000_000_000_000),
    ] {
        let bad = edited_copy(&part, dir, &format!("{index}of{count}.json"), |cell| {
            cell["settings"]["shard"] = serde_json::json!({"index": index, "count": count});
        });
        let says = format!("'{bad}': cell 1: settings.shard {index}/{count} is no part of a split");
        assert_usage_error(&["merge", &bad, part.to_str().unwrap()], &says);
    }
}

#[test]
fn counters_that_contradict_each_other_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let good = report(dir, &["-n", "20", "-c", "1", &url("/ping")]);
    let cell = json(&good)["cells"][0].clone();
    let done = count(&cell, "requests.done");
    for (name, field, value, says) in [
        (
            "succeeded",
            "succeeded",
            done + 1,
            format!(
                "requests.succeeded ({}) is more than requests.done ({done})",
                done + 1
            ),
        ),
        (
            "total",
            "total",
            done - 1,
            format!(
                "requests.started ({done}) is more than requests.total ({})",
                done - 1
            ),
        ),
        (
            "huge",
            "in_flight_at_stop",
            1 << 63,
            "requests.in_flight_at_stop (9223372036854775808) is past 2^63 - 1".to_owned(),
        ),
    ] {
        let bad = edited_copy(&good, dir, &format!("{name}.json"), |cell| {
            cell["requests"][field] = value.into();
        });
        assert_usage_error(&["merge", &bad], &format!("'{bad}': cell 1: {says}"));
    }
}

#[test]
fn reports_of_different_scenarios_are_refused_unless_allowed_and_then_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let target = url("/ping");
    let run = |name: &str, args: &[&str]| {
        let path = report(dir, args);
        let named = dir.join(name);
        std::fs::rename(path, &named).unwrap();
        named.to_str().unwrap().to_owned()
    };
    // Parts of -c 3 and -c 4 split in two hold 2 connections and 15 requests alike: only the
    // whole scenario each records tells them apart.
    let of_three = run(
        "three.json",
        &["-n", "30", "-c", "3", "--shard", "1/2", &target],
    );
    let of_four = run(
        "four.json",
        &["-n", "30", "-c", "4", "--shard", "2/2", &target],
    );
    let get = run("get.json", &["-n", "20", "-c", "1", &target]);
    let head = run(
        "head.json",
        &["-n", "20", "-c", "1", "--method", "HEAD", &target],
    );
    let other_url = run("other.json", &["-n", "20", "-c", "1", &url("/other")]);
    for (a, b, differ) in [
        (&of_three, &of_four, "-c, -n and rate"),
        (&get, &head, "method"),
        (&get, &other_url, "URLs"),
    ] {
        let says =
            format!("'{b}' ran another scenario than '{a}' (cell 1: they differ in {differ})");
        assert_usage_error(&["merge", a, b], &says);
    }
    let merged = dir.join("mixed.json");
    let (markdown, html) = (dir.join("mixed.md"), dir.join("mixed.html"));
    let output = run_command(
        BIN,
        &[
            "merge",
            "--allow-mixed",
            &of_three,
            &of_four,
            "--json",
            merged.to_str().unwrap(),
            "--markdown",
            markdown.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ],
    );
    assert_eq!(output.code, 0, "{}", output.stderr);
    let warning =
        format!("merged with --allow-mixed: '{of_four}' ran another scenario than '{of_three}'");
    assert!(output.stdout.contains(&warning), "{}", output.stdout);
    // Every output says so: the Markdown's verdicts and the HTML's (quotes escaped there).
    let markdown = std::fs::read_to_string(&markdown).unwrap();
    assert!(
        markdown.contains(&format!("- warning: {warning}")),
        "{markdown}"
    );
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(
        html.contains(r#"<p class="warning">warning: merged with --allow-mixed: "#),
        "{html}"
    );
    let warnings = json(&merged)["cells"][0]["warnings"].clone();
    assert!(
        warnings
            .as_array()
            .unwrap()
            .iter()
            .any(|text| text.as_str().unwrap().starts_with(&warning)),
        "{warnings}"
    );
}

#[test]
fn a_log_of_unreadable_reports_gives_a_few_warnings_and_a_count() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let good =
        std::fs::read_to_string(report(dir, &["-n", "10", "-c", "1", &url("/ping")])).unwrap();
    let log = dir.join("log");
    std::fs::write(
        &log,
        format!("{}{good}\n", "{\"cells\": 1}\n".repeat(100_000)),
    )
    .unwrap();
    let output = run_command(BIN, &["merge", log.to_str().unwrap()]);
    assert_eq!(output.code, 1, "{}", output.stderr);
    let warned: Vec<&str> = output
        .stderr
        .lines()
        .filter(|line| line.starts_with("h2load-rs: merge: "))
        .collect();
    assert_eq!(
        warned.len(),
        4,
        "{}",
        &output.stderr[..output.stderr.len().min(2000)]
    );
    assert!(
        warned[0].contains("line 1: a report that could not be read"),
        "{warned:?}"
    );
    assert_eq!(
        warned[3],
        format!("h2load-rs: merge: {}: and 99997 more objects that looked like reports could not be read", log.display())
    );
}

/// A report of 1,000 cells (one run's cell, each a different `-c`) merges, and diffs against
/// itself, in bounded memory: a cell read from a file holds histograms fitted to its latencies,
/// not three that cover an hour (about 180 KB each). On a debug build this merge held 613 MB
/// before and 122 MB after, the diff (two reports read) 1.17 GB and 206 MB. The bounds, 250 MB
/// and 450 MB, are about 250 KB a cell of each report read.
#[test]
fn a_report_of_a_thousand_cells_merges_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let one = json(&report(
        dir.path(),
        &["-n", "200", "-c", "2", &url("/ping")],
    ));
    let mut many = one.clone();
    let cell = one["cells"][0].clone();
    many["cells"] = (0..1000)
        .map(|index| {
            let mut cell = cell.clone();
            cell["cell"]["index"] = (index + 1).into();
            cell["settings"]["clients"] = (index + 1).into();
            cell
        })
        .collect();
    let path = dir.path().join("many.json");
    std::fs::write(&path, serde_json::to_vec(&many).unwrap()).unwrap();
    let path = path.to_str().unwrap();
    for (args, bound_mb) in [(vec!["merge", path], 250), (vec!["diff", path, path], 450)] {
        let mut child = Command::new(BIN)
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut peak_kb = 0;
        let status = loop {
            // Sampled before try_wait: once reaped, the process has no VmHWM.
            peak_kb = peak_kb.max(crate::hostile::vm_hwm_kb(child.id()).unwrap_or(0));
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        assert!(status.success(), "{args:?}: {status}");
        eprintln!("{args:?}: peak RSS {} MB", peak_kb / 1024);
        assert!(
            peak_kb < bound_mb * 1024,
            "{args:?}: peak RSS {} MB, over {bound_mb} MB",
            peak_kb / 1024
        );
    }
}
