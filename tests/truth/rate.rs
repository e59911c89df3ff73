//! `--rate`: the rate achieved and how close to its scheduled time each request starts.

use std::time::Duration;

use crate::common::{assert_schedule_kept, h2load_rs, timer_noise, url, Noise, Run};
use crate::{exclusive, short_of_cpu, shortfall};

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

/// Checks the achieved rate is within `share` (0.005: 0.5 %) of the requested one over
/// `seconds`, plus what the end of the run may lose to the timer noise (the last sends and
/// responses late by it, a widening of at most 10 ms: 0.25 % over 4 s, so a pacer 1 % slow
/// still fails). A client with less than a core may fall short of the schedule only if the run
/// says so: it counted the send times it missed, every one of the schedule's is started or missed,
/// and the shortfall is at most [`shortfall`].
fn assert_rate_kept(run: &Run, requested: f64, share: f64, seconds: f64, noise: &Noise) {
    let achieved = run.num("rate/achieved_per_s");
    let widening = noise.widening(Duration::from_millis(10));
    let tolerance = share + widening.as_secs_f64() / seconds;
    assert_schedule_kept(run, "--rate", (requested * seconds) as u64);
    let slowdown = shortfall(noise, run);
    let floor = requested * (1.0 - tolerance) / slowdown;
    assert!(
        achieved <= requested * (1.0 + tolerance) && achieved >= floor,
        "achieved {achieved} req/s for {requested}, {:.2}% allowed (widened by {widening:?}), \
         floor {floor:.0} (slowdown {slowdown:.2}; {} of {} send times missed; {noise})",
        tolerance * 100.0,
        run.int("rate/missed"),
        run.int("rate/scheduled"),
    );
}

/// The pacing error's p50 bound (µs): 100, plus the timer noise up to 300 µs (a millisecond
/// timer, the defect, gives ~500 µs); none on a machine short of CPU ([`short_of_cpu`]), whose
/// sends wait for the CPU after their timer fires.
fn assert_p50_on_time(run: &Run, noise: &Noise) -> f64 {
    let p50 = run.num("rate/delay_p50_us");
    if short_of_cpu(noise) {
        eprintln!("pacing error p50 {p50} µs not bounded: the machine is short of CPU ({noise})");
        return p50;
    }
    let widening = noise.widening(Duration::from_micros(300));
    assert!(
        p50 <= 100.0 + widening.as_micros() as f64,
        "pacing error p50 {p50} µs (widened by {widening:?}; {noise})"
    );
    p50
}

#[test]
fn one_thousand_per_second_start_on_time() {
    let _machine = exclusive();
    let noise = timer_noise();
    let run = paced("1000", "4", "4s");
    assert_rate_kept(&run, 1000.0, 0.005, 4.0, &noise);
    // The benchmark's idle-machine goals are p50 ≤ 50 µs and p99 ≤ 200 µs. CI machines are shared:
    // p50 gets 2x (a millisecond timer gives ~500 µs, so this still tells them apart); p99 (one
    // request in a hundred meeting another process for a time slice) only catches stalls, and
    // widens by the noise up to 5 ms more; neither is bounded on a machine short of CPU
    // ([`short_of_cpu`]).
    let p50 = assert_p50_on_time(&run, &noise);
    let p99 = run.num("rate/delay_p99_us");
    let widening = noise.widening(Duration::from_millis(5));
    assert!(
        short_of_cpu(&noise) || p99 <= 5000.0 + widening.as_micros() as f64,
        "pacing error p99 {p99} µs (widened by {widening:?}; {noise})"
    );
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
    let noise = timer_noise();
    let run = paced("5000", "8", "3s");
    assert_rate_kept(&run, 5000.0, 0.005, 3.0, &noise);
    assert_p50_on_time(&run, &noise);
}

