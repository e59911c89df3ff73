//! Where exports land when their path is not a plain file: a device node, a FIFO or a socket is
//! written through (never replaced by a regular file), a symlink is followed (the link stays, its
//! target gets the bytes), `-` is standard output for one export at most, and a standard output
//! that cannot be written is an error that keeps the exports.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::common::{assert_usage_error, run_command, url, Output};

const BIN: &str = env!("CARGO_BIN_EXE_h2load-rs");

/// Requests each run sends: every count below is checked against it.
const REQUESTS: u64 = 20;

/// The three flags the node tests write through, each to its own node in `dir`.
fn node_flags(dir: &Path) -> Vec<String> {
    let mut args = Vec::new();
    for (flag, name) in [
        ("--json", "json"),
        ("--log-file", "log"),
        ("--hdr-log", "hdr"),
    ] {
        args.push(flag.to_owned());
        args.push(dir.join(name).to_str().unwrap().to_owned());
    }
    args
}

/// Runs h2load-rs with `args` in `dir` (so a stray file named `-` would land there), stdout to
/// `stdout`.
fn run_in(dir: &Path, args: &[String], stdout: Stdio) -> Output {
    let child = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let output = child.wait_with_output().unwrap();
    Output {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        wall: Duration::ZERO,
    }
}

/// The load test every node test runs, plus `extra`.
fn load_args(extra: Vec<String>) -> Vec<String> {
    let mut args = vec!["-n".to_owned(), REQUESTS.to_string(), url("/ping")];
    args.extend(extra);
    args
}

/// Checks what the three exports wrote: a JSON report with every request, one log line per
/// request, and an HdrHistogram log.
fn assert_exports(json: &str, log: &str, hdr: &str) {
    let report: serde_json::Value = serde_json::from_str(json).expect("the JSON report parses");
    assert_eq!(report["cells"][0]["requests"]["succeeded"], REQUESTS);
    assert_eq!(log.lines().count() as u64, REQUESTS, "{log}");
    assert!(hdr.starts_with("#[Logged with h2load-rs"), "{hdr}");
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn device_nodes_stay_device_nodes() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["json", "log", "hdr"] {
        // A scratch /dev/null: writing to it is harmless, replacing it is the defect.
        let made = run_command(
            "mknod",
            &[dir.path().join(name).to_str().unwrap(), "c", "1", "3"],
        );
        assert_eq!(
            made.code, 0,
            "mknod (the tests run as root): {}",
            made.stderr
        );
    }
    let output = run_in(
        dir.path(),
        &load_args(node_flags(dir.path())),
        Stdio::null(),
    );
    assert_eq!(output.code, 0, "{}", output.stderr);
    for name in ["json", "log", "hdr"] {
        let kind = std::fs::symlink_metadata(dir.path().join(name))
            .unwrap()
            .file_type();
        assert!(
            kind.is_char_device(),
            "{name} is no longer a device: {kind:?}"
        );
    }
    assert_eq!(
        names_in(dir.path()),
        ["hdr", "json", "log"],
        "nothing else is left"
    );
}

/// Reads the FIFO at `path` to its end in a thread; the bytes come through the receiver.
fn read_fifo(path: PathBuf) -> mpsc::Receiver<String> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        File::open(path).unwrap().read_to_string(&mut text).unwrap();
        let _ = sender.send(text);
    });
    receiver
}

#[test]
fn fifos_are_written_through_to_their_reader() {
    let dir = tempfile::tempdir().unwrap();
    let readers: Vec<mpsc::Receiver<String>> = ["json", "log", "hdr"]
        .into_iter()
        .map(|name| {
            let path = dir.path().join(name);
            let made = run_command("mkfifo", &[path.to_str().unwrap()]);
            assert_eq!(made.code, 0, "{}", made.stderr);
            read_fifo(path)
        })
        .collect();
    let output = run_in(
        dir.path(),
        &load_args(node_flags(dir.path())),
        Stdio::null(),
    );
    assert_eq!(output.code, 0, "{}", output.stderr);
    // A reader that gets nothing (the FIFO was replaced, not opened) waits for ever: bounded here.
    let texts: Vec<String> = readers
        .iter()
        .map(|reader| {
            reader
                .recv_timeout(Duration::from_secs(20))
                .expect("every FIFO's reader got its export and the end of it")
        })
        .collect();
    assert_exports(&texts[0], &texts[1], &texts[2]);
    for name in ["json", "log", "hdr"] {
        let kind = std::fs::symlink_metadata(dir.path().join(name))
            .unwrap()
            .file_type();
        assert!(kind.is_fifo(), "{name} is no longer a FIFO: {kind:?}");
    }
    assert_eq!(
        names_in(dir.path()),
        ["hdr", "json", "log"],
        "nothing else is left"
    );
}

