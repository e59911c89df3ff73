//! The HTTP/1.1 session: a keep-alive connection with up to `-m` requests written ahead
//! (pipelining when `-m > 1`), responses matched in order. The request head is serialized once,
//! around the path; the body is one shared copy; responses are parsed as they arrive and never kept. See
//! docs/internals.md ("Performance") for why this replaced hyper's client (hyper cannot pipeline,
//! and costs several times the CPU per request).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Method;

use super::contract::{Progress, Read, Session};
use super::events::EventTiming;
use super::outgoing::Outgoing;
use super::render::Renderer;
use super::{earliest, Ledger, NextRequest};
use crate::plan::RunPlan;
use crate::proto::check::Checks;
use crate::proto::events::EventPlan;
use crate::proto::h1::{ByteCounts, Event, RequestHead, ResponseReader};
use crate::recorder::{ErrorKind, Failure, RequestStart, ResponseSample};

use crate::proto::MAX_INTERIM;

/// Requests prepared once per thread.
pub(crate) struct H1Template {
    head: RequestHead,
    /// Headers after the plan's, in prepared and rendered heads alike.
    extra: &'static [(&'static str, &'static str)],
    body: Bytes,
    depth: usize,
    bodyless_responses: bool,
    /// Whether the method may be sent again when a server closes without answering (RFC 9110
    /// §9.2.2), as browsers do: GET, HEAD, PUT, DELETE, OPTIONS.
    pub(crate) idempotent: bool,
    request_timeout: Option<Duration>,
    checks: Option<Arc<Checks>>,
    events: Option<EventPlan>,
    /// Templated requests are rendered one by one instead of taken from `heads`.
    pub(crate) renderer: Option<Renderer>,
}

impl H1Template {
    pub(crate) fn new(plan: &RunPlan) -> Self {
        let template = &plan.request;
        // --no-keepalive: the server closes after each response (its EOF ends the connection).
        let extra: &'static [(&str, &str)] = if plan.no_keepalive {
            &[("connection", "close")]
        } else {
            &[]
        };
        H1Template {
            head: RequestHead::new(&template.parts, extra),
            extra,
            body: template.parts.body.clone(),
            depth: plan.max_concurrent,
            bodyless_responses: template.parts.method == Method::HEAD,
            idempotent: [
                Method::GET,
                Method::HEAD,
                Method::PUT,
                Method::DELETE,
                Method::OPTIONS,
            ]
            .contains(&template.parts.method),
            request_timeout: plan.timeouts.request,
            checks: plan.checks.clone(),
            events: plan.events,
            renderer: Renderer::new(template),
        }
    }
}

/// One HTTP/1.1 connection's state.
pub(crate) struct H1Session<'t> {
    template: &'t H1Template,
    in_flight: VecDeque<RequestStart>,
    reader: ResponseReader,
    counts: ByteCounts,
    first_byte: Option<Instant>,
    interim: u32,
    /// The server announced it closes after the response it just completed.
    closing: bool,
    budget_spent: bool,
    /// The next scheduled send (`--rate`), when a request is waiting for it.
    wake: Option<Instant>,
    /// The timing of the events of the response being read (boxed, as the reader's events).
    timing: Box<EventTiming>,
}

impl<'t> H1Session<'t> {
    pub(crate) fn new(template: &'t H1Template) -> Self {
        H1Session {
            template,
            in_flight: VecDeque::new(),
            reader: ResponseReader::checking(template.bodyless_responses, template.checks.as_ref())
                .reading_events(template.events),
            counts: ByteCounts::default(),
            first_byte: None,
            interim: 0,
            closing: false,
            budget_spent: false,
            wake: None,
            timing: Box::default(),
        }
    }

    /// Carries on a connection whose first request (sent at `start`) is already in flight: an
    /// h2c upgrade the server declined.
    pub(crate) fn continuing(template: &'t H1Template, start: RequestStart) -> Self {
        let mut session = H1Session::new(template);
        session.in_flight.push_back(start);
        session
    }

    fn parse(
        &mut self,
        input: &[u8],
        at: Instant,
        ledger: &Ledger<'_>,
        used: &mut usize,
    ) -> Result<(), Failure> {
        while *used < input.len() && !self.closing {
            if self.in_flight.is_empty() {
                return Err(Failure::protocol(
                    "the server sent an HTTP/1.1 response nothing asked for",
                ));
            }
            self.first_byte.get_or_insert(at);
            let (taken, event) = self
                .reader
                .step(&input[*used..], &mut self.counts)
                .map_err(|problem| {
                    super::unparsable_http1("invalid HTTP/1.1 response", problem, &input[*used..])
                })?;
            *used += taken;
            let reading = self.in_flight.front().expect("checked above");
            if let Err(error) = self
                .timing
                .arrived(self.reader.events(), reading, at, ledger)
            {
                // HTTP/1.1 cannot stop one response: the connection goes, with all it carries.
                return Err(Failure::new(ErrorKind::EventTooLarge, error.to_string()));
            }
            match event {
                Event::NeedMore => break,
                Event::Interim => {
                    self.interim += 1;
                    if self.interim > MAX_INTERIM {
                        return Err(Failure::protocol(format!(
                            "more than {MAX_INTERIM} interim (1xx) responses to one request"
                        )));
                    }
                }
                Event::Complete { status, close } => {
                    self.complete(status, at, ledger);
                    self.closing = close;
                }
            }
        }
        Ok(())
    }

