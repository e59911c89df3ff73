//! `h2load-rs diff BASE.json NEW.json`: the cells two runs have in common, figure by figure, with
//! the change and whether it stands out from the noise.
//!
//! Cells match by protocol, connections, streams and rate, not by URL (the built-in target's port
//! changes from run to run). Each run's timeline cuts it into intervals, and the intervals of one
//! run show how much its figures vary by themselves: that is the yardstick a change is held to.
//!
//! A change is **significant** when both runs have at least [`MIN_INTERVALS`] intervals with
//! completions, a two-sided Mann–Whitney U test of the base's per-interval samples against the new
//! run's gives p < [`ALPHA`], and the whole-run figure changed by at least [`NOISE_FLOOR_PCT`]
//! percent. The samples:
//! - throughput: each interval's request rate (an interval without a completion counts as 0);
//! - a latency percentile, say p99: each interval's share of responses slower than a run's p99.
//!   That share is about 1% in every interval of the run the p99 came from, and higher in the
//!   other run's intervals exactly when its p99 is higher. Both runs' p99s serve as the line in
//!   turn, and p is the smaller p-value, doubled (Bonferroni), so the test is the same either way
//!   round and sees a rise and a fall alike. Shares are used rather than each interval's own p99
//!   because an interval's p99 is close to its slowest few responses, which one stall of a busy
//!   machine decides, while a share moves little when a few responses are slow.
//!
//! Intervals are tested rather than single requests because the requests of one run are not
//! independent (they queue behind each other, share slow seconds), while intervals are far closer
//! to it. The floor keeps long runs, where the test sees even a trivial shift, from flagging it,
//! and stands for what intervals of one run cannot see, the variation between runs: two runs of
//! the same 1 ms handler, one after the other on a shared 2-core machine, differed by 6% in
//! throughput. The Kolmogorov–Smirnov distance between the whole-run latency histograms is shown
//! beside as the size of the change of the whole distribution (0 the same, 1 no overlap); it
//! decides nothing.

pub(crate) mod render;

use anyhow::Result;

use crate::recorder::hdr;
use crate::report::{runs_by_cell, Document, Summary};
use crate::stats::confidence::Bounds;
use crate::stats::rounds::mean_interval;
use crate::stats::timeline::{last_index, Timeline};
use crate::stats::two_samples::{ks_distance, mann_whitney, MannWhitney};
use crate::units::counted;
use crate::usage_bail;

/// Fewer samples than this in either run and a figure's change is not tested: the runs are too
/// short to tell, and `--fail-if-regressed` decides on its threshold alone.
pub(crate) const MIN_INTERVALS: usize = 5;

/// The Mann–Whitney p-value below which a change is more than noise.
pub(crate) const ALPHA: f64 = 0.05;

/// The smallest change, in percent, that can be significant.
pub(crate) const NOISE_FLOOR_PCT: f64 = 5.0;

/// The most intervals read from one timeline (zero-filled gaps included), so a report claiming an
/// absurd length cannot make the samples fill memory.
const MAX_INTERVALS: u64 = 1 << 20;

/// The latency percentiles compared, with their quantiles.
const PERCENTILES: [(&str, f64); 4] = [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999)];

/// What a figure measures, which decides the direction that is worse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Requests per second: lower is worse.
    Throughput,
    /// A latency percentile, µs: higher is worse.
    Latency,
}

/// How a figure changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Significantly worse.
    Worse,
    /// Significantly better.
    Better,
    /// Within the noise.
    Same,
    /// Too few samples (or no base value) to tell.
    Untested,
}

/// One figure of a cell in both runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Figure {
    /// `req/s`, `p50`, `p90`, `p99` or `p99.9`.
    pub(crate) name: &'static str,
    /// What it measures.
    pub(crate) kind: Kind,
    /// The base run's whole-run value (req/s, or µs).
    pub(crate) base: f64,
    /// The new run's.
    pub(crate) new: f64,
    /// The test of the per-interval samples; `None` when either run has fewer than
    /// [`MIN_INTERVALS`].
    pub(crate) test: Option<Shift>,
    /// Each run's 95% confidence interval of the figure, base then new, as its report has it.
    pub(crate) intervals: [Option<Bounds<f64>>; 2],
    /// Whether each run's figure is a percentile not estimable (too few samples beyond it):
    /// shown `(n/e)` in place of an interval.
    pub(crate) not_estimable: [bool; 2],
}

