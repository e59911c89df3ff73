//! A report you can read and keep: every kind of JSON report (`--rounds` too) is valid against the shipped JSON
//! Schema (docs/report.schema.json) and records its command line (secrets redacted), host, start
//! time and version; off a terminal a progress line comes every interval; `-q` keeps the
//! verdicts; the default text of a sweep fits 100 columns.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use crate::common::{assert_usage_error, h2load_rs, run_command, url, Run};

const BIN: &str = env!("CARGO_BIN_EXE_h2load-rs");

/// The shipped schema, compiled.
fn validator() -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/report.schema.json");
    let schema: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("the schema ships")).unwrap();
    jsonschema::validator_for(&schema).expect("the shipped schema is a valid JSON Schema")
}

/// Fails, naming `kind` and every error, unless `report` is valid against the schema.
fn assert_valid(validator: &jsonschema::Validator, kind: &str, report: &serde_json::Value) {
    assert!(report.is_object(), "{kind}: no report was written");
    let errors: Vec<String> = validator
        .iter_errors(report)
        .map(|error| format!("{} at {}", error, error.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{kind}: {errors:#?}");
}

/// The host name the kernel gives this machine.
fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim_end()
        .to_owned()
}

/// Checks the provenance at the top of `report`: `argv` from the program on, joined into
/// `command_line`, this host, a start between `before` and `after`, this version.
fn assert_provenance(
    kind: &str,
    report: &serde_json::Value,
    before: SystemTime,
    after: SystemTime,
) {
    let argv: Vec<&str> = report["argv"]
        .as_array()
        .unwrap_or_else(|| panic!("{kind}: no argv"))
        .iter()
        .map(|arg| arg.as_str().unwrap())
        .collect();
    assert_eq!(argv[0], BIN, "{kind}");
    let line = report["command_line"].as_str().unwrap();
    assert!(line.starts_with(BIN), "{kind}: {line}");
    assert!(
        argv.iter().all(|arg| line.contains(arg.trim_matches('\''))),
        "{kind}: {line}"
    );
    assert_eq!(report["host"], host(), "{kind}");
    assert_eq!(report["version"], env!("CARGO_PKG_VERSION"), "{kind}");
    let started: jiff::Timestamp = report["started_at"].as_str().unwrap().parse().unwrap();
    let started = SystemTime::from(started);
    // RFC 3339 to the millisecond: the start may read up to 1 ms before the test's clock.
    assert!(
        started + Duration::from_millis(1) >= before && started <= after,
        "{kind}: started_at {:?} outside the run",
        report["started_at"]
    );
    assert!(
        report["started_at"].as_str().unwrap().ends_with('Z'),
        "{kind}: not UTC"
    );
}

/// Runs `args` (with `--json`), checks it succeeded and its provenance; the run.
fn kept(kind: &str, args: &[&str]) -> Run {
    let before = SystemTime::now();
    let run = h2load_rs(args);
    let after = SystemTime::now();
    assert_eq!(run.output.code, 0, "{kind}: {}", run.output.stderr);
    assert_provenance(kind, &run.json, before, after);
    run
}

/// Writes `run`'s report to `dir/name.json`.
fn saved(dir: &Path, name: &str, run: &Run) -> PathBuf {
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, serde_json::to_vec(&run.json).unwrap()).unwrap();
    path
}

/// A run of 20 s interrupted by SIGINT after 1.5 s: its report.
fn interrupted(dir: &Path) -> serde_json::Value {
    let path = dir.join("interrupted.json");
    let target = url("/ping");
    let child = Command::new(BIN)
        .args([
            "-D",
            "20s",
            "-c",
            "2",
            "--json",
            path.to_str().unwrap(),
            &target,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let status = Command::new("kill")
        .args(["-s", "INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "SIGINT's status");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(report["cells"][0]["interrupted"], true);
    report
}

#[test]
fn every_report_kind_is_valid_against_the_shipped_schema_and_says_what_made_it() {
    let validator = validator();
    let dir = tempfile::tempdir().unwrap();
    let target = url("/ping");
    let single = kept("single cell", &["-n", "200", "-c", "2", &target]);
    assert_valid(&validator, "single cell", &single.json);
    let sweep = kept(
        "sweep",
        &["-n", "200", "-c", "1,2", "--proto", "h1,h2c", &target],
    );
    assert_eq!(sweep.json["cells"].as_array().unwrap().len(), 4);
    assert_valid(&validator, "sweep", &sweep.json);
    let rounds = kept(
        "rounds",
        &["-n", "200", "--proto", "h1,h2c", "--rounds", "2", &target],
    );
    assert_eq!(rounds.json["rounds"]["count"], 2);
    assert_valid(&validator, "rounds", &rounds.json);
    let rate = kept(
        "rate",
        &["--rate", "200", "-D", "500ms", "-c", "2", &target],
    );
    assert!(rate.cell()["rate"].is_object());
    assert_valid(&validator, "rate", &rate.json);
    let search = kept(
        "find-max",
        &[
            "-c",
            "2",
            "--find-max",
            "--step-duration",
            "300ms",
            "-q",
            &target,
        ],
    );
    assert!(search.cell()["capacity"].is_object());
    assert_valid(&validator, "find-max", &search.json);
    let shards = ["1/2", "2/2"].map(|shard| {
        let run = kept(
            "shard",
            &["-n", "100", "-c", "2", "--shard", shard, &target],
        );
        assert!(run.cell()["settings"]["shard"].is_object());
        assert_valid(&validator, "shard", &run.json);
        run
    });
    assert_valid(&validator, "interrupted", &interrupted(dir.path()));

    // merge: its own command line, and each part's provenance as it was.
    let (first, second) = (
        saved(dir.path(), "shard1", &shards[0]),
        saved(dir.path(), "shard2", &shards[1]),
    );
    let merged_path = dir.path().join("merged.json");
    let before = SystemTime::now();
    let merge = run_command(
        BIN,
        &[
            "merge",
            first.to_str().unwrap(),
            second.to_str().unwrap(),
            "--json",
            merged_path.to_str().unwrap(),
        ],
    );
    let after = SystemTime::now();
    assert_eq!(merge.code, 0, "{}", merge.stderr);
    let merged: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&merged_path).unwrap()).unwrap();
    assert_valid(&validator, "merge", &merged);
    assert_provenance("merge", &merged, before, after);
    assert_eq!(merged["argv"][1], "merge");
    let parts = merged["merged_from"].as_array().expect("merged_from");
    assert_eq!(parts.len(), 2);
    for (part, (path, run)) in parts
        .iter()
        .zip([(&first, &shards[0]), (&second, &shards[1])])
    {
        assert_eq!(part["source"], path.to_str().unwrap());
        for field in ["argv", "command_line", "host", "started_at", "version"] {
            assert_eq!(part[field], run.json[field], "{field}");
        }
    }
}

#[test]
fn a_report_never_shows_a_secret_header_value() {
    let target = url("/ping");
    let run = kept(
        "secret",
        &[
            "-n",
            "10",
            "-H",
            "Authorization: Bearer sekrit-value",
            "-H",
            "X-Trace: visible",
            &target,
        ],
    );
    let argv = &run.json["argv"];
    assert!(argv
        .as_array()
        .unwrap()
        .contains(&serde_json::json!("Authorization:<redacted>")));
    assert!(argv
        .as_array()
        .unwrap()
        .contains(&serde_json::json!("X-Trace: visible")));
    assert!(run.json["command_line"]
        .as_str()
        .unwrap()
        .contains("'Authorization:<redacted>'"));
    // Nowhere in the report: the cell's settings list the headers sent, the secret's redacted.
    assert!(!run.json.to_string().contains("sekrit"), "{}", run.json);
    let headers = &run.cell()["settings"]["headers"];
    assert!(
        headers
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("authorization:<redacted>")),
        "{headers}"
    );
    assert!(
        headers
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("x-trace: visible")),
        "{headers}"
    );
}

/// The `progress:` lines of `stderr`.
fn progress_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|line| line.starts_with("progress: "))
        .collect()
}

