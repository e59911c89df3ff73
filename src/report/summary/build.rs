//! `Summary::new`: a finished cell's report, computed once from its plan and what the runner
//! measured, one function per part of the report.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use super::schema::{
    CellInfo, Connections, EventsReport, GrpcReport, Histograms, Latencies, LatencySummary,
    Percentiles, ProtocolInfo, Requests, Settings, Spread, StageSettings, StagesSettings,
    StatusCodes, Summary, Traffic, UrlRow,
};
use crate::plan::Arrival;
use crate::plan::{Negotiation, RunPlan, StopRule};
use crate::recorder::handshakes::Handshakes;
use crate::recorder::outcome::RunOutcome;
use crate::recorder::{hdr, ErrorKind, Recorder, WireTotals};
use crate::report::cause;
use crate::report::generator::GeneratorLoad;
use crate::report::rate::{requested_rate, InFlight, RateReport};
use crate::report::CellContext;
use crate::stats::steadiness::Steadiness;
use crate::stats::timeline::Timeline;

impl Summary {
    /// Computes the report of a finished cell.
    pub(crate) fn new(plan: &RunPlan, outcome: &RunOutcome, context: CellContext) -> Summary {
        let recorder = &outcome.recorder;
        let elapsed_s = outcome.elapsed.as_secs_f64();
        // TLS runs count handshakes by kind (none at all when no connection got through).
        let empty = Handshakes::default();
        let handshakes = (plan.tls.is_some() && plan.negotiation != Negotiation::Quic)
            .then(|| recorder.handshakes.as_deref().unwrap_or(&empty));
        let mut summary = Summary {
            cell: cell_info(plan, &context),
            settings: settings(plan),
            protocol: protocol_info(recorder),
            interrupted: outcome.interrupted,
            elapsed_s,
            requests_per_s: per_second(recorder.counters.done, elapsed_s),
            requests_per_s_ci: None,
            requests_per_s_ci_reason: None,
            bytes_per_s: per_second(outcome.wire.total, elapsed_s),
            requests: requests(plan, outcome),
            status_codes: status_codes(recorder),
            stream_reset_codes: recorder
                .stream_reset_codes
                .iter()
                .map(|(code, count)| (code.name(), *count))
                .collect(),
            errors: by_kind(recorder.errors()),
            request_errors: by_kind(recorder.request_errors()),
            connection_errors: by_kind(recorder.connection_errors()),
            checks: plan.checks.as_ref().map(|_| recorder.checks.clone()),
            grpc: plan.grpc.as_ref().map(|grpc| GrpcReport {
                method: grpc.path.clone(),
                statuses: recorder
                    .grpc
                    .named_codes()
                    .map(|(name, count)| (name.to_owned(), count))
                    .collect(),
                sent: recorder.messages.sent,
                received: recorder.messages.received,
                first_status_message: recorder.grpc_status_message.clone(),
            }),
            events: events(plan, recorder, elapsed_s),
            traffic: traffic(outcome.wire),
            connections: connections(plan, recorder, handshakes, elapsed_s),
            latency: latencies(plan, recorder, handshakes),
            requests_per_client_per_s: spread_of(&recorder.client_rates()),
            cause: None,
            first_error: recorder.first_error.clone(),
            warnings: recorder.warnings.clone(),
            generator_cpu_percent: context.generator_cpu_percent,
            generator: GeneratorLoad::new(
                &outcome.threads_busy,
                cause::generator_fair(recorder.counters.done, recorder.counters.succeeded),
            ),
            steadiness: None,
            until_stable: outcome.stability,
            start_late_ms: None,
            parts: None,
            watched: context.watched,
            timeline: Timeline::new(
                &recorder.intervals,
                outcome.measure_start_wall,
                outcome.elapsed,
            ),
            rate: rate(plan, outcome, elapsed_s),
            thresholds: Vec::new(),
            capacity: None,
            urls: url_rows(plan, recorder),
            histograms: histograms(recorder),
        };
        summary.cause = cause::of(
            &summary,
            &cause::Evidence {
                symptom: recorder.first_symptom.as_ref(),
                error_response: recorder.first_error_response.as_ref(),
            },
        );
        super::intervals::annotate(&mut summary);
        // A ramp changes the rate by design: a trend in it says nothing.
        if plan.stages.is_none() {
            summary.steadiness = Steadiness::of(&summary.timeline);
        }
        summary
    }
}

