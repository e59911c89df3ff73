//! h2c by HTTP/1.1 Upgrade (RFC 7540 §3.2): each connection sends its first request as HTTP/1.1
//! with `Upgrade: h2c`; on `101 Switching Protocols` the session becomes an HTTP/2 session whose
//! stream 1 is that request. A server that answers without `101` keeps speaking HTTP/1.1, and the
//! session becomes an HTTP/1.1 one (with a warning) that reads the answer as its first response.
//!
//! Connecting, as for every protocol, is TCP (the "time for connect"). The connection is ready
//! (its handshake done) once the server's SETTINGS follow the `101`, within `--connect-timeout`
//! of the start of connecting like any HTTP/2 connection's. The wait for the answer itself is the
//! upgrade request's, bounded by `--request-timeout` only: a server that declines answers with the
//! whole response, which may take as long as any. After the `101` the other requests (up to `-m`)
//! leave in the same write as the client's preface, without waiting for the server's SETTINGS
//! (see [`super::h2`]).

use std::time::{Duration, Instant};

use base64::Engine as _;
use bytes::Bytes;

use super::contract::{Progress, Read, Session};
use super::earliest;
use super::h1::{H1Session, H1Template};
use super::h2::{settings_payload, H2Session, H2Template};
use super::outgoing::Outgoing;
use super::{Ledger, NextRequest};
use crate::plan::{H2Settings, Protocol, RunPlan};
use crate::proto::h1::{RequestHead, MAX_HEAD};
use crate::proto::h2::{self as frame, FrameHead};
use crate::recorder::{ErrorKind, Failure, RequestStart};

