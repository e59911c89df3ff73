//! Timelines of several runs lined up by wall-clock interval and added, one merged interval at a
//! time (`merge`'s largest part, kept apart from the counts).

use anyhow::Result;

use crate::recorder::hdr;
use crate::report::Summary;
use crate::stats::timeline::{interval_length, last_index, IntervalSums, Timeline};
use crate::usage_bail;

/// How many times the longest of the parts' intervals their merged interval may be: beyond it a
/// timeline would say too little to be worth merging (automatic lengths, 1-2-5 × 10 ms, need at
/// most 10).
const MAX_MERGED_INTERVALS: u64 = 10;

/// The greatest common divisor of `a` and `b`.
fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Lines timelines up by wall-clock interval and adds them; `sources` names the parts' files.
pub(super) fn merge_timelines(parts: &[Summary], sources: &[String]) -> Result<Timeline> {
    // Automatic lengths may differ between runs (each picked its own from its length: 20 ms for
    // one worker, 50 ms for a slower one): the merge takes their least common multiple and
    // re-buckets every part into it. Lengths are compared in whole microseconds.
    let micros = parts
        .iter()
        .map(|part| {
            let us = (part.timeline.interval_s * 1e6).round();
            (us >= 1.0 && (us - part.timeline.interval_s * 1e6).abs() < 1e-3).then_some(us as u64)
        })
        .collect::<Option<Vec<u64>>>();
    let longest = micros.iter().flatten().copied().max().unwrap_or(1);
    let common = micros.as_ref().and_then(|micros| {
        micros
            .iter()
            .try_fold(1u64, |common, &us| common.checked_mul(us / gcd(common, us)))
            .filter(|&common| common <= MAX_MERGED_INTERVALS * longest)
    });
    let (Some(micros), Some(common)) = (micros, common) else {
        usage_bail!(
            "the reports' --interval lengths have no common multiple within {MAX_MERGED_INTERVALS}× the longest, so their timelines cannot be merged"
        );
    };
    let interval_s = common as f64 / 1e6;
    let interval_ms = (interval_s * 1000.0).max(1.0);
    let factors: Vec<i64> = micros.iter().map(|&us| (common / us) as i64).collect();
    // A part's interval `index` in the merged timeline's units, counted from the Unix epoch.
    let absolute = |part: &Summary, factor: i64, index: u64| {
        let part_ms = (part.timeline.interval_s * 1000.0).max(1.0);
        ((part.timeline.start_unix_ms as f64 / part_ms).round() as i64)
            .saturating_add(i64::try_from(index).unwrap_or(i64::MAX))
            .div_euclid(factor)
    };
    let start_unix_ms = parts
        .iter()
        .map(|part| part.timeline.start_unix_ms)
        .min()
        .unwrap_or(0);
    let first = (start_unix_ms as f64 / interval_ms).round() as i64;
    // The merged period ends where the last part's ends, seconds after the earliest start.
    let end_s = parts
        .iter()
        .map(|part| {
            (part.timeline.start_unix_ms - start_unix_ms) as f64 / 1000.0 + part.timeline.end_s
        })
        .fold(0.0, f64::max);
    let last = last_index(end_s, interval_s);
    // Every part's intervals at their place in the merged timeline, in order, so the merged
    // intervals are summed one at a time: memory holds one interval's histograms (540 KB)
    // however long the timelines, and a few words for each interval read.
    let mut places: Vec<(u64, usize, usize)> = Vec::new();
    for (part_at, (part, factor)) in parts.iter().zip(factors).enumerate() {
        for (interval_at, interval) in part.timeline.intervals.iter().enumerate() {
            let index = absolute(part, factor, interval.index).saturating_sub(first);
            places.push((
                u64::try_from(index).unwrap_or(0).min(last),
                part_at,
                interval_at,
            ));
        }
    }
    places.sort_unstable();
    let mut intervals = Vec::new();
    for same_interval in places.chunk_by(|a, b| a.0 == b.0) {
        let mut sums = IntervalSums::default();
        for &(_, part_at, interval_at) in same_interval {
            let interval = &parts[part_at].timeline.intervals[interval_at];
            let bytes = |text: &str| hdr::base64_bytes(text);
            let service = interval.service_hdr.as_deref().map(bytes).transpose();
            let added = (|| {
                sums.add(
                    interval.completed,
                    interval.errors,
                    &bytes(&interval.hdr)?,
                    &bytes(&interval.ttfb_hdr)?,
                    service?.as_deref(),
                )
            })();
            if let Err(error) = added {
                usage_bail!(
                    "'{}': timeline interval {}: {error:#}",
                    sources[part_at],
                    interval.index
                );
            }
        }
        let index = same_interval[0].0;
        let length = interval_length(index, interval_s, end_s);
        intervals.push(sums.summary(index, length));
    }
    Ok(Timeline {
        interval_s,
        end_s,
        start_unix_ms,
        intervals,
    })
}