/// `count` per second of the measured period `elapsed_s` long (0 for an empty period).
fn per_second(count: u64, elapsed_s: f64) -> f64 {
    if elapsed_s > 0.0 {
        count as f64 / elapsed_s
    } else {
        0.0
    }
}

/// Which cell this is.
fn cell_info(plan: &RunPlan, context: &CellContext) -> CellInfo {
    CellInfo {
        index: context.index,
        label: plan.label(),
        protocol: plan.protocol_label().to_owned(),
        clients: plan.clients,
        streams: plan.max_concurrent,
        rate: plan.rate,
        level: context.level,
        round: context.round,
    }
}

/// `-n`, or `-D` and `--warm-up-time` in seconds: what stops the run.
fn stop_limits(plan: &RunPlan) -> (Option<u64>, Option<f64>, Option<f64>) {
    match plan.stop {
        StopRule::Requests(n) => (Some(n), None, None),
        StopRule::Duration { warm_up, measure } => (
            None,
            Some(measure.as_secs_f64()),
            Some(warm_up.as_secs_f64()),
        ),
    }
}

/// The options the run used.
fn settings(plan: &RunPlan) -> Settings {
    let (requests, duration, warm_up) = stop_limits(plan);
    let timeouts = plan.timeouts;
    let timeouts_s = [
        ("connect", timeouts.connect),
        ("request", timeouts.request),
        ("connection_active", timeouts.connection_active),
        ("connection_inactivity", timeouts.connection_inactivity),
    ]
    .into_iter()
    .filter_map(|(name, limit)| Some((name.to_owned(), limit?.as_secs_f64())))
    .collect();
    Settings {
        urls: plan.destination.urls.clone(),
        clients: plan.clients,
        threads: plan.threads,
        max_concurrent_streams: plan.max_concurrent,
        requests,
        duration_s: duration,
        warm_up_s: warm_up,
        method: plan.request.parts.method.to_string(),
        headers: plan
            .request
            .parts
            .headers
            .iter()
            .map(|(name, value)| {
                let header = format!("{name}: {}", String::from_utf8_lossy(value.as_bytes()));
                // A report is kept and passed around: no credential goes in it.
                crate::report::provenance::redacted(&header)
            })
            .collect(),
        body_bytes: plan.request.parts.body.len(),
        timeouts_s,
        max_retries: plan.max_retries,
        stages: plan.stages.as_ref().map(StagesSettings::new),
        h2: plan.h2,
        input_file: plan.destination.input_file.clone(),
        urls_random: plan.request.random_paths,
        arrival: (plan.arrival == Arrival::Poisson).then(|| plan.arrival.name().to_owned()),
        seed: (plan.request.draws_random() || plan.arrival == Arrival::Poisson)
            .then_some(plan.seed),
        requests_per_connection: plan.requests_per_connection,
        no_keepalive: plan.no_keepalive,
        tls_resume: plan.tls.as_ref().is_some_and(|tls| tls.resume),
        tls_early_data: plan.tls.as_ref().is_some_and(|tls| tls.early_data),
        io: plan.io.name().to_owned(),
        shard: plan.shard,
        whole: plan.whole,
    }
}

impl StagesSettings {
    fn new(stages: &crate::plan::stages::Stages) -> Self {
        StagesSettings {
            start_rps: stages.start_rate,
            stages: stages
                .stages
                .iter()
                .map(|stage| StageSettings {
                    duration_s: stage.duration.as_secs_f64(),
                    rps: stage.rate,
                })
                .collect(),
            offered: stages.total(),
        }
    }
}

/// What was actually spoken.
fn protocol_info(recorder: &Recorder) -> ProtocolInfo {
    ProtocolInfo {
        negotiated: recorder
            .protocols()
            .max_by_key(|(_, connections)| *connections)
            .map(|(protocol, _)| protocol.id().to_owned()),
        connections: recorder
            .protocols()
            .map(|(protocol, count)| (protocol.id().to_owned(), count))
            .collect(),
        tls: recorder.tls.clone(),
        max_concurrent_streams_effective: recorder.effective_concurrency,
    }
}

