//! gRPC against two independent real servers of the test bed (`tests/grpc-target/`): grpc-go and
//! Python's grpcio, each over h2c and TLS. Every count is exact: calls by `grpc-status`, messages
//! and their bytes (known from the protobuf encoding of known messages), HTTP/2 DATA bytes.

use serde_json::Value;

use crate::common::{h2load_rs, Run};
use crate::testbed::testbed_running;

const CA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/certs/ca.crt");
const PROBE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/grpc-target/proto/probe.proto"
);
const HELLO: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/grpc-target/proto/helloworld.proto"
);
const UNARY: &str = "/h2loadrs.probe.Probe/Unary";

/// A gRPC server of the test bed: a name for messages, its URL and the flags it needs.
struct Target {
    name: &'static str,
    url: &'static str,
    tls: bool,
}

const TARGETS: [Target; 4] = [
    Target {
        name: "grpc-go h2c",
        url: "http://127.0.0.1:19085",
        tls: false,
    },
    Target {
        name: "grpc-go TLS",
        url: "https://127.0.0.1:19445",
        tls: true,
    },
    Target {
        name: "grpcio h2c",
        url: "http://127.0.0.1:19087",
        tls: false,
    },
    Target {
        name: "grpcio TLS",
        url: "https://127.0.0.1:19447",
        tls: true,
    },
];

/// Runs `args` against `target` (with its CA for TLS).
fn call(target: &Target, args: &[&str]) -> Run {
    let mut full: Vec<&str> = args.to_vec();
    if target.tls {
        full.extend(["--cacert", CA]);
    }
    full.push(target.url);
    h2load_rs(&full)
}

fn int(cell: &Value, path: &str) -> u64 {
    cell.pointer(path)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{path} missing: {cell}"))
}

