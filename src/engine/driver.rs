//! The I/O driver: one per connection, for every protocol. It owns the socket, the buffers, the
//! clock and transport errors; the session (see [`super::session`]) owns the protocol.
//!
//! Each turn it fires the timers that are due (before any I/O, so a server that keeps the socket
//! readable cannot starve a deadline), lets the session queue what it may send, then writes and
//! reads in one poll until bytes arrive or the next timer is due. Received bytes are read into a
//! buffer the whole thread shares and handed to the session; only what a session leaves
//! unconsumed (a partial frame or head) is copied into the connection's own buffer, which is
//! given back once empty. An idle connection so holds almost no memory.
//!
//! This is the readiness-based (epoll) backend. A completion-based one (io_uring) replaces this
//! module only: sessions read from and write into buffers lent to them and never await.

use std::cell::RefCell;
use std::future::poll_fn;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::clock::Timer;
use super::h1::earliest;
use super::outgoing::{Outgoing, MAX_SLICES};
use super::session::{AnySession, Progress};
use super::{io_error_kind, ConnEnd, Ledger, Templates};
use crate::plan::Protocol;
use crate::recorder::{ErrorKind, Failure};

/// Bytes one thread reads at a time, shared by its connections.
pub(crate) const READ_BUFFER: usize = 256 * 1024;
/// Capacity a connection keeps for unconsumed input after it empties; more is given back.
const KEEP_PENDING: usize = 4 * 1024;

/// A connection's client-side limits besides the session's own deadlines.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ConnLimits {
    /// When the connection must close, whatever it is doing (`-T`).
    pub(crate) active_until: Option<Instant>,
    /// How long it may receive nothing (`-N`).
    pub(crate) inactivity: Option<Duration>,
    /// When the protocol's handshake must be done (part of `--connect-timeout`).
    pub(crate) ready_by: Option<Instant>,
    /// How many bytes of TLS early data the connection may send (`--tls-early-data` on a
    /// resumed connection whose ticket allows it), `None` otherwise.
    pub(crate) early_data: Option<usize>,
}

/// The buffer a thread's connections read into, one at a time.
pub(crate) fn read_buffer() -> RefCell<Vec<u8>> {
    RefCell::new(vec![0; READ_BUFFER])
}

/// Drives one established connection that speaks `protocol` (`None`: an h2c upgrade decides)
/// until the budget is spent, the server ends it, or it fails. Its deadlines wait on `timer`.
pub(crate) async fn drive<S: AsyncRead + AsyncWrite + Unpin>(
    mut io: S,
    templates: &Templates,
    protocol: Option<Protocol>,
    ledger: Ledger<'_>,
    limits: ConnLimits,
    read_buffer: &RefCell<Vec<u8>>,
    timer: &impl Timer,
) -> ConnEnd {
    let mut out = Outgoing::default();
    let mut session = AnySession::new(
        templates,
        protocol,
        limits.ready_by,
        limits.early_data,
        &mut out,
    );
    let mut pending: Vec<u8> = Vec::new();
    let mut last_read = Instant::now();
    loop {
        let now = Instant::now();
        let silent_until = limits.inactivity.map(|limit| last_read + limit);
        if earliest(limits.active_until, silent_until).is_some_and(|limit| now >= limit) {
            let failure = Failure::new(
                ErrorKind::Timeout,
                "a connection reached its -T/-N limit and the client closed it",
            );
            return lose(&mut session, failure, &ledger);
        }
        if session.next_timer().is_some_and(|due| now >= due) {
            if let Err(failure) = session.on_timer(now, &ledger, &mut out) {
                return lose(&mut session, failure, &ledger);
            }
        }
        match session.fill(&ledger, &mut out) {
            Ok(Progress::Continue) => {}
            Ok(Progress::Finished) => return ConnEnd::Finished,
            Ok(Progress::Reconnect) => return ConnEnd::Lost,
            Err(failure) => return lose(&mut session, failure, &ledger),
        }
        let wake = earliest(
            session.next_timer(),
            earliest(limits.active_until, silent_until),
        );
        let step = poll_fn(|cx| transfer(&mut io, &mut out, &mut read_buffer.borrow_mut(), cx));
        let read = match wake {
            // The transfer first: bytes that arrived are taken even when the deadline passed too.
            Some(wake) => tokio::select! {
                biased;
                read = step => read,
                () = timer.sleep_until(wake) => continue,
                () = ledger.schedule_calls_back() => continue,
            },
            None => step.await,
        };
        let at = Instant::now();
        let result = match read {
            Ok(0) => match session.on_eof(at, &ledger) {
                Ok(()) => return ConnEnd::Lost,
                Err(failure) => Err(failure),
            },
            Ok(count) => {
                last_read = at;
                let buffer = read_buffer.borrow();
                feed(
                    &mut session,
                    &buffer[..count],
                    &mut pending,
                    at,
                    &ledger,
                    &mut out,
                )
            }
            Err(error) => Err(Failure::new(
                io_error_kind(&error),
                format!("the connection failed: {error}"),
            )),
        };
        if let Err(failure) = result {
            return lose(&mut session, failure, &ledger);
        }
    }
}

