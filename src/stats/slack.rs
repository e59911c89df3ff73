//! The count slack: how far a schedule's own count over a period may fall short of its rate by
//! chance (a whole count, and a Poisson schedule's spread), so that a shortfall is the run's only
//! beyond it. The report's rate figures, `--fail-if` and `--find-max`'s steps all read it.

use crate::plan::Arrival;

/// How many standard deviations of its own count a Poisson schedule may fall short of its
/// requested rate by chance before a shortfall is the run's: the one-sided 99% point. A Poisson
/// schedule's count over a period is random (sd √(rate × period)), so "98% of the requested
/// rate" alone fails a server that kept up one short run in four.
pub(crate) const POISSON_SLACK_SD: f64 = 2.33;

/// How far, in requests per second, a schedule's own count over `seconds` may fall short of its
/// rate by chance: a count is whole (an evenly spaced schedule holds ⌊rate × seconds⌋ send times
/// in a window as often as one more, so one request short of the rate's product is no shortfall:
/// at 200/s a 0.1 s window of 19 sends would otherwise read as 95% of the rate), and a Poisson
/// one also strays by [`POISSON_SLACK_SD`] of its standard deviation `count_sd` (0 for evenly
/// spaced sends). No period (`seconds` 0) excuses nothing: what measured nothing fell short.
pub(crate) fn count_slack_per_s(count_sd: f64, seconds: f64) -> f64 {
    match seconds > 0.0 {
        true => (POISSON_SLACK_SD * count_sd + 1.0) / seconds,
        false => 0.0,
    }
}

/// [`count_slack_per_s`] for a cell that requested `requested_per_s` over `elapsed_s`, its
/// report's `settings.arrival` being `arrival`: a Poisson schedule's count has the deviation
/// √(rate × period).
pub(crate) fn cell_slack_per_s(requested_per_s: f64, elapsed_s: f64, arrival: Option<&str>) -> f64 {
    let count_sd = match arrival == Some(Arrival::Poisson.name()) {
        true => (requested_per_s * elapsed_s).sqrt(),
        false => 0.0,
    };
    count_slack_per_s(count_sd, elapsed_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_may_fall_one_request_and_its_poisson_noise_short() {
        // Evenly spaced: one request over the period, in requests per second.
        assert_eq!(count_slack_per_s(0.0, 0.1), 10.0);
        assert_eq!(count_slack_per_s(0.0, 4.0), 0.25);
        // Poisson at 1,000/s over 1 s: 2.33 × √1000 = 73.7, and the one request.
        let poisson = cell_slack_per_s(1000.0, 1.0, Some("poisson"));
        assert!((poisson - 74.68).abs() < 0.01, "{poisson}");
        assert_eq!(cell_slack_per_s(1000.0, 1.0, Some("uniform")), 1.0);
        assert_eq!(cell_slack_per_s(1000.0, 1.0, None), 1.0);
        // No period: nothing is excused.
        assert_eq!(count_slack_per_s(5.0, 0.0), 0.0);
    }
}
