//! Other ways to the server: `--unix-socket` (against `serve --unix`) and `--proxy` (CONNECT
//! tunnels: a proxy in the test, and tinyproxy of the test bed in front of real servers).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use crate::common::{assert_clean, assert_usage_error, h2load_rs, run_command, target, Run};
use crate::testbed::testbed_running;

const BIN: &str = env!("CARGO_BIN_EXE_h2load-rs");
const CA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/certs/ca.crt");
const N: u64 = 200;
const BODY: u64 = 1000;

/// `h2load-rs serve --unix PATH` with `flags`, once it says it listens.
struct UnixTarget {
    child: Child,
}

impl UnixTarget {
    fn start(path: &Path, flags: &[&str]) -> UnixTarget {
        let mut child = Command::new(BIN)
            .args(["serve", "--unix", path.to_str().unwrap()])
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(
            line.starts_with(&format!(
                "h2load-rs target listening on unix socket {}",
                path.display()
            )),
            "{line}"
        );
        UnixTarget { child }
    }

    /// Sends `signal` and waits for the target to exit; its exit status.
    fn stop(mut self, signal: &str) -> i32 {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill")
            .args([signal, &pid])
            .status()
            .unwrap()
            .success());
        self.child.wait().unwrap().code().unwrap_or(-1)
    }
}

impl Drop for UnixTarget {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Checks `run`: `N` requests of `BODY` bytes each, all answered 2xx, over `protocol`.
fn assert_exact(run: &Run, name: &str, protocol: &str) {
    assert_clean(run, name, N);
    assert_eq!(run.int("traffic/data_bytes"), N * BODY, "{name}");
    assert_eq!(run.cell()["protocol"]["negotiated"], protocol, "{name}");
}

#[test]
fn unix_socket_h1_and_h2c_exact_counts_and_the_socket_file_goes_at_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("target.sock");
    let server = UnixTarget::start(&socket, &[]);
    let path = socket.to_str().unwrap();
    let n = N.to_string();
    for (proto, negotiated) in [("h1", "http/1.1"), ("h2c", "h2c"), ("h2c-upgrade", "h2c")] {
        let run = h2load_rs(&[
            "--unix-socket",
            path,
            "--proto",
            proto,
            "-n",
            &n,
            "-c",
            "4",
            "-m",
            "4",
            "http://localhost/bytes/1000",
        ]);
        assert_exact(&run, proto, negotiated);
        assert_eq!(run.int("connections/opened"), 4, "{proto}");
        assert!(run.cell()["latency"]["proxy"].is_null(), "{proto}");
        // A unix socket gives no receive timestamps: no wait reported.
        crate::figures::assert_receive_wait(&run, proto, false);
    }
    assert_eq!(server.stop("-TERM"), 0);
    assert!(!socket.exists(), "the socket file is removed at exit");
}

#[test]
fn unix_socket_h2_over_tls_names_the_server_by_the_url_and_the_file_goes_at_sigint() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("tls.sock");
    // A stale socket file (a killed server's) is replaced.
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    let server = UnixTarget::start(&socket, &["--tls"]);
    let path = socket.to_str().unwrap();
    let n = N.to_string();
    for (proto, negotiated) in [("h2", "h2"), ("h1", "http/1.1")] {
        // The test CA's certificate is for localhost: verified against the URL's host.
        let run = h2load_rs(&[
            "--unix-socket",
            path,
            "--cacert",
            CA,
            "--proto",
            proto,
            "-n",
            &n,
            "-c",
            "2",
            "https://localhost/bytes/1000",
        ]);
        assert_exact(&run, proto, negotiated);
    }
    let wrong_name = h2load_rs(&[
        "--unix-socket",
        path,
        "--cacert",
        CA,
        "-n",
        "1",
        "https://other.example/ping",
    ]);
    assert_eq!(wrong_name.output.code, 1);
    assert_eq!(wrong_name.int("errors/tls"), 1);
    assert_eq!(server.stop("-INT"), 0);
    assert!(!socket.exists(), "the socket file is removed at exit");
}

