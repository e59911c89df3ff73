//! Bad input of every kind: one clear line on stderr naming the problem, exit code 2 for usage
//! and 1 for runtime problems, never a panic, a backtrace or a report.

use crate::common::{run_command, run_command_within, url};

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
    let cases: Vec<(Vec<&str>, i32, &str)> =
        vec![
        // URLs, schemes, ports
        (vec!["ftp://127.0.0.1/"], 2, "unsupported scheme 'ftp'"),
        // Open-loop arrivals and --until-stable
        (
            vec!["--arrival", "poisson", "-n", "10", &good],
            2,
            "--arrival poisson spaces paced send times",
        ),
        (vec!["--arrival", "bursty", &good], 2, "invalid value 'bursty'"),
        (
            vec!["--until-stable", "0", &good],
            2,
            "is not a precision between 0.1% and 50%",
        ),
        (
            vec!["--until-stable", "5%", "--find-max", &good],
            2,
            "cannot be used with",
        ),
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
        (vec!["-n", "3y", &good], 2, "-n takes a request count"),
        (vec!["-n", "1.5", &good], 2, "'1.5' is not a whole number"),
        (vec!["-c", "1,1.5", &good], 2, "--clients"),
        (vec!["-w", "31", &good], 2, "--window-bits"),
        (vec!["-W", "99", &good], 2, "--connection-window-bits"),
        (vec!["--proto", "h3", &good], 2, "h3"),
        (vec!["--rate", "0", &good], 2, "not a rate"),
        (vec!["--rps", "x", &good], 2, "not a rate"),
        (vec!["--scale", "0", &good], 2, "not a factor"),
        (
            vec!["--start-at", "tomorrow", &good],
            2,
            "not an RFC 3339 time",
        ),
        (vec!["--target-fault", "explode"], 2, "is not a fault"),
        (vec!["--target-slow-every", "1s", "-n", "1"], 2, "--target-slow-by"),
        (
            vec!["--target-slow-every", "0s", "--target-slow-by", "5ms"],
            2,
            "--target-slow-every",
        ),
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
            vec!["--no-retry", "--max-retries", "2", &good],
            2,
            "cannot be used with",
        ),
        (vec!["--max-retries", "101", &good], 2, "not in 0..=100"),
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
            2,
            "cannot read the --cacert file",
        ),
        (
            vec!["--cacert", &not_a_cert, tls_url],
            2,
            "holds no certificate",
        ),
        (
            vec!["--cert", cert, "--key", &not_a_cert, tls_url],
            2,
            "holds no PEM private key",
        ),
        (
            vec!["--log-file", "/nonexistent/requests.tsv", &good],
            2,
            "--log-file '/nonexistent/requests.tsv': the directory '/nonexistent' does not exist",
        ),
        (
            vec!["-d", "/nonexistent/body", &good],
            2,
            "cannot read the -d file",
        ),
        (vec!["-d", &directory, &good], 2, "is not a regular file"),
        // scenario files
        (
            vec!["run", "/nonexistent/scenario.toml"],
            2,
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
            2,
            "cannot read the report to merge '/nonexistent/result.json'",
        ),
        (
            vec!["merge", &not_a_cert],
            2,
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

#[test]
fn huge_and_non_finite_numbers_are_usage_errors() {
    let good = url("/ping");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["-c", "18446744073709551600", &good], "--clients"),
        (vec!["-c", "1000001", &good], "--clients"),
        (vec!["-c", "18446744073709551616", &good], "--clients"),
        (vec!["-t", "4097", &good], "--threads"),
        (vec!["-m", "1000001", &good], "--max-concurrent-streams"),
        (vec!["-n", "9223372036854775808x", &good], "10^12"),
        (vec!["-n", "1000000000001", &good], "10^12"),
        (
            vec!["-n", "18446744073709551616", &good],
            "too large a count",
        ),
        (vec!["-n", "18446744073709552k", &good], "too large a count"),
        (vec!["-c", "18446744073709552k", &good], "--clients"),
        (vec!["--rate", "200M", &good], "not a rate"),
        (
            vec!["-n", "1000000x", "-c", "1000", "-m", "1001", &good],
            "10^12",
        ),
        (vec!["--scale", "1e300", &good], "not a factor"),
        (vec!["--scale", "NaN", &good], "not a factor"),
        (vec!["--scale", "inf", &good], "not a factor"),
        (vec!["--rate", "1e300", &good], "not a rate"),
        (vec!["--rate", "1e-300", &good], "not a rate"),
        (vec!["--rate", "nan", &good], "not a rate"),
        (vec!["--rps=-inf", &good], "not a rate"),
        (
            vec!["--rps", "1000", "-c", "200000", "-n", "1000000", &good],
            "requests/s",
        ),
        (vec!["-D", "99999999999999999999h", &good], "30 days"),
        (vec!["-D", "721h", &good], "30 days"),
        (vec!["-D", "720h", "--scale", "1.5", &good], "30 days"),
        (vec!["--interval", "1000000000s", &good], "30 days"),
        (vec!["--interval", "10us", &good], "shorter than"),
        (vec!["--request-timeout", "1e300", &good], "unknown unit"),
        (vec!["--connect-timeout", "43201m", &good], "30 days"),
        (vec!["--cooldown", "inf", &good], "not a duration"),
        (vec!["-f", "99999999999999999999", &good], "not a size"),
        (
            vec!["--header-table-size", "17179869184G", &good],
            "too large",
        ),
        (
            vec!["-c", "1000", "-m", "1001", "--h2-multiplex", &good],
            "1001000 streams",
        ),
        (vec!["serve", "--threads", "5000"], "--threads"),
    ];
    let problems: Vec<String> = cases
        .iter()
        .filter_map(|(args, needle)| rejects(args, 2, needle))
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn start_at_is_strict_rfc_3339() {
    let good = url("/ping");
    let problems: Vec<String> = [
        "2026-02-31T00:00:00Z",
        "2026-11-21T10:00:00+0100",
        "2026-11-21T10:00:00Z[UTC]",
        "2026-11-21",
    ]
    .iter()
    .filter_map(|time| rejects(&["--start-at", time, &good], 2, "not an RFC 3339 time"))
    .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn input_files_are_regular_and_bounded_and_never_block() {
    let good = url("/ping");
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let fifo = path("fifo");
    assert_eq!(run_command("mkfifo", &[&fifo]).code, 0);
    // Sparse files one byte over each cap: instant to make, and not read if the cap is checked first.
    let sparse = |name: &str, size: u64| {
        let file = std::fs::File::create(path(name)).unwrap();
        file.set_len(size).unwrap();
        path(name)
    };
    let big_body = sparse("body.bin", (1 << 30) + 1);
    let big_scenario = sparse("scenario.toml", (16 << 20) + 1);
    let big_ca = sparse("ca.pem", (16 << 20) + 1);
    let big_report = sparse("report.json", (256 << 20) + 1);
    let big_urls = sparse("urls.txt", (64 << 20) + 1);
    let tls_url = "https://127.0.0.1:1/";
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["-d", "/dev/zero", &good],
            "'/dev/zero' is not a regular file",
        ),
        (vec!["-d", &fifo, &good], "is not a regular file"),
        (
            vec!["-d", &big_body, &good],
            "holds 1073741825 bytes, more than the limit of 1.07 GB",
        ),
        // --h2-multiplex looks at the -i file's first URL: only once the file passed its checks.
        (
            vec!["-n", "10", "--h2-multiplex", "-i", &fifo],
            "is not a regular file",
        ),
        (
            vec!["-n", "10", "--h2-multiplex", "-i", "/dev/zero"],
            "is not a regular file",
        ),
        (
            vec!["-n", "10", "-i", &big_urls],
            "holds 67108865 bytes, more than the limit of 67.11 MB",
        ),
        (vec!["run", "/dev/zero"], "is not a regular file"),
        (vec!["run", &fifo], "is not a regular file"),
        (
            vec!["run", &big_scenario],
            "more than the limit of 16.78 MB",
        ),
        (vec!["merge", "/dev/zero"], "is not a regular file"),
        (vec!["merge", &fifo], "is not a regular file"),
        (
            vec!["merge", &big_report],
            "more than the limit of 268.44 MB",
        ),
        (
            vec!["--cacert", "/dev/zero", tls_url],
            "is not a regular file",
        ),
        (vec!["--cacert", &fifo, tls_url], "is not a regular file"),
        (
            vec!["--cacert", &big_ca, tls_url],
            "more than the limit of 16.78 MB",
        ),
    ];
    for (args, needle) in &cases {
        let started = std::time::Instant::now();
        if let Some(problem) = rejects(args, 2, needle) {
            panic!("{problem}");
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{args:?} took {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn usage_errors_are_found_before_anything_is_sent() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let target = format!("http://{}/", listener.local_addr().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo").to_str().unwrap().to_owned();
    assert_eq!(run_command("mkfifo", &[&fifo]).code, 0);
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["-H", "Host: a\r\nEvil: b", &target],
            "not allowed in a header",
        ),
        (
            vec!["-H", ":authority: a\nb", &target],
            "not allowed in a header",
        ),
        (
            vec!["--json", "/nonexistent/r.json", &target],
            "does not exist",
        ),
        (
            vec!["--html", "/nonexistent/r.html", &target],
            "does not exist",
        ),
        (
            vec!["--proto", "h1,h2c", "--csv", "/nonexistent/t.csv", &target],
            "does not exist",
        ),
        (vec!["--hgrm", &fifo, &target], "is not a directory"),
        (
            vec!["--csv-timeline", "/proc/version/x.csv", &target],
            "does not exist",
        ),
        (vec!["-d", &fifo, &target], "is not a regular file"),
        (
            vec!["--start-at", "2026-02-31T00:00:00Z", &target],
            "RFC 3339",
        ),
        (vec!["-c", "1,18446744073709551600", &target], "--clients"),
    ];
    let problems: Vec<String> = cases
        .iter()
        .filter_map(|(args, needle)| rejects(args, 2, needle))
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        matches!(listener.accept(), Err(error) if error.kind() == std::io::ErrorKind::WouldBlock),
        "a connection was made"
    );
}

