//! The one type the driver holds ([`AnySession`]): a session for HTTP/1.1, HTTP/2, or an h2c
//! upgrade that becomes one of the two, forwarding to the [`Session`] inside; the prepared
//! requests of every protocol ([`Templates`]), and what a connection speaks ([`Speaks`]). The
//! contract itself is in `contract.rs`, which the sessions import without this file.

use std::time::Instant;

use super::contract::{Progress, Read, Session};
use super::h1::{H1Session, H1Template};
use super::h2::{H2Session, H2Template};
use super::h3::H3Template;
use super::outgoing::Outgoing;
use super::upgrade::{UpgradeSession, UpgradeTemplate, Upgraded};
use super::Ledger;
use crate::plan::{Negotiation, Protocol, RunPlan};
use crate::recorder::Failure;

/// The prepared requests of every protocol a plan can need, built once per runner thread.
pub(crate) struct Templates {
    h1: H1Template,
    h2: H2Template,
    upgrade: Option<UpgradeTemplate>,
    /// HTTP/3's requests, for a plan that speaks it (they run on QUIC streams, not a session).
    pub(crate) h3: Option<H3Template>,
}

impl Templates {
    /// Prepares requests for `plan` (serialized heads, HPACK fields, the shared body).
    pub(crate) fn new(plan: &RunPlan) -> Self {
        Templates {
            h1: H1Template::new(plan),
            h2: H2Template::new(plan),
            upgrade: (plan.negotiation == Negotiation::H2cUpgrade)
                .then(|| UpgradeTemplate::new(plan)),
            h3: (plan.negotiation == Negotiation::Quic).then(|| H3Template::new(plan)),
        }
    }
}

/// What a byte-stream connection speaks, as its session sees it. HTTP/3 has no variant: it runs
/// on QUIC streams ([`super::h3`]), never through a byte-stream session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Speaks {
    /// HTTP/1.1.
    Http1,
    /// HTTP/2, by prior knowledge (h2c) or by ALPN (h2).
    H2,
    /// An h2c upgrade, which finds out on the connection.
    Upgrade,
}

impl Speaks {
    /// What a connection that speaks `protocol` (`None`: an h2c upgrade decides) runs as a
    /// byte-stream session; `None` for HTTP/3, which has none.
    pub(crate) fn of(protocol: Option<Protocol>) -> Option<Self> {
        match protocol {
            Some(Protocol::Http1) => Some(Speaks::Http1),
            Some(Protocol::H2c | Protocol::H2) => Some(Speaks::H2),
            Some(Protocol::H3) => None,
            None => Some(Speaks::Upgrade),
        }
    }
}

/// Capacity a connection keeps for unconsumed input after it empties; more is given back.
const KEEP_PENDING: usize = 4 * 1024;

/// Forwards a call to the session inside an [`AnySession`], whichever it is.
macro_rules! each {
    ($any:expr, $session:ident => $call:expr) => {
        match $any {
            AnySession::H1($session) => $call,
            AnySession::H2($session) => $call,
            AnySession::Upgrade($session) => $call,
        }
    };
}

