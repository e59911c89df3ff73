//! How a cell's report merges another run's of the same cell (`h2load-rs merge`): each part of
//! the schema merges the other's own (`merge`), counts through the [`Adder`], which checks every
//! sum; [`Summary::merge`] only hands each part its counterpart. What the whole's wall-clock span
//! decides (its rates, timeline and intervals) `merge` works out once every part is in.

use std::collections::BTreeMap;

use anyhow::Result;
use hdrhistogram::Histogram;

use super::build::latency_summary;
use super::schema::{
    CellInfo, Connections, EventsReport, GrpcReport, Histograms, Latencies, LatencySummary,
    ProtocolInfo, Requests, Settings, StatusCodes, Summary, Traffic, UrlRow,
};
use crate::recorder::{hdr, RequestCounters, Retried};
use crate::usage_bail;

/// Adds the counts of the report `source` to the merged ones; a sum past 2^64 − 1 is a usage
/// error naming the file and the field, never a count that wraps. The Summary parts' `merge`
/// methods add field by field through it.
pub(crate) struct Adder<'a> {
    pub(crate) source: &'a str,
}

impl Adder<'_> {
    pub(crate) fn add(&self, sum: &mut u64, value: u64, field: &str) -> Result<()> {
        match sum.checked_add(value) {
            Some(total) => *sum = total,
            None => usage_bail!(
                "'{}': its {field} ({value}) and the other reports' add up past 2^64 - 1",
                self.source
            ),
        }
        Ok(())
    }

    pub(crate) fn add_usize(&self, sum: &mut usize, value: usize, field: &str) -> Result<()> {
        let mut wide = *sum as u64;
        self.add(&mut wide, value as u64, field)?;
        match usize::try_from(wide) {
            Ok(total) => *sum = total,
            Err(_) => usage_bail!("'{}': its {field} passes the limit", self.source),
        }
        Ok(())
    }

    /// Adds optional counts: present when any part has them.
    pub(crate) fn add_optional(
        &self,
        sum: &mut Option<u64>,
        value: Option<u64>,
        field: &str,
    ) -> Result<()> {
        if sum.is_some() || value.is_some() {
            self.add(sum.get_or_insert(0), value.unwrap_or(0), field)?;
        }
        Ok(())
    }

    /// Adds counts by key.
    pub(crate) fn add_map<K: Ord>(
        &self,
        sums: &mut BTreeMap<K, u64>,
        values: BTreeMap<K, u64>,
        field: &str,
    ) -> Result<()> {
        for (key, value) in values {
            self.add(sums.entry(key).or_default(), value, field)?;
        }
        Ok(())
    }
}

impl Requests {
    /// Adds another run's counts (`merge`), each checked by `adder`; every field is named, so a
    /// new one does not compile until it is added here.
    pub(crate) fn merge(&mut self, other: Requests, adder: &Adder<'_>) -> Result<()> {
        let Requests {
            total,
            counters,
            never_sent,
            in_flight_at_stop,
            retried,
        } = other;
        adder.add(&mut self.total, total, "requests.total")?;
        adder.add(&mut self.never_sent, never_sent, "requests.never_sent")?;
        adder.add(
            &mut self.in_flight_at_stop,
            in_flight_at_stop,
            "requests.in_flight_at_stop",
        )?;
        let Retried {
            goaway,
            refused,
            closed,
        } = retried;
        let mine = &mut self.retried;
        adder.add(&mut mine.goaway, goaway, "requests.retried.goaway")?;
        adder.add(&mut mine.refused, refused, "requests.retried.refused")?;
        adder.add(&mut mine.closed, closed, "requests.retried.closed")?;
        let RequestCounters {
            started,
            done,
            succeeded,
            failed,
            errored,
            timeout,
        } = counters;
        let mine = &mut self.counters;
        adder.add(&mut mine.started, started, "requests.started")?;
        adder.add(&mut mine.done, done, "requests.done")?;
        adder.add(&mut mine.succeeded, succeeded, "requests.succeeded")?;
        adder.add(&mut mine.failed, failed, "requests.failed")?;
        adder.add(&mut mine.errored, errored, "requests.errored")?;
        adder.add(&mut mine.timeout, timeout, "requests.timeout")
    }
}

