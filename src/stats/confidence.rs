//! 95% confidence intervals for what a report prints: every latency percentile and the request
//! rate.
//!
//! **Percentiles** are read distribution-free, from ranks: the p-th percentile's estimate `x` has
//! a share `p̂` of the samples at or below it, and an interval for that share maps back through
//! the histogram to values (the value at rank `p̂ ± h`). Were the samples independent, the share
//! would vary as a binomial proportion, `p(1 − p)/n`. They are not: a server stall or a GC pause
//! slows many neighbouring requests at once, so a run holds fewer independent facts than samples.
//! So the variance is measured, by **batch means** over the timeline: the run's intervals, less
//! those at its edges that a request's life may straddle (see `inner`), are joined into at most
//! [`MAX_BATCHES`] consecutive batches, and the spread of each batch's share
//! of samples at or below `x` around `p̂` (the ratio estimator's variance, batches of any size)
//! gives the variance of `p̂` as this run's own dependence made it. Its interval uses Student's
//! t with (batches − 1) degrees of freedom. The binomial variance is a floor: a run is not
//! credited with more precision than independent samples would give, whatever a few batches
//! happened to show. Fewer than [`MIN_BATCHES`] batches (a run shorter than that many intervals)
//! say too little about dependence: the interval then assumes independent samples and says so
//! (`method: independent`), as for the connection and handshake times, which have no timeline.
//!
//! An end beyond the samples (the rank interval of p99.99 of 2,000 samples reaches past the
//! largest) is open: the run is too short to bound it (`ci_high: null`, shown as `?`).
//!
//! **The rate** (finished requests per second) gets the batch-means interval of a ratio of
//! totals, the same estimator over the batches' counts and lengths, empty intervals counted as
//! such; it needs [`MIN_BATCHES`] batches too.
//!
//! **No interval without evidence.** A figure from too few samples gets none, and says why
//! ([`NoInterval`]), rather than an interval of zero width that reads as certainty: a rate needs
//! [`MIN_RATE_SAMPLES`] finished requests (one request's rate over a timeline of otherwise empty
//! intervals has no spread at all), and a percentile needs [`MIN_TAIL`] samples expected beyond
//! it, `n·(1 − p)`: fewer, and its value is whichever sample happened to be last, so it is
//! marked not estimable (`not_estimable`) and has no interval.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::timeline::{interval_length, last_index, IntervalSummary, Timeline};
use crate::recorder::hdr;
use crate::units::counted;

/// The confidence level of every interval.
pub(crate) const LEVEL: f64 = 0.95;

/// The normal distribution's 97.5th percentile: the two-sided 95% critical value.
const Z_975: f64 = 1.959_964;

/// At most this many batches: neighbouring intervals are joined beyond it, so each batch is long
/// enough for its mean to be nearly independent of the next one's (the usual 10–30).
pub(crate) const MAX_BATCHES: usize = 30;

/// With fewer batches than this their spread says too little: intervals assume independence.
pub(crate) const MIN_BATCHES: usize = 5;

/// At least this many samples expected beyond a percentile, `n·(1 − p)` (or below it, `n·p`, for
/// one under the median), for it to be estimated: the rule of thumb under which a binomial share
/// is near enough normal for its rank interval (and the upper rank of a 95% interval then lies
/// within the samples: `p + 1.96·√(p(1 − p)/n)` stays below the last rank). p99 needs 500
/// samples, p99.9 5,000, p99.99 50,000.
pub(crate) const MIN_TAIL: f64 = 5.0;

/// At least this many finished requests for an interval of the rate: a handful, as for a
/// percentile's tail; with fewer, most batches are empty and the spread of their counts
/// estimates nothing (one request makes it zero).
pub(crate) const MIN_RATE_SAMPLES: u64 = 5;

/// The most intervals a rate's interval reads from one timeline (empty ones included).
const MAX_INTERVALS: u64 = 1 << 20;

/// Student's t distribution's 97.5th percentile for 1 to 29 degrees of freedom.
const T_975: [f64; 29] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045,
];

/// A 95% confidence interval; `ci_high` is `None` when the run is too short to bound it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Bounds<T> {
    /// Its lower end.
    pub(crate) ci_low: T,
    /// Its upper end, `None` when it lies beyond what the run measured.
    pub(crate) ci_high: Option<T>,
}

impl<T: PartialOrd + Copy> Bounds<T> {
    /// Whether `value` lies within (an open upper end reaching any value above its low end).
    pub(crate) fn contains(&self, value: T) -> bool {
        value >= self.ci_low && self.ci_high.is_none_or(|high| value <= high)
    }
}

