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
//! Both I/O backends run under this one driver: with `--io uring` the connection's transport (TLS
//! included) runs over a [`RingStream`](super::uring::RingStream) instead of a tokio socket, so
//! the driver and the sessions are the same for epoll and io_uring (see [`super::uring`]).

use std::cell::RefCell;
use std::future::poll_fn;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::plan::Protocol;
use crate::recorder::{ErrorKind, Failure};
use crate::schedule::Timer;
use crate::session::any::{feed, AnySession, Speaks};
use crate::session::contract::Progress;
use crate::session::earliest;
use crate::session::outgoing::{Outgoing, MAX_SLICES};
use crate::session::{io_error_kind, ConnEnd, Ledger, Templates};

/// The socket's receive low-water mark while a response body still has at least
/// [`LOW_WATER_FROM`] bytes to come: the connection then wakes once per this many bytes instead
/// of once per arriving segment. A reader faster than the server otherwise sleeps and is woken
/// for every segment, and on loopback each wake-up is the server's work (in a VM an IPI to the
/// sleeping core): 1 GiB from one-core nginx cost nginx ~20 % more CPU than under h2load (which
/// reads 8 KiB at a time and so never catches up, never sleeps), and the run was that much slower.
pub(crate) const LOW_WATER: usize = 256 * 1024;
/// Bytes due from which the low-water mark is raised: twice the mark, so that the part of a
/// TLS record the TLS layer already holds (counted in the body's rest, but off the socket) can
/// never leave the mark above what the server still has to send.
pub(crate) const LOW_WATER_FROM: u64 = 2 * LOW_WATER as u64;

/// A connection whose socket can wait for many bytes before it wakes the reader.
pub(crate) trait LowWater {
    /// Sets the receive low-water mark to `bytes` (1, the default: any byte wakes); best
    /// effort, and nothing where it does not apply.
    fn set_low_water(&mut self, bytes: usize);
}

impl<T: LowWater + ?Sized> LowWater for &mut T {
    fn set_low_water(&mut self, bytes: usize) {
        (**self).set_low_water(bytes);
    }
}

/// A connection that can tell when the bytes it read arrived in the kernel, so that the driver
/// can measure how long responses waited for h2load-rs (its own part of their latency).
pub(crate) trait Arrivals {
    /// When the newest byte read since the last call arrived, as time since the Unix epoch
    /// (the kernel's receive timestamp, `CLOCK_REALTIME`); `None` where the transport does not
    /// tell.
    fn take_arrival(&mut self) -> Option<Duration>;
}

impl<T: Arrivals + ?Sized> Arrivals for &mut T {
    fn take_arrival(&mut self) -> Option<Duration> {
        (**self).take_arrival()
    }
}

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

/// Drives one established connection that speaks `protocol` (`None`: an h2c upgrade decides)
/// until the budget is spent, the server ends it, or it fails. Its deadlines wait on `timer`.
/// HTTP/3 has no byte-stream session (it runs on QUIC, see [`super::h3`]): a connection said to
/// speak it here fails as a connection.
pub(crate) async fn drive<S: AsyncRead + AsyncWrite + LowWater + Arrivals + Unpin>(
    mut io: S,
    templates: &Templates,
    protocol: Option<Protocol>,
    ledger: Ledger<'_>,
    limits: ConnLimits,
    read_buffer: &RefCell<Vec<u8>>,
    timer: &impl Timer,
) -> ConnEnd {
    let Some(speaks) = Speaks::of(protocol) else {
        ledger.connection_failed(Failure::protocol(
            "HTTP/3 runs on QUIC streams, not on a byte-stream connection",
        ));
        return ConnEnd::Lost;
    };
    let mut out = Outgoing::default();
    let mut session = AnySession::new(
        templates,
        speaks,
        limits.ready_by,
        limits.early_data,
        &mut out,
    );
    let mut pending: Vec<u8> = Vec::new();
    let mut last_read = Instant::now();
    // When the newest byte read so far arrived in the kernel, where the transport tells.
    let mut arrived = None;
    let mut low_water = 1;
    let mut unflushed = false;
    loop {
        let now = Instant::now();
        let silent_until = limits.inactivity.map(|limit| last_read + limit);
        if earliest(limits.active_until, silent_until).is_some_and(|limit| now >= limit) {
            let failure = Failure::new(
                ErrorKind::Timeout,
                "a connection reached its -T/-N limit and the client closed it",
            );
            return lose(&mut session, failure, now, &ledger);
        }
        if session.next_timer().is_some_and(|due| now >= due) {
            if let Err(failure) = session.on_timer(now, &ledger, &mut out) {
                return lose(&mut session, failure, now, &ledger);
            }
        }
        match session.fill(now, &ledger, &mut out) {
            Ok(Progress::Continue) => {}
            Ok(Progress::Finished) => return ConnEnd::Finished,
            Ok(Progress::Reconnect) => return ConnEnd::Lost,
            Err(failure) => return lose(&mut session, failure, now, &ledger),
        }
        let wake = earliest(
            session.next_timer(),
            earliest(limits.active_until, silent_until),
        );
        // Not under -N: there every byte counts as activity, however few arrive.
        let wanted = if limits.inactivity.is_none() && session.bytes_due() >= LOW_WATER_FROM {
            LOW_WATER
        } else {
            1
        };
        if wanted != low_water {
            io.set_low_water(wanted);
            low_water = wanted;
        }
        let step = poll_fn(|cx| {
            let buffer = &mut read_buffer.borrow_mut();
            transfer(&mut io, &mut out, &mut unflushed, buffer, cx)
        });
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
                // Bytes a TLS layer had already taken off the socket come with no stamp of
                // their own: they arrived with the newest stamped ones before them.
                arrived = io.take_arrival().or(arrived);
                let waited = arrived.map(waited_since);
                let before = ledger.responses_completed();
                let buffer = read_buffer.borrow();
                let fed = feed(
                    &mut session,
                    &buffer[..count],
                    &mut pending,
                    at,
                    &ledger,
                    &mut out,
                );
                let responses = ledger.responses_completed() - before;
                if let (Some(waited), 1..) = (waited, responses) {
                    ledger.received_after(at, waited, responses);
                }
                fed
            }
            Err(error) => Err(Failure::new(
                io_error_kind(&error),
                format!("the connection failed: {error}"),
            )),
        };
        if let Err(failure) = result {
            return lose(&mut session, failure, at, &ledger);
        }
    }
}

