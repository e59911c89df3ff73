//! Connection lifecycle: churn (`--requests-per-connection`, `--no-keepalive`) with exact counts on
//! every protocol, TLS session resumption (`--tls-resume`) against Caddy and early data
//! (`--tls-early-data`) against nghttpx, from the test bed.

use crate::common::{assert_clean, assert_schedule_kept, assert_usage_error, h2load_rs, url, Run};
use crate::testbed::testbed_running;

const CA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/certs/ca.crt");

/// Caddy (TLS 1.3, session tickets that never allow early data), by its certificate's name.
const CADDY: &str = "https://localhost:19843/ping";
/// nghttpx (accepts up to 16 KiB of early data by default) in front of nginx.
const NGHTTPX: &str = "https://localhost:19743/ping";

fn tls(args: &[&str], url: &str, connect_to: &str) -> Run {
    let mut full = args.to_vec();
    full.extend(["--cacert", CA, "--connect-to", connect_to, url]);
    h2load_rs(&full)
}

#[test]
fn one_request_per_connection_opens_a_connection_per_request() {
    let target = url("/ping");
    let run = h2load_rs(&[
        "--h1",
        "-c",
        "4",
        "-n",
        "400",
        "--requests-per-connection",
        "1",
        &target,
    ]);
    assert_clean(&run, "h1 N=1", 400);
    assert_eq!(run.int("connections/opened"), 400);
    assert_eq!(run.int("connections/measured"), 400);
    assert_eq!(run.int("connections/failed"), 0);
    assert_eq!(run.int("settings/requests_per_connection"), 1);
    let per_s = run.num("connections/per_s");
    let expected = 400.0 / run.num("elapsed_s");
    assert!(
        (per_s - expected).abs() < expected * 1e-9,
        "{per_s} vs {expected}"
    );
    // Cleartext: no TLS handshakes to count.
    assert!(run.cell()["connections"]["resumed_handshakes"].is_null());
    assert!(run.cell()["latency"]["handshake_full"].is_null());
    assert!(run.output.stdout.contains("connections per second: "));
}

/// N > 1: every connection carries N requests but the last of each slot, which may carry fewer.
fn assert_churn(run: &Run, name: &str, n: u64, per_connection: u64, slots: u64) {
    assert_clean(run, name, n);
    let opened = run.int("connections/opened");
    assert!(
        (n / per_connection..=n / per_connection + slots).contains(&opened),
        "{name}: {opened} connections for {n} requests at {per_connection} per connection"
    );
}

#[test]
fn pipelined_h1_and_h2c_connections_carry_n_requests_each() {
    let target = url("/ping");
    for (name, proto) in [
        ("h1 pipelined", "h1"),
        ("h2c", "h2c"),
        ("h2c-upgrade", "h2c-upgrade"),
    ] {
        let run = h2load_rs(&[
            "--proto",
            proto,
            "-c",
            "4",
            "-m",
            "4",
            "-n",
            "400",
            "--requests-per-connection",
            "10",
            &target,
        ]);
        assert_churn(&run, name, 400, 10, 4);
    }
}

#[test]
fn h3_connections_carry_n_requests_each() {
    let target = crate::h3::url("/ping");
    let run = h2load_rs(&[
        "--proto",
        "h3",
        "--cacert",
        CA,
        "-c",
        "2",
        "-m",
        "4",
        "-n",
        "200",
        "--requests-per-connection",
        "10",
        &target,
    ]);
    assert_churn(&run, "h3", 200, 10, 2);
    // quinn does not tell resumed handshakes from full ones.
    assert!(run.cell()["connections"]["full_handshakes"].is_null());
}

