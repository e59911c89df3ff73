//! The steered run the capacity search drives: steps on the same warm connections, measured
//! against the built-in target's known delay and a closed-loop run of the same connections.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use h2load_rs::testkit::runner::{self, steer, Probe, Sinks, StepResult};
use h2load_rs::testkit::server::{spawn_background, Behaviour, ServeOptions};
use h2load_rs::testkit::{first_plan, RunPlan};

use crate::common::timer_noise;

/// The target's delay: every response waits this long.
const DELAY: Duration = Duration::from_millis(10);

/// A built-in target whose every response waits [`DELAY`].
fn delayed_target() -> SocketAddr {
    let options = ServeOptions {
        behaviour: Behaviour {
            delay: Some(DELAY),
            ..Behaviour::default()
        },
        ..ServeOptions::default()
    };
    spawn_background(2, options).expect("the delayed target starts")
}

/// The plan of the only cell of `args`.
fn plan_of(args: &[&str]) -> Arc<RunPlan> {
    let words = std::iter::once("h2load-rs").chain(args.iter().copied());
    Arc::new(first_plan(words).expect("the plan builds"))
}

fn p50_ms(step: &StepResult) -> f64 {
    step.latency.value_at_quantile(0.5) as f64 / 1000.0
}

#[test]
fn steps_on_warm_connections_measure_the_offered_rate_and_the_closed_loop_capacity() {
    let noise = timer_noise();
    let url = format!("http://{}/", delayed_target());
    // The truth for the unpaced step: the same 10 connections in a closed loop.
    let closed = runner::run(
        plan_of(&["--h1", "-c", "10", "-D", "2s", &url]),
        Sinks::default(),
    )
    .expect("the closed-loop run works");
    let closed_rps = closed.recorder.counters.done as f64 / closed.elapsed.as_secs_f64();
    // 10 connections × 1 request per (10 ms + overhead): below 1000/s, and every connection
    // busy (Little's law, as for the unpaced step below). Not "not far below 1000/s": the
    // overhead is the machine's, 666/s with the 16,000-connection test beside it.
    let closed_busy = closed_rps * closed.recorder.request.mean() / 1e6;
    assert!(
        closed_rps < 1000.0 && (9.5..=10.1).contains(&closed_busy),
        "closed loop: {closed_rps:.0} req/s, {closed_busy:.2} connections busy"
    );

    let mut steered = steer(plan_of(&["--h1", "-c", "10", &url]), Sinks::default())
        .expect("the steered run starts");
    let settle = Duration::from_secs(1);
    let measure = Duration::from_secs(3);
    let paced = steered.step(Some(200.0), settle, measure).unwrap();
    let unpaced = steered.step(None, settle, measure).unwrap();
    let outcome = steered.finish().expect("the steered run ends");
    // Ten seconds after the first measure, the machine's load may be another (a paced p50 of
    // 13.35 ms beside a build started meanwhile, against 13.18 allowed by the noise before).
    let noise = noise.worse(timer_noise());

    // A paced step achieves its rate (±3%) with the target's latency (10 ms + a little),
    // widened by the timer noise: responses late by it move across the step's two edges (at
    // 200/s over 3 s, 0.13 req/s a millisecond; at most 22 ms: +3 req/s), and each latency
    // holds one late wake-up (at most 3 ms). The 3 ms of client and target work around the
    // delay stretch by the measured CPU slowdown (at most 2x: +3 ms), so the highest p50 is
    // 19 ms, under the 20 ms of a delay applied twice (seen: 16.64 ms at a CPU share of 0.27).
    assert!(!paced.interrupted && !unpaced.interrupted);
    assert_eq!(paced.offered_rps, Some(200.0));
    let (rate_widening, latency_widening) = (
        noise.widening(Duration::from_millis(22)),
        noise.widening(Duration::from_millis(3)),
    );
    let allowed = 6.0 + 2.0 * 200.0 * rate_widening.as_secs_f64() / 3.0;
    assert!(
        (paced.achieved_rps - 200.0).abs() <= allowed,
        "paced step: {:.1} req/s, 200 ± {allowed:.1} (widened by {rate_widening:?}; {noise})",
        paced.achieved_rps
    );
    let starved_ms = 3.0 * (noise.slowdown(2.0) - 1.0);
    let highest = 13.0 + latency_widening.as_secs_f64() * 1000.0 + starved_ms;
    assert!(
        (10.0..=highest).contains(&p50_ms(&paced)),
        "paced p50 {:.2} ms, at most {highest:.2} (widened by {latency_widening:?} and \
         {starved_ms:.2} ms of CPU starvation; {noise})",
        p50_ms(&paced)
    );
    assert_eq!(paced.failed, 0);
    let measured = paced.measured.as_secs_f64();
    assert!((measured - 3.0).abs() < 0.05, "measured for {measured}s");

    // The unpaced step is a closed loop: never above 10 connections / 10 ms, and by Little's law
    // its rate times its mean latency is the 10 connections, each always busy but for the
    // client's turn from a response to the next request (and a request or so per connection at
    // the step's edges). Not the closed-loop run's rate, which is the truth only while the
    // machine's load stays the same: seconds apart, with the 16,000-connection test beside it,
    // the step got 0.74 of it; the step's own latency was measured at the same time as its
    // rate (9.99–10.01 connections busy with both cores busy).
    assert_eq!(unpaced.offered_rps, None);
    assert!(unpaced.achieved_rps <= 1000.0 * 1.01);
    let busy = unpaced.achieved_rps * unpaced.latency.mean() / 1e6;
    assert!(
        (9.5..=10.1).contains(&busy),
        "unpaced {:.0} req/s over a mean {:.0} µs is {busy:.2} connections busy \
         (closed loop {closed_rps:.0} req/s)",
        unpaced.achieved_rps,
        unpaced.latency.mean()
    );
    assert!(
        p50_ms(&unpaced) >= 10.0,
        "unpaced p50 {:.2} ms",
        p50_ms(&unpaced)
    );

    // One set of connections for the whole run; it counts the steps plus the settling: 1 s at
    // 200/s and 1 s unpaced. The unpaced settling second runs at whatever rate the machine's
    // load of that second allows, which under the full suite differs from the measured seconds'
    // by more than any measured noise predicts (seen: 16% under, and 36% under at a CPU share
    // of 0.97 measured before the run, on CI). What the check is for is the two wrong answers,
    // a settling not counted (0 outside the steps) or counted twice (2x): ±50% stays half-way
    // from both.
    assert_eq!(outcome.recorder.connections_opened, 10);
    assert!(!outcome.interrupted);
    let total = outcome.recorder.counters.done;
    let settling = total as f64 - (paced.done + unpaced.done) as f64;
    let expected = 200.0 + unpaced.achieved_rps;
    let allowed = 0.5 * expected;
    assert!(
        (settling - expected).abs() <= allowed,
        "{total} requests in all: {settling} outside the steps, {expected:.0} ± {allowed:.0} \
         expected ({noise})"
    );
    assert_eq!(outcome.recorder.counters.failed, 0);
}