#[test]
fn usage_errors_quote_little_of_a_long_input() {
    let good = url("/ping");
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: String| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let megabyte = "x".repeat(1 << 20);
    // A bad line of a MB in each file that is read line by line, and in flags as long as Linux
    // lets one argument be (128 KiB).
    let urls = write("urls.txt", format!("/ok\n/{megabyte} y\n"));
    let scheme = write("scheme.txt", format!("ftp://{megabyte}\n"));
    let scenario = write(
        "scenario.toml",
        format!("urls = [\"http://{megabyte} \"]\nrequests = 1\n"),
    );
    let scenario_flag = write(
        "flag.toml",
        format!("urls = [\"{good}\"]\nrate = \"{megabyte}\"\n"),
    );
    let long_flag = "y".repeat(100_000);
    let header = format!("x-a: {long_flag}\x01 z");
    let name = format!("{long_flag} y: 1");
    let url_flag = format!("http://127.0.0.1:1/{long_flag} ");
    let rate = format!("1{long_flag}");
    let cases: Vec<Vec<&str>> = vec![
        vec!["-n", "1", "-i", &urls],
        vec!["-n", "1", "-i", &scheme],
        vec!["run", &scenario],
        vec!["run", &scenario_flag],
        vec!["-n", "1", "-H", &header, &good],
        vec!["-n", "1", "-H", &name, &good],
        vec!["-n", "1", &url_flag],
        vec!["-n", "1", "--method", &header, &good],
        vec!["-n", "1", "--connect-to", &long_flag, &good],
        vec!["-n", "1", "--rate", &rate, &good],
    ];
    for args in &cases {
        let output = run_command(env!("CARGO_BIN_EXE_h2load-rs"), args);
        let shown: Vec<String> = args
            .iter()
            .map(|arg| arg.chars().take(40).collect())
            .collect();
        assert_eq!(
            output.code,
            2,
            "{shown:?}: {}",
            &output.stderr[..output.stderr.len().min(300)]
        );
        assert_eq!(output.stderr.lines().count(), 1, "{shown:?}");
        assert!(
            output.stderr.len() < 1024,
            "{shown:?}: {} bytes of stderr: {}…",
            output.stderr.len(),
            &output.stderr[..300]
        );
    }
}

