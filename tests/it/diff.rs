//! `h2load-rs diff`: runs against the built-in target with a known handler delay, compared with
//! themselves, with a slower handler, when too short to test, and with mismatched cells.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::common::{assert_usage_error, run_command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_h2load-rs");

/// Reports written once for the whole module (the 2 s runs are shared by several tests).
struct Reports {
    _dir: tempfile::TempDir,
    dir: PathBuf,
}

fn reports() -> &'static Reports {
    static REPORTS: OnceLock<Reports> = OnceLock::new();
    REPORTS.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().to_owned();
        Reports {
            _dir: dir,
            dir: path,
        }
    })
}

/// The report of `h2load-rs ARGS`, written once under `name` and reused.
fn report(name: &str, args: &[&str]) -> PathBuf {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let path = reports().dir.join(format!("{name}.json"));
    let _held = LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if !path.exists() {
        let mut full = args.to_vec();
        full.extend(["-q", "--json", path.to_str().expect("utf-8 temp path")]);
        let run = run_command(BIN, &full);
        assert_eq!(run.code, 0, "{full:?}: {}", run.stderr);
    }
    path
}

/// One connection for 2 s (ten 200 ms intervals) against a handler that takes `delay`.
fn timed(delay: &str) -> PathBuf {
    report(
        &format!("timed-{delay}"),
        &["--h1", "-c", "1", "-D", "2s", "--target-delay", delay],
    )
}

/// 100 requests in 10 s intervals: a single interval (2 s at 20 ms a request), however slow the machine.
fn short(delay: &str) -> PathBuf {
    report(
        &format!("short-{delay}"),
        &[
            "--h1",
            "-c",
            "1",
            "-n",
            "100",
            "--interval",
            "10s",
            "--target-delay",
            delay,
        ],
    )
}

fn diff(base: &Path, new: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["diff", base.to_str().unwrap(), new.to_str().unwrap()];
    args.extend(extra);
    let output = run_command(BIN, &args);
    assert!(!output.stderr.contains("panicked"), "{}", output.stderr);
    output
}

/// A figure's row of the text output: name, base, new, change, p and the mark (may be empty).
#[derive(Debug)]
struct Row {
    base: String,
    new: String,
    change: f64,
    p: Option<f64>,
    mark: String,
}

