//! h2c by HTTP/1.1 Upgrade (RFC 7540 §3.2): each connection sends its first request as HTTP/1.1
//! with `Upgrade: h2c`; on `101 Switching Protocols` the connection continues as HTTP/2, the first
//! response arriving on stream 1. A server that answers without `101` keeps speaking HTTP/1.1,
//! and the connection is driven as such (with a warning).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use futures_util::future::LocalBoxFuture;
use futures_util::FutureExt;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};

use super::h1_pipeline::{serialize_request, H1Pipeline};
use super::h2::H2;
use super::{ConnEnd, Engine, Io, Session};
use crate::h2frame::{self, FrameHead};
use crate::plan::{H2Settings, Protocol, RunPlan};
use crate::recorder::ErrorKind;

/// Largest response head accepted in answer to the upgrade request.
const MAX_HEAD: usize = 64 * 1024;

/// The h2c Upgrade engine.
pub struct H2cUpgrade {
    upgrade_request: Bytes,
    h2: H2,
    http1: H1Pipeline,
    request_timeout: Option<Duration>,
}

impl H2cUpgrade {
    /// Prepares the upgrade request (for the first path) and the engines that take over after it.
    pub fn new(plan: &RunPlan) -> Self {
        let settings = http2_settings(&plan.h2);
        let upgrade_headers = [
            ("connection", "Upgrade, HTTP2-Settings"),
            ("upgrade", "h2c"),
            ("http2-settings", settings.as_str()),
        ];
        H2cUpgrade {
            upgrade_request: serialize_request(
                &plan.request,
                &plan.request.paths[0],
                &upgrade_headers,
            ),
            h2: H2::new(plan),
            http1: H1Pipeline::new(plan),
            request_timeout: plan.timeouts.request,
        }
    }

    async fn run(&self, mut io: Io, session: Session<'_>) -> ConnEnd {
        if !session.take_request() {
            return ConnEnd::Finished;
        }
        let start = session.begin();
        let head = match self.request_timeout {
            Some(limit) => tokio::time::timeout(limit, self.upgrade(&mut io))
                .await
                .unwrap_or(Err((
                    ErrorKind::Timeout,
                    "no answer to the h2c upgrade request in time".to_owned(),
                ))),
            None => self.upgrade(&mut io).await,
        };
        let (status, head_len, received) = match head {
            Ok(head) => head,
            Err((kind, message)) => {
                session.note_error(|| message);
                session.fail(start, kind);
                return ConnEnd::Lost;
            }
        };
        if status != 101 {
            session.note_protocol(Protocol::Http1);
            session.warn(|| {
                format!("the server answered the h2c upgrade with {status} instead of 101, so those connections spoke HTTP/1.1")
            });
            return self
                .http1
                .continue_after(io, session, start, &received)
                .await;
        }
        session.note_protocol(Protocol::H2c);
        session.wire().add_headers(head_len as u64, head_len as u64);
        let server_frames = received[head_len..].to_vec();
        io.count_h2_frames(&server_frames);
        let upgraded = UpgradedIo {
            inner: io,
            unread: server_frames,
            read_from: 0,
            hider: Some(PlaceholderHider::default()),
        };
        self.h2.run(upgraded, session, Some(start), 1).await
    }

    /// Sends the upgrade request and reads the head of the answer: its status, its length, and
    /// every byte read so far (the head plus whatever followed it).
    async fn upgrade(&self, io: &mut Io) -> Result<(u16, usize, Vec<u8>), (ErrorKind, String)> {
        let closed = |error: io::Error| (ErrorKind::Closed, format!("h2c upgrade failed: {error}"));
        io.write_all(&self.upgrade_request).await.map_err(closed)?;
        io.flush().await.map_err(closed)?;
        let mut received = Vec::with_capacity(4096);
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 64];
            let mut response = httparse::Response::new(&mut headers);
            match response.parse(&received) {
                Ok(httparse::Status::Complete(len)) => return Ok((response.code.unwrap_or(0), len, received)),
                Ok(httparse::Status::Partial) if received.len() < MAX_HEAD => {}
                Ok(httparse::Status::Partial) => {
                    return Err((ErrorKind::Protocol, "the answer to the h2c upgrade has a head over 64 KiB".to_owned()))
                }
                Err(_) if starts_with_settings_frame(&received) => {
                    return Err((
                        ErrorKind::Protocol,
                        "the server answered the h2c upgrade with HTTP/2 frames: it speaks h2c by prior knowledge only (use --proto h2c)".to_owned(),
                    ))
                }
                Err(error) => {
                    return Err((ErrorKind::Protocol, format!("invalid answer to the h2c upgrade: {error}")))
                }
            }
            if io.read_buf(&mut received).await.map_err(closed)? == 0 {
                return Err((
                    ErrorKind::Closed,
                    "the server closed the connection in answer to the h2c upgrade".to_owned(),
                ));
            }
        }
    }
}

