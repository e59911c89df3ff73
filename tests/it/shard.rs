//! `--shard I/N`: N runs of one scenario split its counts, connections and schedule exactly, so
//! their merged report has one machine's totals; the modes with one decider are refused.

use std::path::{Path, PathBuf};

use crate::common::{assert_usage_error, run_command, run_command_with_env, url};

const BIN: &str = env!("CARGO_BIN_EXE_h2load-rs");
/// Long enough for a 30-request run on a busy machine.
const LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Runs `args` with `--json` into `dir/NAME.json`, which it returns; the run must succeed.
fn run_into(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let path = dir.join(format!("{name}.json"));
    let mut full = args.to_vec();
    full.extend(["-q", "--json", path.to_str().unwrap()]);
    let output = run_command(BIN, &full);
    assert_eq!(output.code, 0, "{full:?}: {}", output.stderr);
    path
}

fn cell(path: &Path) -> serde_json::Value {
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    json["cells"][0].clone()
}

/// Runs the N shards of `args` one after another and merges them: the shards' first cells and
/// the merged one.
fn sharded(dir: &Path, args: &[&str], count: u64) -> (Vec<serde_json::Value>, serde_json::Value) {
    let paths: Vec<PathBuf> = (1..=count)
        .map(|index| {
            let shard = format!("{index}/{count}");
            run_into(
                dir,
                &format!("part{index}"),
                &[args, &["--shard", &shard]].concat(),
            )
        })
        .collect();
    let merged = dir.join("merged.json");
    let mut merge = vec!["merge"];
    merge.extend(paths.iter().map(|path| path.to_str().unwrap()));
    merge.extend(["--json", merged.to_str().unwrap()]);
    let output = run_command(BIN, &merge);
    assert_eq!(output.code, 0, "{}", output.stderr);
    (paths.iter().map(|path| cell(path)).collect(), cell(&merged))
}

#[test]
fn shards_of_a_counted_run_split_requests_and_connections_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let target = url("/ping");
    let (parts, merged) = sharded(dir.path(), &["-n", "1000", "-c", "7", &target], 3);
    let field = |part: &serde_json::Value, path: &str| {
        part.pointer(path)
            .and_then(serde_json::Value::as_u64)
            .unwrap()
    };
    // The remainders go to the first shards: 334 + 333 + 333 requests, 3 + 2 + 2 connections.
    let requests: Vec<u64> = parts
        .iter()
        .map(|part| field(part, "/requests/total"))
        .collect();
    let clients: Vec<u64> = parts
        .iter()
        .map(|part| field(part, "/settings/clients"))
        .collect();
    assert_eq!((requests, clients), (vec![334, 333, 333], vec![3, 2, 2]));
    for (index, part) in parts.iter().enumerate() {
        assert_eq!(part["settings"]["shard"]["index"], index as u64 + 1);
        assert_eq!(part["settings"]["shard"]["count"], 3);
    }
    // Merged: one machine's totals, to the request.
    assert_eq!(field(&merged, "/requests/total"), 1000);
    assert_eq!(field(&merged, "/requests/succeeded"), 1000);
    assert_eq!(field(&merged, "/latency/request/count"), 1000);
    assert_eq!(field(&merged, "/connections/opened"), 7);
}

/// A paced schedule split N ways: each shard takes every N-th send time of the whole from its
/// own, so the shards' schedules hold exactly the whole's send times (rounding each shard's count
/// alone would give 7 shards of 300/s over 1 s 43 each: 301).
#[test]
fn shards_of_a_paced_run_hold_the_whole_schedule_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let target = url("/ping");
    for (name, args) in [
        (
            "rate",
            &["--h1", "-c", "7", "--rate", "300", "-D", "1s"][..],
        ),
        (
            "stages",
            &["--h1", "-c", "7", "--stages", "500ms:200,500ms:400"],
        ),
    ] {
        let whole = cell(&run_into(dir.path(), "whole", &[args, &[&target]].concat()));
        let scheduled = whole["rate"]["scheduled"].as_u64().unwrap();
        for count in [3, 7] {
            let (parts, merged) = sharded(dir.path(), &[args, &[&target]].concat(), count);
            let sum: u64 = parts
                .iter()
                .map(|part| part["rate"]["scheduled"].as_u64().unwrap())
                .sum();
            assert_eq!(sum, scheduled, "{name}, {count} shards");
            // The rates add up to the whole's, which the merged cell offers.
            let requested = merged["rate"]["requested_per_s"].as_f64().unwrap();
            let expected = whole["rate"]["requested_per_s"].as_f64().unwrap();
            assert!(
                (requested - expected).abs() <= 1e-9 * expected,
                "{name}, {count} shards: {requested} vs {expected}"
            );
        }
    }
}

