//! Per-thread measurements: HDR histograms, request counters and wire byte counts.
//!
//! Each runner thread owns one [`Recorder`] and one [`WireMeter`]; nothing here is shared between
//! threads, so recording takes no lock. The runner merges them when the threads finish.

pub mod backlog;
pub mod handshakes;
pub mod hdr;
pub(crate) mod outcome;
pub mod paths;

use std::cell::Cell;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::plan::{Protocol, TimelineInterval};
use crate::runner::tls::TlsInfo;
use handshakes::{Handshake, Handshakes};
use hdr::new_histogram;

/// A request started more than this long after its scheduled time counts as late (rate mode).
pub const LATE_AFTER: Duration = Duration::from_millis(1);

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros())
        .unwrap_or(u64::MAX)
        .max(1)
}

/// The index of `status`'s class in `status_classes` (1xx: 0 .. 5xx: 4), if it has one.
fn status_class(status: u16) -> Option<usize> {
    (100..600)
        .contains(&status)
        .then(|| usize::from(status / 100) - 1)
}

/// Why a request or connection did not get its response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The TCP connection could not be established.
    Connect,
    /// Connecting took longer than `--connect-timeout`.
    ConnectTimeout,
    /// The request, or its connection, ran past a timeout.
    Timeout,
    /// The connection was closed or reset before the response completed.
    Closed,
    /// The server sent something that is not valid HTTP, or reset the stream.
    Protocol,
    /// The TLS handshake failed, or ALPN selected a protocol the user ruled out.
    Tls,
    /// The connection was reset (TCP RST) before the response completed.
    Reset,
    /// The server's GOAWAY left the request unprocessed, on every attempt (or with `--no-retry`).
    Goaway,
    /// The server refused the request's HTTP/2 stream (REFUSED_STREAM) on every attempt.
    Refused,
    /// The server reset the request's HTTP/2 stream (its code is counted too).
    StreamReset,
    /// The generator ran out of file descriptors (EMFILE/ENFILE).
    TooManyOpenFiles,
    /// The `--proxy` refused the tunnel (a non-2xx answer to `CONNECT`) or answered badly.
    Proxy,
    /// A complete response failed a response check (`--expect-status`, `--expect-header`,
    /// `--expect-body-contains`).
    Check,
}

impl ErrorKind {
    /// Every kind, in report order.
    pub const ALL: [ErrorKind; 13] = [
        ErrorKind::Connect,
        ErrorKind::ConnectTimeout,
        ErrorKind::TooManyOpenFiles,
        ErrorKind::Proxy,
        ErrorKind::Tls,
        ErrorKind::Timeout,
        ErrorKind::Closed,
        ErrorKind::Reset,
        ErrorKind::Goaway,
        ErrorKind::Refused,
        ErrorKind::StreamReset,
        ErrorKind::Protocol,
        ErrorKind::Check,
    ];

    /// The kind's name in reports and JSON.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Connect => "connect",
            ErrorKind::ConnectTimeout => "connect_timeout",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Closed => "closed",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Tls => "tls",
            ErrorKind::Reset => "reset",
            ErrorKind::Goaway => "goaway",
            ErrorKind::Refused => "refused",
            ErrorKind::StreamReset => "stream_reset",
            ErrorKind::TooManyOpenFiles => "too_many_open_files",
            ErrorKind::Proxy => "proxy",
            ErrorKind::Check => "check",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// Why a connection or a request could not go on: how it is counted, and what to tell the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// How the failure is counted.
    pub kind: ErrorKind,
    /// What happened, worded for the user.
    pub message: String,
}

impl Failure {
    /// A failure of `kind`, explained by `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Failure {
            kind,
            message: message.into(),
        }
    }

    /// The server broke the protocol.
    pub fn protocol(message: impl Into<String>) -> Self {
        Failure::new(ErrorKind::Protocol, message)
    }
}

/// Request counters with h2load's meanings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct RequestCounters {
    /// Requests sent.
    pub started: u64,
    /// Requests finished: a complete response, or an error after sending.
    pub done: u64,
    /// Complete responses with status 2xx or 3xx.
    pub succeeded: u64,
    /// Requests that did not succeed: error responses, errors, and requests never sent.
    pub failed: u64,
    /// Requests without a complete response (a subset of failed).
    pub errored: u64,
    /// Errored requests that ran into a timeout (a subset of errored).
    pub timeout: u64,
}

/// When a request was scheduled to go out, and when it did. Without `--rate` they are the same
/// instant; with it, a request that waited for a free connection starts after its schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestStart {
    /// The time the request was scheduled for.
    pub intended: Instant,
    /// The time the request was handed to the connection: read when the session queues its
    /// bytes, in the same turn of the driver as, and microseconds before, the write to the socket
    /// (so `actual - intended` is the pacing error, wake-up included).
    pub actual: Instant,
    /// The request's number on its connection, from 1.
    pub sequence: u32,
    /// Which of the plan's paths it asks for.
    pub path: u32,
    /// Its `{seq}`: the request's number over the whole run (0 when no template uses it). A
    /// request sent again keeps it.
    pub number: u64,
    /// How many of its re-sends count against `--max-retries` (see `Ledger::retry`).
    pub retries: u8,
    /// Whether it was sent before and the server did not process it: it keeps its path.
    pub resent: bool,
}

