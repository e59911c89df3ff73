//! The one contract every byte-stream protocol session keeps ([`Session`]) and what its calls
//! return ([`Read`], [`Progress`]). The sessions import it; the enum the driver holds
//! (`any.rs`) imports the sessions, so no file imports one that imports it back.

use std::convert::Infallible;
use std::time::Instant;

use super::outgoing::Outgoing;
use super::Ledger;
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
    /// it is, the session an h2c upgrade turned into (`upgrade::Upgraded`).
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

    /// Fails every request in flight with `kind` (the connection is going away, as found at
    /// `at`); returns how many there were.
    fn fail_all(&mut self, kind: ErrorKind, at: Instant, ledger: &Ledger<'_>) -> usize;

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
