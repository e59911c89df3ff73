//! A steered run: the capacity search's [`Probe`]. The connections open once when it starts and
//! stay (until [`Probe::renew_connections`] replaces them); each step sets the offered rate on every thread (through a [`Throttle`], one atomic load
//! per request) and measures its part from the workers' published numbers ([`Live`]), taken at
//! the measured part's start and end and subtracted.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::control::{Probe, StepResult};
use super::launch::Launched;
use super::{signals, RunOutcome, Sinks};
use crate::limits::{MAX_RATE, MIN_RATE};
use crate::observe::live::{Live, Snapshot};
use crate::plan::Arrival;
use crate::plan::{RunPlan, DEFAULT_CONNECT_TIMEOUT};
use crate::schedule::pacer::{Offered, Throttle};

/// The timeline's interval when none was asked for: a search lasts minutes, its steps seconds.
const STEERED_INTERVAL: Duration = Duration::from_secs(1);

/// How often the start looks whether every connection is open.
const CONNECTING_POLL: Duration = Duration::from_millis(10);

/// How long a step's edge waits for every worker to publish when asked: a worker that missed
/// the request (it was publishing) publishes on its own within 50 ms anyway.
const PUBLISH_PATIENCE: Duration = Duration::from_millis(100);

/// A run whose rate is set step by step; see [`Probe`]. [`Steered::finish`] ends it.
pub struct Steered {
    launched: Launched,
    throttle: Arc<Throttle>,
    live: Arc<Live>,
    /// `--arrival poisson`: a step's count of send times is itself random.
    poisson: bool,
    /// `-c`: the connections a renewal waits for.
    clients: u64,
    /// How long a renewal waits for them at most: the connect timeout.
    connecting: Duration,
}

/// Starts a steered run of `plan` (its stop rule and rate are replaced by the steps): its
/// connections open now and idle until the first [`Probe::step`].
pub fn steer(plan: Arc<RunPlan>, sinks: Sinks) -> Result<Steered> {
    let mut plan = RunPlan::clone(&plan);
    plan.rate = None;
    plan.stages = None;
    if plan.interval.auto {
        plan.interval.length = STEERED_INTERVAL;
    }
    let mut sinks = sinks;
    let live = sinks
        .live
        .get_or_insert_with(|| Arc::new(Live::new(plan.threads)))
        .clone();
    let throttle = Arc::new(Throttle::new());
    let clients = plan.clients as u64;
    let poisson = plan.arrival == Arrival::Poisson;
    let connecting = plan.timeouts.connect.unwrap_or(DEFAULT_CONNECT_TIMEOUT);
    let launched = Launched::start(Arc::new(plan), sinks, Some(throttle.clone()))?;
    let steered = Steered {
        launched,
        throttle,
        live,
        poisson,
        clients,
        connecting,
    };
    steered.wait_for_connections(clients, connecting);
    Ok(steered)
}

impl Steered {
    /// Ends the run: no more requests are sent, those in flight finish (within the drain
    /// period, as at a timed run's end), and everything measured over all steps is returned.
    pub fn finish(self) -> Result<RunOutcome> {
        self.throttle.set(Offered::Stopped);
        self.launched.finish(true)
    }

    /// Waits until `opened` connections were opened in all (the first step, which measures the
    /// ceiling, must not pay for connecting; nor a round after a renewal), at most `limit`, or
    /// until a signal or the end of every worker (none could connect: the next step says so).
    fn wait_for_connections(&self, opened: u64, limit: Duration) {
        let began = Instant::now();
        // A signal is left for the next step to notice (it ends the search there).
        while self.live.snapshot().tallies.connections_opened < opened
            && !self.live.all_ended()
            && signals::received().is_none()
            && began.elapsed() < limit
        {
            std::thread::sleep(CONNECTING_POLL);
        }
    }

    /// Waits `duration`; `true` if a signal came first.
    fn wait(&self, duration: Duration) -> bool {
        self.launched.controller.block_on(async {
            tokio::select! {
                () = tokio::time::sleep(duration) => false,
                () = signals::requested() => true,
            }
        })
    }
}

impl Probe for Steered {
    fn step(
        &mut self,
        rate: Option<f64>,
        settle: Duration,
        measure: Duration,
    ) -> Result<StepResult> {
        let offered = match rate {
            None => Offered::Unpaced,
            Some(rate) if (MIN_RATE..=MAX_RATE).contains(&rate) => Offered::Paced(rate),
            Some(rate) => {
                bail!("a step's rate must be between {MIN_RATE} and {MAX_RATE}, not {rate}")
            }
        };
        self.throttle.set(offered);
        self.live.set_offered(rate);
        let interrupted = self.wait(settle);
        // From here on, a response to a request sent earlier is the backlog's.
        self.throttle.edge.set(Instant::now());
        let before = self.live.fresh_snapshot(PUBLISH_PATIENCE);
        let began = Instant::now();
        let interrupted = interrupted || self.wait(measure);
        let after = self.live.fresh_snapshot(PUBLISH_PATIENCE);
        let measured = began.elapsed();
        let arrivals = if self.poisson {
            Arrival::Poisson
        } else {
            Arrival::Uniform
        };
        step_result(rate, arrivals, &before, after, measured, interrupted)
    }