impl StatusCodes {
    /// Adds another run's counts (`merge`), each checked by `adder`.
    pub(crate) fn merge(&mut self, other: StatusCodes, adder: &Adder<'_>) -> Result<()> {
        let StatusCodes {
            informational,
            success,
            redirection,
            client_error,
            server_error,
        } = other;
        adder.add(&mut self.informational, informational, "status_codes.1xx")?;
        adder.add(&mut self.success, success, "status_codes.2xx")?;
        adder.add(&mut self.redirection, redirection, "status_codes.3xx")?;
        adder.add(&mut self.client_error, client_error, "status_codes.4xx")?;
        adder.add(&mut self.server_error, server_error, "status_codes.5xx")
    }
}

impl GrpcReport {
    /// Adds another run's counts (`merge`), each checked by `adder`.
    pub(crate) fn merge(&mut self, other: GrpcReport, adder: &Adder<'_>) -> Result<()> {
        adder.add_map(&mut self.statuses, other.statuses, "grpc.statuses")?;
        if self.first_status_message.is_none() {
            self.first_status_message = other.first_status_message;
        }
        for (mine, theirs, field) in [
            (&mut self.sent, other.sent, "grpc.sent"),
            (&mut self.received, other.received, "grpc.received"),
        ] {
            adder.add(&mut mine.messages, theirs.messages, field)?;
            adder.add(&mut mine.message_bytes, theirs.message_bytes, field)?;
            adder.add(&mut mine.prefix_bytes, theirs.prefix_bytes, field)?;
        }
        Ok(())
    }
}

impl EventsReport {
    /// Adds another run's counts (`merge`), each checked by `adder`; the merge works out
    /// `events_per_s` again from the sum.
    pub(crate) fn merge(&mut self, other: EventsReport, adder: &Adder<'_>) -> Result<()> {
        adder.add(&mut self.streams, other.streams, "events.streams")?;
        adder.add(&mut self.events, other.events, "events.events")?;
        adder.add(&mut self.data_bytes, other.data_bytes, "events.data_bytes")?;
        self.events_per_stream = self.events as f64 / self.streams.max(1) as f64;
        Ok(())
    }
}

impl Traffic {
    /// Adds another run's byte counts (`merge`), each checked by `adder`; the merge works out
    /// `header_space_savings` again from the sums.
    pub(crate) fn merge(&mut self, other: Traffic, adder: &Adder<'_>) -> Result<()> {
        let Traffic {
            total_bytes,
            header_bytes,
            header_bytes_uncompressed,
            header_space_savings: _,
            data_bytes,
        } = other;
        adder.add(&mut self.total_bytes, total_bytes, "traffic.total_bytes")?;
        adder.add(&mut self.header_bytes, header_bytes, "traffic.header_bytes")?;
        adder.add(
            &mut self.header_bytes_uncompressed,
            header_bytes_uncompressed,
            "traffic.header_bytes_uncompressed",
        )?;
        adder.add(&mut self.data_bytes, data_bytes, "traffic.data_bytes")
    }
}

impl Connections {
    /// Adds another run's counts (`merge`), each checked by `adder`; an optional count is
    /// present when either run has it. The merge works out `per_s` again from the sum.
    pub(crate) fn merge(&mut self, other: Connections, adder: &Adder<'_>) -> Result<()> {
        let Connections {
            opened,
            failed,
            closed_by_client,
            measured,
            per_s: _,
            resumed_handshakes,
            full_handshakes,
            early_data_accepted,
            early_data_rejected,
        } = other;
        adder.add(&mut self.opened, opened, "connections.opened")?;
        adder.add(&mut self.failed, failed, "connections.failed")?;
        adder.add(
            &mut self.closed_by_client,
            closed_by_client,
            "connections.closed_by_client",
        )?;
        adder.add(&mut self.measured, measured, "connections.measured")?;
        for (mine, theirs, field) in [
            (
                &mut self.resumed_handshakes,
                resumed_handshakes,
                "connections.resumed_handshakes",
            ),
            (
                &mut self.full_handshakes,
                full_handshakes,
                "connections.full_handshakes",
            ),
            (
                &mut self.early_data_accepted,
                early_data_accepted,
                "connections.early_data_accepted",
            ),
            (
                &mut self.early_data_rejected,
                early_data_rejected,
                "connections.early_data_rejected",
            ),
        ] {
            adder.add_optional(mine, theirs, field)?;
        }
        Ok(())
    }
}