impl RequestStart {
    /// A request's first attempt: scheduled for `intended`, handed to its connection at
    /// `actual`, number `sequence` there.
    pub fn first(intended: Instant, actual: Instant, sequence: u32) -> Self {
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Retried {
    /// Streams above a GOAWAY's last stream id.
    pub goaway: u64,
    /// Streams reset with REFUSED_STREAM.
    pub refused: u64,
    /// Idempotent HTTP/1.1 requests left unanswered when the server closed the connection.
    pub closed: u64,
}

impl Retried {
    /// Every retry, whatever its reason.
    pub fn total(&self) -> u64 {
        self.goaway + self.refused + self.closed
    }

    /// Counts one retry for `kind` (goaway, refused or closed).
    fn count(&mut self, kind: ErrorKind) {
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
pub struct ResponseSample {
    /// When the request was scheduled and sent.
    pub start: RequestStart,
    /// When the first byte of the response arrived.
    pub first_byte: Instant,
    /// When the last byte of the response arrived.
    pub end: Instant,
    /// The response status.
    pub status: u16,
}

/// Responses that failed a response check (`--expect-*`); JSON `checks`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct CheckTally {
    /// How many (each also counts in `failed` and as an error of kind `check`).
    pub failed: u64,
    /// The first one's mismatch, in words (`status 204, expected 200`).
    pub first_mismatch: Option<String>,
}

impl CheckTally {
    /// Adds another thread's (or machine's) tally: the counts add, the earlier first stays.
    pub fn add(&mut self, other: CheckTally) {
        self.failed += other.failed;
        if self.first_mismatch.is_none() {
            self.first_mismatch = other.first_mismatch;
        }
    }
}

/// What one client slot (a connection and its reconnections) achieved, for h2load's req/s per client.
#[derive(Debug, Clone, Copy, Default)]
struct ClientSlot {
    began: Option<Instant>,
    last_response: Option<Instant>,
    responses: u64,
}

/// How many measured requests were in flight over time: its integral gives the time-weighted
/// mean, which tells a rate that the concurrency could not carry (in flight at the limit most of
/// the time) from one that slow responses held up for a while (stalls).
#[derive(Debug, Clone, Copy)]
pub(crate) struct InFlightMeter {
    count: u64,
    since: Instant,
    /// Requests × seconds in flight so far.
    pub(crate) integral: f64,
}

impl InFlightMeter {
    fn new(start: Instant) -> Self {
        InFlightMeter {
            count: 0,
            since: start,
            integral: 0.0,
        }
    }

    /// The count changes at `at` (events may arrive slightly out of order: time never goes back).
    fn change(&mut self, at: Instant, started: u64, ended: u64) {
        if at > self.since {
            self.integral += self.count as f64 * (at - self.since).as_secs_f64();
            self.since = at;
        }
        self.count = (self.count + started).saturating_sub(ended);
    }
}

/// One thread's measurements.
#[derive(Debug, Clone)]
pub struct Recorder {
    measure_start: Instant,
    /// Request latency: send to last byte.
    pub request: Histogram<u64>,
    /// Connection setup time.
    pub connect: Histogram<u64>,
    /// With `--proxy`: the part of the setup until the proxy answered `CONNECT` (created by the
    /// first tunnel, so `None` without a proxy).
    pub proxy: Option<Histogram<u64>>,
    /// Time to first byte of each response.
    pub ttfb: Histogram<u64>,
    /// Request counters.
    pub counters: RequestCounters,
    /// Requests sent again, by reason (each still counts once in `counters`).
    pub retried: Retried,
    /// Responses by status class: 1xx..5xx (index 0..4).
    pub status_classes: [u64; 5],
    /// Errors by kind, indexed like [`ErrorKind::ALL`].
    errors: [u64; ErrorKind::ALL.len()],
    /// Of `errors`, the requests without a response (not the connection attempts, nor the
    /// responses that failed a check), indexed the same way.
    request_errors: [u64; ErrorKind::ALL.len()],
    /// Responses that failed a check.
    pub checks: CheckTally,
    /// Of `status_classes`, the responses that failed a check, by class: the live metrics count
    /// them under the outcome `check` instead.
    pub(crate) check_failed_classes: [u64; 5],
    /// Connections established.
    pub connections_opened: u64,
    /// Of those, the ones begun in the measured period (connections per second counts them).
    pub connections_measured: u64,
    /// TLS handshakes of the connections begun in the measured period, by kind (TLS runs).
    pub handshakes: Option<Box<Handshakes>>,
    /// Connection attempts that failed.
    pub connections_failed: u64,
    /// Established connections that have ended (so `connections_opened` minus this are open).
    pub(crate) connections_ended: u64,
    /// Established connections the client closed itself because of a timeout.
    pub(crate) connections_closed_by_client: u64,
    /// The first connection-level error, worded for the user.
    pub first_error: Option<String>,
    /// The smallest per-connection concurrency an engine settled on (e.g. capped by the server).
    pub effective_concurrency: Option<usize>,
    /// The first TLS session's parameters.
    pub tls: Option<TlsInfo>,
    /// Things the user should know that are not errors, each once.
    pub warnings: Vec<String>,
    connections_by_protocol: [u64; Protocol::ALL.len()],
    clients: Vec<ClientSlot>,
    /// Service time (actual send to last byte), kept only in rate mode: there `request` is the
    /// response time, measured from the scheduled send.
    pub service: Option<Histogram<u64>>,
    /// How long after its schedule each request went out (rate mode).
    pub start_delay: Option<Histogram<u64>>,
    /// Per-interval counts and histograms.
    pub intervals: Intervals,
    /// Stream resets (HTTP/2 and HTTP/3) by error code.
    pub stream_reset_codes: std::collections::BTreeMap<crate::proto::ResetCode, u64>,
    /// Measured requests in flight over time.
    pub(crate) in_flight: InFlightMeter,
    /// Per-URL counts and latency, when the plan has two paths or more.
    pub paths: Option<paths::PathStats>,
    /// A steered run's responses to requests sent before their step's measured part.
    pub backlog: Option<backlog::Backlog>,
}

impl Recorder {
    /// A recorder for `slots` client slots that counts requests scheduled at or after
    /// `measure_start`, with a timeline of `interval`s; `rate_mode` keeps service times apart.
    pub fn new(
        measure_start: Instant,
        slots: usize,
        interval: TimelineInterval,
        rate_mode: bool,
    ) -> Self {
        Recorder {
            measure_start,
            request: new_histogram(),
            connect: new_histogram(),
            proxy: None,
            ttfb: new_histogram(),
            counters: RequestCounters::default(),
            retried: Retried::default(),
            status_classes: [0; 5],
            errors: [0; ErrorKind::ALL.len()],
            request_errors: [0; ErrorKind::ALL.len()],
            checks: CheckTally::default(),
            check_failed_classes: [0; 5],
            connections_opened: 0,
            connections_measured: 0,
            handshakes: None,
            connections_failed: 0,
            connections_ended: 0,
            connections_closed_by_client: 0,
            first_error: None,
            effective_concurrency: None,
            tls: None,
            warnings: Vec::new(),
            connections_by_protocol: [0; Protocol::ALL.len()],
            clients: vec![ClientSlot::default(); slots],
            service: rate_mode.then(new_histogram),
            start_delay: rate_mode.then(new_histogram),
            intervals: Intervals::new(measure_start, interval.length, interval.auto, rate_mode),
            stream_reset_codes: std::collections::BTreeMap::new(),
            in_flight: InFlightMeter::new(measure_start),
            paths: None,
            backlog: None,
        }
    }

    /// Keeps per-URL counts and latency for a plan of `count` paths (two or more).
    pub fn track_paths(&mut self, count: usize) {
        self.paths = paths::PathStats::new(count);
    }

    /// A measured request for path `path` ended without a response (its counters are
    /// [`Recorder::requests_failed`]'s).
    pub fn path_failed(&mut self, path: u32) {
        if let Some(paths) = &mut self.paths {
            paths.failed(path as usize);
        }
    }

    /// Whether a request started at `start` belongs to the measured period (not the warm-up).
    pub fn is_measured(&self, start: Instant) -> bool {
        start >= self.measure_start
    }

    /// A connection for `slot` was established; `start..end` is its setup time.
    pub fn connected(&mut self, slot: usize, start: Instant, end: Instant) {
        self.connections_opened += 1;
        self.connections_measured += u64::from(self.is_measured(start));
        self.connect.saturating_record(micros(end - start));
        self.clients[slot].began.get_or_insert(start);
    }

    /// A connection's tunnel through the proxy was open `took` after it began.
    pub fn proxy_connected(&mut self, took: Duration) {
        self.proxy
            .get_or_insert_with(new_histogram)
            .saturating_record(micros(took));
    }

    /// The TLS handshake of a connection begun at `start` ended as `handshake` (counted when the
    /// connection began in the measured period, like connections per second).
    pub fn handshake(&mut self, start: std::time::Instant, handshake: Handshake) {
        if self.is_measured(start) {
            self.handshakes
                .get_or_insert_with(Box::default)
                .record(handshake);
        }
    }

    /// A connection settled on `protocol`.
    pub fn note_protocol(&mut self, protocol: Protocol) {
        self.connections_by_protocol[protocol as usize] += 1;
    }

    /// Connections by protocol, only those that occurred.
    pub fn protocols(&self) -> impl Iterator<Item = (Protocol, u64)> + '_ {
        Protocol::ALL
            .iter()
            .map(|protocol| (*protocol, self.connections_by_protocol[*protocol as usize]))
            .filter(|(_, count)| *count > 0)
    }

    /// A TLS handshake completed; the first one is described in the report.
    pub fn note_tls(&mut self, info: TlsInfo) {
        self.tls.get_or_insert(info);
    }

    /// Something the user should know, reported once however often it happens.
    pub fn warn(&mut self, message: String) {
        if !self.warnings.contains(&message) {
            self.warnings.push(message);
        }
    }

    /// A connection attempt failed.
    pub fn connect_failed(&mut self, kind: ErrorKind, message: String) {
        self.connections_failed += 1;
        self.errors[kind.index()] += 1;
        self.first_error.get_or_insert(message);
    }

    /// A connection failed after it was established, in a way the user should hear about.
    pub fn note_error(&mut self, message: String) {
        self.first_error.get_or_insert(message);
    }

    /// A request was sent for the first time: with `--rate`, how late it went is its start delay
    /// (recorded here, not at its response, so that a retried request counts the lateness of its
    /// scheduled send, not of the attempt that got through).
    pub fn request_started(&mut self, start: RequestStart) {
        if self.is_measured(start.intended) {
            self.counters.started += 1;
            self.in_flight.change(start.actual, 1, 0);
            if let Some(histogram) = &mut self.start_delay {
                histogram.saturating_record(micros(start.actual - start.intended));
            }
        }
    }

    /// A request sent at or after the measure start goes out again: the server never processed it
    /// (`kind`: goaway, refused or closed).
    pub fn request_retried(&mut self, kind: ErrorKind) {
        self.retried.count(kind);
    }

    /// A response completed on `slot`: it succeeded if its status is 2xx or 3xx.
    pub fn response(&mut self, slot: usize, sample: ResponseSample) {
        self.count_response(slot, sample, (200..400).contains(&sample.status));
    }

    /// A response completed on `slot` and met every response check: it succeeded, whatever its
    /// status (`--expect-status` said which succeed).
    pub fn response_passed(&mut self, slot: usize, sample: ResponseSample) {
        self.count_response(slot, sample, true);
    }

    /// A response completed on `slot` and failed a response check, which `mismatch` puts in
    /// words (asked only for the first): it failed, as an error of kind `check`. Its status
    /// and times count as any response's.
    pub fn response_failed_check(
        &mut self,
        slot: usize,
        sample: ResponseSample,
        mismatch: impl FnOnce() -> String,
    ) {
        if !self.is_measured(sample.start.intended) {
            return;
        }
        self.count_response(slot, sample, false);
        self.errors[ErrorKind::Check.index()] += 1;
        self.checks.failed += 1;
        self.checks.first_mismatch.get_or_insert_with(mismatch);
        if let Some(class) = status_class(sample.status) {
            self.check_failed_classes[class] += 1;
        }
    }

    fn count_response(&mut self, slot: usize, sample: ResponseSample, succeeded: bool) {
        let start = sample.start;
        if !self.is_measured(start.intended) {
            return;
        }
        self.in_flight.change(sample.end, 0, 1);
        let counters = &mut self.counters;
        counters.done += 1;
        if let Some(class) = status_class(sample.status) {
            self.status_classes[class] += 1;
        }
        if succeeded {
            counters.succeeded += 1;
        } else {
            counters.failed += 1;
        }
        let response = micros(sample.end - start.intended);
        if let Some(paths) = &mut self.paths {
            paths.completed(start.path as usize, succeeded, response);
        }
        let ttfb = micros(sample.first_byte.saturating_duration_since(start.actual));
        let service = micros(sample.end - start.actual);
        self.request.saturating_record(response);
        if let Some(backlog) = &mut self.backlog {
            backlog.completed(start.actual, response);
        }
        self.ttfb.saturating_record(ttfb);
        if let Some(histogram) = &mut self.service {
            histogram.saturating_record(service);
        }
        self.intervals
            .completed(sample.end, response, ttfb, service);
        let client = &mut self.clients[slot];
        client.responses += 1;
        client.last_response = Some(sample.end);
    }

    /// `count` requests sent at or after the measure start ended without a complete response.
    pub fn requests_failed(&mut self, count: u64, kind: ErrorKind) {
        let counters = &mut self.counters;
        counters.done += count;
        counters.errored += count;
        counters.failed += count;
        if kind == ErrorKind::Timeout {
            counters.timeout += count;
        }
        self.errors[kind.index()] += count;
        self.request_errors[kind.index()] += count;
        let now = Instant::now();
        self.in_flight.change(now, 0, count);
        self.intervals.errored(now, count);
    }

    /// Records what an engine settled on as its per-connection concurrency; the smallest wins.
    pub fn note_effective_concurrency(&mut self, value: usize) {
        self.effective_concurrency =
            Some(self.effective_concurrency.map_or(value, |v| v.min(value)));
    }

    /// Error counts by kind, in [`ErrorKind::ALL`] order.
    pub fn errors(&self) -> impl Iterator<Item = (ErrorKind, u64)> + '_ {
        ErrorKind::ALL
            .iter()
            .map(|kind| (*kind, self.errors[kind.index()]))
    }

    /// Requests that ended without a response, by kind, in [`ErrorKind::ALL`] order (the
    /// connection attempts that failed are left out, unlike [`Recorder::errors`]).
    pub fn request_errors(&self) -> impl Iterator<Item = (ErrorKind, u64)> + '_ {
        ErrorKind::ALL
            .iter()
            .map(|kind| (*kind, self.request_errors[kind.index()]))
    }