impl Bounds<f64> {
    /// Whether the interval has no width (to rounding): the spread measured was none, as every
    /// batch of a kept `--rate` schedule finishing as many requests.
    pub(crate) fn is_point(&self) -> bool {
        self.ci_high
            .is_some_and(|high| high - self.ci_low <= 1e-9 * high.abs())
    }
}

/// Why a figure has no interval: too few of what its interval is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct NoInterval {
    /// What there were too few of.
    pub(crate) too_few: Evidence,
    /// How many there were.
    pub(crate) n: u64,
    /// How many an interval needs.
    pub(crate) needed: u64,
}

/// What an interval is made of; one more kind (rounds) plugs in here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Evidence {
    /// Finished requests (samples).
    Samples,
    /// Batches of the timeline.
    Batches,
    /// Rounds (`--rounds`): an interval across them needs two.
    Rounds,
}

impl NoInterval {
    /// `n=1: no interval` (samples), `3 batches: no interval`: the short form, for tables.
    pub(crate) fn short(&self) -> String {
        match self.too_few {
            Evidence::Samples => format!("n={}: no interval", self.n),
            Evidence::Batches => format!("{}: no interval", batches(self.n)),
            Evidence::Rounds => format!("{}: no interval", counted(self.n, "round")),
        }
    }

    /// What an interval would need, in words: `an interval needs at least 5 finished requests`.
    pub(crate) fn needs(&self) -> String {
        match self.too_few {
            Evidence::Samples => format!(
                "an interval needs at least {}",
                counted(self.needed, "finished request")
            ),
            Evidence::Batches => format!(
                "an interval needs at least {} of the timeline (a longer run)",
                batches(self.needed)
            ),
            Evidence::Rounds => format!(
                "an interval across rounds needs at least {}",
                counted(self.needed, "round")
            ),
        }
    }
}

/// `1 batch`, `3 batches`.
fn batches(count: u64) -> String {
    match count {
        1 => "1 batch".to_owned(),
        _ => format!("{count} batches"),
    }
}

/// What an interval's spread covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum IntervalKind {
    /// Batch means over one run's timeline: the variation within the run, not between runs.
    WithinRun,
    /// Student's t over `--rounds`' per-round values: the variation between reruns.
    AcrossRounds,
}

impl IntervalKind {
    /// `within one run`, `across 5 rounds`: how the plain words name it.
    pub(crate) fn words(self, rounds: usize) -> String {
        match self {
            IntervalKind::WithinRun => "within one run".to_owned(),
            IntervalKind::AcrossRounds => format!("across {rounds} rounds"),
        }
    }
}

/// Whether the `quantile` of `n` samples can be estimated: [`MIN_TAIL`] samples expected beyond
/// it (a hair of tolerance for the float product: p99 of exactly 500 samples is).
pub(crate) fn estimable(n: u64, quantile: f64) -> bool {
    n as f64 * quantile.min(1.0 - quantile) >= MIN_TAIL - 1e-9
}

/// The fewest samples whose `quantile` is [`estimable`]: 500 for p99.
pub(crate) fn samples_needed(quantile: f64) -> u64 {
    (MIN_TAIL / quantile.min(1.0 - quantile) - 1e-6).ceil() as u64
}

/// How an interval accounts for the dependence between samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Method {
    /// Batch means over the timeline: the run's own dependence measured.
    BatchMeans,
    /// As if the samples were independent (no timeline, or too few intervals to tell).
    Independent,
}

/// The 95% intervals of a distribution's percentiles.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct PercentileBounds {
    /// The confidence level (0.95).
    pub(crate) level: f64,
    /// How dependence was accounted for.
    pub(crate) method: Method,
    /// Batches used (0 with `independent`).
    pub(crate) batches: u32,
    /// Median; `None` when not estimable (and so for each below).
    pub(crate) p50: Option<Bounds<u64>>,
    /// 75th percentile.
    pub(crate) p75: Option<Bounds<u64>>,
    /// 90th percentile.
    pub(crate) p90: Option<Bounds<u64>>,
    /// 95th percentile.
    pub(crate) p95: Option<Bounds<u64>>,
    /// 99th percentile.
    pub(crate) p99: Option<Bounds<u64>>,
    /// 99.9th percentile.
    #[serde(rename = "p99.9")]
    pub(crate) p99_9: Option<Bounds<u64>>,
    /// 99.99th percentile.
    #[serde(rename = "p99.99")]
    pub(crate) p99_99: Option<Bounds<u64>>,
    /// The percentiles with fewer than [`MIN_TAIL`] samples expected beyond them (`p99.99`),
    /// whose value is the histogram's but whose interval is `null`: not estimable.
    #[serde(default)]
    pub(crate) not_estimable: Vec<String>,
}

