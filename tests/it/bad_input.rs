//! Bad input of every kind: one clear line on stderr naming the problem, exit code 2 for usage
//! and 1 for runtime problems, never a panic, a backtrace or a report.

use crate::common::{run_command, url};

/// Runs h2load-rs with `args`; describes how it fell short of exiting with `code` and one line on
/// stderr containing `needle` (and no panic, backtrace or report), if it did.
fn rejects(args: &[&str], code: i32, needle: &str) -> Option<String> {
    let output = run_command(env!("CARGO_BIN_EXE_h2load-rs"), args);
    let lines: Vec<&str> = output.stderr.lines().collect();
    let fine = output.code == code
        && lines.len() == 1
        && lines[0].starts_with("h2load-rs: ")
        && lines[0].contains(needle)
        && !output.stderr.contains("panicked")
        && output.stdout.is_empty();
    (!fine).then(|| {
        format!(
            "{args:?}: exit {} (want {code}), want '{needle}' in {lines:?}",
            output.code
        )
    })
}

#[test]
fn sixty_bad_inputs() {
    let good = url("/ping");
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    std::fs::write(path("not-a-cert.pem"), "just text").unwrap();
    std::fs::write(path("unknown-key.toml"), "clients = [1]\nthreadz = 2\n").unwrap();
    std::fs::write(path("wrong-type.toml"), "clients = \"lots\"\n").unwrap();
    std::fs::write(path("switch-type.toml"), "h2-multiplex = 3\n").unwrap();
    std::fs::write(path("table-type.toml"), "requests = { a = 1 }\n").unwrap();
    std::fs::write(path("broken.toml"), "clients = [1,\n").unwrap();
    let cert = concat!(env!("CARGO_MANIFEST_DIR"), "/certs/client.crt");
    let tls_url = "https://127.0.0.1:1/";
    let (not_a_cert, unknown_key, wrong_type) = (
        path("not-a-cert.pem"),
        path("unknown-key.toml"),
        path("wrong-type.toml"),
    );
    let (switch_type, table_type, broken) = (
        path("switch-type.toml"),
        path("table-type.toml"),
        path("broken.toml"),
    );
    let directory = dir.path().to_str().unwrap().to_owned();
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        // URLs, schemes, ports
        (vec!["ftp://127.0.0.1/"], 2, "unsupported scheme 'ftp'"),
        (vec!["127.0.0.1:8080/ping"], 2, "has no scheme"),
        (vec!["http://"], 2, "is not valid"),
        (vec!["http://127.0.0.1:0/"], 2, "port 0"),
        (vec!["http://127.0.0.1:99999/"], 2, "not a port number"),
        (
            vec!["http://127.0.0.1:abc/"],
            2,
            "'abc' is not a port number",
        ),
        (vec!["http://exa mple.com/"], 2, "is not valid"),
        (
            vec!["http://no-such-host.invalid/"],
            1,
            "cannot resolve host 'no-such-host.invalid'",
        ),
        // flag values
        (vec!["-c", "0", &good], 2, "--clients"),
        (vec!["-c", "abc", &good], 2, "--clients"),
        (vec!["-t", "0", &good], 2, "--threads"),
        (vec!["-m", "0", &good], 2, "--max-concurrent-streams"),
        (vec!["-m", "2000000", &good], 2, "--max-concurrent-streams"),
        (vec!["-n", "0", &good], 2, "at least 1"),
        (vec!["-n", "3y", &good], 2, "not a request count"),
        (vec!["-w", "31", &good], 2, "--window-bits"),
        (vec!["-W", "99", &good], 2, "--connection-window-bits"),
        (vec!["--proto", "h3", &good], 2, "h3"),
        (vec!["--rate", "0", &good], 2, "not a positive rate"),
        (vec!["--rps", "x", &good], 2, "not a positive rate"),
        (vec!["--scale", "0", &good], 2, "not a positive factor"),
        (
            vec!["--start-at", "tomorrow", &good],
            2,
            "not an RFC 3339 time",
        ),
        (vec!["--target-fault", "explode"], 2, "is not a fault"),
        (
            vec!["--method", "GE T", &good],
            2,
            "not a valid HTTP method",
        ),
        // durations and sizes
        (vec!["-D", "2x", &good], 2, "unknown unit"),
        (vec!["-D", "0s", &good], 2, "greater than zero"),
        (vec!["--interval=-1s", &good], 2, "not a duration"),
        (
            vec!["--request-timeout", "soon", &good],
            2,
            "not a duration",
        ),
        (vec!["-f", "1K", &good], 2, "max-frame-size"),
        (vec!["-f", "20M", &good], 2, "max-frame-size"),
        (vec!["--header-table-size", "5G", &good], 2, "below 4G"),
        (vec!["--header-table-size", "lots", &good], 2, "not a size"),
        // combinations
        (vec!["--warm-up-time", "1s", &good], 2, "--duration"),
        (vec!["-n", "5", "-D", "1s", &good], 2, "cannot be used with"),
        (
            vec!["--rate", "10", "--rps", "5", &good],
            2,
            "cannot be used with",
        ),
        (
            vec!["--h1", "--proto", "h2c", &good],
            2,
            "cannot be used with",
        ),
        (vec!["--proto", "h2", &good], 2, "needs an https:// URL"),
        (vec!["--proto", "auto", &good], 2, "needs an https:// URL"),
        (vec!["--proto", "h2c", tls_url], 2, "needs an http:// URL"),
        (vec!["--cert", cert, tls_url], 2, "--key"),
        (
            vec!["--connect-to", "nocolon", &good],
            2,
            "expected HOST:PORT",
        ),
        (
            vec!["--connect-to", "127.0.0.1:port", &good],
            2,
            "not a port number",
        ),
        // headers
        (vec!["-H", "no-colon", &good], 2, "expected 'Name: value'"),
        (vec!["-H", ": empty", &good], 2, "expected 'Name: value'"),
        (
            vec!["-H", "bad name: v", &good],
            2,
            "not a valid header name",
        ),
        (vec!["-H", ":path: /x", &good], 2, "pseudo-header"),
        (
            vec!["-H", "x-a: line\u{7f}break", &good],
            2,
            "not allowed in a header",
        ),
        // TLS material and files
        (vec!["--alpn-list", ",", tls_url], 2, "--alpn-list"),
        (
            vec!["--cacert", "/nonexistent/ca.pem", tls_url],
            1,
            "cannot read the --cacert file",
        ),
        (
            vec!["--cacert", &not_a_cert, tls_url],
            1,
            "holds no certificate",
        ),
        (
            vec!["--cert", cert, "--key", &not_a_cert, tls_url],
            1,
            "holds no PEM private key",
        ),
        (
            vec!["--log-file", "/nonexistent/requests.tsv", &good],
            1,
            "cannot create --log-file /nonexistent/requests.tsv",
        ),
        (
            vec!["-d", "/nonexistent/body", &good],
            1,
            "cannot read the -d file",
        ),
        (vec!["-d", &directory, &good], 1, "cannot read the -d file"),
        // scenario files
        (
            vec!["run", "/nonexistent/scenario.toml"],
            1,
            "cannot read the scenario file",
        ),
        (vec!["run", &unknown_key], 2, "unknown key 'threadz'"),
        (vec!["run", &wrong_type], 2, "'lots'"),
        (vec!["run", &switch_type], 2, "'h2-multiplex' is a switch"),
        (
            vec!["run", &table_type],
            2,
            "'requests' must be a string, number or list",
        ),
        (vec!["run", &broken], 2, "broken.toml"),
        (
            vec!["merge", "/nonexistent/result.json"],
            1,
            "cannot read '/nonexistent/result.json'",
        ),
        (
            vec!["merge", &not_a_cert],
            1,
            "is not an h2load-rs JSON report",
        ),
    ];
    assert!(cases.len() >= 40);
    let problems: Vec<String> = cases
        .iter()
        .filter_map(|(args, code, needle)| rejects(args, *code, needle))
        .collect();
    assert!(
        problems.is_empty(),
        "{} of {} cases:\n{}",
        problems.len(),
        cases.len(),
        problems.join("\n")
    );
}
