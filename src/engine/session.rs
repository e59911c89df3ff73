//! What every protocol session offers the driver, and the one type the driver holds: a session
//! for HTTP/1.1, HTTP/2, or an h2c upgrade that becomes one of the two.
//!
//! A session is a state machine: the driver hands it received bytes ([`AnySession::on_read`]),
//! the end of input ([`AnySession::on_eof`]) and expired timers ([`AnySession::on_timer`]); the
//! session queues bytes to send ([`AnySession::fill`]) and says when it next needs the clock
//! ([`AnySession::next_timer`]). It never touches a socket or the runtime and never holds a borrow
//! across an await (it has none), so any I/O backend can drive it.

use std::time::Instant;

use super::h1::{H1Session, H1Template};
use super::h2::{H2Session, H2Template};
use super::outgoing::Outgoing;
use super::upgrade::{UpgradeSession, UpgradeTemplate, Upgraded};
use super::Ledger;
use crate::plan::{Negotiation, Protocol, RunPlan};
use crate::recorder::Failure;

/// What the session wants after [`AnySession::fill`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Progress {
    /// Keep the connection: there is work in flight or to come.
    Continue,
    /// Nothing is in flight and nothing more will be sent: close it, the slot is done.
    Finished,
    /// Close it and let the slot connect again (the server ended it, or stream ids ran out).
    Reconnect,
}

/// The prepared requests of every protocol a plan can need, built once per runner thread.
pub struct Templates {
    h1: H1Template,
    h2: H2Template,
    upgrade: Option<UpgradeTemplate>,
}

impl Templates {
    /// Prepares requests for `plan` (serialized heads, HPACK fields, the shared body).
    pub fn new(plan: &RunPlan) -> Self {
        Templates {
            h1: H1Template::new(plan),
            h2: H2Template::new(plan),
            upgrade: (plan.negotiation == Negotiation::H2cUpgrade)
                .then(|| UpgradeTemplate::new(plan)),
        }
    }
}

/// A connection's session. `ready_by` bounds the wait for the protocol's own handshake (the
/// server's SETTINGS, after the `101` of an h2c upgrade), which is part of connecting. Requests
/// wait for it, except on an upgraded connection (see [`super::upgrade`]).
pub(crate) enum AnySession<'t> {
    /// HTTP/1.1.
    H1(H1Session<'t>),
    /// HTTP/2 (boxed: it is several times larger than the others).
    H2(Box<H2Session<'t>>),
    /// An h2c upgrade waiting for its answer.
    Upgrade(UpgradeSession<'t>),
}

impl<'t> AnySession<'t> {
    /// The session for a connection that speaks `protocol` (`None`: an h2c upgrade decides),
    /// with `early_data` bytes of TLS early data to send its first requests in (h2).
    pub(crate) fn new(
        templates: &'t Templates,
        protocol: Option<Protocol>,
        ready_by: Option<Instant>,
        early_data: Option<usize>,
        out: &mut Outgoing,
    ) -> Self {
        match protocol {
            Some(Protocol::Http1) => AnySession::H1(H1Session::new(&templates.h1)),
            Some(Protocol::H2c | Protocol::H2) => AnySession::H2(Box::new(H2Session::new(
                &templates.h2,
                None,
                ready_by,
                early_data,
                out,
            ))),
            Some(Protocol::H3) => {
                unreachable!("HTTP/3 runs on QUIC streams, not a byte-stream session")
            }
            None => AnySession::Upgrade(UpgradeSession::new(
                templates
                    .upgrade
                    .as_ref()
                    .expect("upgrade templates exist for upgrade plans"),
                &templates.h1,
                &templates.h2,
                ready_by,
            )),
        }
    }

    /// Queues what may be sent now: new requests (as the budget, the schedule and the protocol's
    /// limits allow), request bodies, acknowledgements.
    pub(crate) fn fill(
        &mut self,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<Progress, Failure> {
        match self {
            AnySession::H1(session) => session.fill(ledger, out),
            AnySession::H2(session) => session.fill(ledger, out),
            AnySession::Upgrade(session) => session.fill(ledger, out),
        }
    }

    /// Handles received bytes (read at `at`); returns how many it used. The driver keeps the rest
    /// and offers them again with what arrives next.
    pub(crate) fn on_read(
        &mut self,
        input: &[u8],
        at: Instant,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<usize, Failure> {
        match self {
            AnySession::H1(session) => session.on_read(input, at, ledger),
            AnySession::H2(session) => session.on_read(input, at, ledger, out),
            AnySession::Upgrade(session) => match session.on_read(input, at, ledger, out)? {
                Upgraded::Waiting => Ok(0),
                Upgraded::To(next, used) => {
                    *self = next;
                    let more = self.on_read(&input[used..], at, ledger, out)?;
                    Ok(used + more)
                }
            },
        }
    }

    /// The server closed its side (`Ok`: nothing was lost by it).
    pub(crate) fn on_eof(&mut self, at: Instant, ledger: &Ledger<'_>) -> Result<(), Failure> {
        match self {
            AnySession::H1(session) => session.on_eof(at, ledger),
            AnySession::H2(session) => session.on_eof(),
            AnySession::Upgrade(session) => session.on_eof(ledger),
        }
    }

    /// The earliest time the session needs [`AnySession::on_timer`]: a request deadline, the
    /// handshake deadline, or the next scheduled send.
    pub(crate) fn next_timer(&self) -> Option<Instant> {
        match self {
            AnySession::H1(session) => session.next_timer(),
            AnySession::H2(session) => session.next_timer(),
            AnySession::Upgrade(session) => session.next_timer(),
        }
    }

    /// The clock reached [`AnySession::next_timer`].
    pub(crate) fn on_timer(
        &mut self,
        now: Instant,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<(), Failure> {
        match self {
            AnySession::H1(session) => session.on_timer(now),
            AnySession::H2(session) => session.on_timer(now, ledger, out),
            AnySession::Upgrade(session) => session.on_timer(now),
        }
    }

    /// Fails every request in flight with the failure's kind (the connection is going away);
    /// returns how many there were.
    pub(crate) fn fail_all(&mut self, failure: &Failure, ledger: &Ledger<'_>) -> usize {
        match self {
            AnySession::H1(session) => session.fail_all(failure.kind, ledger),
            AnySession::H2(session) => session.fail_all(failure.kind, ledger),
            AnySession::Upgrade(session) => session.fail_all(failure.kind, ledger),
        }
    }

    /// Bytes the server is sure to send before the session needs to act (so the driver may sleep
    /// through them): the known rest of an HTTP/1.1 body. 0 for HTTP/2: its streams share the
    /// connection, and a frame that needs an answer or ends a stream early (RST_STREAM, PING,
    /// GOAWAY, a body shorter than its content-length) may come while the mark waits for more.
    pub(crate) fn bytes_due(&self) -> u64 {
        match self {
            AnySession::H1(session) => session.bytes_due(),
            AnySession::H2(_) | AnySession::Upgrade(_) => 0,
        }
    }

    /// Whether the protocol's handshake is done (for HTTP/2, the server's SETTINGS arrived): a
    /// failure before then is a failed connection, not a failed request.
    pub(crate) fn is_ready(&self) -> bool {
        match self {
            AnySession::H1(_) => true,
            AnySession::H2(session) => session.is_ready(),
            AnySession::Upgrade(_) => false,
        }
    }
}
