//! Live metrics (`--metrics-listen`): the exposition scraped during the linger holds the run's exact
//! totals, `promtool check metrics` accepts it, and the real Prometheus of the test bed scrapes it.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use crate::common::{assert_usage_error, run_command, url};

/// The port the test bed's Prometheus scrapes (tests/testbed.sh), and Prometheus's own.
const SCRAPED: &str = "127.0.0.1:19464";
const PROMETHEUS: &str = "127.0.0.1:19490";

/// An h2load-rs run whose stderr is read line by line as it comes.
struct Running {
    child: Child,
    lines: Receiver<String>,
    stderr: Vec<String>,
    json: tempfile::TempDir,
}

impl Running {
    fn start(args: &[&str]) -> Self {
        let json = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_h2load-rs"))
            .args(args)
            .arg("--json")
            .arg(json.path().join("report.json"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (sender, lines) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = sender.send(line);
            }
        });
        Running {
            child,
            lines,
            stderr: Vec::new(),
            json,
        }
    }

    /// The first stderr line containing `text` (bounded wait).
    fn wait_for(&mut self, text: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.stderr.push(line.clone());
                    if line.contains(text) {
                        return line;
                    }
                }
                Err(_) => panic!("no '{text}' on stderr; got {:#?}", self.stderr),
            }
        }
    }

    /// The address in the `metrics: serving http://ADDR/metrics` line.
    fn metrics_addr(&mut self) -> SocketAddr {
        let line = self.wait_for("metrics: serving http://");
        let addr = line
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split("/metrics").next())
            .unwrap();
        addr.parse()
            .unwrap_or_else(|_| panic!("no address in {line}"))
    }

    /// Sends SIGINT (Ctrl-C).
    fn signal(&self) {
        let kill = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(kill.success());
    }

    /// The JSON report, written before the linger.
    fn json(&self) -> serde_json::Value {
        let json = std::fs::read(self.json.path().join("report.json")).unwrap();
        serde_json::from_slice(&json).unwrap()
    }

    /// Sends SIGINT and waits for the exit: its status, how long it took, stdout and JSON report.
    fn interrupt(mut self) -> (i32, Duration, String, serde_json::Value) {
        let signalled = Instant::now();
        self.signal();
        let status = self.child.wait().unwrap();
        let waited = signalled.elapsed();
        let mut stdout = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .unwrap();
        (status.code().unwrap_or(-1), waited, stdout, self.json())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // A failed test must not leave the process lingering.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A plain HTTP/1.1 GET; returns the status line's code, the headers and the body.
fn get(addr: &str, path: &str, accept: Option<&str>) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).unwrap_or_else(|error| panic!("{addr}: {error}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let accept = accept.map_or(String::new(), |accept| format!("Accept: {accept}\r\n"));
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{accept}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response
        .split_once("\r\n\r\n")
        .expect("a complete response");
    let code = head.split(' ').nth(1).unwrap().parse().unwrap();
    (code, head.to_owned(), body.to_owned())
}

/// The samples of `text` whose name is `name`, with their labels.
fn samples<'a>(text: &'a str, name: &str) -> Vec<(&'a str, f64)> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (sample, labels) = series.split_once('{').unwrap_or((series, ""));
            (sample == name).then(|| (labels, value.parse().unwrap()))
        })
        .collect()
}

fn total(text: &str, name: &str) -> f64 {
    samples(text, name).iter().map(|(_, value)| value).sum()
}

/// Every sample belongs to a family with a HELP and a TYPE line, in the classic text format (a
/// histogram's samples add `_bucket`, `_sum`, `_count` to its name).
fn assert_every_family_is_described(text: &str) {
    let described = |kind: &str| -> BTreeSet<&str> {
        text.lines()
            .filter_map(|line| line.strip_prefix(kind)?.split(' ').next())
            .collect()
    };
    let (helped, typed) = (described("# HELP "), described("# TYPE "));
    let mut names = 0;
    for line in text.lines().filter(|line| !line.starts_with('#')) {
        let name = line.split(['{', ' ']).next().unwrap();
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|suffix| {
                let base = name.strip_suffix(suffix)?;
                typed.contains(base).then_some(base)
            })
            .unwrap_or(name);
        assert!(helped.contains(family), "no HELP for {name}:\n{text}");
        assert!(typed.contains(family), "no TYPE for {name}:\n{text}");
        names += 1;
    }
    assert!(names > 10, "{text}");
}