#[test]
fn paced_and_timed_churn_counts_every_request_once() {
    let target = url("/ping");
    let run = h2load_rs(&[
        "--h1",
        "-c",
        "2",
        "-D",
        "1s",
        "--rate",
        "300",
        "--requests-per-connection",
        "3",
        &target,
    ]);
    // 1 s at 300/s: 300 send times, each sent or counted missed.
    assert_schedule_kept(&run, "--rate 300 churn", 300);
    let started = run.int("requests/started");
    assert_eq!(run.int("requests/succeeded"), started);
    assert_eq!(run.int("requests/errored"), 0);
    let opened = run.int("connections/opened");
    assert!(
        (started.div_ceil(3)..=started.div_ceil(3) + 2).contains(&opened),
        "{opened} connections for {started} requests"
    );
}

#[test]
fn paced_churn_connects_when_each_request_is_due() {
    // The built-in target over TLS: a full handshake per request. The connection opens at its
    // request's send time, so the response time (from that time) holds the whole setup.
    let run = h2load_rs(&[
        "-k",
        "--target-tls",
        "--h1",
        "-c",
        "4",
        "--rate",
        "100",
        "-n",
        "100",
        "--requests-per-connection",
        "1",
    ]);
    assert_clean(&run, "paced TLS churn", 100);
    assert_eq!(run.int("connections/opened"), 100);
    let connect = run.int("latency/connect/percentiles/p50");
    let response = run.int("latency/request/percentiles/p50");
    assert!(
        response >= connect,
        "response time p50 {response} us < connect p50 {connect} us"
    );
    // A timed schedule: no connection opens after the last send time to idle until the end.
    let run = h2load_rs(&[
        "--h1",
        "-c",
        "4",
        "-D",
        "1s",
        "--rate",
        "200",
        "--no-keepalive",
        &url("/ping"),
    ]);
    assert_schedule_kept(&run, "--rate 200 --no-keepalive", 200);
    let started = run.int("requests/started");
    assert_eq!(run.int("connections/opened"), started);
}