    /// Connection attempts that failed, by kind, in [`ErrorKind::ALL`] order: what
    /// [`Recorder::errors`] counts beyond the requests and the failed checks.
    pub fn connection_errors(&self) -> impl Iterator<Item = (ErrorKind, u64)> + '_ {
        self.errors()
            .zip(self.request_errors())
            .map(|((kind, all), (_, requests))| {
                let responses = if kind == ErrorKind::Check { all } else { 0 };
                (kind, all - requests - responses)
            })
    }

    /// An established connection ended.
    pub fn connection_ended(&mut self) {
        self.connections_ended += 1;
    }

    /// Measured requests in flight now.
    pub(crate) fn in_flight_now(&self) -> u64 {
        self.in_flight.count
    }

    /// Requests per second of each client slot that got responses (h2load's "req/s" row).
    pub fn client_rates(&self) -> Vec<f64> {
        self.clients
            .iter()
            .filter_map(|client| {
                let began = client.began?.max(self.measure_start);
                let span = client
                    .last_response?
                    .saturating_duration_since(began)
                    .as_secs_f64();
                (span > 0.0).then(|| client.responses as f64 / span)
            })
            .collect()
    }

    /// Adds another thread's measurements to this one.
    pub fn merge(&mut self, other: Recorder) {
        for (mine, theirs) in [
            (&mut self.service, &other.service),
            (&mut self.start_delay, &other.start_delay),
        ] {
            if let (Some(mine), Some(theirs)) = (mine, theirs) {
                mine.add(theirs).expect("histograms share bounds");
            }
        }
        if let Some(theirs) = &other.proxy {
            self.proxy
                .get_or_insert_with(new_histogram)
                .add(theirs)
                .expect("histograms share bounds");
        }
        self.request
            .add(&other.request)
            .expect("histograms share bounds");
        self.connect
            .add(&other.connect)
            .expect("histograms share bounds");
        self.ttfb.add(&other.ttfb).expect("histograms share bounds");
        self.counters += other.counters;
        self.retried += other.retried;
        for (mine, theirs) in self.status_classes.iter_mut().zip(other.status_classes) {
            *mine += theirs;
        }
        for (mine, theirs) in self.errors.iter_mut().zip(other.errors) {
            *mine += theirs;
        }
        for (mine, theirs) in self.request_errors.iter_mut().zip(other.request_errors) {
            *mine += theirs;
        }
        self.checks.add(other.checks);
        for (mine, theirs) in self
            .check_failed_classes
            .iter_mut()
            .zip(other.check_failed_classes)
        {
            *mine += theirs;
        }
        self.connections_opened += other.connections_opened;
        self.connections_measured += other.connections_measured;
        if let Some(theirs) = &other.handshakes {
            self.handshakes
                .get_or_insert_with(Box::default)
                .merge(theirs);
        }
        self.connections_failed += other.connections_failed;
        self.connections_ended += other.connections_ended;
        self.connections_closed_by_client += other.connections_closed_by_client;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
        if let Some(value) = other.effective_concurrency {
            self.note_effective_concurrency(value);
        }
        for (mine, theirs) in self
            .connections_by_protocol
            .iter_mut()
            .zip(other.connections_by_protocol)
        {
            *mine += theirs;
        }
        if self.tls.is_none() {
            self.tls = other.tls;
        }
        for warning in other.warnings {
            self.warn(warning);
        }
        self.clients.extend(other.clients);
        self.intervals.merge(other.intervals);
        self.in_flight.integral += other.in_flight.integral;
        for (code, count) in other.stream_reset_codes {
            *self.stream_reset_codes.entry(code).or_default() += count;
        }
        match (&mut self.paths, other.paths) {
            (Some(mine), Some(theirs)) => mine.merge(theirs),
            (mine @ None, theirs) => *mine = theirs,
            (Some(_), None) => {}
        }
    }
}