impl PercentileBounds {
    /// The interval of the percentile labelled `label` (as `Percentiles::labelled` (the report's)
    /// names them); `None` for `max`, which has none, and for one not estimable.
    pub(crate) fn of(&self, label: &str) -> Option<Bounds<u64>> {
        match label {
            "p50" => self.p50,
            "p75" => self.p75,
            "p90" => self.p90,
            "p95" => self.p95,
            "p99" => self.p99,
            "p99.9" => self.p99_9,
            "p99.99" => self.p99_99,
            _ => None,
        }
    }

    /// Whether the percentile labelled `label` is too far in the tail of too few samples to be
    /// estimated (its interval is `None` for that reason, not for being `max`).
    pub(crate) fn not_estimable(&self, label: &str) -> bool {
        self.not_estimable.iter().any(|name| name == label)
    }
}

/// The quantiles a report gives, in [`PercentileBounds`]'s order.
const QUANTILES: [f64; 7] = [0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 0.9999];

/// Their labels, as `Percentiles::labelled` (the report's) names them.
const QUANTILE_LABELS: [&str; 7] = ["p50", "p75", "p90", "p95", "p99", "p99.9", "p99.99"];

/// Where a distribution's batches come from: a timeline, and which of an interval's histograms.
pub(crate) type Source<'a> = (&'a Timeline, fn(&IntervalSummary) -> Option<&str>);

/// The percentiles' intervals of the distribution `encoded` (a latency summary's `hdr`), by batch
/// means over the timeline's histograms that `source` picks when there are enough of them; `None`
/// without samples.
pub(crate) fn percentile_bounds(
    encoded: &str,
    source: Option<Source<'_>>,
) -> Option<PercentileBounds> {
    let whole = hdr::from_base64(encoded).ok()?;
    if whole.is_empty() {
        return None;
    }
    let lines = QUANTILES.map(|quantile| whole.value_at_quantile(quantile));
    let counts = source
        .and_then(|(timeline, pick)| batch_counts(timeline, pick, &lines, reach_s(&whole)))
        .filter(|counts| counts.len() >= MIN_BATCHES);
    let at = |index: usize| {
        let batches: Option<Vec<(f64, f64)>> = counts.as_ref().map(|counts| {
            counts
                .iter()
                .map(|(samples, below)| (*samples, below[index]))
                .collect()
        });
        estimable(whole.len(), QUANTILES[index])
            .then(|| quantile_bounds(&whole, batches.as_deref(), QUANTILES[index]))
    };
    Some(PercentileBounds {
        level: LEVEL,
        method: if counts.is_some() {
            Method::BatchMeans
        } else {
            Method::Independent
        },
        batches: counts.as_ref().map_or(0, |counts| counts.len() as u32),
        p50: at(0),
        p75: at(1),
        p90: at(2),
        p95: at(3),
        p99: at(4),
        p99_9: at(5),
        p99_99: at(6),
        not_estimable: QUANTILE_LABELS
            .iter()
            .zip(QUANTILES)
            .filter(|(_, quantile)| !estimable(whole.len(), *quantile))
            .map(|(label, _)| (*label).to_owned())
            .collect(),
    })
}

/// The 95% interval of the `quantile` of `whole` (not empty), from the spread of `batches`
/// when given: each batch (consecutive samples) as its count of samples and of those at or below
/// `whole.value_at_quantile(quantile)`; else as if the samples were independent.
pub(crate) fn quantile_bounds(
    whole: &Histogram<u64>,
    batches: Option<&[(f64, f64)]>,
    quantile: f64,
) -> Bounds<u64> {
    let n = whole.len() as f64;
    let estimate = whole.value_at_quantile(quantile);
    // The share of samples at or below the estimate: the quantile as the histogram holds it.
    let share = whole.count_between(0, estimate) as f64 / n;
    let independent = (share * (1.0 - share)).max(quantile * (1.0 - quantile)) / n;
    let effect = batches.and_then(design_effect);
    let (variance, critical) = match effect {
        Some((effect, count)) if effect > 1.0 => (effect * independent, t_975(count - 1)),
        _ => (independent, Z_975),
    };
    let half = critical * variance.sqrt();
    let low = share - half;
    let high = share + half;
    Bounds {
        ci_low: if low <= 0.0 {
            whole.min()
        } else {
            whole.value_at_quantile(low).min(estimate)
        },
        // Past the last sample's rank the run says nothing about where the percentile lies.
        ci_high: (high * n < n - 0.5).then(|| whole.value_at_quantile(high).max(estimate)),
    }
}

