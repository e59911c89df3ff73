//! `--stages`: a ramp of rates on the same connections as one cell, against the area under its
//! rate curve (the requests it must send) and the shape of its timeline.

use std::time::Duration;

use serde_json::Value;

use crate::common::{
    assert_schedule_kept, assert_usage_error, h2load_rs, poisson_pair_distance, run_command,
    scheduled_send_times, timer_noise, url, Run,
};

/// Requests completed per second in the first and the last full-length interval of cell `cell`.
fn first_and_last_full_interval_rates(run: &Run, cell: usize) -> (f64, f64) {
    let timeline = &run.json["cells"][cell]["timeline"];
    let length = timeline["interval_s"].as_f64().unwrap();
    let full: Vec<f64> = timeline["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|interval| (interval["length_s"].as_f64().unwrap() - length).abs() < 1e-9)
        .map(|interval| interval["requests_per_s"].as_f64().unwrap())
        .collect();
    assert!(full.len() >= 5, "{} full intervals", full.len());
    (full[0], full[full.len() - 1])
}

fn int(value: &Value) -> u64 {
    value
        .as_u64()
        .unwrap_or_else(|| panic!("{value} is not a count"))
}

#[test]
fn a_ramp_is_one_cell_on_the_same_connections_sending_the_area_under_its_curve() {
    let noise = timer_noise();
    let run = h2load_rs(&[
        "--h1",
        "-c",
        "8",
        "--stages",
        "2s:200,2s:2000",
        &url("/ping"),
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    assert_eq!(run.json["cells"].as_array().unwrap().len(), 1);
    assert_eq!(
        run.json["cells"][0]["cell"]["label"],
        "h1 c=8 m=1 stages=2s:200,2s:2000"
    );
    assert_eq!(
        run.int("connections/opened"),
        8,
        "warm connections, never reopened"
    );
    // 0→200 over 2 s, then 200→2000 over 2 s: 200 + 2200 send times, each sent or missed.
    assert_eq!(run.num("settings/stages/offered"), 2400.0);
    assert_schedule_kept(&run, "2s:200,2s:2000", 2400);
    assert_eq!(run.int("requests/failed"), 0);
    // Judged against the ramp's mean rate, 2400 / 4 s.
    assert_eq!(run.num("rate/requested_per_s"), 600.0);
    let measured = run.num("settings/duration_s");
    assert_eq!(measured, 4.0, "the stages are the measured period");
    // The timeline shows the ramp: from about 10/s to about 1900/s (200 ms intervals), and the
    // first stage's intervals hold its area, 200 (±3%).
    let (first, last) = first_and_last_full_interval_rates(&run, 0);
    assert!(last >= 3.0 * first, "first {first}/s, last {last}/s");
    let intervals = run.json["cells"][0]["timeline"]["intervals"]
        .as_array()
        .unwrap();
    let length = run.num("timeline/interval_s");
    let first_stage: u64 = intervals
        .iter()
        .filter(|interval| (int(&interval["index"]) as f64 + 0.5) * length < 2.0)
        .map(|interval| int(&interval["completed"]))
        .sum();
    // Responses late by the timer noise move into the second stage: at 200/s, 0.2 a
    // millisecond (a widening of at most 50 ms: 10 requests, where the ramp's wrong shapes
    // are hundreds off).
    let widening = noise.widening(Duration::from_millis(50));
    let allowed = 6 + (200.0 * widening.as_secs_f64()).ceil() as u64;
    assert!(
        first_stage.abs_diff(200) <= allowed,
        "{first_stage} in the first stage, 200 ± {allowed} (widened by {widening:?}; {noise})"
    );
}

/// `--arrival poisson` on a ramp: the send times are a Poisson process following the ramp's
/// rate curve (neighbouring gaps in the proportions exponential gaps have), about as many as its
/// area (2,400: a Poisson count, sd 49), each sent or missed; and the uniform ramp's are not.
#[test]
fn a_ramp_with_poisson_arrivals_sends_its_area_with_exponential_gaps() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.tsv");
    let ramp = |arrival: &str| {
        let run = h2load_rs(&[
            "--h1",
            "-c",
            "8",
            "--stages",
            "2s:200,2s:2000",
            "--arrival",
            arrival,
            "--seed",
            "3",
            "--log-file",
            log.to_str().unwrap(),
            &url("/ping"),
        ]);
        assert_eq!(run.output.code, 0, "{}", run.output.stderr);
        // The default, uniform, is left out of the report's settings.
        let named = run.cell()["settings"]["arrival"]
            .as_str()
            .unwrap_or("uniform");
        assert_eq!(named, arrival);
        let scheduled = run.int("rate/scheduled");
        assert_schedule_kept(&run, arrival, scheduled);
        let times = scheduled_send_times(&log);
        assert_eq!(times.len() as u64, run.int("requests/done"));
        (scheduled, poisson_pair_distance(&times))
    };
    let (scheduled, (distance, critical)) = ramp("poisson");
    assert!(
        scheduled.abs_diff(2400) <= 200,
        "{scheduled} send times for an area of 2,400"
    );
    assert!(
        distance < critical,
        "pairs of gaps {distance:.4} from exponential ones (1% critical {critical:.4})"
    );
    let (scheduled, (distance, _)) = ramp("uniform");
    assert_eq!(scheduled, 2400);
    assert!(
        distance > 0.3,
        "uniform send times {distance:.4} from Poisson's"
    );
}

#[test]
fn every_protocol_of_a_list_ramps_in_its_own_cell_with_exact_counts() {
    // 0→100 over 1 s, then 100→300 over 1 s: 50 + 200 requests, on 2 connections of 4 streams.
    let run = h2load_rs(&[
        "--proto",
        "h1,h2c",
        "-c",
        "2",
        "-m",
        "4",
        "--stages",
        "1s:100,1s:300",
        &url("/ping"),
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let cells = run.json["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    for (index, (cell, protocol)) in cells.iter().zip(["h1", "h2c"]).enumerate() {
        assert_eq!(cell["cell"]["protocol"], protocol);
        assert_eq!(
            cell["cell"]["label"],
            format!("{protocol} c=2 m=4 stages=1s:100,1s:300")
        );
        assert_eq!(int(&cell["connections"]["opened"]), 2, "{protocol}");
        let (started, missed) = (
            int(&cell["requests"]["started"]),
            int(&cell["rate"]["missed"]),
        );
        assert_eq!(int(&cell["rate"]["scheduled"]), 250, "{protocol}");
        assert_eq!(
            started + missed,
            250,
            "{protocol}: {started} + {missed} missed"
        );
        assert_eq!(int(&cell["requests"]["succeeded"]), started, "{protocol}");
        let (first, last) = first_and_last_full_interval_rates(&run, index);
        assert!(
            last >= 3.0 * first,
            "{protocol}: first {first}/s, last {last}/s"
        );
    }
}

#[test]
fn a_ramp_starts_from_a_single_rate() {
    // From 100/s to 300/s over 1 s: 200 requests.
    let run = h2load_rs(&[
        "--h1",
        "-c",
        "2",
        "--rate",
        "100",
        "--stages",
        "1s:300",
        &url("/ping"),
    ]);
    assert_schedule_kept(&run, "100,1s:300", 200);
    assert_eq!(run.num("settings/stages/start_rps"), 100.0);
    assert_eq!(run.json["cells"][0]["cell"]["rate"], Value::Null);
    assert_eq!(
        run.json["cells"][0]["cell"]["label"],
        "h1 c=2 m=1 stages=100,1s:300"
    );
}

// Found on main: a schedule the run could not keep lost its tail silently (a ramp of 200 sent
// 177 on a loaded machine, and said nothing); here a server too slow for it makes sure of it.
#[test]
fn a_schedule_the_run_cannot_keep_counts_the_send_times_it_missed() {
    // One connection, 20 ms per response: at most 51 of the schedule's times in 1 s can go.
    let slow = url("/delay/20");
    for (schedule, scheduled) in [
        (&["--rate", "100", "--stages", "1s:300"][..], 200),
        (&["--rate", "100", "-D", "1s"][..], 100),
    ] {
        let mut args = vec!["--h1", "-c", "1"];
        args.extend(schedule);
        args.push(&slow);
        let run = h2load_rs(&args);
        let name = schedule.join(" ");
        assert_schedule_kept(&run, &name, scheduled);
        let started = run.int("requests/started");
        assert!(started <= 51, "{name}: {started} started at 20 ms each");
    }
}

#[test]
fn bad_stages_are_one_line_usage_errors() {
    let good = url("/ping");
    let cases: [(&[&str], &str); 7] = [
        (&["--stages", "2s"], "not a stage"),
        (&["--stages", "2s:-5"], "the rate must be"),
        (&["--stages", "2s:x"], "the rate must be"),
        (&["--stages", "2x:100"], "unknown unit"),
        (&["--stages", "2s:100", "-n", "10"], "cannot be used with"),
        (&["--stages", "2s:100", "-D", "1s"], "cannot be used with"),
        (&["--rate", "1,2", "--stages", "2s:100"], "give one rate"),
    ];
    for (args, needle) in cases {
        let mut full = args.to_vec();
        full.push(&good);
        assert_usage_error(&full, needle);
    }
    let nothing = run_command(
        env!("CARGO_BIN_EXE_h2load-rs"),
        &["--stages", "5s:0", &good],
    );
    assert_eq!(nothing.code, 2);
    assert!(
        nothing.stderr.contains("no request would be sent"),
        "{}",
        nothing.stderr
    );
}
