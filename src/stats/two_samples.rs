//! The statistics `h2load-rs diff` uses to tell a change from noise: the Mann–Whitney U test
//! (two independent samples, no assumption about their distribution) and the two-sample
//! Kolmogorov–Smirnov distance between two latency histograms.
//!
//! They follow scipy's definitions (`scipy.stats.mannwhitneyu` with its defaults,
//! `scipy.stats.ks_2samp`'s statistic), and the tests hold scipy's numbers.

use hdrhistogram::Histogram;

/// The outcome of a two-sided Mann–Whitney U test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct MannWhitney {
    /// U of the first sample: how many (first, second) pairs have the first larger, ties
    /// counting one half.
    pub(crate) u: f64,
    /// The share of (first, second) pairs with the first larger, ties counting one half: U over
    /// the number of pairs (the common-language effect size); 0.5 when neither tends to be larger.
    pub(crate) first_larger: f64,
    /// Two-sided p-value: the chance of a U at least this far from its mean when both samples
    /// come from one distribution.
    pub(crate) p: f64,
}

/// Below this many values in a sample, and without ties, the exact distribution of U is used
/// (scipy's rule: exact when either sample has at most 8 values and nothing is tied).
const EXACT_UP_TO: usize = 8;

/// Past this many values in the larger sample the exact distribution is not worth its cost
/// (and its counts would overflow), and the normal approximation is excellent anyway.
const EXACT_LARGER_UP_TO: usize = 10_000;

/// The two-sided Mann–Whitney U test of `a` against `b`. Exact when one sample has at most 8
/// values and no value is tied; otherwise the normal approximation with the tie correction and
/// the continuity correction. `p` is 1 when either sample is empty or every value is the same.
pub(crate) fn mann_whitney(a: &[f64], b: &[f64]) -> MannWhitney {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return MannWhitney {
            u: 0.0,
            first_larger: 0.5,
            p: 1.0,
        };
    }
    let mut pooled: Vec<f64> = a.iter().chain(b).copied().collect();
    let (rank, tie_term) = ranked(&mut pooled);
    let rank_sum: f64 = a.iter().map(rank).sum();
    let u1 = rank_sum - (n1 * (n1 + 1)) as f64 / 2.0;
    let u2 = (n1 * n2) as f64 - u1;
    // Two-sided: the larger U's upper tail, doubled.
    let u = u1.max(u2);
    let exact = tie_term == 0.0 && n1.min(n2) <= EXACT_UP_TO && n1.max(n2) <= EXACT_LARGER_UP_TO;
    let one_sided = if exact {
        exact_upper_tail(u as u64, n1, n2)
    } else {
        normal_upper_tail(u, n1, n2, tie_term)
    };
    MannWhitney {
        u: u1,
        first_larger: u1 / (n1 * n2) as f64,
        p: (2.0 * one_sided).clamp(0.0, 1.0),
    }
}

/// Sorts `values` and returns a function giving each value's average rank (1-based; tied
/// values share the mean of their ranks), with the tie term Σ (t³ − t) over groups of t ties.
fn ranked(values: &mut [f64]) -> (impl Fn(&f64) -> f64 + '_, f64) {
    values.sort_by(f64::total_cmp);
    let mut tie_term = 0.0;
    for group in values.chunk_by(|x, y| x == y) {
        let t = group.len() as f64;
        tie_term += t * t * t - t;
    }
    let values = &*values;
    let rank = move |value: &f64| {
        // The group of equal values spans positions [first, last); their ranks are first+1..=last.
        let first = values.partition_point(|x| x < value);
        let last = values.partition_point(|x| x <= value);
        (first + last + 1) as f64 / 2.0
    };
    (rank, tie_term)
}

/// P(U ≥ u) under the null hypothesis, from the normal approximation with the tie and
/// continuity corrections.
fn normal_upper_tail(u: f64, n1: usize, n2: usize, tie_term: f64) -> f64 {
    let (n1, n2) = (n1 as f64, n2 as f64);
    let n = n1 + n2;
    let mean = n1 * n2 / 2.0;
    let variance = n1 * n2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    if variance <= 0.0 {
        // Every value tied: nothing tells the samples apart.
        return 0.5;
    }
    normal_sf((u - mean - 0.5) / variance.sqrt())
}

/// P(U ≥ u) under the null hypothesis, exactly: the share of the C(n1 + n2, n1) equally likely
/// orderings whose U is at least `u`.
fn exact_upper_tail(u: u64, n1: usize, n2: usize) -> f64 {
    let counts = u_distribution(n1.min(n2), n1.max(n2));
    let total: i128 = counts.iter().sum();
    let tail: i128 = counts.iter().skip(u as usize).sum();
    tail as f64 / total as f64
}

