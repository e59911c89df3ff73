//! Event timing against a known schedule: the built-in target's `/sse/N/GAP_MS` sends its k-th
//! event k × GAP_MS after the response head, on timerfd deadlines that do not drift. On every
//! protocol, at 2 and at 1,000 concurrent streams, the measured gaps have the schedule's median,
//! and the time to first event is the time to the head plus one gap; the counts are exact. The
//! tolerance is what one read and one timer wake-up may add (a client's read of an event meets
//! the same time slices as the target's timer), widened by the timer noise measured before the
//! run, capped, and printed on failure.

use std::time::Duration;

use crate::common::{h2load_rs, timer_noise, Noise, Run, TargetProcess};
use crate::exclusive;

const CA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/certs/ca.crt");

/// What one read and one wake-up may add to an event's arrival at p50 (µs, debug builds): the
/// target's write, the loopback, the client's wake-up and parse. Under 1 ms on the shared 2-core
/// machine; a client that read events a timer tick (1 ms) late fails it.
const P50_SLACK_US: f64 = 1000.0;

/// The cap on the noise widening: one more scheduler time slice.
const NOISE_CAP: Duration = Duration::from_millis(4);

/// The cap on what the target's measured load may widen the tolerance by.
const LOAD_CAP: Duration = Duration::from_millis(5);

fn micros(run: &Run, path: &str) -> f64 {
    run.num(path)
}

/// Runs `args` over `proto` against `path` on `target`.
fn run(target: &TargetProcess, proto: &str, args: &[&str], path: &str) -> Run {
    let url = format!("{}{path}", target.base);
    let mut full = vec!["--proto", proto];
    if target.base.starts_with("https") {
        full.extend(["--cacert", CA]);
    }
    full.extend(args);
    full.push(&url);
    h2load_rs(&full)
}

/// Checks a run of `streams` streams of `events` events `gap` apart: exact counts, the gaps'
/// median, and the first event one gap after the head, within [`P50_SLACK_US`] widened by the
/// timer noise and by `load_us`, what the target's load was measured to add.
fn assert_on_schedule(
    run: &Run,
    name: &str,
    streams: u64,
    events: u64,
    gap: Duration,
    noise: &Noise,
    load_us: f64,
) {
    assert_eq!(run.output.code, 0, "{name}: {}", run.output.stderr);
    assert_eq!(run.int("requests/succeeded"), streams, "{name}");
    assert_eq!(run.int("events/streams"), streams, "{name}");
    assert_eq!(run.int("events/events"), streams * events, "{name}");
    assert_eq!(run.int("latency/first_event/count"), streams, "{name}");
    assert_eq!(
        run.int("latency/event_gap/count"),
        streams * (events - 1),
        "{name}"
    );
    let slack = P50_SLACK_US + noise.widening(NOISE_CAP).as_micros() as f64 + load_us;
    let gap_us = gap.as_micros() as f64;
    let median_gap = micros(run, "latency/event_gap/percentiles/p50");
    assert!(
        (median_gap - gap_us).abs() <= slack,
        "{name}: the median gap was {median_gap} µs, the schedule's {gap_us} µs, ± {slack} µs \
         ({noise:?})"
    );
    // The first event leaves one gap after the head, which the time to first byte measures.
    let first = micros(run, "latency/first_event/percentiles/p50");
    let head = micros(run, "latency/ttfb/percentiles/p50");
    assert!(
        (first - head - gap_us).abs() <= slack,
        "{name}: the first event came {first} µs after the send, the head {head} µs: {} µs \
         apart, the schedule's {gap_us} µs, ± {slack} µs ({noise:?})",
        first - head
    );
}

#[test]
fn event_gaps_and_the_first_event_match_the_schedule_on_every_protocol() {
    let _machine = exclusive();
    let cleartext = TargetProcess::start(&[], &[]);
    let tls = TargetProcess::start(&[], &["--tls"]);
    let gap = Duration::from_millis(5);
    for (proto, target) in [
        ("h1", &cleartext),
        ("h2c", &cleartext),
        ("h2", &tls),
        ("h3", &tls),
    ] {
        let noise = timer_noise();
        let run = run(target, proto, &["-c", "2", "-n", "10"], "/sse/20/5/8");
        assert_eq!(run.int("events/data_bytes"), 10 * 20 * 8, "{proto}");
        assert_on_schedule(&run, proto, 10, 20, gap, &noise, 0.0);
    }
}

#[test]
fn a_thousand_concurrent_streams_keep_the_schedule() {
    let _machine = exclusive();
    let cleartext = TargetProcess::start(&[], &[]);
    let tls = TargetProcess::start(&[], &["--tls"]);
    // 1,000 streams open at once, 10 connections of 100, each getting 4 events 250 ms apart:
    // subscribers arriving over the first 500 ms (`--rate 2000`), as they do, so the target
    // sends a steady 4,000 events a second rather than bursts of 1,000 at one instant (which
    // debug builds take tens of ms to write and read: the truth would be their lateness, and
    // HTTP/3's debug build is 80% busy on one thread even at this rate).
    let gap = Duration::from_millis(250);
    for (proto, target) in [("h2c", &cleartext), ("h3", &tls)] {
        let noise = timer_noise();
        let run = run(
            target,
            proto,
            &["-c", "10", "-m", "100", "-n", "1000", "--rate", "2000"],
            "/sse/4/250/8",
        );
        assert_eq!(
            run.num("protocol/max_concurrent_streams_effective"),
            100.0,
            "{proto}: {}",
            run.output.stdout
        );
        // What the load adds to the target's answers: its heads' median lateness over the
        // quickest, at most LOAD_CAP.
        let load_us = (micros(&run, "latency/ttfb/percentiles/p50")
            - micros(&run, "latency/ttfb/min"))
        .clamp(0.0, LOAD_CAP.as_micros() as f64);
        let name = format!("{proto} at 1,000 streams (the load adds {load_us} µs)");
        assert_on_schedule(&run, &name, 1000, 4, gap, &noise, load_us);
    }
}