#[test]
fn a_missing_unix_socket_is_a_connect_error_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("nobody.sock");
    let path = socket.to_str().unwrap();
    let run = h2load_rs(&["--unix-socket", path, "-n", "10", "http://localhost/"]);
    assert_eq!(run.output.code, 1, "{}", run.output.stderr);
    assert_eq!(run.int("errors/connect"), 1);
    assert_eq!(run.int("requests/succeeded"), 0);
    assert!(
        run.output.stderr.contains(&format!(
            "cannot connect to unix socket {path}: No such file"
        )),
        "{}",
        run.output.stderr
    );
}

#[test]
fn unix_sockets_and_proxies_in_wrong_company_are_usage_errors() {
    for (args, says) in [
        (
            &["--unix-socket", "/tmp/s"][..],
            "--unix-socket needs a URL",
        ),
        (
            &[
                "--unix-socket",
                "/tmp/s",
                "--proto",
                "h3",
                "https://localhost/",
            ],
            "--proto h3 runs over UDP",
        ),
        (
            &[
                "--unix-socket",
                "/tmp/s",
                "--connect-to",
                "127.0.0.1:1",
                "http://localhost/",
            ],
            "cannot be combined with --connect-to or --proxy",
        ),
        (
            &[
                "--proxy",
                "http://127.0.0.1:1",
                "--unix-socket",
                "/tmp/s",
                "http://localhost/",
            ],
            "cannot be combined with --connect-to or --proxy",
        ),
        (
            &[
                "--proxy",
                "http://127.0.0.1:1",
                "--proto",
                "h3",
                "https://localhost/",
            ],
            "CONNECT-UDP is not supported",
        ),
        (
            &["--proxy", "https://127.0.0.1:1", "http://localhost/"],
            "only http:// proxies are supported",
        ),
        (
            &["--proxy", "http://127.0.0.1", "http://localhost/"],
            "give the proxy's port",
        ),
        (&["serve", "--unix", "/tmp/s", "--port", "1"], "--port"),
    ] {
        assert_usage_error(args, says);
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    std::fs::write(&file, "keep").unwrap();
    let output = run_command(BIN, &["serve", "--unix", file.to_str().unwrap()]);
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert!(output.stderr.contains("not a socket"), "{}", output.stderr);
    assert_eq!(std::fs::read(&file).unwrap(), b"keep");
}

/// A proxy in the test: answers each CONNECT with `answer` and, for a 2xx, relays to the address
/// asked for. Keeps every request head it read.
struct TestProxy {
    port: u16,
    heads: Arc<Mutex<Vec<String>>>,
}

impl TestProxy {
    fn start(answer: &'static str) -> TestProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let kept = heads.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let kept = kept.clone();
                std::thread::spawn(move || tunnel(client, answer, &kept));
            }
        });
        TestProxy { port, heads }
    }

    fn url(&self, credentials: &str) -> String {
        format!("http://{credentials}127.0.0.1:{}", self.port)
    }
}