/// How much the batches' spread of their shares of samples at or below the line exceeds what
/// independent samples would give (the design effect: measured variance over binomial), and the
/// number of batches it rests on; `None` when it cannot be measured (too few batches, or every
/// sample on one side of the line). `batches` are (samples, samples at or below the line). The
/// variance is the ratio estimator's, over the batches' own samples, which may be fewer than the
/// whole run's (the edge intervals left out).
fn design_effect(batches: &[(f64, f64)]) -> Option<(f64, usize)> {
    let count = batches.len();
    if count < 2 {
        return None;
    }
    let n: f64 = batches.iter().map(|(samples, _)| samples).sum();
    let below: f64 = batches.iter().map(|(_, below)| below).sum();
    if n <= 0.0 {
        return None;
    }
    let share = below / n;
    let binomial = share * (1.0 - share) / n;
    if binomial <= 0.0 {
        return None;
    }
    let spread: f64 = batches
        .iter()
        .map(|(samples, below)| (below - share * samples).powi(2))
        .sum();
    let measured = count as f64 / (count - 1) as f64 * spread / (n * n);
    Some((measured / binomial, count))
}

/// The 95% interval of the `quantile` of the request latencies `whole` (by batch means over their
/// `timeline` when it has batches enough); `None` without samples.
pub(crate) fn request_quantile(
    whole: &Histogram<u64>,
    timeline: &Timeline,
    quantile: f64,
) -> Option<Bounds<u64>> {
    if whole.is_empty() {
        return None;
    }
    let line = whole.value_at_quantile(quantile);
    let counts = batch_counts(
        timeline,
        |interval| Some(interval.hdr.as_str()),
        &[line],
        reach_s(whole),
    )
    .filter(|counts| counts.len() >= MIN_BATCHES);
    let batches: Option<Vec<(f64, f64)>> = counts.map(|counts| {
        counts
            .into_iter()
            .map(|(samples, below)| (samples, below[0]))
            .collect()
    });
    Some(quantile_bounds(whole, batches.as_deref(), quantile))
}

