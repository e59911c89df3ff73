//! `--stages D:R[,D:R...]`, k6's ramping arrival rate: each [`Stage`] (`D:R`, parsed and shown as
//! given) moves the offered rate linearly from the previous stage's rate to R over D. The
//! schedule is the inverse of the cumulative request count N(t) (the area under the rate curve,
//! piecewise quadratic), so the k-th send time is computed afresh, never accumulated from
//! 1/rate(t) steps that would drift.

use std::fmt;
use std::time::Duration;

use crate::limits::{MAX_RATE, MIN_RATE};
use crate::units::{parse_duration, MAX_DURATION};

/// One stage: the rate reaches `rate` (requests per second, in total) after `duration`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Stage {
    /// How long the ramp lasts; zero is a step change.
    pub(crate) duration: Duration,
    /// The rate at the stage's end.
    pub(crate) rate: f64,
}

impl Stage {
    /// Parses `D:R` (`30s:1000`): a duration in the project's notation, then a rate that is zero
    /// (a ramp down to, or a pause at, no load) or within `--rate`'s limits.
    pub(crate) fn parse(text: &str) -> Result<Stage, String> {
        let Some((duration, rate)) = text.split_once(':') else {
            return Err(format!(
                "'{text}' is not a stage DURATION:RATE (example: 30s:1000)"
            ));
        };
        let duration = parse_duration(duration)?;
        let rate = match crate::units::parse_si_number(rate.trim()) {
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

/// A whole ramp: the starting rate, then the stages in order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Stages {
    /// The rate at time zero (`--rate`, else 0).
    pub(crate) start_rate: f64,
    /// The stages, at least one.
    pub(crate) stages: Vec<Stage>,
    /// Each stage as a segment of the rate curve, for the inversion.
    segments: Vec<Segment>,
}

/// A stage on the curve: from `begins` (seconds) it ramps from `from` to `to` over `length`,
/// `before` requests having been due by then.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Segment {
    begins: f64,
    length: f64,
    from: f64,
    to: f64,
    before: f64,
}

impl Segment {
    /// Requests due over the whole segment: the area of its trapezoid.
    fn area(&self) -> f64 {
        (self.from + self.to) / 2.0 * self.length
    }
}

impl Stages {
    /// The ramp from `start_rate` through `stages`; `Err` when it would last longer than the
    /// longest duration accepted or sends nothing at all.
    pub(crate) fn new(start_rate: f64, stages: Vec<Stage>) -> Result<Stages, String> {
        let mut segments = Vec::with_capacity(stages.len());
        let (mut begins, mut from, mut before) = (0.0, start_rate, 0.0);
        for stage in &stages {
            let segment = Segment {
                begins,
                length: stage.duration.as_secs_f64(),
                from,
                to: stage.rate,
                before,
            };
            before += segment.area();
            begins += segment.length;
            from = stage.rate;
            segments.push(segment);
        }
        if stages.is_empty() || begins > MAX_DURATION.as_secs_f64() {
            return Err("--stages must last between 1us and 30 days in total".to_owned());
        }
        if before < 1.0 {
            return Err(format!(
                "--stages {} offers {before:.3} requests in all: no request would be sent",
                Self::list(&stages)
            ));
        }
        Ok(Stages {
            start_rate,
            stages,
            segments,
        })
    }

    /// The same ramp at `share` of its rates (a `--shard`'s part): every rate, and so every
    /// count of the curve, times `share`.
    pub(crate) fn scaled(&self, share: f64) -> Stages {
        Stages {
            start_rate: self.start_rate * share,
            stages: self
                .stages
                .iter()
                .map(|stage| Stage {
                    rate: stage.rate * share,
                    ..*stage
                })
                .collect(),
            segments: self
                .segments
                .iter()
                .map(|segment| Segment {
                    from: segment.from * share,
                    to: segment.to * share,
                    before: segment.before * share,
                    ..*segment
                })
                .collect(),
        }
    }

    /// `2s:200,2s:2000`.
    fn list(stages: &[Stage]) -> String {
        let shown: Vec<String> = stages.iter().map(Stage::to_string).collect();
        shown.join(",")
    }

    /// The sum of the stages' durations: the measured period.
    pub(crate) fn duration(&self) -> Duration {
        self.stages.iter().map(|stage| stage.duration).sum()
    }

    /// Requests the curve offers in all (the area under it).
    pub(crate) fn total(&self) -> f64 {
        self.segments
            .last()
            .map_or(0.0, |last| last.before + last.area())
    }

