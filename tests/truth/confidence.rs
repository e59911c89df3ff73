//! The 95% intervals against a known truth. The built-in target's `/exp/MS` draws each delay from
//! an exponential distribution of mean MS, whose quantiles are known: −MS·ln(1 − p). A response
//! takes that delay plus what both ends add, about a millisecond at 2,000 requests a second in
//! debug builds, and that drifts from run to run. So the coverage test's truth is the quantile
//! of all its short runs together (merged exactly), the distribution each of them samples, and
//! its delays are long (mean 20 ms) so that a p50 interval (±1 ms) is wide against the drift;
//! the `--until-stable` test adds the overhead it measures (its p50 beyond the exponential's) to
//! the exponential's p99.

use h2load_rs::testkit::server::{spawn_background, ServeOptions};

use crate::common::{h2load_rs, run_command, timer_noise, Run};
use crate::{exclusive, short_of_cpu};

/// The mean delay of the coverage runs, ms: at 10 ms (4,000 requests a second over 40
/// connections) what both ends add drifted by as much as a p50 interval is wide, and only 85–91
/// of 100 p50 intervals covered the pooled truth.
const COVERAGE_MEAN_MS: f64 = 20.0;
/// The mean delay of the `--until-stable` runs, ms.
const STABLE_MEAN_MS: f64 = 10.0;
/// Short runs for the coverage, each independent of the others.
const RUNS: usize = 100;
/// Requests of a short run, and of a long one (four times as many).
const SHORT: u64 = 2_000;
const LONG: u64 = 8_000;
/// Long runs, to compare their intervals' widths with the short runs'.
const LONG_RUNS: usize = 10;
/// Connections: at 20 ms a request, about 2,000 requests a second.
const CLIENTS: &str = "40";
/// At most this much of what both ends add to a delay is added to the truth: beyond it the
/// target is not serving the distribution configured.
const OVERHEAD_CAP_US: f64 = 3_000.0;

/// The `quantile` of an exponential of mean `mean_ms`, µs.
fn exponential(mean_ms: f64, quantile: f64) -> f64 {
    -mean_ms * 1000.0 * (1.0 - quantile).ln()
}

/// How wide, µs, the 95% interval of `quantile` would be from `n` independent samples of the
/// exponential of mean `mean_ms`: ±1.96 binomial standard deviations of its share, over the
/// density there, (1 − quantile) / mean.
fn independent_width(mean_ms: f64, quantile: f64, n: u64) -> f64 {
    let share_sd = (quantile * (1.0 - quantile) / n as f64).sqrt();
    2.0 * 1.96 * share_sd * mean_ms * 1000.0 / (1.0 - quantile)
}

