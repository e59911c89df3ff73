//! The text report, laid out like h2load's, followed by a percentile table.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::layout::{aligned, stacked, WIDTH};
use super::{counted, LatencySummary, Spread, Summary};
use crate::recorder::{ErrorKind, LATE_AFTER};
use crate::report::comparison::{not_estimable_legend, NOT_ESTIMABLE};
use crate::stats::confidence::{Bounds, Method};
use crate::units::{format_bytes, format_micros, grouped};

/// Renders the report.
pub(crate) fn render(summary: &Summary) -> String {
    let mut out = String::new();
    write_report(&mut out, summary).expect("writing to a String cannot fail");
    out
}

/// Why the cell failed, the report's first line (`None` when it did not fail).
pub(crate) fn cause_line(summary: &Summary) -> Option<String> {
    let cause = summary.cause.as_ref()?;
    Some(format!("failed: {}", cause.text))
}

/// Every failed run's `failed:` line, led by the run's name when there are several: what the
/// exports (HTML, Markdown) lead with, as the text report does.
pub(crate) fn cause_lines(cells: &[Summary]) -> Vec<String> {
    let several = cells.len() > 1;
    cells
        .iter()
        .filter_map(|cell| {
            let line = cause_line(cell)?;
            Some(match several {
                true => format!("{}: {line}", run_label(cell)),
                false => line,
            })
        })
        .collect()
}

/// Every cell's warnings, each once, as `warning: ...` (a merge of reports of different
/// scenarios with `--allow-mixed` says so this way): what the exports (HTML, Markdown) show
/// after the causes, as stderr does after the text report.
pub(crate) fn warning_lines(cells: &[Summary]) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for warning in cells.iter().flat_map(|cell| &cell.warnings) {
        let line = format!("warning: {warning}");
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    lines
}

/// A run's name: its cell's label, with `--rounds` its round too (each round of a cell is a run
/// of its own).
pub(crate) fn run_label(cell: &Summary) -> String {
    match cell.cell.round {
        Some(of) => format!("{} (round {})", cell.cell.label, of.round),
        None => cell.cell.label.clone(),
    }
}