/// A part that never reported is named and fails the merge (exit status 1), its report still
/// written with the parts there are, and so is one that was interrupted; a part given twice,
/// parts of different splits and a whole run among parts are usage errors.
#[test]
fn a_missing_part_is_named_and_fails_the_merge() {
    let dir = tempfile::tempdir().unwrap();
    let target = url("/ping");
    let part = |index: u64, count: u64| {
        let shard = format!("{index}/{count}");
        run_into(
            dir.path(),
            &format!("p{index}of{count}"),
            &["-n", "90", "-c", "3", "--shard", &shard, &target],
        )
    };
    let (first, third) = (part(1, 3), part(3, 3));
    let merged = dir.path().join("merged.json");
    let paths = |list: &[&PathBuf]| -> Vec<String> {
        list.iter()
            .map(|path| path.to_str().unwrap().to_owned())
            .collect()
    };
    let merge = |inputs: &[&PathBuf]| {
        let inputs = paths(inputs);
        let mut args = vec!["merge"];
        args.extend(inputs.iter().map(String::as_str));
        args.extend(["--json", merged.to_str().unwrap()]);
        run_command(BIN, &args)
    };
    let output = merge(&[&first, &third]);
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert!(
        output.stderr.contains("shard 2/3 missing"),
        "{}",
        output.stderr
    );
    let incomplete = cell(&merged);
    assert_eq!(
        incomplete["requests"]["total"], 60,
        "the parts there are: 30 + 30"
    );
    assert!(incomplete["settings"]["shard"].is_null());
    let warned = incomplete["warnings"].as_array().unwrap();
    assert!(
        warned
            .iter()
            .any(|warning| warning.as_str().unwrap().starts_with("shard 2/3 missing")),
        "{warned:?}"
    );
    // Every part: no warning, status 0.
    let second = part(2, 3);
    let output = merge(&[&third, &first, &second]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(cell(&merged)["requests"]["total"], 90);
    // A part stopped by a signal (its pod deleted or evicted) wrote what it ran: named, and the
    // merge fails as for a missing one.
    let mut stopped: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&second).unwrap()).unwrap();
    stopped["cells"][0]["interrupted"] = true.into();
    let stopped_path = dir.path().join("stopped.json");
    std::fs::write(&stopped_path, stopped.to_string()).unwrap();
    let output = merge(&[&first, &stopped_path, &third]);
    assert_eq!(output.code, 1, "{}", output.stderr);
    let says = format!("shard 2/3 ({}) interrupted", stopped_path.display());
    assert!(output.stderr.contains(&says), "{}", output.stderr);
    assert!(!output.stderr.contains("missing"), "{}", output.stderr);
    assert_eq!(cell(&merged)["interrupted"], true);
    for (inputs, says) in [
        (vec![&first, &first], "shard 1/3 is in two reports"),
        (
            vec![&first, &part(1, 2)],
            "the reports come from different splits",
        ),
        (
            vec![
                &first,
                &run_into(dir.path(), "whole", &["-n", "90", "-c", "3", &target]),
            ],
            "is a whole run",
        ),
    ] {
        let output = merge(&inputs);
        assert_eq!(output.code, 2, "{says}: {}", output.stderr);
        assert!(output.stderr.contains(says), "{}", output.stderr);
    }
}

