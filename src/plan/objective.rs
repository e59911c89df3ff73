//! Objectives (`--fail-if`, `--slo`): the `METRIC OP VALUE` grammar ([`parse`]) and the
//! [`Objective`] it yields, then what a run (or a step of one) measured checked against one, and
//! the messages that show the outcome.

use std::fmt;

use hdrhistogram::Histogram;

use crate::units::parse_duration;

/// What an objective measures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Metric {
    /// A quantile (1.0: the largest value) of a latency, named as the grammar spells it, in
    /// microseconds.
    Latency(Figure, &'static str, f64),
    /// Failed requests over finished ones, in percent (h2load's failed: error statuses and errors).
    Errors,
    /// Achieved requests per second.
    Rps,
}

/// The latency an objective reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Figure {
    /// The request's (`p99`): send, or with `--rate` the scheduled send, to the last byte.
    Request,
    /// An event stream's time to its first event (`first_event_p99`).
    FirstEvent,
    /// The gaps between an event stream's events (`event_gap_p99`).
    EventGap,
}

/// The latency metrics and their quantiles, in the order the report prints them.
const LATENCIES: [(Figure, &str, f64); 15] = [
    (Figure::Request, "p50", 0.5),
    (Figure::Request, "p90", 0.9),
    (Figure::Request, "p99", 0.99),
    (Figure::Request, "p99.9", 0.999),
    (Figure::Request, "max", 1.0),
    (Figure::FirstEvent, "first_event_p50", 0.5),
    (Figure::FirstEvent, "first_event_p90", 0.9),
    (Figure::FirstEvent, "first_event_p99", 0.99),
    (Figure::FirstEvent, "first_event_p99.9", 0.999),
    (Figure::FirstEvent, "first_event_max", 1.0),
    (Figure::EventGap, "event_gap_p50", 0.5),
    (Figure::EventGap, "event_gap_p90", 0.9),
    (Figure::EventGap, "event_gap_p99", 0.99),
    (Figure::EventGap, "event_gap_p99.9", 0.999),
    (Figure::EventGap, "event_gap_max", 1.0),
];

impl Metric {
    /// The metric as the grammar spells it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Metric::Latency(_, name, _) => name,
            Metric::Errors => "errors",
            Metric::Rps => "rps",
        }
    }
}