/// A step's latency holds only the requests its own schedule sent: the requests an overloaded
/// step left in flight finish in the next step, each late by the queue it waited in, and are
/// counted apart (`backlog`), not in that step's percentiles.
#[test]
fn a_lighter_step_after_an_overloaded_one_does_not_carry_its_backlog() {
    // 200 ms a response on 2 connections: 10 requests/s at most.
    let delay = Duration::from_millis(200);
    let options = ServeOptions {
        behaviour: Behaviour {
            delay: Some(delay),
            ..Behaviour::default()
        },
        ..ServeOptions::default()
    };
    let target = spawn_background(1, options).expect("the delayed target starts");
    let url = format!("http://{target}/");
    let mut steered = steer(plan_of(&["--h1", "-c", "2", &url]), Sinks::default())
        .expect("the steered run starts");
    // 100/s for 1.5 s: the queue grows, so the last requests sent went ~1.3 s after their time.
    let overloaded = steered
        .step(Some(100.0), Duration::ZERO, Duration::from_millis(1500))
        .unwrap();
    // The 2 requests in flight when it ends finish 200 ms into the next step, past its 20 ms
    // settling: in its measured part.
    let settle = Duration::from_millis(20);
    let lighter = steered
        .step(Some(2.0), settle, Duration::from_millis(800))
        .unwrap();
    steered.finish().expect("the steered run ends");
    assert!(!overloaded.interrupted && !lighter.interrupted);
    assert!(
        overloaded.latency.max() > 1_000_000,
        "the overloaded step built no queue: max {} us",
        overloaded.latency.max()
    );
    // Every request of the lighter step's own schedule was due in it (settling included) and
    // finished in its measured part: none waited longer than the step (+ the edges' patience).
    let longest = settle + lighter.measured + Duration::from_millis(100);
    assert!(
        lighter.latency.max() <= longest.as_micros() as u64,
        "the lighter step carries the backlog: max {} us over a {longest:?} step, p99 {} us",
        lighter.latency.max(),
        lighter.latency.value_at_quantile(0.99)
    );
    // Exactly the 2 requests in flight at its start were the backlog.
    assert_eq!(lighter.backlog, 2, "{lighter:?}");
}