    fn renew_connections(&mut self) {
        let opened = self
            .live
            .fresh_snapshot(PUBLISH_PATIENCE)
            .tallies
            .connections_opened;
        self.throttle.renew_connections();
        self.wait_for_connections(opened + self.clients, self.connecting);
    }
}

/// What was finished between the snapshots `before` and `after`, `measured` apart by the
/// controller's clock (the step reports the workers' own span, over which its rate was counted).
fn step_result(
    offered_rps: Option<f64>,
    arrival: Arrival,
    before: &Snapshot,
    after: Snapshot,
    measured: Duration,
    interrupted: bool,
) -> Result<StepResult> {
    let rate = after.rate_since(before, measured);
    let measured = after.span_since(before, measured);
    // The step's figures are its own schedule's: the responses to requests sent before its
    // measured part (by the settling or the step before, a backlog) are counted apart.
    let mut latency = after.request;
    latency
        .subtract(&before.request)
        .context("a later snapshot of the latency histogram holds fewer requests")?;
    let mut backlog = after.backlog;
    backlog
        .subtract(&before.backlog)
        .context("a later snapshot of the backlog histogram holds fewer requests")?;
    latency
        .subtract(&backlog)
        .context("the backlog holds requests the step did not finish")?;
    let backlog = backlog.len();
    let finished = after.done - before.done;
    // Its count is what its own schedule sent: not the requests in flight at its start (the
    // backlog, which finishes in it), so no more than it sent (its own requests still in flight
    // at its end stand in for the backlog's), and no more than its schedule holds over the span
    // (a client running late sends the settling's requests in it).
    let sent = (finished + after.tallies.in_flight).saturating_sub(before.tallies.in_flight);
    // Poisson send times: the part's count is random (sd √(rate × length)); up to 3 sd above the
    // mean are its own, or a lucky step would be cut to the mean and judged below it.
    let count_sd = match (offered_rps, arrival) {
        (Some(rate), Arrival::Poisson) => (rate * measured.as_secs_f64()).sqrt(),
        _ => 0.0,
    };
    let scheduled = offered_rps.map_or(u64::MAX, |rate| {
        (rate * measured.as_secs_f64() + 3.0 * count_sd).ceil() as u64
    });
    let done = finished.min(sent).min(scheduled);
    let achieved_rps = match finished {
        0 => 0.0,
        finished => rate * done as f64 / finished as f64,
    };
    Ok(StepResult {
        offered_rps,
        achieved_rps,
        done,
        failed: (after.failed - before.failed).min(done),
        latency,
        backlog,
        measured,
        count_sd,
        interrupted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::live::{Mark, Tallies};
    use crate::recorder::hdr::new_histogram;

    /// A snapshot of one worker that published at `at` with `done` finished, `in_flight` open
    /// and `backlog` of the finished (at 5 ms each; the others at 1 ms) sent before the step's
    /// measured part.
    fn snapshot(at: Instant, done: u64, in_flight: u64, backlog: u64) -> Snapshot {
        let mut request = new_histogram();
        request.record_n(1_000, done - backlog).unwrap();
        let mut late = new_histogram();
        late.record_n(5_000, backlog).unwrap();
        request.add(&late).unwrap();
        Snapshot {
            done,
            failed: 0,
            errored: 0,
            request,
            backlog: late,
            tallies: Tallies {
                in_flight,
                ..Tallies::default()
            },
            threads: vec![Mark { at: Some(at), done }],
        }
    }

    #[test]
    fn a_step_counts_only_what_its_own_schedule_sent() {
        let start = Instant::now();
        let second = Duration::from_secs(1);
        let result = |before: (u64, u64, u64), after: (u64, u64, u64), rate: Option<f64>| {
            let before = snapshot(start, before.0, before.1, before.2);
            let after = snapshot(start + second, after.0, after.1, after.2);
            let step = step_result(rate, Arrival::Uniform, &before, after, second, false).unwrap();
            (
                step.done,
                step.achieved_rps.round() as u64,
                step.backlog,
                step.latency.max(),
            )
        };
        // 50 requests of the step before were in flight at its start: 120 finished, 70 of them
        // its own (it sent 70 and none is left in flight); only theirs are in its latency.
        assert_eq!(
            result((0, 50, 0), (120, 0, 50), Some(100.0)),
            (70, 70, 50, 1_000)
        );
        // A late client sent the settling's requests in it: at most its 100 count.
        assert_eq!(
            result((0, 0, 0), (130, 0, 0), Some(100.0)),
            (100, 100, 0, 1_000)
        );
        // A queue building up: what finished, below what it sent.
        assert_eq!(
            result((0, 5, 0), (80, 30, 5), Some(100.0)),
            (80, 80, 5, 1_000)
        );
        // Unpaced: no schedule bounds it; a backlog counted before the step is not its own.
        assert_eq!(
            result((10, 0, 10), (140, 0, 10), None),
            (130, 130, 0, 1_000)
        );
    }
}
