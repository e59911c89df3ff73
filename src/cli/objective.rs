//! `--fail-if` and `--slo` values: the `METRIC OP VALUE` grammar ([`parse`]) and the
//! [`Objective`] it yields. What a run measured is checked against one in `plan::objective`.

use std::fmt;

use crate::units::parse_duration;

/// What an objective measures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric {
    /// A quantile of the request latency (1.0: the largest value), in microseconds.
    Latency(&'static str, f64),
    /// Failed requests over finished ones, in percent (h2load's failed: error statuses and errors).
    Errors,
    /// Achieved requests per second.
    Rps,
}

/// The latency metrics and their quantiles, in the order the report prints them.
const LATENCIES: [(&str, f64); 5] = [
    ("p50", 0.5),
    ("p90", 0.9),
    ("p99", 0.99),
    ("p99.9", 0.999),
    ("max", 1.0),
];

impl Metric {
    /// The metric as the grammar spells it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Metric::Latency(name, _) => name,
            Metric::Errors => "errors",
            Metric::Rps => "rps",
        }
    }
}

/// The comparison an objective makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `<`, or `<=` when inclusive.
    Below {
        /// Whether equality satisfies it.
        inclusive: bool,
    },
    /// `>`, or `>=` when inclusive.
    Above {
        /// Whether equality satisfies it.
        inclusive: bool,
    },
}

impl Op {
    /// The operator as the grammar spells it.
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            Op::Below { inclusive: false } => "<",
            Op::Below { inclusive: true } => "<=",
            Op::Above { inclusive: false } => ">",
            Op::Above { inclusive: true } => ">=",
        }
    }
}

/// One parsed `METRIC OP VALUE`.
#[derive(Debug, Clone, PartialEq)]
pub struct Objective {
    /// What is measured.
    pub metric: Metric,
    /// How it is compared.
    pub op: Op,
    /// The bound, in the metric's unit (µs, percent, requests per second).
    pub bound: f64,
    /// The bound as written (`50ms`, `1%`), for messages.
    pub(crate) bound_text: String,
}

impl fmt::Display for Objective {
    /// The canonical spelling, without spaces: `p99<50ms`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}{}",
            self.metric.name(),
            self.op.symbol(),
            self.bound_text
        )
    }
}

/// Parses `METRIC OP VALUE`; the error is one line naming what is wrong (clap adds the flag).
///
/// The grammar shared by `--slo` (what must hold) and `--fail-if` (what must not). Metrics: the
/// request latency's `p50`, `p90`, `p99`, `p99.9` and `max` (a duration in `us`, `ms` or `s`),
/// `errors` (failed / done, a percentage such as `1%`) and `rps` (achieved requests per second,
/// `5000rps` or `5000`). Operators: `<`, `>`, `<=`, `>=`. Spaces are allowed anywhere between the
/// parts.
pub(crate) fn parse(text: &str) -> Result<Objective, String> {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let Some(at) = compact.find(['<', '>']) else {
        return Err(format!(
            "'{text}' has no operator: write METRIC<VALUE or METRIC>VALUE (e.g. p99<50ms, errors<1%)"
        ));
    };
    let (name, rest) = compact.split_at(at);
    let above = rest.starts_with('>');
    let inclusive = rest[1..].starts_with('=');
    let bound_text = &rest[1 + usize::from(inclusive)..];
    let op = match above {
        true => Op::Above { inclusive },
        false => Op::Below { inclusive },
    };
    let metric = match name {
        "errors" => Metric::Errors,
        "rps" => Metric::Rps,
        _ => match LATENCIES.iter().find(|(latency, _)| *latency == name) {
            Some(&(name, quantile)) => Metric::Latency(name, quantile),
            None => {
                return Err(format!(
                "'{text}': unknown metric '{name}' (use p50, p90, p99, p99.9, max, errors or rps)"
            ))
            }
        },
    };
    let bound = parse_bound(metric, bound_text).map_err(|why| format!("'{text}': {why}"))?;
    Ok(Objective {
        metric,
        op,
        bound,
        bound_text: bound_text.to_owned(),
    })
}

