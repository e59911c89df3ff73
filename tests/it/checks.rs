//! Response checks (`--expect-status`, `--expect-header`, `--expect-body-contains`) end to end:
//! exact counts of passed and failed responses, the `check` error kind, the first mismatch in the
//! text and JSON reports and the exit status, over HTTP/1.1, h2c, the h2c upgrade and HTTP/3
//! against the built-in target, and over h2 against Caddy (HPACK with Huffman coding and the
//! dynamic table); and the usage errors.

use crate::common::{assert_clean, assert_usage_error, h2load_rs, url, Run};
use crate::testbed::testbed_running;

const N: u64 = 200;

/// Runs `args` against `target` with `--proto proto`, `-c 2 -m 4 -n N`.
fn checked(proto: &str, target: &str, args: &[&str]) -> Run {
    let n = N.to_string();
    let mut full = vec!["--proto", proto, "-c", "2", "-m", "4", "-n", &n];
    if proto == "h3" {
        full.extend(["--cacert", crate::h3::CA]);
    }
    full.extend(args);
    full.push(target);
    h2load_rs(&full)
}

/// The built-in target's `path` for `proto` (HTTP/3 on its TLS and UDP side).
fn target(proto: &str, path: &str) -> String {
    match proto {
        "h3" => crate::h3::url(path),
        _ => url(path),
    }
}

/// Checks a run where every response arrived and failed a check, the first with `mismatch`:
/// none succeeded, N errors of kind `check`, statuses counted as received, exit status 1.
fn assert_all_failed_checks(run: &Run, name: &str, mismatch: &str, status_class: &str) {
    assert_eq!(run.output.code, 1, "{name}: {}", run.output.stderr);
    for (field, expected) in [
        ("requests/done", N),
        ("requests/succeeded", 0),
        ("requests/failed", N),
        ("requests/errored", 0),
        ("errors/check", N),
        ("checks/failed", N),
        (status_class, N),
    ] {
        assert_eq!(run.int(field), expected, "{name}: {field}");
    }
    assert_eq!(run.cell()["checks"]["first_mismatch"], mismatch, "{name}");
    let line = format!("check failed: {mismatch} (first of {N})");
    assert!(
        run.output.stdout.lines().any(|text| text == line),
        "{name}: no '{line}' in\n{}",
        run.output.stdout
    );
    assert!(
        run.output.stderr.contains(&format!(
            "no request succeeded: {N} failed a response check"
        )),
        "{name}: {}",
        run.output.stderr
    );
}

#[test]
fn expect_status_200_against_204_fails_every_request_on_every_protocol() {
    for proto in ["h1", "h2c", "h3"] {
        let run = checked(
            proto,
            &target(proto, "/status/204"),
            &["--expect-status", "200"],
        );
        assert_all_failed_checks(&run, proto, "status 204, expected 200", "status_codes/2xx");
        // The same route passes when its status is expected, by code or by class.
        let run = checked(
            proto,
            &target(proto, "/status/204"),
            &["--expect-status", "200,2xx"],
        );
        assert_clean(&run, proto, N);
        assert_eq!(run.int("checks/failed"), 0, "{proto}");
        assert!(run.cell()["checks"]["first_mismatch"].is_null(), "{proto}");
    }
}