/// One thread's measurements of one interval, histograms encoded (V2 + deflate) to stay small.
#[derive(Debug, Clone)]
pub struct IntervalRecord {
    /// Which interval: 0 is the first of the measured period.
    pub index: u64,
    /// Responses completed in it.
    pub completed: u64,
    /// Requests that failed in it.
    pub errors: u64,
    /// Response times of its responses.
    pub request: Vec<u8>,
    /// Times to first byte.
    pub ttfb: Vec<u8>,
    /// Service times (rate mode).
    pub service: Option<Vec<u8>>,
}

impl IntervalRecord {
    /// Adds `other` (an interval of the same index) to this one.
    fn absorb(&mut self, other: &IntervalRecord) {
        fn add(mine: &mut Vec<u8>, theirs: &[u8]) {
            let mut sum = hdr::decode(mine).expect("recorded histograms decode");
            sum.add(hdr::decode(theirs).expect("recorded histograms decode"))
                .expect("histograms share bounds");
            *mine = hdr::encode(&sum);
        }
        self.completed += other.completed;
        self.errors += other.errors;
        add(&mut self.request, &other.request);
        add(&mut self.ttfb, &other.ttfb);
        if let (Some(mine), Some(theirs)) = (&mut self.service, &other.service) {
            add(mine, theirs);
        }
    }
}