/// How many orderings of `m` values of one sample and `n` of the other give U = 0, 1, ..., m·n:
/// the coefficients of the Gaussian binomial coefficient [m + n choose m] in q, built as
/// ∏ᵢ (1 − q^(n+i)) / (1 − q^i) for i = 1..m, each step's product again a polynomial with
/// integer coefficients, so the arithmetic is exact.
fn u_distribution(m: usize, n: usize) -> Vec<i128> {
    let mut coefficients = vec![0i128; m * n + 1];
    coefficients[0] = 1;
    for i in 1..=m {
        // Multiply by (1 − q^(n+i)), highest degree first so each term reads the old value.
        for k in (n + i..coefficients.len()).rev() {
            coefficients[k] -= coefficients[k - (n + i)];
        }
        // Divide by (1 − q^i): multiply by 1 + q^i + q^2i + ..., a running sum with stride i.
        for k in i..coefficients.len() {
            coefficients[k] += coefficients[k - i];
        }
    }
    coefficients
}

/// The standard normal distribution's upper tail, P(Z ≥ z).
pub(crate) fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// The complementary error function, with a relative error below 1.2e-7 everywhere (the
/// Chebyshev fit of Numerical Recipes, 2nd ed., §6.2): ample for p-values compared with 0.05.
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let polynomial = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let value = t * polynomial.exp();
    if x >= 0.0 {
        value
    } else {
        2.0 - value
    }
}

