//! The command-line surface around the load test: version, completions, manual page, a report
//! whose reader goes away early, exit statuses, signals, and the files a run writes.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{assert_usage_error, h2load_rs, run_command, url};

const BIN: &str = env!("CARGO_BIN_EXE_h2load-rs");

#[test]
fn version_names_the_commit() {
    let output = run_command(BIN, &["--version"]);
    assert_eq!(output.code, 0);
    let head = run_command("git", &["rev-parse", "--short=10", "HEAD"]);
    assert_eq!(head.code, 0, "the tests run in a git checkout");
    let expected = format!(
        "h2load-rs {} ({}",
        env!("CARGO_PKG_VERSION"),
        head.stdout.trim()
    );
    assert!(output.stdout.starts_with(&expected), "{}", output.stdout);
}

#[test]
fn completions_and_manual_come_from_the_option_definitions() {
    for (shell, marker) in [
        ("bash", "-o default h2load-rs"),
        ("zsh", "#compdef h2load-rs"),
        ("fish", "complete -c h2load-rs"),
    ] {
        let output = run_command(BIN, &["completions", shell]);
        assert_eq!(output.code, 0, "{shell}: {}", output.stderr);
        assert!(output.stdout.contains(marker), "{shell}");
        assert!(output.stdout.contains("log-file"), "{shell}");
    }
    let unknown = run_command(BIN, &["completions", "tcsh"]);
    assert_eq!(unknown.code, 2);
    assert_eq!(unknown.stderr.lines().count(), 1, "{}", unknown.stderr);

    let manual = run_command(BIN, &["man"]);
    assert_eq!(manual.code, 0);
    assert!(
        manual.stdout.contains(".TH h2load-rs 1"),
        "{}",
        manual.stdout
    );
    assert!(manual.stdout.contains("max\\-concurrent\\-streams"));
}

/// A mistyped flag is one line that names the flag meant and points to `--help` (clap's tip
/// was cut off with the usage that follows it).
#[test]
fn a_mistyped_flag_names_the_flag_meant() {
    for (args, says) in [
        (
            &["--rat", "5", "http://127.0.0.1:9/"][..],
            "a similar argument exists: '--rate'",
        ),
        (
            &["serve", "--hots", "127.0.0.1"][..],
            "a similar argument exists: '--host'",
        ),
    ] {
        let output = assert_usage_error(args, says);
        assert!(
            output.stderr.contains("try '--help'"),
            "{args:?}: {}",
            output.stderr
        );
    }
}

/// Bash completes the flags of a subcommand: clap_complete names the subcommand's case
/// `h2load__subcmd__rs__subcmd__serve` for a binary with a hyphen (clap-rs/clap#6421) while its
/// dispatch looks for `h2load__rs__subcmd__serve`, so `serve --<TAB>` offered nothing.
#[test]
fn bash_completes_the_flags_after_a_subcommand() {
    let script = run_command(BIN, &["completions", "bash"]);
    assert_eq!(script.code, 0, "{}", script.stderr);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h2load-rs.bash");
    std::fs::write(&path, &script.stdout).unwrap();
    let complete = |words: &str| {
        // What bash does at TAB: the words so far, the cursor in the last one, then the function.
        let program = format!(
            "source '{}'; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             _h2load__rs h2load-rs \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            path.display()
        );
        let output = run_command("bash", &["-c", &program]);
        assert_eq!(output.code, 0, "{}", output.stderr);
        output
            .stdout
            .lines()
            .map(str::to_owned)
            .collect::<Vec<String>>()
    };
    let serve = complete("h2load-rs serve --");
    for flag in ["--host", "--port", "--tls", "--fault"] {
        assert!(serve.contains(&flag.to_owned()), "serve --<TAB>: {serve:?}");
    }
    assert!(!serve.contains(&"--rate".to_owned()), "{serve:?}");
    let merge = complete("h2load-rs merge --");
    assert!(
        merge.contains(&"--json".to_owned()),
        "merge --<TAB>: {merge:?}"
    );
    let top = complete("h2load-rs --ra");
    assert_eq!(top, ["--rate"], "--ra<TAB>");
}

#[test]
fn a_closed_stdout_does_not_lose_the_exports() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let mut child = spawn_piped(&["-n", "200", "--json", json.to_str().unwrap(), &url("/ping")]);
    // Like `| head -0`: the reader is gone before the report is printed.
    drop(child.stdout.take());
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    assert_eq!(report["cells"][0]["requests"]["succeeded"], 200);
}

