//! The estimates between rounds (`--rounds`): a figure's mean over the rounds' values and its 95%
//! Student's t-interval, the spread of whole runs, optionally floored by what each round's own
//! run measured.

use super::confidence::{t_975, Bounds};

/// The mean of `values` and its 95% t-interval, its standard error no smaller than what the
/// rounds' own runs measured (`errors`, each round's standard error): five rounds that happen to
/// agree closely would otherwise claim more than each of them knew (in a test of 40 invocations
/// against one target, the intervals this floor widened were the ones that missed). As the
/// binomial floor of one run's intervals, the spread measured is not trusted below what the
/// samples themselves allow.
pub(crate) fn mean_interval_floored(values: &[f64], errors: &[f64]) -> (f64, Option<Bounds<f64>>) {
    let (mean, bounds) = mean_interval(values);
    let Some(bounds) = bounds else {
        return (mean, None);
    };
    let count = values.len() as f64;
    let floor = (errors.iter().map(|error| error * error).sum::<f64>()
        / errors.len().max(1) as f64
        / count)
        .sqrt();
    let half = (mean - bounds.ci_low).max(t_975(values.len() - 1) * floor);
    (
        mean,
        Some(Bounds {
            ci_low: mean - half,
            ci_high: Some(mean + half),
        }),
    )
}

/// The mean of `values` and its 95% t-interval; no interval from fewer than two.
pub(crate) fn mean_interval(values: &[f64]) -> (f64, Option<Bounds<f64>>) {
    let count = values.len();
    if count == 0 {
        return (0.0, None);
    }
    let mean = values.iter().sum::<f64>() / count as f64;
    if count < 2 {
        return (mean, None);
    }
    let variance = values
        .iter()
        .map(|value| (value - mean).powi(2))
        .sum::<f64>()
        / (count - 1) as f64;
    let half = t_975(count - 1) * (variance / count as f64).sqrt();
    (
        mean,
        Some(Bounds {
            ci_low: mean - half,
            ci_high: Some(mean + half),
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_is_students_t_over_the_values() {
        // Mean 10, sd 2 (values 8, 10, 12), n = 3: half-width t(2) · 2/√3 = 4.303 · 1.1547.
        let (mean, bounds) = mean_interval(&[8.0, 10.0, 12.0]);
        assert_eq!(mean, 10.0);
        let bounds = bounds.unwrap();
        let half = 4.303 * 2.0 / 3f64.sqrt();
        assert!((bounds.ci_low - (10.0 - half)).abs() < 1e-9);
        assert!((bounds.ci_high.unwrap() - (10.0 + half)).abs() < 1e-9);
    }

    #[test]
    fn rounds_that_agree_closely_claim_no_more_than_each_knew() {
        // The values' own standard error is 0.1/√3; each round knew its rate to ±1 (sd).
        let (mean, bounds) = mean_interval_floored(&[10.0, 10.1, 10.2], &[1.0, 1.0, 1.0]);
        let bounds = bounds.unwrap();
        let half = 4.303 / 3f64.sqrt();
        assert!((mean - 10.1).abs() < 1e-9);
        assert!((bounds.ci_low - (10.1 - half)).abs() < 1e-9);
        // A spread wider than the floor is kept as it is.
        let (_, wide) = mean_interval_floored(&[8.0, 10.0, 12.0], &[0.1, 0.1, 0.1]);
        assert_eq!(wide, mean_interval(&[8.0, 10.0, 12.0]).1);
    }

    #[test]
    fn one_value_has_no_interval() {
        assert_eq!(mean_interval(&[5.0]), (5.0, None));
        assert_eq!(mean_interval(&[]), (0.0, None));
    }
}
