//! Accepting `Upgrade: h2c` (RFC 7540 §3.2). After `101 Switching Protocols` the request that asked
//! for the upgrade must be answered on HTTP/2 stream 1, but hyper's HTTP/2 server only answers
//! requests it read itself. So the request is handed to it as a HEADERS frame on stream 1, placed in
//! its input right after the client's preface and SETTINGS, and encoded with literal fields that
//! are never indexed, which leaves the server's HPACK decoder state exactly as the client expects.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::{header, HeaderValue, Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::routes::TargetBody;
use super::{Conn, TargetResponse};
use crate::proto::h2::{self as h2frame, FrameHead};

/// Largest HEADERS frame every HTTP/2 peer accepts (the default SETTINGS_MAX_FRAME_SIZE).
const MAX_FRAME: usize = 16_384;
/// Request headers that do not exist in HTTP/2 or are carried by pseudo-headers.
const NOT_FORWARDED: [&str; 8] = [
    "connection",
    "upgrade",
    "http2-settings",
    "host",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
];

/// Whether the request asks for h2c and can have it: HTTP/1.1, `Upgrade: h2c`, `HTTP2-Settings`,
/// and no body (a body would have to be forwarded as DATA frames; such requests are served as HTTP/1.1).
pub(super) fn is_requested(request: &Request<Incoming>) -> bool {
    let headers = request.headers();
    let lists = |name: header::HeaderName, token: &str| {
        headers.get_all(name).iter().any(|value| {
            value
                .to_str()
                .unwrap_or("")
                .split(',')
                .any(|item| item.trim().eq_ignore_ascii_case(token))
        })
    };
    let bodyless = !headers.contains_key(header::TRANSFER_ENCODING)
        && headers
            .get(header::CONTENT_LENGTH)
            .is_none_or(|length| length == "0");
    request.version() == http::Version::HTTP_11
        && lists(header::UPGRADE, "h2c")
        && lists(header::CONNECTION, "upgrade")
        && headers.contains_key("http2-settings")
        && bodyless
}

/// Answers `101` and, once hyper hands over the connection, serves HTTP/2 on it. Falls back to
/// serving the request as HTTP/1.1 when its headers do not fit in one frame.
pub(super) fn accept(
    mut request: Request<Incoming>,
    max_streams: u32,
    conn: Conn,
) -> TargetResponse {
    let Some(stream_one) = stream_one_headers(&request) else {
        let mut response = Response::new(TargetBody::Static(None));
        *response.status_mut() = StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE;
        return response;
    };
    let on_upgrade = hyper::upgrade::on(&mut request);
    tokio::spawn(async move {
        let Ok(upgraded) = on_upgrade.await else {
            return;
        };
        let io = InjectStreamOne::new(TokioIo::new(upgraded), stream_one);
        let service_conn = conn.clone();
        let connection = super::http2_builder(max_streams, conn.held.1.sizes()).serve_connection(
            TokioIo::new(io),
            service_fn(move |request| service_conn.clone().answer(request)),
        );
        conn.serve_until_quiet(connection, |connection| connection.graceful_shutdown())
            .await;
    });
    let mut response = Response::new(TargetBody::Static(None));
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    response
        .headers_mut()
        .insert(header::UPGRADE, HeaderValue::from_static("h2c"));
    response
}

/// The request as an HTTP/2 HEADERS frame on stream 1 (END_STREAM, END_HEADERS), or `None` if too large.
fn stream_one_headers(request: &Request<Incoming>) -> Option<Vec<u8>> {
    let authority = request
        .headers()
        .get(header::HOST)
        .map(HeaderValue::as_bytes)
        .or_else(|| request.uri().authority().map(|a| a.as_str().as_bytes()))
        .unwrap_or(b"");
    let path = request.uri().path_and_query().map_or("/", |pq| pq.as_str());
    let mut block = Vec::with_capacity(256);
    for (name, value) in [
        (":method", request.method().as_str().as_bytes()),
        (":scheme", b"http".as_slice()),
        (":path", path.as_bytes()),
        (":authority", authority),
    ] {
        literal_never_indexed(&mut block, name.as_bytes(), value);
    }
    for (name, value) in request.headers() {
        if !NOT_FORWARDED.contains(&name.as_str()) {
            literal_never_indexed(&mut block, name.as_str().as_bytes(), value.as_bytes());
        }
    }
    if block.len() > MAX_FRAME {
        return None;
    }
    let head = FrameHead {
        length: block.len(),
        kind: h2frame::HEADERS,
        flags: h2frame::END_STREAM | h2frame::END_HEADERS,
        stream: 1,
    };
    let mut frame = head.encode().to_vec();
    frame.extend_from_slice(&block);
    Some(frame)
}

/// HPACK "literal header field never indexed, new name" (RFC 7541 §6.2.3), without Huffman coding.
fn literal_never_indexed(block: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    block.push(0x10);
    hpack_length(block, name.len());
    block.extend_from_slice(name);
    hpack_length(block, value.len());
    block.extend_from_slice(value);
}

