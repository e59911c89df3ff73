//! A summary's 95% intervals: the estimators of `stats::confidence` applied to its histograms and
//! timeline, after `Summary::new` and after `merge`.

use super::schema::{LatencySummary, Summary};
use crate::stats::confidence::{percentile_bounds, rate_bounds};
use crate::stats::timeline::IntervalSummary;

/// (Re)computes every interval of `summary` from its histograms and timeline: after
/// `Summary::new`, and after `merge` (whose timeline is the parts' added up).
pub(crate) fn annotate(summary: &mut Summary) {
    let timeline = &summary.timeline;
    let latency = &mut summary.latency;
    let batched = |summary: &mut LatencySummary, pick: fn(&IntervalSummary) -> Option<&str>| {
        summary.confidence = percentile_bounds(&summary.hdr, Some((timeline, pick)));
    };
    batched(&mut latency.request, |interval| Some(interval.hdr.as_str()));
    batched(&mut latency.ttfb, |interval| {
        Some(interval.ttfb_hdr.as_str())
    });
    if let Some(service) = &mut latency.service {
        batched(service, |interval| interval.service_hdr.as_deref());
    }
    for summary in [Some(&mut latency.connect), latency.proxy.as_mut()]
        .into_iter()
        .chain([
            latency.receive_wait.as_mut(),
            latency.handshake_full.as_mut(),
            latency.handshake_resumed.as_mut(),
            latency.grpc_first_message.as_mut(),
            latency.grpc_round_trip.as_mut(),
            latency.first_event.as_mut(),
            latency.event_gap.as_mut(),
        ])
        .flatten()
    {
        summary.confidence = percentile_bounds(&summary.hdr, None);
    }
    // A URL's samples have no timeline of their own: its intervals assume them independent
    // (`method: independent` says so), which a run whose requests move together makes too narrow.
    for row in &mut summary.urls {
        if let Some(latency) = row.latency.as_deref_mut() {
            latency.confidence = percentile_bounds(&latency.hdr, None);
        }
    }
    let rate = rate_bounds(&summary.timeline, summary.requests_per_s);
    summary.requests_per_s_ci = rate.ok();
    summary.requests_per_s_ci_reason = rate.err();
}
