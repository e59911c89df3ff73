//! Fault modes of the built-in target (`serve --fault MODE`): a raw-socket server that misbehaves in
//! one precise way, so tests (and users) can see how a load generator copes. hyper is not used
//! here because these are exactly the things a correct server never does.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::cli::serve::Fault;
use crate::proto::h2::{self as h2frame, FrameHead};

/// What a fault mode's server speaks: a cell of any other protocol would only time out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speaks {
    /// Cleartext HTTP/1.1 (the raw server reads HTTP/1.1 heads).
    Http1,
    /// Cleartext HTTP/2 by prior knowledge.
    H2c,
    /// Anything over cleartext TCP: the raw server never answers, whatever it is sent (it
    /// speaks no TLS, so a TLS client never gets past its handshake).
    Cleartext,
    /// Anything over TCP, TLS included: the connections it spares are served as usual.
    Tcp,
}

/// The longest HTTP/1.1 request head a faulty target reads (hyper's default limit too).
const MAX_HEAD: usize = 64 * 1024;

/// HTTP/2 error code INTERNAL_ERROR.
const INTERNAL_ERROR: u32 = 0x2;

impl Fault {
    /// What this mode's server speaks.
    pub fn speaks(&self) -> Speaks {
        match self {
            Fault::CloseAfter(_)
            | Fault::DropAfter(_)
            | Fault::ResetMidResponse
            | Fault::ShortBody
            | Fault::Malformed => Speaks::Http1,
            Fault::GoawayAfter(_) | Fault::GoawayErrorAfter(_) | Fault::ResetStreamEvery(_) => {
                Speaks::H2c
            }
            Fault::Stall | Fault::NeverRead => Speaks::Cleartext,
            Fault::DropEvery(_) => Speaks::Tcp,
        }
    }
}

/// Serves one connection the faulty way.
pub(super) async fn serve(stream: TcpStream, fault: Fault) {
    match fault {
        // Closed unread (the accept loop serves the connections it spares).
        Fault::DropEvery(_) => drop(stream),
        Fault::NeverRead => {
            // Hold the socket open without reading, until the client gives up.
            let _held = stream;
            std::future::pending::<()>().await;
        }
        Fault::GoawayAfter(_) | Fault::GoawayErrorAfter(_) | Fault::ResetStreamEvery(_) => {
            let _ = serve_h2(stream, fault).await;
        }
        _ => {
            let _ = serve_h1(stream, fault).await;
        }
    }
}

async fn serve_h1(mut stream: TcpStream, fault: Fault) -> std::io::Result<()> {
    let mut buffer = Vec::with_capacity(16 * 1024);
    let mut answered = 0;
    loop {
        let head_end = loop {
            if let Some(at) = buffer.windows(4).position(|window| window == b"\r\n\r\n") {
                break at + 4;
            }
            let mut chunk = [0u8; 4096];
            let count = stream.read(&mut chunk).await?;
            // A head that never ends is not held without bound: the connection goes.
            if count == 0 || buffer.len() + count > MAX_HEAD {
                return Ok(());
            }
            buffer.extend_from_slice(&chunk[..count]);
        };
        buffer.drain(..head_end);
        answered += 1;
        match fault {
            Fault::CloseAfter(n) if answered >= n => {
                stream
                    .write_all(
                        b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 4\r\n\r\npong",
                    )
                    .await?;
                return stream.shutdown().await;
            }
            Fault::CloseAfter(_) | Fault::DropAfter(_) => {
                stream
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\npong")
                    .await?;
                if fault == Fault::DropAfter(answered) {
                    return stream.shutdown().await;
                }
            }
            Fault::ResetMidResponse => {
                stream
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npartial")
                    .await?;
                tokio::time::sleep(Duration::from_millis(20)).await;
                // Closing with a zero linger time sends RST instead of FIN.
                stream.set_zero_linger()?;
                return Ok(());
            }
            Fault::ShortBody => {
                stream
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nshort")
                    .await?;
                return stream.shutdown().await;
            }
            Fault::Malformed => {
                stream.write_all(b"HTTP/1.1 two hundred\r\n\r\n").await?;
                return stream.shutdown().await;
            }
            _ => {
                std::future::pending::<()>().await;
            }
        }
    }
}

