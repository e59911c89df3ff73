//! The cause first: a run that failed says why on the first line after the banner (see
//! `first_line`), in plain words with the fix, and its JSON carries the same `cause`. One test per
//! cause, each against a loopback server that fails in that one way; each also holds the exit
//! status (1: no request succeeded) and that no busy-generator verdict is given for a run that
//! spent its time failing.

use crate::common::{h2load_rs, Run, TargetProcess};
use crate::hostile::server::{Behaviour, Server};

/// The banner: what h2load-rs writes to stdout before a cell's report, `starting benchmark...`
/// and one `spawning thread #N: …` line per thread (and, in a sweep, the cell's `=== cell i/n`
/// heading and the blank lines around it).
fn is_banner(line: &str) -> bool {
    line.is_empty()
        || line == "starting benchmark..."
        || line.starts_with("spawning thread #")
        || line.starts_with("=== cell ")
}

/// The first line of stdout that is not the banner.
fn first_line(run: &Run) -> &str {
    run.output
        .stdout
        .lines()
        .find(|line| !is_banner(line))
        .unwrap_or_else(|| panic!("no report:\n{}", run.output.stdout))
}

/// Checks the run failed (exit 1, nothing succeeded) with a first line that starts with
/// `failed: ` and `says`, the JSON cause of `kind` with the same words, and no generator verdict.
fn assert_cause(run: &Run, kind: &str, says: &str) {
    assert_eq!(run.int("requests/succeeded"), 0, "{}", run.output.stdout);
    assert_cause_exit(run, 1, kind, says);
}

/// [`assert_cause`] for a run that exits with `code` (0 when some requests succeeded).
fn assert_cause_exit(run: &Run, code: i32, kind: &str, says: &str) {
    let output = &run.output;
    assert_eq!(output.code, code, "{}\n{}", output.stdout, output.stderr);
    let line = first_line(run);
    let text = line
        .strip_prefix("failed: ")
        .unwrap_or_else(|| panic!("the first line is not the cause:\n{}", output.stdout));
    assert!(text.starts_with(says), "{line}\nexpected: {says}");
    let cause = &run.cell()["cause"];
    assert_eq!(cause["kind"], kind, "{cause}");
    assert_eq!(cause["text"], text, "{cause}");
    assert!(
        !output.stdout.contains("h2load-rs's limit"),
        "a run busy failing gets no generator verdict:\n{}",
        output.stdout
    );
    assert_eq!(run.cell()["generator"]["limited"], false);
}

/// An HTTP/1.1 server, answering every request head (the h2c preface's included) with `reply`.
fn h1_server(reply: &'static [u8]) -> Server {
    Server::start(Behaviour::H1Reply(reply))
}

#[test]
fn h2c_to_an_http1_only_server_says_use_h1() {
    let server = h1_server(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    let url = format!("http://{}/", server.addr);
    let run = h2load_rs(&["-n", "100", "-c", "2", &url]);
    assert_cause(
        &run,
        "http1_only",
        "the server speaks HTTP/1.1 only: use --h1 (or --proto h1)",
    );
    // docs/json.md shows this very cause.
    let documented = crate::docs::json_example("## When a run fails (`cause`)");
    assert_eq!(documented["cause"], run.cell()["cause"]);
    // The fix works: the same server with --h1 answers every request.
    let fixed = h2load_rs(&["-n", "100", "-c", "2", "--h1", &url]);
    assert_eq!(fixed.output.code, 0, "{}", fixed.output.stdout);
    assert_eq!(fixed.int("requests/succeeded"), 100);
    assert_eq!(fixed.cell()["cause"], serde_json::Value::Null);
}

#[test]
fn a_closed_port_says_the_server_is_down_with_its_address() {
    let addr = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        listener.local_addr().expect("its address")
    };
    let url = format!("http://{addr}/");
    let says = format!(
        "the server is down, or not on this port: nothing accepted the connection (cannot connect to {addr}: "
    );
    // A count, and a timed run (which starts no request when it never connects).
    for stop in [["-n", "10"], ["-D", "300ms"]] {
        let run = h2load_rs(&[&stop[..], &[&url]].concat());
        assert_cause(&run, "refused", &says);
    }
    // The Markdown report leads with it too.
    let dir = tempfile::tempdir().expect("a temp dir");
    let markdown = dir.path().join("r.md");
    let run = h2load_rs(&["-n", "10", "--markdown", markdown.to_str().unwrap(), &url]);
    assert_cause(&run, "refused", &says);
    let markdown = std::fs::read_to_string(&markdown).expect("the Markdown written");
    assert!(
        markdown.starts_with(&format!("- failed: {says}")),
        "{markdown}"
    );
}

#[test]
fn http_to_a_tls_port_says_use_https() {
    let server = Server::start(Behaviour::BuiltinTls);
    let url = format!("http://{}/ping", server.addr);
    let says = format!(
        "this port speaks TLS: use https://, as in https://{}/ping",
        server.addr
    );
    // h2c by prior knowledge (the default for http://), and HTTP/1.1.
    for proto in [&[][..], &["--h1"][..]] {
        let mut args = vec!["-n", "10"];
        args.extend(proto);
        args.push(&url);
        assert_cause(&h2load_rs(&args), "tls_port", &says);
    }
}

