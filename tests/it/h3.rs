//! HTTP/3 (`--proto h3`) end to end: against the built-in target's QUIC side (in this process, and
//! as the child a run without a URL starts), against Caddy and ngtcp2's gtlsserver in the test bed,
//! and the errors a user meets first (nothing on the UDP port, a certificate not trusted, http://).

use std::net::SocketAddr;
use std::sync::OnceLock;

use h2load_rs::testkit::server::{spawn_background, ServeOptions};
use h2load_rs::testkit::tls;

use crate::common::{assert_clean, assert_usage_error, h2load_rs, Run};
use crate::testbed::testbed_running;

pub(crate) const CA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/certs/ca.crt");

/// The built-in target with TLS and HTTP/3 on `cert`/`key` (PEM), on a free loopback port.
fn h3_target(cert: &str, key: &str) -> SocketAddr {
    let tls = tls::server_config(cert.as_bytes(), key.as_bytes()).expect("the certificate loads");
    let options = ServeOptions {
        tls: Some(tls),
        h3: true,
        ..ServeOptions::default()
    };
    spawn_background(2, options).expect("the HTTP/3 target starts")
}

/// An https:// URL on this binary's HTTP/3 target (the test certificate, signed by certs/ca.crt).
pub(crate) fn url(path: &str) -> String {
    static TARGET: OnceLock<SocketAddr> = OnceLock::new();
    let addr =
        TARGET.get_or_init(|| h3_target(tls::test_pki::SERVER_CERT, tls::test_pki::SERVER_KEY));
    format!("https://{addr}{path}")
}

/// Runs `--proto h3 --cacert certs/ca.crt` with `args`.
fn h3(args: &[&str]) -> Run {
    let mut full = vec!["--proto", "h3", "--cacert", CA];
    full.extend(args);
    h2load_rs(&full)
}

/// Checks a run that sent `n` requests, all answered 2xx over HTTP/3.
fn assert_all_succeeded(run: &Run, name: &str, n: u64) {
    assert_clean(run, name, n);
    assert_eq!(run.cell()["protocol"]["negotiated"], "h3", "{name}");
}

#[test]
fn h3_to_the_built_in_target_gets_exact_counts_and_bytes() {
    let run = h3(&["-c", "4", "-m", "10", "-n", "2000", &url("/ping")]);
    assert_all_succeeded(&run, "ping", 2000);
    assert_eq!(run.int("traffic/data_bytes"), 2000 * 4);
    // Each response head is QPACK's 2-byte prefix, `:status: 200` from the static table (1 byte)
    // and `content-length: 4` as a literal with a static name (3 bytes).
    assert_eq!(run.int("traffic/header_bytes"), 2000 * 6);
    assert_eq!(run.int("connections/opened"), 4);
    assert_eq!(run.int("latency/request/count"), 2000);

    // Bodies larger than one 64 KiB slice of the target, on many streams at once.
    let run = h3(&["-c", "2", "-m", "8", "-n", "200", &url("/bytes/100000")]);
    assert_all_succeeded(&run, "bytes", 200);
    assert_eq!(run.int("traffic/data_bytes"), 200 * 100_000);
}

#[test]
fn verbose_h3_traces_its_frames_and_finishes() {
    // -v shows the first two header blocks each way; -vv every frame, DATA too.
    for (flag, sent, received, data) in [("-v", 2, 2, 0), ("-vv", 3, 3, 3)] {
        let run = h3(&[flag, "-n", "3", &url("/ping")]);
        assert_all_succeeded(&run, flag, 3);
        let trace = &run.output.stderr;
        assert_eq!(
            trace.matches("] send HEADERS frame <length=").count(),
            sent,
            "{flag}: {trace}"
        );
        assert_eq!(
            trace.matches("] recv HEADERS frame <length=").count(),
            received,
            "{flag}: {trace}"
        );
        assert_eq!(
            trace.matches("] recv DATA <length=4, ").count(),
            data,
            "{flag}: {trace}"
        );
    }
}

