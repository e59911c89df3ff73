//! One request to stop can arrive as several signals: `timeout` signals the process and then its
//! process group, and a terminal's Ctrl-C reaches every process of the foreground group, the
//! built-in target included. Each run here is in its own process group, as under `timeout` or at
//! a terminal, and is signalled as they do it.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

use crate::common::url;

const BIN: &str = env!("CARGO_BIN_EXE_h2load-rs");

/// `flags` (split at spaces), then `url`.
fn command_line<'a>(flags: &'a str, url: &'a str) -> Vec<&'a str> {
    flags.split(' ').chain([url]).collect()
}

/// The signals that stop a run, by `kill -s` name, with the exit status each gives.
const STOPPING: [(&str, i32); 3] = [("TERM", 143), ("INT", 130), ("HUP", 129)];

/// A run leading its own process group, past the point where it watches the signals.
struct Grouped {
    child: Child,
    stdout: BufReader<ChildStdout>,
    /// What it printed on stdout up to then.
    printed: String,
    /// Holds the `--json` file.
    dir: tempfile::TempDir,
}

impl Grouped {
    /// Starts h2load-rs with `args` plus `--json`, and waits for its first cell to start (the
    /// signals are watched from before then).
    fn start(args: &[&str]) -> Grouped {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("report.json");
        let mut child = Command::new(BIN)
            .args(args)
            .arg("--json")
            .arg(&json)
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut run = Grouped {
            child,
            stdout,
            printed: String::new(),
            dir,
        };
        run.wait_for("starting benchmark");
        run
    }

    /// Reads stdout until it has printed `text`.
    fn wait_for(&mut self, text: &str) {
        while !self.printed.contains(text) {
            let read = self.stdout.read_line(&mut self.printed).unwrap();
            assert!(read > 0, "no '{text}' on stdout: {}", self.printed);
        }
    }

    /// Sends signal `name` with one `kill`: to the group only (a terminal), or to the process and
    /// then its group a few microseconds later (`timeout`).
    fn signal(&self, name: &str, group_only: bool) {
        let pid = self.child.id().to_string();
        let group = format!("-{pid}");
        let targets: &[&str] = match group_only {
            true => &[&group],
            // timeout(1)'s order: the process, then its group.
            false => &[&pid, &group],
        };
        let status = Command::new("kill")
            .args(["-s", name, "--"])
            .args(targets)
            .status()
            .unwrap();
        assert!(status.success(), "kill -s {name} {targets:?}");
    }

    /// Waits for the exit: its status, all of stdout and stderr, and the JSON report if one was
    /// written and parses.
    fn finish(mut self) -> Ended {
        let status = self.child.wait().unwrap();
        self.stdout.read_to_string(&mut self.printed).unwrap();
        let mut stderr = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        let json = std::fs::read(self.json_path())
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok());
        (status.code(), self.printed, stderr, json)
    }

    fn json_path(&self) -> PathBuf {
        self.dir.path().join("report.json")
    }
}

/// What a run printed and wrote: its status, stdout, stderr and JSON report (if it parses).
type Ended = (Option<i32>, String, String, Option<serde_json::Value>);

/// Runs `args`, sends signal `name` (see [`Grouped::signal`]) once its first cell has gone for
/// `after`, and waits for the end.
fn signalled_after(args: &[&str], after: Duration, name: &str, group_only: bool) -> Ended {
    let run = Grouped::start(args);
    std::thread::sleep(after);
    run.signal(name, group_only);
    run.finish()
}

/// Runs `runs` copies of `args` at once, signals each with `name` as soon as its cell started (to
/// the process and its group, or the group only), and returns one line per run that did not end
/// with `code`, its report on stdout and a JSON report whose every cell is interrupted.
fn lost_reports(
    args: &[&str],
    name: &str,
    code: i32,
    runs: usize,
    group_only: bool,
) -> Vec<String> {
    let threads: Vec<_> = (0..runs)
        .map(|_| {
            let args: Vec<String> = args.iter().map(|&arg| arg.to_owned()).collect();
            let name = name.to_owned();
            std::thread::spawn(move || {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let run = Grouped::start(&args);
                run.signal(&name, group_only);
                run.finish()
            })
        })
        .collect();
    let mut lost = Vec::new();
    for (index, thread) in threads.into_iter().enumerate() {
        let (status, stdout, stderr, json) = thread.join().unwrap();
        let interrupted = json
            .as_ref()
            .and_then(|json| json["cells"].as_array())
            .is_some_and(|cells| cells.iter().all(|cell| cell["interrupted"] == true));
        if status != Some(code)
            || !stdout.contains("interrupted: the numbers below")
            || !interrupted
        {
            lost.push(format!(
                "SIG{name} run {index}: status {status:?}, JSON {}, stderr: {stderr}",
                match json {
                    Some(_) => "without every cell interrupted",
                    None => "missing",
                }
            ));
        }
    }
    lost
}

