//! How a cell's report merges another run's of the same cell (`h2load-rs merge`): each part of
//! the schema adds the other's, field by field, through the [`Adder`], which checks every sum.

use std::collections::BTreeMap;

use anyhow::Result;

use super::schema::{Connections, GrpcReport, Requests, StatusCodes, Traffic};
use crate::recorder::{RequestCounters, Retried};
use crate::usage_bail;

/// Adds the counts of the report `source` to the merged ones; a sum past 2^64 − 1 is a usage
/// error naming the file and the field, never a count that wraps. The Summary parts' `add`
/// methods (beside their types) add field by field through it.
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