    /// The rate offered at `at` from the start (the last stage's rate after the end).
    pub(crate) fn rate_at(&self, at: Duration) -> f64 {
        let at = at.as_secs_f64();
        let index = self
            .segments
            .partition_point(|segment| segment.begins + segment.length <= at);
        match self.segments.get(index) {
            Some(segment) if segment.length > 0.0 => {
                let into = ((at - segment.begins) / segment.length).clamp(0.0, 1.0);
                segment.from + (segment.to - segment.from) * into
            }
            Some(segment) => segment.to,
            None => self
                .stages
                .last()
                .map_or(self.start_rate, |stage| stage.rate),
        }
    }

    /// When (from the start) the cumulative count N(t) reaches `count`; the end of the stages
    /// when it never does. Monotonic in `count`.
    pub(crate) fn time_of(&self, count: f64) -> Duration {
        // The first segment whose end is past `count`: a segment with nothing due (a step, or a
        // pause at zero) is skipped.
        let index = self
            .segments
            .partition_point(|segment| segment.before + segment.area() < count);
        let Some(segment) = self.segments.get(index) else {
            return self.duration();
        };
        let due = (count - segment.before).max(0.0);
        // N(s) = from·s + slope/2·s² = due, solved as 2·due / (from + √(from² + 2·slope·due)):
        // exact for a flat stage (slope 0) and free of cancellation when the rate falls.
        let slope = (segment.to - segment.from) / segment.length;
        let root = (segment.from * segment.from + 2.0 * slope * due)
            .max(0.0)
            .sqrt();
        let denominator = segment.from + root;
        let into = if denominator > 0.0 {
            (2.0 * due / denominator).min(segment.length)
        } else {
            0.0
        };
        Duration::from_secs_f64(segment.begins + into)
    }
}

impl fmt::Display for Stages {
    /// `2s:200,2s:2000`, led by the starting rate when it is not zero (`100,2s:200`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.start_rate > 0.0 {
            write!(f, "{},", self.start_rate)?;
        }
        f.write_str(&Self::list(&self.stages))
    }
}

/// One thread's share of a ramp: its `k`-th request (from 0) is due when the thread's part of
/// N(t) reaches k + ½, so over any span it sends the area under its curve to within one request.
#[derive(Debug, Clone)]
pub(crate) struct Share {
    stages: Stages,
    /// The thread's fraction of the total rate (its connections / all connections).
    fraction: f64,
    /// Where its first request falls on its part of N(t): ½, or a `--shard`'s place among the
    /// whole ramp's send times.
    first: f64,
}

impl Share {
    /// The part `fraction` (0..=1) of `stages`.
    pub(crate) fn new(stages: Stages, fraction: f64) -> Share {
        Share {
            stages,
            fraction,
            first: 0.5,
        }
    }

    /// The share of shard `shard`, whose ramp is the whole one's times 1/N: it takes every N-th
    /// of the whole ramp's send times from the I-th (the whole's k-th is due at N(t) = k + ½,
    /// which is the shard's N(t)/N = j + (I - ½)/N for k = I - 1 + jN), so the N shards'
    /// times together are the whole's.
    pub(crate) fn striped(self, shard: &super::shard::Shard) -> Share {
        Share {
            first: shard.phase() + 0.5 / shard.count as f64,
            ..self
        }
    }

    /// When (from the start) this thread's request `index` (from 0) is due; the end of the
    /// stages once the curve has no more for it.
    pub(crate) fn send_time(&self, index: u64) -> Duration {
        self.time_at(index as f64 + self.first)
    }

    /// When (from the start) the thread's part of N(t) reaches `position` (Poisson arrivals
    /// put their send times at positions of their own).
    pub(crate) fn time_at(&self, position: f64) -> Duration {
        self.stages.time_of(position / self.fraction)
    }
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

    fn stages(start: f64, list: &str) -> Stages {
        let parsed = list.split(',').map(|s| Stage::parse(s).unwrap()).collect();
        Stages::new(start, parsed).unwrap()
    }

    /// How many of a share's send times fall before `end` seconds.
    fn sent_before(share: &Share, end: f64) -> u64 {
        (0..)
            .take_while(|&k| share.send_time(k).as_secs_f64() < end)
            .count() as u64
    }

