//! Steering a run while it goes: a capacity search (`--find-max`) offers one constant rate after
//! another on the same warm connections and reads what each step measured.

use std::time::Duration;

use anyhow::Result;
use hdrhistogram::Histogram;

/// What one step of a steered run measured, over its measured part (after its settling time).
#[derive(Debug, Clone)]
pub struct StepResult {
    /// The rate offered, in requests per second; `None`: as fast as `-c`/`-m` allow (closed loop).
    pub offered_rps: Option<f64>,
    /// `done` per second over the measured part.
    pub achieved_rps: f64,
    /// Requests of the step's own schedule finished in the measured part: those finished, at
    /// most as many as it sent (the requests in flight at its start are the settling's or the
    /// step before's) and as its schedule holds over the part (the offered rate × its length,
    /// rounded up).
    pub done: u64,
    /// Of them, the ones that did not succeed (error statuses and errors), h2load's "failed".
    pub failed: u64,
    /// Responses finished in the measured part to requests sent before it began (by its settling
    /// or the step before): counted apart, not in `latency`.
    pub backlog: u64,
    /// Latency of the responses of its own schedule (not the `backlog`'s) finished in the
    /// measured part, in microseconds, from each request's intended start (so a step the server cannot keep up with shows its queue).
    pub latency: Histogram<u64>,
    /// Length of the measured part, as the workers timed it (the mean of their spans between
    /// their publications at its edges, over which `achieved_rps` is counted).
    pub measured: Duration,
    /// The standard deviation of the number of send times its schedule held over the measured
    /// part: 0 for evenly spaced ones, √(rate × length) for Poisson arrivals, whose count is
    /// random (a step of 30 expected sends holds fewer than 27 one time in four).
    pub(crate) count_sd: f64,
    /// Whether a signal stopped the run during this step (what it measured so far is kept).
    pub interrupted: bool,
}

/// A run whose rate is set step by step; the connections stay open from one step to the next,
/// unless renewed.
pub trait Probe {
    /// Offers `rate` (`None`: no pacing) for `settle`, then measures for `measure`, and returns
    /// what the measured part saw. An error means the run failed and cannot go on.
    fn step(
        &mut self,
        rate: Option<f64>,
        settle: Duration,
        measure: Duration,
    ) -> Result<StepResult>;

    /// Replaces every connection before the next step: each closes once its requests in flight
    /// are answered and a new one opens in its place (`--find-max --rounds`: each round of a
    /// step on fresh connections). A probe without connections of its own has none to renew.
    fn renew_connections(&mut self) {}
}
