//! Latency against a fixed server delay: what h2load-rs reports is the delay plus loopback costs.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;

use h2load_rs::testkit::server::{spawn_background, AppliedDelays, Behaviour, ServeOptions};

use crate::common::{h2load_rs, target, timer_noise, url, Run};
use crate::{exclusive, short_of_cpu, starved};

/// What the client adds at p50 (µs, debug builds): to the target's answer before it has read the
/// response (one wake-up and a parse), and, with loopback and the target's HTTP stack, to a
/// handler's delay in the service time. The goal on an idle machine is 300 µs; on a shared 2-core
/// machine (load 3–6 from other builds) every wake-up can wait for a CPU: the first came out
/// 0.2–0.4 ms, the second 0.3–0.7 ms over. 1 ms still fails a millisecond timer (tokio's sleep
/// was 1.1–1.7 ms late on the same machine).
const OVERHEAD_US: f64 = 1000.0;
/// How late after the target's answer the client may see a response's end at p99 (µs), beyond
/// how late the target's own timer woke at p99: that one wake-up meets other processes' time
/// slices. On the shared 2-core machine at load 2–4 it was 0.3–4.6 ms in 17 runs while the
/// target's timer was up to 3 ms late; with busy loops on both cores 2–38 ms, the target's timer
/// 0.5–45 ms (a flat 3 ms, the old bound on the whole round trip, failed both). 5 ms leaves room
/// for one more slice and still fails a client that reads responses a timer tick late.
const CI_P99_LATE_US: f64 = 5000.0;

/// A latency figure (µs) of the run: `histogram` is request, service, connect or ttfb.
fn latency(run: &Run, histogram: &str, which: &str) -> f64 {
    run.num(&format!("latency/{histogram}/{which}"))
}