#[test]
fn a_signal_to_the_process_and_its_group_at_once_keeps_the_report() {
    // Before the fix, 5 runs in 10 of `timeout 2` lost their report (status 143, no JSON).
    let target = url("/delay/10");
    let args = command_line("--h1 -c 2 -D 10s", &target);
    for (name, code) in STOPPING {
        let lost = lost_reports(&args, name, code, 12, false);
        assert!(
            lost.is_empty(),
            "{} of 12 lost:\n{}",
            lost.len(),
            lost.join("\n")
        );
    }
}

#[test]
fn a_signal_after_the_window_quits_at_once_without_the_report() {
    // Requests of 8 s, which the drain (--request-timeout) would wait for; the second signal
    // comes 2 s after the first, past the 1 s in which signals are one request to stop.
    let target = url("/delay/8000");
    let args = command_line("--h1 -c 2 -D 20s --request-timeout 20s", &target);
    let run = Grouped::start(&args);
    let json = run.json_path();
    // Both requests in flight.
    std::thread::sleep(Duration::from_millis(1000));
    run.signal("INT", true);
    std::thread::sleep(Duration::from_secs(2));
    run.signal("INT", true);
    let (status, stdout, stderr, _) = run.finish();
    assert_eq!(status, Some(130), "{stderr}");
    assert!(
        stderr.contains("signalled again: quitting at once"),
        "{stderr}"
    );
    assert!(!stdout.contains("finished in"), "{stdout}");
    assert!(!json.exists());
}