/// Hands freshly read bytes to the session, after whatever it left unconsumed before; keeps what
/// it leaves now.
pub(super) fn feed(
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

/// The connection cannot go on: its requests fail with the failure's kind. A failure with no
/// request to blame counts as a failed connection when it happened before the connection was
/// usable, or is the server's fault (a protocol error, a GOAWAY before any request).
fn lose(session: &mut AnySession<'_>, failure: Failure, ledger: &Ledger<'_>) -> ConnEnd {
    // A timeout is the client's decision: the report tells these closes from the server's.
    if failure.kind == ErrorKind::Timeout {
        ledger.closed_by_client();
    }
    if session.fail_all(&failure, ledger) > 0 {
        ledger.note_error(|| failure.message);
    } else if !session.is_ready() || matches!(failure.kind, ErrorKind::Protocol | ErrorKind::Goaway)
    {
        ledger.connection_failed(failure);
    }
    ConnEnd::Lost
}

/// Writes what is queued and reads what has arrived, in one poll, so a long pipeline of writes
/// never blocks behind responses the server is waiting to send. Resolves with the bytes read
/// (0 at EOF).
fn transfer<S: AsyncRead + AsyncWrite + Unpin>(
    io: &mut S,
    out: &mut Outgoing,
    incoming: &mut [u8],
    cx: &mut Context<'_>,
) -> Poll<io::Result<usize>> {
    let mut wrote = false;
    while !out.is_empty() {
        let poll = {
            let mut slices = [IoSlice::new(&[]); MAX_SLICES];
            let count = out.slices(&mut slices);
            if count == 1 {
                Pin::new(&mut *io).poll_write(cx, &slices[0])
            } else {
                Pin::new(&mut *io).poll_write_vectored(cx, &slices[..count])
            }
        };
        match poll {
            Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
            Poll::Ready(Ok(count)) => {
                out.advance(count);
                wrote = true;
            }
            Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
            Poll::Pending => break,
        }
    }
    if wrote && out.is_empty() {
        if let Poll::Ready(Err(error)) = Pin::new(&mut *io).poll_flush(cx) {
            return Poll::Ready(Err(error));
        }
    }
    // Take everything that has arrived, so one round of processing (and one write) covers it all.
    let mut total = 0;
    while total < incoming.len() {
        let mut buffer = ReadBuf::new(&mut incoming[total..]);
        match Pin::new(&mut *io).poll_read(cx, &mut buffer) {
            Poll::Ready(Ok(())) if buffer.filled().is_empty() => break,
            Poll::Ready(Ok(())) => total += buffer.filled().len(),
            Poll::Ready(Err(error)) if total == 0 => return Poll::Ready(Err(error)),
            Poll::Pending if total == 0 => return Poll::Pending,
            Poll::Ready(Err(_)) | Poll::Pending => break,
        }
    }
    Poll::Ready(Ok(total))
}