/// A connection's session. `ready_by` bounds the wait for the protocol's own handshake (the
/// server's SETTINGS, after the `101` of an h2c upgrade), which is part of connecting. Requests
/// wait for it, except on an upgraded connection (see [`super::upgrade`]). Each call forwards to
/// the [`Session`] inside (a `match`, no dynamic dispatch); [`AnySession::on_read`] also acts on
/// an upgrade's [`Read::Became`], so the driver never sees one.
pub(crate) enum AnySession<'t> {
    /// HTTP/1.1.
    H1(H1Session<'t>),
    /// HTTP/2 (boxed: it is several times larger than the others).
    H2(Box<H2Session<'t>>),
    /// An h2c upgrade waiting for its answer.
    Upgrade(UpgradeSession<'t>),
}

impl<'t> AnySession<'t> {
    /// The session for a connection that speaks `speaks`, with `early_data` bytes of TLS early
    /// data to send its first requests in (h2).
    pub(crate) fn new(
        templates: &'t Templates,
        speaks: Speaks,
        ready_by: Option<Instant>,
        early_data: Option<usize>,
        out: &mut Outgoing,
    ) -> Self {
        match speaks {
            Speaks::Http1 => AnySession::H1(H1Session::new(&templates.h1)),
            Speaks::H2 => AnySession::H2(Box::new(H2Session::new(
                &templates.h2,
                None,
                ready_by,
                early_data,
                out,
            ))),
            Speaks::Upgrade => AnySession::Upgrade(UpgradeSession::new(
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

    /// See [`Session::fill`].
    #[inline]
    pub(crate) fn fill(
        &mut self,
        now: Instant,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<Progress, Failure> {
        each!(self, session => session.fill(now, ledger, out))
    }

    /// See [`Session::on_read`]: returns how many bytes were used, by this session and, after an
    /// h2c upgrade is answered, by the session it became (which takes this one's place).
    #[inline]
    pub(crate) fn on_read(
        &mut self,
        input: &[u8],
        at: Instant,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<usize, Failure> {
        match self {
            AnySession::H1(session) => session.on_read(input, at, ledger, out).map(Read::used),
            AnySession::H2(session) => session.on_read(input, at, ledger, out).map(Read::used),
            AnySession::Upgrade(session) => match session.on_read(input, at, ledger, out)? {
                Read::Used(used) => Ok(used),
                Read::Became(next, used) => {
                    *self = match next {
                        Upgraded::H1(session) => AnySession::H1(session),
                        Upgraded::H2(session) => AnySession::H2(session),
                    };
                    let more = self.on_read(&input[used..], at, ledger, out)?;
                    Ok(used + more)
                }
            },
        }
    }

    /// See [`Session::on_eof`].
    #[inline]
    pub(crate) fn on_eof(&mut self, at: Instant, ledger: &Ledger<'_>) -> Result<(), Failure> {
        each!(self, session => session.on_eof(at, ledger))
    }

    /// See [`Session::next_timer`].
    #[inline]
    pub(crate) fn next_timer(&self) -> Option<Instant> {
        each!(self, session => session.next_timer())
    }

    /// See [`Session::on_timer`].
    #[inline]
    pub(crate) fn on_timer(
        &mut self,
        now: Instant,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<(), Failure> {
        each!(self, session => session.on_timer(now, ledger, out))
    }

    /// Fails every request in flight with the failure's kind (the connection is going away, as
    /// found at `at`); returns how many there were.
    #[inline]
    pub(crate) fn fail_all(
        &mut self,
        failure: &Failure,
        at: Instant,
        ledger: &Ledger<'_>,
    ) -> usize {
        each!(self, session => session.fail_all(failure.kind, at, ledger))
    }

    /// See [`Session::bytes_due`]: the known rest of an HTTP/1.1 body. 0 for HTTP/2: its streams
    /// share the connection, and a frame that needs an answer or ends a stream early (RST_STREAM,
    /// PING, GOAWAY, a body shorter than its content-length) may come while the mark waits for
    /// more.
    #[inline]
    pub(crate) fn bytes_due(&self) -> u64 {
        each!(self, session => session.bytes_due())
    }

    /// See [`Session::is_ready`]: for HTTP/2, the server's SETTINGS arrived; never, for an
    /// upgrade still waiting for its answer.
    #[inline]
    pub(crate) fn is_ready(&self) -> bool {
        each!(self, session => session.is_ready())
    }
}

/// Hands freshly read bytes to the session, after whatever it left unconsumed before; keeps what
/// it leaves now.
pub(crate) fn feed(
    session: &mut AnySession<'_>,
    fresh: &[u8],
    pending: &mut Vec<u8>,
    at: Instant,
    ledger: &Ledger<'_>,
    out: &mut Outgoing,
) -> Result<(), Failure> {
    if pending.is_empty() {
        let used = session.on_read(fresh, at, ledger, out)?;
        pending.extend_from_slice(&fresh[used..]);
    } else {
        pending.extend_from_slice(fresh);
        let used = session.on_read(pending, at, ledger, out)?;
        pending.drain(..used);
    }
    if pending.is_empty() && pending.capacity() > KEEP_PENDING {
        *pending = Vec::new();
    }
    Ok(())
}