fn tunnel(mut client: TcpStream, answer: &str, heads: &Mutex<Vec<String>>) {
    let mut head = Vec::new();
    let mut byte = [0u8];
    while !head.ends_with(b"\r\n\r\n") {
        if client.read(&mut byte).unwrap_or(0) == 0 {
            return;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let target = head.split(' ').nth(1).unwrap().to_owned();
    heads.lock().unwrap().push(head);
    client.write_all(answer.as_bytes()).unwrap();
    if !answer.starts_with("HTTP/1.1 2") {
        return;
    }
    let upstream = TcpStream::connect(target).unwrap();
    let (mut up_read, mut client_write) =
        (upstream.try_clone().unwrap(), client.try_clone().unwrap());
    let down = std::thread::spawn(move || {
        let _ = std::io::copy(&mut up_read, &mut client_write);
        let _ = client_write.shutdown(Shutdown::Write);
    });
    let (mut client_read, mut up_write) = (client, upstream);
    let _ = std::io::copy(&mut client_read, &mut up_write);
    let _ = up_write.shutdown(Shutdown::Write);
    let _ = down.join();
}

/// The proxy time is there for every connection, and part of the connect time.
fn assert_proxy_time(run: &Run, name: &str) {
    let latency = &run.cell()["latency"];
    assert_eq!(
        latency["proxy"]["count"].as_u64(),
        Some(run.int("connections/opened")),
        "{name}: {latency}"
    );
    for bound in ["min", "max"] {
        assert!(
            latency["proxy"][bound].as_f64().unwrap()
                <= latency["connect"][bound].as_f64().unwrap(),
            "{name}: {latency}"
        );
    }
    assert!(
        run.output.stdout.contains("\ntime for proxy  :"),
        "{name}: {}",
        run.output.stdout
    );
}

#[test]
fn proxy_tunnels_with_credentials_count_only_the_http_traffic() {
    let proxy = TestProxy::start("HTTP/1.1 200 Connection established\r\n\r\n");
    let url = format!("http://{}/bytes/1000", target());
    let n = N.to_string();
    for (proto, negotiated) in [("h1", "http/1.1"), ("h2c", "h2c")] {
        let args = ["--proto", proto, "-n", &n, "-c", "2", &url];
        let direct = h2load_rs(&args);
        assert_exact(&direct, proto, negotiated);
        let proxied_url = proxy.url("user:p%40ss@");
        let proxied = h2load_rs(&[&["--proxy", proxied_url.as_str()][..], &args].concat());
        assert_exact(&proxied, proto, negotiated);
        assert_proxy_time(&proxied, proto);
        crate::figures::assert_receive_wait(&proxied, proto, true);
        // The CONNECT exchange is not HTTP traffic of the run: HTTP/1.1's total (heads and
        // bodies) is the direct run's exactly. (h2c's total has control frames and HPACK blocks
        // whose size varies from run to run: the target's date header changes each second.)
        if proto == "h1" {
            assert_eq!(
                proxied.int("traffic/total_bytes"),
                direct.int("traffic/total_bytes")
            );
            assert_merged_proxy_times(&[&proxied, &direct]);
        }
    }
    let heads = proxy.heads.lock().unwrap();
    assert_eq!(heads.len(), 4, "{heads:?}");
    let authority = target().to_string();
    for head in heads.iter() {
        assert_eq!(
            *head,
            format!(
                "CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\
                 Proxy-Authorization: Basic dXNlcjpwQHNz\r\n\r\n"
            )
        );
    }
}

/// `merge` of a run through a proxy and one without: the proxy times are the first run's (the
/// second has none), and two proxied runs add up.
fn assert_merged_proxy_times(runs: &[&Run]) {
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<String> = (0..runs.len())
        .map(|index| {
            dir.path()
                .join(format!("{index}.json"))
                .to_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    for (run, path) in runs.iter().zip(&paths) {
        std::fs::write(path, serde_json::to_vec(&run.json).unwrap()).unwrap();
    }
    let merged = |inputs: &[&str]| -> serde_json::Value {
        let out = dir.path().join("merged.json");
        let mut args = vec!["merge"];
        args.extend(inputs);
        args.extend(["--json", out.to_str().unwrap()]);
        let output = run_command(BIN, &args);
        assert_eq!(output.code, 0, "{}", output.stderr);
        serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap()
    };
    let proxied = &runs[0].cell()["latency"]["proxy"];
    let one = merged(&[&paths[1], &paths[0]]);
    assert_eq!(one["cells"][0]["latency"]["proxy"], *proxied);
    let two = merged(&[&paths[0], &paths[0]]);
    let proxy = &two["cells"][0]["latency"]["proxy"];
    assert_eq!(proxy["count"], proxied["count"].as_u64().unwrap() * 2);
    assert_eq!(proxy["max"], proxied["max"]);
    // The responses' waits for the client add up the same way, from the histograms of the runs
    // that have them (a direct run under `--io uring` has none; the proxied one stays on epoll).
    let wait = |cell: &serde_json::Value, key: &str| cell["latency"]["receive_wait"][key].clone();
    let (first, second) = (runs[0].cell(), runs[1].cell());
    let sum: u64 = [first, second]
        .iter()
        .filter_map(|cell| wait(cell, "count").as_u64())
        .sum();
    assert!(sum > 0, "the proxied run's TCP reads are stamped");
    assert_eq!(wait(&one["cells"][0], "count"), sum);
    let highest = [first, second]
        .iter()
        .filter_map(|cell| wait(cell, "max").as_f64())
        .fold(0.0, f64::max);
    assert_eq!(wait(&one["cells"][0], "max").as_f64(), Some(highest));
}

#[test]
fn a_proxy_that_refuses_is_a_proxy_error_and_a_closed_proxy_a_connect_error() {
    let proxy = TestProxy::start("HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n");
    let run = h2load_rs(&[
        "--proxy",
        &proxy.url(""),
        "-n",
        "10",
        "-c",
        "2",
        "https://127.0.0.1:19843/ping",
    ]);
    // No request succeeded: exit 1, as for any run where none did.
    assert_eq!(run.output.code, 1, "{}", run.output.stderr);
    assert_eq!(run.int("errors/proxy"), 2);
    assert_eq!(run.int("connections/failed"), 2);
    assert_eq!(run.int("requests/never_sent"), 10);
    assert!(
        run.output
            .stderr
            .contains("proxy answered 403 to CONNECT 127.0.0.1:19843 (Forbidden)"),
        "{}",
        run.output.stderr
    );

    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let run = h2load_rs(&[
        "--proxy",
        &format!("http://127.0.0.1:{port}"),
        "-n",
        "10",
        &format!("http://{}/ping", target()),
    ]);
    assert_eq!(run.output.code, 1, "{}", run.output.stderr);
    assert_eq!(run.int("errors/connect"), 1);
    assert!(
        run.output.stderr.contains(&format!(
            "cannot connect to proxy 127.0.0.1:{port}: Connection refused"
        )),
        "{}",
        run.output.stderr
    );
}

/// tinyproxy of the test bed (tests/testbed.sh) in front of Caddy, nginx and nghttpd.
#[test]
fn tinyproxy_tunnels_h2_h1_and_h2c_to_real_servers() {
    if !testbed_running() {
        return;
    }
    let n = N.to_string();
    for (name, flags, url, negotiated) in [
        (
            "caddy h2",
            &["--proto", "h2", "-k", "-m", "8"][..],
            "https://127.0.0.1:19843/bytes/1000",
            "h2",
        ),
        (
            "caddy h1",
            &["--proto", "h1", "--cacert", CA],
            "https://localhost:19843/bytes/1000",
            "http/1.1",
        ),
        (
            "nginx h1",
            &["--h1"],
            "http://127.0.0.1:19180/bytes/1000",
            "http/1.1",
        ),
        (
            "nghttpd h2c",
            &["--proto", "h2c", "-m", "8"],
            "http://127.0.0.1:19280/bytes/1000",
            "h2c",
        ),
    ] {
        let args = [
            &["--proxy", "http://127.0.0.1:19888", "-n", &n, "-c", "4"][..],
            flags,
            &[url],
        ]
        .concat();
        let run = h2load_rs(&args);
        assert_exact(&run, name, negotiated);
        assert_eq!(run.int("connections/opened"), 4, "{name}");
        assert_proxy_time(&run, name);
    }
}