/// The errors by unit (requests, connection attempts, responses that failed a check), each with
/// its kinds: `10 requests (10 never sent), 1 connection attempt (1 tls)`; `None` without errors.
fn errors_line(s: &Summary) -> Option<String> {
    let named = |counts: &BTreeMap<String, u64>| {
        counts
            .iter()
            .map(|(kind, count)| (kind.clone(), *count))
            .collect::<Vec<_>>()
    };
    let mut request_kinds = named(&s.request_errors);
    request_kinds.push(("never sent".to_owned(), s.requests.never_sent));
    let mut requests = listed(&request_kinds);
    if !s.stream_reset_codes.is_empty() {
        requests.push_str(&format!(
            "; stream resets: {}",
            listed(&named(&s.stream_reset_codes))
        ));
    }
    let checks = s.errors.get(ErrorKind::Check.name()).copied().unwrap_or(0);
    let units = [
        (s.requests.counters.errored, "request", requests),
        (
            s.connections.failed,
            "connection attempt",
            listed(&named(&s.connection_errors)),
        ),
        (checks, "response", listed(&[("check".to_owned(), checks)])),
    ];
    let parts: Vec<String> = units
        .into_iter()
        .filter(|(count, _, _)| *count > 0)
        .map(|(count, unit, kinds)| format!("{} ({kinds})", counted(count, unit)))
        .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// `3 timeout, 1 reset`: the counts above 0, each before its name.
fn listed(counts: &[(String, u64)]) -> String {
    counts
        .iter()
        .filter(|(_, count)| *count > 0)
        .map(|(name, count)| format!("{count} {name}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The cell in one line, for `--quiet`: what ran, the counts, the rate (led by a transfer's
/// throughput) and the p99 (marked when not estimable: no legend follows this line; none
/// without a response to time).
pub(crate) fn one_line(summary: &Summary) -> String {
    let counters = &summary.requests.counters;
    let request = &summary.latency.request;
    let marked = request
        .confidence
        .as_ref()
        .is_some_and(|confidence| confidence.not_estimable("p99"));
    let p99 = match summary.histograms.request.is_empty() {
        true => "none (no response)".to_owned(),
        false => format_micros(request.percentiles.p99 as f64),
    };
    format!(
        "{}: {} done, {} succeeded, {} failed, {} errored, {}{:.2} req/s, p99 {}{}{}{}",
        run_label(summary),
        counters.done,
        counters.succeeded,
        counters.failed,
        counters.errored,
        super::throughput::Finished::of(summary).quiet_lead(),
        summary.requests_per_s,
        p99,
        if marked { " (not estimable)" } else { "" },
        summary.until_stable.map_or(String::new(), |stable| format!(
            ", until stable (±{:.1}%): {}",
            stable.target_pct,
            match stable.stopped_after_s {
                Some(after) => format!("reached after {after:.1}s"),
                None => "not reached".to_owned(),
            }
        )),
        if summary.interrupted {
            " (interrupted)"
        } else {
            ""
        }
    )
}

/// The cell's report: h2load's lines in h2load's order (with the rate figures of a paced cell),
/// then the per-URL table and the plain-words sentences.
fn write_report(out: &mut String, summary: &Summary) -> std::fmt::Result {
    if let Some(line) = cause_line(summary) {
        writeln!(out, "{line}")?;
    }
    write_interrupted(out, summary)?;
    writeln!(out)?;
    write_counts(out, summary)?;
    write_lifecycle(out, summary)?;
    write_latencies(out, summary)?;
    if let Some(rate) = &summary.rate {
        write_rate(out, summary, rate)?;
    }
    writeln!(out)?;
    write_protocol(out, summary)?;
    write_urls(out, &summary.urls)?;
    write_sentences(out, &super::plain::cell(summary))
}

/// The first line of an interrupted run's report: what its numbers cover.
fn write_interrupted(out: &mut String, summary: &Summary) -> std::fmt::Result {
    if summary.interrupted {
        let warming_up =
            summary.elapsed_s == 0.0 && summary.settings.warm_up_s.is_some_and(|at| at > 0.0);
        writeln!(
            out,
            "{}",
            match warming_up {
                true => "interrupted during the warm-up: nothing was measured",
                false => "interrupted: the numbers below cover the run until it was stopped",
            }
        )?;
    }
    Ok(())
}

/// h2load's count lines: how long and how fast, requests, status codes, traffic, errors and
/// connections.
fn write_counts(out: &mut String, summary: &Summary) -> std::fmt::Result {
    let requests = &summary.requests;
    let counters = &requests.counters;
    let traffic = &summary.traffic;
    let codes = &summary.status_codes;
    writeln!(out, "{}", super::throughput::Finished::of(summary).line())?;
    writeln!(
        out,
        "requests: {} total, {} started, {} done, {} succeeded, {} failed, {} errored, {} timeout",
        requests.total,
        counters.started,
        counters.done,
        counters.succeeded,
        counters.failed,
        counters.errored,
        counters.timeout
    )?;
    if requests.never_sent > 0 || requests.in_flight_at_stop > 0 {
        writeln!(
            out,
            "          {} never sent (no connection could carry them), {} in flight when the run stopped",
            requests.never_sent, requests.in_flight_at_stop
        )?;
    }
    if requests.retried.total() > 0 {
        writeln!(
            out,
            "retried: {} (not processed by the server: goaway {}, refused {}, closed {})",
            requests.retried.total(),
            requests.retried.goaway,
            requests.retried.refused,
            requests.retried.closed
        )?;
    }
    writeln!(
        out,
        "status codes: {} 2xx, {} 3xx, {} 4xx, {} 5xx",
        codes.success, codes.redirection, codes.client_error, codes.server_error
    )?;
    if let Some(events) = &summary.events {
        write_events(out, events)?;
    }
    if let Some(grpc) = &summary.grpc {
        write_grpc(out, grpc)?;
    }
    writeln!(
        out,
        "traffic: {} ({}) total, {} ({}) headers (space savings {:.2}%), {} ({}) data",
        format_bytes(traffic.total_bytes as f64),
        traffic.total_bytes,
        format_bytes(traffic.header_bytes as f64),
        traffic.header_bytes,
        traffic.header_space_savings * 100.0,
        format_bytes(traffic.data_bytes as f64),
        traffic.data_bytes
    )?;
    if let Some(line) = errors_line(summary) {
        writeln!(out, "errors: {line}")?;
    }
    if let Some(checks) = &summary.checks {
        if let Some(mismatch) = &checks.first_mismatch {
            writeln!(out, "check failed: {mismatch} (first of {})", checks.failed)?;
        }
    }
    writeln!(
        out,
        "connections: {} opened, {} failed",
        summary.connections.opened, summary.connections.failed
    )
}

/// An event-stream cell's line: streams, events, their rate and data.
fn write_events(
    out: &mut String,
    events: &crate::report::summary::schema::EventsReport,
) -> std::fmt::Result {
    writeln!(
        out,
        "events: {} ({:.2} events/s) on {}, {:.1} per stream, {} data bytes",
        grouped(events.events as f64),
        events.events_per_s,
        counted(events.streams, "stream"),
        events.events_per_stream,
        events.data_bytes
    )
}

/// A gRPC cell's lines: calls by `grpc-status` in code order, the first `grpc-message` of a call
/// that was not OK, then the messages each way.
fn write_grpc(
    out: &mut String,
    grpc: &crate::report::summary::schema::GrpcReport,
) -> std::fmt::Result {
    let mut statuses: Vec<(&String, &u64)> = grpc.statuses.iter().collect();
    statuses.sort_by_key(|(name, _)| crate::proto::grpc::parse_code(name).unwrap_or(u64::MAX));
    let statuses: Vec<String> = statuses
        .iter()
        .map(|(name, count)| format!("{count} {name}"))
        .collect();
    writeln!(
        out,
        "grpc status: {} ({})",
        if statuses.is_empty() {
            "none".to_owned()
        } else {
            statuses.join(", ")
        },
        grpc.method
    )?;
    if let Some(message) = &grpc.first_status_message {
        writeln!(
            out,
            "grpc message: {} \"{}\" (the first call's that was not OK)",
            message.status,
            crate::error::peer_text(message.text.as_bytes())
        )?;
    }
    let side = |bytes: &crate::recorder::grpc::MessageBytes| {
        format!(
            "{} ({} message bytes + {} prefix bytes)",
            counted(bytes.messages, "message"),
            bytes.message_bytes,
            bytes.prefix_bytes
        )
    };
    writeln!(
        out,
        "grpc messages: sent {}, received {}",
        side(&grpc.sent),
        side(&grpc.received)
    )
}

/// The latency tables: h2load's min/max/mean/sd rows (and req/s per client), then the
/// percentiles of each distribution.
/// The width of a percentile's column (one space between columns): eight of them after the
/// 17-character labels fit [`WIDTH`] (`415.23ms`, `0.59–2.32` fit).
const PERCENTILE_WIDTH: usize = 9;

fn write_latencies(out: &mut String, summary: &Summary) -> std::fmt::Result {
    writeln!(
        out,
        "                     min         max         mean         sd        +/- sd"
    )?;
    let latency = &summary.latency;
    for (label, row) in latency_rows(summary) {
        write_spread(out, label, &row.spread, format_micros)?;
    }
    write_spread(
        out,
        "req/s           :",
        &summary.requests_per_client_per_s,
        |v| format!("{v:.2}"),
    )?;
    writeln!(out)?;
    write!(out, "{:17}", "")?;
    for (label, _) in latency.request.percentiles.labelled() {
        write!(out, " {label:>PERCENTILE_WIDTH$}")?;
    }
    writeln!(out)?;
    for (label, row) in latency_rows(summary) {
        write_percentiles(out, label, row)?;
        if row.count > 0 {
            write_intervals(out, row)?;
        }
    }
    write_how_sure(out, summary)
}

/// The row under a distribution's percentiles: each one's 95% interval, in its value's unit.
fn write_intervals(out: &mut String, summary: &LatencySummary) -> std::fmt::Result {
    let Some(confidence) = &summary.confidence else {
        return Ok(());
    };
    write!(out, "{:17}", "  95% interval  :")?;
    for (label, value) in summary.percentiles.labelled() {
        let cell = match confidence.of(label) {
            Some(bounds) => format_range(value, bounds),
            None if confidence.not_estimable(label) => NOT_ESTIMABLE.to_owned(),
            None => String::new(),
        };
        write!(out, " {cell:>PERCENTILE_WIDTH$}")?;
    }
    writeln!(out)
}

/// `low–high` in the unit `format_micros` gives `value`, three significant digits; `?` for an
/// open end.
fn format_range(value: u64, bounds: Bounds<u64>) -> String {
    let scale = if value >= 1_000_000 {
        1e6
    } else if value >= 1_000 {
        1e3
    } else {
        1.0
    };
    let number = |micros: u64| {
        let x = micros as f64 / scale;
        if x < 10.0 && scale > 1.0 {
            format!("{x:.2}")
        } else if x < 100.0 && scale > 1.0 {
            format!("{x:.1}")
        } else {
            format!("{x:.0}")
        }
    };
    let high = bounds.ci_high.map_or("?".to_owned(), number);
    format!("{}–{high}", number(bounds.ci_low))
}

/// How sure the rate is, and how the intervals were made.
fn write_how_sure(out: &mut String, summary: &Summary) -> std::fmt::Result {
    let Some(confidence) = &summary.latency.request.confidence else {
        return Ok(());
    };
    let method = match confidence.method {
        Method::BatchMeans => format!(
            "batch means over {} batches of the timeline",
            confidence.batches
        ),
        Method::Independent => {
            "samples assumed independent: too few intervals to measure their dependence".to_owned()
        }
    };
    let rate = match summary.requests_per_s_ci {
        // A kept `--rate` schedule finishes as many requests in every batch: no spread to see,
        // which says the schedule was kept, not that a rerun against another state would agree.
        Some(bounds) if bounds.is_point() => {
            format!(
            "{:.2} req/s (every batch finished as many requests: the rate a kept schedule sets, \
             with no spread to measure)",
                summary.requests_per_s
            )
        }
        Some(bounds) => format!(
            "{:.2} req/s (95% interval {:.2}–{:.2})",
            summary.requests_per_s,
            bounds.ci_low,
            bounds.ci_high.unwrap_or(f64::INFINITY)
        ),
        None => match summary.requests_per_s_ci_reason {
            Some(reason) => format!(
                "{:.2} req/s ({}; {})",
                summary.requests_per_s,
                reason.short(),
                reason.needs()
            ),
            None => format!("{:.2} req/s (no interval)", summary.requests_per_s),
        },
    };
    writeln!(out, "95% intervals: {method}; {rate}")?;
    let marked = latency_rows(summary).iter().any(|(_, row)| {
        row.confidence
            .as_ref()
            .is_some_and(|bounds| !bounds.not_estimable.is_empty())
    });
    if marked {
        writeln!(out, "{}", not_estimable_legend())?;
    }
    if let Some(stable) = &summary.until_stable {
        let half = |pct: Option<f64>| {
            pct.map_or("not yet bounded".to_owned(), |pct| format!("±{pct:.1}%"))
        };
        let widths = format!(
            "p99 {}, req/s {}",
            half(stable.p99_half_width_pct),
            half(stable.rate_half_width_pct)
        );
        match stable.stopped_after_s {
            Some(after) => writeln!(
                out,
                "until stable (±{:.1}%): reached after {after:.1}s of measuring ({widths})",
                stable.target_pct
            )?,
            None => writeln!(
                out,
                "until stable (±{:.1}%): not reached; the cap (-n, -D, or 10 minutes without them) or a signal ended the run first ({widths}): measure longer",
                stable.target_pct
            )?,
        }
    }
    Ok(())
}

/// What was spoken: the TLS session, the application protocols (with the concurrent streams
/// per connection) and, when not the default, the I/O backend.
fn write_protocol(out: &mut String, summary: &Summary) -> std::fmt::Result {
    let protocol = &summary.protocol;
    if let Some(tls) = &protocol.tls {
        writeln!(out, "TLS Protocol: {}", tls.version)?;
        writeln!(out, "Cipher: {}", tls.cipher)?;
        writeln!(out, "Server Temp Key: {}", tls.key_exchange)?;
    }
    let protocols: Vec<String> = match protocol.connections.len() {
        0 => vec!["none (no connection was established)".to_owned()],
        1 => protocol
            .connections
            .keys()
            .map(|id| id.to_string())
            .collect(),
        _ => protocol
            .connections
            .iter()
            .map(|(id, count)| format!("{id} ({})", super::counted(*count, "connection")))
            .collect(),
    };
    write!(out, "Application protocol: {}", protocols.join(", "))?;
    if let Some(effective) = protocol.max_concurrent_streams_effective {
        let requested = summary.settings.max_concurrent_streams;
        if effective < requested {
            write!(
                out,
                ", {} per connection (the server's limit; -m {requested} was capped)",
                super::counted(effective as u64, "concurrent stream")
            )?;
        } else {
            write!(
                out,
                ", {} per connection",
                super::counted(effective as u64, "concurrent stream")
            )?;
        }
    }
    writeln!(out)?;
    // h2load's lines stay as they are for the default backend.
    if summary.settings.io != crate::plan::IoBackend::Epoll.name() {
        writeln!(out, "I/O backend: {}", summary.settings.io)?;
    }
    Ok(())
}

/// URLs shown in the text report's per-URL table; the JSON report has them all.
const TOP_URLS: usize = 10;

/// The per-URL table (runs of two URLs or more): the most requested first.
fn write_urls(out: &mut String, urls: &[super::UrlRow]) -> std::fmt::Result {
    if urls.len() < 2 {
        return Ok(());
    }
    let mut order: Vec<&super::UrlRow> = urls.iter().collect();
    order.sort_by_key(|row| std::cmp::Reverse(row.requests));
    // A percentile and, for the three quantiles, its 95% interval.
    let percentile = |row: &super::UrlRow, label: &str, pick: fn(&super::Percentiles) -> u64| {
        let Some(latency) = row.latency.as_ref().filter(|latency| latency.count > 0) else {
            return "-".to_owned();
        };
        let value = pick(&latency.percentiles);
        let Some(confidence) = latency.confidence.as_ref() else {
            return format_micros(value as f64);
        };
        match confidence.of(label) {
            Some(bounds) => format!(
                "{} ({})",
                format_micros(value as f64),
                format_range(value, bounds)
            ),
            None if confidence.not_estimable(label) => {
                format!("{} ({NOT_ESTIMABLE})", format_micros(value as f64))
            }
            None => format_micros(value as f64),
        }
    };
    let lines: Vec<Vec<String>> = order
        .iter()
        .take(TOP_URLS)
        .map(|row| {
            vec![
                row.url.clone(),
                row.requests.to_string(),
                row.succeeded.to_string(),
                row.failed.to_string(),
                percentile(row, "p50", |p| p.p50),
                percentile(row, "p90", |p| p.p90),
                percentile(row, "p99", |p| p.p99),
                percentile(row, "max", |p| p.max),
            ]
        })
        .collect();
    writeln!(out, "\nper URL (most requested first):")?;
    let titles = [
        "url",
        "requests",
        "succeeded",
        "failed",
        "p50",
        "p90",
        "p99",
        "max",
    ];
    // Left-aligned URLs read better; the aligner right-aligns, so pad them here.
    let width = lines
        .iter()
        .map(|line| line[0].chars().count())
        .max()
        .unwrap_or(3)
        .max(3);
    let lines: Vec<Vec<String>> = lines
        .into_iter()
        .map(|mut line| {
            line[0] = format!("{:width$}", line[0]);
            line
        })
        .collect();
    let mut titles: Vec<String> = titles.iter().map(|title| (*title).to_owned()).collect();
    titles[0] = format!("{:width$}", titles[0]);
    let titles: Vec<&str> = titles.iter().map(String::as_str).collect();
    out.push_str(&aligned(&titles, &lines));
    writeln!(
        out,
        "(95% intervals in brackets; a URL has no timeline of its own, so they assume its samples \
         independent)"
    )?;
    let marked = order.iter().take(TOP_URLS).any(|row| {
        let confidence = row.latency.as_ref().and_then(|l| l.confidence.as_ref());
        confidence.is_some_and(|c| ["p50", "p90", "p99"].iter().any(|l| c.not_estimable(l)))
    });
    if marked {
        writeln!(out, "{}", not_estimable_legend())?;
    }
    if urls.len() > TOP_URLS {
        writeln!(out, "… and {} more in JSON", urls.len() - TOP_URLS)?;
    }
    let limit = crate::recorder::paths::MAX_PATH_HISTOGRAMS;
    if urls.len() > limit {
        writeln!(
            out,
            "(latency is kept for the first {limit} URLs only, to bound memory; every URL is counted)"
        )?;
    }
    Ok(())
}

/// Plain-words sentences as a short list after the numbers.
fn write_sentences(out: &mut String, sentences: &[String]) -> std::fmt::Result {
    if sentences.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nin plain words:")?;
    for sentence in sentences {
        writeln!(out, "  - {sentence}")?;
    }
    Ok(())
}

/// The latency rows: with `--rate`, the request row is the response time and a service-time row follows.
fn latency_rows(s: &Summary) -> Vec<(&'static str, &super::LatencySummary)> {
    let latency = &s.latency;
    let mut rows = vec![(
        if latency.service.is_some() {
            "response time    :"
        } else {
            "time for request:"
        },
        &latency.request,
    )];
    if let Some(service) = &latency.service {
        rows.push(("service time     :", service));
    }
    rows.push(("time for connect:", &latency.connect));
    if let Some(proxy) = &latency.proxy {
        rows.push(("time for proxy  :", proxy));
    }
    rows.push(("time to 1st byte:", &latency.ttfb));
    if let Some(wait) = &latency.receive_wait {
        rows.push(("kernel to client:", wait));
    }
    if let Some(first) = &latency.grpc_first_message {
        rows.push(("1st grpc message:", first));
    }
    if let Some(round_trip) = &latency.grpc_round_trip {
        rows.push(("grpc msg rtt    :", round_trip));
    }
    if let Some(first) = &latency.first_event {
        rows.push(("1st event       :", first));
    }
    if let Some(gap) = &latency.event_gap {
        rows.push(("event gap       :", gap));
    }
    if s.settings.tls_resume {
        let kinds = [
            ("full handshake  :", &latency.handshake_full),
            ("resumption      :", &latency.handshake_resumed),
        ];
        rows.extend(
            kinds
                .into_iter()
                .filter_map(|(label, summary)| Some((label, summary.as_ref()?))),
        );
    }
    rows
}

/// With connection churn or TLS resumption: connections per second and how the TLS handshakes
/// went (the connections begun in the measured period).
fn write_lifecycle(out: &mut String, s: &Summary) -> std::fmt::Result {
    let connections = &s.connections;
    if s.settings.requests_per_connection.is_none() && !s.settings.tls_resume {
        return Ok(());
    }
    writeln!(
        out,
        "connections per second: {:.2} ({} begun in the measured period)",
        connections.per_s, connections.measured
    )?;
    if let (Some(resumed), Some(full)) =
        (connections.resumed_handshakes, connections.full_handshakes)
    {
        write!(out, "TLS handshakes: {resumed} resumed, {full} full")?;
        if let (Some(accepted), Some(rejected)) = (
            connections.early_data_accepted,
            connections.early_data_rejected,
        ) {
            write!(
                out,
                "; early data: {accepted} accepted, {rejected} rejected"
            )?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// The rate figures of a paced cell, what response and service time mean, and why it fell short
/// of its rate if it did.
fn write_rate(out: &mut String, summary: &Summary, rate: &super::RateReport) -> std::fmt::Result {
    writeln!(out)?;
    writeln!(
        out,
        "rate: {:.1} req/s requested, {:.1} achieved; start delay p50 {} / p99 {} / max {} (generator CPU {:.0}%); {} ({:.2}%) started more than {} ms late",
        rate.requested_per_s,
        rate.achieved_per_s,
        format_micros(rate.delay_p50_us as f64),
        format_micros(rate.delay_p99_us as f64),
        format_micros(rate.delay_max_us as f64),
        summary.generator_cpu_percent,
        super::counted(rate.late, "request"),
        rate.late_pct,
        LATE_AFTER.as_micros() as f64 / 1000.0,
    )?;
    if rate.missed > 0 {
        // Exact, so a run that fell behind says by how much instead of sending fewer silently.
        writeln!(
            out,
            "  missed: {} of the schedule's {} send times were never sent: no connection took them before the run \
             ended (the server held every connection, or the client was starved of CPU)",
            rate.missed,
            rate.scheduled.unwrap_or(0),
        )?;
    }
    writeln!(
        out,
        "  response time counts from when each request was scheduled, so it includes any wait for a free\n  \
         connection, as a user arriving on schedule would wait (coordinated omission corrected); service\n  \
         time counts from when the request was actually sent, as closed-loop tools measure."
    )?;
    if let Some(shortfall) = super::plain::cell_rate_shortfall(summary) {
        writeln!(out, "  {shortfall}")?;
    }
    Ok(())
}

fn write_spread(
    out: &mut String,
    label: &str,
    spread: &Spread,
    format: impl Fn(f64) -> String,
) -> std::fmt::Result {
    writeln!(
        out,
        "{label} {:>10}  {:>10}  {:>10}  {:>10}  {:>8.2}%",
        format(spread.min),
        format(spread.max),
        format(spread.mean),
        format(spread.sd),
        spread.within_sd_pct
    )
}

fn write_percentiles(out: &mut String, label: &str, summary: &LatencySummary) -> std::fmt::Result {
    write!(out, "{label}")?;
    for (_, value) in summary.percentiles.labelled() {
        let cell = if summary.count == 0 {
            "-".to_owned()
        } else {
            format_micros(value as f64)
        };
        write!(out, " {cell:>PERCENTILE_WIDTH$}")?;
    }
    writeln!(out)
}

/// The comparison table, columns aligned (latencies in milliseconds), stacked into tables that
/// fit [`WIDTH`]: the throughput and the ratio, the latencies, then the rest, each led by the
/// cell's number and protocol.
pub(crate) fn comparison(document: &super::Document) -> String {
    let (titles, lines) =
        super::comparison::table(&document.comparison, super::comparison::Intervals::Inline);
    let mut out = format!("\n{}\n", comparison_heading(document));
    out.push_str(&stacked(&titles, &lines, &COMPARISON_GROUPS, WIDTH));
    if let Some(legend) = super::comparison::legend(&document.comparison) {
        out.push_str(&legend);
        out.push('\n');
    }
    if let Some((titles, lines)) = super::comparison::rounds::table(&document.comparison) {
        let titles: Vec<&str> = titles.iter().map(String::as_str).collect();
        out.push_str("\nrounds (spread: highest minus lowest, over the mean):\n");
        out.push_str(&stacked(&titles, &lines, &[&[]], WIDTH));
    }
    write_sentences(&mut out, &super::plain::comparison(&document.comparison))
        .expect("writing to a String cannot fail");
    out
}

/// `comparison of 2 cells (latencies in ms; 95% intervals within one run):`, or with `--rounds`
/// what the figures and their intervals are across the rounds.
pub(crate) fn comparison_heading(document: &super::Document) -> String {
    let cells = super::counted(document.comparison.len() as u64, "cell");
    match &document.rounds {
        Some(rounds) => format!(
            "comparison of {cells} over {} (latencies in ms; each figure is the mean of its rounds, its 95% interval across them):",
            super::counted(rounds.count as u64, "round")
        ),
        None => {
            format!("comparison of {cells} (latencies in ms; 95% intervals within one run):")
        }
    }
}

/// `--quiet`'s comparison: the plain words alone, each ratio with its interval.
pub(crate) fn comparison_verdicts(document: &super::Document) -> String {
    let mut out = String::new();
    write_sentences(&mut out, &super::plain::comparison(&document.comparison))
        .expect("writing to a String cannot fail");
    out
}

/// The comparison's columns by the table they go in (the first two columns lead every table; a
/// column named in none goes in the last).
const COMPARISON_GROUPS: [&[&str]; 3] = [
    &["c", "m", "rate", "req/s", "MB/s", "Gbit/s", "vs first"],
    &["p50", "p90", "p99", "p99.9", "max"],
    &[],
];
