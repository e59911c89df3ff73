//! The timeline: per-interval counts and histograms, rotated as time passes and merged across
//! threads, with the closed intervals kept encoded.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::hdr::{self, new_histogram};
use crate::plan::TimelineInterval;

/// One thread's measurements of one interval, histograms encoded (V2 + deflate) to stay small.
#[derive(Debug, Clone)]
pub(crate) struct IntervalRecord {
    /// Which interval: 0 is the first of the measured period.
    pub(crate) index: u64,
    /// Responses completed in it.
    pub(crate) completed: u64,
    /// Requests that failed in it.
    pub(crate) errors: u64,
    /// Response times of its responses.
    pub(crate) request: Vec<u8>,
    /// Times to first byte.
    pub(crate) ttfb: Vec<u8>,
    /// Service times (rate mode).
    pub(crate) service: Option<Vec<u8>>,
}

impl IntervalRecord {
    /// Adds `other` (an interval of the same index) to this one.
    fn absorb(&mut self, other: &IntervalRecord) {
        fn add(mine: &mut Vec<u8>, theirs: &[u8]) {
            let mut sum = hdr::decode(mine).expect("recorded histograms decode");
            sum.add(hdr::decode(theirs).expect("recorded histograms decode"))
                .expect("histograms share bounds");
            *mine = hdr::encode(&sum);
        }
        self.completed += other.completed;
        self.errors += other.errors;
        add(&mut self.request, &other.request);
        add(&mut self.ttfb, &other.ttfb);
        if let (Some(mine), Some(theirs)) = (&mut self.service, &other.service) {
            add(mine, theirs);
        }
    }
}

/// When the interval length is chosen automatically (no `--interval`), a thread that has closed
/// this many intervals makes them 2 or 5 times longer, merging neighbours: memory stays bounded
/// however long a `-n` run takes, and the report re-buckets to its final length anyway.
const MAX_AUTO_INTERVALS: usize = 2048;

/// The timeline: counts and histograms per interval, rotated as time passes. Memory stays flat:
/// only the current interval has full histograms; closed ones are kept encoded.
#[derive(Debug, Clone)]
pub(crate) struct Intervals {
    /// Interval length.
    pub(crate) length: Duration,
    /// Whether the length was chosen automatically, so it may grow (see [`MAX_AUTO_INTERVALS`]).
    pub(crate) auto: bool,
    start: Instant,
    current: u64,
    ends_at: Instant,
    completed: u64,
    errors: u64,
    request: Histogram<u64>,
    ttfb: Histogram<u64>,
    service: Option<Histogram<u64>>,
    closed: Vec<IntervalRecord>,
}

impl Intervals {
    pub(super) fn new(start: Instant, length: Duration, auto: bool, rate_mode: bool) -> Self {
        Intervals {
            length,
            auto,
            start,
            current: 0,
            ends_at: start + length,
            completed: 0,
            errors: 0,
            request: new_histogram(),
            ttfb: new_histogram(),
            service: rate_mode.then(new_histogram),
            closed: Vec::new(),
        }
    }

    /// Moves to the interval holding `at`, closing the current one if `at` is past it.
    fn advance(&mut self, at: Instant) {
        if at < self.ends_at {
            return;
        }
        self.close();
        if self.auto && self.closed.len() >= MAX_AUTO_INTERVALS {
            // Along 1-2-10-20-100… multiples of the base, so the report can still pick a round
            // length (10, 20, 50, 100, 200, 500 ms, 1 s) that is a multiple of this one.
            let units = self.length.as_nanos() / TimelineInterval::AUTO_BASE.as_nanos();
            let power_of_ten = units > 0 && 10u128.pow(units.ilog10()) == units;
            self.coarsen(if power_of_ten { 2 } else { 5 });
        }
        let elapsed = at.saturating_duration_since(self.start).as_nanos();
        self.current = (elapsed / self.length.as_nanos().max(1)) as u64;
        self.ends_at = self.start + self.length.mul_f64((self.current + 1) as f64);
    }

    /// Makes the closed intervals `factor` times longer, merging the ones that now share an index.
    fn coarsen(&mut self, factor: u32) {
        if factor <= 1 {
            return;
        }
        self.length *= factor;
        let mut merged: Vec<IntervalRecord> = Vec::with_capacity(self.closed.len());
        self.closed.sort_by_key(|record| record.index);
        for mut record in self.closed.drain(..) {
            record.index /= u64::from(factor);
            match merged.last_mut() {
                Some(last) if last.index == record.index => last.absorb(&record),
                _ => merged.push(record),
            }
        }
        self.closed = merged;
    }

