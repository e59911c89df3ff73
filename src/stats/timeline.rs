//! A cell's timeline: the threads' interval records merged into one summary per interval, and
//! where the last, possibly shorter, interval ends.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::plan::TimelineInterval;
use crate::recorder::hdr;

/// The timeline of a cell: one entry per interval in which something happened.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Timeline {
    /// Interval length, seconds.
    pub(crate) interval_s: f64,
    /// The end of the measured period, seconds after its start: the last interval ends here, so
    /// it may be shorter than `interval_s` (0 in reports from before this field).
    #[serde(default)]
    pub(crate) end_s: f64,
    /// Wall-clock start of the measured period, milliseconds since the Unix epoch (to line up the
    /// timelines of runs made on several machines).
    pub(crate) start_unix_ms: u64,
    /// The intervals, in order.
    pub(crate) intervals: Vec<IntervalSummary>,
}

/// One interval.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct IntervalSummary {
    /// Position: the interval covers `[index, index + 1) × interval_s` after the start.
    pub(crate) index: u64,
    /// Responses completed.
    pub(crate) completed: u64,
    /// Requests failed.
    pub(crate) errors: u64,
    /// The interval's real length, seconds: `interval_s`, except for a last one cut short by the
    /// end of the measured period.
    #[serde(default)]
    pub(crate) length_s: f64,
    /// Responses completed per second of the interval's real length.
    #[serde(default)]
    pub(crate) requests_per_s: f64,
    /// Response time median, µs.
    pub(crate) p50_us: u64,
    /// Response time 99th percentile, µs.
    pub(crate) p99_us: u64,
    /// Largest response time, µs.
    pub(crate) max_us: u64,
    /// The interval's response times, HdrHistogram V2 + deflate, base64.
    pub(crate) hdr: String,
    /// Its times to first byte, likewise.
    pub(crate) ttfb_hdr: String,
    /// Its service times (with `--rate`), likewise.
    pub(crate) service_hdr: Option<String>,
}

/// One interval's counts and histograms, summed over threads (or over runs, when merging).
#[derive(Debug)]
pub(crate) struct IntervalSums {
    completed: u64,
    errors: u64,
    request: Histogram<u64>,
    ttfb: Histogram<u64>,
    service: Option<Histogram<u64>>,
}

impl Default for IntervalSums {
    fn default() -> Self {
        IntervalSums {
            completed: 0,
            errors: 0,
            request: hdr::new_histogram(),
            ttfb: hdr::new_histogram(),
            service: None,
        }
    }
}

impl IntervalSums {
    /// Adds one part: its counts, and its histograms as V2 + deflate bytes. Counts that add up
    /// past 2^64 - 1 are an error naming the field, never a count that wraps.
    pub(crate) fn add(
        &mut self,
        completed: u64,
        errors: u64,
        request: &[u8],
        ttfb: &[u8],
        service: Option<&[u8]>,
    ) -> anyhow::Result<()> {
        for (sum, value, field) in [
            (&mut self.completed, completed, "completed"),
            (&mut self.errors, errors, "errors"),
        ] {
            *sum = sum
                .checked_add(value)
                .ok_or_else(|| anyhow::anyhow!("the intervals' {field} add up past 2^64 - 1"))?;
        }
        hdr::add_encoded(&mut self.request, request)?;
        hdr::add_encoded(&mut self.ttfb, ttfb)?;
        if let Some(service) = service {
            hdr::add_encoded(self.service.get_or_insert_with(hdr::new_histogram), service)?;
        }
        Ok(())
    }

    /// The interval as reported, at position `index`, `length_s` seconds long.
    pub(crate) fn summary(&self, index: u64, length_s: f64) -> IntervalSummary {
        IntervalSummary {
            index,
            completed: self.completed,
            errors: self.errors,
            length_s,
            requests_per_s: if length_s > 0.0 {
                self.completed as f64 / length_s
            } else {
                0.0
            },
            p50_us: self.request.value_at_quantile(0.5),
            p99_us: self.request.value_at_quantile(0.99),
            max_us: self.request.max(),
            hdr: hdr::to_base64(&self.request),
            ttfb_hdr: hdr::to_base64(&self.ttfb),
            service_hdr: self.service.as_ref().map(hdr::to_base64),
        }
    }
}