/// What the test of a figure's per-interval samples found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Shift {
    /// The two-sided Mann–Whitney p-value.
    pub(crate) p: f64,
    /// Whether the new run's samples tend to be the larger ones.
    pub(crate) new_larger: bool,
}

impl Shift {
    fn of(test: MannWhitney) -> Shift {
        Shift {
            p: test.p,
            new_larger: test.first_larger < 0.5,
        }
    }
}

impl Figure {
    /// `(new − base) / base` in percent; `None` when the base is 0.
    pub(crate) fn change_pct(&self) -> Option<f64> {
        (self.base > 0.0).then(|| (self.new - self.base) / self.base * 100.0)
    }

    /// How much worse the new run is, in percent (negative: better); `None` when the base is 0.
    pub(crate) fn worse_pct(&self) -> Option<f64> {
        self.change_pct().map(|change| match self.kind {
            Kind::Throughput => -change,
            Kind::Latency => change,
        })
    }

    /// Whether the change was tested and found significant (see the module's definition); the
    /// samples must have moved the way the whole-run figure did.
    pub(crate) fn verdict(&self) -> Verdict {
        match (self.test, self.change_pct(), self.worse_pct()) {
            (Some(test), Some(change), Some(worse))
                if test.p < ALPHA
                    && worse.abs() >= NOISE_FLOOR_PCT
                    && test.new_larger == (change > 0.0) =>
            {
                if worse > 0.0 {
                    Verdict::Worse
                } else {
                    Verdict::Better
                }
            }
            (Some(_), Some(_), Some(_)) => Verdict::Same,
            _ => Verdict::Untested,
        }
    }

    /// Whether `--fail-if-regressed pct` fails on this figure: throughput or p99, worse by more
    /// than `pct`, and significant, or untested (then the threshold alone decides).
    fn regressed(&self, pct: f64) -> bool {
        (self.kind == Kind::Throughput || self.name == "p99")
            && self.worse_pct().is_some_and(|worse| worse > pct)
            && matches!(self.verdict(), Verdict::Worse | Verdict::Untested)
    }
}

/// What a figure's samples are: the intervals of one run, or the rounds of a `--rounds` run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SampleKind {
    /// Each interval of the run's timeline.
    Intervals,
    /// Each round's whole-run figure.
    Rounds,
}

impl SampleKind {
    /// What one sample is called: `interval` or `round`.
    pub(crate) fn noun(self) -> &'static str {
        match self {
            SampleKind::Intervals => "interval",
            SampleKind::Rounds => "round",
        }
    }
}

/// One cell found in both runs.
#[derive(Debug)]
pub(crate) struct CellDiff {
    /// The cell's label, e.g. `h1 c=10 m=1`.
    pub(crate) label: String,
    /// What its figures' samples are.
    pub(crate) samples: SampleKind,
    /// The base run's samples: intervals with completions in its timeline, or rounds.
    pub(crate) base_intervals: usize,
    /// The new run's.
    pub(crate) new_intervals: usize,
    /// Kolmogorov–Smirnov distance between the two runs' request latency histograms.
    pub(crate) ks_distance: f64,
    /// Throughput, then the latency percentiles.
    pub(crate) figures: Vec<Figure>,
}

impl CellDiff {
    /// Whether some figure could not be tested for lack of samples.
    pub(crate) fn too_short(&self) -> bool {
        self.figures.iter().any(|figure| figure.test.is_none())
    }
}

/// A figure that regressed beyond the `--fail-if-regressed` threshold.
#[derive(Debug)]
pub(crate) struct Regression<'a> {
    /// The cell's label.
    pub(crate) cell: &'a str,
    /// The figure.
    pub(crate) figure: &'a Figure,
}