/// How long ago, on the wall clock the kernel stamps with, `arrived` (time since the Unix epoch)
/// was; zero if the clock stepped back since. Read right after the read, beside its `Instant`,
/// so that the wait never holds the time the session then spends on the bytes.
fn waited_since(arrived: Duration) -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .saturating_sub(arrived)
}

/// The connection cannot go on (found at `at`): its requests fail with the failure's kind. A failure with no
/// request to blame counts as a failed connection when it happened before the connection was
/// usable, or is the server's fault (a protocol error, a GOAWAY before any request).
fn lose(
    session: &mut AnySession<'_>,
    failure: Failure,
    at: Instant,
    ledger: &Ledger<'_>,
) -> ConnEnd {
    // A timeout is the client's decision: the report tells these closes from the server's.
    if failure.kind == ErrorKind::Timeout {
        ledger.closed_by_client();
    }
    ledger.note_symptom(&failure);
    if session.fail_all(&failure, at, ledger) > 0 {
        ledger.note_error(|| failure.message);
    } else if !session.is_ready() || matches!(failure.kind, ErrorKind::Protocol | ErrorKind::Goaway)
    {
        ledger.connection_failed(failure);
    }
    ConnEnd::Lost
}

/// Writes what is queued and reads what has arrived, in one poll, so a long pipeline of writes
/// never blocks behind responses the server is waiting to send. Resolves with the bytes read
/// (0 at EOF). `unflushed`: a flush could not finish, so the next poll flushes again even with
/// nothing new to write (TLS takes a write into its own buffer and only flushing sends it: a
/// request left there waits forever for a response, seen as h1/h2 TLS downloads stalling).
fn transfer<S: AsyncRead + AsyncWrite + Unpin>(
    io: &mut S,
    out: &mut Outgoing,
    unflushed: &mut bool,
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
    if out.is_empty() && (wrote || *unflushed) {
        match Pin::new(&mut *io).poll_flush(cx) {
            Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
            Poll::Ready(Ok(())) => *unflushed = false,
            Poll::Pending => *unflushed = true,
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

#[cfg(test)]
mod tests {
    use std::future::Future;

    use super::*;
    use crate::proto::h2 as frame;
    use crate::session::testing::world;
    use crate::session::Ledger;

    /// A server's bytes, one piece per read (the read after each piece finds nothing, so the
    /// driver goes round its loop as on a socket; the first piece is `first` bytes), and the
    /// low-water marks the driver set, each with how many bytes had been delivered then.
    struct Pieces {
        wire: Vec<u8>,
        delivered: usize,
        first: usize,
        piece: usize,
        drained: bool,
        marks: Vec<(usize, usize)>,
    }

    impl AsyncRead for Pieces {
        fn poll_read(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let this = self.get_mut();
            if this.drained {
                this.drained = false;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            let piece = if this.delivered == 0 {
                this.first
            } else {
                this.piece
            };
            let end = this.wire.len().min(this.delivered + piece);
            buf.put_slice(&this.wire[this.delivered..end]);
            this.delivered = end;
            this.drained = true;
            Poll::Ready(Ok(()))
        }
    }

    impl AsyncWrite for Pieces {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            Poll::Ready(Ok(buf.len()))
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    impl LowWater for Pieces {
        fn set_low_water(&mut self, bytes: usize) {
            self.marks.push((self.delivered, bytes));
        }
    }

    impl Arrivals for Pieces {
        fn take_arrival(&mut self) -> Option<Duration> {
            None
        }
    }

    /// No deadline ever comes (the runs below set none).
    struct Never;

    impl Timer for Never {
        fn sleep_until(&self, _: Instant) -> impl Future<Output = ()> + '_ {
            std::future::pending()
        }
    }

    /// Drives one HTTP/1.1 request (`flags` added) whose response has a `body`-byte
    /// Content-Length body; see [`drive_pieces`].
    fn download(flags: &[&str], body: usize) -> (Vec<(usize, usize)>, u64, u64) {
        let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {body}\r\n\r\n");
        let mut wire = head.into_bytes();
        wire.resize(wire.len() + body, b'x');
        drive_pieces(
            &[&["--h1"], flags].concat(),
            Protocol::Http1,
            wire,
            64 * 1024,
        )
    }

    /// Drives one h2c request whose response says `content-length: body` and sends it in 16 KiB
    /// DATA frames, after the server's SETTINGS and its ACK of ours.
    fn download_h2(body: usize) -> (Vec<(usize, usize)>, u64, u64) {
        let mut wire = Vec::new();
        frame::write_frame(&mut wire, frame::SETTINGS, 0, 0, &[]);
        frame::write_frame(&mut wire, frame::SETTINGS, frame::ACK, 0, &[]);
        // :status 200 (static index 8), then content-length (static name 28) as a literal.
        let length = body.to_string();
        let mut block = vec![0x88, 0x0f, 0x0d, length.len() as u8];
        block.extend_from_slice(length.as_bytes());
        frame::write_frame(&mut wire, frame::HEADERS, frame::END_HEADERS, 1, &block);
        let chunk = [b'x'; 16384];
        let mut left = body;
        while left > 0 {
            let take = left.min(chunk.len());
            left -= take;
            let end = if left == 0 { frame::END_STREAM } else { 0 };
            frame::write_frame(&mut wire, frame::DATA, end, 1, &chunk[..take]);
        }
        drive_pieces(&["--proto", "h2c"], Protocol::H2c, wire, 9)
    }

    /// Drives one request (`-n 1`, `flags` added) over `protocol` with the server's `wire`
    /// delivered in 64 KiB pieces after a `first` one (HTTP/2: the server's SETTINGS alone, so
    /// that the client opens its stream before the response comes, as a server would wait);
    /// returns the marks set, the body bytes counted and the requests that succeeded.
    fn drive_pieces(
        flags: &[&str],
        protocol: Protocol,
        wire: Vec<u8>,
        first: usize,
    ) -> (Vec<(usize, usize)>, u64, u64) {
        let argv: Vec<&str> = ["-n", "1"].iter().chain(flags).copied().collect();
        let world = world(&argv);
        let mut io = Pieces {
            wire,
            delivered: 0,
            first,
            piece: 64 * 1024,
            drained: false,
            marks: Vec::new(),
        };
        let limits = ConnLimits {
            inactivity: world.shared.plan.timeouts.connection_inactivity,
            ..ConnLimits::default()
        };
        let ledger = Ledger::new(&world.shared, &world.conn, 0);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let end = runtime.block_on(drive(
            &mut io,
            &world.templates,
            Some(protocol),
            ledger,
            limits,
            &world.shared.read_buffer,
            &Never,
        ));
        assert!(matches!(end, ConnEnd::Finished), "{end:?}");
        let succeeded = world.shared.recorder.borrow().counters.succeeded;
        (io.marks, world.shared.wire.totals().data, succeeded)
    }

    #[test]
    fn a_long_body_raises_the_low_water_mark_until_its_last_two_marks() {
        let wire = "HTTP/1.1 200 OK\r\nContent-Length: 4194304\r\n\r\n".len() + (4 << 20);
        let (marks, data, succeeded) = download(&[], 4 << 20);
        assert_eq!((data, succeeded), (4 << 20, 1));
        // Raised after the first piece (the head and 64 KiB - 44 bytes of body: ~4 MiB due); back
        // to 1 after the first piece that leaves less than LOW_WATER_FROM of the body to come.
        let lowered = (wire - LOW_WATER_FROM as usize).next_multiple_of(64 * 1024);
        assert_eq!(marks, [(64 * 1024, LOW_WATER), (lowered, 1)]);
    }

    #[test]
    fn no_low_water_mark_under_an_inactivity_limit_or_for_a_short_body() {
        // -N: a trickle of bytes must still count as activity.
        assert_eq!(download(&["-N", "10s"], 4 << 20), (vec![], 4 << 20, 1));
        // Under twice the mark due: waking for every segment costs little here.
        let short = LOW_WATER_FROM as usize - 1;
        assert_eq!(download(&[], short), (vec![], short as u64, 1));
    }

    #[test]
    fn an_h2_body_never_raises_the_mark() {
        // Even with a content-length: a RST_STREAM, PING or early END_STREAM could wait behind it.
        let body = 4 << 20;
        assert_eq!(download_h2(body), (vec![], body as u64, 1));
    }
}