#[test]
fn h3_error_statuses_delays_and_uploads() {
    let run = h3(&["-c", "2", "-m", "4", "-n", "100", &url("/status/503")]);
    assert_eq!(run.output.code, 1, "no request succeeded");
    for (field, expected) in [
        ("requests/done", 100),
        ("requests/succeeded", 0),
        ("requests/failed", 100),
        ("requests/errored", 0),
        ("status_codes/5xx", 100),
        ("traffic/data_bytes", 0),
    ] {
        assert_eq!(run.int(field), expected, "503: {field}");
    }

    let run = h3(&["-c", "2", "-m", "4", "-n", "40", &url("/delay/50")]);
    assert_all_succeeded(&run, "delay", 40);
    let min = run.int("latency/request/min");
    let p50 = run.int("latency/request/percentiles/p50");
    assert!(min >= 50_000, "min {min} µs");
    // Once, not twice (a doubled delay would be 100 ms), with room for a loaded CI machine.
    assert!((50_000..100_000).contains(&p50), "p50 {p50} µs");

    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body.bin");
    std::fs::write(&body, vec![b'b'; 150_000]).unwrap();
    let run = h3(&[
        "-c",
        "2",
        "-m",
        "4",
        "-n",
        "60",
        "-d",
        body.to_str().unwrap(),
        &url("/echo"),
    ]);
    assert_all_succeeded(&run, "echo", 60);
    assert_eq!(run.cell()["settings"]["method"], "POST");
    assert_eq!(run.int("traffic/data_bytes"), 60 * 150_000);
}