#[test]
fn what_cannot_be_split_is_a_usage_error() {
    let target = url("/ping");
    for (args, says) in [
        (&["--shard", "4/3"][..], "shard 4 of 3 does not exist"),
        (
            &["--shard", "1/3", "-c", "2"],
            "-c 2 leaves shard 1/3 without a connection",
        ),
        (
            &["--shard", "1/3", "-c", "3", "-n", "2"],
            "-n 2 leaves shard 1/3 without a request",
        ),
        (
            &["--shard", "1/2", "-c", "2", "--find-max"],
            "--shard cannot split --find-max",
        ),
        (
            &[
                "--shard",
                "1/2",
                "-c",
                "2",
                "--until-stable",
                "5%",
                "-D",
                "1s",
            ],
            "--shard cannot split --until-stable",
        ),
    ] {
        assert_usage_error(&[args, &[&target]].concat(), says);
    }
    // The index from an Indexed Job's pod: from 0 there, from 1 here; without it, an error.
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("job.json");
    let args = [
        "--shard",
        "3",
        "-c",
        "3",
        "-n",
        "30",
        "-q",
        "--json",
        json.to_str().unwrap(),
        &target,
    ];
    let output = run_command_with_env(BIN, &args, &[("JOB_COMPLETION_INDEX", Some("2"))], LIMIT);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(
        cell(&json)["settings"]["shard"],
        serde_json::json!({"index": 3, "count": 3})
    );
    let output = run_command_with_env(BIN, &args, &[("JOB_COMPLETION_INDEX", None)], LIMIT);
    assert_eq!(output.code, 2, "{}", output.stderr);
    assert!(
        output.stderr.contains("JOB_COMPLETION_INDEX"),
        "{}",
        output.stderr
    );
}

/// Parts started together by `--start-at` (three processes at once here): each says how late
/// after that time its measured period began, the merge reports their skew (within 100 ms, the
/// flagging tolerance, widened by the timer noise measured) and flags none. Parts run one after
/// another are each flagged as late, and a paced part that could not keep its rate as starved.
#[test]
fn the_merge_reports_the_parts_start_skew_and_flags_a_late_or_starved_part() {
    let noise = crate::common::timer_noise();
    let dir = tempfile::tempdir().unwrap();
    let target = url("/ping");
    let at = std::time::SystemTime::now() + std::time::Duration::from_secs(2);
    let at = jiff::Timestamp::try_from(at).unwrap().to_string();
    let children: Vec<(PathBuf, std::process::Child)> = (1..=3)
        .map(|index| {
            let path = dir.path().join(format!("together{index}.json"));
            let shard = format!("{index}/3");
            let child = std::process::Command::new(BIN)
                .args([
                    "-n",
                    "300",
                    "-c",
                    "3",
                    "--shard",
                    &shard,
                    "--start-at",
                    &at,
                    "-q",
                ])
                .args(["--json", path.to_str().unwrap(), &target])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            (path, child)
        })
        .collect();
    let paths: Vec<PathBuf> = children
        .into_iter()
        .map(|(path, mut child)| {
            assert!(child.wait().unwrap().success());
            path
        })
        .collect();
    let merged = dir.path().join("merged.json");
    let mut args = vec!["merge"];
    args.extend(paths.iter().map(|path| path.to_str().unwrap()));
    args.extend(["--json", merged.to_str().unwrap()]);
    let output = run_command(BIN, &args);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let parts = &cell(&merged)["parts"];
    let skew = parts["start_skew_ms"].as_f64().unwrap();
    let allowed = 100.0
        + noise
            .widening(std::time::Duration::from_millis(400))
            .as_secs_f64()
            * 1000.0;
    assert!(
        skew <= allowed,
        "skew {skew} ms, {allowed} allowed; {noise}"
    );
    for part in parts["parts"].as_array().unwrap() {
        let late = part["start_late_ms"].as_f64().unwrap();
        assert!((0.0..allowed + 1000.0).contains(&late), "{part}");
        assert!(part["outside"].is_null(), "{part}");
    }
    assert!(
        output.stdout.contains(&format!(
            "parts: 3; their measured periods began within {skew:.0} ms of each other"
        )),
        "{}",
        output.stdout
    );
    // One after another: each later part began a whole run after the first.
    let (_, one_by_one) = sharded(dir.path(), &["-D", "500ms", "-c", "2", &target], 2);
    let second = &one_by_one["parts"]["parts"][1];
    assert!(
        second["started_after_ms"].as_f64().unwrap() >= 500.0,
        "{second}"
    );
    assert!(
        second["outside"].as_str().unwrap().starts_with("began"),
        "{second}"
    );
    // Paced beyond what its 2 connections can carry from a 50 ms handler (40 req/s): starved.
    let slow = url("/delay/50");
    let (_, starved) = sharded(
        dir.path(),
        &["--rate", "200", "-D", "1s", "-c", "4", &slow],
        2,
    );
    let first = &starved["parts"]["parts"][0];
    assert!(
        first["outside"].as_str().unwrap().starts_with("achieved"),
        "{first}"
    );
    assert_eq!(first["requested_per_s"], 100.0);
}

