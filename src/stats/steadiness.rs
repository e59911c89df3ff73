//! Whether a run was steady: a figure measured over a run that was still changing (a server
//! warming its caches, a queue building up, a JIT, autoscaling) describes no single state, and
//! its confidence interval hides that. Two checks over the timeline's intervals:
//!
//! - **Trend**: the Mann–Kendall test of the per-interval request rates and p99s (a rank test:
//!   no assumption about their distribution), with Sen's slope for its size. A trend counts when
//!   p < [`ALPHA`] and the slope moves the figure by at least [`SIZE_PCT`] of its median over
//!   the run, so a long run does not flag a trivial drift. The first interval, where the
//!   connections open, is left out of both series (the next check reads it).
//! - **A first part unlike the rest**: the first [`HEAD_SHARE`] of the intervals against the
//!   others (a two-sided Mann–Whitney test, same two conditions): the warm-up effect, for which
//!   the report suggests `--warm-up-time`.
//!
//! Neither needs many intervals, but under [`MIN_INTERVALS`], or over a measured period under
//! [`MIN_PERIOD_S`], nothing is said. Both tests assume
//! independent intervals: periodic stalls make neighbours alike, which neither reads as a trend
//! (a stall pattern has no direction), but a slow oscillation of a few periods can; the sentence
//! says what was seen, not why.

use serde::{Deserialize, Serialize};

use super::timeline::{interval_length, last_index, Timeline};
use super::two_samples::{mann_whitney, normal_sf};

/// A p-value below this is more than chance.
const ALPHA: f64 = 0.01;
/// The smallest change, in percent of the figure's median, that counts.
const SIZE_PCT: f64 = 10.0;
/// The share of the intervals that makes the first part.
const HEAD_SHARE: f64 = 0.2;
/// Fewer intervals than this and nothing is said.
pub(crate) const MIN_INTERVALS: usize = 10;
/// A measured period shorter than this, seconds, and nothing is said: its intervals (10 ms in a
/// 0.2 s run) are short enough for one scheduler hiccup or a neighbour's burst to make a "trend"
/// (a 1,000-request h2c run was flagged as rising 29%, p = 0.002, on a machine running other
/// tests), and such a run is too short to describe a state anyway.
const MIN_PERIOD_S: f64 = 1.0;
/// The most intervals read (a report claiming an absurd length must not fill memory).
const MAX_INTERVALS: u64 = 100_000;
/// The longest series tested: Mann–Kendall compares every pair (Sen's slope keeps each), so a
/// longer timeline (`--interval 1ms` over minutes) is first joined into this many groups.
const MAX_SERIES: usize = 400;

/// What the steadiness checks found.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub(crate) struct Steadiness {
    /// Neither figure trended, and the first part was like the rest.
    pub(crate) steady: bool,
    /// The request rate's trend over the run, percent of its median (Sen's slope × the run's
    /// length), and its Mann–Kendall p-value.
    pub(crate) rate_trend_pct: f64,
    /// Its p-value.
    pub(crate) rate_trend_p: f64,
    /// The p99's trend over the run, percent of its median, over the intervals with responses.
    pub(crate) p99_trend_pct: f64,
    /// Its p-value.
    pub(crate) p99_trend_p: f64,
    /// When the first part differed from the rest: where it ends, seconds after the start of
    /// the measured period (`null`: it did not).
    pub(crate) warm_up_until_s: Option<f64>,
}