#[test]
fn an_expected_error_status_succeeds_and_others_fail() {
    let run = checked("h2c", &url("/status/404"), &["--expect-status", "404"]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    assert_eq!(run.int("requests/succeeded"), N);
    assert_eq!(run.int("status_codes/4xx"), N);
    assert!(run.cell()["errors"].get("check").is_none());
    // Without --expect-status, a 503 fails as an error status, not as a check (the body check
    // is not looked at), as without checks.
    let run = checked(
        "h1",
        &url("/status/503"),
        &["--expect-body-contains", "pong"],
    );
    assert_eq!(run.output.code, 1, "{}", run.output.stderr);
    assert_eq!(
        (run.int("requests/failed"), run.int("checks/failed")),
        (N, 0)
    );
    assert!(run
        .output
        .stderr
        .contains(&format!("{N} got a 4xx/5xx status")));
}

#[test]
fn body_and_header_checks_pass_and_fail_exactly() {
    for proto in ["h1", "h2c", "h2c-upgrade", "h3"] {
        let ping = target(proto, "/ping");
        let run = checked(
            proto,
            &ping,
            &[
                "--expect-body-contains",
                "pong",
                "--expect-header",
                "Content-Length: 4",
                "--expect-header",
                "content-length",
            ],
        );
        assert_clean(&run, proto, N);
        assert_eq!(run.int("checks/failed"), 0, "{proto}");

        let run = checked(proto, &ping, &["--expect-body-contains", "pang"]);
        assert_all_failed_checks(
            &run,
            proto,
            "the body does not contain \"pang\" (searched 4 bytes)",
            "status_codes/2xx",
        );

        let run = checked(proto, &ping, &["--expect-header", "content-length: 5"]);
        assert_all_failed_checks(
            &run,
            proto,
            "no header 'content-length: 5'",
            "status_codes/2xx",
        );
    }
}

#[test]
fn a_large_body_is_searched_in_its_first_64_kib_only() {
    // /bytes/N is all 'x': a run of them is found in the first 64 KiB of a 1 MB body...
    let run = checked(
        "h2c",
        &url("/bytes/1000000"),
        &["--expect-body-contains", "xxxxxxxx"],
    );
    assert_clean(&run, "x", N);
    // ...and anything else fails after 64 KiB were searched, however long the body.
    let run = checked(
        "h1",
        &url("/bytes/1000000"),
        &["--expect-body-contains", "y"],
    );
    assert_all_failed_checks(
        &run,
        "y",
        "the body does not contain \"y\" (searched 65536 bytes)",
        "status_codes/2xx",
    );
    assert_eq!(
        run.int("traffic/data_bytes"),
        N * 1_000_000,
        "bodies are read whole"
    );
}

#[test]
fn caddy_over_h2_passes_a_header_check_through_hpack() {
    if !testbed_running() {
        return;
    }
    let caddy = "https://localhost:19843/ping";
    // Go's HPACK encoder Huffman-codes `server: Caddy` and indexes it: from the second response
    // on it arrives as a dynamic table reference.
    let run = checked(
        "h2",
        caddy,
        &[
            "-k",
            "--expect-header",
            "server: Caddy",
            "--expect-header",
            "etag",
        ],
    );
    assert_clean(&run, "caddy", N);
    assert_eq!(run.cell()["protocol"]["negotiated"], "h2");
    let run = checked("h2", caddy, &["-k", "--expect-header", "server: nginx"]);
    assert_all_failed_checks(
        &run,
        "caddy",
        "no header 'server: nginx'",
        "status_codes/2xx",
    );
}

#[test]
fn the_json_example_of_checks_is_a_real_report() {
    use crate::docs::{json_example, key_paths};
    let example = json_example("## With response checks");
    // The command docs/json.md says produced it.
    let run = h2load_rs(&[
        "--h1",
        "-n",
        "1000",
        "--target-path",
        "/status/204",
        "--expect-status",
        "200",
    ]);
    assert_eq!(run.output.code, 1, "{}", run.output.stderr);
    let cell = run.cell();
    let real = serde_json::json!({
        "requests": cell["requests"],
        "status_codes": cell["status_codes"],
        "errors": cell["errors"],
        "checks": cell["checks"],
    });
    let (mut documented, mut found) = (Default::default(), Default::default());
    key_paths(&example, "", &mut documented);
    key_paths(&real, "", &mut found);
    assert_eq!(documented, found);
    assert_eq!(example["checks"], real["checks"], "the counts are exact");
    // A --fail-if on errors counts the failed checks: a breach outranks "no request succeeded".
    let run = checked(
        "h1",
        &url("/status/204"),
        &["--expect-status", "200", "--fail-if", "errors>1%"],
    );
    assert_eq!(run.output.code, 3, "{}", run.output.stderr);
}

#[test]
fn a_scenario_file_sets_the_checks() {
    let dir = tempfile::tempdir().expect("temp dir");
    let scenario = dir.path().join("checks.toml");
    let text = format!(
        "urls = [\"{}\"]\nh1 = true\nrequests = {N}\nexpect-status = [204, \"3xx\"]\n\
         expect-header = [\"content-length\"]\nexpect-body-contains = \"pong\"\n",
        url("/ping")
    );
    std::fs::write(&scenario, text).expect("the scenario is written");
    let run = h2load_rs(&["run", scenario.to_str().expect("a utf-8 path")]);
    assert_all_failed_checks(
        &run,
        "scenario",
        "status 200, expected 204,3xx",
        "status_codes/2xx",
    );
}

#[test]
fn bad_checks_are_usage_errors() {
    for (args, says) in [
        (&["--expect-status", "2000"][..], "--expect-status '2000'"),
        (&["--expect-status", "200,abc"], "--expect-status 'abc'"),
        (&["--expect-status", "6xx"], "--expect-status '6xx'"),
        (&["--expect-header", ": x"], "the header name is empty"),
        (
            &["--expect-header", "bad name: x"],
            "is not a valid header name",
        ),
        (
            &["--expect-body-contains", ""],
            "--expect-body-contains: the string is empty",
        ),
    ] {
        let mut full = args.to_vec();
        full.extend(["-n", "1", "http://127.0.0.1:9/"]);
        assert_usage_error(&full, says);
    }
}
