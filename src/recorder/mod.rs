//! Per-thread measurements: HDR histograms, request counters and wire byte counts.
//!
//! Each runner thread owns one [`Recorder`] and one [`WireMeter`]; nothing here is shared between
//! threads, so recording takes no lock. The runner merges them when the threads finish.
//!
//! The types it records live beside it: `failure.rs` (ErrorKind, Failure), `events.rs` (what the
//! engines report, the counters), `in_flight.rs`, `timeline.rs` (per-interval records), `wire.rs`,
//! `messages.rs` (the message layer: messages inside a request's stream, for every protocol).

pub(crate) mod backlog;
mod events;
mod failure;
pub(crate) mod grpc;
pub(crate) mod handshakes;
pub(crate) mod hdr;
mod in_flight;
mod measurements;
pub(crate) mod messages;
pub(crate) mod outcome;
pub(crate) mod paths;
mod timeline;
mod wire;

use std::time::{Duration, Instant};

use crate::plan::{Protocol, TimelineInterval};
use crate::tls::TlsInfo;
use handshakes::Handshake;
use hdr::new_histogram;
use in_flight::InFlightMeter;

pub(crate) use events::{
    CheckTally, ErrorResponse, RequestCounters, RequestStart, ResponseSample, Retried,
};
pub(crate) use failure::{ErrorKind, Failure, Symptom};
pub(crate) use measurements::Measurements;
pub(crate) use timeline::Intervals;
pub(crate) use wire::{WireMeter, WireTotals};

/// A request started more than this long after its scheduled time counts as late (rate mode).
pub(crate) const LATE_AFTER: Duration = Duration::from_millis(1);

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

/// What one client slot (a connection and its reconnections) achieved, for h2load's req/s per client.
#[derive(Debug, Clone, Copy, Default)]
struct ClientSlot {
    began: Option<Instant>,
    last_response: Option<Instant>,
    responses: u64,
}

/// One thread's measurements. Written through its methods only: outside `recorder`, what it
/// measured is read through [`Measurements`], which it dereferences to (read-only: there is no
/// `DerefMut`, so no field can be written from outside).
#[derive(Debug, Clone)]
pub struct Recorder {
    measure_start: Instant,
    /// Errors by kind, indexed like [`ErrorKind::ALL`].
    errors: [u64; ErrorKind::ALL.len()],
    /// Of `errors`, the requests without a response (not the connection attempts, nor the
    /// responses that failed a check), indexed the same way.
    request_errors: [u64; ErrorKind::ALL.len()],
    connections_by_protocol: [u64; Protocol::ALL.len()],
    clients: Vec<ClientSlot>,
    /// What the report reads.
    measured: Measurements,
}

impl std::ops::Deref for Recorder {
    type Target = Measurements;

    fn deref(&self) -> &Measurements {
        &self.measured
    }
}

impl Recorder {
    /// A recorder for `slots` client slots that counts requests scheduled at or after
    /// `measure_start`, with a timeline of `interval`s; `rate_mode` keeps service times apart.
    pub(crate) fn new(
        measure_start: Instant,
        slots: usize,
        interval: TimelineInterval,
        rate_mode: bool,
    ) -> Self {
        Recorder {
            measure_start,
            errors: [0; ErrorKind::ALL.len()],
            request_errors: [0; ErrorKind::ALL.len()],
            connections_by_protocol: [0; Protocol::ALL.len()],
            clients: vec![ClientSlot::default(); slots],
            measured: Measurements {
                request: new_histogram(),
                connect: new_histogram(),
                proxy: None,
                ttfb: new_histogram(),
                counters: RequestCounters::default(),
                retried: Retried::default(),
                status_classes: [0; 5],
                checks: CheckTally::default(),
                check_failed_classes: [0; 5],
                connections_opened: 0,
                connections_measured: 0,
                handshakes: None,
                connections_failed: 0,
                connections_ended: 0,
                connections_closed_by_client: 0,
                first_error: None,
                first_symptom: None,
                first_error_response: None,
                effective_concurrency: None,
                tls: None,
                warnings: Vec::new(),
                service: rate_mode.then(new_histogram),
                start_delay: rate_mode.then(new_histogram),
                receive_wait: None,
                messages: messages::MessageFigures::default(),
                intervals: Intervals::new(measure_start, interval.length, interval.auto, rate_mode),
                grpc: grpc::GrpcTally::default(),
                grpc_status_message: None,
                stream_reset_codes: std::collections::BTreeMap::new(),
                in_flight: InFlightMeter::new(measure_start),
                paths: None,
                backlog: None,
            },
        }
    }