/// The Wilson score 95% interval of the share `hits` of `trials` (independent trials); `None`
/// without trials.
pub(crate) fn wilson(hits: u64, trials: u64) -> Option<Bounds<f64>> {
    if trials == 0 {
        return None;
    }
    let n = trials as f64;
    let share = hits as f64 / n;
    let z2 = Z_975 * Z_975;
    let centre = (share + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = Z_975 / (1.0 + z2 / n) * (share * (1.0 - share) / n + z2 / (4.0 * n * n)).sqrt();
    // At the ends the interval closes on them exactly (the formula leaves a rounding error).
    Some(Bounds {
        ci_low: if hits == 0 {
            0.0
        } else {
            (centre - half).max(0.0)
        },
        ci_high: Some(if hits == trials {
            1.0
        } else {
            (centre + half).min(1.0)
        }),
    })
}

/// The 95% interval of the finished requests per second, `rate`, by batch means over the
/// timeline's intervals (empty ones too); why there is none with fewer than
/// [`MIN_RATE_SAMPLES`] finished requests or [`MIN_BATCHES`] batches.
pub(crate) fn rate_bounds(timeline: &Timeline, rate: f64) -> Result<Bounds<f64>, NoInterval> {
    let no_batches = |n: usize| NoInterval {
        too_few: Evidence::Batches,
        n: n as u64,
        needed: MIN_BATCHES as u64,
    };
    if timeline.interval_s <= 0.0 || timeline.end_s <= 0.0 {
        return Err(no_batches(0));
    }
    let last = last_index(timeline.end_s, timeline.interval_s);
    // A report claiming an absurd length must not make the counts fill memory.
    let count = usize::try_from(last + 1)
        .ok()
        .filter(|_| last < MAX_INTERVALS)
        .ok_or(no_batches(0))?;
    let mut finished = vec![0u64; count];
    for interval in &timeline.intervals {
        if let Some(count) = finished.get_mut(interval.index as usize) {
            *count += interval.completed + interval.errors;
        }
    }
    let samples: u64 = finished.iter().sum();
    if samples < MIN_RATE_SAMPLES {
        return Err(NoInterval {
            too_few: Evidence::Samples,
            n: samples,
            needed: MIN_RATE_SAMPLES,
        });
    }
    let lengths: Vec<f64> = (0..=last)
        .map(|index| interval_length(index, timeline.interval_s, timeline.end_s))
        .collect();
    // The first interval (connections opening) and the last (the drain) are partial by
    // construction: the spread is measured without them when enough remain (as `inner`), and
    // they hold a handful of the requests (else the middle's emptiness would read as a rate
    // known exactly: a few long requests all finish in the last interval).
    let inner = finished.len() >= MIN_BATCHES + 2
        && finished[1..finished.len() - 1].iter().sum::<u64>() >= MIN_RATE_SAMPLES;
    let (finished, lengths) = if inner {
        (
            &finished[1..finished.len() - 1],
            &lengths[1..lengths.len() - 1],
        )
    } else {
        (&finished[..], &lengths[..])
    };
    let batches: Vec<(f64, f64)> = batch_ranges(finished.len())
        .into_iter()
        .map(|range| {
            (
                finished[range.clone()].iter().sum::<u64>() as f64,
                lengths[range].iter().sum::<f64>(),
            )
        })
        .collect();
    let (ratio, bounds) = ratio_bounds(&batches).ok_or(no_batches(batches.len()))?;
    let high = bounds.ci_high.ok_or(no_batches(batches.len()))?;
    // Around the report's own rate (finished over the whole measured period): the half-width
    // measured over the batches' length, scaled to the period's (a rate's variance falls as
    // one over the length it is measured over).
    let measured: f64 = lengths.iter().sum();
    let half = (high - ratio) * (measured / timeline.end_s).min(1.0).sqrt();
    Ok(Bounds {
        ci_low: (rate - half).max(0.0),
        ci_high: Some(rate + half),
    })
}

/// The ratio of totals Σ count / Σ length of `batches` (count, length) and its 95% interval by
/// batch means (the ratio estimator's variance, batches of any length); `None` with fewer than
/// [`MIN_BATCHES`] batches or no length.
pub(crate) fn ratio_bounds(batches: &[(f64, f64)]) -> Option<(f64, Bounds<f64>)> {
    let k = batches.len();
    if k < MIN_BATCHES {
        return None;
    }
    let total: f64 = batches.iter().map(|(_, length)| length).sum();
    let count: f64 = batches.iter().map(|(count, _)| count).sum();
    if total <= 0.0 {
        return None;
    }
    let ratio = count / total;
    let spread: f64 = batches
        .iter()
        .map(|(count, length)| (count - ratio * length).powi(2))
        .sum();
    let half = t_975(k - 1) * (k as f64 / (k - 1) as f64 * spread / (total * total)).sqrt();
    Some((
        ratio,
        Bounds {
            ci_low: (ratio - half).max(0.0),
            ci_high: Some(ratio + half),
        },
    ))
}

/// Each batch of a timeline's latency histograms (`pick` reads an interval's), joined from
/// consecutive intervals: its samples, and for each of `lines` its samples at or below it. The
/// encoded histograms are read value by value, never decoded into one: a histogram of the standard
/// bounds is about 180 KB, which would add to the run's peak memory at report time. Exact for
/// `lines` that are the highest value of their bucket (`value_at_quantile` gives those): a
/// bucket is then at or below the line as a whole. `None` when an interval lacks the histogram
/// or it does not decode.
fn batch_counts(
    timeline: &Timeline,
    pick: fn(&IntervalSummary) -> Option<&str>,
    lines: &[u64],
    reach_s: f64,
) -> Option<Vec<(f64, Vec<f64>)>> {
    let intervals = inner(&timeline.intervals, timeline, reach_s);
    let mut counts = Vec::new();
    for range in batch_ranges(intervals.len()) {
        let (mut samples, mut below) = (0u64, vec![0u64; lines.len()]);
        for interval in &intervals[range] {
            let bytes = hdr::base64_bytes(pick(interval)?).ok()?;
            hdr::scan(&bytes, |value, count| {
                samples += count;
                for (line, below) in lines.iter().zip(&mut below) {
                    if value <= *line {
                        *below += count;
                    }
                }
                Ok(())
            })
            .ok()?;
        }
        counts.push((
            samples as f64,
            below.into_iter().map(|n| n as f64).collect(),
        ));
    }
    Some(counts)
}

/// How long a request of `whole` may live, seconds: its p99 (a longer one is rare enough to
/// leave in a batch).
fn reach_s(whole: &Histogram<u64>) -> f64 {
    whole.value_at_quantile(0.99) as f64 / 1e6
}

/// The intervals whose spread measures the run's variability: all but those a request's life
/// (up to `reach_s`, the run's p99) may share with the start or the end of the measured period,
/// at least the first and the last, when enough remain; else all but the first and the last;
/// else all. Edge intervals are partial by construction: the first ones hold only requests sent
/// and answered within them (the fast ones), the last ones the stragglers of the drain, so their
/// shares differ from the others' for reasons that are not the run's, and their spread made the
/// intervals wider than the run's own variation (a p99's covered the truth in 98–99 of 100
/// runs, not about 95, with delays twice as long as an interval).
fn inner<'a>(
    intervals: &'a [IntervalSummary],
    timeline: &Timeline,
    reach_s: f64,
) -> &'a [IntervalSummary] {
    let last = last_index(timeline.end_s, timeline.interval_s);
    let reach = (reach_s / timeline.interval_s).ceil();
    let edge = if reach.is_finite() && reach >= 1.0 {
        reach.min(last as f64) as u64
    } else {
        1
    };
    for edge in [edge, 1] {
        let start = intervals.partition_point(|interval| interval.index < edge);
        let end = intervals.partition_point(|interval| interval.index.saturating_add(edge) <= last);
        if end.saturating_sub(start) >= MIN_BATCHES + 2 {
            return &intervals[start..end];
        }
    }
    intervals
}