/// The request counters.
fn requests(plan: &RunPlan, outcome: &RunOutcome) -> Requests {
    let recorder = &outcome.recorder;
    let counters = recorder.counters;
    let (requests, _, _) = stop_limits(plan);
    Requests {
        total: requests.unwrap_or(counters.started),
        counters,
        never_sent: outcome.never_sent,
        in_flight_at_stop: outcome.in_flight_at_stop,
        retried: recorder.retried,
    }
}

/// Responses by status class.
fn status_codes(recorder: &Recorder) -> StatusCodes {
    let [informational, success, redirection, client_error, server_error] = recorder.status_classes;
    StatusCodes {
        informational,
        success,
        redirection,
        client_error,
        server_error,
    }
}

/// Bytes received.
fn traffic(wire: WireTotals) -> Traffic {
    Traffic {
        total_bytes: wire.total,
        header_bytes: wire.headers,
        header_bytes_uncompressed: wire.headers_uncompressed,
        header_space_savings: if wire.headers_uncompressed > 0 {
            1.0 - wire.headers as f64 / wire.headers_uncompressed as f64
        } else {
            0.0
        },
        data_bytes: wire.data,
    }
}

/// The connection counters; `handshakes` by kind for TLS runs.
fn connections(
    plan: &RunPlan,
    recorder: &Recorder,
    handshakes: Option<&Handshakes>,
    elapsed_s: f64,
) -> Connections {
    let early_data = plan.tls.as_ref().is_some_and(|tls| tls.early_data);
    Connections {
        opened: recorder.connections_opened,
        failed: recorder.connections_failed,
        closed_by_client: recorder.connections_closed_by_client,
        measured: recorder.connections_measured,
        per_s: per_second(recorder.connections_measured, elapsed_s),
        resumed_handshakes: handshakes.map(|h| h.resumed.len()),
        full_handshakes: handshakes.map(|h| h.full.len()),
        early_data_accepted: early_data.then(|| handshakes.map_or(0, |h| h.early_data_accepted)),
        early_data_rejected: early_data.then(|| handshakes.map_or(0, |h| h.early_data_rejected)),
    }
}

/// The latency distributions; the handshakes' for TLS runs; the message layer's as the cell's
/// protocol names them (gRPC messages, or events).
fn latencies(plan: &RunPlan, recorder: &Recorder, handshakes: Option<&Handshakes>) -> Latencies {
    let messages = &recorder.messages;
    let (grpc_cell, event_cell) = (plan.grpc.is_some(), plan.events.is_some());
    Latencies {
        request: latency_summary(&recorder.request),
        service: recorder.service.as_ref().map(latency_summary),
        connect: latency_summary(&recorder.connect),
        proxy: recorder.proxy.as_ref().map(latency_summary),
        ttfb: latency_summary(&recorder.ttfb),
        receive_wait: recorder.receive_wait.as_ref().map(latency_summary),
        handshake_full: handshakes.map(|h| latency_summary(&h.full)),
        handshake_resumed: handshakes.map(|h| latency_summary(&h.resumed)),
        grpc_first_message: grpc_cell
            .then(|| messages.first_message.as_ref().map(latency_summary))
            .flatten(),
        grpc_round_trip: grpc_cell
            .then(|| messages.round_trip.as_ref().map(latency_summary))
            .flatten(),
        first_event: event_cell
            .then(|| messages.first_message.as_ref().map(latency_summary))
            .flatten(),
        event_gap: event_cell
            .then(|| messages.gaps.as_ref().map(latency_summary))
            .flatten(),
    }
}

/// The event streams of a cell that reads responses as events, when any response was one.
fn events(plan: &RunPlan, recorder: &Recorder, elapsed_s: f64) -> Option<EventsReport> {
    let messages = &recorder.messages;
    let arrived = messages.arrived();
    (plan.events.is_some() && (messages.streams > 0 || arrived > 0)).then(|| EventsReport {
        streams: messages.streams,
        events: arrived,
        events_per_s: per_second(arrived, elapsed_s),
        data_bytes: messages.received.message_bytes,
        events_per_stream: arrived as f64 / messages.streams.max(1) as f64,
    })
}

