//! `--rate`: the rate achieved and how close to its scheduled time each request starts.

use crate::common::{h2load_rs, url, Run};
use crate::exclusive;

/// Runs `--rate rate -c clients` on one thread for `seconds` against `/ping`.
fn paced(rate: &str, clients: &str, seconds: &str) -> Run {
    let run = h2load_rs(&[
        "--h1",
        "-t",
        "1",
        "-c",
        clients,
        "--rate",
        rate,
        "-D",
        seconds,
        &url("/ping"),
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    assert_eq!(run.int("requests/failed"), 0);
    run
}

/// Checks the achieved rate is within 0.5 % of the requested one.
fn assert_rate_kept(run: &Run, requested: f64) {
    let achieved = run.num("rate/achieved_per_s");
    assert!(
        (achieved / requested - 1.0).abs() <= 0.005,
        "achieved {achieved} req/s for {requested}"
    );
}

#[test]
fn one_thousand_per_second_start_on_time() {
    let _machine = exclusive();
    let run = paced("1000", "4", "4s");
    assert_rate_kept(&run, 1000.0);
    // The benchmark's idle-machine goals are p50 ≤ 50 µs and p99 ≤ 200 µs. CI machines are shared:
    // p50 gets 2x (a millisecond timer gives ~500 µs, so this still tells them apart); p99 (one
    // request in a hundred meeting another process for a time slice) only catches stalls.
    let p50 = run.num("rate/delay_p50_us");
    let p99 = run.num("rate/delay_p99_us");
    assert!(p50 <= 100.0, "pacing error p50 {p50} µs");
    assert!(p99 <= 5000.0, "pacing error p99 {p99} µs");
    // The text says the same, beside the CPU that precision costs.
    let line = run
        .output
        .stdout
        .lines()
        .find(|line| line.starts_with("rate: "))
        .unwrap_or_else(|| panic!("no rate line:\n{}", run.output.stdout));
    assert!(
        line.contains(&format!("start delay p50 {p50}us / p99 ")),
        "{line}"
    );
    let cpu = run.num("generator_cpu_percent");
    assert!(
        line.contains(&format!("(generator CPU {cpu:.0}%)")),
        "{line}"
    );
}

#[test]
fn five_thousand_per_second_on_one_thread_keep_the_rate() {
    let _machine = exclusive();
    let run = paced("5000", "8", "3s");
    assert_rate_kept(&run, 5000.0);
    let p50 = run.num("rate/delay_p50_us");
    assert!(p50 <= 100.0, "pacing error p50 {p50} µs");
}

#[test]
fn the_rate_is_kept_and_spread_evenly() {
    let _machine = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let timeline_csv = dir.path().join("timeline.csv");
    let run = h2load_rs(&[
        "--h1",
        "-c",
        "20",
        "--rate",
        "5000",
        "-D",
        "5s",
        "--interval",
        "1s",
        &url("/ping"),
        "--csv-timeline",
        timeline_csv.to_str().unwrap(),
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let achieved = run.num("rate/achieved_per_s");
    assert!(
        (4950.0..=5050.0).contains(&achieved),
        "achieved {achieved} req/s"
    );
    assert_eq!(run.num("rate/requested_per_s"), 5000.0);
    let intervals = run.cell()["timeline"]["intervals"].as_array().unwrap();
    let full_seconds: Vec<u64> = intervals
        .iter()
        .filter(|interval| interval["index"].as_u64().unwrap() < 5)
        .map(|interval| interval["completed"].as_u64().unwrap())
        .collect();
    assert_eq!(full_seconds.len(), 5);
    for (second, count) in full_seconds.iter().enumerate() {
        assert!(
            (4750..=5250).contains(count),
            "second {second}: {count} requests"
        );
    }
    let csv = std::fs::read_to_string(&timeline_csv).unwrap();
    let csv_counts: Vec<u64> = csv
        .lines()
        .skip(1)
        .take(5)
        .map(|line| line.split(',').nth(4).unwrap().parse().unwrap())
        .collect();
    assert_eq!(
        csv_counts, full_seconds,
        "the CSV timeline matches the JSON"
    );
}
