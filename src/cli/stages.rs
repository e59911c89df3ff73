//! `--stages D:R[,D:R...]` values: one [`Stage`] of the ramp, parsed and shown as given. The
//! curve they make (`Stages`, and each thread's `Share` of it) is `plan::stages`.

use std::fmt;
use std::time::Duration;

use crate::limits::{MAX_RATE, MIN_RATE};
use crate::units::parse_duration;

/// One stage: the rate reaches `rate` (requests per second, in total) after `duration`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    /// How long the ramp lasts; zero is a step change.
    pub duration: Duration,
    /// The rate at the stage's end.
    pub rate: f64,
}

impl Stage {
    /// Parses `D:R` (`30s:1000`): a duration in the project's notation, then a rate that is zero
    /// (a ramp down to, or a pause at, no load) or within `--rate`'s limits.
    pub fn parse(text: &str) -> Result<Stage, String> {
        let Some((duration, rate)) = text.split_once(':') else {
            return Err(format!(
                "'{text}' is not a stage DURATION:RATE (example: 30s:1000)"
            ));
        };
        let duration = parse_duration(duration)?;
        let rate = match crate::cli::values::parse_si_number(rate.trim()) {
            Ok(rate) if rate == 0.0 || (MIN_RATE..=MAX_RATE).contains(&rate) => rate,
            _ => {
                return Err(format!(
                    "'{text}': the rate must be 0 or between {MIN_RATE} and {MAX_RATE} requests per second"
                ))
            }
        };
        Ok(Stage { duration, rate })
    }
}

impl fmt::Display for Stage {
    /// `2s:200`, as given (durations in the largest unit that keeps them whole).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", short_duration(self.duration), self.rate)
    }
}

/// A duration in the largest of h, m, s, ms, us that shows it whole.
fn short_duration(duration: Duration) -> String {
    let micros = duration.as_micros();
    for (unit, per) in [
        ("h", 3_600_000_000),
        ("m", 60_000_000),
        ("s", 1_000_000),
        ("ms", 1000),
    ] {
        if micros >= per && micros.is_multiple_of(per) {
            return format!("{}{unit}", micros / per);
        }
    }
    format!("{micros}us")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_shows_stages() {
        assert_eq!(
            Stage::parse("30s:1000"),
            Ok(Stage {
                duration: Duration::from_secs(30),
                rate: 1000.0
            })
        );
        assert_eq!(Stage::parse("1m:0").unwrap().to_string(), "1m:0");
        assert_eq!(
            Stage::parse("1500ms:2.5").unwrap().to_string(),
            "1500ms:2.5"
        );
        for bad in [
            "2s",
            "2s:-5",
            "2s:x",
            "x:5",
            "2s:0.0001",
            "2s:1e9",
            "2s:NaN",
        ] {
            assert!(Stage::parse(bad).is_err(), "{bad}");
        }
    }
}