    /// Keeps a steered run's backlog: the responses to requests sent before `edge`'s step's
    /// measured part.
    pub(crate) fn track_backlog(&mut self, edge: std::sync::Arc<backlog::StepEdge>) {
        self.measured.backlog = Some(backlog::Backlog::new(edge));
    }

    /// Keeps per-URL counts and latency for a plan of `count` paths (two or more).
    pub(crate) fn track_paths(&mut self, count: usize) {
        self.measured.paths = paths::PathStats::new(count);
    }

    /// A measured request for path `path` ended without a response (its counters are
    /// [`Recorder::requests_failed`]'s).
    pub(crate) fn path_failed(&mut self, path: u32) {
        if let Some(paths) = &mut self.measured.paths {
            paths.failed(path as usize);
        }
    }

    /// Whether a request started at `start` belongs to the measured period (not the warm-up).
    pub(crate) fn is_measured(&self, start: Instant) -> bool {
        start >= self.measure_start
    }

    /// A connection for `slot` was established; `start..end` is its setup time.
    pub(crate) fn connected(&mut self, slot: usize, start: Instant, end: Instant) {
        self.measured.connections_opened += 1;
        self.measured.connections_measured += u64::from(self.is_measured(start));
        self.measured.connect.saturating_record(micros(end - start));
        self.clients[slot].began.get_or_insert(start);
    }

    /// A connection's tunnel through the proxy was open `took` after it began.
    pub(crate) fn proxy_connected(&mut self, took: Duration) {
        self.measured
            .proxy
            .get_or_insert_with(new_histogram)
            .saturating_record(micros(took));
    }

    /// The TLS handshake of a connection begun at `start` ended as `handshake` (counted when the
    /// connection began in the measured period, like connections per second).
    pub(crate) fn handshake(&mut self, start: std::time::Instant, handshake: Handshake) {
        if self.is_measured(start) {
            self.measured
                .handshakes
                .get_or_insert_with(Box::default)
                .record(handshake);
        }
    }

    /// A connection settled on `protocol`.
    pub(crate) fn note_protocol(&mut self, protocol: Protocol) {
        self.connections_by_protocol[protocol as usize] += 1;
    }

