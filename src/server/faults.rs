//! Fault modes of the built-in target (`serve --fault MODE`): a raw-socket server that misbehaves in
//! one precise way, so tests (and users) can see how a load generator copes. hyper is not used
//! here because these are exactly the things a correct server never does.

use std::str::FromStr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::proto::h2::{self as h2frame, FrameHead};

/// A fault mode of the built-in target (`--fault MODE`): one way of failing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// HTTP/1.1: answer N requests, the last with `Connection: close`, then close.
    CloseAfter(u64),
    /// HTTP/1.1: answer N requests as if the connection stayed open, then close it unannounced,
    /// as a server whose keep-alive timeout or request limit ends an idle connection does.
    DropAfter(u64),
    /// Close every N-th connection at once, before reading or sending anything (an h2c client is
    /// still waiting for SETTINGS); serve the others as the built-in target does.
    DropEvery(u64),
    /// HTTP/1.1: send part of every response, then reset the connection (TCP RST).
    ResetMidResponse,
    /// HTTP/1.1: promise a 100-byte body, send 5 bytes, close.
    ShortBody,
    /// HTTP/1.1: answer with a malformed status line.
    Malformed,
    /// Read requests, never answer.
    Stall,
    /// Accept connections, never read them.
    NeverRead,
    /// h2c: answer N streams, then GOAWAY (NO_ERROR) naming the last one, and close.
    GoawayAfter(u64),
    /// h2c: like `GoawayAfter`, with error code INTERNAL_ERROR.
    GoawayErrorAfter(u64),
    /// h2c: answer every N-th stream with RST_STREAM (INTERNAL_ERROR) instead of a response.
    ResetStreamEvery(u64),
}

impl FromStr for Fault {
    type Err = String;

    fn from_str(text: &str) -> Result<Fault, String> {
        let (name, count) = match text.split_once('=') {
            Some((name, count)) => {
                let count: u64 = count
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| format!("'{text}': the count must be a positive number"))?;
                (name, Some(count))
            }
            None => (text, None),
        };
        Ok(match (name, count) {
            ("close-after", Some(n)) => Fault::CloseAfter(n),
            ("drop-after", Some(n)) => Fault::DropAfter(n),
            ("drop-every", Some(n)) => Fault::DropEvery(n),
            ("reset-mid-response", None) => Fault::ResetMidResponse,
            ("short-body", None) => Fault::ShortBody,
            ("malformed", None) => Fault::Malformed,
            ("stall", None) => Fault::Stall,
            ("never-read", None) => Fault::NeverRead,
            ("goaway-after", Some(n)) => Fault::GoawayAfter(n),
            ("goaway-error-after", Some(n)) => Fault::GoawayErrorAfter(n),
            ("rst-stream-every", Some(n)) => Fault::ResetStreamEvery(n),
            _ => {
                return Err(format!(
                    "'{text}' is not a fault: close-after=N, drop-after=N, drop-every=N, reset-mid-response, short-body, \
                     malformed, stall, never-read, goaway-after=N, goaway-error-after=N, rst-stream-every=N"
                ))
            }
        })
    }
}

impl Fault {
    /// The mode as `serve --fault` spells it.
    pub(crate) fn name(&self) -> String {
        match self {
            Fault::CloseAfter(n) => format!("close-after={n}"),
            Fault::DropAfter(n) => format!("drop-after={n}"),
            Fault::DropEvery(n) => format!("drop-every={n}"),
            Fault::ResetMidResponse => "reset-mid-response".to_owned(),
            Fault::ShortBody => "short-body".to_owned(),
            Fault::Malformed => "malformed".to_owned(),
            Fault::Stall => "stall".to_owned(),
            Fault::NeverRead => "never-read".to_owned(),
            Fault::GoawayAfter(n) => format!("goaway-after={n}"),
            Fault::GoawayErrorAfter(n) => format!("goaway-error-after={n}"),
            Fault::ResetStreamEvery(n) => format!("rst-stream-every={n}"),
        }
    }
}

/// What a fault mode's server speaks: a cell of any other protocol would only time out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Speaks {
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
    pub(crate) fn speaks(&self) -> Speaks {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse() {
        assert_eq!("close-after=3".parse(), Ok(Fault::CloseAfter(3)));
        assert_eq!("drop-after=1".parse(), Ok(Fault::DropAfter(1)));
        assert_eq!("drop-every=4".parse(), Ok(Fault::DropEvery(4)));
        assert_eq!("rst-stream-every=5".parse(), Ok(Fault::ResetStreamEvery(5)));
        assert_eq!("stall".parse(), Ok(Fault::Stall));
        assert!("close-after".parse::<Fault>().is_err());
        assert!("close-after=0".parse::<Fault>().is_err());
        assert!("explode"
            .parse::<Fault>()
            .unwrap_err()
            .contains("is not a fault"));
    }
}
