//! The numbers said in plain words: the one or two sentences a reader would otherwise have to work
//! out from the report (how many connections the concurrency took, what capped it, what failed).

use super::comparison::Row;
use super::{counted, Summary};

/// Sentences about one cell, most telling first; empty when there is nothing to add.
pub fn cell(summary: &Summary) -> Vec<String> {
    let mut sentences = Vec::new();
    let counters = &summary.requests.counters;
    let clients = summary.settings.clients;
    let requested = summary.settings.max_concurrent_streams;
    let opened = summary.connections.opened;
    match summary.protocol.negotiated.as_deref() {
        Some(_) if clients * requested == 1 => {}
        Some("http/1.1") if requested == 1 => sentences.push(format!(
            "HTTP/1.1 carries one request at a time per connection: {} took {}",
            counted(clients as u64, "concurrent request"),
            // Connections at once, and over the run when churn or reconnections made more.
            if opened > clients as u64 {
                format!(
                    "{} at once ({opened} opened over the run)",
                    counted(clients as u64, "connection")
                )
            } else {
                counted(opened, "connection")
            }
        )),
        Some("http/1.1") => sentences.push(format!(
            "HTTP/1.1 pipelining kept up to {requested} requests queued on {}, answered strictly in order",
            connections_phrase(clients)
        )),
        Some(protocol) => {
            let per = summary
                .protocol
                .max_concurrent_streams_effective
                .unwrap_or(requested);
            let on = if clients == 1 {
                connections_phrase(clients)
            } else {
                format!(
                    "{} ({} in flight at once)",
                    connections_phrase(clients),
                    per * clients
                )
            };
            // One stream per connection is not multiplexing: say what it was.
            sentences.push(if per == 1 {
                format!("{protocol} carried one request at a time on {on}")
            } else {
                format!("{protocol} multiplexed up to {per} concurrent requests on {on}")
            });
            if per < requested {
                sentences.push(format!(
                    "the server limited streams to {per} per connection; -m {requested} was capped"
                ));
            }
        }
        None => sentences.push("no connection was established: nothing was measured".to_owned()),
    }
    if let Some(reconnections) = opened
        .checked_sub(clients as u64)
        .filter(|extra| *extra > 0)
    {
        let by_client = summary.connections.closed_by_client.min(reconnections);
        let by_server = reconnections - by_client;
        let why = match (summary.settings.requests_per_connection, by_client, by_server) {
            (Some(limit), _, _) => format!(
                "each after at most {} by --requests-per-connection, or when the server closed them or they failed",
                counted(limit, "request")
            ),
            (None, 0, _) => "the server closed them or they failed".to_owned(),
            (None, _, 0) => "the client closed them itself when one of its timeouts ran out: -T, -N or --request-timeout; not the server".to_owned(),
            _ => format!(
                "{by_client} closed by the client itself on a timeout, {by_server} by the server or a failure"
            ),
        };
        sentences.push(format!(
            "connections were replaced {} ({why})",
            counted(reconnections, "time")
        ));
    }
    if counters.errored > 0 {
        let never_sent = summary.requests.never_sent;
        let (kind, count) = summary
            .request_errors
            .iter()
            .map(|(kind, count)| (kind.as_str(), *count))
            .max_by_key(|(_, count)| *count)
            .unwrap_or(("unknown", 0));
        // Requests never sent have no kind of their own: the connection attempts' failures are
        // why, and they count attempts, not requests.
        let why = if never_sent > count {
            let attempts = summary
                .connection_errors
                .iter()
                .max_by_key(|(_, count)| **count)
                .map_or(String::new(), |(kind, _)| format!(", most often {kind}"));
            format!(
                "no connection could carry them (never sent: {never_sent}; connection attempts failed: {}{attempts})",
                summary.connections.failed
            )
        } else {
            format!("of {kind} ({count})")
        };
        sentences.push(format!(
            "{} of {} ({:.1}%) got no complete response, most often because {why}",
            counters.errored,
            counted(summary.requests.total, "request"),
            percent(counters.errored, summary.requests.total)
        ));
    }
    if let Some(checks) = summary.checks.as_ref().filter(|checks| checks.failed > 0) {
        sentences.push(format!(
            "{} of {} ({:.1}%) failed a response check (the first: {})",
            checks.failed,
            counted(summary.requests.total, "request"),
            percent(checks.failed, summary.requests.total),
            checks
                .first_mismatch
                .as_deref()
                .unwrap_or("an unknown mismatch")
        ));
    }
    let error_statuses = summary.status_codes.client_error + summary.status_codes.server_error;
    if error_statuses > 0 {
        sentences.push(format!(
            "{} had a 4xx/5xx status: {} latency is that of an error page",
            counted(error_statuses, "response"),
            if error_statuses == 1 { "its" } else { "their" }
        ));
    }
    sentences
}

/// Sentences comparing protocols at each level of a sweep.
pub fn comparison(rows: &[Row]) -> Vec<String> {
    rows.iter()
        .filter_map(|row| {
            let (label, ratio) = row.ratio.as_ref()?;
            let first = rows
                .iter()
                .find(|other| other.ratio.is_none() && other.level == row.level)?;
            let verdict = if *ratio >= 1.02 {
                format!("{:.0}% more requests per second than", (ratio - 1.0) * 100.0)
            } else if *ratio <= 0.98 {
                format!("{:.0}% fewer requests per second than", (1.0 - ratio) * 100.0)
            } else {
                "about as many requests per second as".to_owned()
            };
            Some(format!(
                "at {} ({label} = {ratio:.2}), {} served {verdict} {}, using {} where {} opened {}; p99 {:.2} ms vs {:.2} ms",
                row.setting(),
                row.protocol,
                first.protocol,
                counted(row.connections, "connection"),
                first.protocol,
                first.connections,
                row.p99_us as f64 / 1000.0,
                first.p99_us as f64 / 1000.0
            ))
        })
        .collect()
}

/// `its one connection`, or `each of 10 connections`.
fn connections_phrase(clients: usize) -> String {
    if clients == 1 {
        "its one connection".to_owned()
    } else {
        format!("each of {clients} connections")
    }
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}