/// The scheduling figures of a paced cell (`None` unpaced).
fn rate(plan: &RunPlan, outcome: &RunOutcome, elapsed_s: f64) -> Option<RateReport> {
    let recorder = &outcome.recorder;
    requested_rate(plan).map(|requested| {
        let per_connection = recorder
            .effective_concurrency
            .unwrap_or(plan.max_concurrent)
            .min(plan.max_concurrent);
        let in_flight = InFlight {
            mean: if elapsed_s > 0.0 {
                recorder.in_flight.integral / elapsed_s
            } else {
                0.0
            },
            limit: (plan.clients * per_connection) as u64,
        };
        RateReport {
            scheduled: outcome.schedule.map(|kept| kept.scheduled),
            missed: outcome.schedule.map_or(0, |kept| kept.missed),
            ..RateReport::new(
                requested,
                per_second(recorder.counters.done, elapsed_s),
                recorder,
                in_flight,
            )
        }
    })
}

/// The full distributions, for exporters.
fn histograms(recorder: &Recorder) -> Histograms {
    Histograms {
        request: recorder.request.clone(),
        service: recorder.service.clone(),
        connect: recorder.connect.clone(),
        ttfb: recorder.ttfb.clone(),
    }
}

/// The per-URL rows of a cell, from its recorder's path counts.
fn url_rows(plan: &RunPlan, recorder: &crate::recorder::Recorder) -> Vec<UrlRow> {
    let Some(paths) = &recorder.paths else {
        return Vec::new();
    };
    plan.request
        .paths
        .iter()
        .zip(paths.rows())
        .map(|(path, row)| UrlRow {
            url: path.clone(),
            requests: row.succeeded + row.failed,
            succeeded: row.succeeded,
            failed: row.failed,
            latency: row.latency.map(|latency| {
                let mut summary = latency_summary(&latency.histogram);
                // The path's histogram has 2 digits, the run's 3: its extremes are given at the
                // run's precision, so a URL's max is never above the run's and one equals it.
                let run = &recorder.request;
                summary.bound(
                    run.lowest_equivalent(latency.min),
                    run.highest_equivalent(latency.max),
                );
                Box::new(summary)
            }),
        })
        .collect()
}

/// The kinds that occurred, by name.
fn by_kind(counts: impl Iterator<Item = (ErrorKind, u64)>) -> BTreeMap<String, u64> {
    counts
        .filter(|(_, count)| *count > 0)
        .map(|(kind, count)| (kind.name().to_owned(), count))
        .collect()
}

pub(crate) fn latency_summary(histogram: &Histogram<u64>) -> LatencySummary {
    let at = |quantile: f64| histogram.value_at_quantile(quantile);
    LatencySummary {
        count: histogram.len(),
        spread: histogram_spread(histogram),
        percentiles: Percentiles {
            p50: at(0.5),
            p75: at(0.75),
            p90: at(0.9),
            p95: at(0.95),
            p99: at(0.99),
            p99_9: at(0.999),
            p99_99: at(0.9999),
            max: histogram.max(),
        },
        confidence: None,
        hdr: hdr::to_base64(histogram),
    }
}

fn histogram_spread(histogram: &Histogram<u64>) -> Spread {
    if histogram.is_empty() {
        return Spread::default();
    }
    let (mean, sd) = (histogram.mean(), histogram.stdev());
    let within: u64 = histogram
        .iter_recorded()
        .filter(|value| (value.value_iterated_to() as f64 - mean).abs() <= sd)
        .map(|value| value.count_at_value())
        .sum();
    Spread {
        min: histogram.min() as f64,
        max: histogram.max() as f64,
        mean,
        sd,
        within_sd_pct: 100.0 * within as f64 / histogram.len() as f64,
    }
}

fn spread_of(values: &[f64]) -> Spread {
    if values.is_empty() {
        return Spread::default();
    }
    let count = values.len() as f64;
    let mean = values.iter().sum::<f64>() / count;
    let sd = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / count).sqrt();
    let within = values.iter().filter(|v| (*v - mean).abs() <= sd).count();
    Spread {
        min: values.iter().copied().fold(f64::INFINITY, f64::min),
        max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        mean,
        sd,
        within_sd_pct: 100.0 * within as f64 / count,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_counts_values_within_one_sd() {
        let spread = spread_of(&[1.0, 2.0, 3.0, 10.0]);
        assert_eq!(spread.min, 1.0);
        assert_eq!(spread.max, 10.0);
        assert_eq!(spread.mean, 4.0);
        assert_eq!(spread.within_sd_pct, 75.0);
    }
}
