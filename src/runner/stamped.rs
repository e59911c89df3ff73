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
use std::os::fd::{AsFd, AsRawFd};
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use nix::sys::socket::{
    recvmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags, TimestampingFlag,
};
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;

/// Room for one `SCM_TIMESTAMPING` message (a header and three timespecs: 64 bytes on 64-bit
/// Linux), aligned as a `cmsghdr` must be.
#[repr(C, align(8))]
struct Control([u8; 64]);

/// A TCP stream whose reads remember when the newest byte they took arrived.
#[derive(Debug)]
pub struct StampedTcp {
    stream: TcpStream,
    /// The kernel accepted `SO_TIMESTAMPING`.
    stamping: bool,
    /// When the newest byte read since [`StampedTcp::take_arrival`] last asked arrived, as time
    /// since the Unix epoch (`CLOCK_REALTIME`).
    arrived: Option<Duration>,
}

impl StampedTcp {
    /// Turns on software receive timestamps for `stream` (best effort).
    pub fn new(stream: TcpStream) -> Self {
        let flags = TimestampingFlag::SOF_TIMESTAMPING_SOFTWARE
            | TimestampingFlag::SOF_TIMESTAMPING_RX_SOFTWARE;
        let stamping = setsockopt(&stream, sockopt::Timestamping, &flags).is_ok();
        StampedTcp {
            stream,
            stamping,
            arrived: None,
        }
    }

    /// When the newest byte read since the last call arrived, as time since the Unix epoch;
    /// `None` when nothing stamped was read.
    pub fn take_arrival(&mut self) -> Option<Duration> {
        self.arrived.take()
    }

    /// One `recvmsg` into `into`: the bytes read and the newest segment's arrival, if stamped.
    fn receive(&self, into: &mut [u8]) -> io::Result<(usize, Option<Duration>)> {
        let mut control = Control([0; 64]);
        let mut slices = [IoSliceMut::new(into)];
        let message = recvmsg::<()>(
            self.stream.as_raw_fd(),
            &mut slices,
            Some(&mut control.0),
            MsgFlags::empty(),
        )?;
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
