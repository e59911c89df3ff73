//! The real-target matrix: every protocol against Gin, nginx, nghttpd, nghttpx, Caddy and Apache httpd, started by
//! `tests/testbed.sh` (which `tests/run.sh` runs and points `H2LOAD_RS_TESTBED` at).

use crate::common::{h2load_rs, run_command, text_counts, Run};

const CA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/certs/ca.crt");
const N: u64 = 1000;
const BODY: u64 = 1000;

/// Whether the test bed is up. Outside `tests/run.sh` these tests have nothing to run against;
/// in CI a missing test bed is a failure, never a skip.
pub(crate) fn testbed_running() -> bool {
    if std::env::var_os("H2LOAD_RS_TESTBED").is_some() {
        return true;
    }
    assert!(
        std::env::var("CI").is_err(),
        "CI must run these tests through tests/run.sh, which starts the test bed"
    );
    eprintln!("test bed not running: start it with tests/run.sh (or tests/testbed.sh start)");
    false
}

/// One cell of the matrix: a server, the flags that pick a protocol, and what must be negotiated.
struct Cell {
    name: &'static str,
    flags: &'static [&'static str],
    url: &'static str,
    negotiated: &'static str,
}

const fn cell(
    name: &'static str,
    flags: &'static [&'static str],
    url: &'static str,
    negotiated: &'static str,
) -> Cell {
    Cell {
        name,
        flags,
        url,
        negotiated,
    }
}

const H1: &[&str] = &["--h1", "-c", "4"];
const H1_PIPELINED: &[&str] = &["--h1", "-c", "4", "-m", "8"];
const H2C: &[&str] = &["--proto", "h2c", "-c", "4", "-m", "16"];
const H2C_UPGRADE: &[&str] = &["--proto", "h2c-upgrade", "-c", "4", "-m", "16"];
const H1_TLS: &[&str] = &["--proto", "h1", "--cacert", CA, "-c", "4"];
const H2_TLS: &[&str] = &["--proto", "h2", "--cacert", CA, "-c", "4", "-m", "16"];
const CADDY: &[&str] = &["--connect-to", "127.0.0.1:19843"];

const MATRIX: [Cell; 21] = [
    cell(
        "gin h1",
        H1,
        "http://127.0.0.1:19080/bytes/1000",
        "http/1.1",
    ),
    cell(
        "gin h1 pipelined",
        H1_PIPELINED,
        "http://127.0.0.1:19080/bytes/1000",
        "http/1.1",
    ),
    cell("gin h2c", H2C, "http://127.0.0.1:19080/bytes/1000", "h2c"),
    cell(
        "gin h2c-upgrade",
        H2C_UPGRADE,
        "http://127.0.0.1:19080/bytes/1000",
        "h2c",
    ),
    cell(
        "gin h1 over TLS",
        H1_TLS,
        "https://127.0.0.1:19443/bytes/1000",
        "http/1.1",
    ),
    cell(
        "gin h2 over TLS",
        H2_TLS,
        "https://127.0.0.1:19443/bytes/1000",
        "h2",
    ),
    cell(
        "nginx h1",
        H1,
        "http://127.0.0.1:19180/bytes/1000",
        "http/1.1",
    ),
    cell(
        "nginx h1 pipelined",
        H1_PIPELINED,
        "http://127.0.0.1:19180/bytes/1000",
        "http/1.1",
    ),
    cell(
        "nginx h1 over TLS",
        H1_TLS,
        "https://127.0.0.1:19543/bytes/1000",
        "http/1.1",
    ),
    cell(
        "nginx h2 over TLS",
        H2_TLS,
        "https://127.0.0.1:19543/bytes/1000",
        "h2",
    ),
    cell(
        "nghttpd h2c",
        H2C,
        "http://127.0.0.1:19280/bytes/1000",
        "h2c",
    ),
    cell(
        "nghttpd h2 over TLS",
        H2_TLS,
        "https://127.0.0.1:19643/bytes/1000",
        "h2",
    ),
    cell(
        "nghttpx h1 over TLS",
        H1_TLS,
        "https://127.0.0.1:19743/bytes/1000",
        "http/1.1",
    ),
    cell(
        "nghttpx h2 over TLS",
        H2_TLS,
        "https://127.0.0.1:19743/bytes/1000",
        "h2",
    ),
    cell(
        "caddy h1 over TLS",
        H1_TLS,
        "https://localhost:19843/bytes/1000",
        "http/1.1",
    ),
    cell(
        "caddy h2 over TLS",
        H2_TLS,
        "https://localhost:19843/bytes/1000",
        "h2",
    ),
    cell(
        "apache h1",
        H1,
        "http://127.0.0.1:19380/bytes/1000",
        "http/1.1",
    ),
    // Apache closes a connection after 100 requests (MaxKeepAliveRequests): the pipelined
    // requests behind the 100th response are sent again, and every request completes.
    cell(
        "apache h1 pipelined",
        H1_PIPELINED,
        "http://127.0.0.1:19380/bytes/1000",
        "http/1.1",
    ),
    cell(
        "apache h2c",
        H2C,
        "http://127.0.0.1:19380/bytes/1000",
        "h2c",
    ),
    cell(
        "apache h2 over TLS",
        H2_TLS,
        "https://127.0.0.1:19943/bytes/1000",
        "h2",
    ),
    cell(
        "gin auto over TLS (ALPN picks h2)",
        &["--cacert", CA, "-c", "2"],
        "https://127.0.0.1:19443/ping",
        "h2",
    ),
];