/// Runs one connection closed-loop against `/delay/MS` on a target of its own, which keeps when
/// it read each request, how long it slept and when it answered, and pairs them with the client's
/// per-request log (the report's min, p50 and p99 are the log's). The truth is what the target
/// did, not the nominal delay: under load its timer and its read of the request are late too
/// (6 ms at p99 with both cores busy), which is latency the request really had. So: the target
/// slept at least the delay, the client measured at least the target's handling of every
/// request, and saw the end at most [`OVERHEAD_US`] after the answer at p50 and
/// [`CI_P99_LATE_US`] at p99, beyond how late the target's timer woke at the same percentile. One connection: several would get their responses at the same
/// instant every round and wait for each other's processing, which is a queue, not the latency
/// under test.
fn fixed_delay(millis: u64, requests: &str) {
    let _machine = exclusive();
    let noise = timer_noise();
    let applied = Arc::new(AppliedDelays::default());
    let options = ServeOptions {
        behaviour: Behaviour {
            applied: Some(applied.clone()),
            ..Behaviour::default()
        },
        ..ServeOptions::default()
    };
    let addr = spawn_background(2, options).expect("built-in target starts");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.tsv");
    let run = h2load_rs(&[
        "--h1",
        "-c",
        "1",
        "-n",
        requests,
        "--log-file",
        log.to_str().unwrap(),
        &format!("http://{addr}/delay/{millis}"),
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let count = requests.parse::<usize>().unwrap();
    assert_eq!(run.int("requests/succeeded"), count as u64);
    // The log's columns 1 and 3: when each request was sent (µs since the epoch) and how long
    // until its last byte came, in the connection's order, as the target's record.
    let logged: Vec<(f64, f64)> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|line| {
            let columns: Vec<&str> = line.split('\t').collect();
            (columns[0].parse().unwrap(), columns[2].parse().unwrap())
        })
        .collect();
    let served = applied.taken();
    assert_eq!((logged.len(), served.len()), (count, count));
    let epoch_us = |time: std::time::SystemTime| {
        time.duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_micros() as f64
    };
    let delay = millis as f64 * 1000.0;
    // Per request: what the client measured beyond the target's handling (which holds the
    // target's late timer), and how late after the target's answer the client saw the end (both
    // clocks are the system's wall clock; the log converts the client's monotonic times at one
    // instant, which drifts by microseconds over a run).
    let mut added = Vec::with_capacity(count);
    let mut late = Vec::with_capacity(count);
    for ((sent, took), served) in logged.iter().zip(&served) {
        assert!(served.slept.as_micros() as f64 >= delay, "{served:?}");
        let handled = epoch_us(served.answered) - epoch_us(served.received);
        added.push(took - handled);
        late.push(sent + took - epoch_us(served.answered));
    }
    for values in [&mut added, &mut late] {
        values.sort_by(f64::total_cmp);
    }
    assert!(
        added[0] >= 0.0,
        "the client measured {} µs less than the target's handling",
        -added[0]
    );
    // The client's read of the response is one wake-up, as the target's timer expiry is: under
    // load both wait for a CPU, so the client's lateness is held to the target's, percentile by
    // percentile, plus the client's own allowance.
    let mut woke_late: Vec<f64> = served
        .iter()
        .map(|served| served.slept.as_micros() as f64 - delay)
        .collect();
    woke_late.sort_by(f64::total_cmp);
    // The p99 allowance also widens by the machine's timer noise, up to 5 ms more (one more
    // time slice); the p50 one does not: a millisecond late there is the defect.
    let widening = noise.widening(std::time::Duration::from_millis(5));
    let p99_allowance = CI_P99_LATE_US + widening.as_micros() as f64;
    for (percent, allowance) in [(50, OVERHEAD_US), (99, p99_allowance)] {
        let client = at_percentile(&late, percent);
        let target = at_percentile(&woke_late, percent);
        assert!(
            client <= allowance + target,
            "the client saw the end {client} µs after the answer at p{percent}, the target's \
             timer woke {target} µs late (p99 widened by {widening:?}; {noise})"
        );
    }
    let measured: Vec<f64> = logged.iter().map(|(_, took)| *took).collect();
    // What the report says is what the log holds (within the histogram's 0.1% buckets and a
    // rank either way, as quantile conventions differ).
    let mut sorted = measured;
    sorted.sort_by(f64::total_cmp);
    let min = latency(&run, "request", "min");
    assert!(
        (min - sorted[0]).abs() <= 0.001 * min,
        "min {min} µs, the log's {}",
        sorted[0]
    );
    for percent in [50, 99] {
        let name = format!("p{percent}");
        let reported = latency(&run, "request", &format!("percentiles/{name}"));
        let rank = percentile_rank(count, percent);
        let low = sorted[rank.saturating_sub(2)] * 0.999;
        let high = sorted[rank.min(count - 1)] * 1.001;
        assert!(
            (low..=high).contains(&reported),
            "{name} {reported} µs, the log's {low}..{high} µs"
        );
    }
}

/// The value at `percent` of `sorted`: the smallest that at least that share is at or below.
fn at_percentile(sorted: &[f64], percent: usize) -> f64 {
    sorted[percentile_rank(sorted.len(), percent).max(1) - 1]
}

/// The 1-based rank of the `percent` percentile of `count` values, in integers (a float share
/// times the count can land an ulp above a whole rank and round up past it).
fn percentile_rank(count: usize, percent: usize) -> usize {
    (count * percent).div_ceil(100)
}

#[test]
fn one_millisecond_handlers_measure_one_millisecond() {
    fixed_delay(1, "1000");
}

#[test]
fn ten_millisecond_handlers_measure_ten_milliseconds() {
    fixed_delay(10, "200");
}

#[test]
fn fifty_millisecond_handlers_measure_fifty_milliseconds() {
    // 100, not fewer: with fewer samples p99 is the maximum, and one wake-up preempted for a
    // time slice would decide it.
    fixed_delay(50, "100");
}

#[test]
fn the_target_applies_sub_millisecond_delays_and_says_so() {
    let _machine = exclusive();
    for (path, wanted) in [("/delay/0.25", 250), ("/delay/1.5", 1500)] {
        // The best of three: one wake-up of a virtual machine can be late by a time slice, which
        // says nothing of the timer; three late ones in a row do.
        let applied = (0..3).map(|_| applied_delay(path)).min().unwrap();
        // Never short; late only by the wake-up (200 µs allows for a busy CI machine).
        assert!(
            (wanted..wanted + 200).contains(&applied),
            "{path}: applied {applied} µs"
        );
    }
}

/// The delay the target says it applied (`x-delay-applied-us`) to one request for `path`.
fn applied_delay(path: &str) -> u64 {
    let mut stream = TcpStream::connect(target()).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
        .lines()
        .find_map(|line| line.strip_prefix("x-delay-applied-us: "))
        .unwrap_or_else(|| panic!("no x-delay-applied-us in {response}"))
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn under_rate_response_minus_service_time_is_the_pacing_error() {
    let _machine = exclusive();
    let noise = timer_noise();
    let run = h2load_rs(&[
        "--h1",
        "-c",
        "4",
        "--rate",
        "1000",
        "-D",
        "3s",
        &url("/delay/1"),
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let response = latency(&run, "request", "percentiles/p50");
    let service = latency(&run, "service", "percentiles/p50");
    let pacing = run.num("rate/delay_p50_us");
    // Percentiles of a sum are not sums of percentiles; with a steady 1 ms handler they agree
    // within tens of µs. A starved run ([`starved`]) has no steady handler: the sum's p50
    // then lies within the service time's spread (max − min) of the parts' sum, which is the
    // tolerance, capped at half the pacing error so that a response time that leaves the pacing
    // error out (the defect: response = service) still fails. A machine short of CPU (slowdown
    // over 1.25) makes the handler unsteady even when the schedule is kept (seen: 1769 − 1428
    // µs against a pacing p50 of 80 µs at a CPU share of 0.5): there the percentiles say
    // nothing, and the means below carry the check.
    let starved = starved(&noise, &run);
    let spread = match starved {
        true => {
            (latency(&run, "service", "max") - latency(&run, "service", "min")).min(pacing / 2.0)
        }
        false => 0.0,
    };
    assert!(
        short_of_cpu(&noise) || (response - service - pacing).abs() <= 50.0 + spread,
        "response p50 {response} − service p50 {service} vs pacing error p50 {pacing} (µs), \
         widened by {spread} µs ({noise})"
    );
    // Means do add up, request by request and under any load: response = start delay +
    // service. Each mean is read from 0.1% buckets (the start delay's from its histogram).
    let delay_mean = run
        .cell()
        .pointer("/rate/delay_hdr")
        .and_then(serde_json::Value::as_str)
        .map(h2load_rs::testkit::hdr::from_base64)
        .expect("a start delay histogram")
        .unwrap()
        .mean();
    let (response_mean, service_mean) = (
        latency(&run, "request", "mean"),
        latency(&run, "service", "mean"),
    );
    let buckets = 0.002 * response_mean + 2.0;
    assert!(
        (response_mean - service_mean - delay_mean).abs() <= buckets,
        "response mean {response_mean} − service mean {service_mean} vs start delay mean \
         {delay_mean} (µs), within {buckets:.1} ({noise})"
    );
    // Widened by the noise up to 300 µs (a millisecond timer, the defect, is ~500 µs late); not
    // bounded on a machine short of CPU ([`short_of_cpu`]): its sends wait for the CPU.
    let widening = noise
        .widening(std::time::Duration::from_micros(300))
        .as_micros() as f64;
    if short_of_cpu(&noise) {
        eprintln!(
            "pacing error p50 {pacing} µs not bounded: the machine is short of CPU ({noise})"
        );
    }
    assert!(
        short_of_cpu(&noise) || pacing <= 100.0 + widening,
        "pacing error p50 {pacing} µs (widened by {widening} µs; {noise})"
    );
    // The client's overhead stretches by the measured slowdown, at most twice (2 ms over: a
    // service time that holds the pacing error, milliseconds to seconds when starved, fails).
    let overhead = OVERHEAD_US * noise.slowdown(2.0);
    assert!(
        (1000.0..=1000.0 + overhead).contains(&service),
        "service p50 {service} µs, at most {overhead} µs over ({noise})"
    );
}