/// A minimal h2c server: enough framing to answer `GET`s with `200 pong` and to fail on cue.
async fn serve_h2(mut stream: TcpStream, fault: Fault) -> std::io::Result<()> {
    let mut input: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut out = Vec::with_capacity(16 * 1024);
    let mut preface_left = h2frame::PREFACE_LEN;
    let mut streams_seen = 0u64;
    let frame = |out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]| {
        out.extend_from_slice(
            &FrameHead {
                length: payload.len(),
                kind,
                flags,
                stream,
            }
            .encode(),
        );
        out.extend_from_slice(payload);
    };
    frame(&mut out, h2frame::SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 100]);
    loop {
        if !out.is_empty() {
            stream.write_all(&out).await?;
            out.clear();
        }
        let mut chunk = [0u8; 16 * 1024];
        let count = stream.read(&mut chunk).await?;
        if count == 0 {
            return Ok(());
        }
        input.extend_from_slice(&chunk[..count]);
        if preface_left > 0 {
            let take = preface_left.min(input.len());
            input.drain(..take);
            preface_left -= take;
        }
        while let Some(head) = input.first_chunk::<{ h2frame::HEADER_LEN }>() {
            let head = FrameHead::parse(head);
            // Larger than the SETTINGS_MAX_FRAME_SIZE we left at its default: FRAME_SIZE_ERROR,
            // and no 16 MiB frame is buffered.
            if head.length > h2frame::MIN_MAX_FRAME_SIZE {
                return Ok(());
            }
            if input.len() < h2frame::HEADER_LEN + head.length {
                break;
            }
            input.drain(..h2frame::HEADER_LEN + head.length);
            match head.kind {
                h2frame::SETTINGS if head.flags & h2frame::ACK == 0 => {
                    frame(&mut out, h2frame::SETTINGS, h2frame::ACK, 0, &[])
                }
                h2frame::PING if head.flags & h2frame::ACK == 0 => {
                    frame(&mut out, h2frame::PING, h2frame::ACK, 0, &[0; 8])
                }
                h2frame::HEADERS => {
                    streams_seen += 1;
                    match fault {
                        Fault::ResetStreamEvery(every) if streams_seen.is_multiple_of(every) => {
                            frame(
                                &mut out,
                                h2frame::RST_STREAM,
                                0,
                                head.stream,
                                &INTERNAL_ERROR.to_be_bytes(),
                            );
                        }
                        Fault::GoawayAfter(n) | Fault::GoawayErrorAfter(n) if streams_seen > n => {}
                        _ => {
                            // `:status: 200` from the HPACK static table, then the body.
                            frame(
                                &mut out,
                                h2frame::HEADERS,
                                h2frame::END_HEADERS,
                                head.stream,
                                &[0x88],
                            );
                            frame(
                                &mut out,
                                h2frame::DATA,
                                h2frame::END_STREAM,
                                head.stream,
                                b"pong",
                            );
                        }
                    }
                    if let Fault::GoawayAfter(n) | Fault::GoawayErrorAfter(n) = fault {
                        if streams_seen == n {
                            let code = if matches!(fault, Fault::GoawayErrorAfter(_)) {
                                INTERNAL_ERROR
                            } else {
                                0
                            };
                            let mut payload = head.stream.to_be_bytes().to_vec();
                            payload.extend_from_slice(&code.to_be_bytes());
                            frame(&mut out, h2frame::GOAWAY, 0, 0, &payload);
                            stream.write_all(&out).await?;
                            // Let the client read everything before the connection goes.
                            tokio::time::sleep(Duration::from_millis(200)).await;
                            return stream.shutdown().await;
                        }
                    }
                }
                _ => {}
            }
        }
    }
}