/// A run of `requests` against `/exp/20` on the target at `addr`.
fn run(addr: std::net::SocketAddr, requests: u64) -> Run {
    let run = h2load_rs(&[
        "--h1",
        "-c",
        CLIENTS,
        "-n",
        &requests.to_string(),
        &format!("http://{addr}/exp/{COVERAGE_MEAN_MS}"),
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    assert_eq!(run.int("requests/succeeded"), requests);
    run
}

/// The interval of `label` in `run` (µs): low, and high (`None`: open).
fn bounds(run: &Run, label: &str) -> (f64, Option<f64>) {
    let at = &run.cell()["latency"]["request"]["confidence"][label];
    (
        at["ci_low"].as_f64().expect("a lower end"),
        at["ci_high"].as_f64(),
    )
}

#[test]
fn intervals_cover_the_true_percentiles_and_narrow_as_the_run_grows() {
    let _machine = exclusive();
    let noise = timer_noise();
    let addr = spawn_background(2, ServeOptions::default()).expect("built-in target starts");
    // Each short run's interval, and its report kept for the truth.
    let dir = tempfile::tempdir().unwrap();
    let mut intervals = Vec::new();
    let mut reports = Vec::new();
    for index in 0..RUNS {
        let run = run(addr, SHORT);
        assert_eq!(
            run.cell()["latency"]["request"]["confidence"]["method"],
            "batch_means",
            "a run of 20 intervals measures its dependence"
        );
        intervals.push([bounds(&run, "p50"), bounds(&run, "p99")]);
        let path = dir.path().join(format!("run-{index}.json"));
        std::fs::write(&path, serde_json::to_vec(&run.json).unwrap()).unwrap();
        reports.push(path.to_str().unwrap().to_owned());
    }
    // The truth: the quantiles of the distribution a short run samples, read from all of them
    // together (h2load-rs merge adds their histograms exactly: 200,000 samples, so its own error
    // is a tenth of a run's). Not the configured exponential's: at 4,000 requests a second both
    // debug-built ends add about a millisecond to each delay, as much as a p50 interval is wide
    // (0 of 100 runs covered the bare exponential's p50); nor one long run's: a short run's
    // start-up is a larger part of it, and its p50 sat above a 50-times-longer run's in 15 of
    // 100 runs.
    let merged = dir.path().join("merged.json");
    let mut args = vec!["merge", "--json", merged.to_str().unwrap()];
    args.extend(reports.iter().map(String::as_str));
    let output = run_command(env!("CARGO_BIN_EXE_h2load-rs"), &args);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let merged: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    let pooled = |label: &str| {
        merged["cells"][0]["latency"]["request"]["percentiles"][label]
            .as_f64()
            .unwrap()
    };
    assert_eq!(
        merged["cells"][0]["requests"]["succeeded"].as_u64(),
        Some(RUNS as u64 * SHORT)
    );
    eprintln!(
        "confidence truth: pooled p50 {:.0} µs, p99 {:.0} µs (the exponential's: {:.0} and {:.0}); {noise}",
        pooled("p50"),
        pooled("p99"),
        exponential(COVERAGE_MEAN_MS, 0.5),
        exponential(COVERAGE_MEAN_MS, 0.99)
    );
    let quantiles = ["p50", "p99"];
    let truth = |label: &str| pooled(label);
    let mut covered = [0usize; 2];
    let mut open = [0usize; 2];
    let mut widths = [0f64; 2];
    let mut misses = Vec::new();
    for run in &intervals {
        for (i, label) in quantiles.iter().enumerate() {
            let (low, high) = run[i];
            // An open end: the run cannot bound it (counted; it covers what lies above `low`).
            let high = high.unwrap_or_else(|| {
                open[i] += 1;
                f64::INFINITY
            });
            if high.is_finite() {
                widths[i] += high - low;
            }
            if (low..=high).contains(&truth(label)) {
                covered[i] += 1;
            } else {
                misses.push(format!("{label} {low:.0}–{high:.0}"));
            }
        }
    }
    eprintln!(
        "confidence truth: p50 covered in {} of {RUNS} runs, p99 in {} (truths {:.0} and {:.0} µs); \
         open: {open:?}; missed: {misses:?}",
        covered[0],
        covered[1],
        truth("p50"),
        truth("p99")
    );
    for i in 0..2 {
        widths[i] /= (RUNS - open[i]).max(1) as f64;
    }
    // A p99 of 2,000 samples has 20 above it: its interval is bounded but for a rare run whose
    // batches spread widely.
    assert!(
        open[0] == 0 && open[1] <= RUNS / 10,
        "open intervals: {open:?}"
    );
    // 95% intervals: at least 90 of 100 cover (95 expected, sd 2.2; seen: p50 95, 97; p99 97–99).
    // Their upper limit, 99 of 100, cannot be held to with 100 runs (an interval of exactly 99%
    // covers all 100 in a third of the tests); what over-wide intervals would show is their
    // width, held below 1.6 times what independent samples give (seen: 1.15 and 1.24; the batch
    // means see the closed loop's dependence), and above 0.8 times (narrower would be a
    // precision the run does not have).
    // On a machine short of CPU (measured before and after the runs), what both ends add to a
    // delay drifts from run to run by more than a p50 interval is wide: beside `stress-ng --cpu
    // 2`, 4.7 ms added on average, and 70 of 100 p50 intervals covered the pooled p50 while 98
    // p99 intervals covered theirs. The p50's coverage is then not asserted (said on stderr);
    // the p99's, which is wide against that drift, and both widths still are.
    let after = timer_noise();
    let starved = short_of_cpu(&noise) || short_of_cpu(&after);
    for (i, label) in quantiles.iter().enumerate() {
        let quantile = [0.5, 0.99][i];
        let independent = independent_width(COVERAGE_MEAN_MS, quantile, SHORT);
        let ratio = widths[i] / independent;
        eprintln!(
            "confidence truth: {label} covered in {} of {RUNS}; mean width {:.0} µs, {ratio:.2} times \
             independent samples' {independent:.0} µs",
            covered[i], widths[i]
        );
        if starved && *label == "p50" {
            eprintln!(
                "confidence truth: p50 coverage not asserted on a machine short of CPU ({noise}; \
                 after the runs: {after})"
            );
        } else {
            assert!(
                covered[i] >= 90,
                "{label}: {} of {RUNS} intervals covered the truth; {noise}; after: {after}",
                covered[i]
            );
        }
        assert!(
            (0.8..=1.6).contains(&ratio),
            "{label}: mean width {:.0} µs is {ratio:.2} times independent samples' {independent:.0} µs",
            widths[i]
        );
    }
    // Four times the samples: about half the width (the rank interval shrinks as 1/√n).
    let mut long_widths = [0f64; 2];
    for _ in 0..LONG_RUNS {
        let run = run(addr, LONG);
        for (i, label) in quantiles.iter().enumerate() {
            let (low, high) = bounds(&run, label);
            long_widths[i] += (high.expect("bounded") - low) / LONG_RUNS as f64;
        }
    }
    for (i, label) in quantiles.iter().enumerate() {
        let ratio = long_widths[i] / widths[i];
        eprintln!(
            "confidence truth: {label} width {:.0} µs at {SHORT} requests, {:.0} µs at {LONG}: ratio {ratio:.2}",
            widths[i], long_widths[i]
        );
        // The drift of a starved machine widens a long p50 interval as it does a short one's
        // miss (beside `stress-ng --cpu 2`: ratio 0.72): not asserted there, said on stderr.
        if starved && *label == "p50" {
            eprintln!("confidence truth: p50 width ratio not asserted on a machine short of CPU");
            continue;
        }
        assert!(
            (0.35..=0.7).contains(&ratio),
            "{label}: widths {:.0} and {:.0} µs, ratio {ratio:.2}",
            widths[i],
            long_widths[i]
        );
    }
}

/// `--until-stable 5%` against exponential delays of mean 10 ms: the run stops once the p99's and
/// the rate's intervals are within ±5% (well before its 60 s cap: a p99 within ±5% needs about
/// 7,000 samples, 2–3 s at this rate), its own report's p99 interval is about that narrow and
/// holds the true p99; with a target it cannot reach in 3 s, the cap ends the run and the report
/// says so.
#[test]
fn until_stable_stops_when_the_p99_is_sure_enough_and_says_when_the_cap_came_first() {
    let _machine = exclusive();
    let noise = timer_noise();
    let addr = spawn_background(2, ServeOptions::default()).expect("built-in target starts");
    let stable = |target: &str, cap: &str| {
        let run = h2load_rs(&[
            "--h1",
            "-c",
            "50",
            "-D",
            cap,
            "--until-stable",
            target,
            &format!("http://{addr}/exp/{STABLE_MEAN_MS}"),
        ]);
        assert_eq!(run.output.code, 0, "{}", run.output.stderr);
        run
    };
    let run = stable("5%", "60s");
    let until = &run.cell()["until_stable"];
    // What both ends add to each delay at this load, measured: the run's p50 beyond the
    // exponential's (at most OVERHEAD_CAP_US), added to the exponential's p99.
    let p50 = run.num("latency/request/percentiles/p50");
    let added = (p50 - exponential(STABLE_MEAN_MS, 0.5)).clamp(0.0, OVERHEAD_CAP_US);
    let true_p99 = exponential(STABLE_MEAN_MS, 0.99) + added;
    eprintln!("until stable: {until}; true p99 {true_p99:.0} µs ({added:.0} µs added); {noise}");
    assert_eq!(until["reached"], true, "{until}");
    let after = until["stopped_after_s"]
        .as_f64()
        .expect("stopped by --until-stable");
    assert!((5.0..30.0).contains(&after), "stopped after {after} s");
    assert!(run.num("elapsed_s") < 40.0);
    for field in ["p99_half_width_pct", "rate_half_width_pct"] {
        let half = until[field].as_f64().unwrap();
        assert!(half <= 5.0, "{field} {half}");
    }
    assert!(
        run.output
            .stdout
            .contains("until stable (±5.0%): reached after"),
        "{}",
        run.output.stdout
    );
    // The report's own interval, from its timeline: about as narrow, and right.
    let p99 = run.num("latency/request/percentiles/p99");
    let (low, high) = bounds(&run, "p99");
    let high = high.expect("bounded");
    assert!(
        (high - low) / 2.0 <= 0.08 * p99,
        "p99 {p99} µs, interval {low}–{high}"
    );
    // The truth adds what both ends add at the median; on a machine short of CPU their tail adds
    // more (beside `stress-ng --cpu 2`: the interval 51.1–56.3 ms against 49.1 ms so made), so
    // the containment is asserted only where the CPU is to spare (said on stderr otherwise).
    if short_of_cpu(&noise) {
        eprintln!(
            "until stable: the true p99's containment not asserted on a machine short of CPU"
        );
    } else {
        assert!(
            (low..=high).contains(&true_p99),
            "true p99 {true_p99:.0} µs outside {low}–{high}"
        );
    }
    // A target no 3 s run reaches: the cap comes first, and the report says so.
    let capped = stable("0.1%", "3s");
    let until = &capped.cell()["until_stable"];
    assert_eq!(until["reached"], false, "{until}");
    assert!(until["stopped_after_s"].is_null(), "{until}");
    assert!(
        capped.output.stdout.contains("not reached; the cap"),
        "{}",
        capped.output.stdout
    );
}