/// Starts h2load-rs with `args`, its stdout and stderr piped to this test.
fn spawn_piped(args: &[&str]) -> Child {
    Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Runs h2load-rs with `args` and both its stdout and stderr closed before it writes anything (as
/// `2>&1 | head -0`): the exit status it returns.
fn status_with_closed_output(args: &[&str]) -> Option<i32> {
    let mut child = spawn_piped(args);
    drop(child.stdout.take());
    drop(child.stderr.take());
    child.wait().unwrap().code()
}

#[test]
fn closed_stdout_and_stderr_keep_every_exit_status() {
    // Nothing listens on port 9 on loopback: no request succeeds, status 1 (was 101: the error
    // message's eprintln! panicked on EPIPE, and so did the panic report).
    assert_eq!(
        status_with_closed_output(&["-n", "10", "http://127.0.0.1:9/"]),
        Some(1)
    );
    assert_eq!(
        status_with_closed_output(&["-n", "10", &url("/ping")]),
        Some(0)
    );
    assert_eq!(status_with_closed_output(&["--no-such-flag"]), Some(2));
    assert_eq!(
        status_with_closed_output(&["-n", "10", &url("/status/503")]),
        Some(1)
    );
}

#[test]
fn on_a_terminal_the_progress_bar_updates_while_the_run_goes() {
    // `script` gives the run a pseudo-terminal, as an interactive shell would.
    let command = format!("{BIN} --proto h2c -c 2 -D 3s {}", url("/ping"));
    let output = run_command("script", &["-q", "-e", "-c", &command, "/dev/null"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let mut shown: Vec<u64> = output
        .stdout
        .split(" done, ")
        .filter_map(|before| before.rsplit(' ').next()?.parse().ok())
        .collect();
    shown.dedup();
    assert!(
        shown.len() >= 2,
        "the bar was redrawn with new counts: {shown:?}"
    );
    assert!(shown.windows(2).all(|pair| pair[0] < pair[1]), "{shown:?}");
    assert!(output.stdout.contains("req/s, 0 errors, p99 "));
    assert!(output.stdout.contains("finished in"));
}

#[test]
fn piped_output_has_no_control_characters() {
    let output = run_command(
        BIN,
        &["--proto", "h2c", "-c", "2", "-D", "1s", &url("/ping")],
    );
    assert_eq!(output.code, 0, "{}", output.stderr);
    for (stream, text) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
        let control = text
            .chars()
            .find(|c| c.is_control() && *c != '\n' && *c != '\t');
        assert_eq!(control, None, "{stream}: {text}");
    }
    assert!(!output.stderr.contains("done, "), "{}", output.stderr);
}

#[test]
fn quiet_prints_one_line_per_cell_and_errors_only() {
    let output = run_command(
        BIN,
        &["-q", "--proto", "h1,h2c", "-n", "300", &url("/status/503")],
    );
    assert_eq!(output.code, 1, "{}", output.stderr);
    let lines: Vec<&str> = output.stdout.lines().collect();
    // The cells, then the comparison's verdict (report_json.rs checks its figures): a difference,
    // or none where the ratio's interval holds 1 (on a busy machine the two rates wander).
    let verdict = if lines
        .get(4)
        .is_some_and(|line| line.contains(", no difference we can see ("))
    {
        "  - at c=1 m=1, no difference we can see (h2c/h1 = "
    } else {
        "  - at c=1 m=1 (h2c/h1 = "
    };
    let expected = [
        "h1 c=1 m=1: 300 done, 0 succeeded, 300 failed, 0 errored, ",
        "h2c c=1 m=1: 300 done, 0 succeeded, 300 failed, 0 errored, ",
        "",
        "in plain words:",
        verdict,
    ];
    assert!(lines.len() >= expected.len(), "{}", output.stdout);
    assert!(
        lines[expected.len()..]
            .iter()
            .all(|line| line.starts_with("    ")),
        "{}",
        output.stdout
    );
    for (line, expected) in lines.iter().zip(expected) {
        assert!(line.starts_with(expected), "{line}");
    }
    assert_eq!(
        output.stderr,
        "h2load-rs: no request succeeded: 600 got a 4xx/5xx status\n"
    );
    let refused = run_command(BIN, &["-q", "-n", "5", "http://127.0.0.1:1/"]);
    assert_eq!(refused.code, 1);
    assert!(refused.stderr.contains("refused"), "{}", refused.stderr);
    // Nothing was timed: no p99 of 0.
    assert!(
        refused
            .stdout
            .ends_with(" 0.00 req/s, p99 none (no response)\n"),
        "{}",
        refused.stdout
    );
}

#[test]
fn verbose_traces_the_first_connections_and_very_verbose_every_frame() {
    let run = |args: &[&str]| {
        let output = run_command(BIN, args);
        assert_eq!(output.code, 0, "{}", output.stderr);
        output.stderr
    };
    let h2 = run(&["-v", "--proto", "h2", "-c", "10", "-n", "100"]);
    assert_eq!(h2.matches("] connected in ").count(), 4, "{h2}");
    assert!(h2.contains("; TLSv1.3 TLS13_"), "{h2}");
    assert!(h2.contains(", ALPN h2; speaking h2"), "{h2}");
    assert!(h2.contains("[SETTINGS_INITIAL_WINDOW_SIZE(0x04):1073741823]"));
    assert!(!h2.contains("DATA frame"), "{h2}");
    // Two request and two response blocks listed per traced connection.
    assert_eq!(h2.matches(":status: 200").count(), 8, "{h2}");

    let every = run(&["-vv", "--proto", "h2c", "-n", "5", &url("/bytes/10")]);
    assert_eq!(
        every
            .matches("recv DATA frame <length=10, flags=0x01")
            .count(),
        5
    );
    assert_eq!(every.matches(":status: 200").count(), 5);

    let h1 = run(&["-v", "--h1", "-n", "5", &url("/ping")]);
    assert!(h1.contains("] send GET /ping HTTP/1.1\n"), "{h1}");
    assert!(h1.contains("] recv HTTP/1.1 200 OK\n"), "{h1}");
    assert_eq!(h1.matches("] recv ").count(), 1, "only the first exchange");
}

#[test]
fn color_always_paints_the_report_and_never_does_not() {
    let errors = url("/status/503");
    let painted = run_command(BIN, &["--color", "always", "-n", "20", &url("/ping")]);
    assert!(
        painted.stdout.contains("\x1b[1mfinished in "),
        "{}",
        painted.stdout
    );
    let plain = run_command(BIN, &["--color", "never", "-n", "20", &errors]);
    assert!(!plain.stdout.contains('\x1b'), "{}", plain.stdout);
    assert!(plain
        .stdout
        .contains("\n  - 20 responses had a 4xx/5xx status"));
}

/// Starts h2load-rs with `args`, with `H2LOAD_RS_TEST_PANIC_IN` set to `panic_in` if given.
fn spawn(args: &[&str], panic_in: Option<&str>) -> Child {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(thread) = panic_in {
        command.env("H2LOAD_RS_TEST_PANIC_IN", thread);
    }
    command.spawn().unwrap()
}

/// Sends signal `name` (HUP, INT, TERM, KILL) to the child.
fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .args(["-s", name, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn stderr_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn exit_status_is_0_1_or_2_by_the_readme_table() {
    let ok = run_command(BIN, &["-n", "100", &url("/ping")]);
    assert_eq!(ok.code, 0, "{}", ok.stderr);

    // Only 4xx/5xx answers: no request succeeded, and one line says why.
    for (path, line) in [
        (
            "/status/503",
            "h2load-rs: no request succeeded: 300 got a 4xx/5xx status",
        ),
        (
            "/status/404",
            "h2load-rs: no request succeeded: 300 got a 4xx/5xx status",
        ),
    ] {
        let failed = run_command(BIN, &["-n", "300", &url(path)]);
        assert_eq!(failed.code, 1, "{path}: {}", failed.stderr);
        assert_eq!(failed.stderr.lines().collect::<Vec<_>>(), [line], "{path}");
    }
    // One success in the whole sweep is enough.
    let mixed = run_command(BIN, &["-n", "10", &url("/status/503"), "/ping"]);
    assert_eq!(mixed.code, 0, "{}", mixed.stderr);

    // No connection at all: the refusal's line is the reason.
    let refused = run_command(BIN, &["-n", "5", "http://127.0.0.1:1/"]);
    assert_eq!(refused.code, 1);
    let lines: Vec<&str> = refused.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("refused"), "{lines:?}");

    let usage = run_command(BIN, &["-c", "0", &url("/ping")]);
    assert_eq!(usage.code, 2);
}

#[test]
fn a_panic_in_any_thread_exits_1_with_its_message_never_101() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let report = report.to_str().unwrap();
    let target = url("/ping");
    for (thread, message) in [
        (
            "worker",
            "h2load-rs: worker thread 0 panicked: injected panic in the worker thread",
        ),
        ("main", "injected panic in the main thread"),
    ] {
        let output = spawn(&["-n", "100", "--json", report, &target], Some(thread))
            .wait_with_output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{thread}");
        let stderr = stderr_of(&output);
        assert!(stderr.contains(message), "{thread}: {stderr}");
    }
}

#[test]
fn sighup_sigint_and_sigterm_stop_the_run_and_keep_every_export() {
    let target = url("/delay/10");
    let runs: Vec<_> = [("HUP", 129), ("INT", 130), ("TERM", 143)]
        .into_iter()
        .map(|(name, code)| {
            let dir = tempfile::tempdir().unwrap();
            let file = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
            let (report, table, log) = (file("r.json"), file("t.csv"), file("requests.tsv"));
            let args = [
                "--h1",
                "-c",
                "2",
                "-D",
                "5s",
                "--json",
                &report,
                "--csv",
                &table,
                "--log-file",
                &log,
                &target,
            ];
            let child = spawn(&args, None);
            (name, code, dir, child)
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    for (name, _, _, child) in &runs {
        signal(child, name);
    }
    let signalled = Instant::now();
    for (name, code, dir, child) in runs {
        let output = child.wait_with_output().unwrap();
        assert!(signalled.elapsed() < Duration::from_secs(3), "{name}");
        assert_eq!(
            output.status.code(),
            Some(code),
            "{name}: {}",
            stderr_of(&output)
        );
        let report = json(&dir.path().join("r.json"));
        let cell = &report["cells"][0];
        assert_eq!(cell["interrupted"], true, "{name}");
        let done = cell["requests"]["done"].as_u64().unwrap();
        // 2 connections × ~80 requests/s × 1.5 s.
        assert!((100..=300).contains(&done), "{name}: done {done}");
        let log = std::fs::read_to_string(dir.path().join("requests.tsv")).unwrap();
        assert_eq!(log.lines().count() as u64, done, "{name}");
        let table = std::fs::read_to_string(dir.path().join("t.csv")).unwrap();
        assert_eq!(table.lines().count(), 2, "{name}: {table}");
    }
}

#[test]
fn a_sweep_writes_its_exports_after_every_cell() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let (report, table, log) = (file("r.json"), file("t.csv"), file("requests.tsv"));
    let target = url("/delay/10");
    let args = [
        "--proto",
        "h1,h2c",
        "-D",
        "2s",
        "--json",
        &report,
        "--csv",
        &table,
        "--log-file",
        &log,
        &target,
    ];
    // Killed outright in cell 2: nothing can be written then, and cell 1 must already be there.
    let killed = spawn(&args, None);
    std::thread::sleep(Duration::from_millis(3200));
    signal(&killed, "KILL");
    killed.wait_with_output().unwrap();
    let written = json(Path::new(&report));
    let labels: Vec<&str> = written["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|cell| cell["cell"]["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["h1 c=1 m=1"]);
    assert_eq!(written["cells"][0]["interrupted"], false);
    let done = written["cells"][0]["requests"]["done"].as_u64().unwrap();
    assert!(done > 50, "done {done}");
    assert_eq!(std::fs::read_to_string(&table).unwrap().lines().count(), 2);
    let log = std::fs::read_to_string(&log).unwrap();
    // Column 8: the cell's number.
    let first_cell = log
        .lines()
        .filter(|line| line.split('\t').nth(7) == Some("1"))
        .count();
    assert_eq!(first_cell as u64, done);

    // Stopped by SIGTERM in cell 2: both cells, the second marked interrupted.
    let stopped = spawn(&args, None);
    std::thread::sleep(Duration::from_millis(3200));
    signal(&stopped, "TERM");
    let output = stopped.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(143), "{}", stderr_of(&output));
    let written = json(Path::new(&report));
    assert_eq!(written["cells"][1]["cell"]["label"], "h2c c=1 m=1");
    assert_eq!(written["cells"][1]["interrupted"], true);
    assert_eq!(std::fs::read_to_string(&table).unwrap().lines().count(), 3);
}

#[test]
fn one_export_failing_does_not_stop_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let doomed = dir.path().join("doomed");
    std::fs::create_dir(&doomed).unwrap();
    let file = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let (report, markdown) = (file("r.json"), file("t.md"));
    let table = doomed.join("t.csv").to_str().unwrap().to_owned();
    let target = url("/ping");
    let args = [
        "-D",
        "1s",
        "--json",
        &report,
        "--csv",
        &table,
        "--markdown",
        &markdown,
        &target,
    ];
    let child = spawn(&args, None);
    // Passes the check before the run, then goes away before the exports are written.
    std::thread::sleep(Duration::from_millis(300));
    std::fs::remove_dir(&doomed).unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = stderr_of(&output);
    let failures: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("t.csv"))
        .collect();
    assert_eq!(failures.len(), 1, "{stderr}");
    assert!(
        failures[0].starts_with(&format!(
            "h2load-rs: cannot write the CSV report to '{table}'"
        )),
        "{stderr}"
    );
    assert!(json(Path::new(&report))["cells"][0]["requests"]["succeeded"].as_u64() > Some(0));
    assert!(std::fs::read_to_string(&markdown)
        .unwrap()
        .starts_with("| "));
}

#[test]
fn exports_replace_earlier_files_whole() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    std::fs::write(&report, "earlier").unwrap();
    // A write in place would change the linked file too; a rename leaves it alone.
    let earlier = dir.path().join("earlier.json");
    std::fs::hard_link(&report, &earlier).unwrap();
    let output = run_command(
        BIN,
        &[
            "-n",
            "50",
            "--json",
            report.to_str().unwrap(),
            &url("/ping"),
        ],
    );
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(json(&report)["cells"][0]["requests"]["succeeded"], 50);
    assert_eq!(std::fs::read_to_string(&earlier).unwrap(), "earlier");
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "no temporary file is left: {names:?}");
}