fn row(stdout: &str, figure: &str) -> Row {
    let line = stdout
        .lines()
        .find(|line| line.split_whitespace().next() == Some(figure))
        .unwrap_or_else(|| panic!("no {figure} row in:\n{stdout}"));
    // A value's 95% interval follows it in parentheses (`639.04 (619–659)`): not a column here.
    let words: Vec<&str> = line
        .split_whitespace()
        .filter(|word| !word.starts_with('('))
        .collect();
    Row {
        base: words[1].to_owned(),
        new: words[2].to_owned(),
        change: words[3].trim_end_matches('%').parse().expect("a change"),
        // `<0.0001` is printed for the smallest p-values: read as its bound.
        p: words[4].trim_start_matches('<').parse().ok(),
        mark: words.get(5).copied().unwrap_or("").to_owned(),
    }
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

const FIGURES: [&str; 5] = ["req/s", "p50", "p90", "p99", "p99.9"];

#[test]
fn a_run_against_itself_changes_nothing() {
    let base = timed("1ms");
    let output = diff(&base, &base, &["--fail-if-regressed", "10%"]);
    assert_eq!(output.code, 0, "{}{}", output.stdout, output.stderr);
    for figure in FIGURES {
        let row = row(&output.stdout, figure);
        assert_eq!(row.base, row.new, "{figure}");
        assert_eq!(row.change, 0.0, "{figure}");
        // Identical samples: U at its mean, p = 1.
        assert_eq!(row.p, Some(1.0), "{figure}");
        assert_eq!(row.mark, "", "{figure} is marked:\n{}", output.stdout);
    }
    assert!(output
        .stdout
        .contains("Kolmogorov–Smirnov distance of the latencies 0.00"));
    assert!(output.stdout.contains("no regression beyond 10%"));
}

#[test]
fn a_20ms_handler_after_a_1ms_one_is_a_significant_regression() {
    // 20 ms, not 5: beside `stress-ng --cpu 2` the 1 ms run's p99 reached 11.6 ms, which a 5 ms
    // handler's run (p99 21 ms) did not clear often enough to be significant (p = 0.33).
    let (fast, slow) = (timed("1ms"), timed("20ms"));
    let output = diff(&fast, &slow, &["--fail-if-regressed", "10%"]);
    assert_eq!(output.code, 3, "{}{}", output.stdout, output.stderr);
    // Twenty 100 ms intervals a run (the automatic length for -D 2s; a 21st when the last
    // response came more than 25 ms after the end).
    let counts: Vec<u64> = output
        .stdout
        .lines()
        .find(|line| line.contains(" intervals in base, "))
        .expect("the cell's heading")
        .split(';')
        .next()
        .unwrap()
        .split_whitespace()
        .filter_map(|word| word.parse().ok())
        .collect();
    assert!(
        counts.len() == 2 && counts.iter().all(|count| (20..=21).contains(count)),
        "{counts:?}\n{}",
        output.stdout
    );
    // The figures are the reports' own, and the change is computed from them (to the 0.1 of a
    // percent printed): throughput falls by the ratio of the handler times, about 1/15.
    let (base, new) = (json(&fast), json(&slow));
    let rate =
        |document: &serde_json::Value| document["cells"][0]["requests_per_s"].as_f64().unwrap();
    let throughput = row(&output.stdout, "req/s");
    assert_eq!(throughput.base, format!("{:.2}", rate(&base)));
    assert_eq!(throughput.new, format!("{:.2}", rate(&new)));
    let truth = (rate(&new) - rate(&base)) / rate(&base) * 100.0;
    assert!(
        (throughput.change - truth).abs() <= 0.051,
        "{throughput:?} vs {truth}"
    );
    assert!(throughput.change < -50.0, "{throughput:?}");
    let p99 = |document: &serde_json::Value| {
        document["cells"][0]["latency"]["request"]["percentiles"]["p99"]
            .as_f64()
            .unwrap()
    };
    let latency = row(&output.stdout, "p99");
    let truth = (p99(&new) - p99(&base)) / p99(&base) * 100.0;
    assert!(
        (latency.change - truth).abs() <= 0.051,
        "{latency:?} vs {truth}"
    );
    // The 20 ms handler puts every response past 20 ms. The 1 ms run's p99 is usually about
    // 1.4 ms, but a busy machine has pushed it to 11.6 ms.
    assert!(
        p99(&new) >= 20_000.0 && latency.change > 10.0,
        "{latency:?}"
    );
    // Ten intervals against ten that do not overlap: p = 0.00018 for the rates (normal
    // approximation); the shares of responses past the base's p99 (about 1% against nearly all).
    for row in [&throughput, &latency] {
        assert_eq!(row.mark, "worse", "{row:?}\n{}", output.stdout);
        assert!(row.p.is_some_and(|p| p < 0.05), "{row:?}");
    }
    for figure in ["req/s", "p99"] {
        assert!(
            output.stdout.lines().any(|line| line
                .starts_with(&format!("regression: h1 c=1 m=1 {figure} "))
                && line.ends_with("beyond 10% (significant)")),
            "{}",
            output.stdout
        );
    }
    // Nearly disjoint latency distributions.
    let distance: f64 = output
        .stdout
        .split("distance of the latencies ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|value| value.parse().ok())
        .expect("the KS distance");
    assert!(distance >= 0.9, "{distance}");

    // The other way round is an improvement: marked better, exit 0.
    let output = diff(&slow, &fast, &["--fail-if-regressed", "10%"]);
    assert_eq!(output.code, 0, "{}{}", output.stdout, output.stderr);
    assert_eq!(row(&output.stdout, "req/s").mark, "better");
    assert_eq!(row(&output.stdout, "p99").mark, "better");
    assert!(output.stdout.contains("no regression beyond 10%"));
    // Without the flag, a regression is reported but does not fail.
    let output = diff(&fast, &slow, &[]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(row(&output.stdout, "p99").mark, "worse");
}

#[test]
fn too_short_runs_are_decided_on_the_threshold_alone() {
    let (fast, slow) = (short("1ms"), short("20ms"));
    let output = diff(&fast, &slow, &["--fail-if-regressed", "10%"]);
    assert_eq!(output.code, 3, "{}{}", output.stdout, output.stderr);
    assert!(
        output.stdout.contains("h1 c=1 m=1: too short to tell ("),
        "{}",
        output.stdout
    );
    for figure in FIGURES {
        let row = row(&output.stdout, figure);
        assert_eq!((row.p, row.mark.as_str()), (None, ""), "{figure}");
    }
    // The throughput falls by about 14/15, far past 10%: the threshold alone fails the run.
    let throughput = row(&output.stdout, "req/s");
    assert!(throughput.change < -50.0, "{throughput:?}");
    assert!(
        output.stdout.contains(&format!(
            "regression: h1 c=1 m=1 req/s {:+.1}% beyond 10% (too short to test: decided on the threshold alone)",
            throughput.change
        )),
        "{}",
        output.stdout
    );
    // The other way round the throughput rose: no regression of it. (The p99 of one interval of
    // 100 responses is their second slowest, which a busy machine can push past the 20 ms run's:
    // then, deciding on the threshold alone, the p99 fails the run, and only then.)
    let output = diff(&slow, &fast, &["--fail-if-regressed", "10%"]);
    assert!(!output.stdout.contains("regression: h1 c=1 m=1 req/s"));
    let regressed = output.stdout.contains("\nregression: h1 c=1 m=1 p99 ");
    assert_eq!(
        output.code,
        if regressed { 3 } else { 0 },
        "{}{}",
        output.stdout,
        output.stderr
    );
    assert!(output.stdout.contains(
        "h1 c=1 m=1: too short to tell (1 interval with completions in base, 1 in new; 5 each needed)"
    ));
}

/// The table lines of Markdown output.
fn table(markdown: &str) -> Vec<&str> {
    markdown
        .lines()
        .filter(|line| line.starts_with('|'))
        .collect()
}

#[test]
fn markdown_has_one_row_per_matched_cell() {
    let (fast, slow) = (timed("1ms"), timed("20ms"));
    let output = diff(&fast, &slow, &["--markdown", "--fail-if-regressed", "10%"]);
    assert_eq!(output.code, 3, "{}", output.stderr);
    let lines = table(&output.stdout);
    assert_eq!(lines.len(), 3, "{}", output.stdout);
    assert_eq!(
        lines[0],
        "| cell | req/s | p50 | p90 | p99 | p99.9 | KS distance |"
    );
    assert_eq!(lines[1], "|---|---|---|---|---|---|---|");
    let cells: Vec<&str> = lines[2].trim_matches('|').split(" | ").collect();
    assert_eq!(cells.len(), 7, "{}", lines[2]);
    assert_eq!(cells[0].trim(), "h1 c=1 m=1");
    for column in [1, 4] {
        assert!(
            cells[column].contains(" → ") && cells[column].contains(", worse**)"),
            "{}",
            cells[column]
        );
    }
    assert!(output.stdout.contains("- regression: h1 c=1 m=1 p99 "));

    // A sweep of -c 1,2 against the one-cell base: one cell in common, the other listed.
    let sweep = report(
        "sweep",
        &["--h1", "-c", "1,2", "-n", "3", "--target-delay", "1ms"],
    );
    let output = diff(&short("1ms"), &sweep, &["--markdown"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(table(&output.stdout).len(), 3, "{}", output.stdout);
    assert!(
        output.stdout.contains("- only in new: h1 c=2 m=1"),
        "{}",
        output.stdout
    );
    let output = diff(&sweep, &short("1ms"), &[]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(
        output.stdout.contains("\nonly in base: h1 c=2 m=1\n"),
        "{}",
        output.stdout
    );
}

#[test]
fn reports_without_a_cell_in_common_are_a_usage_error() {
    let h2c = report("h2c", &["--proto", "h2c", "-c", "1", "-n", "10"]);
    let output = diff(&short("1ms"), &h2c, &[]);
    assert_eq!(output.code, 2, "{}", output.stdout);
    assert_eq!(output.stderr.lines().count(), 1, "{}", output.stderr);
    assert!(
        output.stderr.contains("no cell in common")
            && output
                .stderr
                .contains("base has h1 c=1 m=1; new has h2c c=1 m=1"),
        "{}",
        output.stderr
    );
}

#[test]
fn a_ramp_is_not_the_same_experiment_as_a_closed_loop_or_another_ramp() {
    // Same protocol, -c and -m, no --rate: only the ramp tells them apart.
    let ramp = report("ramp", &["--h1", "-c", "1", "--stages", "500ms:100"]);
    let other_ramp = report("other-ramp", &["--h1", "-c", "1", "--stages", "500ms:200"]);
    for other in [short("1ms"), other_ramp] {
        let output = diff(&ramp, &other, &[]);
        assert_eq!(output.code, 2, "{}", output.stdout);
        assert!(
            output.stderr.contains("no cell in common"),
            "{}",
            output.stderr
        );
    }
    let output = diff(&ramp, &ramp, &[]);
    assert_eq!(output.code, 0, "{}", output.stderr);
}

#[test]
fn bad_input_is_one_line_and_status_2() {
    let base = short("1ms");
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not json").unwrap();
    let other = dir.path().join("other.json");
    std::fs::write(&other, r#"{"name": "k6"}"#).unwrap();
    let base = base.to_str().unwrap();
    let cases: [(Vec<&str>, &str); 6] = [
        (
            vec!["diff", "/nonexistent/base.json", base],
            "cannot read the base report '/nonexistent/base.json'",
        ),
        (
            vec!["diff", base, "/nonexistent/new.json"],
            "cannot read the new report '/nonexistent/new.json'",
        ),
        (
            vec!["diff", base, text.to_str().unwrap()],
            "is not an h2load-rs JSON report",
        ),
        (
            vec!["diff", other.to_str().unwrap(), base],
            "is not an h2load-rs JSON report",
        ),
        (vec!["diff", base], "NEW.json"),
        (
            vec!["diff", base, base, "--fail-if-regressed", "ten"],
            "'ten' is not a percentage",
        ),
    ];
    for (args, message) in cases {
        let output = assert_usage_error(&args, message);
        assert!(output.stdout.is_empty(), "{args:?}: {}", output.stdout);
    }
}

/// `short("1ms")`'s report with `edit` applied, written to `dir/name`.
fn edited(dir: &Path, name: &str, edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let mut document = json(&short("1ms"));
    edit(&mut document["cells"][0]);
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec(&document).unwrap()).unwrap();
    path.to_str().unwrap().to_owned()
}

/// A histogram of `digits` significant digits holding `values`, as reports carry them.
fn encoded(digits: u8, high: u64, values: &[(u64, u64)]) -> String {
    use base64::Engine as _;
    use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
    let mut histogram = hdrhistogram::Histogram::<u64>::new_with_bounds(1, high, digits).unwrap();
    for &(value, count) in values {
        histogram.record_n(value, count).unwrap();
    }
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(&histogram, &mut bytes)
        .unwrap();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[test]
fn merge_and_diff_refuse_reports_whose_numbers_cannot_be_true() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let good = short("1ms");
    let good = good.to_str().unwrap();
    let done = json(&short("1ms"))["cells"][0]["requests"]["done"]
        .as_u64()
        .unwrap();
    let at_max = |field: &'static str, key: &'static str| {
        move |cell: &mut serde_json::Value| cell[field][key] = u64::MAX.into()
    };
    let started = edited(dir, "started.json", at_max("requests", "started"));
    let success = edited(dir, "success.json", at_max("status_codes", "2xx"));
    let bytes = edited(dir, "bytes.json", at_max("traffic", "total_bytes"));
    let one_more = edited(dir, "one_more.json", |cell| {
        cell["requests"]["done"] = (done + 1).into();
    });
    let ttfb = edited(dir, "ttfb.json", |cell| {
        cell["latency"]["ttfb"]["hdr"] = encoded(3, 3_600_000_000, &[(100, done - 1)]).into();
    });
    // Requests never sent are errored (but not done): never more of them than errored.
    let unsent = edited(dir, "unsent.json", |cell| {
        cell["requests"]["never_sent"] = 1.into();
    });
    let errored = edited(dir, "errored.json", |cell| {
        cell["requests"]["errored"] = (done + 1).into();
    });
    let wide = edited(dir, "wide.json", |cell| {
        cell["latency"]["request"]["hdr"] = encoded(5, u64::MAX / 2, &[(100, done)]).into();
    });
    // Counts that pass 2^64 together (each is at most 2^63 - 1 in the encoding).
    let most = i64::MAX as u64;
    let past = edited(dir, "past.json", |cell| {
        cell["requests"]["done"] = u64::MAX.into();
        cell["latency"]["request"]["hdr"] =
            encoded(3, 3_600_000_000, &[(100, most), (200, most), (300, 2)]).into();
    });
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["merge", &started, good],
            format!("'{started}': cell 1: requests.started (18446744073709551615) is past 2^63 - 1, more than any run counts"),
        ),
        (
            vec!["merge", good, &success],
            format!("'{success}': its status_codes.2xx (18446744073709551615) and the other reports' add up past 2^64 - 1"),
        ),
        (
            vec!["merge", &bytes, good],
            "its traffic.total_bytes".to_owned(),
        ),
        (
            vec!["merge", good, &one_more],
            format!("'{one_more}': cell 1: latency.request.hdr holds {done} values, but requests.done - (requests.errored - requests.never_sent) is {}", done + 1),
        ),
        (
            vec!["diff", good, &one_more],
            "latency.request.hdr holds".to_owned(),
        ),
        (
            vec!["merge", good, &ttfb],
            format!("'{ttfb}': cell 1: latency.ttfb.hdr holds {} values", done - 1),
        ),
        (
            vec!["merge", good, &unsent],
            format!("'{unsent}': cell 1: requests.never_sent (1) is more than requests.errored (0)"),
        ),
        (
            vec!["diff", &errored, good],
            format!("'{errored}': cell 1: requests.errored less requests.never_sent ({}) is more than requests.done ({done})", done + 1),
        ),
        (
            vec!["merge", good, &wide],
            format!("'{wide}' is not an h2load-rs JSON report: cell 1 has a broken histogram (a histogram has 5 significant digits, more than 3)"),
        ),
        (
            vec!["diff", &wide, good],
            "5 significant digits, more than 3".to_owned(),
        ),
        (
            vec!["merge", &past, good],
            "a histogram holds more than 2^64 values".to_owned(),
        ),
    ];
    for (args, message) in cases {
        let output = assert_usage_error(&args, &message);
        assert!(output.stdout.is_empty(), "{args:?}: {}", output.stdout);
    }
    // The untouched report still merges with itself.
    let merged = run_command(BIN, &["merge", good, good]);
    assert_eq!(merged.code, 0, "{}", merged.stderr);
}

/// `short("1ms")`'s report with its one interval repeated `intervals` times (one a second's
/// interval, so a timeline hours long), written to `dir/name`; its counts and whole-run
/// histograms hold as many responses.
fn long_timeline(dir: &Path, name: &str, intervals: u64) -> String {
    edited(dir, name, |cell| {
        let answered = intervals
            * cell["timeline"]["intervals"][0]["completed"]
                .as_u64()
                .unwrap();
        for count in ["total", "started", "done"] {
            cell["requests"][count] = answered.into();
        }
        cell["requests"]["errored"] = 0.into();
        for field in ["request", "ttfb"] {
            cell["latency"][field]["hdr"] = encoded(3, 3_600_000_000, &[(1000, answered)]).into();
        }
        let timeline = &mut cell["timeline"];
        let first = timeline["intervals"][0].clone();
        let repeated: Vec<serde_json::Value> = (0..intervals)
            .map(|index| {
                let mut interval = first.clone();
                interval["index"] = index.into();
                interval
            })
            .collect();
        timeline["end_s"] = (intervals as f64 * timeline["interval_s"].as_f64().unwrap()).into();
        timeline["intervals"] = repeated.into();
    })
}

/// `command` run under an address-space limit of `limit_kb`.
fn within_memory(limit_kb: u64, command: &[&str]) -> Output {
    let limit = format!("ulimit -v {limit_kb}; exec \"$0\" \"$@\"");
    let mut args = vec!["-c", &limit, BIN];
    args.extend(command);
    run_command("sh", &args)
}

#[test]
fn a_long_timeline_is_compared_in_little_memory() {
    let dir = tempfile::tempdir().unwrap();
    // 1500 intervals (1.2 MB of JSON per 3000): their histograms decoded and kept would take 180 KB
    // each, 540 MB for both sides; their shares take a few numbers each.
    let long = long_timeline(dir.path(), "long.json", 1500);
    let size = std::fs::metadata(&long).unwrap().len();
    assert!(size < 2 << 20, "{size}");
    // An address space of 400 MB: the binary and its threads take part of it.
    let output = within_memory(400_000, &["diff", &long, &long]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(
        output
            .stdout
            .contains("1500 intervals in base, 1500 in new"),
        "{}",
        output.stdout
    );
}

#[test]
fn a_long_timeline_is_merged_in_memory_a_small_multiple_of_its_size() {
    let dir = tempfile::tempdir().unwrap();
    // 1500 intervals merged with themselves: summed as histograms all at once they took 376 KB
    // each (564 MB); one at a time, the merge holds little more than the reports it read.
    let long = long_timeline(dir.path(), "long.json", 1500);
    let size_kb = std::fs::metadata(&long).unwrap().len() / 1024;
    let completed = json(Path::new(&long))["cells"][0]["timeline"]["intervals"][0]["completed"]
        .as_u64()
        .unwrap();
    let merged = dir.path().join("merged.json");
    let merged_path = merged.to_str().unwrap();
    // The binary itself needs under 40 MB of address space; the reports read and written, a few
    // times their size each.
    let limit_kb = 48_000 + 3 * 8 * size_kb;
    let output = within_memory(limit_kb, &["merge", &long, &long, "--json", merged_path]);
    assert_eq!(output.code, 0, "under {limit_kb} KB: {}", output.stderr);
    let intervals = json(&merged)["cells"][0]["timeline"]["intervals"].clone();
    let intervals = intervals.as_array().unwrap();
    assert_eq!(intervals.len(), 1500);
    assert!(
        intervals
            .iter()
            .enumerate()
            .all(|(index, interval)| interval["index"] == index as u64
                && interval["completed"] == 2 * completed),
        "{:?}",
        &intervals[..2]
    );
}

/// The CPU time (user and system, seconds) `h2load-rs ARGS` takes, and its exit code.
fn cpu_time(args: &[&str]) -> (f64, i32) {
    let mut command = vec!["-c", "\"$0\" \"$@\" >/dev/null 2>&1; echo $?; times", BIN];
    command.extend(args);
    let output = run_command("sh", &command);
    let lines: Vec<&str> = output.stdout.lines().collect();
    // `times` prints the shell's user and system time, then its children's: `0m1.230000s 0m0.010000s`.
    let seconds = |field: &str| {
        let (minutes, seconds) = field.trim_end_matches('s').split_once('m').unwrap();
        minutes.parse::<f64>().unwrap() * 60.0 + seconds.parse::<f64>().unwrap()
    };
    let children: f64 = lines[2].split_whitespace().map(seconds).sum();
    (children, lines[0].parse().unwrap())
}

#[test]
fn a_long_timeline_is_compared_in_a_small_multiple_of_the_time_it_takes_to_read() {
    let dir = tempfile::tempdir().unwrap();
    let long = long_timeline(dir.path(), "long.json", 2000);
    // The same report as another experiment: `diff` reads and checks both, finds no cell in
    // common and stops there.
    let other = edited(dir.path(), "other.json", |cell| {
        cell["cell"]["protocol"] = "h2c".into();
    });
    let other_long = dir.path().join("other_long.json");
    let mut document = json(Path::new(&long));
    document["cells"][0]["cell"] = json(Path::new(&other))["cells"][0]["cell"].clone();
    std::fs::write(&other_long, serde_json::to_vec(&document).unwrap()).unwrap();
    let (read, code) = cpu_time(&["diff", &long, other_long.to_str().unwrap()]);
    assert_eq!(code, 2);
    let (compared, code) = cpu_time(&["diff", &long, &long]);
    assert_eq!(code, 0);
    // CPU time, not wall-clock time, so a busy machine slows both alike. Comparing each interval
    // decoded its histogram (a 180 KB array) several times over: 9 times the reading.
    assert!(
        compared < 3.0 * read,
        "comparing took {compared:.2} s of CPU, reading {read:.2} s"
    );
}

#[test]
fn timeline_counts_that_disagree_or_add_up_past_two_to_the_64_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let good = short("1ms");
    let good = good.to_str().unwrap();
    let completed = json(&short("1ms"))["cells"][0]["timeline"]["intervals"][0]["completed"]
        .as_u64()
        .unwrap();
    let interval = |cell: &mut serde_json::Value| cell["timeline"]["intervals"][0].take();
    let with_interval = |name: &str, edit: &dyn Fn(&mut serde_json::Value)| {
        edited(dir, name, |cell| {
            let mut first = interval(cell);
            edit(&mut first);
            cell["timeline"]["intervals"][0] = first;
        })
    };
    let one_more = with_interval("one_more.json", &|interval| {
        interval["completed"] = (completed + 1).into();
    });
    let ttfb = with_interval("ttfb.json", &|interval| {
        interval["ttfb_hdr"] = encoded(3, 3_600_000_000, &[(100, completed - 1)]).into();
    });
    // Two intervals of the responses the report counts once.
    let twice = edited(dir, "twice.json", |cell| {
        let mut second = cell["timeline"]["intervals"][0].clone();
        second["index"] = 1.into();
        cell["timeline"]["intervals"]
            .as_array_mut()
            .unwrap()
            .push(second);
    });
    let most = i64::MAX as u64;
    let errors = with_interval("errors.json", &|interval| {
        interval["errors"] = u64::MAX.into();
    });
    // Connection times of 2^63 - 1 connections: three reports' pass 2^64.
    let connect = edited(dir, "connect.json", |cell| {
        cell["latency"]["connect"]["hdr"] = encoded(3, 3_600_000_000, &[(100, most)]).into();
    });
    let limit = edited(dir, "limit.json", |cell| {
        cell["rate"] = serde_json::json!({
            "requested_per_s": 10.0, "achieved_per_s": 10.0, "late": 0, "late_pct": 0.0,
            "delay_p50_us": 0, "delay_p99_us": 0, "delay_max_us": 0,
            "delay_hdr": encoded(3, 3_600_000_000, &[]),
            "in_flight": {"mean": 1.0, "limit": u64::MAX},
        });
    });
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["merge", good, &one_more],
            format!("'{one_more}': cell 1: timeline interval 0: hdr holds {completed} values, but its completed is {}", completed + 1),
        ),
        (
            vec!["diff", &one_more, good],
            format!("'{one_more}': cell 1: timeline interval 0: hdr holds {completed} values"),
        ),
        (
            vec!["merge", &ttfb, good],
            format!("'{ttfb}': cell 1: timeline interval 0: ttfb_hdr holds {} values, but its completed is {completed}", completed - 1),
        ),
        (
            vec!["diff", good, &twice],
            format!("'{twice}': cell 1: the timeline intervals' completed add up to {}, but requests.done - (requests.errored - requests.never_sent) is {completed}", 2 * completed),
        ),
        (
            vec!["merge", good, &errors, &errors],
            format!("'{errors}': timeline interval 0: the intervals' errors add up past 2^64 - 1"),
        ),
        (
            vec!["merge", &connect, &connect, &connect],
            "the reports' histograms hold more than 2^64 values together".to_owned(),
        ),
        (
            vec!["merge", &limit, &limit],
            "the reports' rate.in_flight.limit add up past 2^64 - 1".to_owned(),
        ),
    ];
    for (args, message) in cases {
        let output = assert_usage_error(&args, &message);
        assert!(output.stdout.is_empty(), "{args:?}: {}", output.stdout);
    }
    // An interval placed past any clock: folded into the last, never an overflow.
    let far = with_interval("far.json", &|interval| {
        interval["index"] = (i64::MAX as u64).into();
    });
    let merged = run_command(BIN, &["merge", &far, good]);
    assert_eq!(merged.code, 0, "{}", merged.stderr);
}