/// `count` items cut into at most [`MAX_BATCHES`] consecutive ranges of (nearly) equal size.
pub(crate) fn batch_ranges(count: usize) -> Vec<std::ops::Range<usize>> {
    let batches = count.min(MAX_BATCHES);
    (0..batches)
        .map(|batch| batch * count / batches..(batch + 1) * count / batches)
        .collect()
}

/// Student's t 97.5th percentile for `dof` degrees of freedom (the normal's past the table).
pub(crate) fn t_975(dof: usize) -> f64 {
    T_975.get(dof.wrapping_sub(1)).copied().unwrap_or(Z_975)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic stream of uniform numbers in (0, 1) (a 64-bit LCG's top bits).
    fn uniforms(seed: u64) -> impl FnMut() -> f64 {
        let mut state = seed;
        move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }
    }

    /// `batches`' (samples, samples at or below `whole`'s `quantile`): the form
    /// [`quantile_bounds`] takes.
    fn at(whole: &Histogram<u64>, batches: &[Histogram<u64>], quantile: f64) -> Vec<(f64, f64)> {
        let line = whole.value_at_quantile(quantile);
        batches
            .iter()
            .map(|batch| (batch.len() as f64, batch.count_between(0, line) as f64))
            .collect()
    }

    /// `n` exponential samples of mean 10,000 µs, recorded into `batches` histograms in turn of
    /// equal runs, plus the whole.
    fn exponential(n: usize, batches: usize, seed: u64) -> (Histogram<u64>, Vec<Histogram<u64>>) {
        let mut next = uniforms(seed);
        let mut whole = hdr::new_histogram();
        let mut parts: Vec<Histogram<u64>> = (0..batches).map(|_| hdr::new_histogram()).collect();
        for i in 0..n {
            let value = (-10_000.0 * (1.0 - next()).ln()) as u64 + 1;
            whole.record(value).unwrap();
            parts[i * batches / n].record(value).unwrap();
        }
        (whole, parts)
    }

    #[test]
    fn independent_samples_are_covered_about_95_times_in_100() {
        // The true p50 and p99 of an exponential of mean 10 ms: ln 2 and ln 100 times it.
        let truths = [(0.5, 6_931.0), (0.99, 46_052.0)];
        let runs = 400;
        for (quantile, truth) in truths {
            let covered = (0..runs)
                .filter(|&run| {
                    let (whole, batches) = exponential(4_000, 20, run);
                    quantile_bounds(&whole, Some(&at(&whole, &batches, quantile)), quantile)
                        .contains(truth as u64)
                })
                .count();
            // 95% of 400 is 380, sd 4.4; the binomial floor makes it a little wider.
            assert!(
                (364..=396).contains(&covered),
                "p{}: {covered} of {runs} covered",
                quantile * 100.0
            );
        }
    }

    #[test]
    fn four_times_the_samples_halve_the_width() {
        let width = |n| {
            let (whole, batches) = exponential(n, 20, 7);
            let bounds = quantile_bounds(&whole, Some(&at(&whole, &batches, 0.99)), 0.99);
            (bounds.ci_high.unwrap() - bounds.ci_low) as f64
        };
        let ratio = width(64_000) / width(16_000);
        assert!((0.35..0.7).contains(&ratio), "width ratio {ratio}");
    }

    #[test]
    fn dependent_samples_widen_the_interval() {
        // The same samples, sorted into batches by size: each batch holds neighbours, as a
        // stall puts slow responses together. The batches' spread is far above a binomial's.
        let (whole, _) = exponential(4_000, 20, 3);
        let mut values: Vec<u64> = whole
            .iter_recorded()
            .flat_map(|v| std::iter::repeat_n(v.value_iterated_to(), v.count_at_value() as usize))
            .collect();
        values.sort_unstable();
        let mut clumped: Vec<Histogram<u64>> = (0..20).map(|_| hdr::new_histogram()).collect();
        for (i, value) in values.iter().enumerate() {
            clumped[i * 20 / values.len()].record(*value).unwrap();
        }
        let independent = quantile_bounds(&whole, None, 0.5);
        let batched = quantile_bounds(&whole, Some(&at(&whole, &clumped, 0.5)), 0.5);
        let width = |b: Bounds<u64>| b.ci_high.unwrap() - b.ci_low;
        assert!(
            width(batched) > 3 * width(independent),
            "{batched:?} against {independent:?}"
        );
    }

    #[test]
    fn an_end_past_the_samples_is_open() {
        let (whole, batches) = exponential(2_000, 20, 1);
        let bounds = quantile_bounds(&whole, Some(&at(&whole, &batches, 0.9999)), 0.9999);
        assert_eq!(bounds.ci_high, None);
        assert!(bounds.ci_low <= whole.value_at_quantile(0.9999));
        assert!(bounds.contains(u64::MAX));
    }

    #[test]
    fn wilson_intervals_match_known_values() {
        // 5 of 100: 2.15%–11.2% (the Wilson interval's textbook value).
        let bounds = wilson(5, 100).unwrap();
        assert!((bounds.ci_low - 0.0215).abs() < 0.0005, "{bounds:?}");
        assert!(
            (bounds.ci_high.unwrap() - 0.1118).abs() < 0.0005,
            "{bounds:?}"
        );
        // None of 1,000: from 0 to 0.38%, not a zero-width interval.
        let none = wilson(0, 1000).unwrap();
        assert_eq!(none.ci_low, 0.0);
        assert!((none.ci_high.unwrap() - 0.00383).abs() < 0.0001, "{none:?}");
        assert_eq!(wilson(0, 0), None);
    }

    /// A timeline of intervals of `interval_s`, one per histogram of `parts` (its samples).
    fn timeline_of(parts: &[Histogram<u64>], interval_s: f64) -> Timeline {
        let interval = |(index, part): (usize, &Histogram<u64>)| {
            serde_json::from_value(serde_json::json!({
                "index": index, "completed": part.len(), "errors": 0, "length_s": interval_s,
                "requests_per_s": part.len() as f64 / interval_s, "p50_us": 0, "p99_us": 0,
                "max_us": 0, "hdr": hdr::to_base64(part), "ttfb_hdr": "",
            }))
            .unwrap()
        };
        Timeline {
            interval_s,
            end_s: parts.len() as f64 * interval_s,
            start_unix_ms: 0,
            intervals: parts.iter().enumerate().map(interval).collect(),
        }
    }

    /// A histogram of `count` samples of `value` µs.
    fn samples(count: u64, value: u64) -> Histogram<u64> {
        let mut histogram = hdr::new_histogram();
        histogram.record_n(value, count).unwrap();
        histogram
    }

    #[test]
    fn a_percentile_needs_5_samples_beyond_it() {
        for (quantile, needed) in [
            (0.5, 10),
            (0.75, 20),
            (0.9, 50),
            (0.95, 100),
            (0.99, 500),
            (0.999, 5_000),
            (0.9999, 50_000),
        ] {
            assert_eq!(samples_needed(quantile), needed, "p{}", quantile * 100.0);
            assert!(estimable(needed, quantile), "p{}", quantile * 100.0);
            assert!(!estimable(needed - 1, quantile), "p{}", quantile * 100.0);
        }
        assert!(!estimable(1, 0.5));
    }

    #[test]
    fn percentiles_too_far_in_the_tail_of_few_samples_have_no_interval() {
        // 50 exponential samples: 25 beyond the p50, 5 beyond the p90, 2.5 beyond the p95.
        let (whole, _) = exponential(50, 1, 5);
        let bounds = percentile_bounds(&hdr::to_base64(&whole), None).unwrap();
        assert_eq!(
            bounds.not_estimable,
            ["p95", "p99", "p99.9", "p99.99"].map(str::to_owned)
        );
        for label in ["p50", "p75", "p90"] {
            let interval = bounds.of(label).unwrap();
            assert!(interval.ci_low < interval.ci_high.unwrap(), "{label}");
            assert!(!bounds.not_estimable(label));
        }
        for label in ["p95", "p99", "p99.9", "p99.99"] {
            assert_eq!(bounds.of(label), None, "{label}");
            assert!(bounds.not_estimable(label), "{label}");
        }
        // `max` has no interval, but is not "not estimable": it is exact.
        assert_eq!(bounds.of("max"), None);
        assert!(!bounds.not_estimable("max"));
        // One sample: nothing is estimable (its interval was `697–?` for every percentile).
        let one = hdr::to_base64(&samples(1, 697));
        assert_eq!(
            percentile_bounds(&one, None).unwrap().not_estimable.len(),
            QUANTILES.len()
        );
    }

    #[test]
    fn a_rate_of_one_request_has_no_interval() {
        // One request over 20 intervals, finished in the last: the middle 18 are empty, and their
        // spread was zero, an interval of zero width (`1.95 (1.95–1.95)`).
        let mut parts: Vec<Histogram<u64>> = (0..20).map(|_| hdr::new_histogram()).collect();
        parts[19] = samples(1, 500_000);
        let timeline = timeline_of(&parts, 0.025);
        assert_eq!(
            rate_bounds(&timeline, 2.0),
            Err(NoInterval {
                too_few: Evidence::Samples,
                n: 1,
                needed: MIN_RATE_SAMPLES
            })
        );
        let reason = rate_bounds(&timeline, 2.0).unwrap_err();
        assert_eq!(reason.short(), "n=1: no interval");
        assert_eq!(
            reason.needs(),
            "an interval needs at least 5 finished requests"
        );
        // Six requests, all in the last interval: enough of them, but the middle is empty, so
        // the spread is measured over every interval, the last included: not zero.
        parts[19] = samples(6, 500_000);
        let bounds = rate_bounds(&timeline_of(&parts, 0.025), 12.0).unwrap();
        assert!(
            bounds.ci_low < 12.0 && bounds.ci_high.unwrap() > 12.0 + 5.0,
            "{bounds:?}"
        );
        // Many requests in 3 intervals: too few batches.
        let few = timeline_of(
            &[
                samples(100, 1_000),
                samples(100, 1_000),
                samples(100, 1_000),
            ],
            1.0,
        );
        let reason = rate_bounds(&few, 100.0).unwrap_err();
        assert_eq!(
            reason,
            NoInterval {
                too_few: Evidence::Batches,
                n: 3,
                needed: MIN_BATCHES as u64
            }
        );
        assert_eq!(reason.short(), "3 batches: no interval");
        // Enough requests in 20 intervals: an interval around the rate.
        let even: Vec<Histogram<u64>> = (0..20).map(|i| samples(90 + i % 3 * 10, 1_000)).collect();
        let bounds = rate_bounds(&timeline_of(&even, 1.0), 100.0).unwrap();
        assert!(
            bounds.ci_low < 100.0 && 100.0 < bounds.ci_high.unwrap(),
            "{bounds:?}"
        );
    }

    #[test]
    fn batch_counts_read_from_the_encoded_intervals_match_joined_histograms() {
        // 24 intervals of exponential samples (their inner 22 make the batches), counted at
        // quantile lines of the whole, against the same counts from histograms joined per batch.
        let parts: Vec<Histogram<u64>> = exponential(24_000, 24, 11).1;
        let mut whole = hdr::new_histogram();
        parts.iter().for_each(|part| whole.add(part).unwrap());
        let lines = [0.5, 0.9, 0.99].map(|quantile| whole.value_at_quantile(quantile));
        let timeline = timeline_of(&parts, 1.0);
        let counts = batch_counts(
            &timeline,
            |interval| Some(interval.hdr.as_str()),
            &lines,
            0.0,
        )
        .unwrap();
        let inner = &parts[1..23];
        let expected: Vec<(f64, Vec<f64>)> = batch_ranges(inner.len())
            .into_iter()
            .map(|range| {
                let mut batch = hdr::new_histogram();
                inner[range]
                    .iter()
                    .for_each(|part| batch.add(part).unwrap());
                let below = lines
                    .iter()
                    .map(|line| batch.count_between(0, *line) as f64);
                (batch.len() as f64, below.collect())
            })
            .collect();
        assert_eq!(counts, expected);
    }

    #[test]
    fn batches_are_consecutive_and_cover_everything() {
        assert_eq!(batch_ranges(3), [0..1, 1..2, 2..3]);
        let ranges = batch_ranges(100);
        assert_eq!(ranges.len(), MAX_BATCHES);
        assert_eq!(ranges[0].start, 0);
        assert_eq!(ranges.last().unwrap().end, 100);
        assert!(ranges.windows(2).all(|pair| pair[0].end == pair[1].start));
        assert_eq!(t_975(1), 12.706);
        assert_eq!(t_975(100), Z_975);
    }
}
