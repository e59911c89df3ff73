//! The command-line surface around the load test: version, completions, manual page, and a
//! report whose reader goes away early.

mod common;

use std::io::Read;
use std::process::{Command, Stdio};

use common::{run_command, url};

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
