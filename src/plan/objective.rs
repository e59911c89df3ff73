//! Objectives evaluated: what a run (or a step of one) measured, checked against a `--slo` or
//! `--fail-if` objective, and the messages that show the outcome. The grammar and the
//! [`Objective`] type are `cli::objective`.

use hdrhistogram::Histogram;

use crate::cli::objective::{Metric, Objective, Op};

/// What a run (or a step of one) measured, as objectives read it.
#[derive(Debug, Clone, Copy)]
pub struct Measured<'a> {
    /// Request latency, µs.
    pub latency: &'a Histogram<u64>,
    /// Requests accounted for: finished, or never sent (`-n` requests no connection carried).
    pub done: u64,
    /// Of them, the ones that did not succeed (error statuses, errors, never sent).
    pub failed: u64,
    /// Requests finished per second.
    pub achieved_rps: f64,
}

impl Objective {
    /// The metric's value in `measured`, in the metric's unit. An empty latency histogram reads
    /// 0, as in the report's percentiles; with no request at all, `errors` reads 100%: nothing
    /// succeeded, and a threshold on errors must see a dead server.
    pub fn value(&self, measured: &Measured) -> f64 {
        match self.metric {
            Metric::Latency(_, quantile) if quantile >= 1.0 => measured.latency.max() as f64,
            Metric::Latency(_, quantile) => measured.latency.value_at_quantile(quantile) as f64,
            Metric::Errors if measured.done == 0 => 100.0,
            Metric::Errors => 100.0 * measured.failed as f64 / measured.done as f64,
            Metric::Rps => measured.achieved_rps,
        }
    }

    /// Whether `value` makes the expression true.
    pub fn holds(&self, value: f64) -> bool {
        match self.op {
            Op::Below { inclusive } => value < self.bound || (inclusive && value == self.bound),
            Op::Above { inclusive } => value > self.bound || (inclusive && value == self.bound),
        }
    }

    /// Whether the expression is an upper bound (`<`, `<=`): only those can be objectives of a
    /// capacity search, whose latency and errors grow with the rate.
    pub fn is_upper_bound(&self) -> bool {
        matches!(self.op, Op::Below { .. })
    }

    /// `value` in the metric's unit, as messages show it: `84.2ms`, `0.50%`, `4,950 req/s`.
    pub fn show(&self, value: f64) -> String {
        match self.metric {
            Metric::Latency(..) => show_micros(value),
            Metric::Errors => format!("{value:.2}%"),
            Metric::Rps => format!("{value:.1} req/s"),
        }
    }

    /// `p99 84.2ms > 50ms`: the metric, its measured value, the operator and the bound.
    pub fn describe(&self, value: f64) -> String {
        format!(
            "{} {} {} {}",
            self.metric.name(),
            self.show(value),
            self.op.symbol(),
            self.bound_text
        )
    }

    /// Checks the objective against `measured`.
    pub fn check(&self, measured: &Measured) -> Checked {
        let value = self.value(measured);
        Checked {
            expr: self.to_string(),
            value,
            holds: self.holds(value),
        }
    }
}

/// `--slo` objectives bound latency and errors from above: a capacity search raises the rate
/// until one breaks, so `>` (which a higher rate could only make true) and `rps` (which the
/// search sets itself) are usage errors.
pub fn check_slo(objectives: &[Objective]) -> anyhow::Result<()> {
    for objective in objectives {
        if !objective.is_upper_bound() {
            crate::usage_bail!("--slo '{objective}': an objective is what must hold as the rate rises, an upper bound with < or <= (use --fail-if for a threshold with >)");
        }
        if objective.metric == Metric::Rps {
            crate::usage_bail!("--slo '{objective}': --find-max sets the rate itself; objectives bound p50, p90, p99, p99.9, max or errors");
        }
    }
    Ok(())
}

/// One objective checked against a run: the expression, the measured value and the outcome.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The expression, canonically spelled (`p99>50ms`).
    pub expr: String,
    /// The measured value in the metric's unit (µs, percent, requests per second).
    pub value: f64,
    /// Whether the expression is true.
    pub holds: bool,
}

/// A duration in µs, with three significant digits: `950us`, `84.2ms`, `1.20s`.
pub(crate) fn show_micros(micros: f64) -> String {
    let (scaled, unit) = if micros >= 1e6 {
        (micros / 1e6, "s")
    } else if micros >= 1e3 {
        (micros / 1e3, "ms")
    } else {
        (micros, "us")
    };
    let decimals = if scaled >= 100.0 || unit == "us" {
        0
    } else if scaled >= 10.0 {
        1
    } else {
        2
    };
    format!("{scaled:.decimals$}{unit}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::objective::parse;
    use crate::recorder::hdr;

    fn objective(text: &str) -> Objective {
        parse(text).unwrap_or_else(|error| panic!("{text}: {error}"))
    }

    fn histogram(values: impl IntoIterator<Item = u64>) -> Histogram<u64> {
        let mut histogram = hdr::new_histogram();
        for value in values {
            histogram.record(value).unwrap();
        }
        histogram
    }

    #[test]
    fn evaluates_against_known_numbers() {
        // 1..=1000 µs, one of each: p50 = 500, p99 = 990, max = 1000 (exact below 2048 µs).
        let latency = histogram(1..=1000);
        let measured = Measured {
            latency: &latency,
            done: 200,
            failed: 3,
            achieved_rps: 4950.0,
        };
        let value = |text: &str| objective(text).value(&measured);
        assert_eq!(value("p50<1ms"), 500.0);
        assert_eq!(value("p90<1ms"), 900.0);
        assert_eq!(value("p99<1ms"), 990.0);
        assert_eq!(value("p99.9<1ms"), 999.0);
        assert_eq!(value("max<1ms"), 1000.0);
        assert_eq!(value("errors<1%"), 1.5);
        assert_eq!(value("rps>1"), 4950.0);
        let holds = |text: &str| objective(text).check(&measured).holds;
        assert!(holds("p99<991us") && !holds("p99<990us") && holds("p99<=990us"));
        assert!(holds("p99>989us") && !holds("p99>990us") && holds("p99>=990us"));
        assert!(holds("errors>1%") && !holds("errors<1.5%") && holds("errors<=1.5%"));
        assert!(holds("rps<5000") && !holds("rps>5000rps"));
        let empty = hdr::new_histogram();
        let nothing = Measured {
            latency: &empty,
            done: 0,
            failed: 0,
            achieved_rps: 0.0,
        };
        // Nothing at all succeeded: a dead server breaches an errors threshold.
        assert_eq!(objective("errors<1%").value(&nothing), 100.0);
        assert_eq!(objective("p99<1ms").value(&nothing), 0.0);
    }

    #[test]
    fn describes_a_breach_in_the_metric_unit() {
        let p99 = objective("p99>50ms");
        assert_eq!(p99.describe(84_200.0), "p99 84.2ms > 50ms");
        assert_eq!(p99.describe(950.0), "p99 950us > 50ms");
        assert_eq!(p99.describe(1_204_000.0), "p99 1.20s > 50ms");
        assert_eq!(objective("errors>1%").describe(2.5), "errors 2.50% > 1%");
        assert_eq!(objective("rps<100").describe(99.6), "rps 99.6 req/s < 100");
    }
}
