//! Seed 002 at full size: 16,000 connections, 100,000 requests, a 1 s handler.

use std::time::Duration;

use crate::common::h2load_rs;

#[test]
fn sixteen_thousand_connections_against_a_one_second_handler() {
    let run = h2load_rs(&[
        "--h1",
        "-c",
        "16000",
        "-n",
        "100000",
        "-t",
        "2",
        "--target-path",
        "/delay/1000",
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    assert_eq!(run.int("requests/succeeded"), 100_000);
    assert_eq!(run.int("requests/errored"), 0);
    assert_eq!(run.int("connections/opened"), 16_000);
    // 100,000 / 16,000 ≈ 7 waves of 1 s when connection setup does not serialize.
    let elapsed = run.num("elapsed_s");
    assert!((6.0..20.0).contains(&elapsed), "took {elapsed} s");
    assert!(run.output.wall < Duration::from_secs(40));
    eprintln!(
        "16,000 connections: {elapsed:.2} s measured, connect p99 {} ms, target peak RSS {} MB",
        run.int("latency/connect/percentiles/p99") / 1000,
        run.int("watched/0/rss_peak_kb") / 1024
    );
}
