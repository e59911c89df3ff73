//! The `--rate` (and `--stages`) part of a report: the rate asked for against the one achieved,
//! how late the sends went out, and how full the concurrency was.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::plan::RunPlan;
use crate::recorder::hdr;

/// Scheduling with `--rate`: what was asked, what happened, and how late requests went out.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct RateReport {
    /// Requests per second asked for.
    pub(crate) requested_per_s: f64,
    /// Requests per second completed.
    pub(crate) achieved_per_s: f64,
    /// Requests sent more than 1 ms after their scheduled time.
    pub(crate) late: u64,
    /// `late` as a share of all requests sent, in percent.
    pub(crate) late_pct: f64,
    /// Lateness of the sends: median, 99th percentile and maximum, µs.
    pub(crate) delay_p50_us: u64,
    /// 99th percentile of the lateness.
    pub(crate) delay_p99_us: u64,
    /// Largest lateness.
    pub(crate) delay_max_us: u64,
    /// The lateness of every send, HdrHistogram V2 + deflate, base64 (so runs merge exactly).
    pub(crate) delay_hdr: String,
    /// How full the concurrency was (absent in reports from before this field).
    #[serde(default)]
    pub(crate) in_flight: InFlight,
    /// A timed schedule's (`-D` with `--rate`, `--stages`) send times in the measured period:
    /// `requests.started + missed`. `None` for `-n`, an interrupted run, and older reports.
    #[serde(default)]
    pub(crate) scheduled: Option<u64>,
    /// Send times of the schedule that no request took before it ended: the run could not keep
    /// its schedule (the client was starved, or the server held every connection).
    #[serde(default)]
    pub(crate) missed: u64,
}

/// Requests in flight against the most there can be: a rate falls short for lack of concurrency
/// only when the mean is near the limit.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct InFlight {
    /// Time-weighted mean of the measured requests in flight.
    pub(crate) mean: f64,
    /// The most that can be in flight: connections × streams (after the server's limit).
    pub(crate) limit: u64,
}

impl InFlight {
    /// A mean at or above this share of the limit means the concurrency capped the rate.
    pub(crate) const SATURATED: f64 = 0.8;

    /// Whether the requests in flight stayed near the limit for the run.
    pub(crate) fn saturated(&self) -> bool {
        self.limit > 0 && self.mean >= Self::SATURATED * self.limit as f64
    }
}

/// The rate a paced cell asked for: `--rate`, or a ramp's mean (the requests it offers over its
/// length), against which the achieved rate and the start delays are judged.
pub(crate) fn requested_rate(plan: &RunPlan) -> Option<f64> {
    plan.rate.or_else(|| {
        plan.stages
            .as_ref()
            .map(|stages| stages.total() / stages.duration().as_secs_f64())
    })
}

impl RateReport {
    pub(crate) fn new(
        requested: f64,
        achieved: f64,
        recorder: &crate::recorder::Recorder,
        in_flight: InFlight,
    ) -> RateReport {
        let delay = recorder
            .start_delay
            .as_ref()
            .expect("rate mode keeps start delays");
        RateReport::from_delays(requested, achieved, delay, in_flight)
    }

    /// The figures for a histogram of start delays.
    pub(crate) fn from_delays(
        requested: f64,
        achieved: f64,
        delay: &Histogram<u64>,
        in_flight: InFlight,
    ) -> RateReport {
        let late_after = crate::recorder::LATE_AFTER.as_micros() as u64;
        let late = delay.count_between(late_after + 1, u64::MAX);
        RateReport {
            requested_per_s: requested,
            achieved_per_s: achieved,
            late,
            late_pct: if delay.is_empty() {
                0.0
            } else {
                100.0 * late as f64 / delay.len() as f64
            },
            delay_p50_us: delay.value_at_quantile(0.5),
            delay_p99_us: delay.value_at_quantile(0.99),
            delay_max_us: delay.max(),
            delay_hdr: hdr::to_base64(delay),
            in_flight,
            scheduled: None,
            missed: 0,
        }
    }
}