    fn complete(&mut self, status: u16, at: Instant, ledger: &Ledger<'_>) {
        let start = self
            .in_flight
            .pop_front()
            .expect("parse checks a request is in flight");
        self.interim = 0;
        self.timing.ended(self.reader.events(), &start, at, ledger);
        ledger.complete(
            ResponseSample {
                start,
                first_byte: self.first_byte.take().unwrap_or(at),
                end: at,
                status,
                grpc: None,
            },
            self.reader.check(),
        );
        ledger.error_response(status, self.reader.error_body());
    }

    /// The server ended the connection: requests it had not answered go again when the method
    /// is idempotent (one cut off in the middle of its response was processed: it fails with
    /// the rest); otherwise they are lost.
    fn closed_by_server(&mut self, at: Instant, ledger: &Ledger<'_>) -> Result<Progress, Failure> {
        if self.template.idempotent && !self.reader.is_mid_response() {
            while let Some(&start) = self.in_flight.front() {
                if !ledger.retry(start, ErrorKind::Closed, at) {
                    break;
                }
                self.in_flight.pop_front();
            }
        }
        if self.in_flight.is_empty() {
            return Ok(if self.budget_spent {
                Progress::Finished
            } else {
                Progress::Reconnect
            });
        }
        Err(Failure::new(
            ErrorKind::Closed,
            if self.reader.is_mid_response() {
                "the server closed an HTTP/1.1 connection in the middle of a response".to_owned()
            } else {
                format!(
                    "the server closed an HTTP/1.1 connection with {} request(s) unanswered",
                    self.in_flight.len()
                )
            },
        ))
    }
}

impl Session for H1Session<'_> {
    type Next = Infallible;

    /// Bytes the server is sure to send before this connection has anything to do: the rest of
    /// the body being received, when its length is known.
    fn bytes_due(&self) -> u64 {
        self.reader.body_due()
    }

    fn fill(
        &mut self,
        now: Instant,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<Progress, Failure> {
        if self.closing {
            return self.closed_by_server(now, ledger);
        }
        self.wake = None;
        while !self.budget_spent && self.in_flight.len() < self.template.depth {
            match ledger.next_request(now) {
                NextRequest::Now(mut start) => {
                    let path = ledger.pick_path(&mut start);
                    if let Some(renderer) = &self.template.renderer {
                        renderer.h1_request(path, &start, ledger, self.template.extra, out);
                    } else {
                        self.template.head.write(ledger.path(path), out.bytes());
                        if !self.template.body.is_empty() {
                            out.push_body(&self.template.body);
                        }
                    }
                    self.in_flight.push_back(start);
                }
                NextRequest::At(time) => {
                    self.wake = Some(time);
                    break;
                }
                NextRequest::Done => self.budget_spent = true,
            }
        }
        Ok(if self.in_flight.is_empty() && self.wake.is_none() {
            Progress::Finished
        } else {
            Progress::Continue
        })
    }

    fn on_read(
        &mut self,
        input: &[u8],
        at: Instant,
        ledger: &Ledger<'_>,
        _out: &mut Outgoing,
    ) -> Result<Read<Infallible>, Failure> {
        let mut used = 0;
        let result = self.parse(input, at, ledger, &mut used);
        let counts = std::mem::take(&mut self.counts);
        ledger.wire().add_headers(counts.head, counts.head);
        ledger.wire().add_data(counts.body);
        result.map(|()| Read::Used(used))
    }

    fn on_eof(&mut self, at: Instant, ledger: &Ledger<'_>) -> Result<(), Failure> {
        if !self.in_flight.is_empty() {
            if let Event::Complete { status, .. } = self.reader.finish_at_eof() {
                self.complete(status, at, ledger);
            }
        }
        self.closed_by_server(at, ledger).map(|_| ())
    }

    fn next_timer(&self) -> Option<Instant> {
        let deadline = self
            .in_flight
            .front()
            .zip(self.template.request_timeout)
            .map(|(oldest, limit)| oldest.actual + limit);
        earliest(deadline, self.wake)
    }

    fn on_timer(
        &mut self,
        now: Instant,
        _ledger: &Ledger<'_>,
        _out: &mut Outgoing,
    ) -> Result<(), Failure> {
        let expired = self
            .in_flight
            .front()
            .zip(self.template.request_timeout)
            .is_some_and(|(oldest, limit)| now >= oldest.actual + limit);
        if expired {
            // HTTP/1.1 cannot cancel one request: the connection goes, with all it carries.
            return Err(Failure::new(
                ErrorKind::Timeout,
                "a request ran past --request-timeout (client side); its connection was closed",
            ));
        }
        Ok(())
    }

    fn fail_all(&mut self, kind: ErrorKind, at: Instant, ledger: &Ledger<'_>) -> usize {
        let count = self.in_flight.len();
        for start in self.in_flight.drain(..) {
            ledger.fail(start, kind, at);
        }
        count
    }
}

#[cfg(test)]
mod tests;
