//! Closed-loop throughput: c connections each waiting 10 ms per response make c × 100 req/s.

use crate::common::{h2load_rs, url};
use crate::exclusive;

/// Runs `-c clients` for 2 s against a 10 ms handler and checks ≈ clients × 100 req/s.
fn ten_millisecond_handlers(clients: u32) {
    let _machine = exclusive();
    let run = h2load_rs(&[
        "--h1",
        "-c",
        &clients.to_string(),
        "-D",
        "2s",
        &url("/delay/10"),
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let ideal = f64::from(clients) * 100.0;
    let rate = run.num("requests_per_s");
    // Each request takes 10 ms plus the loopback round trip and wake-ups (≈ 0.1–0.3 ms): 3 %
    // below the ideal at most, never above it.
    assert!(
        rate <= ideal * 1.001 && rate >= ideal * 0.97,
        "{rate} req/s with {clients} connections (ideal {ideal})"
    );
}

#[test]
fn one_connection_makes_one_hundred_per_second() {
    ten_millisecond_handlers(1);
}

#[test]
fn four_connections_make_four_hundred_per_second() {
    ten_millisecond_handlers(4);
}

#[test]
fn sixteen_connections_make_sixteen_hundred_per_second() {
    ten_millisecond_handlers(16);
}