fn run_cell(cell: &Cell) -> Run {
    let mut args: Vec<&str> = vec!["-n", "1000"];
    args.extend(cell.flags);
    if cell.name.starts_with("caddy") {
        args.extend(CADDY);
    }
    args.push(cell.url);
    h2load_rs(&args)
}

#[test]
fn every_cell_of_the_matrix_gets_exact_counts_and_the_right_protocol() {
    if !testbed_running() {
        return;
    }
    for cell in &MATRIX {
        let run = run_cell(cell);
        let name = cell.name;
        assert_eq!(run.output.code, 0, "{name}: {}", run.output.stderr);
        for (field, expected) in [
            ("requests/done", N),
            ("requests/succeeded", N),
            ("requests/errored", 0),
            ("status_codes/2xx", N),
        ] {
            assert_eq!(
                run.int(field),
                expected,
                "{name}: {field}\n{}",
                run.output.stdout
            );
        }
        if cell.url.ends_with("/bytes/1000") {
            assert_eq!(run.int("traffic/data_bytes"), N * BODY, "{name}");
        }
        assert_eq!(
            run.cell()["protocol"]["negotiated"],
            cell.negotiated,
            "{name}"
        );
        let connections = run.cell()["protocol"]["connections"].as_object().unwrap();
        assert_eq!(
            connections.len(),
            1,
            "{name}: every connection speaks {}",
            cell.negotiated
        );
        if cell.url.starts_with("https") {
            assert_eq!(
                run.cell()["protocol"]["tls"]["alpn"],
                cell.negotiated,
                "{name}"
            );
            assert!(run.output.stdout.contains("TLS Protocol: TLSv1."), "{name}");
        }
    }
}

#[test]
fn h2c_upgrade_to_a_prior_knowledge_only_server_is_a_clear_error() {
    if !testbed_running() {
        return;
    }
    let run = h2load_rs(&[
        "--proto",
        "h2c-upgrade",
        "-n",
        "20",
        "-c",
        "2",
        "http://127.0.0.1:19280/ping",
    ]);
    assert_eq!(run.int("requests/errored"), 20);
    assert_eq!(run.int("errors/protocol"), 20);
    assert!(
        run.output
            .stderr
            .contains("it speaks h2c by prior knowledge only (use --proto h2c)"),
        "{}",
        run.output.stderr
    );
}

