//! A TCP stream that asks the kernel when its received bytes arrived (software receive
//! timestamps, `SO_TIMESTAMPING`), so that the driver can tell how long a response waited in the
//! socket before h2load-rs read it: the client's own part of a measured latency.
//!
//! The kernel stamps a segment when it receives it (on loopback: when the sender's segment is
//! queued to the receive path), in `CLOCK_REALTIME`; `recvmsg` hands over the stamp of the
//! newest segment a read consumed. Each read is one `recvmsg` instead of one `read`, with a
//! 64-byte control buffer on the stack: no allocation and no extra syscall. Where the option is
//! refused the stream reads as a plain one and reports no arrivals.

use std::io::{self, IoSliceMut};
use std::net::UdpSocket;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use nix::sys::socket::{
    recvmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags, TimestampingFlag,
};
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;

/// Room for one `SCM_TIMESTAMPING` message (a header and three timespecs: 64 bytes on 64-bit
/// Linux), aligned as a `cmsghdr` must be.
#[repr(C, align(8))]
struct Control([u8; 64]);

/// How long [`hold_stamping_on`] waits for the kernel to start stamping: far longer than the
/// deferred work takes on a busy machine (milliseconds), short beside any run.
const STAMPING_ON_WITHIN: Duration = Duration::from_millis(250);

/// Turns the kernel's receive timestamps on for the rest of the process and waits until they
/// are on, before a run opens its connections. The kernel stamps arriving packets only while
/// some socket asks for stamps, and turns that on (and off, when the last such socket closes)
/// as deferred work: without this, the reads of the first responses of a process that started
/// while no other held stamps on could come unstamped (12 of 400 responses without a receive
/// wait were seen under a load of 8), and `kernel to client` would not hold every response. A
/// UDP socket on loopback asks for stamps and sends itself a byte until one comes stamped;
/// it stays open (and the stamps on) until the process ends. Best effort: where stamps are
/// refused the TCP reads are not stamped either.
pub(crate) fn hold_stamping_on() {
    static HOLDER: OnceLock<Option<UdpSocket>> = OnceLock::new();
    HOLDER.get_or_init(|| {
        let socket = UdpSocket::bind("127.0.0.1:0").ok()?;
        setsockopt(&socket, sockopt::Timestamping, &stamping_flags()).ok()?;
        socket.connect(socket.local_addr().ok()?).ok()?;
        socket
            .set_read_timeout(Some(Duration::from_millis(5)))
            .ok()?;
        let given_up = Instant::now() + STAMPING_ON_WITHIN;
        let mut byte = [0; 1];
        while Instant::now() < given_up {
            socket.send(&[0]).ok()?;
            match receive_stamped(socket.as_raw_fd(), &mut byte) {
                Ok((_, Some(_))) => break,
                Ok((_, None)) => std::thread::sleep(Duration::from_millis(1)),
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => return None,
            }
        }
        Some(socket)
    });
}

/// Software receive timestamps, reported in control messages.
fn stamping_flags() -> TimestampingFlag {
    TimestampingFlag::SOF_TIMESTAMPING_SOFTWARE | TimestampingFlag::SOF_TIMESTAMPING_RX_SOFTWARE
}

/// One `recvmsg` on `fd` into `into`: the bytes read and the newest segment's arrival (time
/// since the Unix epoch), if stamped.
fn receive_stamped(fd: RawFd, into: &mut [u8]) -> io::Result<(usize, Option<Duration>)> {
    let mut control = Control([0; 64]);
    let mut slices = [IoSliceMut::new(into)];
    let message = recvmsg::<()>(fd, &mut slices, Some(&mut control.0), MsgFlags::empty())?;
    let mut arrived = None;
    // A truncated control buffer (impossible for this one message) only loses the stamp.
    if let Ok(messages) = message.cmsgs() {
        for cmsg in messages {
            if let ControlMessageOwned::ScmTimestampsns(stamps) = cmsg {
                let (secs, nanos) = (stamps.system.tv_sec(), stamps.system.tv_nsec());
                if let (Ok(secs), Ok(nanos)) = (u64::try_from(secs), u32::try_from(nanos)) {
                    arrived = Some(Duration::new(secs, nanos));
                }
            }
        }
    }
    Ok((message.bytes, arrived))
}

/// A TCP stream whose reads remember when the newest byte they took arrived.
#[derive(Debug)]
pub(crate) struct StampedTcp {
    stream: TcpStream,
    /// The kernel accepted `SO_TIMESTAMPING`.
    stamping: bool,
    /// When the newest byte read since [`StampedTcp::take_arrival`] last asked arrived, as time
    /// since the Unix epoch (`CLOCK_REALTIME`).
    arrived: Option<Duration>,
}

impl StampedTcp {
    /// Turns on software receive timestamps for `stream` (best effort).
    pub(crate) fn new(stream: TcpStream) -> Self {
        let stamping = setsockopt(&stream, sockopt::Timestamping, &stamping_flags()).is_ok();
        StampedTcp {
            stream,
            stamping,
            arrived: None,
        }
    }

    /// When the newest byte read since the last call arrived, as time since the Unix epoch;
    /// `None` when nothing stamped was read.
    pub(crate) fn take_arrival(&mut self) -> Option<Duration> {
        self.arrived.take()
    }

    /// One `recvmsg` into `into`: the bytes read and the newest segment's arrival, if stamped.
    fn receive(&self, into: &mut [u8]) -> io::Result<(usize, Option<Duration>)> {
        receive_stamped(self.stream.as_raw_fd(), into)
    }
}

impl AsFd for StampedTcp {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.stream.as_fd()
    }
}

impl AsyncRead for StampedTcp {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.stamping {
            return Pin::new(&mut this.stream).poll_read(cx, buf);
        }
        loop {
            ready!(this.stream.poll_read_ready(cx))?;
            let into = buf.initialize_unfilled();
            let room = into.len();
            let mut received = None;
            let read = this.stream.try_io(Interest::READABLE, || {
                let (count, arrived) = this.receive(into)?;
                received = Some((count, arrived));
                // A read that did not fill the buffer emptied the socket: readiness is cleared
                // (by answering "would block"), so the next poll waits for the next segment
                // instead of paying a system call to hear EAGAIN, as tokio's own reads do.
                if count > 0 && count < room {
                    return Err(io::ErrorKind::WouldBlock.into());
                }
                Ok(())
            });
            if let Some((count, arrived)) = received {
                buf.advance(count);
                if arrived.is_some() {
                    this.arrived = this.arrived.max(arrived);
                }
                return Poll::Ready(Ok(()));
            }
            // Otherwise readiness was stale: `try_io` cleared it, so the next poll waits again.
            if let Err(error) = read {
                if error.kind() != io::ErrorKind::WouldBlock {
                    return Poll::Ready(Err(error));
                }
            }
        }
    }
}

impl AsyncWrite for StampedTcp {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}