/// The comparison of two runs.
#[derive(Debug)]
pub(crate) struct Diff {
    /// The cells in both, in the base run's order.
    pub(crate) cells: Vec<CellDiff>,
    /// Labels of the cells only the base run has.
    pub(crate) only_in_base: Vec<String>,
    /// Labels of the cells only the new run has.
    pub(crate) only_in_new: Vec<String>,
}

impl Diff {
    /// Every figure worse by more than `pct` percent that counts (see [`Figure::regressed`]).
    pub(crate) fn regressions(&self, pct: f64) -> Vec<Regression<'_>> {
        self.cells
            .iter()
            .flat_map(|cell| {
                cell.figures
                    .iter()
                    .filter(move |figure| figure.regressed(pct))
                    .map(|figure| Regression {
                        cell: &cell.label,
                        figure,
                    })
            })
            .collect()
    }
}

/// What makes two cells the same experiment: protocol, connections, streams, rate, the ramp of
/// `--stages` (start and every stage, as bits) and whether it was a capacity search; not the URL
/// (the built-in target's port changes from run to run).
type Key<'a> = (&'a str, usize, usize, Option<u64>, Option<Vec<u64>>, bool);

fn key(cell: &Summary) -> Key<'_> {
    let ramp = cell.settings.stages.as_ref().map(|ramp| {
        std::iter::once(ramp.start_rps.to_bits())
            .chain(
                ramp.stages
                    .iter()
                    .flat_map(|stage| [stage.duration_s.to_bits(), stage.rps.to_bits()]),
            )
            .collect()
    });
    (
        &cell.cell.protocol,
        cell.cell.clients,
        cell.cell.streams,
        cell.cell.rate.map(f64::to_bits),
        ramp,
        cell.capacity.is_some(),
    )
}

/// Compares the cells `base` and `new` have in common. No cell in common is a usage error: the
/// files are not two runs of one experiment. Runs of `--rounds` are compared round against round
/// (each round's figure a sample), and then both must have rounds.
pub(crate) fn compare(base: &Document, new: &Document) -> Result<Diff> {
    if base.rounds.is_some() != new.rounds.is_some() {
        usage_bail!(
            "only one of the reports ran --rounds (base: {}, new: {}): their figures are not of the same kind; run both with --rounds",
            rounds_of(base),
            rounds_of(new)
        );
    }
    let mut unmatched: Vec<Vec<&Summary>> = runs_by_cell(&new.cells);
    let mut cells = Vec::new();
    let mut only_in_base = Vec::new();
    for runs in runs_by_cell(&base.cells) {
        match unmatched
            .iter()
            .position(|other| key(other[0]) == key(runs[0]))
        {
            Some(at) => {
                let theirs = unmatched.remove(at);
                cells.push(match base.rounds {
                    Some(_) => compare_rounds(&runs, &theirs)?,
                    None => compare_cell(runs[0], theirs[0])?,
                });
            }
            None => only_in_base.push(runs[0].cell.label.clone()),
        }
    }
    let only_in_new: Vec<String> = unmatched
        .iter()
        .map(|runs| runs[0].cell.label.clone())
        .collect();
    if cells.is_empty() {
        usage_bail!(
            "the reports have no cell in common (cells match by protocol, -c, -m and --rate): base has {}; new has {}",
            listed(&only_in_base),
            listed(&only_in_new)
        );
    }
    Ok(Diff {
        cells,
        only_in_base,
        only_in_new,
    })
}

/// `5 rounds`, or `none`.
fn rounds_of(document: &Document) -> String {
    document.rounds.as_ref().map_or_else(
        || "none".to_owned(),
        |rounds| counted(rounds.count as u64, "round"),
    )
}