impl Summary {
    /// Adds `other`, a run of the same cell from the report `adder` names, part by part. A
    /// threshold's value and a capacity search belong to one run: they do not add up, so the
    /// merged cell has neither.
    pub(crate) fn merge(&mut self, other: Summary, adder: &Adder<'_>) -> Result<()> {
        self.histograms.merge(other.histograms)?;
        self.latency.merge(other.latency)?;
        self.thresholds.clear();
        self.capacity = None;
        self.cell.merge(&other.cell, adder)?;
        self.settings.merge(&other.settings, adder)?;
        self.interrupted |= other.interrupted;
        self.requests.merge(other.requests, adder)?;
        self.status_codes.merge(other.status_codes, adder)?;
        adder.add_map(&mut self.errors, other.errors, "errors")?;
        adder.add_map(
            &mut self.request_errors,
            other.request_errors,
            "request_errors",
        )?;
        adder.add_map(
            &mut self.connection_errors,
            other.connection_errors,
            "connection_errors",
        )?;
        adder.add_map(
            &mut self.stream_reset_codes,
            other.stream_reset_codes,
            "stream_reset_codes",
        )?;
        if let Some(theirs) = other.checks {
            let mine = self.checks.get_or_insert_with(Default::default);
            let mut failed = mine.failed;
            adder.add(&mut failed, theirs.failed, "checks.failed")?;
            mine.add(theirs);
        }
        match (&mut self.grpc, other.grpc) {
            (Some(mine), Some(theirs)) => mine.merge(theirs, adder)?,
            (None, None) => {}
            _ => usage_bail!(
                "'{}': a gRPC cell merged with one that is not: the reports are not of the same scenario",
                adder.source
            ),
        }
        self.events = match (self.events.take(), other.events) {
            (Some(mut mine), Some(theirs)) => {
                mine.merge(theirs, adder)?;
                Some(mine)
            }
            (mine, theirs) => mine.or(theirs),
        };
        self.traffic.merge(other.traffic, adder)?;
        self.connections.merge(other.connections, adder)?;
        self.protocol.merge(other.protocol, adder)?;
        self.cause = self.cause.take().or(other.cause);
        self.first_error = self.first_error.take().or(other.first_error);
        for warning in other.warnings {
            if !self.warnings.contains(&warning) {
                self.warnings.push(warning);
            }
        }
        if self.urls.len() != other.urls.len()
            || (self.urls.iter().zip(&other.urls)).any(|(a, b)| a.url != b.url)
        {
            usage_bail!(
                "the reports come from different URL lists, so their per-URL rows cannot be merged"
            );
        }
        for (row, theirs) in self.urls.iter_mut().zip(other.urls) {
            row.merge(theirs, adder)?;
        }
        self.generator_cpu_percent += other.generator_cpu_percent;
        self.generator.add(&other.generator);
        self.watched.extend(other.watched);
        Ok(())
    }
}

impl CellInfo {
    /// Concurrent runs add their clients and their schedules; an unpaced part makes the whole
    /// unpaced.
    fn merge(&mut self, other: &CellInfo, adder: &Adder<'_>) -> Result<()> {
        adder.add_usize(&mut self.clients, other.clients, "cell.clients")?;
        self.rate = self.rate.zip(other.rate).map(|(a, b)| a + b);
        Ok(())
    }
}

impl Settings {
    /// The clients add up; machines may differ in their backend: the merged cell names every
    /// one, in order.
    fn merge(&mut self, other: &Settings, adder: &Adder<'_>) -> Result<()> {
        adder.add_usize(&mut self.clients, other.clients, "settings.clients")?;
        if !self.io.split(',').any(|io| io == other.io) {
            self.io = format!("{},{}", self.io, other.io);
        }
        Ok(())
    }
}

impl ProtocolInfo {
    /// Connections by protocol add up; the effective stream limit is the lowest.
    fn merge(&mut self, other: ProtocolInfo, adder: &Adder<'_>) -> Result<()> {
        adder.add_map(
            &mut self.connections,
            other.connections,
            "protocol.connections",
        )?;
        self.max_concurrent_streams_effective = self
            .max_concurrent_streams_effective
            .into_iter()
            .chain(other.max_concurrent_streams_effective)
            .min();
        Ok(())
    }
}

