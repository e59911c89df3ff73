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
        match answer(&head, proxy) {
            Answer::Open(length) => {
                stream
                    .read_exact(&mut window[..length - before])
                    .await
                    .map_err(lost)?;
                return Ok(());
            }
            Answer::Partial => {
                stream.read_exact(&mut window[..seen]).await.map_err(lost)?;
            }
            Answer::Refused(failure) => return Err(failure),
        }
    }
}

/// What the proxy's answer says so far.
#[derive(Debug, PartialEq)]
pub(crate) enum Answer {
    /// A 2xx head of this many bytes: the tunnel is open after it.
    Open(usize),
    /// The head has not ended yet (and is within [`MAX_HEAD`]).
    Partial,
    /// No tunnel: a refusal or a bad answer, which the failure puts in words.
    Refused(Failure),
}

/// Reads the answer head at the start of `head` (bytes past it are the server's): a head that
/// is not complete within the bytes given is [`Answer::Partial`], until it outgrows [`MAX_HEAD`].
pub(crate) fn answer(head: &[u8], proxy: &ProxyPlan) -> Answer {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    match response.parse(head) {
        Ok(httparse::Status::Complete(length)) => {
            let status = response.code.unwrap_or_default();
            if (200..300).contains(&status) {
                return Answer::Open(length);
            }
            let reason = match response.reason {
                Some(reason) if !reason.is_empty() => {
                    format!(" ({})", crate::error::peer_text(reason.as_bytes()))
                }
                _ => String::new(),
            };
            Answer::Refused(Failure::new(
                ErrorKind::Proxy,
                format!(
                    "proxy answered {status} to CONNECT {}{reason}",
                    proxy.target
                ),
            ))
        }
        Ok(httparse::Status::Partial) if head.len() < MAX_HEAD => Answer::Partial,
        Ok(httparse::Status::Partial) => Answer::Refused(bad_answer(proxy, "a head over 16 KiB")),
        Err(error) => Answer::Refused(bad_answer(proxy, &error.to_string())),
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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    /// Runs `tunnel` against a proxy that reads the request and writes `answer` in pieces, with a
    /// pause between them; returns the outcome, the request the proxy read and what the client's
    /// stream holds after the tunnel opened (until the proxy closes).
    fn exchange(answer: &[&[u8]]) -> (Result<(), Failure>, String, Vec<u8>) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let answer: Vec<Vec<u8>> = answer.iter().map(|piece| piece.to_vec()).collect();
        runtime.block_on(async move {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let proxy = ProxyPlan {
                addr,
                target: "localhost:443".into(),
                request: b"CONNECT localhost:443 HTTP/1.1\r\nHost: localhost:443\r\n\r\n".to_vec(),
            };
            let server = tokio::spawn(async move {
                let (mut stream, _) = listener.accept().await.unwrap();
                let mut request = vec![0u8; proxy_request_len()];
                stream.read_exact(&mut request).await.unwrap();
                for piece in answer {
                    stream.write_all(&piece).await.unwrap();
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
                String::from_utf8(request).unwrap()
            });
            let mut stream = TcpStream::connect(addr).await.unwrap();
            let outcome = tunnel(&mut stream, &proxy).await;
            let request = server.await.unwrap();
            let mut rest = Vec::new();
            if outcome.is_ok() {
                stream.read_to_end(&mut rest).await.unwrap();
            }
            (outcome, request, rest)
        })
    }

    fn proxy_request_len() -> usize {
        b"CONNECT localhost:443 HTTP/1.1\r\nHost: localhost:443\r\n\r\n".len()
    }

    #[test]
    fn the_head_is_consumed_and_the_servers_first_bytes_are_left() {
        // The answer and the server's first bytes in one segment, then the head split mid-line.
        for answer in [
            &[b"HTTP/1.1 200 Connection established\r\n\r\n\x00\x00\x12\x04" as &[u8]][..],
            &[
                b"HTTP/1.1 200 Connection estab",
                b"lished\r\nProxy-agent: x\r",
                b"\n\r\nrest",
            ],
        ] {
            let (outcome, request, rest) = exchange(answer);
            assert_eq!(outcome, Ok(()));
            assert_eq!(
                request,
                "CONNECT localhost:443 HTTP/1.1\r\nHost: localhost:443\r\n\r\n"
            );
            let expected: &[u8] = if answer.len() == 1 {
                b"\x00\x00\x12\x04"
            } else {
                b"rest"
            };
            assert_eq!(rest, expected);
        }
    }

    #[test]
    fn refusals_and_bad_answers_are_proxy_errors_that_say_what_came() {
        for (answer, says) in [
            (
                &b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n"[..],
                "proxy answered 403 to CONNECT localhost:443 (Forbidden)",
            ),
            (
                b"HTTP/1.1 407 \r\n\r\n",
                "proxy answered 407 to CONNECT localhost:443",
            ),
            (b"SSH-2.0-OpenSSH\r\n\r\n", "sent a bad answer to CONNECT"),
            (
                b"HTTP/1.1 200 OK\r\n",
                "closed the connection without answering",
            ),
        ] {
            let (outcome, _, _) = exchange(&[answer]);
            let failure = outcome.unwrap_err();
            assert_eq!(failure.kind, ErrorKind::Proxy, "{}", failure.message);
            assert!(failure.message.contains(says), "{}", failure.message);
        }
        let endless = [&b"HTTP/1.1 200 OK\r\nx: "[..], &[b'y'; 20_000]].concat();
        let failure = exchange(&[&endless]).0.unwrap_err();
        assert!(
            failure.message.contains("over 16 KiB"),
            "{}",
            failure.message
        );
    }
}
