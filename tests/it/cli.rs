//! The command-line surface around the load test: version, completions, manual page, and a
//! report whose reader goes away early.

use std::io::Read;
use std::process::{Command, Stdio};

use crate::common::{run_command, url};

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

#[test]
fn a_closed_stdout_does_not_lose_the_exports() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let mut child = Command::new(BIN)
        .args(["-n", "200", "--json", json.to_str().unwrap(), &url("/ping")])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
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
    assert_eq!(output.code, 0, "{}", output.stderr);
    let lines: Vec<&str> = output.stdout.lines().collect();
    let expected = [
        "h1 c=1 m=1: 300 done, 0 succeeded, 300 failed, 0 errored, ",
        "h2c c=1 m=1: 300 done, 0 succeeded, 300 failed, 0 errored, ",
    ];
    assert_eq!(lines.len(), expected.len(), "{}", output.stdout);
    for (line, expected) in lines.iter().zip(expected) {
        assert!(line.starts_with(expected), "{line}");
    }
    assert_eq!(output.stderr, "");
    let refused = run_command(BIN, &["-q", "-n", "5", "http://127.0.0.1:1/"]);
    assert_eq!(refused.code, 1);
    assert!(refused.stderr.contains("refused"), "{}", refused.stderr);
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