/// When the interval length is chosen automatically (no `--interval`), a thread that has closed
/// this many intervals makes them 2 or 5 times longer, merging neighbours: memory stays bounded
/// however long a `-n` run takes, and the report re-buckets to its final length anyway.
const MAX_AUTO_INTERVALS: usize = 2048;

/// The timeline: counts and histograms per interval, rotated as time passes. Memory stays flat:
/// only the current interval has full histograms; closed ones are kept encoded.
#[derive(Debug, Clone)]
pub struct Intervals {
    /// Interval length.
    pub length: Duration,
    /// Whether the length was chosen automatically, so it may grow (see [`MAX_AUTO_INTERVALS`]).
    pub(crate) auto: bool,
    start: Instant,
    current: u64,
    ends_at: Instant,
    completed: u64,
    errors: u64,
    request: Histogram<u64>,
    ttfb: Histogram<u64>,
    service: Option<Histogram<u64>>,
    closed: Vec<IntervalRecord>,
}

impl Intervals {
    fn new(start: Instant, length: Duration, auto: bool, rate_mode: bool) -> Self {
        Intervals {
            length,
            auto,
            start,
            current: 0,
            ends_at: start + length,
            completed: 0,
            errors: 0,
            request: new_histogram(),
            ttfb: new_histogram(),
            service: rate_mode.then(new_histogram),
            closed: Vec::new(),
        }
    }

