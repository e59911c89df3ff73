//! What a [`Recorder`](super::Recorder) has measured, as the report reads it: the recorder
//! writes these fields through its own methods and dereferences to them, read-only, so that no
//! code outside `recorder` can write one.

use hdrhistogram::Histogram;

use super::handshakes::Handshakes;
use super::in_flight::InFlightMeter;
use super::{backlog, grpc, messages, paths, CheckTally, ErrorResponse};
use super::{Intervals, RequestCounters, Retried, Symptom};
use crate::tls::TlsInfo;

/// One thread's (or run's) measurements, read-only outside `recorder`.
#[derive(Debug, Clone)]
pub struct Measurements {
    /// Request latency: send to last byte.
    pub request: Histogram<u64>,
    /// Connection setup time.
    pub(crate) connect: Histogram<u64>,
    /// With `--proxy`: the part of the setup until the proxy answered `CONNECT` (created by the
    /// first tunnel, so `None` without a proxy).
    pub(crate) proxy: Option<Histogram<u64>>,
    /// Time to first byte of each response.
    pub(crate) ttfb: Histogram<u64>,
    /// Request counters.
    pub counters: RequestCounters,
    /// Requests sent again, by reason (each still counts once in `counters`).
    pub(crate) retried: Retried,
    /// Responses by status class: 1xx..5xx (index 0..4).
    pub(crate) status_classes: [u64; 5],
    /// Responses that failed a check.
    pub(crate) checks: CheckTally,
    /// Of `status_classes`, the responses that failed a check, by class: the live metrics count
    /// them under the outcome `check` instead.
    pub(crate) check_failed_classes: [u64; 5],
    /// Connections established.
    pub connections_opened: u64,
    /// Of those, the ones begun in the measured period (connections per second counts them).
    pub(crate) connections_measured: u64,
    /// TLS handshakes of the connections begun in the measured period, by kind (TLS runs).
    pub(crate) handshakes: Option<Box<Handshakes>>,
    /// Connection attempts that failed.
    pub(crate) connections_failed: u64,
    /// Established connections that have ended (so `connections_opened` minus this are open).
    pub(crate) connections_ended: u64,
    /// Established connections the client closed itself because of a timeout.
    pub(crate) connections_closed_by_client: u64,
    /// The first connection-level error, worded for the user.
    pub(crate) first_error: Option<String>,
    /// The first failure that showed a [`Symptom`], with its message.
    pub(crate) first_symptom: Option<(Symptom, String)>,
    /// The first response with a 4xx/5xx status, with the first bytes of its body.
    pub(crate) first_error_response: Option<ErrorResponse>,
    /// The smallest per-connection concurrency an engine settled on (e.g. capped by the server).
    pub(crate) effective_concurrency: Option<usize>,
    /// The first TLS session's parameters.
    pub(crate) tls: Option<TlsInfo>,
    /// Things the user should know that are not errors, each once.
    pub(crate) warnings: Vec<String>,
    /// Service time (actual send to last byte), kept only in rate mode: there `request` is the
    /// response time, measured from the scheduled send.
    pub(crate) service: Option<Histogram<u64>>,
    /// How long after its schedule each request went out (rate mode).
    pub(crate) start_delay: Option<Histogram<u64>>,
    /// How long each response waited, whole in the kernel's socket buffer, for h2load-rs to
    /// read it: from the kernel's receive timestamp of the newest byte of the read that
    /// completed it to that read. Created by the first stamped read, so `None` where the
    /// transport gives no timestamps (io_uring, unix sockets, HTTP/3).
    pub(crate) receive_wait: Option<Histogram<u64>>,
    /// Messages inside requests' streams (gRPC calls): counts each way, time to the first,
    /// round trips, gaps.
    pub(crate) messages: messages::MessageFigures,
    /// Per-interval counts and histograms.
    pub(crate) intervals: Intervals,
    /// gRPC calls by status, and messages (zero outside gRPC cells).
    pub(crate) grpc: grpc::GrpcTally,
    /// The `grpc-message` of the first measured call that ended with a status other than OK.
    pub(crate) grpc_status_message: Option<grpc::StatusMessage>,
    /// Stream resets (HTTP/2 and HTTP/3) by error code.
    pub(crate) stream_reset_codes: std::collections::BTreeMap<crate::proto::ResetCode, u64>,
    /// Measured requests in flight over time.
    pub(crate) in_flight: InFlightMeter,
    /// Per-URL counts and latency, when the plan has two paths or more.
    pub(crate) paths: Option<paths::PathStats>,
    /// A steered run's responses to requests sent before their step's measured part.
    pub(crate) backlog: Option<backlog::Backlog>,
}