impl Steadiness {
    /// The checks of `timeline`; `None` under [`MIN_INTERVALS`] intervals or [`MIN_PERIOD_S`].
    pub(crate) fn of(timeline: &Timeline) -> Option<Steadiness> {
        if timeline.interval_s <= 0.0 || timeline.end_s < MIN_PERIOD_S {
            return None;
        }
        let last = last_index(timeline.end_s, timeline.interval_s);
        if last >= MAX_INTERVALS || (last as usize) + 1 < MIN_INTERVALS {
            return None;
        }
        // Every interval's rate, an empty one 0; the p99s of those with responses.
        let mut rates = vec![0.0; last as usize + 1];
        let mut p99s = Vec::new();
        for interval in &timeline.intervals {
            let index = interval.index as usize;
            if let Some(rate) = rates.get_mut(index) {
                let length = interval_length(interval.index, timeline.interval_s, timeline.end_s);
                *rate = if length > 0.0 {
                    interval.completed as f64 / length
                } else {
                    0.0
                };
            }
            // The first interval holds the connections' opening (connects, first requests):
            // the warm-up check reads it, the trends do not (against a fixed handler its p99
            // alone made an 18% "fall", p = 0.002).
            if interval.completed > 0 && interval.index > 0 {
                p99s.push(interval.p99_us as f64);
            }
        }
        // The last interval may be a sliver of the drain: its rate says little.
        if rates.len() > MIN_INTERVALS
            && interval_length(last, timeline.interval_s, timeline.end_s)
                < timeline.interval_s / 2.0
        {
            rates.pop();
        }
        let interval_s = timeline.interval_s * rates.len().div_ceil(MAX_SERIES) as f64;
        let rates = coarsened(&rates);
        let p99s = coarsened(&p99s);
        let (rate_trend_pct, rate_trend_p) = trend(&rates[1.min(rates.len())..]);
        let (p99_trend_pct, p99_trend_p) = trend(&p99s);
        let head = ((rates.len() as f64 * HEAD_SHARE).round() as usize).max(2);
        let warm_up_until_s = (head < rates.len() && differs(&rates[..head], &rates[head..]))
            .then_some(head as f64 * interval_s);
        let trended = |pct: f64, p: f64| p < ALPHA && pct.abs() >= SIZE_PCT;
        Some(Steadiness {
            steady: !trended(rate_trend_pct, rate_trend_p)
                && !trended(p99_trend_pct, p99_trend_p)
                && warm_up_until_s.is_none(),
            rate_trend_pct,
            rate_trend_p,
            p99_trend_pct,
            p99_trend_p,
            warm_up_until_s,
        })
    }

    /// The plain-words sentence of an unsteady run; `None` for a steady one.
    pub(crate) fn sentence(&self) -> Option<String> {
        if self.steady {
            return None;
        }
        let mut seen = Vec::new();
        if self.rate_trend_p < ALPHA && self.rate_trend_pct.abs() >= SIZE_PCT {
            seen.push(format!(
                "the request rate {} {:.0}% over the run (Mann–Kendall p = {:.4})",
                if self.rate_trend_pct > 0.0 {
                    "rose"
                } else {
                    "fell"
                },
                self.rate_trend_pct.abs(),
                self.rate_trend_p
            ));
        }
        if self.p99_trend_p < ALPHA && self.p99_trend_pct.abs() >= SIZE_PCT {
            seen.push(format!(
                "the p99 {} {:.0}% over the run (p = {:.4})",
                if self.p99_trend_pct > 0.0 {
                    "rose"
                } else {
                    "fell"
                },
                self.p99_trend_pct.abs(),
                self.p99_trend_p
            ));
        }
        if let Some(until) = self.warm_up_until_s {
            seen.push(format!(
                "the first {until:.1}s ran at another rate than the rest"
            ));
        }
        let advice = match self.warm_up_until_s {
            Some(until) => format!(
                "leave the start out with --warm-up-time {}s, or run longer",
                until.ceil()
            ),
            None => "the figures describe a changing state: run longer, or find what changed (a queue building up, a cache warming, the machine)".to_owned(),
        };
        Some(format!(
            "the run was not steady: {}; {advice}",
            seen.join(", ")
        ))
    }
}

/// The Mann–Kendall trend of `series` (in order): the change of Sen's line over the series
/// (from its first point to its last) as a percent of where it starts (of the median when the
/// line starts at or below 0), so a fall is at most 100%; and the two-sided p-value (with the
/// tie correction and the continuity correction). No trend (0, 1) for fewer than
/// [`MIN_INTERVALS`] values.
pub(crate) fn trend(series: &[f64]) -> (f64, f64) {
    let n = series.len();
    if n < MIN_INTERVALS {
        return (0.0, 1.0);
    }
    let mut s = 0i64;
    let mut slopes = Vec::with_capacity(n * (n - 1) / 2);
    for i in 0..n {
        for j in i + 1..n {
            let difference = series[j] - series[i];
            s += (difference > 0.0) as i64 - (difference < 0.0) as i64;
            slopes.push(difference / (j - i) as f64);
        }
    }
    let mut sorted = series.to_vec();
    sorted.sort_by(f64::total_cmp);
    let ties: f64 = sorted
        .chunk_by(|a, b| a == b)
        .map(|group| {
            let t = group.len() as f64;
            t * (t - 1.0) * (2.0 * t + 5.0)
        })
        .sum();
    let n = n as f64;
    let variance = (n * (n - 1.0) * (2.0 * n + 5.0) - ties) / 18.0;
    let p = if variance <= 0.0 || s == 0 {
        1.0
    } else {
        let z = (s.abs() as f64 - 1.0) / variance.sqrt();
        (2.0 * normal_sf(z)).min(1.0)
    };
    slopes.sort_by(f64::total_cmp);
    let slope = slopes[slopes.len() / 2];
    let median = sorted[sorted.len() / 2];
    // Sen's line passes through the median at the middle of the series.
    let change = slope * (n - 1.0);
    let start = median - change / 2.0;
    let base = if start > 0.0 { start } else { median };
    let pct = if base > 0.0 {
        100.0 * change / base
    } else {
        0.0
    };
    (pct, p)
}