#[test]
fn credentials_in_the_url_are_never_sent_or_logged() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8];
        while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap() == 1 {
            head.push(byte[0]);
        }
        stream
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
            .unwrap();
        String::from_utf8(head).unwrap()
    });
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    let log = dir.path().join("requests.tsv");
    let output = run_command(
        BIN,
        &[
            "--h1",
            "-n",
            "1",
            "--json",
            report.to_str().unwrap(),
            "--log-file",
            log.to_str().unwrap(),
            &format!("http://user:secret@127.0.0.1:{port}/path"),
        ],
    );
    let head = server.join().unwrap();
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(
        head.starts_with(&format!("GET /path HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n")),
        "{head}"
    );
    let warning = format!(
        "h2load-rs: warning: URL 'http://127.0.0.1:{port}/path': the user name and password in it \
         are neither sent nor logged; to authenticate, use -H 'Authorization: Basic …'"
    );
    assert_eq!(
        output.stderr.lines().collect::<Vec<_>>(),
        [warning.as_str()]
    );
    let report = std::fs::read_to_string(&report).unwrap();
    for (what, text) in [
        ("request", head.as_str()),
        ("stdout", &output.stdout),
        ("stderr", &output.stderr),
        ("JSON", &report),
        ("log", &std::fs::read_to_string(&log).unwrap()),
    ] {
        assert!(
            !text.contains("secret") && !text.contains("user:"),
            "{what}: {text}"
        );
    }
}

#[test]
fn connect_to_skips_resolving_the_url_host() {
    let run = h2load_rs(&[
        "--connect-to",
        &crate::common::target().to_string(),
        "-n",
        "50",
        "http://no-such-host.invalid/ping",
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    assert_eq!(run.int("requests/succeeded"), 50);
}

#[test]
fn h2_multiplex_applies_to_the_default_protocol() {
    let run = h2load_rs(&[
        "--h2-multiplex",
        "-c",
        "4",
        "-m",
        "2",
        "-n",
        "80",
        &url("/ping"),
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    assert_eq!(run.cell()["cell"]["label"], "h2c c=1 m=8");
    assert_eq!(run.int("connections/opened"), 1);
    assert_eq!(run.int("protocol/max_concurrent_streams_effective"), 8);
    assert_eq!(run.int("requests/succeeded"), 80);
}