/// The comparison an objective makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
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
pub(crate) struct Objective {
    /// What is measured.
    pub(crate) metric: Metric,
    /// How it is compared.
    pub(crate) op: Op,
    /// The bound, in the metric's unit (µs, percent, requests per second).
    pub(crate) bound: f64,
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
/// the same of an event stream's time to first event and gaps with `first_event_` or
/// `event_gap_` before them (`first_event_p99`, `event_gap_max`),
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
        _ => match LATENCIES.iter().find(|(_, latency, _)| *latency == name) {
            Some(&(figure, name, quantile)) => Metric::Latency(figure, name, quantile),
            None => {
                return Err(format!(
                "'{text}': unknown metric '{name}' (use p50, p90, p99, p99.9, max, errors or rps; first_event_ or event_gap_ before a percentile for event streams)"
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
        Metric::Latency(_, name, _) => {
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
        Metric::Rps => crate::units::parse_si_number(text.strip_suffix("rps").unwrap_or(text))
            .ok()
            .filter(|rate| rate.is_finite() && *rate >= 0.0 && !text.starts_with('+'))
            .ok_or_else(|| {
                "rps takes requests per second (e.g. rps>5000, rps>5k or rps>5000rps)".to_owned()
            }),
    }
}

/// What a run (or a step of one) measured, as objectives read it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Measured<'a> {
    /// Request latency, µs.
    pub(crate) latency: &'a Histogram<u64>,
    /// An event-stream cell's time to first event and gaps between events, µs (`None` when it
    /// read no event).
    pub(crate) first_event: Option<&'a Histogram<u64>>,
    pub(crate) event_gap: Option<&'a Histogram<u64>>,
    /// Requests accounted for: finished, or never sent (`-n` requests no connection carried).
    pub(crate) done: u64,
    /// Of them, the ones that did not succeed (error statuses, errors, never sent).
    pub(crate) failed: u64,
    /// Requests finished per second.
    pub(crate) achieved_rps: f64,
}

impl<'a> Measured<'a> {
    /// The histogram a latency figure is read from, if the run has it.
    pub(crate) fn histogram(&self, figure: Figure) -> Option<&'a Histogram<u64>> {
        match figure {
            Figure::Request => Some(self.latency),
            Figure::FirstEvent => self.first_event,
            Figure::EventGap => self.event_gap,
        }
    }
}

impl Objective {
    /// The metric's value in `measured`, in the metric's unit. An empty latency histogram reads
    /// 0, as in the report's percentiles (an absent one too: [`Objective::check`] then holds
    /// nothing); with no request at all, `errors` reads 100%: nothing succeeded, and a threshold
    /// on errors must see a dead server.
    pub(crate) fn value(&self, measured: &Measured) -> f64 {
        match self.metric {
            Metric::Latency(figure, _, quantile) => {
                measured.histogram(figure).map_or(0.0, |histogram| {
                    if quantile >= 1.0 {
                        histogram.max() as f64
                    } else {
                        histogram.value_at_quantile(quantile) as f64
                    }
                })
            }
            Metric::Errors if measured.done == 0 => 100.0,
            Metric::Errors => 100.0 * measured.failed as f64 / measured.done as f64,
            Metric::Rps => measured.achieved_rps,
        }
    }

    /// Whether `value` makes the expression true.
    pub(crate) fn holds(&self, value: f64) -> bool {
        match self.op {
            Op::Below { inclusive } => value < self.bound || (inclusive && value == self.bound),
            Op::Above { inclusive } => value > self.bound || (inclusive && value == self.bound),
        }
    }

    /// Whether the expression is an upper bound (`<`, `<=`): only those can be objectives of a
    /// capacity search, whose latency and errors grow with the rate.
    pub(crate) fn is_upper_bound(&self) -> bool {
        matches!(self.op, Op::Below { .. })
    }

    /// `value` in the metric's unit, as messages show it: `84.2ms`, `0.50%`, `4,950 req/s`.
    pub(crate) fn show(&self, value: f64) -> String {
        match self.metric {
            Metric::Latency(..) => show_micros(value),
            Metric::Errors => format!("{value:.2}%"),
            Metric::Rps => format!("{value:.1} req/s"),
        }
    }

    /// `p99 84.2ms > 50ms`: the metric, its measured value, the operator and the bound.
    pub(crate) fn describe(&self, value: f64) -> String {
        format!(
            "{} {} {} {}",
            self.metric.name(),
            self.show(value),
            self.op.symbol(),
            self.bound_text
        )
    }

    /// Checks the objective against `measured`: a latency the run does not have (an event
    /// figure of a run that read no event) makes it hold neither way.
    pub(crate) fn check(&self, measured: &Measured) -> Checked {
        let value = self.value(measured);
        let measurable = match self.metric {
            Metric::Latency(figure, ..) => measured.histogram(figure).is_some(),
            _ => true,
        };
        Checked {
            expr: self.to_string(),
            value,
            holds: measurable && self.holds(value),
        }
    }
}

/// `--slo` objectives bound latency and errors from above: a capacity search raises the rate
/// until one breaks, so `>` (which a higher rate could only make true) and `rps` (which the
/// search sets itself) are usage errors.
pub(crate) fn check_slo(objectives: &[Objective]) -> anyhow::Result<()> {
    for objective in objectives {
        if !objective.is_upper_bound() {
            crate::usage_bail!("--slo '{objective}': an objective is what must hold as the rate rises, an upper bound with < or <= (use --fail-if for a threshold with >)");
        }
        if objective.metric == Metric::Rps {
            crate::usage_bail!("--slo '{objective}': --find-max sets the rate itself; objectives bound p50, p90, p99, p99.9, max or errors");
        }
        if let Metric::Latency(Figure::FirstEvent | Figure::EventGap, ..) = objective.metric {
            crate::usage_bail!("--slo '{objective}': a capacity search judges its steps on request latency and errors; event figures are thresholds of --fail-if for now");
        }
    }
    Ok(())
}

/// One objective checked against a run: the expression, the measured value and the outcome.
#[derive(Debug, Clone)]
pub(crate) struct Checked {
    /// The expression, canonically spelled (`p99>50ms`).
    pub(crate) expr: String,
    /// The measured value in the metric's unit (µs, percent, requests per second).
    pub(crate) value: f64,
    /// Whether the expression is true.
    pub(crate) holds: bool,
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
    use crate::recorder::hdr;

    fn objective(text: &str) -> Objective {
        parse(text).unwrap_or_else(|error| panic!("{text}: {error}"))
    }

    #[test]
    fn parses_every_metric_unit_and_operator() {
        let p99 = objective("p99 < 50ms");
        assert_eq!(p99.metric, Metric::Latency(Figure::Request, "p99", 0.99));
        assert_eq!(p99.op, Op::Below { inclusive: false });
        assert_eq!(p99.bound, 50_000.0);
        assert_eq!(p99.to_string(), "p99<50ms");
        assert_eq!(objective("p99.9>=1.5s").bound, 1_500_000.0);
        assert_eq!(objective("p99.9>=1.5s").op, Op::Above { inclusive: true });
        assert_eq!(objective("max<=250us").bound, 250.0);
        assert_eq!(objective("p50<0.5ms").bound, 500.0);
        assert_eq!(
            objective("p90<2s").metric,
            Metric::Latency(Figure::Request, "p90", 0.9)
        );
        assert_eq!(
            objective("first_event_p99 < 200ms").metric,
            Metric::Latency(Figure::FirstEvent, "first_event_p99", 0.99)
        );
        assert_eq!(
            objective("event_gap_max<=1s").to_string(),
            "event_gap_max<=1s"
        );
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
        let gaps = histogram(1..=10);
        let measured = Measured {
            latency: &latency,
            first_event: None,
            event_gap: Some(&gaps),
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
        // An event figure the run does not have holds neither way.
        assert!(!holds("first_event_p99<1s") && !holds("first_event_p99>1us"));
        assert_eq!(value("event_gap_max<1ms"), 10.0);
        assert!(holds("event_gap_p50<=5us"));
        let nothing = Measured {
            latency: &empty,
            first_event: None,
            event_gap: None,
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