#[test]
fn a_5xx_on_every_request_shows_the_status_and_the_body() {
    let server = h1_server(
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/html\r\nContent-Length: 94\r\n\r\n<html><head><title>503 Service Unavailable</title></head>\n<body>down for repairs</body></html>",
    );
    let dir = tempfile::tempdir().expect("a temp dir");
    let (markdown, html) = (dir.path().join("r.md"), dir.path().join("r.html"));
    let run = h2load_rs(&[
        "--h1",
        "-n",
        "20",
        "--markdown",
        markdown.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
        &format!("http://{}/", server.addr),
    ]);
    assert_cause(
        &run,
        "error_status",
        "the server answered every request with status 503 (its body began \"<html><head><title>503 Service Unavailable</title></head> <body>down for repairs</body></html>\"): check the URL",
    );
    assert_eq!(run.int("status_codes/5xx"), 20);
    // The exports quote the body as text: its tags are escaped, not markup of the report's.
    let escaped = "&lt;body&gt;down for repairs&lt;/body&gt;";
    for file in [&markdown, &html] {
        let text = std::fs::read_to_string(file).expect("written");
        assert!(text.contains(escaped), "{text}");
        assert!(!text.contains("<body>down"), "{text}");
    }
}

#[test]
fn a_4xx_over_h2c_shows_the_status_and_the_body() {
    let target = TargetProcess::start(&[], &["--threads", "1"]);
    let run = h2load_rs(&["-n", "20", &format!("{}/no/such/path", target.base)]);
    assert_cause(
        &run,
        "error_status",
        "the server answered every request with status 404 (its body began \"not found\")",
    );
}

#[test]
fn a_4xx_over_h3_shows_the_status_and_the_body() {
    let target = TargetProcess::start(&[], &["--threads", "1", "--tls"]);
    let url = format!("{}/no/such/path", target.base);
    let run = h2load_rs(&["--proto", "h3", "-k", "-n", "20", &url]);
    assert_cause(
        &run,
        "error_status",
        "the server answered every request with status 404 (its body began \"not found\")",
    );
    assert_eq!(run.cell()["protocol"]["negotiated"], "h3");
}

#[test]
fn a_ca_certificate_as_the_server_certificate_is_worded_for_people() {
    let certs = concat!(env!("CARGO_MANIFEST_DIR"), "/certs");
    let (cert, key) = (format!("{certs}/ca.crt"), format!("{certs}/ca.key"));
    let target = TargetProcess::start(
        &[],
        &[
            "--threads",
            "1",
            "--tls",
            "--tls-cert",
            &cert,
            "--tls-key",
            &key,
        ],
    );
    let run = h2load_rs(&["-n", "10", "--cacert", &cert, &format!("{}/", target.base)]);
    assert_cause(
        &run,
        "certificate",
        &format!(
            "the server's certificate was refused: TLS handshake with {} failed: invalid peer certificate: the certificate is a CA certificate used as a server certificate (serve a proper certificate, or skip verification with -k)",
            target.addr()
        ),
    );
    assert!(
        !run.output.stderr.contains("CaUsedAsEndEntity"),
        "{}",
        run.output.stderr
    );
}

#[test]
fn most_requests_failing_names_the_dominant_error_and_its_meaning() {
    let target = TargetProcess::start(&[], &["--threads", "1", "--fault", "reset-mid-response"]);
    let run = h2load_rs(&["--h1", "-n", "20", "-c", "2", &format!("{}/", target.base)]);
    assert_cause(
        &run,
        "errors",
        "no request succeeded: 20 of 20 requests (100.0%) failed with reset, meaning the server reset the connections (TCP RST;",
    );
    assert_eq!(run.int("errors/reset"), 20);
}

#[test]
fn most_requests_timing_out_is_a_failure_even_when_some_succeeded() {
    // In turn: three URLs answered after 2 s, past the 500 ms request timeout, and one at once
    // (500 ms leaves a loaded machine's /ping far within it: at 100 ms one timed out at a load
    // of 12 on 2 cores).
    let slow = crate::common::url("/delay/2000");
    let fast = crate::common::url("/ping");
    let run = h2load_rs(&[
        "--h1",
        "-c",
        "1",
        "-n",
        "12",
        "--request-timeout",
        "500ms",
        &slow,
        &slow,
        &slow,
        &fast,
    ]);
    assert_eq!(run.int("requests/succeeded"), 3, "{}", run.output.stdout);
    assert_cause_exit(
        &run,
        0,
        "errors",
        "9 of 12 requests (75.0%) failed with timeout, meaning no complete answer within the timeouts",
    );
}

#[test]
fn most_requests_with_an_error_status_is_a_failure_even_when_some_succeeded() {
    let error = crate::common::url("/status/500");
    let fine = crate::common::url("/ping");
    let run = h2load_rs(&["--h1", "-n", "20", &error, &error, &error, &fine]);
    assert_eq!(run.int("requests/succeeded"), 5, "{}", run.output.stdout);
    assert_cause_exit(
        &run,
        0,
        "error_status",
        "the server answered 15 of 20 requests (75.0%) with a 4xx/5xx status (the first: 500) (its body was empty)",
    );
}
