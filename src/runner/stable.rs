//! `--until-stable PCT`: a cell measures until the answer is sure enough. Once a second the
//! controller takes the workers' published totals (`observe::live`), and the difference from the
//! last look is a batch: its latency histogram and its count of finished requests. With at least
//! [`confidence::MIN_BATCHES`] batches it computes the 95% intervals of the p99 and of the
//! request rate the way the report does (batch means, `report/confidence.rs`), and when both
//! half-widths are within PCT of their value the run stops as a deadline would stop it. `-n` or
//! `-D` stays the cap; the report says which came first.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::observe::live::Live;
use crate::recorder::hdr::{self, new_histogram};
use crate::recorder::outcome::Stability;
use crate::stats::confidence::{self, Bounds};

/// How often the controller looks: each look closes a batch.
pub(super) const LOOK_EVERY: Duration = Duration::from_secs(1);

/// How long a look waits for every worker to publish.
const PATIENCE: Duration = Duration::from_millis(100);

/// The state of an `--until-stable` run.
pub(super) struct UntilStable {
    /// The largest half-width accepted, as a share of the value (0.05: ±5%).
    target: f64,
    live: Arc<Live>,
    /// The totals at the last look: when, the latency histogram, the requests finished.
    last: Option<(Instant, Histogram<u64>, u64)>,
    /// Each batch: its latency histogram encoded (a few KB, where a histogram is about 180 KB),
    /// its requests finished, its length in seconds. At most [`KEPT_BATCHES`]: neighbours are
    /// joined beyond that, so a long run's memory stays bounded.
    batches: Vec<(Vec<u8>, u64, f64)>,
    /// The totals now.
    whole: Histogram<u64>,
}

/// Batches kept: twice the most the intervals use, so joining pairs keeps them consecutive.
const KEPT_BATCHES: usize = 2 * confidence::MAX_BATCHES;

impl UntilStable {
    /// A run that stops once its p99's and rate's intervals are within `target` (a share).
    pub(super) fn new(target: f64, live: Arc<Live>) -> Self {
        UntilStable {
            target,
            live,
            last: None,
            batches: Vec::new(),
            whole: new_histogram(),
        }
    }

    /// One look at `now`: closes a batch; whether the answer is now sure enough.
    pub(super) fn look(&mut self, now: Instant) -> bool {
        let snapshot = self.live.fresh_snapshot(PATIENCE);
        let done = snapshot.done;
        if let Some((at, before, done_before)) = self.last.take() {
            let mut batch = snapshot.request.clone();
            // Both come from `new_histogram`: the subtraction cannot fail on bounds, and the
            // totals only grow between looks.
            if batch.subtract(&before).is_ok() {
                let length = now.saturating_duration_since(at).as_secs_f64();
                // Batches before the first response (a warm-up, a slow start) say nothing.
                if done > done_before || !self.batches.is_empty() {
                    self.batches.push((
                        hdr::encode(&batch),
                        done.saturating_sub(done_before),
                        length,
                    ));
                }
            }
        }
        if self.batches.len() > KEPT_BATCHES {
            self.join_pairs();
        }
        self.whole = snapshot.request.clone();
        self.last = Some((now, snapshot.request, done));
        self.stability(None).reached
    }

    /// Joins neighbouring batches two by two (the last alone if odd).
    fn join_pairs(&mut self) {
        let mut joined = Vec::with_capacity(self.batches.len() / 2 + 1);
        let mut histogram = new_histogram();
        for pair in self.batches.chunks(2) {
            histogram.reset();
            for (encoded, _, _) in pair {
                // Encoded here from a histogram of the same bounds: it decodes.
                let _ = hdr::add_encoded(&mut histogram, encoded);
            }
            joined.push((
                hdr::encode(&histogram),
                pair.iter().map(|(_, done, _)| done).sum(),
                pair.iter().map(|(_, _, length)| length).sum(),
            ));
        }
        self.batches = joined;
    }

    /// Where the answer stands: the half-widths now, and whether both are within the target;
    /// `stopped_after` is when the run stopped for it, if it did.
    pub(super) fn stability(&self, stopped_after: Option<Duration>) -> Stability {
        let (p99, rate) = self.half_widths();
        Stability {
            target_pct: 100.0 * self.target,
            reached: p99
                .zip(rate)
                .is_some_and(|(p99, rate)| p99 <= self.target && rate <= self.target),
            stopped_after_s: stopped_after.map(|after| after.as_secs_f64()),
            p99_half_width_pct: p99.map(|share| 100.0 * share),
            rate_half_width_pct: rate.map(|share| 100.0 * share),
        }
    }

    /// The p99's and the rate's 95% half-widths as shares of their values (the larger side);
    /// `None` before there are batches enough or, for the p99, samples enough to estimate it
    /// (as the report says `n/e`), or for an interval without an upper end.
    fn half_widths(&self) -> (Option<f64>, Option<f64>) {
        if self.batches.len() < confidence::MIN_BATCHES || self.whole.is_empty() {
            return (None, None);
        }
        let estimable = confidence::estimable(self.whole.len(), 0.99);
        let p99 = self.whole.value_at_quantile(0.99);
        // Each group of batches: its samples and those at or below the p99, its requests
        // finished and its length.
        let mut histogram = new_histogram();
        let mut latency = Vec::new();
        let mut counts = Vec::new();
        for range in confidence::batch_ranges(self.batches.len()) {
            histogram.reset();
            let (mut done, mut length) = (0u64, 0.0);
            for (encoded, finished, seconds) in &self.batches[range] {
                let _ = hdr::add_encoded(&mut histogram, encoded);
                done += finished;
                length += seconds;
            }
            latency.push((
                histogram.len() as f64,
                histogram.count_between(0, p99) as f64,
            ));
            counts.push((done as f64, length));
        }
        let bounds = confidence::quantile_bounds(&self.whole, Some(&latency), 0.99);
        let p99 = p99 as f64;
        let p99_half = bounds
            .ci_high
            .filter(|_| p99 > 0.0 && estimable)
            .map(|high| (high as f64 - p99).max(p99 - bounds.ci_low as f64) / p99);
        let rate_half = confidence::ratio_bounds(&counts).and_then(|(rate, bounds)| {
            let Bounds { ci_low, ci_high } = bounds;
            let high = ci_high?;
            (rate > 0.0).then(|| (high - rate).max(rate - ci_low) / rate)
        });
        (p99_half, rate_half)
    }
}
