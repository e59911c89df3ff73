//! No interval where there is no evidence: a figure from too few samples is reported without an
//! interval and says why, a percentile too far in the tail of too few samples is marked not
//! estimable in every output, and the comparison's plain words state a difference only when the
//! ratio's interval excludes 1.

use crate::common::{h2load_rs, url};

/// The plain-words lines of a text report.
fn plain_words(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter_map(|line| line.strip_prefix("  - at "))
        .collect()
}

#[test]
fn one_request_per_cell_gives_no_interval_and_no_verdict() {
    // One request of 500 ms per cell: its timeline has about 20 intervals, all empty but one,
    // whose spread was zero: `h2c/h1 = 0.99 (0.99–0.99)` and a verdict, from one sample each.
    let run = h2load_rs(&[
        "--proto",
        "h1,h2c",
        "-c",
        "1",
        "-n",
        "1",
        &url("/delay/500"),
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let stdout = &run.output.stdout;
    for cell in 0..2 {
        let cell = &run.json["cells"][cell];
        assert_eq!(cell["requests"]["succeeded"], 1, "{stdout}");
        assert!(cell["requests_per_s_ci"].is_null(), "{cell}");
        assert_eq!(
            cell["requests_per_s_ci_reason"],
            serde_json::json!({"too_few": "samples", "n": 1, "needed": 5})
        );
    }
    let row = &run.json["comparison"][1];
    assert_eq!(row["ratio"][0], "h2c/h1");
    assert!(row["ratio_ci"].is_null(), "{row}");
    assert!(row["ratio_ci_kind"].is_null(), "{row}");
    assert_eq!(row["ratio_ci_reason"]["n"], 1, "{row}");
    assert_eq!(row["ratio_ci_reason"]["too_few"], "samples", "{row}");
    // The table: the ratio without an interval, with why; the rates without one.
    let table_row = stdout
        .lines()
        .find(|line| line.contains("h2c/h1 = "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        table_row.trim_end().ends_with("(n=1: no interval)"),
        "{table_row}"
    );
    assert!(
        stdout
            .contains(" req/s (n=1: no interval; an interval needs at least 5 finished requests)"),
        "{stdout}"
    );
    // The plain words: no evidence, no verdict.
    let words = plain_words(stdout);
    assert_eq!(words.len(), 1, "{stdout}");
    assert!(
        words[0].contains("one run is no evidence: n=1: no interval"),
        "{}",
        words[0]
    );
    for verdict in ["fewer", "more requests", "about as many", "no difference"] {
        assert!(!words[0].contains(verdict), "{}", words[0]);
    }
    // Nor is a p99 of one sample set against another.
    assert!(words[0].contains("p99 not estimable"), "{}", words[0]);
}

#[test]
fn the_p99_of_50_requests_is_not_estimable() {
    // 50 requests: 0.5 expected beyond p99 (and 2.5 beyond p95), 5 beyond p90.
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let (csv, markdown, html) = (path("c.csv"), path("c.md"), path("c.html"));
    let run = h2load_rs(&[
        "--proto",
        "h1,h2c",
        "-c",
        "2",
        "-n",
        "50",
        "--csv",
        &csv,
        "--markdown",
        &markdown,
        "--html",
        &html,
        &url("/ping"),
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let request = &run.cell()["latency"]["request"];
    assert_eq!(request["count"], 50);
    let confidence = &request["confidence"];
    assert_eq!(
        confidence["not_estimable"],
        serde_json::json!(["p95", "p99", "p99.9", "p99.99"]),
        "{confidence}"
    );
    for label in ["p95", "p99", "p99.9", "p99.99"] {
        assert!(confidence[label].is_null(), "{label}: {confidence}");
        // The value itself stays: the histogram's.
        assert!(request["percentiles"][label].as_u64().unwrap() > 0);
    }
    for label in ["p50", "p75", "p90"] {
        assert!(
            confidence[label]["ci_low"].is_u64(),
            "{label}: {confidence}"
        );
    }
    let row = &run.json["comparison"][0];
    assert!(row["percentiles_ci"][0].is_object(), "{row}");
    assert!(row["percentiles_ci"][1].is_object(), "p90: {row}");
    assert!(row["percentiles_ci"][2].is_null(), "p99: {row}");
    assert!(row["percentiles_ci"][3].is_null(), "p99.9: {row}");
    // The text: the interval row marks them, the legend says what it means.
    let stdout = &run.output.stdout;
    let intervals = stdout
        .lines()
        .find(|line| line.starts_with("  95% interval  :"))
        .unwrap_or_else(|| panic!("{stdout}"));
    let cells: Vec<&str> = intervals["  95% interval  :".len()..]
        .split_whitespace()
        .collect();
    assert_eq!(cells.len(), 7, "{intervals}");
    assert_eq!(&cells[3..], ["n/e"; 4], "{intervals}");
    assert!(
        cells[..3].iter().all(|cell| cell.contains('–')),
        "{intervals}"
    );
    let legend = "n/e: not estimable, fewer than 5 samples beyond the percentile";
    assert!(stdout.contains(legend), "{stdout}");
    // The comparison table: p99 and p99.9 marked, p50 and p90 with intervals.
    let table = stdout
        .split("comparison of 2 cells")
        .nth(1)
        .unwrap_or_else(|| panic!("{stdout}"));
    let rows = crate::common::comparison_rows(stdout);
    let cell = |title: &str| &rows[0][title];
    for title in ["p99", "p99.9"] {
        assert!(cell(title).ends_with(" (n/e)"), "{title}: {table}");
    }
    for title in ["p50", "p90"] {
        assert!(cell(title).contains('–'), "{title}: {table}");
    }
    assert!(table.contains(legend), "{table}");
    // CSV: the value stays, its interval columns say n/e.
    let csv = std::fs::read_to_string(&csv).unwrap();
    let mut lines = csv.lines();
    let titles: Vec<&str> = lines.next().unwrap().split(',').collect();
    let first: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = |title: &str| first[titles.iter().position(|t| *t == title).unwrap()];
    assert_eq!(column("p99 low"), "n/e", "{csv}");
    assert_eq!(column("p99 high"), "n/e", "{csv}");
    assert!(column("p99").parse::<f64>().unwrap() > 0.0, "{csv}");
    assert!(column("p90 low").parse::<f64>().is_ok(), "{csv}");
    // Markdown and HTML: the same marks and the legend.
    for (name, file) in [("markdown", &markdown), ("html", &html)] {
        let text = std::fs::read_to_string(file).unwrap();
        assert!(text.matches("(n/e)").count() >= 4, "{name}: {text}");
        assert!(text.contains(legend), "{name}");
    }
}

#[test]
fn a_ratio_whose_interval_holds_1_is_no_difference_we_can_see() {
    // Both cells paced by the same Poisson schedule (one seed): the same requests per second,
    // the ratio within a hair of 1, each rate's interval wide (a Poisson count of about 40 in
    // 1 s: ±31% for 95%, so the ratio's is about ±45%). 8 connections for 40 requests/s keep
    // up even on a machine that gives the client a tenth of a core.
    let run = h2load_rs(&[
        "--proto",
        "h1,h2c",
        "-c",
        "8",
        "--rate",
        "40",
        "--arrival",
        "poisson",
        "--seed",
        "7",
        "-D",
        "1s",
        &url("/ping"),
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let row = &run.json["comparison"][1];
    let (low, high) = (
        row["ratio_ci"]["ci_low"].as_f64().unwrap(),
        row["ratio_ci"]["ci_high"].as_f64().unwrap(),
    );
    assert!(low < 1.0 && 1.0 < high, "{row}");
    assert_eq!(row["ratio_ci_kind"], "within_run", "{row}");
    assert!(row["ratio_ci_reason"].is_null(), "{row}");
    let stdout = &run.output.stdout;
    let words = plain_words(stdout);
    assert_eq!(words.len(), 1, "{stdout}");
    let expected = format!(
        "no difference we can see (h2c/h1 = {:.2}, 95% interval {low:.2}–{high:.2} within one run) between h2c and h1",
        row["ratio"][1].as_f64().unwrap()
    );
    assert!(words[0].contains(&expected), "{}\n{expected}", words[0]);
    for verdict in ["fewer", "more requests", "served"] {
        assert!(!words[0].contains(verdict), "{}", words[0]);
    }
}

#[test]
fn a_threshold_on_a_percentile_not_estimable_is_not_judged() {
    // p99 of 50 requests: not estimable, so `p99>1us` (which every sample exceeds) is neither
    // breached nor held; p90 of 50 is, and is judged.
    let run = h2load_rs(&[
        "--h1",
        "-n",
        "50",
        "-q",
        "--fail-if",
        "p99>1us",
        "--fail-if",
        "p90>10s",
        &url("/ping"),
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let thresholds = &run.cell()["thresholds"];
    assert_eq!(thresholds[0]["judged"], false, "{thresholds}");
    assert_eq!(thresholds[0]["breached"], false, "{thresholds}");
    assert!(thresholds[0]["ci"].is_null(), "{thresholds}");
    assert_eq!(thresholds[1]["judged"], true, "{thresholds}");
    assert!(thresholds[1]["ci"]["ci_low"].is_number(), "{thresholds}");
    let lines: Vec<&str> = run
        .output
        .stderr
        .lines()
        .filter(|line| line.starts_with("threshold "))
        .collect();
    assert_eq!(
        lines,
        ["threshold not judged: p99>1us (cell h1 c=1 m=1): p99 of 50 samples is not estimable, fewer than 5 lie beyond it (it needs 500 samples: run longer)"],
        "{}",
        run.output.stderr
    );
}

/// A kept `--rate` schedule finishes as many requests in every batch: the rate's spread is none,
/// and the report says so in words (`as scheduled`) instead of an interval of zero width that
/// reads as certainty; a schedule the machine did not keep has a spread, and an interval.
#[test]
fn a_kept_schedule_s_rate_is_as_scheduled_not_an_interval_of_zero_width() {
    let run = h2load_rs(&["--rate", "400,800", "-D", "1s", &url("/ping")]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let stdout = &run.output.stdout;
    let mut points = 0;
    for (index, row) in run.json["comparison"]
        .as_array()
        .expect("a comparison")
        .iter()
        .enumerate()
    {
        let (rate, ci) = (
            row["requests_per_s"].as_f64().unwrap(),
            &row["requests_per_s_ci"],
        );
        let (low, high) = (
            ci["ci_low"].as_f64().unwrap(),
            ci["ci_high"].as_f64().unwrap(),
        );
        let shown = format!("{rate:.1} (as scheduled)");
        if high - low <= 1e-9 * high {
            points += 1;
            assert!(stdout.contains(&shown), "cell {}: {stdout}", index + 1);
        } else {
            assert!(
                stdout.contains(&format!("{rate:.1} ({low:.1}–{high:.1})")),
                "cell {}: {stdout}",
                index + 1
            );
        }
    }
    let said = stdout
        .matches("req/s (every batch finished as many requests: the rate a kept schedule sets")
        .count();
    assert_eq!(said, points, "{stdout}");
}