/// `series` joined into at most [`MAX_SERIES`] consecutive groups of equal size, each its mean.
fn coarsened(series: &[f64]) -> Vec<f64> {
    let size = series.len().div_ceil(MAX_SERIES).max(1);
    series
        .chunks(size)
        .map(|group| group.iter().sum::<f64>() / group.len() as f64)
        .collect()
}

/// Whether `head` differs from `rest` by more than chance and by at least [`SIZE_PCT`] of the
/// rest's median.
fn differs(head: &[f64], rest: &[f64]) -> bool {
    let median = |values: &[f64]| {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        sorted[sorted.len() / 2]
    };
    let (head_median, rest_median) = (median(head), median(rest));
    rest_median > 0.0
        && (head_median - rest_median).abs() >= SIZE_PCT / 100.0 * rest_median
        && mann_whitney(head, rest).p < ALPHA
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 0.5 + noise in [−0.05, 0.05), deterministic.
    fn noisy(n: usize, seed: u64) -> Vec<f64> {
        let mut state = seed;
        (0..n)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                1000.0 + 100.0 * ((state >> 11) as f64 / (1u64 << 53) as f64 - 0.5)
            })
            .collect()
    }

    #[test]
    fn a_flat_series_has_no_trend_and_a_rising_one_has() {
        let flat = noisy(30, 1);
        let (pct, p) = trend(&flat);
        assert!(p > 0.05 && pct.abs() < 10.0, "flat: {pct}% p {p}");
        // Rising by half its level over 30 intervals, through the same noise.
        let rising: Vec<f64> = flat
            .iter()
            .enumerate()
            .map(|(i, x)| x + 500.0 * i as f64 / 30.0)
            .collect();
        let (pct, p) = trend(&rising);
        assert!(p < 0.001, "rising: p {p}");
        // From about 1,000 to about 1,500 (the last point 1,483): about +48%.
        assert!((40.0..60.0).contains(&pct), "rising: {pct}%");
        // Falling from 1,000 to 130: about -86% of where Sen's line starts, never past -100%.
        let falling: Vec<f64> = (0..30).map(|i| 1000.0 - 30.0 * f64::from(i)).collect();
        let (pct, _) = trend(&falling);
        assert!((-88.0..=-84.0).contains(&pct), "falling: {pct}%");
        // scipy-free check of S and its variance: 1..=10 rising has S = 45, var = 125, z = 3.94.
        let (_, p) = trend(&(1..=10).map(f64::from).collect::<Vec<_>>());
        assert!((p - 2.0 * normal_sf(44.0 / 125f64.sqrt())).abs() < 1e-12);
    }

    #[test]
    fn a_long_series_is_joined_before_its_pairs_are_compared() {
        let long: Vec<f64> = (0..100_000).map(f64::from).collect();
        let joined = coarsened(&long);
        assert_eq!(joined.len(), MAX_SERIES);
        assert_eq!(joined[0], 124.5);
        let (pct, p) = trend(&joined);
        assert!(p < 1e-6 && pct > 100.0, "{pct}% p {p}");
    }

    #[test]
    fn a_slow_start_is_a_warm_up() {
        let mut rates = noisy(30, 2);
        for rate in &mut rates[..6] {
            *rate *= 0.5;
        }
        assert!(differs(&rates[..6], &rates[6..]));
        assert!(!differs(&noisy(6, 3), &noisy(24, 4)));
    }
}
