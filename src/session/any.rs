//! The one contract every byte-stream protocol session keeps ([`Session`]), and the one type the
//! driver holds ([`AnySession`]): a session for HTTP/1.1, HTTP/2, or an h2c upgrade that becomes
//! one of the two.

use std::convert::Infallible;
use std::time::Instant;

use super::h1::{H1Session, H1Template};
use super::h2::{H2Session, H2Template};
use super::outgoing::Outgoing;
use super::upgrade::{UpgradeSession, UpgradeTemplate};
use super::Ledger;
use crate::plan::{Negotiation, Protocol, RunPlan};
use crate::recorder::{ErrorKind, Failure};

/// A protocol session on a byte stream, as h2load's `Session` and quinn-proto's `Connection`
/// are: a state machine with bytes and timer events in, bytes and request events out. The driver
/// hands it received bytes ([`Session::on_read`]), the end of input ([`Session::on_eof`]) and
/// expired timers ([`Session::on_timer`]); the session queues bytes to send ([`Session::fill`])
/// into [`Outgoing`], says when it next needs the clock ([`Session::next_timer`]), and reports
/// what became of each request through the [`Ledger`] (started, completed, failed, sent again).
/// Time comes in as an argument (`now`, `at`: read by the driver once per turn and per read); a
/// session never reads the clock itself (the ledger stamps the requests it hands out), never
/// touches a socket or the runtime, and never holds a borrow across an await (it has none), so
/// any I/O backend can drive it and a test can feed it bytes and times of its choosing.
///
/// HTTP/3 does not implement it: quinn owns the QUIC state machine (the UDP socket, its timers,
/// loss recovery) and the streams, so there is no byte stream to hand over; `engine/h3` drives
/// requests on quinn's streams itself. It shares everything on the request side: the [`Ledger`]
/// (budget, `--rate`, retries, churn), [`Failure`]/[`ErrorKind`], and the request events the
/// ledger records (start, response, failure, retry), so the recorder cannot tell them apart.
pub(crate) trait Session {
    /// What the session can become after a read: [`Infallible`] for a session that stays what
    /// it is, an [`AnySession`] for an h2c upgrade.
    type Next;

    /// Queues what may be sent now (the driver's turn began at `now`): new requests (as the
    /// budget, the schedule and the protocol's limits allow), request bodies, acknowledgements.
    fn fill(
        &mut self,
        now: Instant,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<Progress, Failure>;

    /// Handles received bytes (read at `at`); says how many it used, and whether the connection
    /// now belongs to another session. The driver keeps the rest and offers them again with what
    /// arrives next.
    fn on_read(
        &mut self,
        input: &[u8],
        at: Instant,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<Read<Self::Next>, Failure>;

    /// The server closed its side at `at` (`Ok`: nothing was lost by it).
    fn on_eof(&mut self, at: Instant, ledger: &Ledger<'_>) -> Result<(), Failure>;

    /// The earliest time the session needs [`Session::on_timer`]: a request deadline, the
    /// handshake deadline, or the next scheduled send.
    fn next_timer(&self) -> Option<Instant>;

    /// The clock reached `now`, at or past [`Session::next_timer`].
    fn on_timer(
        &mut self,
        now: Instant,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<(), Failure>;

    /// Fails every request in flight with `kind` (the connection is going away); returns how
    /// many there were.
    fn fail_all(&mut self, kind: ErrorKind, ledger: &Ledger<'_>) -> usize;

    /// Bytes the server is sure to send before the session needs to act (so the driver may sleep
    /// through them). None by default.
    fn bytes_due(&self) -> u64 {
        0
    }

    /// Whether the protocol's handshake is done: a failure before then is a failed connection,
    /// not a failed request. Done from the start by default (a protocol with no handshake of its
    /// own).
    fn is_ready(&self) -> bool {
        true
    }
}

/// What a session did with the bytes given to [`Session::on_read`].
pub(crate) enum Read<N> {
    /// It used this many bytes (0: it waits for more).
    Used(usize),
    /// It used this many bytes and hands the connection to the session it became, which reads
    /// the rest (an h2c upgrade, answered).
    Became(N, usize),
}

impl Read<Infallible> {
    /// The bytes used, from a session that stays what it is.
    #[inline]
    pub(crate) fn used(self) -> usize {
        let Read::Used(used) = self;
        used
    }
}

/// What the session wants after [`Session::fill`].
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
pub(crate) struct Templates {
    h1: H1Template,
    h2: H2Template,
    upgrade: Option<UpgradeTemplate>,
}

impl Templates {
    /// Prepares requests for `plan` (serialized heads, HPACK fields, the shared body).
    pub(crate) fn new(plan: &RunPlan) -> Self {
        Templates {
            h1: H1Template::new(plan),
            h2: H2Template::new(plan),
            upgrade: (plan.negotiation == Negotiation::H2cUpgrade)
                .then(|| UpgradeTemplate::new(plan)),
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
                    *self = next;
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

    /// Fails every request in flight with the failure's kind (the connection is going away);
    /// returns how many there were.
    #[inline]
    pub(crate) fn fail_all(&mut self, failure: &Failure, ledger: &Ledger<'_>) -> usize {
        each!(self, session => session.fail_all(failure.kind, ledger))
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