#[test]
fn off_a_terminal_a_progress_line_comes_every_interval() {
    let target = url("/ping");
    // A 3 s run with a line every 700 ms: lines at 0.7, 1.4, 2.1 and 2.8 s (the last may miss
    // the end of a run that connects fast; on a loaded machine each wait may end late, and the
    // delays add up: 2 lines at least).
    let run = h2load_rs(&[
        "-D",
        "3s",
        "-c",
        "2",
        "--progress-interval",
        "700ms",
        &target,
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let lines = progress_lines(&run.output.stderr);
    assert!((2..=5).contains(&lines.len()), "{lines:#?}");
    let mut last = (0.0, 0);
    for line in &lines {
        // progress: h2c c=2 m=1: 0.7 s of 3 s, 1,234 requests, 1,760 req/s, 0 errors
        let rest = line
            .strip_prefix("progress: h2c c=2 m=1: ")
            .unwrap_or_else(|| panic!("{line}"));
        let (elapsed, rest) = rest.split_once(" s of 3 s, ").expect(line);
        let (requests, rest) = rest.split_once(" requests, ").expect(line);
        let (_, errors) = rest.split_once(" req/s, ").expect(line);
        let elapsed: f64 = elapsed.parse().unwrap();
        let requests: u64 = requests.replace(',', "").parse().unwrap();
        assert_eq!(errors, "0 errors");
        // Each line 0.7 s or more after the last (shown to 0.1 s, so 0.6 after rounding); a
        // busy machine may wake the printer late.
        assert!(
            elapsed - last.0 >= 0.59 && elapsed - last.0 < 1.5,
            "{lines:#?}"
        );
        assert!(requests >= last.1, "{lines:#?}");
        last = (elapsed, requests);
    }
    // The live counts never pass what the report counts (warm connections count every request).
    assert!(
        last.1 <= run.int("requests/done") && last.1 > 0,
        "{lines:#?}"
    );

    // The default is every 10 s: none in a 1 s run; -q silences them.
    let short = h2load_rs(&["-D", "1s", &target]);
    assert_eq!(progress_lines(&short.output.stderr), Vec::<&str>::new());
    let quiet = h2load_rs(&["-q", "-D", "1s", "--progress-interval", "200ms", &target]);
    assert_eq!(quiet.output.code, 0, "{}", quiet.output.stderr);
    assert_eq!(progress_lines(&quiet.output.stderr), Vec::<&str>::new());
    assert_usage_error(
        &["--progress-interval", "10ms", &target],
        "shorter than the 100ms shortest progress interval",
    );
}

#[test]
fn quiet_keeps_the_comparison_and_the_thresholds() {
    let target = url("/ping");
    let run = h2load_rs(&[
        "-q",
        "-D",
        "1s",
        "--proto",
        "h1,h2c",
        "--fail-if",
        "p99>10s",
        "--fail-if",
        "rps<1",
        &target,
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let stdout = &run.output.stdout;
    // One line per cell, each followed by its thresholds' verdicts.
    for (index, label) in ["h1 c=1 m=1", "h2c c=1 m=1"].iter().enumerate() {
        let p99 = run.num(&format!("/cells/{index}/latency/request/percentiles/p99"));
        assert!(stdout.contains(&format!("{label}: ")), "{stdout}");
        assert!(
            stdout.contains("  --fail-if p99>10s: passed (p99 "),
            "{stdout}"
        );
        assert!(p99 > 0.0);
        let rps = run.num(&format!("/cells/{index}/requests_per_s"));
        assert!(
            stdout.contains(&format!("  --fail-if rps<1: passed (rps {rps:.1} req/s)")),
            "{stdout}"
        );
    }
    // The ratio as the JSON has it, with its interval (and what kind of interval it is).
    let row = &run.json["comparison"][1];
    let ratio = row["ratio"][1].as_f64().unwrap();
    // A starved machine may leave a cell too few intervals for one: then the ratio alone.
    let bounds = &row["ratio_ci"];
    let said = match bounds["ci_low"].as_f64() {
        Some(low) => format!(
            "(h2c/h1 = {ratio:.2}, 95% interval {low:.2}–{:.2}",
            bounds["ci_high"].as_f64().unwrap_or(f64::INFINITY)
        ),
        None => format!("(h2c/h1 = {ratio:.2}"),
    };
    assert!(stdout.contains(&said), "{said} not in:\n{stdout}");
    assert!(!stdout.contains("comparison of"), "{stdout}");

    // A breach is said too, on stdout beside the cell and on stderr.
    let breached = h2load_rs(&["-q", "-n", "100", "--fail-if", "rps<100000000", &target]);
    assert_eq!(breached.output.code, 3, "{}", breached.output.stderr);
    assert!(
        breached
            .output
            .stdout
            .contains("  --fail-if rps<100000000: breached (rps "),
        "{}",
        breached.output.stdout
    );
}

#[test]
fn the_default_text_of_a_sweep_with_intervals_fits_100_columns_on_a_terminal() {
    // `script` gives the report a pseudo-terminal; the built-in target adds the target's CPU and
    // memory columns: the widest comparison.
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("sweep.json");
    let command = format!(
        "{BIN} -D 1s -c 1,8 --proto h1,h2c --color never --json {} 2>/dev/null",
        json.display()
    );
    let output = run_command("script", &["-q", "-e", "-c", &command, "/dev/null"]);
    assert_eq!(output.code, 0, "{}", output.stdout);
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let stdout = output.stdout.replace("\r\n", "\n");
    let wide: Vec<&str> = stdout
        .lines()
        .filter(|line| line.chars().count() > 100)
        .collect();
    assert!(wide.is_empty(), "{wide:#?}\n{stdout}");
    let comparison = &stdout[stdout.find("comparison of 4 cells").expect(&stdout)..];
    // Every figure of every cell is still there: the cells' rates with their intervals, and the
    // target's columns.
    for (index, cell) in report["cells"].as_array().unwrap().iter().enumerate() {
        let rps = format!("{:.1} (", cell["requests_per_s"].as_f64().unwrap());
        assert!(
            comparison.contains(&rps),
            "cell {index}: {rps}\n{comparison}"
        );
    }
    for title in ["req/s", "p99.9", "target RSS MB", "vs first", "gen CPU%"] {
        assert!(comparison.contains(title), "{title}\n{comparison}");
    }
    // Each of the stacked tables lists the 4 cells by number, led by `#`.
    let tables = comparison.matches("\n#  protocol").count();
    assert!(tables >= 2, "{comparison}");
    assert_eq!(
        comparison
            .lines()
            .filter(|line| line.starts_with("4 "))
            .count(),
        tables,
        "{comparison}"
    );
    // The plain words are wrapped, not cut: each sentence is whole once its lines are joined.
    let joined = comparison.replace("\n    ", " ");
    let row = &report["comparison"][1];
    let said = format!("(h2c/h1 = {:.2}", row["ratio"][1].as_f64().unwrap());
    assert!(joined.contains(&said), "{said}\n{comparison}");

    // Piped, the text keeps one line per fact: the plain words are not wrapped.
    let piped = h2load_rs(&["-D", "1s", "-c", "1,8", "--proto", "h1,h2c"]);
    assert!(
        piped
            .output
            .stdout
            .lines()
            .any(|line| line.starts_with("  - at c=8 m=1 (h2c/h1 = ") && line.ends_with(" ms")),
        "{}",
        piped.output.stdout
    );
}