impl Engine for H2cUpgrade {
    fn drive<'a>(&'a self, io: Io, session: Session<'a>) -> LocalBoxFuture<'a, ConnEnd> {
        self.run(io, session).boxed_local()
    }
}

/// Whether `bytes` begin with an HTTP/2 SETTINGS frame header on stream 0 (a server's preface).
fn starts_with_settings_frame(bytes: &[u8]) -> bool {
    bytes
        .first_chunk::<{ h2frame::HEADER_LEN }>()
        .is_some_and(|head| {
            let head = FrameHead::parse(head);
            head.kind == h2frame::SETTINGS && head.stream == 0
        })
}

/// The `HTTP2-Settings` header value: the SETTINGS payload the client's SETTINGS frame will carry, base64url.
pub fn http2_settings(settings: &H2Settings) -> String {
    let mut payload = Vec::with_capacity(24);
    for (id, value) in [
        (0x1u16, settings.header_table_size),
        (0x2, 0), // ENABLE_PUSH
        (0x4, settings.stream_window),
        (0x5, settings.max_frame_size),
    ] {
        payload.extend_from_slice(&id.to_be_bytes());
        payload.extend_from_slice(&value.to_be_bytes());
    }
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(payload)
}

/// The connection after `101`: reads first replay the server's frames that arrived with the `101`;
/// writes pass through a [`PlaceholderHider`] until it has removed the placeholder request.
struct UpgradedIo {
    inner: Io,
    unread: Vec<u8>,
    read_from: usize,
    hider: Option<PlaceholderHider>,
}