    #[test]
    fn shards_take_every_nth_send_time_of_the_whole_ramp() {
        use crate::plan::shard::Shard;
        let ramp = stages(50.0, "2s:200,0s:1000,1s:0");
        let whole = Share::new(ramp.clone(), 1.0);
        let all: Vec<Duration> = (0..)
            .map(|k| whole.send_time(k))
            .take_while(|time| *time < ramp.duration())
            .collect();
        for count in [1, 3, 7] {
            let mut union: Vec<(Duration, u64)> = Vec::new();
            for index in 1..=count {
                let shard = Shard { index, count };
                let part = Share::new(ramp.scaled(1.0 / count as f64), 1.0).striped(&shard);
                union.extend(
                    (0..)
                        .map(|j| part.send_time(j))
                        .take_while(|time| *time < ramp.duration())
                        .map(|time| (time, index)),
                );
            }
            union.sort();
            assert_eq!(union.len(), all.len(), "{count} shards");
            for (k, ((time, index), whole)) in union.iter().zip(&all).enumerate() {
                let apart = time.abs_diff(*whole);
                assert!(
                    apart < Duration::from_micros(1),
                    "{count} shards, time {k}: {apart:?}"
                );
                assert_eq!(*index, k as u64 % count + 1, "{count} shards, time {k}");
            }
        }
    }

    #[test]
    fn shows_stages_led_by_the_start_rate() {
        assert_eq!(stages(0.0, "2s:200,2s:2000").to_string(), "2s:200,2s:2000");
        assert_eq!(stages(100.0, "2s:200").to_string(), "100,2s:200");
    }

    #[test]
    fn the_rate_at_a_time_follows_the_curve() {
        let ramp = stages(100.0, "2s:200,0s:1000,1s:0");
        let at = |seconds: f64| ramp.rate_at(Duration::from_secs_f64(seconds));
        assert_eq!(at(0.0), 100.0);
        assert!((at(1.0) - 150.0).abs() < 1e-9);
        // The step at 2 s: its new rate from that instant on.
        assert!((at(2.0) - 1000.0).abs() < 1e-9);
        assert!((at(2.5) - 500.0).abs() < 1e-9);
        assert_eq!(at(3.0), 0.0);
        assert_eq!(at(60.0), 0.0);
    }

    #[test]
    fn a_ramp_sends_the_area_under_its_curve() {
        // 0→200 over 2 s, then 200→2000 over 2 s: 200 + 2200 requests.
        let ramp = stages(0.0, "2s:200,2s:2000");
        assert_eq!(ramp.total(), 2400.0);
        assert_eq!(ramp.duration(), Duration::from_secs(4));
        let whole = Share::new(ramp.clone(), 1.0);
        assert_eq!(sent_before(&whole, 2.0), 200);
        assert_eq!(sent_before(&whole, 4.0), 2400);
        // Within one request of the area anywhere on the curve, e.g. at 1 s: 50, at 3 s: 200 + 650.
        for (at, area) in [(1.0, 50.0), (3.0, 850.0), (0.5, 12.5), (3.5, 1512.5)] {
            let sent = sent_before(&whole, at) as f64;
            assert!(
                (sent - area).abs() <= 1.0,
                "at {at}s: {sent} sent, {area} due"
            );
        }
        // Shares of 3 and 5 connections out of 8 add up to the whole, each within one request.
        let parts: Vec<u64> = [3.0, 5.0]
            .into_iter()
            .map(|part| sent_before(&Share::new(ramp.clone(), part / 8.0), 4.0))
            .collect();
        assert_eq!(parts, [900, 1500]);
    }

    #[test]
    fn send_times_are_monotonic_through_every_kind_of_stage() {
        // A step up from 0, a flat stage, a ramp down to 0, a pause, a ramp back up.
        let ramp = stages(0.0, "0s:100,1s:100,1s:0,1s:0,1s:50");
        assert_eq!(ramp.total(), 100.0 + 50.0 + 25.0);
        let whole = Share::new(ramp, 1.0);
        let times: Vec<Duration> = (0..175).map(|k| whole.send_time(k)).collect();
        assert!(times.windows(2).all(|pair| pair[0] <= pair[1]));
        // The step: the first request is due half a period in, at 100/s.
        assert_eq!(times[0], Duration::from_millis(5));
        // Nothing is due during the pause (2 s..3 s).
        assert!(!times.iter().any(|t| (2.0..3.0).contains(&t.as_secs_f64())));
        // Past the end, the end.
        assert_eq!(whole.send_time(175), Duration::from_secs(4));
    }

    #[test]
    fn a_ramp_starts_from_the_given_rate() {
        // From 100 to 300 over 1 s: 200 requests, the first at 5 ms (100/s at the start).
        let ramp = stages(100.0, "1s:300");
        let whole = Share::new(ramp, 1.0);
        assert_eq!(sent_before(&whole, 1.0), 200);
        let first = whole.send_time(0).as_secs_f64();
        assert!((first - 0.005).abs() < 1e-4, "{first}");
    }

    #[test]
    fn a_ramp_that_sends_nothing_is_refused() {
        let zero = vec![Stage::parse("10s:0").unwrap()];
        assert!(Stages::new(0.0, zero).is_err());
        assert!(Stages::new(0.0, Vec::new()).is_err());
    }
}
