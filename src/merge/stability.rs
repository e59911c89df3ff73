//! `--until-stable` in a merged report: the parts' target applied to the whole. Each part's own
//! half-widths describe that part only; the merged cell's come from its merged intervals, so
//! the merged report says whether the whole is sure enough, not whether its first part was.

use crate::recorder::outcome::Stability;
use crate::report::Summary;

/// The merged cell's standing against the parts' `--until-stable` targets (the tightest of
/// them), from its own 95% intervals; `None` unless every part ran with one. It stopped for
/// stability after the last part's stop, if every part stopped for it (else a cap ended one).
pub(super) fn of(parts: &[Option<Stability>], merged: &Summary) -> Option<Stability> {
    let parts = parts
        .iter()
        .map(Option::as_ref)
        .collect::<Option<Vec<&Stability>>>()?;
    let target_pct = parts.iter().map(|part| part.target_pct).reduce(f64::min)?;
    let half_width = |value: f64, low: f64, high: Option<f64>| {
        let high = high?;
        (value > 0.0).then(|| 100.0 * (high - value).max(value - low) / value)
    };
    let p99 = merged.latency.request.percentiles.p99 as f64;
    let p99_half_width_pct = merged
        .latency
        .request
        .confidence
        .as_ref()
        .and_then(|bounds| bounds.p99)
        .and_then(|bounds| {
            half_width(
                p99,
                bounds.ci_low as f64,
                bounds.ci_high.map(|high| high as f64),
            )
        });
    let rate = merged.requests_per_s;
    let rate_half_width_pct = merged
        .requests_per_s_ci
        .and_then(|bounds| half_width(rate, bounds.ci_low, bounds.ci_high));
    Some(Stability {
        target_pct,
        reached: p99_half_width_pct
            .zip(rate_half_width_pct)
            .is_some_and(|(p99, rate)| p99 <= target_pct && rate <= target_pct),
        stopped_after_s: parts
            .iter()
            .map(|part| part.stopped_after_s)
            .collect::<Option<Vec<f64>>>()
            .map(|stops| stops.into_iter().fold(0.0, f64::max)),
        p99_half_width_pct,
        rate_half_width_pct,
    })
}