/// An HPACK string length: a 7-bit prefix integer with the Huffman bit clear (RFC 7541 §5.1).
fn hpack_length(block: &mut Vec<u8>, mut length: usize) {
    const PREFIX_MAX: usize = 0x7f;
    if length < PREFIX_MAX {
        block.push(length as u8);
        return;
    }
    block.push(PREFIX_MAX as u8);
    length -= PREFIX_MAX;
    while length >= 0x80 {
        block.push((length % 0x80) as u8 | 0x80);
        length /= 0x80;
    }
    block.push(length as u8);
}

/// Where the injector is in the client's byte stream.
#[derive(Debug, Clone, Copy)]
enum Position {
    /// Inside the 24-byte connection preface.
    Preface { left: usize },
    /// Reading the header of the client's first frame (its SETTINGS).
    SettingsHead { have: usize },
    /// Inside the SETTINGS payload.
    SettingsPayload { left: usize },
    /// Handing out the injected frame.
    Injecting { sent: usize },
    /// Done: reads pass through.
    Through,
}

/// A reader that inserts one frame after the client's preface and first frame.
struct InjectStreamOne<S> {
    inner: S,
    frame: Vec<u8>,
    head: [u8; h2frame::HEADER_LEN],
    position: Position,
}

impl<S> InjectStreamOne<S> {
    fn new(inner: S, frame: Vec<u8>) -> Self {
        InjectStreamOne {
            inner,
            frame,
            head: [0; h2frame::HEADER_LEN],
            position: Position::Preface {
                left: h2frame::PREFACE_LEN,
            },
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for InjectStreamOne<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let limit = match this.position {
            Position::Through => return Pin::new(&mut this.inner).poll_read(cx, buf),
            Position::Injecting { sent } => {
                let take = buf.remaining().min(this.frame.len() - sent);
                buf.put_slice(&this.frame[sent..sent + take]);
                this.position = if sent + take == this.frame.len() {
                    Position::Through
                } else {
                    Position::Injecting { sent: sent + take }
                };
                return Poll::Ready(Ok(()));
            }
            Position::Preface { left } | Position::SettingsPayload { left } => left,
            Position::SettingsHead { have } => h2frame::HEADER_LEN - have,
        };
        // Read no further than the next boundary, so the frame goes in exactly there.
        let mut bounded = vec![0u8; limit.min(buf.remaining())];
        let mut bounded_buf = ReadBuf::new(&mut bounded);
        std::task::ready!(Pin::new(&mut this.inner).poll_read(cx, &mut bounded_buf))?;
        let read = bounded_buf.filled();
        buf.put_slice(read);
        let count = read.len();
        if count == 0 {
            return Poll::Ready(Ok(()));
        }
        this.position = match this.position {
            Position::Preface { left } if left == count => Position::SettingsHead { have: 0 },
            Position::Preface { left } => Position::Preface { left: left - count },
            Position::SettingsHead { have } => {
                this.head[have..have + count].copy_from_slice(read);
                if have + count < h2frame::HEADER_LEN {
                    Position::SettingsHead { have: have + count }
                } else {
                    match u32::from_be_bytes([0, this.head[0], this.head[1], this.head[2]]) as usize
                    {
                        0 => Position::Injecting { sent: 0 },
                        length => Position::SettingsPayload { left: length },
                    }
                }
            }
            Position::SettingsPayload { left } if left == count => Position::Injecting { sent: 0 },
            Position::SettingsPayload { left } => Position::SettingsPayload { left: left - count },
            other => other,
        };
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for InjectStreamOne<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[test]
    fn lengths_use_hpack_prefix_integers() {
        let mut block = Vec::new();
        hpack_length(&mut block, 10);
        hpack_length(&mut block, 127);
        hpack_length(&mut block, 1337);
        assert_eq!(block, [10, 0x7f, 0x00, 0x7f, 0xba, 0x09]);
    }

    #[tokio::test]
    async fn frame_goes_in_after_the_preface_and_settings() {
        let mut client = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        client.extend_from_slice(&[0, 0, 6, 0x4, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0xff, 0xff]);
        client.extend_from_slice(b"rest");
        let (mut writer, reader) = tokio::io::duplex(64);
        let mut injected = InjectStreamOne::new(reader, b"FRAME".to_vec());
        tokio::spawn(async move {
            for byte in client {
                tokio::io::AsyncWriteExt::write_all(&mut writer, &[byte])
                    .await
                    .unwrap();
            }
        });
        let mut seen = Vec::new();
        injected.read_to_end(&mut seen).await.unwrap();
        let expected_prefix = seen.len() - b"FRAMErest".len();
        assert_eq!(&seen[expected_prefix..], b"FRAMErest");
        assert_eq!(expected_prefix, 24 + 15);
    }
}