#[test]
fn the_rate_is_kept_and_spread_evenly() {
    let _machine = exclusive();
    let noise = timer_noise();
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
    assert_rate_kept(&run, 5000.0, 0.01, 5.0, &noise);
    assert_eq!(run.num("rate/requested_per_s"), 5000.0);
    let intervals = run.cell()["timeline"]["intervals"].as_array().unwrap();
    let full_seconds: Vec<u64> = intervals
        .iter()
        .filter(|interval| interval["index"].as_u64().unwrap() < 5)
        .map(|interval| interval["completed"].as_u64().unwrap())
        .collect();
    assert_eq!(full_seconds.len(), 5);
    // ±5%, plus the requests a response late by the noise moves across a second's edge (5000
    // a second: 5 a millisecond, at most 25 ms, so a second 10% off still fails). A run that
    // counted send times it missed may fall short by [`shortfall`], as its rate may; and what
    // the seconds before fell short of the schedule is sent late, so a second may go over by
    // that backlog, never further: the pacer never sends ahead of its schedule (seen beside
    // stress-ng: 5420 in the second after a short one).
    let widening = noise.widening(Duration::from_millis(25));
    let allowed = 250.0 + (5000.0 * widening.as_secs_f64()).ceil();
    let lowest = (5000.0 - allowed) / shortfall(&noise, &run);
    let mut before = 0.0;
    for (second, count) in full_seconds.iter().enumerate() {
        let backlog = (5000.0 * second as f64 - before).max(0.0);
        let highest = 5000.0 + allowed + backlog;
        assert!(
            (lowest..=highest).contains(&(*count as f64)),
            "second {second}: {count} requests, not {lowest:.0}..{highest:.0} (widened by \
             {widening:?}, {backlog:.0} behind the schedule before it; {noise})"
        );
        before += *count as f64;
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

/// The Kolmogorov–Smirnov statistic of `sample` against the exponential distribution of mean
/// `mean`: the largest distance between the two CDFs.
fn ks_exponential(sample: &mut [f64], mean: f64) -> f64 {
    sample.sort_by(f64::total_cmp);
    let n = sample.len() as f64;
    sample
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let cdf = 1.0 - (-x / mean).exp();
            (cdf - i as f64 / n)
                .abs()
                .max(((i + 1) as f64 / n - cdf).abs())
        })
        .fold(0.0, f64::max)
}

/// `--arrival poisson`: the scheduled send times (the log's column 9) of a 10 s run at 1,000/s
/// have exponential gaps (a Kolmogorov–Smirnov test does not reject at 1%), the schedule holds
/// as many send times as a Poisson process of that rate would (within 3 sd: √10,000 = 100), every
/// one of them is started or counted missed, and the rate achieved is within 1% of the
/// schedule's own. The same seed gives the same send times again.
#[test]
fn poisson_arrivals_have_exponential_gaps_and_keep_the_rate() {
    let _machine = exclusive();
    let noise = timer_noise();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.tsv");
    let poisson = |seconds: &str| {
        h2load_rs(&[
            "--h1",
            "-t",
            "1",
            "-c",
            "20",
            "--rate",
            "1000",
            "--arrival",
            "poisson",
            "--seed",
            "7",
            "-D",
            seconds,
            "--log-file",
            log.to_str().unwrap(),
            &url("/ping"),
        ])
    };
    let scheduled_times = || -> Vec<i64> {
        let mut times: Vec<i64> = std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .map(|line| line.split('\t').nth(8).unwrap().parse().unwrap())
            .collect();
        times.sort_unstable();
        times
    };
    let run = poisson("10");
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    assert_eq!(run.cell()["settings"]["arrival"], "poisson");
    assert_eq!(run.int("settings/seed"), 7);
    let scheduled = run.int("rate/scheduled");
    assert_schedule_kept(&run, "--arrival poisson", scheduled);
    assert!(
        (9_700..=10_300).contains(&scheduled),
        "{scheduled} send times in 10 s at 1,000/s"
    );
    let times = scheduled_times();
    assert_eq!(times.len() as u64, run.int("requests/done"));
    let mut gaps: Vec<f64> = times
        .windows(2)
        .map(|pair| (pair[1] - pair[0]) as f64)
        .collect();
    let n = gaps.len() as f64;
    let distance = ks_exponential(&mut gaps, 1000.0);
    // The 1% critical value of the one-sample KS statistic, for large n.
    let critical = 1.628 / n.sqrt();
    eprintln!("poisson arrivals: {scheduled} send times, KS distance {distance:.4} (1% critical {critical:.4}); {noise}");
    assert!(
        distance < critical,
        "KS distance {distance:.4} of {n} gaps against Exp(1 ms): rejected at 1% ({critical:.4})"
    );
    // Evenly spaced send times are far from it: the test can fail.
    let mut even = vec![1000.0; gaps.len()];
    assert!(ks_exponential(&mut even, 1000.0) > 0.5);
    // What was sent kept the schedule's own rate.
    let achieved = run.num("rate/achieved_per_s");
    let own = scheduled as f64 / 10.0;
    let slowdown = shortfall(&noise, &run);
    assert!(
        achieved >= own * 0.99 / slowdown && achieved <= own * 1.01,
        "achieved {achieved:.1}/s against the schedule's {own:.1}/s (slowdown allowed {slowdown:.2}; {noise})"
    );
    // The same seed, the same send times (offsets from the first).
    let first = poisson("1");
    assert_eq!(first.output.code, 0, "{}", first.output.stderr);
    let again = scheduled_times();
    let offsets = |times: &[i64]| -> Vec<i64> { times.iter().map(|t| t - times[0]).collect() };
    let (before, now) = (offsets(&times), offsets(&again));
    let same = before
        .iter()
        .zip(&now)
        .take_while(|(a, b)| (*a - *b).abs() <= 2)
        .count();
    assert!(
        same + 1 >= now.len(),
        "the same seed drew other send times: {same} of {} agree",
        now.len()
    );
}