/// The upgrade request, prepared once per thread.
pub(crate) struct UpgradeTemplate {
    head: RequestHead,
    /// The upgrade headers, for a templated request rendered by the HTTP/1.1 template's renderer.
    upgrade_headers: [(&'static str, String); 3],
    body: Bytes,
    request_timeout: Option<Duration>,
}

impl UpgradeTemplate {
    /// The upgrade request, for any path.
    pub(crate) fn new(plan: &RunPlan) -> Self {
        let settings = http2_settings(&plan.h2);
        let upgrade_headers = [
            ("connection", "Upgrade, HTTP2-Settings"),
            ("upgrade", "h2c"),
            ("http2-settings", settings.as_str()),
        ];
        UpgradeTemplate {
            head: RequestHead::new(&plan.request.parts, &upgrade_headers),
            upgrade_headers: upgrade_headers.map(|(name, value)| (name, value.to_owned())),
            body: plan.request.parts.body.clone(),
            request_timeout: plan.timeouts.request,
        }
    }
}

/// What an answered upgrade becomes (its [`Read::Became`]): HTTP/1.1 when the server declined
/// it, HTTP/2 when it switched protocols. The driver's enum takes it in its place.
pub(crate) enum Upgraded<'t> {
    /// HTTP/1.1, carrying on with the upgrade request's answer.
    H1(H1Session<'t>),
    /// HTTP/2 (boxed, as in the driver's enum: it is several times larger).
    H2(Box<H2Session<'t>>),
}

/// A connection that sent (or will send) the upgrade request and waits for its answer.
pub(crate) struct UpgradeSession<'t> {
    template: &'t UpgradeTemplate,
    h1: &'t H1Template,
    h2: &'t H2Template,
    ready_by: Option<Instant>,
    sent: Option<RequestStart>,
    wake: Option<Instant>,
}

impl<'t> UpgradeSession<'t> {
    pub(crate) fn new(
        template: &'t UpgradeTemplate,
        h1: &'t H1Template,
        h2: &'t H2Template,
        ready_by: Option<Instant>,
    ) -> Self {
        UpgradeSession {
            template,
            h1,
            h2,
            ready_by,
            sent: None,
            wake: None,
        }
    }

    /// When the upgrade request runs past `--request-timeout`.
    fn deadline(&self) -> Option<Instant> {
        self.sent
            .zip(self.template.request_timeout)
            .map(|(start, limit)| start.actual + limit)
    }
}

impl<'t> Session for UpgradeSession<'t> {
    type Next = Upgraded<'t>;

    fn fill(
        &mut self,
        now: Instant,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<Progress, Failure> {
        if self.sent.is_some() {
            return Ok(Progress::Continue);
        }
        self.wake = None;
        match ledger.next_request(now) {
            NextRequest::Now(mut start) => {
                // Like any request: the slot's next path, or a retried request's own.
                let path = ledger.pick_path(&mut start);
                if let Some(renderer) = &self.h1.renderer {
                    let extra = self
                        .template
                        .upgrade_headers
                        .each_ref()
                        .map(|(name, value)| (*name, value.as_str()));
                    renderer.h1_request(path, &start, ledger, &extra, out);
                } else {
                    self.template.head.write(ledger.path(path), out.bytes());
                    if !self.template.body.is_empty() {
                        out.push_body(&self.template.body);
                    }
                }
                self.sent = Some(start);
                Ok(Progress::Continue)
            }
            NextRequest::At(time) => {
                self.wake = Some(time);
                Ok(Progress::Continue)
            }
            NextRequest::Done => Ok(Progress::Finished),
        }
    }

    /// Reads the answer's head; on `101` the rest of the input belongs to HTTP/2. `Used(0)`: the
    /// head is not complete yet; `Became`: the session to continue with, and how much of the input
    /// the upgrade itself used.
    fn on_read(
        &mut self,
        input: &[u8],
        _at: Instant,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<Read<Upgraded<'t>>, Failure> {
        let Some(start) = self.sent else {
            return Err(Failure::protocol(
                "the server sent bytes before the h2c upgrade request",
            ));
        };
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut response = httparse::Response::new(&mut headers);
        let head_len = match response.parse(input) {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) if input.len() <= MAX_HEAD => return Ok(Read::Used(0)),
            Ok(httparse::Status::Partial) => {
                return Err(Failure::protocol(format!(
                    "the answer to the h2c upgrade has a head over {} KiB",
                    MAX_HEAD / 1024
                )))
            }
            Err(_) if starts_with_settings_frame(input) => {
                return Err(Failure::protocol(
                    "the server answered the h2c upgrade with HTTP/2 frames: it speaks h2c by prior knowledge only (use --proto h2c)",
                ))
            }
            Err(error) => {
                return Err(super::unparsable_http1(
                    "invalid answer to the h2c upgrade",
                    error,
                    input,
                ))
            }
        };
        let status = response.code.unwrap_or(0);
        if status != 101 {
            ledger.note_protocol(Protocol::Http1);
            ledger.warn(|| {
                format!("the server answered the h2c upgrade with {status} instead of 101, so those connections spoke HTTP/1.1")
            });
            // The HTTP/1.1 session reads this answer again, from its first byte, as a response.
            return Ok(Read::Became(
                Upgraded::H1(H1Session::continuing(self.h1, start)),
                0,
            ));
        }
        ledger.note_protocol(Protocol::H2c);
        ledger.wire().add_headers(head_len as u64, head_len as u64);
        let h2 = H2Session::new(self.h2, Some(start), self.ready_by, None, out);
        Ok(Read::Became(Upgraded::H2(Box::new(h2)), head_len))
    }

    /// The server closed without answering: an idempotent upgrade request goes again, like an
    /// HTTP/1.1 request left unanswered.
    fn on_eof(&mut self, at: Instant, ledger: &Ledger<'_>) -> Result<(), Failure> {
        if let Some(start) = self.sent.filter(|_| self.h1.idempotent) {
            if ledger.retry(start, ErrorKind::Closed, at) {
                self.sent = None;
                return Ok(());
            }
        }
        Err(Failure::new(
            ErrorKind::Closed,
            "the server closed the connection in answer to the h2c upgrade",
        ))
    }

    fn next_timer(&self) -> Option<Instant> {
        earliest(self.deadline(), self.wake)
    }

    fn on_timer(
        &mut self,
        now: Instant,
        _ledger: &Ledger<'_>,
        _out: &mut Outgoing,
    ) -> Result<(), Failure> {
        if self.deadline().is_some_and(|due| now >= due) {
            return Err(Failure::new(
                ErrorKind::Timeout,
                "no answer to the h2c upgrade request within --request-timeout",
            ));
        }
        Ok(())
    }

    fn fail_all(&mut self, kind: ErrorKind, at: Instant, ledger: &Ledger<'_>) -> usize {
        match self.sent.take() {
            Some(start) => {
                ledger.fail(start, kind, at);
                1
            }
            None => 0,
        }
    }

    /// Never: the handshake ends with the server's SETTINGS, after the `101`, in the HTTP/2
    /// session the upgrade becomes.
    fn is_ready(&self) -> bool {
        false
    }
}

/// Whether `bytes` begin with an HTTP/2 SETTINGS frame header on stream 0 (a server's preface).
fn starts_with_settings_frame(bytes: &[u8]) -> bool {
    bytes
        .first_chunk::<{ frame::HEADER_LEN }>()
        .is_some_and(|head| {
            let head = FrameHead::parse(head);
            head.kind == frame::SETTINGS && head.stream == 0
        })
}

/// The `HTTP2-Settings` header value: the SETTINGS payload the client's SETTINGS frame will carry, base64url.
pub(crate) fn http2_settings(settings: &H2Settings) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(settings_payload(settings))
}

#[cfg(test)]
mod tests;