#[test]
fn a_quit_forced_while_files_are_unfinished_leaves_none_of_their_temporary_files() {
    // The request log is written under a temporary name beside it until the cell ends; the drain
    // waits for requests of 8 s, and the second signal quits during it. Before the fix the
    // temporary `.requests.tsv.XXXXXX.tmp` stayed behind.
    let target = url("/delay/8000");
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("requests.tsv");
    let flags = format!(
        "--h1 -c 2 -D 20s --request-timeout 20s --log-file {}",
        log.display()
    );
    let run = Grouped::start(&command_line(&flags, &target));
    std::thread::sleep(Duration::from_millis(1000));
    run.signal("TERM", true);
    std::thread::sleep(Duration::from_millis(1500));
    run.signal("TERM", true);
    let (status, _, stderr, _) = run.finish();
    assert_eq!(status, Some(143), "{stderr}");
    assert!(stderr.contains("quitting at once"), "{stderr}");
    let left: Vec<_> = std::fs::read_dir(logs.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn ctrl_c_at_a_terminal_stops_a_sweep_of_the_built_in_target_cleanly() {
    // A terminal signals the whole foreground group: before the fix the built-in target died
    // with it and the requests in flight counted as errors.
    let args = ["-c", "1,10", "-D", "10s", "--target-path", "/delay/100"];
    let threads: Vec<_> = (0..4)
        .map(|_| {
            // Requests in flight, each for 100 ms.
            std::thread::spawn(move || {
                signalled_after(&args, Duration::from_millis(700), "INT", true)
            })
        })
        .collect();
    for thread in threads {
        let (status, stdout, stderr, json) = thread.join().unwrap();
        assert_eq!(status, Some(130), "{stderr}");
        assert!(
            stdout.contains("interrupted: the numbers below"),
            "{stdout}"
        );
        assert!(!stdout.contains("cell 2/2"), "{stdout}");
        let json = json.expect("the JSON report");
        let cells = json["cells"].as_array().unwrap();
        assert_eq!(cells.len(), 1, "{stdout}");
        let cell = &cells[0];
        assert_eq!(cell["interrupted"], true, "{stdout}");
        let requests = &cell["requests"];
        assert!(requests["done"].as_u64().unwrap() > 0, "{stdout}");
        assert_eq!(
            requests["succeeded"], requests["done"],
            "{stdout}\n{stderr}"
        );
        assert_eq!(requests["errored"], 0, "{stdout}\n{stderr}");
        assert_eq!(cell["errors"], serde_json::json!({}), "{stdout}\n{stderr}");
        assert_eq!(
            cell["stream_reset_codes"],
            serde_json::json!({}),
            "{stdout}"
        );
    }
}

#[test]
fn a_signal_during_the_warm_up_measures_nothing_not_even_bytes() {
    // Before the fix, the warm-up's bytes were reported as the (empty) measured period's.
    let target = url("/delay/10");
    let args = command_line("--h1 -c 2 -D 5s --warm-up-time 10s", &target);
    // Requests of the warm-up done and their bytes counted.
    let (status, stdout, stderr, json) =
        signalled_after(&args, Duration::from_millis(1000), "TERM", false);
    assert_eq!(status, Some(143), "{stderr}");
    assert!(
        stdout.contains("interrupted during the warm-up: nothing was measured"),
        "{stdout}"
    );
    let cell = &json.expect("the JSON report")["cells"][0];
    assert_eq!(cell["interrupted"], true);
    assert_eq!(cell["requests"]["done"], 0);
    assert_eq!(cell["traffic"]["total_bytes"], 0, "{}", cell["traffic"]);
    assert_eq!(cell["traffic"]["header_bytes"], 0, "{}", cell["traffic"]);
}

#[test]
fn a_signal_between_cells_stops_the_sweep_and_says_where() {
    let target = url("/delay/10");
    let args = command_line("--h1 -c 1,2 -D 1s --cooldown 30s", &target);
    let mut run = Grouped::start(&args);
    // Cell 1's report: the signal comes while its exports are written or during the cooldown.
    run.wait_for("finished in");
    run.signal("INT", false);
    let signalled = std::time::Instant::now();
    let (status, _, stderr, json) = run.finish();
    assert_eq!(status, Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted: the sweep stopped after cell 1 of 2"),
        "{stderr}"
    );
    let json = json.expect("the JSON report");
    // The JSON says it too (no cell was interrupted, so the cells alone cannot).
    assert_eq!(
        json["stopped_between_cells"],
        serde_json::json!({ "after_cell": 1, "of": 2 }),
        "{stderr}"
    );
    let cells = json["cells"].clone();
    // Before the fix, a signal while cell 1's exports were written waited out the cooldown.
    assert!(signalled.elapsed() < Duration::from_secs(15), "{stderr}");
    assert_eq!(cells.as_array().unwrap().len(), 1);
    // Cell 1 ran to its end.
    assert_eq!(cells[0]["interrupted"], false);
}

/// The first SIGINT or SIGTERM ends a run at any rate within its drain (1 s), with its report:
/// at 10^8/s under Poisson arrivals the workers counted the schedule's send times to the end of
/// its `-D` (3 × 10^9, which an interrupted run then leaves out) one draw each before the fix:
/// minutes, and a second signal quit without the report.
#[test]
fn a_first_signal_ends_a_run_at_any_rate_with_its_report() {
    let target = url("/");
    let args = command_line(
        "--h1 -c 4 --rate 100000000 --arrival poisson -D 30s",
        &target,
    );
    for (name, code) in [("INT", 130), ("TERM", 143)] {
        let run = Grouped::start(&args);
        std::thread::sleep(Duration::from_secs(1));
        let signalled = std::time::Instant::now();
        run.signal(name, true);
        let (status, stdout, stderr, json) = run.finish();
        let took = signalled.elapsed();
        // At most 1 s of drain, then the report; a timely stop takes 0.3 s, and the bound leaves
        // a busy 2-core machine room, far below the minute a stop took when it had to count the
        // schedule's send times one by one.
        assert!(
            took < Duration::from_secs(10),
            "SIG{name}: ended {took:?} after it"
        );
        assert_eq!(status, Some(code), "SIG{name}: {stderr}");
        assert!(
            stdout.contains("interrupted: the numbers below"),
            "SIG{name}: {stdout}"
        );
        let json = json.unwrap_or_else(|| panic!("SIG{name}: no JSON report: {stderr}"));
        let cell = &json["cells"][0];
        assert_eq!(cell["interrupted"], true, "SIG{name}");
        let started = cell["requests"]["started"].as_u64().unwrap();
        assert!(started > 0, "SIG{name}: {started} requests started");
        assert_eq!(
            cell["requests"]["done"].as_u64(),
            Some(started),
            "SIG{name}"
        );
    }
}