/// Workers that write `--json -` leave their reports in their pods' logs, among their other
/// lines; `kubectl logs` of the Job, piped to `merge -`, merges them (no shared volume).
#[test]
fn reports_in_a_log_of_every_worker_merge_from_standard_input() {
    use std::io::Write;
    let target = url("/ping");
    let pods: Vec<(u64, Vec<u8>)> = [1, 3, 2]
        .into_iter()
        .map(|index| {
            let shard = format!("{index}/3");
            // As k8s-job runs them: -q, so that stderr holds only unindented lines.
            let output = std::process::Command::new(BIN)
                .args([
                    "-n", "300", "-c", "3", "--shard", &shard, "-q", "--json", "-", &target,
                ])
                .output()
                .unwrap();
            assert!(output.status.success());
            // Ends its line, or the next pod's first line in the log is glued to its brace.
            assert!(output.stdout.ends_with(b"}\n"), "{}", index);
            // As a pod's log has them: its standard error and output, copied by the runtime
            // from two pipes, line by line, so stderr can land inside the report (seen on a
            // real cluster); here in the middle of pod 3's.
            let log = if index == 3 {
                let lines: Vec<&[u8]> = output.stdout.split_inclusive(|&b| b == b'\n').collect();
                let middle = lines.len() / 2;
                [
                    lines[..middle].concat(),
                    output.stderr,
                    lines[middle..].concat(),
                ]
                .concat()
            } else {
                [output.stderr, output.stdout].concat()
            };
            (index, log)
        })
        .collect();
    let log_of = |skip: Option<u64>| -> Vec<u8> {
        pods.iter()
            .filter(|(index, _)| Some(*index) != skip)
            .flat_map(|(_, log)| log.clone())
            .collect()
    };
    let log = log_of(None);
    let merge = |log: &[u8]| {
        let mut child = std::process::Command::new(BIN)
            .args(["merge", "-", "--json", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(log).unwrap();
        child.wait_with_output().unwrap()
    };
    let output = merge(&log);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let merged: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let cell = &merged["cells"][0];
    assert_eq!(cell["requests"]["total"], 300);
    assert_eq!(cell["connections"]["opened"], 3);
    let sources: Vec<&str> = cell["parts"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|part| part["source"].as_str().unwrap())
        .collect();
    assert_eq!(sources.len(), 3);
    assert!(
        sources.iter().all(|source| source.starts_with("-:")),
        "{sources:?}"
    );
    // The log of a Job whose second pod died: named, and the status says so.
    let without_second = log_of(Some(2));
    let output = merge(&without_second);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("shard 2/3 missing"));
    // A report that cannot be read (cut in the middle of a value): named, in the merged
    // report's warnings too, and the status says so.
    let broken =
        String::from_utf8(log.clone())
            .unwrap()
            .replacen("\"cells\": [", "\"cells\": [}", 1);
    let output = merge(broken.as_bytes());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("a report that could not be read"),
        "{stderr}"
    );
    let merged: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let warnings = merged["cells"][0]["warnings"].to_string();
    assert!(
        warnings.contains("a report that could not be read"),
        "{warnings}"
    );
    assert!(warnings.contains("missing"), "{warnings}");
    // Nothing that is a report: a usage error.
    let output = merge(b"h2load-rs: error\n");
    assert_eq!(output.status.code(), Some(2));
}