    /// Connections by protocol, only those that occurred.
    pub(crate) fn protocols(&self) -> impl Iterator<Item = (Protocol, u64)> + '_ {
        Protocol::ALL
            .iter()
            .map(|protocol| (*protocol, self.connections_by_protocol[*protocol as usize]))
            .filter(|(_, count)| *count > 0)
    }

    /// A TLS handshake completed; the first one is described in the report.
    pub(crate) fn note_tls(&mut self, info: TlsInfo) {
        self.measured.tls.get_or_insert(info);
    }

    /// Something the user should know, reported once however often it happens.
    pub(crate) fn warn(&mut self, message: String) {
        if !self.measured.warnings.contains(&message) {
            self.measured.warnings.push(message);
        }
    }

    /// A connection attempt failed.
    pub(crate) fn connect_failed(&mut self, failure: Failure) {
        self.measured.connections_failed += 1;
        self.errors[failure.kind.index()] += 1;
        self.note_symptom(&failure);
        self.measured.first_error.get_or_insert(failure.message);
    }

    /// Keeps `failure`'s symptom, with its message, if it shows one and is the first to.
    pub(crate) fn note_symptom(&mut self, failure: &Failure) {
        if let (None, Some(symptom)) = (&self.measured.first_symptom, failure.symptom) {
            self.measured.first_symptom = Some((symptom, failure.message.clone()));
        }
    }

    /// Whether a session should keep the body of the 4xx/5xx response it is reading: only
    /// until one is kept, so the hot path copies nothing once it is.
    pub(crate) fn wants_error_body(&self) -> bool {
        self.measured.first_error_response.is_none()
    }

    /// A response with a 4xx/5xx status and its first bytes, kept if it is the first.
    pub(crate) fn error_response(&mut self, response: ErrorResponse) {
        self.measured.first_error_response.get_or_insert(response);
    }

    /// A connection failed after it was established, in a way the user should hear about.
    /// Keeps `message` as the run's first error, unless one is kept already. It may quote the
    /// server, so it is kept as [`crate::error::escaped_line`] prints it.
    pub(crate) fn note_error(&mut self, message: String) {
        self.measured
            .first_error
            .get_or_insert_with(|| crate::error::escaped_line(&message).into_owned());
    }

    /// A request was sent for the first time: with `--rate`, how late it went is its start delay
    /// (recorded here, not at its response, so that a retried request counts the lateness of its
    /// scheduled send, not of the attempt that got through).
    pub(crate) fn request_started(&mut self, start: RequestStart) {
        if self.is_measured(start.intended) {
            self.measured.counters.started += 1;
            self.measured.in_flight.change(start.actual, 1, 0);
            if let Some(histogram) = &mut self.measured.start_delay {
                histogram.saturating_record(micros(start.actual - start.intended));
            }
        }
    }

    /// A request scheduled at `intended` sent `bytes`, messages of its stream.
    pub(crate) fn message_sent(&mut self, intended: Instant, bytes: messages::MessageBytes) {
        if self.is_measured(intended) {
            self.measured.messages.sent.add(bytes);
        }
    }

    /// A request scheduled at `intended` received a message of its stream, with `times`.
    pub(crate) fn message_received(&mut self, intended: Instant, times: messages::MessageTimes) {
        if self.is_measured(intended) {
            self.measured.messages.record(times);
        }
    }

    /// The stream of a request scheduled at `intended` ended having received `received`.
    pub(crate) fn message_stream_ended(
        &mut self,
        intended: Instant,
        received: messages::MessageBytes,
    ) {
        if self.is_measured(intended) {
            self.measured.messages.received.add(received);
        }
    }

    /// The response of a request scheduled at `intended` began an event stream.
    pub(crate) fn event_stream_opened(&mut self, intended: Instant) {
        if self.is_measured(intended) {
            self.measured.messages.streams += 1;
        }
    }

    /// A gRPC call scheduled at `intended` ended with status `code`, not OK, saying `text` in
    /// its `grpc-message`: the first such text is the report's.
    pub(crate) fn grpc_status_message(&mut self, intended: Instant, code: u64, text: &str) {
        if self.is_measured(intended) && self.measured.grpc_status_message.is_none() {
            self.measured.grpc_status_message = Some(grpc::StatusMessage::new(code, text));
        }
    }

    /// The server reset the stream of a request scheduled at `intended` with `code`.
    pub(crate) fn stream_reset(&mut self, intended: Instant, code: crate::proto::ResetCode) {
        if self.is_measured(intended) {
            *self.measured.stream_reset_codes.entry(code).or_default() += 1;
        }
    }

    /// A read at `at` completed `responses` responses, whose newest byte had arrived `waited`
    /// before it.
    pub(crate) fn received_after(&mut self, at: Instant, waited: Duration, responses: u64) {
        if self.is_measured(at) {
            self.measured
                .receive_wait
                .get_or_insert_with(new_histogram)
                .saturating_record_n(micros(waited), responses);
        }
    }

    /// A request sent at or after the measure start goes out again: the server never processed it
    /// (`kind`: goaway, refused or closed).
    pub(crate) fn request_retried(&mut self, kind: ErrorKind) {
        self.measured.retried.count(kind);
    }

    /// A response completed on `slot`: it succeeded if its status is 2xx or 3xx.
    pub(crate) fn response(&mut self, slot: usize, sample: ResponseSample) {
        let succeeded = match sample.grpc {
            Some(code) => code == 0,
            None => (200..400).contains(&sample.status),
        };
        self.count_response(slot, sample, succeeded);
    }

    /// A response completed on `slot` and met every response check: it succeeded, whatever its
    /// status (`--expect-status` said which succeed).
    pub(crate) fn response_passed(&mut self, slot: usize, sample: ResponseSample) {
        self.count_response(slot, sample, true);
    }

    /// A response completed on `slot` and failed a response check, which `mismatch` puts in
    /// words (asked only for the first): it failed, as an error of kind `check`. Its status
    /// and times count as any response's.
    pub(crate) fn response_failed_check(
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
        self.measured.checks.failed += 1;
        self.measured
            .checks
            .first_mismatch
            .get_or_insert_with(mismatch);
        if let Some(class) = status_class(sample.status) {
            self.measured.check_failed_classes[class] += 1;
        }
    }

    fn count_response(&mut self, slot: usize, sample: ResponseSample, succeeded: bool) {
        let start = sample.start;
        if !self.is_measured(start.intended) {
            return;
        }
        self.measured.in_flight.change(sample.end, 0, 1);
        let counters = &mut self.measured.counters;
        counters.done += 1;
        if let Some(class) = status_class(sample.status) {
            self.measured.status_classes[class] += 1;
        }
        if let Some(code) = sample.grpc {
            self.measured.grpc.call(code);
        }
        if succeeded {
            counters.succeeded += 1;
        } else {
            counters.failed += 1;
        }
        let response = micros(sample.end - start.intended);
        if let Some(paths) = &mut self.measured.paths {
            paths.completed(start.path as usize, succeeded, response);
        }
        let ttfb = micros(sample.first_byte.saturating_duration_since(start.actual));
        let service = micros(sample.end - start.actual);
        self.measured.request.saturating_record(response);
        if let Some(backlog) = &mut self.measured.backlog {
            backlog.completed(start.actual, response);
        }
        self.measured.ttfb.saturating_record(ttfb);
        if let Some(histogram) = &mut self.measured.service {
            histogram.saturating_record(service);
        }
        self.measured
            .intervals
            .completed(sample.end, response, ttfb, service);
        let client = &mut self.clients[slot];
        client.responses += 1;
        client.last_response = Some(sample.end);
    }

    /// `count` requests sent at or after the measure start ended without a complete response.
    pub(crate) fn requests_failed(&mut self, count: u64, kind: ErrorKind) {
        let counters = &mut self.measured.counters;
        counters.done += count;
        counters.errored += count;
        counters.failed += count;
        if kind == ErrorKind::Timeout {
            counters.timeout += count;
        }
        self.errors[kind.index()] += count;
        self.request_errors[kind.index()] += count;
        let now = Instant::now();
        self.measured.in_flight.change(now, 0, count);
        self.measured.intervals.errored(now, count);
    }

    /// Records what an engine settled on as its per-connection concurrency; the smallest wins.
    pub(crate) fn note_effective_concurrency(&mut self, value: usize) {
        self.measured.effective_concurrency = Some(
            self.measured
                .effective_concurrency
                .map_or(value, |v| v.min(value)),
        );
    }

    /// Error counts by kind, in [`ErrorKind::ALL`] order.
    pub(crate) fn errors(&self) -> impl Iterator<Item = (ErrorKind, u64)> + '_ {
        ErrorKind::ALL
            .iter()
            .map(|kind| (*kind, self.errors[kind.index()]))
    }

    /// Requests that ended without a response, by kind, in [`ErrorKind::ALL`] order (the
    /// connection attempts that failed are left out, unlike [`Recorder::errors`]).
    pub(crate) fn request_errors(&self) -> impl Iterator<Item = (ErrorKind, u64)> + '_ {
        ErrorKind::ALL
            .iter()
            .map(|kind| (*kind, self.request_errors[kind.index()]))
    }

    /// Connection attempts that failed, by kind, in [`ErrorKind::ALL`] order: what
    /// [`Recorder::errors`] counts beyond the requests and the failed checks.
    pub(crate) fn connection_errors(&self) -> impl Iterator<Item = (ErrorKind, u64)> + '_ {
        self.errors()
            .zip(self.request_errors())
            .map(|((kind, all), (_, requests))| {
                let responses = if kind == ErrorKind::Check { all } else { 0 };
                (kind, all - requests - responses)
            })
    }

    /// Requests the run's budget never let go (it stopped first): they count as failed with
    /// no response.
    pub(crate) fn never_sent(&mut self, count: u64) {
        self.measured.counters.failed += count;
        self.measured.counters.errored += count;
    }

    /// The client closed an established connection itself, because of a timeout.
    pub(crate) fn closed_by_client(&mut self) {
        self.measured.connections_closed_by_client += 1;
    }

    /// An established connection ended.
    pub(crate) fn connection_ended(&mut self) {
        self.measured.connections_ended += 1;
    }

    /// Measured requests in flight now.
    pub(crate) fn in_flight_now(&self) -> u64 {
        self.measured.in_flight.count
    }

    /// Requests per second of each client slot that got responses (h2load's "req/s" row).
    pub(crate) fn client_rates(&self) -> Vec<f64> {
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
    pub(crate) fn merge(&mut self, other: Recorder) {
        for (mine, theirs) in [
            (&mut self.measured.service, &other.measured.service),
            (&mut self.measured.start_delay, &other.measured.start_delay),
        ] {
            if let (Some(mine), Some(theirs)) = (mine, theirs) {
                mine.add(theirs).expect("histograms share bounds");
            }
        }
        // Moved where this side has none (no third ~180 KB histogram for a sum of one).
        for (mine, theirs) in [
            (&mut self.measured.proxy, other.measured.proxy),
            (&mut self.measured.receive_wait, other.measured.receive_wait),
        ] {
            match (mine.as_mut(), theirs) {
                (Some(mine), Some(theirs)) => mine.add(&theirs).expect("histograms share bounds"),
                (None, theirs) => *mine = theirs,
                (Some(_), None) => {}
            }
        }
        self.measured
            .request
            .add(&other.measured.request)
            .expect("histograms share bounds");
        self.measured
            .connect
            .add(&other.measured.connect)
            .expect("histograms share bounds");
        self.measured
            .ttfb
            .add(&other.measured.ttfb)
            .expect("histograms share bounds");
        self.measured.counters += other.measured.counters;
        self.measured.retried += other.measured.retried;
        for (mine, theirs) in self
            .measured
            .status_classes
            .iter_mut()
            .zip(other.measured.status_classes)
        {
            *mine += theirs;
        }
        for (mine, theirs) in self.errors.iter_mut().zip(other.errors) {
            *mine += theirs;
        }
        for (mine, theirs) in self.request_errors.iter_mut().zip(other.request_errors) {
            *mine += theirs;
        }
        self.measured.checks.add(other.measured.checks);
        for (mine, theirs) in self
            .measured
            .check_failed_classes
            .iter_mut()
            .zip(other.measured.check_failed_classes)
        {
            *mine += theirs;
        }
        self.measured.connections_opened += other.measured.connections_opened;
        self.measured.connections_measured += other.measured.connections_measured;
        if let Some(theirs) = &other.measured.handshakes {
            self.measured
                .handshakes
                .get_or_insert_with(Box::default)
                .merge(theirs);
        }
        self.measured.connections_failed += other.measured.connections_failed;
        self.measured.connections_ended += other.measured.connections_ended;
        self.measured.connections_closed_by_client += other.measured.connections_closed_by_client;
        if self.measured.first_error.is_none() {
            self.measured.first_error = other.measured.first_error;
        }
        if self.measured.first_symptom.is_none() {
            self.measured.first_symptom = other.measured.first_symptom;
        }
        if self.measured.first_error_response.is_none() {
            self.measured.first_error_response = other.measured.first_error_response;
        }
        if let Some(value) = other.measured.effective_concurrency {
            self.note_effective_concurrency(value);
        }
        for (mine, theirs) in self
            .connections_by_protocol
            .iter_mut()
            .zip(other.connections_by_protocol)
        {
            *mine += theirs;
        }
        if self.measured.tls.is_none() {
            self.measured.tls = other.measured.tls;
        }
        for warning in other.measured.warnings {
            self.warn(warning);
        }
        self.clients.extend(other.clients);
        self.measured.intervals.merge(other.measured.intervals);
        self.measured.in_flight.integral += other.measured.in_flight.integral;
        self.measured.grpc.merge(&other.measured.grpc);
        self.measured.messages.merge(other.measured.messages);
        if self.measured.grpc_status_message.is_none() {
            self.measured.grpc_status_message = other.measured.grpc_status_message;
        }
        for (code, count) in other.measured.stream_reset_codes {
            *self.measured.stream_reset_codes.entry(code).or_default() += count;
        }
        match (&mut self.measured.paths, other.measured.paths) {
            (Some(mine), Some(theirs)) => mine.merge(theirs),
            (mine @ None, theirs) => *mine = theirs,
            (Some(_), None) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) const SECOND: TimelineInterval = TimelineInterval {
        length: Duration::from_secs(1),
        auto: false,
    };

    pub(super) fn sample(start: Instant, ms: u64, status: u16) -> ResponseSample {
        let end = start + Duration::from_millis(ms);
        ResponseSample {
            start: RequestStart::first(start, start, 1),
            first_byte: end,
            end,
            status,
            grpc: None,
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
                grpc: None,
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
                grpc: None,
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
        let intervals = a.measured.intervals.into_closed();
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
