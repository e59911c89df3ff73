//! `--fail-if`: breached thresholds are printed one per line and make the exit status 3; the
//! values checked are the report's own numbers.

use crate::common::{assert_usage_error, h2load_rs, run_command, url};

const BIN: &str = env!("CARGO_BIN_EXE_h2load-rs");

/// The breach lines of a run's stderr.
fn breaches(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|line| line.starts_with("threshold breached: "))
        .collect()
}

#[test]
fn a_breached_latency_threshold_exits_3_naming_it() {
    // 500 requests: the fewest whose p99 is estimable (5 samples beyond it), so judged.
    let run = h2load_rs(&[
        "--h1",
        "-c",
        "2",
        "-n",
        "500",
        "-q",
        "--fail-if",
        "p99>1us",
        "--fail-if",
        "p99 > 10s",
        &url("/ping"),
    ]);
    assert_eq!(run.output.code, 3, "{}", run.output.stderr);
    let lines = breaches(&run.output.stderr);
    assert_eq!(lines.len(), 1, "{}", run.output.stderr);
    assert!(
        lines[0].starts_with("threshold breached: p99 ")
            && lines[0].ends_with(" > 1us (cell h1 c=2 m=1)"),
        "{}",
        lines[0]
    );
    // The value checked is the report's p99, exactly.
    let thresholds = &run.cell()["thresholds"];
    assert_eq!(thresholds[0]["expr"], "p99>1us");
    assert_eq!(thresholds[0]["breached"], true);
    assert_eq!(
        thresholds[0]["value"].as_f64(),
        Some(run.num("latency/request/percentiles/p99"))
    );
    assert_eq!(thresholds[1]["expr"], "p99>10s");
    assert_eq!(thresholds[1]["breached"], false);
}

#[test]
fn a_threshold_that_holds_exits_0() {
    let run = h2load_rs(&[
        "--h1",
        "-n",
        "100",
        "-q",
        "--fail-if",
        "p99>10s",
        &url("/ping"),
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    assert!(breaches(&run.output.stderr).is_empty());
    assert_eq!(run.cell()["thresholds"][0]["breached"], false);
    // Without --fail-if the key is absent.
    let plain = h2load_rs(&["--h1", "-n", "10", "-q", &url("/ping")]);
    assert!(plain.cell().get("thresholds").is_none());
}

#[test]
fn an_errors_threshold_reads_failed_over_done() {
    // Every answer is a 503: 100% failed, and the breach outranks "no request succeeded" (1).
    let failing = h2load_rs(&[
        "--h1",
        "-n",
        "50",
        "-q",
        "--fail-if",
        "errors>1%",
        &url("/status/503"),
    ]);
    assert_eq!(failing.output.code, 3, "{}", failing.output.stderr);
    assert_eq!(
        failing.cell()["thresholds"][0]["value"].as_f64(),
        Some(100.0)
    );
    assert_eq!(
        breaches(&failing.output.stderr),
        ["threshold breached: errors 100.00% > 1% (cell h1 c=1 m=1)"]
    );
    // Every answer a 200: 0%.
    let passing = h2load_rs(&[
        "--h1",
        "-n",
        "50",
        "-q",
        "--fail-if",
        "errors>1%",
        &url("/ping"),
    ]);
    assert_eq!(passing.output.code, 0, "{}", passing.output.stderr);
    assert_eq!(passing.cell()["thresholds"][0]["value"].as_f64(), Some(0.0));
}

#[test]
fn errors_count_resets_and_requests_never_sent() {
    // Every 4th stream reset by the built-in target: 25 of 100 requests fail, 25.00% exactly.
    let reset = h2load_rs(&[
        "--proto",
        "h2c",
        "-c",
        "1",
        "-n",
        "100",
        "-q",
        "--target-fault",
        "rst-stream-every=4",
        "--no-retry",
        "--fail-if",
        "errors>25%",
        "--fail-if",
        "errors>=25%",
    ]);
    assert_eq!(reset.output.code, 3, "{}", reset.output.stderr);
    let thresholds = &reset.cell()["thresholds"];
    assert_eq!(thresholds[0]["value"].as_f64(), Some(25.0));
    assert_eq!(thresholds[0]["breached"], false);
    assert_eq!(thresholds[1]["breached"], true);
    // No connection: the 10 requests were never sent, all failed (100%, not 0 of 0).
    let dead = h2load_rs(&[
        "--h1",
        "-n",
        "10",
        "-q",
        "--fail-if",
        "errors>1%",
        "http://127.0.0.1:1/",
    ]);
    assert_eq!(dead.output.code, 3, "{}", dead.output.stderr);
    assert_eq!(dead.cell()["thresholds"][0]["value"].as_f64(), Some(100.0));
}

#[test]
fn a_scenario_file_sets_thresholds() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ci.toml");
    std::fs::write(
        &file,
        format!(
            "urls = [\"{}\"]\nh1 = true\nrequests = 500\nquiet = true\nfail-if = [\"p99>1us\", \"errors>1%\"]\n",
            url("/ping")
        ),
    )
    .unwrap();
    let run = run_command(BIN, &["run", file.to_str().unwrap()]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    let lines = breaches(&run.stderr);
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(
        lines[0].starts_with("threshold breached: p99 "),
        "{}",
        lines[0]
    );
}

#[test]
fn a_bad_expression_is_one_usage_line() {
    for bad in ["p98<1ms", "p99<5", "errors<2ms", "rps>1s"] {
        assert_usage_error(&["-n", "1", "--fail-if", bad, &url("/ping")], bad);
    }
}