/// A cell's figures across its rounds, base against new: each round's request rate and latency
/// percentiles are the samples; each side's figure is their mean, with its t-interval.
fn compare_rounds(base: &[&Summary], new: &[&Summary]) -> Result<CellDiff> {
    let per_round = |runs: &[&Summary], figure: &dyn Fn(&Summary) -> f64| -> Vec<f64> {
        runs.iter().map(|run| figure(run)).collect()
    };
    let figure = |name: &'static str, kind: Kind, of: &dyn Fn(&Summary) -> f64| {
        let (base_values, new_values) = (per_round(base, of), per_round(new, of));
        let (base_mean, base_bounds) = mean_interval(&base_values);
        let (new_mean, new_bounds) = mean_interval(&new_values);
        Figure {
            name,
            kind,
            base: base_mean,
            new: new_mean,
            test: tested(&base_values, &new_values),
            intervals: [base_bounds, new_bounds],
            not_estimable: [false; 2],
        }
    };
    let mut figures = vec![figure("req/s", Kind::Throughput, &|run| run.requests_per_s)];
    for &(name, quantile) in &PERCENTILES {
        figures.push(figure(name, Kind::Latency, &|run| {
            run.histograms.request.value_at_quantile(quantile) as f64
        }));
    }
    let pooled = |runs: &[&Summary]| -> Result<hdrhistogram::Histogram<u64>> {
        let mut all = hdr::new_histogram();
        for run in runs {
            all.add(&run.histograms.request)
                .map_err(|error| anyhow::anyhow!("cannot add a round's histogram: {error}"))?;
        }
        Ok(all)
    };
    Ok(CellDiff {
        label: base[0].cell.label.clone(),
        samples: SampleKind::Rounds,
        base_intervals: base.len(),
        new_intervals: new.len(),
        ks_distance: ks_distance(&pooled(base)?, &pooled(new)?),
        figures,
    })
}

/// `h1 c=1 m=1, h2c c=1 m=1`, or `no cell`.
fn listed(labels: &[String]) -> String {
    if labels.is_empty() {
        "no cell".to_owned()
    } else {
        labels.join(", ")
    }
}

/// One cell's samples: per-interval throughput, and per interval the share of responses past
/// each latency line the comparison tests. The shares are taken as each interval's histogram is
/// decoded, which is then dropped: a long timeline costs a few numbers an interval, not a
/// histogram's counts array (180 KB) each.
struct Samples {
    rates: Vec<f64>,
    /// Intervals with at least one response.
    intervals: usize,
    /// For each line (µs), every such interval's share of responses slower than it.
    shares: Vec<(u64, Vec<f64>)>,
}

impl Samples {
    /// The samples of `cell`, a cell of the `side` report (`base` or `new`), at `lines` (µs).
    fn of(cell: &Summary, side: &str, lines: &[u64]) -> Result<Samples> {
        let histograms = cell
            .timeline
            .intervals
            .iter()
            .map(|interval| hdr::base64_bytes(&interval.hdr));
        match Samples::from_histograms(interval_rates(&cell.timeline), histograms, lines) {
            Ok(samples) => Ok(samples),
            Err(error) => usage_bail!(
                "the {side} report's cell {} ({}) has a broken timeline histogram ({error:#})",
                cell.cell.index,
                cell.cell.label
            ),
        }
    }

    /// The samples of encoded `histograms`, one an interval, at `lines`. Each is read without
    /// being built (see [`hdr::scan`]): the work is the size of the encodings.
    fn from_histograms(
        rates: Vec<f64>,
        histograms: impl Iterator<Item = Result<Vec<u8>>>,
        lines: &[u64],
    ) -> Result<Samples> {
        let mut samples = Samples {
            rates,
            intervals: 0,
            shares: lines.iter().map(|&line| (line, Vec::new())).collect(),
        };
        let mut above = vec![0u64; lines.len()];
        for histogram in histograms {
            above.fill(0);
            // The sums stay within the total, which the scan refuses past 2^64 - 1.
            let total = hdr::scan(&histogram?, |value, count| {
                for (line, above) in lines.iter().zip(&mut above) {
                    if value > *line {
                        *above += count;
                    }
                }
                Ok(())
            })?;
            // Intervals with only failures have no latency to compare.
            if total == 0 {
                continue;
            }
            samples.intervals += 1;
            for ((_, shares), above) in samples.shares.iter_mut().zip(&above) {
                shares.push(*above as f64 / total as f64);
            }
        }
        Ok(samples)
    }