#[test]
fn proto_h2_against_an_http1_only_tls_server_fails_in_one_line() {
    if !testbed_running() {
        return;
    }
    let run = h2load_rs(&[
        "--proto",
        "h2",
        "--cacert",
        CA,
        "-n",
        "10",
        "https://127.0.0.1:19544/ping",
    ]);
    assert_eq!(run.output.code, 1);
    let lines: Vec<&str> = run.output.stderr.lines().collect();
    assert_eq!(
        lines,
        ["h2load-rs: the server selected http/1.1 by ALPN, but --proto h2 requires h2"],
        "{}",
        run.output.stderr
    );
    assert_eq!(run.int("connections/opened"), 0);
    assert_eq!(run.int("errors/tls"), 1);
}

#[test]
fn self_signed_server_needs_k() {
    if !testbed_running() {
        return;
    }
    let url = "https://127.0.0.1:19545/bytes/1000";
    let refused = h2load_rs(&["-n", "10", url]);
    assert_eq!(refused.output.code, 1);
    let lines: Vec<&str> = refused.output.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("invalid peer certificate"), "{lines:?}");
    assert!(
        lines[0].contains("-k"),
        "the message says how to proceed: {lines:?}"
    );

    let accepted = h2load_rs(&["-k", "-n", "10", url]);
    assert_eq!(accepted.output.code, 0, "{}", accepted.output.stderr);
    assert_eq!(accepted.int("requests/succeeded"), 10);
    assert_eq!(accepted.cell()["protocol"]["negotiated"], "h2");
}

#[test]
fn h2load_agrees_on_nghttpd_and_nginx() {
    if !testbed_running() {
        return;
    }
    let cases: [(&str, &[&str], &[&str]); 3] = [
        (
            "h2c nghttpd",
            &["-c", "4", "-m", "16", "http://127.0.0.1:19280/bytes/1000"],
            &[],
        ),
        (
            "h2 nghttpd",
            &["-c", "4", "-m", "16", "https://127.0.0.1:19643/bytes/1000"],
            &["--cacert", CA],
        ),
        (
            "h1 nginx",
            &["--h1", "-c", "4", "http://127.0.0.1:19180/bytes/1000"],
            &[],
        ),
    ];
    for (name, shared, ours_only) in cases {
        let mut args = vec!["-n", "1000"];
        args.extend(shared);
        let theirs = run_command("h2load", &args);
        assert_eq!(theirs.code, 0, "{name}: {}", theirs.stderr);
        args.extend(ours_only);
        let ours = h2load_rs(&args);
        let (theirs, ours) = (
            text_counts(&theirs.stdout),
            text_counts(&ours.output.stdout),
        );
        for key in ["done", "succeeded", "failed", "errored", "data_bytes"] {
            assert_eq!(ours[key], theirs[key], "{name}: {key}");
        }
        assert_eq!(ours["data_bytes"], N * BODY, "{name}");
    }
}