/// The `grpc.statuses` of a cell, as (name, count) pairs.
fn statuses(cell: &Value) -> Vec<(String, u64)> {
    cell["grpc"]["statuses"]
        .as_object()
        .map(|map| {
            map.iter()
                .map(|(name, count)| (name.clone(), count.as_u64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default()
}

fn only(name: &str, count: u64) -> Vec<(String, u64)> {
    vec![(name.to_owned(), count)]
}

#[test]
fn unary_calls_count_exactly_on_both_servers_over_h2c_and_tls() {
    if !testbed_running() {
        return;
    }
    const N: u64 = 1000;
    // Req{name:"x", size:100}: 0a 01 'x', 28 64 → 5 bytes.
    const SENT: u64 = 5;
    // Resp{message:"Hello x", payload: 100 × 'x'}: 0a 07 "Hello x" (9), 12 64 + 100 (102).
    const RECEIVED: u64 = 111;
    for target in &TARGETS {
        let n = N.to_string();
        let run = call(
            target,
            &[
                "--grpc",
                UNARY,
                "--grpc-proto",
                PROBE,
                "--grpc-data",
                r#"{"name":"x","size":100}"#,
                "-n",
                &n,
                "-c",
                "4",
                "-m",
                "10",
            ],
        );
        let cell = run.cell();
        let name = target.name;
        assert_eq!(run.output.code, 0, "{name}: {}", run.output.stderr);
        assert_eq!(int(cell, "/requests/succeeded"), N, "{name}");
        assert_eq!(statuses(cell), only("OK", N), "{name}");
        for (side, per_call) in [("sent", SENT), ("received", RECEIVED)] {
            assert_eq!(
                int(cell, &format!("/grpc/{side}/messages")),
                N,
                "{name} {side}"
            );
            assert_eq!(
                int(cell, &format!("/grpc/{side}/message_bytes")),
                N * per_call,
                "{name} {side}"
            );
            assert_eq!(
                int(cell, &format!("/grpc/{side}/prefix_bytes")),
                N * 5,
                "{name} {side}"
            );
        }
        // Every DATA byte received is a message's or a prefix's.
        assert_eq!(
            int(cell, "/traffic/data_bytes"),
            N * (RECEIVED + 5),
            "{name}"
        );
        let protocol = if target.tls { "h2" } else { "h2c" };
        assert_eq!(cell["protocol"]["negotiated"], protocol, "{name}");
    }
}

#[test]
fn every_status_code_is_counted_by_its_name() {
    if !testbed_running() {
        return;
    }
    const NAMES: [&str; 17] = [
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    ];
    for target in TARGETS.iter().filter(|target| !target.tls) {
        for (code, name) in NAMES.iter().enumerate().skip(1) {
            let data = format!(r#"{{"code":{code}}}"#);
            let run = call(
                target,
                &[
                    "--grpc",
                    UNARY,
                    "--grpc-proto",
                    PROBE,
                    "--grpc-data",
                    &data,
                    "-n",
                    "20",
                    "-c",
                    "1",
                    "-m",
                    "4",
                ],
            );
            let cell = run.cell();
            let what = format!("{} code {code}", target.name);
            // Not OK: every call failed, none errored (each got its status), exit 1.
            assert_eq!(run.output.code, 1, "{what}: {}", run.output.stderr);
            assert_eq!(statuses(cell), only(name, 20), "{what}");
            assert_eq!(int(cell, "/requests/failed"), 20, "{what}");
            assert_eq!(int(cell, "/requests/errored"), 0, "{what}");
            assert!(
                run.output
                    .stdout
                    .contains(&format!("grpc status: 20 {name} ")),
                "{what}: {}",
                run.output.stdout
            );
        }
    }
}

#[test]
fn expect_status_takes_grpc_codes() {
    if !testbed_running() {
        return;
    }
    let target = &TARGETS[0];
    let base = [
        "--grpc",
        UNARY,
        "--grpc-proto",
        PROBE,
        "--grpc-data",
        r#"{"code":5}"#,
        "-n",
        "30",
    ];
    let accepted = call(
        target,
        &[&base[..], &["--expect-status", "NOT_FOUND,OK"]].concat(),
    );
    assert_eq!(accepted.output.code, 0, "{}", accepted.output.stderr);
    assert_eq!(int(accepted.cell(), "/requests/succeeded"), 30);
    assert_eq!(statuses(accepted.cell()), only("NOT_FOUND", 30));

    let refused = call(target, &[&base[..], &["--expect-status", "0"]].concat());
    assert_eq!(int(refused.cell(), "/requests/succeeded"), 0);
    assert_eq!(int(refused.cell(), "/checks/failed"), 30);
    assert_eq!(
        refused.cell()["checks"]["first_mismatch"],
        "grpc-status NOT_FOUND, expected OK"
    );
}

#[test]
fn a_server_side_deadline_ends_each_call_at_its_grpc_timeout() {
    if !testbed_running() {
        return;
    }
    for target in TARGETS.iter().filter(|target| !target.tls) {
        // The server sleeps 2 s; the deadline it is given is 200 ms.
        let run = call(
            target,
            &[
                "--grpc",
                UNARY,
                "--grpc-proto",
                PROBE,
                "--grpc-data",
                r#"{"delay_ms":2000}"#,
                "-H",
                "grpc-timeout: 200m",
                "-n",
                "8",
                "-c",
                "1",
                "-m",
                "8",
            ],
        );
        let cell = run.cell();
        let name = target.name;
        assert_eq!(int(cell, "/requests/failed"), 8, "{name}");
        // The server ends the call with DEADLINE_EXCEEDED, or (grpc-go, when its timer wins)
        // resets the stream with CANCEL: either way each call ends by the server's deadline.
        let deadline = statuses(cell)
            .iter()
            .find(|(status, _)| status == "DEADLINE_EXCEEDED")
            .map_or(0, |(_, count)| *count);
        let reset = cell["stream_reset_codes"]["CANCEL"].as_u64().unwrap_or(0);
        assert_eq!(deadline + reset, 8, "{name}: {cell}");
        let max_ms = run.num("latency/request/max") / 1000.0;
        let min_ms = run.num("latency/request/min") / 1000.0;
        assert!(min_ms >= 200.0, "{name}: a call ended after {min_ms} ms");
        assert!(
            max_ms < 2000.0,
            "{name}: a call took {max_ms} ms: the deadline was not kept"
        );
    }
}

#[test]
fn templated_json_is_encoded_per_call() {
    if !testbed_running() {
        return;
    }
    const N: u64 = 200;
    // Req{name: "<seq>"}: 0a, length, the digits. Resp{message: "Hello <seq>"}: 0a, length, 6 + digits.
    let digits: u64 = (1..=N).map(|seq| seq.to_string().len() as u64).sum();
    for target in &TARGETS {
        let run = call(
            target,
            &[
                "--grpc",
                UNARY,
                "--grpc-proto",
                PROBE,
                "--grpc-data",
                r#"{"name":"{seq}"}"#,
                "-n",
                "200",
                "-c",
                "2",
                "-m",
                "5",
            ],
        );
        let cell = run.cell();
        let name = target.name;
        assert_eq!(statuses(cell), only("OK", N), "{name}");
        assert_eq!(
            int(cell, "/grpc/sent/message_bytes"),
            2 * N + digits,
            "{name}"
        );
        assert_eq!(
            int(cell, "/grpc/received/message_bytes"),
            8 * N + digits,
            "{name}"
        );
    }
}

#[test]
fn a_binary_message_needs_no_schema_and_greeter_answers_it() {
    if !testbed_running() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hello.bin");
    // HelloRequest{name: "bin"}.
    std::fs::write(&file, [0x0a, 3, b'b', b'i', b'n']).unwrap();
    for target in &TARGETS {
        let run = call(
            target,
            &[
                "--grpc",
                "helloworld.Greeter.SayHello",
                "--grpc-binary-file",
                file.to_str().unwrap(),
                "-n",
                "100",
                "-c",
                "2",
            ],
        );
        let cell = run.cell();
        let name = target.name;
        assert_eq!(statuses(cell), only("OK", 100), "{name}");
        assert_eq!(int(cell, "/grpc/sent/message_bytes"), 500, "{name}");
        // HelloReply{message: "Hello bin"}: 0a 09 + 9.
        assert_eq!(int(cell, "/grpc/received/message_bytes"), 1100, "{name}");
        // The same call from JSON and the .proto gives the same bytes.
        let json = call(
            target,
            &[
                "--grpc",
                "/helloworld.Greeter/SayHello",
                "--grpc-proto",
                HELLO,
                "--grpc-data",
                r#"{"name":"bin"}"#,
                "-n",
                "100",
            ],
        );
        assert_eq!(int(json.cell(), "/grpc/sent/message_bytes"), 500, "{name}");
        assert_eq!(
            int(json.cell(), "/grpc/received/message_bytes"),
            1100,
            "{name}"
        );
    }
}

#[test]
fn an_unknown_method_is_unimplemented() {
    if !testbed_running() {
        return;
    }
    for target in &TARGETS {
        let run = call(target, &["--grpc", "/no.Such/Method", "-n", "10"]);
        assert_eq!(run.output.code, 1, "{}", target.name);
        assert_eq!(
            statuses(run.cell()),
            only("UNIMPLEMENTED", 10),
            "{}",
            target.name
        );
    }
}

#[test]
fn the_servers_stream_limit_caps_m_and_the_report_says_so() {
    if !testbed_running() {
        return;
    }
    // grpc-go with MaxConcurrentStreams(8): -m 20 runs 8 calls at once on the connection.
    let capped = Target {
        name: "grpc-go capped",
        url: "http://127.0.0.1:19086",
        tls: false,
    };
    let run = call(
        &capped,
        &[
            "--grpc",
            UNARY,
            "--grpc-proto",
            PROBE,
            "--grpc-data",
            r#"{"delay_ms":20}"#,
            "-n",
            "200",
            "-c",
            "1",
            "-m",
            "20",
        ],
    );
    let cell = run.cell();
    assert_eq!(statuses(cell), only("OK", 200));
    assert_eq!(int(cell, "/protocol/max_concurrent_streams_effective"), 8);
    assert!(
        run.output.stdout.contains("8 concurrent streams"),
        "{}",
        run.output.stdout
    );
}

#[test]
fn a_sweep_compares_h2_with_h2c_on_one_service() {
    if !testbed_running() {
        return;
    }
    let run = h2load_rs(&[
        "--grpc",
        UNARY,
        "--proto",
        "h2,h2c",
        "-n",
        "300",
        "-c",
        "2",
        "-m",
        "4",
        "--cacert",
        CA,
        "https://127.0.0.1:19445",
        "http://127.0.0.1:19085",
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    for (index, protocol) in ["h2", "h2c"].iter().enumerate() {
        let cell = &run.json["cells"][index];
        assert_eq!(cell["protocol"]["negotiated"], *protocol);
        assert_eq!(statuses(cell), only("OK", 300), "{protocol}");
    }
    assert!(
        run.output.stdout.contains("comparison of 2 cells"),
        "{}",
        run.output.stdout
    );
    assert!(
        run.output.stdout.contains("h2c/h2 = "),
        "{}",
        run.output.stdout
    );
}