    /// Every interval's share of responses slower than `line` µs, one of the lines it was made at.
    fn shares_above(&self, line: u64) -> &[f64] {
        self.shares
            .iter()
            .find(|(at, _)| *at == line)
            .map_or(&[], |(_, shares)| shares)
    }
}

/// Every interval's request rate, from the first to the last of the measured period; intervals
/// the timeline leaves out (nothing completed, nothing failed) count as 0.
fn interval_rates(timeline: &Timeline) -> Vec<f64> {
    if !(timeline.interval_s.is_finite() && timeline.interval_s > 0.0) {
        return Vec::new();
    }
    // Reports from before `end_s` list intervals up to the last one that had something.
    let last = if timeline.end_s > 0.0 {
        last_index(timeline.end_s, timeline.interval_s)
    } else {
        match timeline
            .intervals
            .iter()
            .map(|interval| interval.index)
            .max()
        {
            Some(last) => last,
            None => return Vec::new(),
        }
    };
    let count = last.saturating_add(1).min(MAX_INTERVALS) as usize;
    let mut rates = vec![0.0; count];
    for interval in &timeline.intervals {
        if let Some(rate) = rates.get_mut(interval.index as usize) {
            *rate = timeline.rate_of(interval);
        }
    }
    rates
}

/// The p-value of `base` against `new`, when both have enough samples.
fn tested(base: &[f64], new: &[f64]) -> Option<Shift> {
    enough(base.len(), new.len()).then(|| Shift::of(mann_whitney(base, new)))
}

/// Whether both runs have enough samples to test.
fn enough(base: usize, new: usize) -> bool {
    base >= MIN_INTERVALS && new >= MIN_INTERVALS
}

/// The test of a change of a latency percentile from `base_line` to `new_line` µs: the shares of
/// responses above each line, interval by interval, compared; the line with the smaller p-value
/// tells the direction, and the p-value is doubled (see the module's definition).
fn percentile_tested(
    base: &Samples,
    new: &Samples,
    base_line: u64,
    new_line: u64,
) -> Option<Shift> {
    enough(base.intervals, new.intervals).then(|| {
        let test = |line| mann_whitney(base.shares_above(line), new.shares_above(line));
        let (at_base, at_new) = (test(base_line), test(new_line));
        let stronger = if at_base.p <= at_new.p {
            at_base
        } else {
            at_new
        };
        // More of the new run's responses past the line means its latency is the larger.
        Shift {
            p: (2.0 * stronger.p).min(1.0),
            ..Shift::of(stronger)
        }
    })
}