#[test]
fn a_declined_upgrade_carries_on_as_http1_with_a_warning() {
    if !testbed_running() {
        return;
    }
    // nginx ignores `Upgrade: h2c` and answers the request itself.
    let run = h2load_rs(&[
        "--proto",
        "h2c-upgrade",
        "-n",
        "1000",
        "-c",
        "4",
        "http://127.0.0.1:19180/bytes/1000",
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    assert_eq!(run.int("requests/succeeded"), N);
    assert_eq!(run.int("traffic/data_bytes"), N * BODY);
    assert_eq!(run.cell()["protocol"]["negotiated"], "http/1.1");
    assert_eq!(
        run.int("connections/opened"),
        4,
        "connections are kept, not reopened"
    );
    assert_eq!(
        run.output.stderr.trim(),
        "h2load-rs: warning: the server answered the h2c upgrade with 200 instead of 101, so those connections spoke HTTP/1.1"
    );
}

#[test]
fn client_certificates_are_presented() {
    if !testbed_running() {
        return;
    }
    let url = "https://127.0.0.1:19546/ping";
    let without = h2load_rs(&["--cacert", CA, "-n", "10", url]);
    assert_eq!(
        without.int("status_codes/4xx"),
        10,
        "nginx answers 400 without a client certificate"
    );
    let cert = concat!(env!("CARGO_MANIFEST_DIR"), "/certs/client.crt");
    let key = concat!(env!("CARGO_MANIFEST_DIR"), "/certs/client.key");
    let with = h2load_rs(&[
        "--cacert", CA, "--cert", cert, "--key", key, "-n", "10", url,
    ]);
    assert_eq!(with.int("requests/succeeded"), 10, "{}", with.output.stderr);
}

#[test]
fn sni_names_the_certificate_to_verify() {
    if !testbed_running() {
        return;
    }
    let url = "https://127.0.0.1:19443/ping";
    let matching = h2load_rs(&["--cacert", CA, "--sni", "localhost", "-n", "10", url]);
    assert_eq!(
        matching.int("requests/succeeded"),
        10,
        "{}",
        matching.output.stderr
    );
    let wrong = h2load_rs(&["--cacert", CA, "--sni", "other.example", "-n", "10", url]);
    assert_eq!(wrong.output.code, 1);
    let stderr = &wrong.output.stderr;
    assert!(
        stderr.contains("certificate not valid for name \"other.example\""),
        "{stderr}"
    );
    assert!(stderr.contains("check the URL's host or --sni"), "{stderr}");
}

#[test]
fn verbose_shows_the_settings_nghttpd_sends() {
    if !testbed_running() {
        return;
    }
    let run = h2load_rs(&[
        "-v",
        "--proto",
        "h2c",
        "-n",
        "3",
        "http://127.0.0.1:19280/ping",
    ]);
    assert_eq!(run.int("requests/succeeded"), 3);
    let trace = &run.output.stderr;
    let received = trace
        .split("recv SETTINGS frame <length=6, flags=0x00, stream_id=0>")
        .nth(1)
        .unwrap_or_else(|| panic!("no SETTINGS from nghttpd in the trace:\n{trace}"));
    assert!(
        received.starts_with(
            "\n             (niv=1)\n             [SETTINGS_MAX_CONCURRENT_STREAMS(0x03):100]\n"
        ),
        "{trace}"
    );
    assert_eq!(
        trace.matches("recv HEADERS frame").count(),
        2,
        "-v lists two response blocks"
    );
    assert!(trace.contains(":status: 200"), "{trace}");
}

#[test]
fn apache_ends_upgraded_h2c_connections_with_goaway_and_every_request_still_completes() {
    if !testbed_running() {
        return;
    }
    // Apache ends a connection upgraded from HTTP/1.1 with GOAWAY(NO_ERROR, "timeout") whenever
    // it has answered every stream and finds no request waiting: it hands the connection back to
    // the MPM, which closes an upgraded one (mod_http2 AH10306, then pre_close). The client's
    // requests leave with its preface, yet it still loses that race often: at stream 1, which
    // Apache may answer whole in the flush that carries the 101, and whenever the responses
    // outrun the next requests. Those re-sends are free (the connection completed requests), so
    // every request completes at a realistic concurrency.
    let url = "http://127.0.0.1:19380/bytes/1000";
    let flags = [
        "--proto",
        "h2c-upgrade",
        "-c",
        "4",
        "-m",
        "8",
        "-n",
        "1000",
        url,
    ];
    let run = h2load_rs(&flags);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    assert_eq!(run.int("requests/succeeded"), 1000, "{}", run.output.stdout);
    assert_eq!(run.int("requests/started"), 1000);
    assert_eq!(run.int("requests/errored"), 0);
    assert_eq!(run.int("traffic/data_bytes"), 1000 * BODY);
    let retried = run.int("requests/retried/goaway");
    assert!(retried > 0, "Apache sent no GOAWAY:\n{}", run.output.stdout);
    assert!(
        run.output.stdout.contains(&format!(
            "retried: {retried} (not processed by the server: goaway {retried}, refused 0, closed 0)"
        )),
        "{}",
        run.output.stdout
    );
    // h2load's accounting counts those streams as failed.
    let counted = h2load_rs(&[&["--no-retry"][..], &flags].concat());
    let failed = counted.cell()["errors"]["goaway"].as_u64().unwrap_or(0);
    assert!(failed > 0, "{}", counted.output.stdout);
    assert_eq!(counted.int("requests/succeeded") + failed, 1000);
    assert_eq!(counted.int("requests/retried/goaway"), 0);
}