#[test]
fn symlinks_stay_and_their_targets_get_the_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let targets = dir.path().join("targets");
    std::fs::create_dir(&targets).unwrap();
    // The JSON link's target exists (it is replaced whole), the log's is a relative link to a file
    // not yet made, and the HdrHistogram log's is a link to a link.
    std::fs::write(targets.join("json"), "earlier").unwrap();
    std::os::unix::fs::symlink(targets.join("json"), dir.path().join("json")).unwrap();
    std::os::unix::fs::symlink("targets/log", dir.path().join("log")).unwrap();
    std::os::unix::fs::symlink(targets.join("hdr"), targets.join("hdr-link")).unwrap();
    std::os::unix::fs::symlink(targets.join("hdr-link"), dir.path().join("hdr")).unwrap();
    let output = run_in(
        dir.path(),
        &load_args(node_flags(dir.path())),
        Stdio::null(),
    );
    assert_eq!(output.code, 0, "{}", output.stderr);
    for link in [
        dir.path().join("json"),
        dir.path().join("log"),
        dir.path().join("hdr"),
        targets.join("hdr-link"),
    ] {
        let kind = std::fs::symlink_metadata(&link).unwrap().file_type();
        assert!(
            kind.is_symlink(),
            "{} is no longer a symlink",
            link.display()
        );
    }
    let read = |name: &str| std::fs::read_to_string(targets.join(name)).unwrap();
    assert_exports(&read("json"), &read("log"), &read("hdr"));
    assert_eq!(
        names_in(&targets),
        ["hdr", "hdr-link", "json", "log"],
        "nothing else is left"
    );
}

#[test]
fn a_dash_is_standard_output_and_the_text_report_moves_to_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = load_args(vec!["--json".to_owned(), "-".to_owned()]);
    let output = run_in(dir.path(), &args, Stdio::piped());
    assert_eq!(output.code, 0, "{}", output.stderr);
    let report: serde_json::Value =
        serde_json::from_str(&output.stdout).expect("stdout is the JSON report alone");
    assert_eq!(report["cells"][0]["requests"]["succeeded"], REQUESTS);
    assert!(
        output.stderr.contains("requests: 20 total"),
        "{}",
        output.stderr
    );
    assert!(names_in(dir.path()).is_empty(), "no file named '-'");

    // The request log too, and `merge`'s exports.
    args.truncate(3);
    args.extend([
        "--log-file".to_owned(),
        "-".to_owned(),
        "--json".to_owned(),
        "r.json".to_owned(),
    ]);
    let output = run_in(dir.path(), &args, Stdio::piped());
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(
        output.stdout.lines().count() as u64,
        REQUESTS,
        "{}",
        output.stdout
    );
    let merge = ["merge", "r.json", "r.json", "--csv", "-"].map(str::to_owned);
    let output = run_in(dir.path(), &merge, Stdio::piped());
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(
        output.stdout.lines().count(),
        2,
        "a header and one row: {}",
        output.stdout
    );
    assert!(
        output.stderr.contains("merged 2 reports"),
        "{}",
        output.stderr
    );
    assert_eq!(names_in(dir.path()), ["r.json"]);
}

#[test]
fn two_exports_cannot_share_standard_output() {
    for (flags, says) in [
        (
            &["--json", "-", "--csv", "-"][..],
            "--json and --csv both write to standard output ('-')",
        ),
        (
            &["--log-file", "-", "--hdr-log", "-"][..],
            "--hdr-log and --log-file both write to standard output ('-')",
        ),
        (&["--hgrm", "-"][..], "--hgrm '-': names a directory"),
    ] {
        let args = load_args(flags.iter().map(|flag| flag.to_string()).collect());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = assert_usage_error(&args, says);
        assert!(output.stdout.is_empty(), "{flags:?}: nothing was run");
        // The tests run in the package's directory.
        assert!(!Path::new("-").exists(), "{flags:?}: no file named '-'");
    }
}

#[test]
fn a_full_standard_output_is_an_error_that_keeps_the_exports() {
    let dir = tempfile::tempdir().unwrap();
    let full = File::options().write(true).open("/dev/full").unwrap();
    let output = run_in(
        dir.path(),
        &load_args(vec!["--json".to_owned(), "r.json".to_owned()]),
        Stdio::from(full),
    );
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert_eq!(
        output.stderr.lines().collect::<Vec<_>>(),
        ["h2load-rs: cannot write to standard output: No space left on device (os error 28)"]
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(report["cells"][0]["requests"]["succeeded"], REQUESTS);
    // Whatever the command prints: help, a completion script, a diff.
    for args in [
        &["--help"][..],
        &["completions", "bash"],
        &["diff", "r.json", "r.json"],
    ] {
        let full = File::options().write(true).open("/dev/full").unwrap();
        let args: Vec<String> = args.iter().map(|arg| arg.to_string()).collect();
        let output = run_in(dir.path(), &args, Stdio::from(full));
        assert_eq!(output.code, 1, "{args:?}: {}", output.stderr);
        assert_eq!(
            output.stderr.lines().count(),
            1,
            "{args:?}: {}",
            output.stderr
        );
    }
}