    /// Moves to the interval holding `at`, closing the current one if `at` is past it.
    fn advance(&mut self, at: Instant) {
        if at < self.ends_at {
            return;
        }
        self.close();
        if self.auto && self.closed.len() >= MAX_AUTO_INTERVALS {
            // Along 1-2-10-20-100… multiples of the base, so the report can still pick a round
            // length (10, 20, 50, 100, 200, 500 ms, 1 s) that is a multiple of this one.
            let units = self.length.as_nanos() / TimelineInterval::AUTO_BASE.as_nanos();
            let power_of_ten = units > 0 && 10u128.pow(units.ilog10()) == units;
            self.coarsen(if power_of_ten { 2 } else { 5 });
        }
        let elapsed = at.saturating_duration_since(self.start).as_nanos();
        self.current = (elapsed / self.length.as_nanos().max(1)) as u64;
        self.ends_at = self.start + self.length.mul_f64((self.current + 1) as f64);
    }

    /// Makes the closed intervals `factor` times longer, merging the ones that now share an index.
    fn coarsen(&mut self, factor: u32) {
        if factor <= 1 {
            return;
        }
        self.length *= factor;
        let mut merged: Vec<IntervalRecord> = Vec::with_capacity(self.closed.len());
        self.closed.sort_by_key(|record| record.index);
        for mut record in self.closed.drain(..) {
            record.index /= u64::from(factor);
            match merged.last_mut() {
                Some(last) if last.index == record.index => last.absorb(&record),
                _ => merged.push(record),
            }
        }
        self.closed = merged;
    }

    fn completed(&mut self, at: Instant, response: u64, ttfb: u64, service: u64) {
        self.advance(at);
        self.completed += 1;
        self.request.saturating_record(response);
        self.ttfb.saturating_record(ttfb);
        if let Some(histogram) = &mut self.service {
            histogram.saturating_record(service);
        }
    }

    fn errored(&mut self, at: Instant, count: u64) {
        self.advance(at);
        self.errors += count;
    }

    /// Stores the current interval (if anything happened in it) and starts it afresh.
    fn close(&mut self) {
        if self.completed == 0 && self.errors == 0 {
            return;
        }
        self.closed.push(IntervalRecord {
            index: self.current,
            completed: self.completed,
            errors: self.errors,
            request: hdr::encode(&self.request),
            ttfb: hdr::encode(&self.ttfb),
            service: self.service.as_ref().map(hdr::encode),
        });
        self.completed = 0;
        self.errors = 0;
        self.request.reset();
        self.ttfb.reset();
        if let Some(histogram) = &mut self.service {
            histogram.reset();
        }
    }