#[test]
fn a_url_file_of_many_short_lines_is_refused_before_it_fills_memory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("urls.txt");
    // Just under the 64 MiB cap: 33.5 million one-character URLs, about 5 GB as a plan.
    std::fs::write(&path, "/\n".repeat(((64 << 20) - 2) / 2)).unwrap();
    let path = path.to_str().unwrap();
    let good = url("/ping");
    // Under a 2 GB address-space limit: an allocation failure would abort (status 134).
    let output = run_command(
        "sh",
        &[
            "-c",
            "ulimit -v 2000000; exec \"$0\" \"$@\"",
            env!("CARGO_BIN_EXE_h2load-rs"),
            "-n",
            "1",
            &good,
            "-i",
            path,
        ],
    );
    assert_eq!(output.code, 2, "{}", output.stderr);
    assert_eq!(output.stderr.lines().count(), 1, "{}", output.stderr);
    assert!(
        output
            .stderr
            .contains("holds 33554431 URLs, which would take about")
            && output.stderr.contains("more than the limit of 1.07 GB"),
        "{}",
        output.stderr
    );
}

/// Credentials written into a URL (`--proxy`, the target, a `-i` line) never reach stderr, the
/// report, the JSON or a `-v` trace: not as typed, not percent-decoded, not base64-encoded as the
/// proxy's `Proxy-Authorization` carries them.
#[test]
fn credentials_in_urls_are_never_printed() {
    const SECRET: &str = "hunter2";
    // base64 of `user:hunter2`, what Proxy-Authorization carries.
    const ENCODED: &str = "dXNlcjpodW50ZXIy";
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("urls.txt");
    let list = list.to_str().unwrap();
    let leaks = |text: &str| text.contains(SECRET) || text.contains(ENCODED);
    let mut failures = Vec::new();
    for (file, args, code, says) in [
        (
            None,
            vec![
                "--proxy",
                "https://user:hunter2@127.0.0.1:1",
                "http://localhost/",
            ],
            2,
            "only http:// proxies",
        ),
        (
            None,
            vec![
                "--proxy",
                "http://user:hunter2@127.0.0.1",
                "http://localhost/",
            ],
            2,
            "give the proxy's port",
        ),
        (
            None,
            vec![
                "--proxy",
                "http://user:hunter2@127.0.0.1:1/p",
                "http://localhost/",
            ],
            2,
            "without a path",
        ),
        (
            None,
            vec![
                "--proxy",
                "http://user:hunter2@127.0.0.1:1/ x",
                "http://localhost/",
            ],
            2,
            "not a valid URL",
        ),
        (
            None,
            vec![
                "--proxy",
                "http://user:hunter%@127.0.0.1:1",
                "http://localhost/",
            ],
            2,
            "broken %-escape",
        ),
        (None, vec!["user:hunter2@127.0.0.1:1/"], 2, "has no scheme"),
        (
            Some("http://user:hunter2@127.0.0.1:1/ x\n"),
            vec!["-i", list],
            2,
            "space or control character",
        ),
        (
            Some("/a\nftp://user:hunter2@127.0.0.1:1/\n"),
            vec!["-i", list],
            2,
            "unsupported scheme",
        ),
        (
            Some("user:hunter2@127.0.0.1:1/\n"),
            vec!["-i", list],
            2,
            "neither a URL",
        ),
    ] {
        if let Some(text) = file {
            std::fs::write(list, text).unwrap();
        }
        let output = run_command(env!("CARGO_BIN_EXE_h2load-rs"), &args);
        if output.code != code || !output.stderr.contains(says) || leaks(&output.stderr) {
            failures.push(format!("{args:?}: exit {}: {}", output.code, output.stderr));
        }
    }
    // A run through a proxy that refuses, traced: the message names the proxy, not its user.
    let refusing = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy = format!("http://user:hunter2@{}", refusing.local_addr().unwrap());
    drop(refusing);
    let run = crate::common::h2load_rs(&[
        "--proxy",
        &proxy,
        "-n",
        "2",
        "-v",
        "--h1",
        "http://localhost/ping",
    ]);
    let json = run.json.to_string();
    if run.output.code != 1
        || !run.output.stderr.contains("proxy")
        || leaks(&run.output.stderr)
        || leaks(&run.output.stdout)
        || leaks(&json)
    {
        failures.push(format!(
            "a refused proxy: exit {}\n{}\n{}\n{json}",
            run.output.code, run.output.stderr, run.output.stdout
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn grpc_flags_are_checked_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let proto = path("svc.proto");
    std::fs::write(
        &proto,
        "syntax = \"proto3\"; package t; message M { string a = 1; int32 n = 2; }\n\
         service S { rpc Do(M) returns (M); rpc Watch(M) returns (stream M); }\n",
    )
    .unwrap();
    let broken = path("broken.proto");
    std::fs::write(&broken, "syntax = \"proto3\"; message {\n").unwrap();
    let http = "http://127.0.0.1:1/";
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--grpc", "Svc", http],
            "expected /package.Service/Method",
        ),
        (
            vec!["--grpc", "/a b/C", http],
            "expected /package.Service/Method",
        ),
        (
            vec!["--grpc", "/t.S/Do", "--proto", "h1", http],
            "--grpc runs over HTTP/2: --proto h2c for http:// or h2 for https://, not h1",
        ),
        (
            vec!["--grpc", "/t.S/Do", "--proto", "h2c-upgrade", http],
            "not h2c-upgrade",
        ),
        (
            vec!["--grpc", "/t.S/Do", "--proto", "h3", "https://127.0.0.1:1/"],
            "not h3",
        ),
        (
            vec![
                "--grpc",
                "/t.S/Do",
                "--grpc-proto",
                &proto,
                "--grpc-data",
                "{\"a\":1}",
                http,
            ],
            "--grpc-data is not a t.M in JSON",
        ),
        (
            vec![
                "--grpc",
                "/t.S/Do",
                "--grpc-proto",
                &proto,
                "--grpc-data",
                "{\"b\":\"x\"}",
                http,
            ],
            "--grpc-data is not a t.M in JSON",
        ),
        (
            vec![
                "--grpc",
                "/t.S/Do",
                "--grpc-proto",
                &proto,
                "--grpc-data",
                "{\"a\":\"x\"} junk",
                http,
            ],
            "--grpc-data is not a t.M in JSON",
        ),
        (
            vec!["--grpc", "/t.Nope/Do", "--grpc-proto", &proto, http],
            "no service t.Nope in the .proto files (they declare: t.S)",
        ),
        (
            vec!["--grpc", "/t.S/Undo", "--grpc-proto", &proto, http],
            "t.S has no method Undo (it has: Do, Watch)",
        ),
        (
            vec![
                "--grpc",
                "/t.S/Watch",
                "--grpc-proto",
                &proto,
                "--grpc-stream-messages",
                "3",
                http,
            ],
            "are for client-streaming and bidirectional calls; /t.S/Watch is server-streaming",
        ),
        (
            vec![
                "--grpc",
                "/t.S/Watch",
                "--grpc-proto",
                &proto,
                "--grpc-shape",
                "bidi",
                http,
            ],
            "--grpc-shape says otherwise than the .proto, where /t.S/Watch is server-streaming",
        ),
        (
            vec!["--grpc", "/t.S/Do", "--grpc-stream-interval", "10ms", http],
            "/t.S/Do is unary",
        ),
        (
            vec!["--grpc", "/t.S/Do", "--grpc-proto", &broken, http],
            "--grpc-proto: ",
        ),
        (
            vec!["--grpc", "/t.S/Do", "--grpc-proto", "/dev/zero", http],
            "is not a regular file",
        ),
        (
            vec![
                "--grpc",
                "/t.S/Do",
                "--grpc-binary-file",
                "/nonexistent/m.bin",
                http,
            ],
            "cannot read the --grpc-binary-file",
        ),
        (
            vec![
                "--grpc",
                "/t.S/Do",
                "--grpc-proto",
                &proto,
                "--grpc-data",
                "@/nonexistent",
                http,
            ],
            "cannot read the --grpc-data file",
        ),
        (vec!["--grpc-data", "{}", http], "--grpc"),
        (
            vec!["--grpc", "/t.S/Do", "--grpc-data", "{}", http],
            "--grpc-data needs --grpc-proto or --grpc-reflect",
        ),
        (
            vec!["--grpc", "/t.S/Do", "--grpc-reflect"],
            "--grpc-reflect asks the server of the URL for its schema",
        ),
        (
            vec![
                "--grpc",
                "/t.S/Do",
                "--grpc-reflect",
                "--grpc-proto",
                &proto,
                http,
            ],
            "cannot be used with",
        ),
        (vec!["--grpc-proto", &proto, http], "--grpc"),
        (
            vec!["--grpc", "/t.S/Do", "-d", &proto, http],
            "-d cannot be given with --grpc",
        ),
        (
            vec!["--grpc", "/t.S/Do", "--method", "PUT", http],
            "--method cannot be given with --grpc",
        ),
        (
            vec!["--grpc", "/t.S/Do", http, "http://127.0.0.1:2/"],
            "--grpc calls one method on one server",
        ),
        (
            vec!["--grpc", "/t.S/Do", http, "https://127.0.0.1:2/"],
            "needs --proto h2, h2c or both",
        ),
        (
            vec!["--grpc", "/t.S/Do", "--expect-status", "200", http],
            "with --grpc, expected a gRPC status code",
        ),
        (
            vec!["--grpc", "/t.S/Do", "--grpc-max-message", "0", http],
            "expected 1 byte to 4G - 1",
        ),
        (
            vec!["--grpc", "/t.S/Do", "--grpc-max-message", "4G", http],
            "expected 1 byte to 4G - 1",
        ),
    ];
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(args, needle)| rejects(args, 2, needle))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every `.proto` file a run reads, imports included, is checked as a top-level input is, and
/// compiling one is bounded in depth, size and time: exit 2 and one line, quickly. On the code
/// before these checks the FIFO import blocked for ever, /dev/zero was read to 2 GiB, the chain
/// and the nested option overflowed the stack (abort), the 3 MB file was read (and the 2 MiB import
/// beside a file), and the 30,000 errors took minutes (checking was quadratic in the errors).
#[test]
fn proto_files_and_their_imports_are_bounded() {
    const NOT_REGULAR: &str = " (a directory, device or pipe cannot be read as one)";
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let write = |name: &str, text: &str| {
        std::fs::write(path(name), text).unwrap();
        path(name)
    };
    let importer = |name: &str, import: &str| {
        write(
            name,
            &format!("syntax = \"proto3\"; import \"{import}\"; package t; message M {{}}\n"),
        )
    };
    assert_eq!(run_command("mkfifo", &[&path("fifo.proto")]).code, 0);
    std::os::unix::fs::symlink("/dev/zero", path("zero.proto")).unwrap();
    let fifo_import = importer("a.proto", "fifo.proto");
    let device_import = importer("b.proto", "zero.proto");
    for i in 0..3000 {
        importer(&format!("c{i}.proto"), &format!("c{}.proto", i + 1));
    }
    let nested = 20_000;
    let deep_option = write(
        "opt.proto",
        &format!(
            "syntax = \"proto2\"; import \"google/protobuf/descriptor.proto\";\n\
             message X {{ optional X x = 1; }}\n\
             extend google.protobuf.FileOptions {{ optional X xo = 50000; }}\n\
             option (xo) = {}{{}}{};\n",
            "{ x ".repeat(nested),
            " }".repeat(nested)
        ),
    );
    let chain = path("c0.proto");
    let big = path("big.proto");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(3 << 20)
        .unwrap();
    // Within the cap alone, past it with the file importing it: refused before it is parsed.
    let total = importer("d.proto", "sparse.proto");
    std::fs::File::create(path("sparse.proto"))
        .unwrap()
        .set_len((2 << 20) - 10)
        .unwrap();
    let errors: String = (0..30_000)
        .map(|i| format!("message E{i} {{ Nope f = 1; }}\n"))
        .collect();
    let many_errors = write("errors.proto", &format!("syntax = \"proto3\";\n{errors}"));
    let cases: Vec<(&String, String)> = vec![
        (
            &fifo_import,
            format!("the --grpc-proto import '{}' is not a regular file{NOT_REGULAR}", path("fifo.proto")),
        ),
        (
            &device_import,
            format!("the --grpc-proto import '{}' is not a regular file{NOT_REGULAR}", path("zero.proto")),
        ),
        (
            &chain,
            "--grpc-proto: imports nested deeper than the limit of 64 files: c0.proto -> c1.proto \
             -> c2.proto -> ... (59 more) -> c62.proto -> c63.proto -> c64.proto"
                .to_owned(),
        ),
        (
            &deep_option,
            "--grpc-proto: opt.proto:4: brackets nested deeper than the limit of 64 (messages or option values)"
                .to_owned(),
        ),
        (
            &big,
            format!("the --grpc-proto file '{big}' holds 3145728 bytes, more than the limit of 2.10 MB"),
        ),
        (
            &total,
            format!(
                "--grpc-proto: the files and their imports hold more than the limit of 2.10 MB together (at '{}')",
                path("sparse.proto")
            ),
        ),
        (
            &many_errors,
            "--grpc-proto: errors.proto: name 'Nope' is not defined".to_owned(),
        ),
    ];
    for (proto, line) in &cases {
        let args = [
            "--grpc",
            "/t.S/Do",
            "--grpc-proto",
            proto,
            "http://127.0.0.1:1/",
        ];
        let output = run_command_within(
            env!("CARGO_BIN_EXE_h2load-rs"),
            &args,
            std::time::Duration::from_secs(40),
        );
        assert_eq!(
            (output.code, output.stderr.as_str()),
            (2, format!("h2load-rs: {line}\n").as_str()),
            "{proto}"
        );
        // Unoptimized, 30,000 errors take about 3 s here; quadratic, they took minutes.
        assert!(output.wall.as_secs() < 30, "{proto}: {:?}", output.wall);
    }
}