fn compare_cell(base: &Summary, new: &Summary) -> Result<CellDiff> {
    let (base_latency, new_latency) = (&base.histograms.request, &new.histograms.request);
    // Each percentile is tested at both runs' values of it.
    let mut lines: Vec<u64> = PERCENTILES
        .iter()
        .flat_map(|&(_, quantile)| {
            [
                base_latency.value_at_quantile(quantile),
                new_latency.value_at_quantile(quantile),
            ]
        })
        .collect();
    lines.sort_unstable();
    lines.dedup();
    let (base_samples, new_samples) = (
        Samples::of(base, "base", &lines)?,
        Samples::of(new, "new", &lines)?,
    );
    let mut figures = vec![Figure {
        name: "req/s",
        kind: Kind::Throughput,
        base: base.requests_per_s,
        new: new.requests_per_s,
        test: tested(&base_samples.rates, &new_samples.rates),
        intervals: [base.requests_per_s_ci, new.requests_per_s_ci],
        not_estimable: [false; 2],
    }];
    let not_estimable = |cell: &Summary, name: &str| {
        let confidence = cell.latency.request.confidence.as_ref();
        confidence.is_some_and(|confidence| confidence.not_estimable(name))
    };
    let percentile_interval = |cell: &Summary, name: &str| {
        let bounds = cell.latency.request.confidence.as_ref()?.of(name)?;
        Some(Bounds {
            ci_low: bounds.ci_low as f64,
            ci_high: bounds.ci_high.map(|high| high as f64),
        })
    };
    figures.extend(PERCENTILES.iter().map(|&(name, quantile)| {
        let (base_line, new_line) = (
            base_latency.value_at_quantile(quantile),
            new_latency.value_at_quantile(quantile),
        );
        Figure {
            name,
            kind: Kind::Latency,
            base: base_line as f64,
            new: new_line as f64,
            test: percentile_tested(&base_samples, &new_samples, base_line, new_line),
            intervals: [
                percentile_interval(base, name),
                percentile_interval(new, name),
            ],
            not_estimable: [not_estimable(base, name), not_estimable(new, name)],
        }
    }));
    Ok(CellDiff {
        label: base.cell.label.clone(),
        samples: SampleKind::Intervals,
        base_intervals: base_samples.intervals,
        new_intervals: new_samples.intervals,
        ks_distance: ks_distance(base_latency, new_latency),
        figures,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::timeline::IntervalSummary;

    /// A figure whose samples, if tested, moved the way its whole-run value did.
    pub(super) fn figure(
        name: &'static str,
        kind: Kind,
        base: f64,
        new: f64,
        p: Option<f64>,
    ) -> Figure {
        Figure {
            name,
            kind,
            base,
            new,
            test: p.map(|p| Shift {
                p,
                new_larger: new > base,
            }),
            intervals: [None, None],
            not_estimable: [false; 2],
        }
    }

    #[test]
    fn the_worse_direction_depends_on_the_figure() {
        // Throughput 1000 → 800 is 20% worse; p99 1000 → 800 µs is 20% better.
        let rate = figure("req/s", Kind::Throughput, 1000.0, 800.0, Some(0.001));
        let p99 = figure("p99", Kind::Latency, 1000.0, 800.0, Some(0.001));
        assert_eq!(rate.change_pct(), Some(-20.0));
        assert_eq!(rate.worse_pct(), Some(20.0));
        assert_eq!(p99.worse_pct(), Some(-20.0));
        assert_eq!(rate.verdict(), Verdict::Worse);
        assert_eq!(p99.verdict(), Verdict::Better);
        assert_eq!(
            figure("p50", Kind::Latency, 0.0, 5.0, Some(0.001)).change_pct(),
            None
        );
    }

    #[test]
    fn significant_needs_a_small_p_and_a_change_past_the_floor() {
        let latency = |new, p| figure("p99", Kind::Latency, 1000.0, new, p);
        assert_eq!(latency(1100.0, Some(0.049)).verdict(), Verdict::Worse);
        assert_eq!(latency(1100.0, Some(0.05)).verdict(), Verdict::Same);
        // 4% is below the 5% floor however small p is.
        assert_eq!(latency(1040.0, Some(1e-9)).verdict(), Verdict::Same);
        assert_eq!(latency(1050.0, Some(1e-9)).verdict(), Verdict::Worse);
        assert_eq!(latency(2000.0, None).verdict(), Verdict::Untested);
        // Samples that moved against the whole-run figure: not significant.
        let mut against = latency(1100.0, Some(0.001));
        against.test = Some(Shift {
            p: 0.001,
            new_larger: false,
        });
        assert_eq!(against.verdict(), Verdict::Same);
    }

    #[test]
    fn a_regression_is_throughput_or_p99_past_the_threshold_and_significant_or_untested() {
        let at = |name, kind, new, p| figure(name, kind, 1000.0, new, p).regressed(10.0);
        // p99 up 20%, significant: fails; not significant: passes; untested: the threshold decides.
        assert!(at("p99", Kind::Latency, 1200.0, Some(0.001)));
        assert!(!at("p99", Kind::Latency, 1200.0, Some(0.2)));
        assert!(at("p99", Kind::Latency, 1200.0, None));
        // Within the threshold, or better: passes.
        assert!(!at("p99", Kind::Latency, 1090.0, Some(0.001)));
        assert!(!at("p99", Kind::Latency, 1090.0, None));
        assert!(!at("p99", Kind::Latency, 500.0, None));
        // Throughput down 20% fails; up 20% does not.
        assert!(at("req/s", Kind::Throughput, 800.0, Some(0.001)));
        assert!(!at("req/s", Kind::Throughput, 1200.0, Some(0.001)));
        // Other percentiles inform but do not fail the run.
        assert!(!at("p50", Kind::Latency, 2000.0, Some(0.001)));
    }

    /// `intervals` intervals, each of `values` (µs, count), at the lines 1 and 5 ms.
    fn samples_of(values: &[(u64, u64)], intervals: usize) -> Samples {
        let mut histogram = hdr::new_histogram();
        for &(value, count) in values {
            histogram.record_n(value, count).unwrap();
        }
        let histograms = std::iter::repeat_n(hdr::encode(&histogram), intervals).map(Ok);
        Samples::from_histograms(vec![], histograms, &[1000, 5000]).unwrap()
    }

    /// Ten intervals, each of `values` (µs, count).
    fn samples(values: &[(u64, u64)]) -> Samples {
        samples_of(values, 10)
    }

    #[test]
    fn a_percentile_is_tested_on_the_shares_past_each_runs_line() {
        // Base: 1% of responses at 2 ms, the rest at 1 ms; new: every response at 5 ms.
        let base = samples(&[(1000, 99), (2000, 1)]);
        let new = samples(&[(5000, 100)]);
        assert_eq!(base.shares_above(1000), [0.01; 10]);
        assert_eq!(new.shares_above(1000), [1.0; 10]);
        // Past the base's p99 (1 ms): 0.01 against 1.0 in every interval, scipy's
        // mannwhitneyu([0.01] * 10, [0.5] * 10) p = 1.5937911688066244e-05; past the new p99
        // (5 ms) both shares are 0, p = 1. The smaller, doubled:
        let test = percentile_tested(&base, &new, 1000, 5000).unwrap();
        assert!(
            (test.p - 2.0 * 1.593_791_168_806_624_4e-5).abs() < 1e-9,
            "{test:?}"
        );
        assert!(test.new_larger);
        // The same p either way round, the direction reversed; p = 1 for a run against itself.
        let reverse = percentile_tested(&new, &base, 5000, 1000).unwrap();
        assert_eq!((reverse.p, reverse.new_larger), (test.p, false));
        assert_eq!(percentile_tested(&base, &base, 1000, 1000).unwrap().p, 1.0);
        // Four intervals are too few.
        let short = samples_of(&[(1000, 99), (2000, 1)], 4);
        assert_eq!(percentile_tested(&short, &new, 1000, 5000), None);
    }

    fn interval(index: u64, completed: u64, length_s: f64) -> IntervalSummary {
        IntervalSummary {
            index,
            completed,
            errors: 0,
            length_s,
            requests_per_s: 0.0,
            p50_us: 0,
            p99_us: 0,
            max_us: 0,
            hdr: String::new(),
            ttfb_hdr: String::new(),
            service_hdr: None,
        }
    }

    #[test]
    fn intervals_without_completions_count_as_zero_throughput() {
        // 1.05 s in 0.2 s intervals: indexes 0..=4 (the last holds the 50 ms drain), 1 and 3
        // absent from the timeline because nothing happened there.
        let timeline = Timeline {
            interval_s: 0.2,
            end_s: 1.05,
            start_unix_ms: 0,
            intervals: vec![
                interval(0, 20, 0.2),
                interval(2, 40, 0.2),
                interval(4, 50, 0.25),
            ],
        };
        let rates = interval_rates(&timeline);
        assert_eq!(rates.len(), 5);
        assert!((rates[0] - 100.0).abs() < 1e-9);
        assert_eq!(rates[1], 0.0);
        assert!((rates[2] - 200.0).abs() < 1e-9);
        assert_eq!(rates[3], 0.0);
        // The last interval is 0.25 s long: 50 / 0.25.
        assert!((rates[4] - 200.0).abs() < 1e-9);
        // A report claiming an absurd length stays bounded.
        let absurd = Timeline {
            interval_s: 1e-9,
            end_s: 1e9,
            start_unix_ms: 0,
            intervals: vec![],
        };
        assert_eq!(interval_rates(&absurd).len(), MAX_INTERVALS as usize);
    }
}