impl UpgradedIo {
    /// Writes out what the hider has buffered; `Ready(Ok)` once it is all written.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Some(hider) = &mut self.hider else {
            return Poll::Ready(Ok(()));
        };
        while !hider.pending.is_empty() {
            match Pin::new(&mut self.inner).poll_write(cx, &hider.pending) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(count)) => {
                    hider.pending.drain(..count);
                }
                Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
                Poll::Pending => return Poll::Pending,
            }
        }
        if hider.is_done() {
            self.hider = None;
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for UpgradedIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.read_from < this.unread.len() {
            let take = buf.remaining().min(this.unread.len() - this.read_from);
            buf.put_slice(&this.unread[this.read_from..this.read_from + take]);
            this.read_from += take;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for UpgradedIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        std::task::ready!(this.drain(cx))?;
        let Some(hider) = &mut this.hider else {
            return Pin::new(&mut this.inner).poll_write(cx, buf);
        };
        hider.accept(buf)?;
        // The bytes are ours now; what the socket does not take yet goes out on the next write or flush.
        if let Poll::Ready(Err(error)) = this.drain(cx) {
            return Poll::Ready(Err(error));
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        std::task::ready!(this.drain(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        std::task::ready!(this.drain(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

/// Where the hider is in the client's outgoing HTTP/2 byte stream.
#[derive(Debug)]
enum Position {
    /// Inside the 24-byte connection preface.
    Preface { left: usize },
    /// Reading a 9-byte frame header.
    FrameHead {
        head: [u8; h2frame::HEADER_LEN],
        have: usize,
    },
    /// Inside a frame that goes out.
    Passing { left: usize },
    /// Inside the placeholder's HEADERS frame, which is kept back.
    Hiding {
        left: usize,
        flags: u8,
        block: Vec<u8>,
    },
    /// The placeholder is gone; everything else passes.
    Done,
}

/// Removes the first HEADERS frame on stream 1 from the client's output, after checking that it
/// is the placeholder: one complete header block made only of HPACK static-table references, so
/// dropping it leaves both sides' HPACK state in step.
#[derive(Debug)]
struct PlaceholderHider {
    position: Position,
    pending: Vec<u8>,
}

impl Default for PlaceholderHider {
    fn default() -> Self {
        PlaceholderHider {
            position: Position::Preface {
                left: h2frame::PREFACE_LEN,
            },
            pending: Vec::with_capacity(256),
        }
    }
}

impl PlaceholderHider {
    const STATIC_TABLE_LEN: u8 = 61;

    fn is_done(&self) -> bool {
        matches!(self.position, Position::Done) && self.pending.is_empty()
    }

    /// Takes bytes the `h2` crate wrote, queueing those that go out.
    fn accept(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            match &mut self.position {
                Position::Done => {
                    self.pending.extend_from_slice(bytes);
                    return Ok(());
                }
                Position::Preface { left } | Position::Passing { left } => {
                    let take = bytes.len().min(*left);
                    self.pending.extend_from_slice(&bytes[..take]);
                    *left -= take;
                    bytes = &bytes[take..];
                    if *left == 0 {
                        self.position = Position::FrameHead {
                            head: [0; h2frame::HEADER_LEN],
                            have: 0,
                        };
                    }
                }
                Position::FrameHead { head, have } => {
                    let take = bytes.len().min(h2frame::HEADER_LEN - *have);
                    head[*have..*have + take].copy_from_slice(&bytes[..take]);
                    *have += take;
                    bytes = &bytes[take..];
                    if *have == h2frame::HEADER_LEN {
                        let raw = *head;
                        let head = FrameHead::parse(&raw);
                        self.position = if head.kind == h2frame::HEADERS && head.stream == 1 {
                            Position::Hiding {
                                left: head.length,
                                flags: head.flags,
                                block: Vec::with_capacity(head.length),
                            }
                        } else {
                            self.pending.extend_from_slice(&raw);
                            Position::Passing { left: head.length }
                        };
                        self.finish_hiding()?;
                    }
                }
                Position::Hiding { left, block, .. } => {
                    let take = bytes.len().min(*left);
                    block.extend_from_slice(&bytes[..take]);
                    *left -= take;
                    bytes = &bytes[take..];
                    self.finish_hiding()?;
                }
            }
        }
        Ok(())
    }

    /// Once the hidden frame is complete, checks it really is the placeholder.
    fn finish_hiding(&mut self) -> io::Result<()> {
        let Position::Hiding {
            left: 0,
            flags,
            block,
        } = &self.position
        else {
            return Ok(());
        };
        let only_static_references = !block.is_empty()
            && block.iter().all(|byte| {
                byte & 0x80 != 0 && (1..=Self::STATIC_TABLE_LEN).contains(&(byte & 0x7f))
            });
        if flags & h2frame::END_HEADERS == 0 || !only_static_references {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "h2c upgrade: the placeholder request for stream 1 could not be removed cleanly",
            ));
        }
        self.position = Position::Done;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = (payload.len() as u32).to_be_bytes();
        let mut bytes = vec![len[1], len[2], len[3], kind, flags];
        bytes.extend_from_slice(&stream.to_be_bytes());
        bytes.extend_from_slice(payload);
        bytes
    }

    #[test]
    fn hider_removes_only_the_placeholder_however_the_bytes_are_split() {
        let preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        let settings = frame(0x4, 0, 0, &[0, 4, 0, 0, 0xff, 0xff]);
        let window = frame(0x8, 0, 0, &[0, 0x10, 0, 0]);
        let placeholder = frame(0x1, 0x5, 1, &[0x82, 0x86, 0x84]);
        let next_request = frame(0x1, 0x5, 3, &[0x82, 0x86, 0x84, 0x41, 0x01, b'x']);
        let mut written = preface.clone();
        for part in [&settings, &window, &placeholder, &next_request] {
            written.extend_from_slice(part);
        }
        let mut expected = preface;
        for part in [&settings, &window, &next_request] {
            expected.extend_from_slice(part);
        }
        for piece in [1, 2, 5, 9, 13, written.len()] {
            let mut hider = PlaceholderHider::default();
            for chunk in written.chunks(piece) {
                hider.accept(chunk).unwrap();
            }
            assert_eq!(hider.pending, expected, "piece {piece}");
            assert!(matches!(hider.position, Position::Done), "piece {piece}");
        }
    }

    #[test]
    fn hider_refuses_a_block_that_would_change_hpack_state() {
        let mut hider = PlaceholderHider::default();
        hider.accept(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").unwrap();
        // A table size update (0x3f...) before the fields cannot be dropped silently.
        let error = hider
            .accept(&frame(0x1, 0x5, 1, &[0x3f, 0xe1, 0x1f, 0x82, 0x86, 0x84]))
            .unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn http2_settings_header_encodes_the_settings_payload() {
        let settings = H2Settings {
            stream_window: 65_535,
            connection_window: 65_535,
            max_frame_size: 16_384,
            header_table_size: 4_096,
        };
        let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(http2_settings(&settings))
            .unwrap();
        assert_eq!(
            decoded,
            [0, 1, 0, 0, 0x10, 0, 0, 2, 0, 0, 0, 0, 0, 4, 0, 0, 0xff, 0xff, 0, 5, 0, 0, 0x40, 0]
        );
    }
}
