//! A connection's socket with something watching the bytes that go through it: the counts of
//! [`super::sent`], the activity of [`super::idle`].

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// What watches a connection's bytes.
pub(super) trait Watch {
    /// `bytes` were just read.
    fn read(&mut self, bytes: &[u8]);
    /// `bytes` were just written (a vectored write calls this once per slice it wrote from).
    fn written(&mut self, bytes: &[u8]);
}

/// `inner`, its reads and writes shown to `watch`.
pub(super) struct Watched<I, W> {
    inner: I,
    watch: W,
}

impl<I, W> Watched<I, W> {
    pub(super) fn new(inner: I, watch: W) -> Self {
        Watched { inner, watch }
    }
}

impl<I: AsyncRead + Unpin, W: Watch + Unpin> AsyncRead for Watched<I, W> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        let poll = Pin::new(&mut this.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.watch.read(&buf.filled()[before..]);
        }
        poll
    }
}

impl<I: AsyncWrite + Unpin, W: Watch + Unpin> AsyncWrite for Watched<I, W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let written = std::task::ready!(Pin::new(&mut self.inner).poll_write(cx, buf))?;
        self.watch.written(&buf[..written]);
        Poll::Ready(Ok(written))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let mut left = std::task::ready!(Pin::new(&mut self.inner).poll_write_vectored(cx, bufs))?;
        let written = left;
        for buf in bufs {
            let take = left.min(buf.len());
            self.watch.written(&buf[..take]);
            left -= take;
            if left == 0 {
                break;
            }
        }
        Poll::Ready(Ok(written))
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