impl Timeline {
    /// Merges the threads' interval records (same index: counts add, histograms add), one
    /// interval at a time so memory holds one interval's histograms however long the run was.
    /// The measured period ended `elapsed` after its start: completions recorded at or after that
    /// instant (the drain's last responses) belong to the last interval, which ends there. An
    /// automatic length is re-bucketed to the longest round one that keeps
    /// [`TimelineInterval::MIN_INTERVALS`] intervals.
    pub(crate) fn new(
        intervals: &crate::recorder::Intervals,
        start: std::time::SystemTime,
        elapsed: Duration,
    ) -> Timeline {
        let length = if intervals.auto {
            TimelineInterval::longest_round(elapsed, intervals.length)
        } else {
            intervals.length
        };
        let factor = u64::try_from(length.as_nanos() / intervals.length.as_nanos().max(1))
            .unwrap_or(1)
            .max(1);
        let interval_s = length.as_secs_f64();
        let end_s = elapsed.as_secs_f64();
        let last = last_index(end_s, interval_s);
        let mut records = intervals.clone().into_closed();
        for record in &mut records {
            record.index = (record.index / factor).min(last);
        }
        records.sort_by_key(|record| record.index);
        let mut summaries = Vec::new();
        for same_interval in records.chunk_by(|a, b| a.index == b.index) {
            let mut sums = IntervalSums::default();
            for record in same_interval {
                sums.add(
                    record.completed,
                    record.errors,
                    &record.request,
                    &record.ttfb,
                    record.service.as_deref(),
                )
                .expect("recorded histograms decode");
            }
            let index = same_interval[0].index;
            summaries.push(sums.summary(index, interval_length(index, interval_s, end_s)));
        }
        Timeline {
            interval_s,
            end_s,
            start_unix_ms: unix_ms(start),
            intervals: summaries,
        }
    }
}

impl Timeline {
    /// Where `interval` starts, seconds after the start of the measured period.
    pub(crate) fn start_of(&self, interval: &IntervalSummary) -> f64 {
        interval.index as f64 * self.interval_s
    }

    /// `interval`'s real length (reports from before `length_s` only had full intervals).
    pub(crate) fn length_of(&self, interval: &IntervalSummary) -> f64 {
        if interval.length_s > 0.0 {
            interval.length_s
        } else {
            self.interval_s
        }
    }

    /// Responses completed per second of `interval`'s real length.
    pub(crate) fn rate_of(&self, interval: &IntervalSummary) -> f64 {
        interval.completed as f64 / self.length_of(interval)
    }
}

/// The index of the last interval of a period `end_s` long: the one holding its end, or the one
/// before when the end falls in the first quarter of an interval, so a few drained responses do
/// not make a stub interval with a meaningless rate.
pub(crate) fn last_index(end_s: f64, interval_s: f64) -> u64 {
    if interval_s <= 0.0 || end_s <= 0.0 {
        return 0;
    }
    let intervals = end_s / interval_s;
    let holding = intervals.floor() as u64;
    if intervals - holding as f64 <= 0.25 {
        holding.saturating_sub(1)
    } else {
        holding
    }
}

/// The real length of interval `index`: the last one ends at the end of the period `end_s` (0:
/// unknown), so it may be shorter than `interval_s`, or longer when it took a stub in.
pub(crate) fn interval_length(index: u64, interval_s: f64, end_s: f64) -> f64 {
    if end_s > 0.0 && index == last_index(end_s, interval_s) {
        end_s - index as f64 * interval_s
    } else {
        interval_s
    }
}

/// The wall-clock start of a run, for logs and merging.
fn unix_ms(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_counts_past_two_to_the_64_are_refused() {
        let empty = hdr::encode(&hdr::new_histogram());
        let mut sums = IntervalSums::default();
        sums.add(u64::MAX, 1, &empty, &empty, None).unwrap();
        let error = sums.add(1, 0, &empty, &empty, None).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the intervals' completed add up past 2^64 - 1"
        );
        let error = sums.add(0, u64::MAX, &empty, &empty, None).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the intervals' errors add up past 2^64 - 1"
        );
    }

    #[test]
    fn the_last_interval_ends_at_the_measured_end() {
        // 2.5 s in 1 s intervals: the last is [2, 2.5), half a second long.
        assert_eq!(last_index(2.5, 1.0), 2);
        assert!((interval_length(2, 1.0, 2.5) - 0.5).abs() < 1e-12);
        assert_eq!(interval_length(1, 1.0, 2.5), 1.0);
        // A 2 ms drain past 2 s is no interval of its own: it joins [1, 2.002).
        assert_eq!(last_index(2.002, 1.0), 1);
        assert!((interval_length(1, 1.0, 2.002) - 1.002).abs() < 1e-12);
        // Reports from before end_s: every interval full.
        assert_eq!(interval_length(3, 1.0, 0.0), 1.0);
    }

    #[test]
    fn automatic_lengths_are_round_and_give_twenty_intervals() {
        let base = TimelineInterval::AUTO_BASE;
        let ms = Duration::from_millis;
        assert_eq!(TimelineInterval::longest_round(ms(2500), base), ms(100));
        assert_eq!(TimelineInterval::longest_round(ms(60_000), base), ms(1000));
        assert_eq!(TimelineInterval::longest_round(ms(300), base), ms(10));
        assert_eq!(TimelineInterval::longest_round(ms(50), base), base);
        // Recorded at 20 ms (a long run that coarsened): 50 ms is no multiple, 100 ms is.
        assert_eq!(TimelineInterval::longest_round(ms(2400), ms(20)), ms(100));
    }
}
