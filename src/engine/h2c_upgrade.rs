//! h2c by HTTP/1.1 Upgrade (RFC 7540 §3.2): each connection sends its first request as HTTP/1.1
//! with `Upgrade: h2c`; on `101 Switching Protocols` the connection continues as HTTP/2, the first
//! response arriving on stream 1, which the HTTP/2 engine treats as already open. A server that answers without `101` keeps speaking HTTP/1.1,
//! and the connection is driven as such (with a warning).

use std::io;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use futures_util::future::LocalBoxFuture;
use futures_util::FutureExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::h1::{serialize_request, Http1};
use super::h2::{settings_payload, H2};
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
    http1: Http1,
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
            http1: Http1::new(plan),
            request_timeout: plan.timeouts.request,
        }
    }

    async fn run(&self, mut io: Io, session: Session<'_>) -> ConnEnd {
        let Some(start) = session.next_request_when_due().await else {
            return ConnEnd::Finished;
        };
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
        self.h2
            .run(io, session, Some(start), &received[head_len..])
            .await
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
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(settings_payload(settings))
}

#[cfg(test)]
mod tests {
    use super::*;

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