impl UrlRow {
    /// Adds the row of the same URL in another run.
    fn merge(&mut self, other: UrlRow, adder: &Adder<'_>) -> Result<()> {
        adder.add(&mut self.requests, other.requests, "urls.requests")?;
        adder.add(&mut self.succeeded, other.succeeded, "urls.succeeded")?;
        adder.add(&mut self.failed, other.failed, "urls.failed")?;
        self.latency = match (self.latency.take(), other.latency) {
            (Some(a), Some(b)) => {
                let mut sum = latency_summary(&add_histograms(
                    [hdr::from_base64(&a.hdr)?, hdr::from_base64(&b.hdr)?].into_iter(),
                )?);
                // The parts' extremes are at the run's precision, finer than the URL histograms.
                sum.bound(
                    a.spread.min.min(b.spread.min) as u64,
                    a.percentiles.max.max(b.percentiles.max),
                );
                Some(Box::new(sum))
            }
            (a, b) => a.or(b),
        };
        Ok(())
    }
}

impl Histograms {
    /// Adds another run's histograms, exactly; a service time only when both runs have one.
    fn merge(&mut self, other: Histograms) -> Result<()> {
        for (mine, theirs) in [
            (&mut self.request, other.request),
            (&mut self.connect, other.connect),
            (&mut self.ttfb, other.ttfb),
        ] {
            let sum = std::mem::replace(mine, hdr::fitted_histogram());
            *mine = add_histograms([sum, theirs].into_iter())?;
        }
        self.service = match (self.service.take(), other.service) {
            (Some(mine), Some(theirs)) => Some(add_histograms([mine, theirs].into_iter())?),
            _ => None,
        };
        Ok(())
    }
}

impl Latencies {
    /// Adds another run's optional distributions (a kind of TLS handshake, the proxy's CONNECT,
    /// …): present when either run has one. The others summarize the histograms, and are read
    /// from their sums ([`Latencies::summarize`]).
    fn merge(&mut self, other: Latencies) -> Result<()> {
        for (mine, theirs) in [
            (&mut self.handshake_full, other.handshake_full),
            (&mut self.handshake_resumed, other.handshake_resumed),
            (&mut self.proxy, other.proxy),
            (&mut self.receive_wait, other.receive_wait),
            (&mut self.grpc_first_message, other.grpc_first_message),
            (&mut self.grpc_round_trip, other.grpc_round_trip),
            (&mut self.first_event, other.first_event),
            (&mut self.event_gap, other.event_gap),
        ] {
            *mine = added(mine.take().into_iter().chain(theirs))?;
        }
        Ok(())
    }

    /// Every distribution worked out again from what it summarizes: `histograms` (the merged
    /// cell's), or its own encoded histogram.
    pub(crate) fn summarize(&mut self, histograms: &Histograms) -> Result<()> {
        self.request = latency_summary(&histograms.request);
        self.connect = latency_summary(&histograms.connect);
        self.ttfb = latency_summary(&histograms.ttfb);
        self.service = histograms.service.as_ref().map(latency_summary);
        for optional in [
            &mut self.handshake_full,
            &mut self.handshake_resumed,
            &mut self.proxy,
            &mut self.receive_wait,
            &mut self.grpc_first_message,
            &mut self.grpc_round_trip,
            &mut self.first_event,
            &mut self.event_gap,
        ] {
            *optional = added(optional.take().into_iter())?;
        }
        Ok(())
    }
}

/// The distribution of `summaries` added up: `None` when there is none.
fn added(summaries: impl Iterator<Item = LatencySummary>) -> Result<Option<LatencySummary>> {
    let histograms = summaries
        .map(|summary| hdr::from_base64(&summary.hdr))
        .collect::<Result<Vec<_>>>()?;
    if histograms.is_empty() {
        return Ok(None);
    }
    Ok(Some(latency_summary(&add_histograms(
        histograms.into_iter(),
    )?)))
}

