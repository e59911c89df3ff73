//! What the engines report to the [`Recorder`](super::Recorder) about requests (their start, retry
//! and response), and the counters those add up to, each with how it adds across threads.

use std::time::Instant;

use serde::Serialize;

use super::ErrorKind;
#[cfg(doc)]
use crate::proto::ERROR_BODY_KEPT;

/// A response with a 4xx/5xx status and the first [`ERROR_BODY_KEPT`] bytes of its body: what the
/// report quotes when every request got one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ErrorResponse {
    /// Its status.
    pub(crate) status: u16,
    /// The first bytes of its body, at most [`ERROR_BODY_KEPT`].
    pub(crate) body: Vec<u8>,
}

/// Request counters with h2load's meanings.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct RequestCounters {
    /// Requests sent.
    pub(crate) started: u64,
    /// Requests finished: a complete response, or an error after sending.
    pub done: u64,
    /// Complete responses with status 2xx or 3xx.
    pub(crate) succeeded: u64,
    /// Requests that did not succeed: error responses, errors, and requests never sent.
    pub failed: u64,
    /// Requests without a complete response (a subset of failed).
    pub(crate) errored: u64,
    /// Errored requests that ran into a timeout (a subset of errored).
    pub(crate) timeout: u64,
}

/// When a request was scheduled to go out, and when it did. Without `--rate` they are the same
/// instant; with it, a request that waited for a free connection starts after its schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RequestStart {
    /// The time the request was scheduled for.
    pub(crate) intended: Instant,
    /// The time the request was handed to the connection: read when the session queues its
    /// bytes, in the same turn of the driver as, and microseconds before, the write to the socket
    /// (so `actual - intended` is the pacing error, wake-up included).
    pub(crate) actual: Instant,
    /// The request's number on its connection, from 1.
    pub(crate) sequence: u32,
    /// Which of the plan's paths it asks for.
    pub(crate) path: u32,
    /// Its `{seq}`: the request's number over the whole run (0 when no template uses it). A
    /// request sent again keeps it.
    pub(crate) number: u64,
    /// How many of its re-sends count against `--max-retries` (see `Ledger::retry`).
    pub(crate) retries: u8,
    /// Whether it was sent before and the server did not process it: it keeps its path.
    pub(crate) resent: bool,
}

impl RequestStart {
    /// A request's first attempt: scheduled for `intended`, handed to its connection at
    /// `actual`, number `sequence` there.
    pub(crate) fn first(intended: Instant, actual: Instant, sequence: u32) -> Self {
        RequestStart {
            intended,
            actual,
            sequence,
            path: 0,
            number: 0,
            retries: 0,
            resent: false,
        }
    }
}

/// Requests sent again because the server provably never processed them, by reason.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub(crate) struct Retried {
    /// Streams above a GOAWAY's last stream id.
    pub(crate) goaway: u64,
    /// Streams reset with REFUSED_STREAM.
    pub(crate) refused: u64,
    /// Idempotent HTTP/1.1 requests left unanswered when the server closed the connection.
    pub(crate) closed: u64,
}

impl Retried {
    /// Every retry, whatever its reason.
    pub(crate) fn total(&self) -> u64 {
        self.goaway + self.refused + self.closed
    }

    /// Counts one retry for `kind` (goaway, refused or closed).
    pub(super) fn count(&mut self, kind: ErrorKind) {
        match kind {
            ErrorKind::Goaway => self.goaway += 1,
            ErrorKind::Refused => self.refused += 1,
            _ => self.closed += 1,
        }
    }
}

impl std::ops::AddAssign for Retried {
    fn add_assign(&mut self, other: Retried) {
        self.goaway += other.goaway;
        self.refused += other.refused;
        self.closed += other.closed;
    }
}

impl std::ops::AddAssign for RequestCounters {
    fn add_assign(&mut self, other: RequestCounters) {
        self.started += other.started;
        self.done += other.done;
        self.succeeded += other.succeeded;
        self.failed += other.failed;
        self.errored += other.errored;
        self.timeout += other.timeout;
    }
}

/// One completed response, as an engine reports it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ResponseSample {
    /// When the request was scheduled and sent.
    pub(crate) start: RequestStart,
    /// When the first byte of the response arrived.
    pub(crate) first_byte: Instant,
    /// When the last byte of the response arrived.
    pub(crate) end: Instant,
    /// The response status.
    pub(crate) status: u16,
    /// In a gRPC cell, the call's `grpc-status` (from its trailers, or the HTTP status's mapping
    /// when it had none; [`u16::MAX`] for one that is not a number): it, not `status`, decides
    /// whether the call succeeded.
    pub(crate) grpc: Option<u16>,
}

/// Responses that failed a response check (`--expect-*`); JSON `checks`.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub(crate) struct CheckTally {
    /// How many (each also counts in `failed` and as an error of kind `check`).
    pub(crate) failed: u64,
    /// The first one's mismatch, in words (`status 204, expected 200`).
    pub(crate) first_mismatch: Option<String>,
}

impl CheckTally {
    /// Adds another thread's (or machine's) tally: the counts add, the earlier first stays.
    pub(crate) fn add(&mut self, other: CheckTally) {
        self.failed += other.failed;
        if self.first_mismatch.is_none() {
            self.first_mismatch = other.first_mismatch;
        }
    }
}
