//! Cross-checks against other clients: the built-in target answers them, and h2load agrees with
//! h2load-rs on what a run did. The tools come from `tests/setup.sh`.

use crate::common::{h2load_rs, require, run_command, text_counts, url};

/// What curl saw fetching `path` with `protocol_flag`: "HTTP-version status body-size".
fn curl(protocol_flag: &str, path: &str) -> String {
    let format = "%{http_version} %{http_code} %{size_download}";
    let output = run_command(
        "curl",
        &[
            "-s",
            "-o",
            "/dev/null",
            "-w",
            format,
            protocol_flag,
            &url(path),
        ],
    );
    assert_eq!(
        output.code, 0,
        "curl {protocol_flag} {path}: {}",
        output.stderr
    );
    output.stdout
}

#[test]
fn curl_gets_h2c_by_prior_knowledge() {
    require("curl");
    assert_eq!(curl("--http2-prior-knowledge", "/ping"), "2 200 4");
    assert_eq!(
        curl("--http2-prior-knowledge", "/bytes/100000"),
        "2 200 100000"
    );
    assert_eq!(curl("--http2-prior-knowledge", "/status/503"), "2 503 0");
    assert_eq!(curl("--http1.1", "/bytes/1000"), "1.1 200 1000");
}

#[test]
fn h2load_and_h2load_rs_report_the_same_counts() {
    require("h2load");
    let cases: [(&str, &[&str], &str); 4] = [
        ("h2c", &["-c", "4", "-m", "16"], "/bytes/1000"),
        ("h2c 5xx", &["-c", "4", "-m", "16"], "/status/503"),
        ("h1", &["--h1", "-c", "4"], "/bytes/1000"),
        (
            "h1 pipelined",
            &["--h1", "-c", "4", "-m", "8"],
            "/bytes/1000",
        ),
    ];
    for (name, flags, path) in cases {
        let target = url(path);
        let mut args: Vec<&str> = vec!["-n", "2000"];
        args.extend(flags);
        args.push(&target);
        // Exit 1 when no request succeeded (h2load exits 0 whatever the statuses).
        let expected = if path.starts_with("/status/5") { 1 } else { 0 };
        let ours = compare_with_h2load(
            name,
            &args,
            expected,
            &[
                "total",
                "started",
                "done",
                "succeeded",
                "failed",
                "errored",
                "2xx",
                "5xx",
                "data_bytes",
            ],
        );
        assert_eq!(ours["done"], 2000, "{name}");
    }
}

/// Runs h2load and h2load-rs with the same `args`, checks h2load-rs's exit status and that both
/// report the same `keys` (see [`text_counts`]); returns h2load-rs's counts.
fn compare_with_h2load(
    name: &str,
    args: &[&str],
    our_exit: i32,
    keys: &[&str],
) -> std::collections::HashMap<String, u64> {
    let theirs = run_command("h2load", args);
    assert_eq!(theirs.code, 0, "{name}: h2load failed: {}", theirs.stderr);
    let ours = h2load_rs(args);
    assert_eq!(ours.output.code, our_exit, "{name}: {}", ours.output.stderr);
    let (theirs, ours) = (
        text_counts(&theirs.stdout),
        text_counts(&ours.output.stdout),
    );
    for key in keys {
        assert_eq!(ours[*key], theirs[*key], "{name}: {key}");
    }
    ours
}

/// An nghttpd serving files from a temporary directory on a free loopback port (h2c by prior
/// knowledge), stopped when dropped.
struct Nghttpd {
    child: std::process::Child,
    port: u16,
    _docroot: tempfile::TempDir,
}

impl Nghttpd {
    /// Starts nghttpd with one file per `(name, size)` and waits until it accepts connections.
    fn start(files: &[(&str, usize)]) -> Nghttpd {
        require("nghttpd");
        let docroot = tempfile::tempdir().expect("temp dir");
        for (name, size) in files {
            std::fs::write(docroot.path().join(name), vec![b'x'; *size]).expect("docroot file");
        }
        // A port the kernel just handed out is free: the test bed's fixed ports are not used.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let child = std::process::Command::new("nghttpd")
            .args(["--no-tls", "-a", "127.0.0.1", "-d"])
            .arg(docroot.path())
            .arg(port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("nghttpd starts");
        let server = Nghttpd {
            child,
            port,
            _docroot: docroot,
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "nghttpd did not listen on {port}"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        server
    }
}

impl Drop for Nghttpd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn h2load_and_h2load_rs_agree_on_nghttpd() {
    require("h2load");
    const SIZE: u64 = 40_000;
    let server = Nghttpd::start(&[("body", SIZE as usize)]);
    let target = format!("http://127.0.0.1:{}/body", server.port);
    let args = ["-n", "200", "-c", "2", "-m", "8", target.as_str()];
    let ours = compare_with_h2load(
        "nghttpd",
        &args,
        0,
        &[
            "done",
            "succeeded",
            "failed",
            "errored",
            "2xx",
            "data_bytes",
        ],
    );
    assert_eq!(ours["succeeded"], 200);
    assert_eq!(ours["data_bytes"], 200 * SIZE);
}
