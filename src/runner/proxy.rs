//! The `CONNECT` exchange that opens a tunnel through an HTTP proxy (RFC 9110 §9.3.6).

use std::io;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::plan::route::ProxyPlan;
use crate::recorder::{ErrorKind, Failure};

/// The longest proxy answer head read; a longer one is a bad answer, not a reason to buffer more.
const MAX_HEAD: usize = 16 * 1024;

/// How many header lines a proxy's answer may have.
const MAX_HEADERS: usize = 64;

/// Sends `proxy`'s `CONNECT` on `stream` and reads the answer's head, which must be a 2xx. Reads
/// nothing past the head: bytes the server behind sends at once stay in the socket for the engine.
/// The caller bounds the time (the connect timeout).
pub(crate) async fn tunnel(stream: &mut TcpStream, proxy: &ProxyPlan) -> Result<(), Failure> {
    let lost = |error: io::Error| {
        Failure::new(
            ErrorKind::Proxy,
            format!(
                "proxy {} failed during CONNECT {}: {error}",
                proxy.addr, proxy.target
            ),
        )
    };
    stream.write_all(&proxy.request).await.map_err(lost)?;
    let mut head = Vec::with_capacity(512);
    let mut window = [0u8; 2048];
    loop {
        // Peek, then consume only what belongs to the head: the rest is the server's.
        let seen = stream.peek(&mut window).await.map_err(lost)?;
        if seen == 0 {
            return Err(Failure::new(
                ErrorKind::Proxy,
                format!(
                    "proxy {} closed the connection without answering CONNECT {}",
                    proxy.addr, proxy.target
                ),
            ));
        }
        let before = head.len();
        head.extend_from_slice(&window[..seen]);
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut headers);
        match response.parse(&head) {
            Ok(httparse::Status::Complete(length)) => {
                stream
                    .read_exact(&mut window[..length - before])
                    .await
                    .map_err(lost)?;
                let status = response.code.unwrap_or_default();
                if (200..300).contains(&status) {
                    return Ok(());
                }
                let reason = match response.reason {
                    Some(reason) if !reason.is_empty() => format!(" ({reason})"),
                    _ => String::new(),
                };
                return Err(Failure::new(
                    ErrorKind::Proxy,
                    format!(
                        "proxy answered {status} to CONNECT {}{reason}",
                        proxy.target
                    ),
                ));
            }
            Ok(httparse::Status::Partial) if head.len() < MAX_HEAD => {
                stream
                    .read_exact(&mut window[..seen])
                    .await
                    .map_err(lost)?;
            }
            Ok(httparse::Status::Partial) => return Err(bad_answer(proxy, "a head over 16 KiB")),
            Err(error) => return Err(bad_answer(proxy, &error.to_string())),
        }
    }
}

fn bad_answer(proxy: &ProxyPlan, problem: &str) -> Failure {
    Failure::new(
        ErrorKind::Proxy,
        format!(
            "proxy {} sent a bad answer to CONNECT {} ({problem})",
            proxy.addr, proxy.target
        ),
    )
}