/// The bound in the metric's unit.
fn parse_bound(metric: Metric, text: &str) -> Result<f64, String> {
    let number = |digits: &str| match digits.parse::<f64>() {
        Ok(value) if value.is_finite() && value >= 0.0 && !digits.starts_with('+') => Ok(value),
        _ => Err(format!("'{text}' is not a number followed by its unit")),
    };
    match metric {
        // The project's duration syntax, but the unit is required: `p99<5` is a typo.
        Metric::Latency(name, _) => {
            let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
            if digits.len() == text.len() {
                return Err(format!(
                    "{name} takes a duration with its unit: us, ms or s (e.g. {name}<50ms)"
                ));
            }
            number(digits)?;
            let duration = parse_duration(text)?;
            Ok(duration.as_nanos() as f64 / 1e3)
        }
        Metric::Errors => match text.strip_suffix('%') {
            Some(digits) => match number(digits)? {
                percent if percent <= 100.0 => Ok(percent),
                _ => Err("errors is a percentage, at most 100%".to_owned()),
            },
            None => Err("errors takes a percentage (e.g. errors<1%)".to_owned()),
        },
        Metric::Rps => {
            crate::cli::values::parse_si_number(text.strip_suffix("rps").unwrap_or(text))
                .ok()
                .filter(|rate| rate.is_finite() && *rate >= 0.0 && !text.starts_with('+'))
                .ok_or_else(|| {
                    "rps takes requests per second (e.g. rps>5000, rps>5k or rps>5000rps)"
                        .to_owned()
                })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn objective(text: &str) -> Objective {
        parse(text).unwrap_or_else(|error| panic!("{text}: {error}"))
    }

    #[test]
    fn parses_every_metric_unit_and_operator() {
        let p99 = objective("p99 < 50ms");
        assert_eq!(p99.metric, Metric::Latency("p99", 0.99));
        assert_eq!(p99.op, Op::Below { inclusive: false });
        assert_eq!(p99.bound, 50_000.0);
        assert_eq!(p99.to_string(), "p99<50ms");
        assert_eq!(objective("p99.9>=1.5s").bound, 1_500_000.0);
        assert_eq!(objective("p99.9>=1.5s").op, Op::Above { inclusive: true });
        assert_eq!(objective("max<=250us").bound, 250.0);
        assert_eq!(objective("p50<0.5ms").bound, 500.0);
        assert_eq!(objective("p90<2s").metric, Metric::Latency("p90", 0.9));
        assert_eq!(objective("errors < 0.5 %").bound, 0.5);
        assert_eq!(objective("errors>1%").to_string(), "errors>1%");
        assert_eq!(objective("rps>5000rps").bound, 5000.0);
        assert_eq!(objective("rps > 5000").bound, 5000.0);
    }

    #[test]
    fn rejects_what_is_not_the_grammar_with_a_reason() {
        for (text, reason) in [
            ("p98<1ms", "unknown metric 'p98'"),
            ("p99<5", "p99 takes a duration"),
            ("errors<2ms", "errors takes a percentage"),
            ("rps>1s", "rps takes requests per second"),
            ("p99=5ms", "no operator"),
            ("p99", "no operator"),
            ("<5ms", "unknown metric ''"),
            ("p99<ms", "is not a number"),
            ("p99<-1ms", "is not a number"),
            ("p99<NaNms", "is not a number"),
            ("p99<<5ms", "is not a number"),
            ("errors<101%", "at most 100%"),
        ] {
            let error = parse(text).expect_err(text);
            assert!(error.contains(reason), "{text}: {error}");
            assert!(!error.contains('\n'), "{text}: {error}");
        }
    }
}