/// The two-sample Kolmogorov–Smirnov distance between two latency histograms: the largest gap
/// between their cumulative distributions, from 0 (the same distribution) to 1 (no overlap).
/// The histograms must share their bucket layout (every one from `recorder::hdr` does), so
/// equal values fall in equal buckets; 0 when either is empty.
pub(crate) fn ks_distance(a: &Histogram<u64>, b: &Histogram<u64>) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let steps = |histogram: &Histogram<u64>| -> Vec<(u64, u64)> {
        histogram
            .iter_recorded()
            .map(|bucket| (bucket.value_iterated_to(), bucket.count_at_value()))
            .collect()
    };
    let (a_steps, b_steps) = (steps(a), steps(b));
    let (a_total, b_total) = (a.len() as f64, b.len() as f64);
    let (mut i, mut j) = (0, 0);
    let (mut a_below, mut b_below) = (0u64, 0u64);
    let mut distance: f64 = 0.0;
    // Walk both step functions in value order; the gap is measured after each distinct value.
    while i < a_steps.len() || j < b_steps.len() {
        let value = match (a_steps.get(i), b_steps.get(j)) {
            (Some(x), Some(y)) => x.0.min(y.0),
            (Some(x), None) => x.0,
            (None, Some(y)) => y.0,
            (None, None) => unreachable!("the loop runs while one has steps"),
        };
        if let Some(&(_, count)) = a_steps.get(i).filter(|step| step.0 == value) {
            a_below += count;
            i += 1;
        }
        if let Some(&(_, count)) = b_steps.get(j).filter(|step| step.0 == value) {
            b_below += count;
            j += 1;
        }
        distance = distance.max((a_below as f64 / a_total - b_below as f64 / b_total).abs());
    }
    distance
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::hdr;

    fn close(got: f64, want: f64, tolerance: f64) {
        assert!(
            (got - want).abs() <= tolerance,
            "got {got}, want {want} ± {tolerance}"
        );
    }

    // Reference values from scipy 1.17.1: `scipy.stats.mannwhitneyu(a, b)` with its defaults
    // (two-sided, continuity correction, method "auto"), `method="asymptotic"` where stated.

    #[test]
    fn mann_whitney_exact_matches_scipy() {
        // scipy's documentation example: ages of males and females; 5 and 4 values, no ties.
        let males = [19.0, 22.0, 16.0, 29.0, 24.0];
        let females = [20.0, 11.0, 17.0, 12.0];
        let test = mann_whitney(&males, &females);
        assert_eq!(test.u, 17.0);
        assert_eq!(test.first_larger, 17.0 / 20.0);
        close(test.p, 0.111_111_111_111_111_1, 1e-12);
        // Unequal sizes, 3 against 20, still exact: U = 23, p = 0.5725578769057029.
        let twenty: Vec<f64> = (1..=20).map(f64::from).collect();
        let test = mann_whitney(&[1.5, 2.5, 30.5], &twenty);
        assert_eq!(test.u, 23.0);
        close(test.p, 0.572_557_876_905_702_9, 1e-12);
    }

    #[test]
    fn mann_whitney_normal_approximation_matches_scipy() {
        // The same ages with method="asymptotic": p = 0.11134688653314041.
        let males = [19.0, 22.0, 16.0, 29.0, 24.0];
        let females = [20.0, 11.0, 17.0, 12.0];
        close(
            normal_upper_tail(17.0, 5, 4, 0.0) * 2.0,
            0.111_346_886_533_140_41,
            1e-6,
        );
        assert_eq!(mann_whitney(&males, &females).u, 17.0);
        // 12 against 10 values, no ties: U = 7, p = 0.0005366804361047722.
        let x = [3.1, 4.5, 2.2, 8.9, 5.5, 6.1, 7.3, 1.9, 4.4, 6.6, 5.0, 3.3];
        let y = [7.7, 9.1, 8.4, 6.9, 10.2, 11.5, 8.8, 9.9, 7.2, 12.0];
        let test = mann_whitney(&x, &y);
        assert_eq!(test.u, 7.0);
        close(test.p, 0.000_536_680_436_104_772_2, 1e-8);
    }

    #[test]
    fn mann_whitney_ties_use_the_tie_correction_like_scipy() {
        // Ties force the normal approximation: U = 6, p = 0.11390314458853068.
        let test = mann_whitney(&[1.0, 2.0, 2.0, 3.0, 4.0], &[2.0, 3.0, 3.0, 5.0, 6.0, 7.0]);
        assert_eq!(test.u, 6.0);
        close(test.p, 0.113_903_144_588_530_68, 1e-6);
        // A sample against itself, and samples of one repeated value: p = 1 (scipy agrees).
        let same = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(
            mann_whitney(&same, &same),
            MannWhitney {
                u: 12.5,
                first_larger: 0.5,
                p: 1.0
            }
        );
        assert_eq!(mann_whitney(&[1.0; 3], &[1.0; 3]).p, 1.0);
        assert_eq!(mann_whitney(&[], &same).p, 1.0);
    }

    #[test]
    fn the_exact_distribution_counts_every_ordering_once() {
        // m = 2, n = 2: the 6 orderings give U = 0, 1, 2, 2, 3, 4.
        assert_eq!(u_distribution(2, 2), vec![1, 1, 2, 1, 1]);
        // In general C(m + n, m) orderings, symmetric about m·n / 2.
        let counts = u_distribution(8, 40);
        let total: i128 = counts.iter().sum();
        assert_eq!(total, 377_348_994); // C(48, 8)
        assert!(counts.iter().eq(counts.iter().rev()));
        assert!(counts.iter().all(|count| *count > 0));
    }

    #[test]
    fn the_normal_tail_matches_reference_values() {
        // scipy.stats.norm.sf and scipy.special.erfc.
        close(normal_sf(1.959_963_984_540_054), 0.025, 1e-8);
        close(normal_sf(3.0), 0.001_349_898_031_630_093_3, 1e-9);
        close(normal_sf(-1.0), 0.841_344_746_068_542_9, 1e-7);
        close(erfc(1.0), 0.157_299_207_050_285_16, 1e-8);
        close(erfc(-0.5), 1.520_499_877_813_046_5, 1e-7);
    }

    fn histogram(values: &[u64]) -> Histogram<u64> {
        let mut histogram = hdr::new_histogram();
        for value in values {
            histogram.record(*value).unwrap();
        }
        histogram
    }

    #[test]
    fn ks_distance_matches_scipy() {
        // scipy.stats.ks_2samp(a, b).statistic (values below 2048 are exact in the histograms).
        let distance = ks_distance(
            &histogram(&[1, 2, 3, 4, 5]),
            &histogram(&[3, 4, 5, 6, 7, 8]),
        );
        close(distance, 0.5, 1e-12);
        let distance = ks_distance(
            &histogram(&[10, 20, 20, 30, 40, 50, 60]),
            &histogram(&[15, 20, 25, 35, 35, 45]),
        );
        close(distance, 0.285_714_285_714_285_7, 1e-12);
        // Identical: 0; disjoint: 1, whichever comes first.
        let some = histogram(&[100, 200, 300]);
        assert_eq!(ks_distance(&some, &some), 0.0);
        assert_eq!(ks_distance(&some, &histogram(&[5000, 6000])), 1.0);
        assert_eq!(ks_distance(&histogram(&[5000, 6000]), &some), 1.0);
        assert_eq!(ks_distance(&some, &hdr::new_histogram()), 0.0);
    }
}