#[test]
fn warm_up_connections_are_not_counted_per_second() {
    let target = url("/ping");
    let run = h2load_rs(&[
        "--h1",
        "-c",
        "2",
        "-D",
        "500ms",
        "--warm-up-time",
        "300ms",
        "--no-keepalive",
        &target,
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let started = run.int("requests/started");
    let measured = run.int("connections/measured");
    // One request per connection: a connection begun just before the measured period may carry
    // one of its requests (one per slot).
    assert!(
        measured <= started && measured + 2 >= started,
        "{measured} measured connections for {started} measured requests"
    );
    assert!(run.int("connections/opened") > measured + 10);
    assert_eq!(run.int("requests/succeeded"), started);
    // Connections per second are the measured connections over the measured period, and with one
    // request per connection they are the request rate give or take one connection per slot.
    let cell = run.cell();
    let elapsed = cell["elapsed_s"].as_f64().unwrap();
    let per_s = cell["connections"]["per_s"].as_f64().unwrap();
    assert!(
        (per_s - measured as f64 / elapsed).abs() <= 1e-9 * per_s,
        "{per_s}"
    );
    // Rounded: `per_s * elapsed` gives back `measured` only to within an ulp, and a run with
    // exactly two connections begun in the warm-up sits on the bound (CI once saw 2.0000000000005).
    let counted = (per_s * elapsed).round() as u64;
    let done = run.int("requests/done");
    assert!(
        counted.abs_diff(done) <= 2,
        "{per_s}/s over {elapsed} s is {counted} connections for {done} requests"
    );
    assert!(
        run.output.stdout.contains(&format!(
            "connections per second: {per_s:.2} ({measured} begun"
        )),
        "{}",
        run.output.stdout
    );
}

#[test]
fn no_keepalive_closes_every_http1_connection_at_the_server() {
    if !testbed_running() {
        return;
    }
    // nginx closes after answering a `Connection: close` request.
    let run = h2load_rs(&[
        "--h1",
        "-c",
        "4",
        "-n",
        "200",
        "--no-keepalive",
        "http://127.0.0.1:19180/ping",
    ]);
    assert_clean(&run, "nginx --no-keepalive", 200);
    assert_eq!(run.int("connections/opened"), 200);
    assert!(run.cell()["settings"]["no_keepalive"].as_bool().unwrap());
    assert!(run.cell()["settings"]["headers"]
        .as_array()
        .unwrap()
        .iter()
        .all(|header| !header.as_str().unwrap().contains("connection")));
}

#[test]
fn tls_resumption_against_caddy_is_counted_and_timed() {
    if !testbed_running() {
        return;
    }
    let args = [
        "--proto",
        "h2",
        "-c",
        "2",
        "-n",
        "200",
        "--requests-per-connection",
        "1",
    ];
    let mut resumed_args = args.to_vec();
    resumed_args.push("--tls-resume");
    let run = tls(&resumed_args, CADDY, "127.0.0.1:19843");
    assert_clean(&run, "caddy --tls-resume", 200);
    let (resumed, full) = (
        run.int("connections/resumed_handshakes"),
        run.int("connections/full_handshakes"),
    );
    assert!(resumed >= 150, "{resumed} resumed, {full} full");
    // Caddy's ticket arrives before its response: only each slot's first handshake is full.
    assert_eq!(full, 2, "{resumed} resumed, {full} full");
    assert_eq!(resumed + full, run.int("connections/opened"));
    assert_eq!(run.int("connections/opened"), 200);
    assert_eq!(run.int("latency/handshake_resumed/count"), resumed);
    assert_eq!(run.int("latency/handshake_full/count"), full);
    assert!(run.cell()["connections"]["early_data_accepted"].is_null());
    assert!(run
        .output
        .stdout
        .contains(&format!("TLS handshakes: {resumed} resumed, {full} full")));

    let run = tls(&args, CADDY, "127.0.0.1:19843");
    assert_clean(&run, "caddy without --tls-resume", 200);
    assert_eq!(run.int("connections/resumed_handshakes"), 0);
    assert_eq!(run.int("connections/full_handshakes"), 200);
}

#[test]
fn handshakes_count_when_they_end_even_if_the_drain_is_abandoned() {
    // Every response outlives the run and its drain: the connections never end, their
    // handshakes did.
    let run = h2load_rs(&[
        "-k",
        "--target-tls",
        "--proto",
        "h2",
        "-c",
        "3",
        "-D",
        "300ms",
        "--target-delay",
        "5s",
        "--tls-resume",
    ]);
    assert_eq!(run.int("requests/done"), 0, "{}", run.output.stderr);
    assert_eq!(run.int("connections/measured"), 3);
    assert_eq!(run.int("connections/full_handshakes"), 3);
    assert_eq!(run.int("connections/resumed_handshakes"), 0);
    assert!(run
        .output
        .stdout
        .contains("TLS handshakes: 0 resumed, 3 full"));
}

#[test]
fn warm_up_connections_are_in_connect_and_proxy_times_not_in_handshake_kinds() {
    if !testbed_running() {
        return;
    }
    // Through tinyproxy to Caddy, churned, with a warm-up: the populations docs/json.md names.
    let run = h2load_rs(&[
        "-k",
        "--h1",
        "-c",
        "2",
        "-D",
        "600ms",
        "--warm-up-time",
        "300ms",
        "--no-keepalive",
        "--tls-resume",
        "--proxy",
        "http://127.0.0.1:19888",
        "https://127.0.0.1:19843/ping",
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let (opened, measured) = (
        run.int("connections/opened"),
        run.int("connections/measured"),
    );
    // Some in the warm-up (10 or more on an idle machine, 9 on a loaded one): any tells the
    // populations apart below.
    assert!(opened > measured, "{opened} opened, {measured} measured");
    assert_eq!(run.int("latency/connect/count"), opened);
    assert_eq!(run.int("latency/proxy/count"), opened);
    let (resumed, full) = (
        run.int("connections/resumed_handshakes"),
        run.int("connections/full_handshakes"),
    );
    assert_eq!(resumed + full, measured);
    assert_eq!(run.int("latency/handshake_resumed/count"), resumed);
    let full_row = &run.cell()["latency"]["handshake_full"]["count"];
    assert_eq!(full_row.as_u64().unwrap_or(0), full);
}

#[test]
fn many_connections_of_a_thread_find_a_ticket_each() {
    if !testbed_running() {
        return;
    }
    // rustls's own cache keeps 8 TLS 1.3 tickets per server: 20 connections opening at once then
    // found none now and then (55 full handshakes in 2000 here, not 20).
    let run = tls(
        &[
            "--proto",
            "h1",
            "-c",
            "20",
            "-n",
            "1000",
            "--requests-per-connection",
            "1",
            "--tls-resume",
        ],
        NGHTTPX,
        "127.0.0.1:19743",
    );
    assert_clean(&run, "nghttpx -c 20 --tls-resume", 1000);
    assert_eq!(run.int("connections/full_handshakes"), 20);
    assert_eq!(run.int("connections/resumed_handshakes"), 980);
}

#[test]
fn early_data_against_nghttpx_is_accepted_and_counts_stay_exact() {
    if !testbed_running() {
        return;
    }
    for proto in ["h1", "h2"] {
        let run = tls(
            &[
                "--proto",
                proto,
                "-c",
                "2",
                "-n",
                "100",
                "--requests-per-connection",
                "1",
                "--tls-early-data",
            ],
            NGHTTPX,
            "127.0.0.1:19743",
        );
        assert_clean(&run, proto, 100);
        assert_eq!(run.int("connections/opened"), 100);
        let accepted = run.int("connections/early_data_accepted");
        let resumed = run.int("connections/resumed_handshakes");
        assert!(accepted >= 90, "{proto}: {accepted} accepted");
        assert!(accepted <= resumed, "{proto}: {accepted} > {resumed}");
        assert_eq!(run.int("connections/early_data_rejected"), 0);
        assert_eq!(resumed + run.int("connections/full_handshakes"), 100);
    }
}

#[test]
fn early_data_h2_streams_keep_to_the_server_stream_limit() {
    if !testbed_running() {
        return;
    }
    // nghttpx allows 100 streams. A full handshake (the first connection) waits for its
    // SETTINGS; a resumed one sends at most 100 streams as early data: none come back refused.
    let run = tls(
        &[
            "--proto",
            "h2",
            "-c",
            "1",
            "-m",
            "300",
            "-n",
            "600",
            "--tls-early-data",
        ],
        NGHTTPX,
        "127.0.0.1:19743",
    );
    assert_clean(&run, "h2 -m 300, one full handshake", 600);
    assert_eq!(run.int("requests/retried/refused"), 0);
    let run = tls(
        &[
            "--proto",
            "h2",
            "-c",
            "2",
            "-m",
            "300",
            "-n",
            "3000",
            "--requests-per-connection",
            "600",
            "--tls-early-data",
        ],
        NGHTTPX,
        "127.0.0.1:19743",
    );
    assert_clean(&run, "h2 -m 300 churned with early data", 3000);
    assert_eq!(run.int("requests/retried/refused"), 0);
    let opened = run.int("connections/opened");
    assert!((5..=7).contains(&opened), "{opened} connections");
    assert!(run.int("connections/early_data_accepted") >= 3);
}

#[test]
fn session_reuse_needs_tls_over_tcp_and_safe_methods() {
    let target = url("/ping");
    assert_usage_error(&["--tls-resume", &target], "needs an https:// URL");
    assert_usage_error(
        &["--tls-early-data", "--proto", "h3", "https://127.0.0.1:9/"],
        "not supported with --proto h3",
    );
    assert_usage_error(
        &["--tls-early-data", "https://127.0.0.1:9/"],
        "needs --proto h1 or --proto h2",
    );
    assert_usage_error(
        &[
            "--tls-early-data",
            "--proto",
            "h1",
            "--method",
            "POST",
            "https://127.0.0.1:9/",
        ],
        "only GET or HEAD",
    );
}