#[test]
fn without_a_url_h1_h2_and_h3_are_measured_side_by_side() {
    let run = h2load_rs(&["--proto", "h1,h2,h3", "-c", "4", "-m", "4", "-n", "4000"]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let cells = run.json["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 3);
    for (cell, negotiated) in cells.iter().zip(["http/1.1", "h2", "h3"]) {
        assert_eq!(cell["protocol"]["negotiated"], negotiated);
        assert_eq!(cell["requests"]["succeeded"], 4000, "{negotiated}");
        assert_eq!(cell["status_codes"]["2xx"], 4000, "{negotiated}");
        assert_eq!(cell["traffic"]["data_bytes"], 4000 * 4, "{negotiated}");
    }
    let ratios: Vec<&str> = run.json["comparison"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["ratio"][0].as_str().unwrap_or("-"))
        .collect();
    // The h1 cell runs over TLS too (the built-in target's TLS instance), and its label says so.
    assert_eq!(ratios, ["-", "h2/h1-tls", "h3/h1-tls"]);
    let stdout = &run.output.stdout;
    let table = stdout
        .split("comparison of 3 cells")
        .nth(1)
        .unwrap_or_else(|| panic!("no comparison table:\n{stdout}"));
    assert!(table.contains("h2/h1-tls = "), "{table}");
    assert!(table.contains("h3/h1-tls = "), "{table}");
}

#[test]
fn the_built_in_child_delays_h3_responses_as_asked() {
    // --target-delay reaches the TLS child's HTTP/3 side too (routes::decide sleeps for both).
    let run = h2load_rs(&[
        "--proto",
        "h3",
        "--target-delay",
        "20ms",
        "-c",
        "2",
        "-m",
        "2",
        "-n",
        "20",
    ]);
    assert_all_succeeded(&run, "delayed", 20);
    let min = run.int("latency/request/min");
    let max = run.int("latency/request/max");
    assert!(min >= 20_000, "min {min} µs");
    assert!(max < 200_000, "max {max} µs");
}

#[test]
fn nothing_listening_on_the_udp_port_is_a_bounded_connect_error() {
    // A port free now. The kernel answers QUIC's Initial with ICMP port unreachable, which the
    // engine sees (CONNECTION_REFUSED) well before --connect-timeout; either way the run is short.
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("https://127.0.0.1:{port}/ping");
    let run = h3(&["--connect-timeout", "1s", "-n", "10", &url]);
    assert_eq!(run.output.code, 1, "{}", run.output.stderr);
    assert!(
        run.output.wall < std::time::Duration::from_secs(10),
        "took {:?}",
        run.output.wall
    );
    assert_eq!(run.int("requests/succeeded"), 0);
    assert_eq!(run.int("requests/errored"), 10);
    assert_eq!(run.int("errors/connect"), 1);
    assert_eq!(run.int("connections/opened"), 0);
    assert_eq!(run.int("connections/failed"), 1);
    let stderr = &run.output.stderr;
    assert!(stderr.contains("CONNECTION_REFUSED"), "{stderr}");
    assert!(
        stderr.contains(&format!("nothing listens on UDP port {port}")),
        "{stderr}"
    );
}

#[test]
fn an_untrusted_certificate_is_a_tls_error_unless_k() {
    let addr = h3_target(
        include_str!("../../certs/selfsigned.crt"),
        include_str!("../../certs/selfsigned.key"),
    );
    let url = format!("https://{addr}/ping");
    let refused = h2load_rs(&["--proto", "h3", "-n", "10", &url]);
    assert_eq!(refused.output.code, 1, "{}", refused.output.stderr);
    assert_eq!(refused.int("requests/succeeded"), 0);
    assert_eq!(refused.int("errors/tls"), 1);
    let stderr = &refused.output.stderr;
    assert!(stderr.contains("invalid peer certificate"), "{stderr}");
    assert!(
        stderr.contains("-k"),
        "the message says how to proceed: {stderr}"
    );

    let accepted = h2load_rs(&["--proto", "h3", "-k", "-n", "10", &url]);
    assert_all_succeeded(&accepted, "-k", 10);
}

#[test]
fn h3_with_an_http_url_or_a_faulty_built_in_target_is_a_usage_error() {
    assert_usage_error(
        &["--proto", "h3", "-n", "10", "http://127.0.0.1:19843/ping"],
        "needs an https:// URL",
    );
    // The faults are a raw TCP server's: no HTTP/3 to measure.
    assert_usage_error(
        &[
            "--proto",
            "h1,h3",
            "--target-fault",
            "close-after=1",
            "-n",
            "10",
        ],
        "drop h3 from --proto",
    );
}

#[test]
fn caddy_over_h3_gets_exact_counts_and_bytes() {
    if !testbed_running() {
        return;
    }
    let run = h2load_rs(&[
        "--proto",
        "h3",
        "-k",
        "-c",
        "4",
        "-m",
        "10",
        "-n",
        "5000",
        "https://localhost:19843/ping",
    ]);
    assert_all_succeeded(&run, "caddy ping", 5000);
    assert_eq!(run.int("traffic/data_bytes"), 5000 * 4);

    let run = h3(&[
        "-c",
        "4",
        "-m",
        "10",
        "-n",
        "1000",
        "https://localhost:19843/bytes/1000",
    ]);
    assert_all_succeeded(&run, "caddy bytes", 1000);
    assert_eq!(run.int("traffic/data_bytes"), 1000 * 1000);
}

#[test]
fn gtlsserver_over_h3_gets_exact_counts_and_bytes() {
    if !testbed_running() {
        return;
    }
    for (path, size) in [("/ping", 4), ("/bytes/1000", 1000)] {
        let url = format!("https://127.0.0.1:19844{path}");
        let run = h3(&["-c", "4", "-m", "10", "-n", "500", &url]);
        assert_all_succeeded(&run, path, 500);
        assert_eq!(run.int("traffic/data_bytes"), 500 * size, "{path}");
        assert_eq!(run.int("connections/opened"), 4, "{path}");
    }
}

#[test]
fn h3_traffic_total_is_the_measured_periods_http3_bytes() {
    // Warm-up bytes are left out and every byte counts as it is read: with 10 kB bodies the
    // total is the data plus a few bytes of frames per response (and each connection's control
    // and QPACK streams), not the UDP payload since the connection began.
    let run = h3(&[
        "-c",
        "2",
        "-m",
        "4",
        "-D",
        "2s",
        "--warm-up-time",
        "1s",
        &url("/bytes/10000"),
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let data = run.int("traffic/data_bytes");
    let headers = run.int("traffic/header_bytes");
    let total = run.int("traffic/total_bytes");
    let succeeded = run.int("requests/succeeded");
    assert!(succeeded > 0);
    // Bytes count when read, responses when done: the up to 8 responses in flight at each edge
    // of the measured period (warm-up end, deadline) may be in one figure and not the other.
    let edges = 2 * 8 * 10_000;
    assert!(
        data.abs_diff(succeeded * 10_000) <= edges,
        "data {data}, {succeeded} responses of 10 kB"
    );
    assert!(total >= data + headers, "{total} < {data} + {headers}");
    // HEADERS and DATA frame heads: well under 1% of a 10 kB response.
    assert!(total <= data + data / 100, "total {total}, data {data}");
}

#[test]
fn an_interrupted_h3_run_keeps_its_counts_and_bytes() {
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    let log = dir.path().join("requests.tsv");
    let target = url("/delay/10");
    let child = Command::new(env!("CARGO_BIN_EXE_h2load-rs"))
        .args([
            "--proto",
            "h3",
            "--cacert",
            CA,
            "-c",
            "2",
            "-m",
            "2",
            "-D",
            "10s",
            "--json",
            report.to_str().unwrap(),
            "--log-file",
            log.to_str().unwrap(),
            &target,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let killed = Command::new("kill")
        .args(["-s", "INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let signalled = std::time::Instant::now();
    let output = child.wait_with_output().unwrap();
    assert!(signalled.elapsed() < std::time::Duration::from_secs(3));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let cell = &json["cells"][0];
    assert_eq!(cell["interrupted"], true);
    let count = |field: &str| cell["requests"][field].as_u64().unwrap();
    let done = count("done");
    // 4 streams, each a request per ~10 ms, for 1.5 s (a debug build on a shared machine: ≥ 50).
    assert!(done >= 50, "done {done}");
    // What was in flight at the stop stays unfinished: not an error.
    assert_eq!((count("succeeded"), count("errored")), (done, 0));
    assert!(count("started") - done <= 4);
    let lines = std::fs::read_to_string(&log).unwrap().lines().count() as u64;
    assert_eq!(lines, done);
    // Bytes are counted as they are read, so connections cut short count theirs too.
    let traffic = &cell["traffic"];
    let total = traffic["total_bytes"].as_u64().unwrap();
    let headers = traffic["header_bytes"].as_u64().unwrap();
    assert!(headers >= done * 3, "headers {headers}");
    assert!(total >= headers, "total {total}, headers {headers}");
}

#[test]
fn head_over_h3_to_caddy_gets_no_body() {
    if !testbed_running() {
        return;
    }
    let run = h3(&[
        "--method",
        "HEAD",
        "-c",
        "2",
        "-m",
        "4",
        "-n",
        "100",
        "https://localhost:19843/bytes/1000",
    ]);
    assert_all_succeeded(&run, "caddy HEAD", 100);
    assert_eq!(run.cell()["settings"]["method"], "HEAD");
    assert_eq!(run.int("traffic/data_bytes"), 0);
    assert!(run.int("traffic/header_bytes") > 0);
}

#[test]
fn an_h3_upload_larger_than_every_window_is_echoed_while_it_is_sent() {
    // The target's /echo sends each chunk back as it reads it. 20 MB is more than its 16 MiB
    // stream window and the client's 64 KiB one (-w 16): a client that wrote the whole body
    // before reading would wait on the server, which waits on the client.
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body.bin");
    std::fs::write(&body, vec![b'e'; 20_000_000]).unwrap();
    let run = h3(&[
        "-c",
        "1",
        "-m",
        "1",
        "-n",
        "1",
        "-w",
        "16",
        "--request-timeout",
        "30s",
        "-d",
        body.to_str().unwrap(),
        &url("/echo"),
    ]);
    assert_all_succeeded(&run, "echo 20 MB", 1);
    assert_eq!(run.int("traffic/data_bytes"), 20_000_000);
}