/// The sum of `histograms`; values that add up past 2^64 - 1 are an error (a histogram's count
/// would stop there and its percentiles read 0).
pub(crate) fn add_histograms(
    histograms: impl Iterator<Item = Histogram<u64>>,
) -> Result<Histogram<u64>> {
    let mut sum = hdr::fitted_histogram();
    let mut values = 0u64;
    for histogram in histograms {
        let Some(total) =
            (hdr::checked_len(&histogram).ok()).and_then(|len| values.checked_add(len))
        else {
            usage_bail!("the reports' histograms hold more than 2^64 values together");
        };
        values = total;
        sum.add(histogram).expect("histograms share bounds");
    }
    Ok(sum)
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    /// Gives every number of `value`, and every absent optional one, the next of 1, 2, 3…
    fn numbered(value: &mut Value, next: &mut u64) {
        match value {
            Value::Number(_) | Value::Null => {
                *value = (*next).into();
                *next += 1;
            }
            Value::Object(fields) => fields.values_mut().for_each(|field| numbered(field, next)),
            Value::Array(items) => items.iter_mut().for_each(|item| numbered(item, next)),
            Value::Bool(_) | Value::String(_) => {}
        }
    }

    /// The fields at and under `path` whose sum is not twice the `part`'s value (or, for the
    /// `derived` ones the merge works out again afterwards, not the part's value unchanged).
    fn not_doubled(part: &Value, sum: &Value, path: &str, derived: &[&str]) -> Vec<String> {
        match part {
            Value::Object(fields) => fields
                .iter()
                .flat_map(|(name, field)| {
                    let path = format!("{path}.{name}");
                    not_doubled(field, &sum[name.as_str()], &path, derived)
                })
                .collect(),
            Value::Number(number) => {
                let value = number.as_f64().unwrap();
                let expected = if derived.contains(&path) {
                    value
                } else {
                    2.0 * value
                };
                (sum.as_f64() != Some(expected))
                    .then(|| format!("{path}: {sum} where {expected} was due"))
                    .into_iter()
                    .collect()
            }
            _ => vec![format!("{path}: not a number ({part})")],
        }
    }

    /// Adds a part whose every number is a distinct non-zero value to a copy of itself, and
    /// checks in the JSON that each field doubled: a field `add` leaves out fails, whichever.
    fn adds_every_field<T: serde::Serialize + serde::de::DeserializeOwned>(
        name: &str,
        zero: T,
        add: fn(&mut T, T, &Adder<'_>) -> Result<()>,
        derived: &[&str],
    ) {
        let mut part = serde_json::to_value(zero).unwrap();
        numbered(&mut part, &mut 1);
        let mut sum: T = serde_json::from_value(part.clone()).unwrap();
        add(
            &mut sum,
            serde_json::from_value(part.clone()).unwrap(),
            &Adder { source: "part" },
        )
        .unwrap();
        let sum = serde_json::to_value(sum).unwrap();
        assert_eq!(
            not_doubled(&part, &sum, name, derived),
            Vec::<String>::new()
        );
    }

    #[test]
    fn every_count_of_a_summary_part_adds_up() {
        let requests = Requests {
            total: 0,
            counters: Default::default(),
            never_sent: 0,
            in_flight_at_stop: 0,
            retried: Default::default(),
        };
        adds_every_field("requests", requests, |a, b, adder| a.merge(b, adder), &[]);
        let status_codes = StatusCodes {
            informational: 0,
            success: 0,
            redirection: 0,
            client_error: 0,
            server_error: 0,
        };
        adds_every_field(
            "status_codes",
            status_codes,
            |a, b, adder| a.merge(b, adder),
            &[],
        );
        let traffic = Traffic {
            total_bytes: 0,
            header_bytes: 0,
            header_bytes_uncompressed: 0,
            header_space_savings: 0.0,
            data_bytes: 0,
        };
        let derived = ["traffic.header_space_savings"];
        adds_every_field(
            "traffic",
            traffic,
            |a, b, adder| a.merge(b, adder),
            &derived,
        );
        let connections = Connections {
            opened: 0,
            failed: 0,
            closed_by_client: 0,
            measured: 0,
            per_s: 0.0,
            resumed_handshakes: None,
            full_handshakes: None,
            early_data_accepted: None,
            early_data_rejected: None,
        };
        let derived = ["connections.per_s"];
        adds_every_field(
            "connections",
            connections,
            |a, b, adder| a.merge(b, adder),
            &derived,
        );
    }
}