/// `promtool check metrics` on `text`; `false` (with the reason printed) when there is no promtool
/// outside CI. In CI (tests/setup.sh installs it) a missing promtool is a failure.
fn promtool_accepts(text: &str) -> bool {
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(error) => {
            assert!(
                std::env::var("CI").is_err() && std::env::var_os("H2LOAD_RS_TESTBED").is_none(),
                "promtool is needed (tests/setup.sh installs it): {error}"
            );
            eprintln!("promtool not found ({error}): not checking the exposition with it");
            return false;
        }
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "promtool check metrics rejects the exposition: {}{}\n{text}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    true
}

#[test]
fn a_scrape_during_the_linger_has_the_exact_totals() {
    // 10 connections × 200 requests, each held 5 ms by the target.
    let mut run = Running::start(&[
        "--h1",
        "-c",
        "10",
        "-n",
        "2000",
        "--metrics-listen",
        "127.0.0.1:0",
        "--metrics-linger",
        "30s",
        &url("/delay/5"),
    ]);
    let addr = run.metrics_addr().to_string();
    // Serving from before the first cell: a scrape now sees at most the run's requests.
    let (code, _, early) = get(&addr, "/metrics", None);
    assert_eq!(code, 200);
    assert!(
        total(&early, "h2load_rs_requests_total") <= 2000.0,
        "{early}"
    );
    run.wait_for("metrics: serving the final values");
    let (code, head, text) = get(&addr, "/metrics", None);
    assert_eq!(code, 200);
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    let (code, head, openmetrics) = get(
        &addr,
        "/metrics",
        Some("application/openmetrics-text;version=1.0.0,text/plain;q=0.5"),
    );
    assert_eq!(code, 200);
    assert!(head.contains("application/openmetrics-text"), "{head}");
    assert!(openmetrics.ends_with("# EOF\n"), "{openmetrics}");
    assert_eq!(get(&addr, "/other", None).0, 404);

    // Ctrl-C during the linger ends it at once (it had 30 s left).
    let (code, waited, stdout, json) = run.interrupt();
    assert!(
        waited < Duration::from_secs(5),
        "took {waited:?} after SIGINT"
    );
    assert_eq!(code, 130, "{stdout}");
    let cell = &json["cells"][0];
    let number = |pointer: &str| cell.pointer(pointer).and_then(|v| v.as_f64()).unwrap();

    assert_eq!(total(&text, "h2load_rs_requests_total"), 2000.0, "{text}");
    assert_eq!(number("/requests/done"), 2000.0);
    let by_outcome = samples(&text, "h2load_rs_requests_total");
    assert_eq!(by_outcome.len(), 1, "{text}");
    assert_eq!(
        by_outcome[0].0,
        r#"cell="h1 c=10 m=1",protocol="h1",outcome="2xx"}"#
    );
    let count = total(&text, "h2load_rs_request_duration_seconds_count");
    assert_eq!(count, number("/requests/succeeded"));
    // Nothing is faster than the target's 5 ms; everything is below +Inf.
    let bucket = |le: &str| {
        samples(&text, "h2load_rs_request_duration_seconds_bucket")
            .iter()
            .find(|(labels, _)| labels.starts_with(&format!("le=\"{le}\"")))
            .unwrap()
            .1
    };
    assert_eq!(bucket("0.005"), 0.0, "{text}");
    assert_eq!(bucket("+Inf"), 2000.0);
    // The same histogram as the report's: the same mean (µs there, seconds here).
    let mean_us = 1e6 * total(&text, "h2load_rs_request_duration_seconds_sum") / count;
    let report_mean = number("/latency/request/mean");
    assert!(
        (mean_us - report_mean).abs() <= 1e-6 * report_mean,
        "mean {mean_us} µs, report {report_mean} µs"
    );
    assert_eq!(
        total(&text, "h2load_rs_connections_opened_total"),
        number("/connections/opened")
    );
    assert_eq!(number("/connections/opened"), 10.0);
    let achieved = total(&text, "h2load_rs_achieved_rps");
    let report_rps = number("/requests_per_s");
    assert!(
        (achieved - report_rps).abs() <= 1e-9 * report_rps,
        "{achieved} vs {report_rps}"
    );
    assert_eq!(total(&text, "h2load_rs_requests_in_flight"), 0.0);
    assert_eq!(total(&text, "h2load_rs_connections_active"), 0.0);
    assert!(samples(&text, "h2load_rs_requested_rps").is_empty());
    assert_every_family_is_described(&text);
    promtool_accepts(&text);
}