    /// Adds another thread's intervals, first bringing both to the longer of their lengths.
    fn merge(&mut self, other: Intervals) {
        let mut other_closed = other;
        other_closed.close();
        let ratio = |long: Duration, short: Duration| {
            u32::try_from(long.as_nanos() / short.as_nanos().max(1)).unwrap_or(u32::MAX)
        };
        if other_closed.length > self.length {
            self.close();
            self.coarsen(ratio(other_closed.length, self.length));
        } else {
            other_closed.coarsen(ratio(self.length, other_closed.length));
        }
        self.closed.extend(other_closed.closed);
    }

    /// Every interval, the current one included; threads' records of one index are merged later.
    pub fn into_closed(mut self) -> Vec<IntervalRecord> {
        self.close();
        self.closed
    }
}

/// Bytes received, as plain numbers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct WireTotals {
    /// Every byte read from sockets (after TLS, before HTTP framing is removed).
    pub total: u64,
    /// Response header bytes as sent (HPACK-compressed for HTTP/2).
    pub headers: u64,
    /// Response header bytes uncompressed (name + value lengths for HTTP/2).
    pub headers_uncompressed: u64,
    /// Response body bytes.
    pub data: u64,
}

impl WireTotals {
    /// The bytes counted since `earlier` was taken.
    pub fn since(self, earlier: WireTotals) -> WireTotals {
        WireTotals {
            total: self.total - earlier.total,
            headers: self.headers - earlier.headers,
            headers_uncompressed: self.headers_uncompressed - earlier.headers_uncompressed,
            data: self.data - earlier.data,
        }
    }

    /// Adds another thread's totals.
    pub fn add(&mut self, other: WireTotals) {
        self.total += other.total;
        self.headers += other.headers;
        self.headers_uncompressed += other.headers_uncompressed;
        self.data += other.data;
    }
}

/// One thread's running byte counts, written by socket taps and engines.
#[derive(Debug, Default)]
pub struct WireMeter {
    total: Cell<u64>,
    headers: Cell<u64>,
    headers_uncompressed: Cell<u64>,
    data: Cell<u64>,
}

impl WireMeter {
    /// Bytes read from a socket.
    pub fn add_total(&self, bytes: u64) {
        self.total.set(self.total.get() + bytes);
    }

    /// Header bytes as sent, and their uncompressed size.
    pub fn add_headers(&self, wire: u64, uncompressed: u64) {
        self.headers.set(self.headers.get() + wire);
        self.headers_uncompressed
            .set(self.headers_uncompressed.get() + uncompressed);
    }

    /// Response body bytes.
    pub fn add_data(&self, bytes: u64) {
        self.data.set(self.data.get() + bytes);
    }