    pub(super) fn completed(&mut self, at: Instant, response: u64, ttfb: u64, service: u64) {
        self.advance(at);
        self.completed += 1;
        self.request.saturating_record(response);
        self.ttfb.saturating_record(ttfb);
        if let Some(histogram) = &mut self.service {
            histogram.saturating_record(service);
        }
    }

    pub(super) fn errored(&mut self, at: Instant, count: u64) {
        self.advance(at);
        self.errors += count;
    }

    /// Stores the current interval (if anything happened in it) and starts it afresh.
    fn close(&mut self) {
        if self.completed == 0 && self.errors == 0 {
            return;
        }
        self.closed.push(IntervalRecord {
            index: self.current,
            completed: self.completed,
            errors: self.errors,
            request: hdr::encode(&self.request),
            ttfb: hdr::encode(&self.ttfb),
            service: self.service.as_ref().map(hdr::encode),
        });
        self.completed = 0;
        self.errors = 0;
        self.request.reset();
        self.ttfb.reset();
        if let Some(histogram) = &mut self.service {
            histogram.reset();
        }
    }

    /// Adds another thread's intervals, first bringing both to the longer of their lengths.
    pub(super) fn merge(&mut self, other: Intervals) {
        let mut other_closed = other;
        other_closed.close();
        let ratio = |long: Duration, short: Duration| {
            u32::try_from(long.as_nanos() / short.as_nanos().max(1)).unwrap_or(u32::MAX)
        };
        if other_closed.length > self.length {
            self.close();
            self.coarsen(ratio(other_closed.length, self.length));
        } else {
            other_closed.coarsen(ratio(self.length, other_closed.length));
        }
        self.closed.extend(other_closed.closed);
    }

    /// Every interval, the current one included; threads' records of one index are merged later.
    pub(crate) fn into_closed(mut self) -> Vec<IntervalRecord> {
        self.close();
        self.closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::tests::{sample, SECOND};
    use crate::recorder::{Recorder, RequestStart, ResponseSample};

    #[test]
    fn intervals_rotate_and_keep_encoded_histograms() {
        let t0 = Instant::now();
        let mut rec = Recorder::new(t0, 1, SECOND, false);
        for (at_ms, status) in [(100, 200), (900, 200), (1_100, 200), (3_500, 200)] {
            let end = t0 + Duration::from_millis(at_ms);
            let start = RequestStart::first(
                end - Duration::from_millis(50),
                end - Duration::from_millis(50),
                1,
            );
            rec.response(
                0,
                ResponseSample {
                    start,
                    first_byte: end,
                    end,
                    status,
                    grpc: None,
                },
            );
        }
        let intervals = rec.measured.intervals.into_closed();
        let shape: Vec<(u64, u64)> = intervals.iter().map(|i| (i.index, i.completed)).collect();
        assert_eq!(shape, [(0, 2), (1, 1), (3, 1)]);
        let histogram = crate::recorder::hdr::decode(&intervals[0].request).unwrap();
        assert_eq!(histogram.len(), 2);
    }

    #[test]
    fn automatic_intervals_grow_instead_of_piling_up() {
        let t0 = Instant::now();
        let auto = TimelineInterval {
            length: TimelineInterval::AUTO_BASE,
            auto: true,
        };
        let mut rec = Recorder::new(t0, 1, auto, false);
        // One response per 10 ms interval for 3000 intervals (30 s): past 2048 closed intervals
        // they merge in pairs, so memory stays bounded and nothing is lost.
        for interval in 0..3000u64 {
            let end = t0 + Duration::from_millis(interval * 10 + 5);
            rec.request_started(RequestStart::first(
                end - Duration::from_millis(1),
                end - Duration::from_millis(1),
                1,
            ));
            rec.response(0, sample(end - Duration::from_millis(1), 1, 200));
        }
        assert_eq!(rec.intervals.length, Duration::from_millis(20));
        let records = rec.intervals.clone().into_closed();
        assert!(records.len() <= MAX_AUTO_INTERVALS, "{}", records.len());
        assert_eq!(records.iter().map(|r| r.completed).sum::<u64>(), 3000);
        assert!(records[..1000].iter().all(|r| r.completed == 2));
    }
}