#[test]
fn sweep_cells_stay_exposed_with_their_rates() {
    let mut run = Running::start(&[
        "--h1",
        "-c",
        "2",
        "-D",
        "1s",
        "--rate",
        "100,200",
        "--metrics-listen",
        "127.0.0.1:0",
        "--metrics-linger",
        "30s",
        "-q",
        &url("/ping"),
    ]);
    let addr = run.metrics_addr().to_string();
    run.wait_for("metrics: serving the final values");
    let (_, _, text) = get(&addr, "/metrics", None);
    let (code, _, stdout, json) = run.interrupt();
    assert_eq!(code, 130, "{stdout}");
    let mut requested: Vec<(&str, f64)> = samples(&text, "h2load_rs_requested_rps");
    requested.sort_by(|a, b| a.1.total_cmp(&b.1));
    assert_eq!(
        requested,
        [
            (r#"cell="h1 c=2 m=1 rate=100",protocol="h1"}"#, 100.0),
            (r#"cell="h1 c=2 m=1 rate=200",protocol="h1"}"#, 200.0)
        ],
        "{text}"
    );
    // Each cell's counter is its report's done count (100 and 200 requests in 1 s, paced).
    for (index, rate) in [(0, "100"), (1, "200")] {
        let done = json["cells"][index]["requests"]["done"].as_f64().unwrap();
        let exposed: f64 = samples(&text, "h2load_rs_requests_total")
            .iter()
            .filter(|(labels, _)| labels.contains(&format!("rate={rate}\"")))
            .map(|(_, value)| value)
            .sum();
        assert_eq!(exposed, done, "cell rate={rate}:\n{text}");
    }
}

#[test]
fn ramps_and_searches_expose_the_rate_they_offer_now() {
    // A ramp from 0 to 300/s over 3 s: two scrapes 1 s apart see the requested rate rise, and
    // after the end it is the last stage's.
    let mut run = Running::start(&[
        "--h1",
        "-c",
        "2",
        "--stages",
        "3s:300",
        "--metrics-listen",
        "127.0.0.1:0",
        "--metrics-linger",
        "30s",
        "-q",
        &url("/ping"),
    ]);
    let addr = run.metrics_addr().to_string();
    let requested = |addr: &str| {
        let (_, _, text) = get(addr, "/metrics", None);
        total(&text, "h2load_rs_requested_rps")
    };
    std::thread::sleep(Duration::from_millis(500));
    let early = requested(&addr);
    std::thread::sleep(Duration::from_secs(1));
    let later = requested(&addr);
    assert!(
        0.0 < early && early + 50.0 < later && later < 300.0,
        "{early} then {later}"
    );
    run.wait_for("metrics: serving the final values");
    assert_eq!(requested(&addr), 300.0);
    drop(run);

    // A capacity search: after it, the requested rate is its last step's offered rate.
    let mut run = Running::start(&[
        "--h1",
        "-c",
        "2",
        "--find-max",
        "--step-duration",
        "300ms",
        "--slo",
        "p99<1s",
        "--metrics-listen",
        "127.0.0.1:0",
        "--metrics-linger",
        "30s",
        "-q",
        &url("/ping"),
    ]);
    let addr = run.metrics_addr().to_string();
    run.wait_for("metrics: serving the final values");
    let exposed = requested(&addr);
    let json = run.json();
    let steps = json["cells"][0]["capacity"]["steps"].as_array().unwrap();
    let last = steps.last().unwrap();
    let offered = last["offered_rps"].as_f64().unwrap();
    assert!(
        (exposed - offered).abs() < 1e-6 * offered,
        "exposed {exposed}, last step {last}"
    );
}

/// A run of 10 requests whose endpoint serves the final values for a minute, and its address.
fn lingering_after_10_requests() -> (Running, String) {
    let mut run = Running::start(&[
        "--h1",
        "-n",
        "10",
        "--metrics-listen",
        "127.0.0.1:0",
        "--metrics-linger",
        "60s",
        "-q",
        &url("/ping"),
    ]);
    let addr = run.metrics_addr().to_string();
    run.wait_for("metrics: serving the final values");
    (run, addr)
}

#[test]
fn idle_scrape_connections_are_capped_and_a_scrape_waits_its_turn() {
    let (_run, addr) = lingering_after_10_requests();
    // 16 connections that never send a request hold every place.
    let idle: Vec<TcpStream> = (0..16)
        .map(|_| TcpStream::connect(&addr).unwrap())
        .collect();
    // The 17th waits in the accept queue and is answered once they go.
    let mut waiting = TcpStream::connect(&addr).unwrap();
    waiting
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        waiting,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    drop(idle);
    let mut answer = String::new();
    waiting.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
    let (_, body) = answer.split_once("\r\n\r\n").unwrap();
    assert_eq!(total(body, "h2load_rs_requests_total"), 10.0);
}

#[test]
fn clients_sending_a_byte_a_second_do_not_keep_a_scrape_out() {
    let (run, addr) = lingering_after_10_requests();
    // 20 slow clients (more than the 16 places), each dribbling a request head a byte at a
    // time until the endpoint closes its connection.
    let slow: Vec<_> = (0..20)
        .map(|_| {
            let mut stream = TcpStream::connect(&addr).unwrap();
            std::thread::spawn(move || {
                for byte in b"GET /metrics HTTP/1.1\r\nHost: slow\r\nX-Slow: "
                    .iter()
                    .cycle()
                    .take(120)
                {
                    if stream.write_all(&[*byte]).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(500));
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    // A normal scrape behind them is answered (its wait is bounded by get's read timeout).
    let (code, _, text) = get(&addr, "/metrics", None);
    assert_eq!(code, 200);
    assert_eq!(total(&text, "h2load_rs_requests_total"), 10.0);
    drop(run);
    for client in slow {
        client.join().unwrap();
    }
}

#[test]
fn requests_without_a_response_count_under_their_error_kind() {
    // The built-in target resets every 4th stream: 25 of 100 get no response.
    let mut run = Running::start(&[
        "--proto",
        "h2c",
        "-c",
        "1",
        "-n",
        "100",
        "--target-fault",
        "rst-stream-every=4",
        "--metrics-listen",
        "127.0.0.1:0",
        "--metrics-linger",
        "30s",
        "-q",
    ]);
    let addr = run.metrics_addr().to_string();
    run.wait_for("metrics: serving the final values");
    let (_, _, text) = get(&addr, "/metrics", None);
    let (code, _, stdout, json) = run.interrupt();
    assert_eq!(code, 130, "{stdout}");
    let mut outcomes = samples(&text, "h2load_rs_requests_total");
    outcomes.sort_by(|a, b| a.0.cmp(b.0));
    assert_eq!(
        outcomes,
        [
            (r#"cell="h2c c=1 m=1",protocol="h2c",outcome="2xx"}"#, 75.0),
            (
                r#"cell="h2c c=1 m=1",protocol="h2c",outcome="stream_reset"}"#,
                25.0
            )
        ],
        "{text}"
    );
    assert_eq!(json["cells"][0]["errors"]["stream_reset"], 25);
    assert_eq!(
        total(&text, "h2load_rs_request_duration_seconds_count"),
        75.0
    );
    assert_every_family_is_described(&text);
    promtool_accepts(&text);
}

#[test]
fn an_interrupted_run_lingers_with_its_totals_until_the_next_signal() {
    let mut run = Running::start(&[
        "--h1",
        "-c",
        "2",
        "-D",
        "30s",
        "--metrics-listen",
        "127.0.0.1:0",
        "--metrics-linger",
        "30s",
        "-q",
        &url("/delay/20"),
    ]);
    let addr = run.metrics_addr().to_string();
    std::thread::sleep(Duration::from_millis(1000));
    run.signal();
    let first = Instant::now();
    run.wait_for("metrics: serving the final values");
    // The signal that stopped the run does not end the linger.
    std::thread::sleep(Duration::from_millis(300));
    let (code, _, text) = get(&addr, "/metrics", None);
    assert_eq!(code, 200);
    let done = run.json()["cells"][0]["requests"]["done"].as_f64().unwrap();
    assert!(done > 0.0);
    assert_eq!(total(&text, "h2load_rs_requests_total"), done, "{text}");
    assert_eq!(total(&text, "h2load_rs_requests_in_flight"), 0.0);
    // Signals within 1 s of the first are the same request to stop; a later one ends the linger.
    std::thread::sleep(Duration::from_millis(1500).saturating_sub(first.elapsed()));
    let (code, waited, stdout, _) = run.interrupt();
    assert_eq!(code, 130, "{stdout}");
    assert!(
        waited < Duration::from_secs(5),
        "took {waited:?} after SIGINT"
    );
}

#[test]
fn bad_metrics_flags_are_one_line_and_a_busy_port_fails_before_any_load() {
    for args in [
        &["--metrics-listen", "localhost-9464"][..],
        &["--metrics-listen", "127.0.0.1:99999"],
        &["--metrics-linger", "1s"],
        &[
            "--metrics-listen",
            "127.0.0.1:0",
            "--metrics-linger",
            "soon",
        ],
    ] {
        let mut full = vec!["-n", "1"];
        full.extend(args);
        full.push("http://127.0.0.1:1/");
        assert_usage_error(&full, "");
    }
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    let output = run_command(
        env!("CARGO_BIN_EXE_h2load-rs"),
        &["-n", "10", "--metrics-listen", &addr, &url("/ping")],
    );
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert_eq!(
        output.stderr.trim(),
        format!("h2load-rs: --metrics-listen: cannot listen on {addr}: Address already in use (os error 98)")
    );
    assert!(output.stdout.is_empty(), "load was sent: {}", output.stdout);
}

/// With the test bed: its Prometheus (1 s scrape interval, tests/testbed.sh) scrapes a run and its
/// HTTP API returns the run's exact request count.
#[test]
fn prometheus_scrapes_the_exact_count() {
    if std::env::var_os("H2LOAD_RS_TESTBED").is_none() {
        assert!(
            std::env::var("CI").is_err(),
            "CI must run this test with the test bed (tests/run.sh starts it)"
        );
        eprintln!("test bed not running: start it with tests/testbed.sh start");
        return;
    }
    let mut run = Running::start(&[
        "--h1",
        "-c",
        "4",
        "-n",
        "3000",
        "--metrics-listen",
        SCRAPED,
        "--metrics-linger",
        "4s",
        &url("/ping"),
    ]);
    run.wait_for("metrics: serving the final values");
    let (_, _, text) = get(SCRAPED, "/metrics", None);
    assert!(promtool_accepts(&text), "promtool is part of the test bed");
    let query = "/api/v1/query?query=sum(h2load_rs_requests_total)";
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut last = String::new();
    let seen = loop {
        let (code, _, body) = get(PROMETHEUS, query, None);
        assert_eq!(code, 200, "{body}");
        let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
        let value = answer
            .pointer("/data/result/0/value/1")
            .and_then(|v| v.as_str());
        if value == Some("3000") {
            break true;
        }
        last = body;
        if Instant::now() > deadline {
            break false;
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    assert!(seen, "Prometheus never returned 3000; last answer: {last}");
    let status = run.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}