    /// The counts so far.
    pub fn totals(&self) -> WireTotals {
        WireTotals {
            total: self.total.get(),
            headers: self.headers.get(),
            headers_uncompressed: self.headers_uncompressed.get(),
            data: self.data.get(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: TimelineInterval = TimelineInterval {
        length: Duration::from_secs(1),
        auto: false,
    };

    fn sample(start: Instant, ms: u64, status: u16) -> ResponseSample {
        let end = start + Duration::from_millis(ms);
        ResponseSample {
            start: RequestStart::first(start, start, 1),
            first_byte: end,
            end,
            status,
        }
    }

    #[test]
    fn counts_follow_h2load_definitions() {
        let t0 = Instant::now();
        let mut rec = Recorder::new(t0, 1, SECOND, false);
        for status in [200, 302, 404, 503] {
            rec.request_started(RequestStart::first(t0, t0, 1));
            rec.response(0, sample(t0, 5, status));
        }
        rec.request_started(RequestStart::first(t0, t0, 1));
        rec.requests_failed(1, ErrorKind::Timeout);
        let c = rec.counters;
        assert_eq!(
            (
                c.started,
                c.done,
                c.succeeded,
                c.failed,
                c.errored,
                c.timeout
            ),
            (5, 5, 2, 3, 1, 1)
        );
        assert_eq!(rec.status_classes, [0, 1, 1, 1, 1]);
        assert_eq!(rec.request.len(), 4);
    }

    #[test]
    fn rate_mode_separates_response_and_service_time() {
        let t0 = Instant::now();
        let mut rec = Recorder::new(t0, 1, SECOND, true);
        let start = RequestStart::first(t0, t0 + Duration::from_millis(500), 1);
        let end = start.actual + Duration::from_millis(10);
        rec.request_started(start);
        rec.response(
            0,
            ResponseSample {
                start,
                first_byte: end,
                end,
                status: 200,
            },
        );
        assert_eq!(
            rec.request.max(),
            rec.request.highest_equivalent(510_000),
            "from the schedule"
        );
        let service = rec.service.as_ref().unwrap();
        assert_eq!(
            service.max(),
            service.highest_equivalent(10_000),
            "from the actual send"
        );
        let delay = rec.start_delay.as_ref().unwrap();
        assert_eq!(delay.max(), delay.highest_equivalent(500_000));
    }

    #[test]
    fn a_retried_request_keeps_the_start_delay_of_its_scheduled_send() {
        let t0 = Instant::now();
        let mut rec = Recorder::new(t0, 1, SECOND, true);
        let first = RequestStart::first(t0, t0, 1);
        rec.request_started(first);
        rec.request_retried(ErrorKind::Goaway);
        let again = RequestStart {
            actual: t0 + Duration::from_millis(300),
            retries: 1,
            resent: true,
            ..first
        };
        let end = again.actual + Duration::from_millis(10);
        rec.response(
            0,
            ResponseSample {
                start: again,
                first_byte: end,
                end,
                status: 200,
            },
        );
        let delay = rec.start_delay.as_ref().unwrap();
        assert_eq!((delay.len(), delay.max()), (1, 1), "on time: 1 µs at least");
        assert_eq!(rec.request.max(), rec.request.highest_equivalent(310_000));
        let service = rec.service.as_ref().unwrap();
        assert_eq!(service.max(), service.highest_equivalent(10_000));
        assert_eq!((rec.counters.started, rec.counters.done), (1, 1));
        assert_eq!(rec.retried.goaway, 1);
    }

    #[test]
    fn intervals_rotate_and_keep_encoded_histograms() {
        let t0 = Instant::now();
        let mut rec = Recorder::new(t0, 1, SECOND, false);
        for (at_ms, status) in [(100, 200), (900, 200), (1_100, 200), (3_500, 200)] {
            let end = t0 + Duration::from_millis(at_ms);
            let start = RequestStart::first(
                end - Duration::from_millis(50),
                end - Duration::from_millis(50),
                1,
            );
            rec.response(
                0,
                ResponseSample {
                    start,
                    first_byte: end,
                    end,
                    status,
                },
            );
        }
        let intervals = rec.intervals.into_closed();
        let shape: Vec<(u64, u64)> = intervals.iter().map(|i| (i.index, i.completed)).collect();
        assert_eq!(shape, [(0, 2), (1, 1), (3, 1)]);
        let histogram = crate::recorder::hdr::decode(&intervals[0].request).unwrap();
        assert_eq!(histogram.len(), 2);
    }

    #[test]
    fn automatic_intervals_grow_instead_of_piling_up() {
        let t0 = Instant::now();
        let auto = TimelineInterval {
            length: TimelineInterval::AUTO_BASE,
            auto: true,
        };
        let mut rec = Recorder::new(t0, 1, auto, false);
        // One response per 10 ms interval for 3000 intervals (30 s): past 2048 closed intervals
        // they merge in pairs, so memory stays bounded and nothing is lost.
        for interval in 0..3000u64 {
            let end = t0 + Duration::from_millis(interval * 10 + 5);
            rec.request_started(RequestStart::first(
                end - Duration::from_millis(1),
                end - Duration::from_millis(1),
                1,
            ));
            rec.response(0, sample(end - Duration::from_millis(1), 1, 200));
        }
        assert_eq!(rec.intervals.length, Duration::from_millis(20));
        let records = rec.intervals.clone().into_closed();
        assert!(records.len() <= MAX_AUTO_INTERVALS, "{}", records.len());
        assert_eq!(records.iter().map(|r| r.completed).sum::<u64>(), 3000);
        assert!(records[..1000].iter().all(|r| r.completed == 2));
    }

    #[test]
    fn warm_up_requests_are_not_measured() {
        let t0 = Instant::now();
        let mut rec = Recorder::new(t0 + Duration::from_secs(1), 1, SECOND, false);
        rec.request_started(RequestStart::first(t0, t0, 1));
        rec.response(0, sample(t0, 5, 200));
        assert_eq!(rec.counters, RequestCounters::default());
        assert_eq!(rec.request.len(), 0);
    }

    #[test]
    fn merge_adds_everything() {
        let t0 = Instant::now();
        let mut a = Recorder::new(t0, 1, SECOND, false);
        let mut b = Recorder::new(t0, 2, SECOND, false);
        a.connected(0, t0, t0);
        b.connected(1, t0, t0);
        a.response(0, sample(t0, 1, 200));
        b.response(1, sample(t0, 100, 200));
        b.note_effective_concurrency(8);
        a.note_effective_concurrency(16);
        a.merge(b);
        assert_eq!(a.counters.done, 2);
        assert_eq!(a.request.max(), a.request.highest_equivalent(100_000));
        assert_eq!(a.effective_concurrency, Some(8));
        assert_eq!(a.client_rates().len(), 2);
        let intervals = a.intervals.into_closed();
        assert!(
            intervals.iter().all(|interval| interval.index == 0),
            "both ended in the first second"
        );
        assert_eq!(
            intervals
                .iter()
                .map(|interval| interval.completed)
                .sum::<u64>(),
            2
        );
    }
}
