//! The built-in target: one port serving HTTP/1.1 (keep-alive, pipelining) and h2c by prior knowledge.
//!
//! Routes: `/` and `/ping` → `pong`; `/bytes/N` → N bytes, streamed; `/delay/MS` → `pong` after MS
//! milliseconds; `/status/CODE` → that status, empty body; `POST /echo` → the request body.

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use anyhow::{Context as _, Result};
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpSocket};

/// Bytes served by `/bytes/N`, sliced without copying.
static FILLER: [u8; 64 * 1024] = [b'x'; 64 * 1024];

/// How the target behaves.
#[derive(Debug, Clone, Copy)]
pub struct ServeOptions {
    /// SETTINGS_MAX_CONCURRENT_STREAMS announced to h2 clients.
    pub max_concurrent_streams: u32,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            max_concurrent_streams: 1000,
        }
    }
}

/// Accepts connections on `listener` and serves them until the runtime shuts down.
pub async fn serve(listener: TcpListener, options: ServeOptions) -> io::Result<()> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).keep_alive(true);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(options.max_concurrent_streams)
        .initial_stream_window_size(16 << 20)
        .initial_connection_window_size((1 << 30) - 1);
    let builder = Arc::new(builder);
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(error) => {
                // Out of descriptors and similar: wait for connections to close instead of spinning.
                eprintln!("h2load-rs serve: accept failed: {error}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let builder = builder.clone();
        tokio::spawn(async move {
            // A client that goes away mid-request is normal under load; nothing to report.
            let _ = builder
                .serve_connection(TokioIo::new(stream), service_fn(route))
                .await;
        });
    }
}

/// Listens on `addr` with a deep accept queue, so thousands of clients connecting at once are not
/// held back by SYN retransmits (the kernel caps the depth at `net.core.somaxconn`).
/// Must be called within a tokio runtime.
pub fn listen(addr: SocketAddr) -> io::Result<TcpListener> {
    const BACKLOG: u32 = 65_535;
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

/// Starts the target on a loopback port in a background thread with its own runtime; returns its address.
pub fn spawn_background(workers: usize, options: ServeOptions) -> Result<SocketAddr> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers.max(1))
        .thread_name("h2load-rs-target")
        .enable_all()
        .build()
        .context("cannot start the built-in target's runtime")?;
    let listener = runtime
        .block_on(async { listen(SocketAddr::from(([127, 0, 0, 1], 0))) })
        .context("cannot listen for the built-in target")?;
    let addr = listener.local_addr()?;
    std::thread::Builder::new()
        .name("h2load-rs-target".to_owned())
        .spawn(move || runtime.block_on(serve(listener, options)))
        .context("cannot start the built-in target's thread")?;
    Ok(addr)
}

async fn route(request: Request<Incoming>) -> Result<Response<TargetBody>, Infallible> {
    let path = request.uri().path();
    let mut segments = path.trim_start_matches('/').splitn(2, '/');
    let response = match (request.method(), segments.next(), segments.next()) {
        (_, Some("" | "ping"), None) => text(StatusCode::OK, "pong"),
        (_, Some("bytes"), Some(count)) => match count.parse::<u64>() {
            Ok(count) => Response::new(TargetBody::Filler { left: count }),
            Err(_) => text(StatusCode::BAD_REQUEST, "/bytes/N takes a byte count"),
        },
        (_, Some("delay"), Some(millis)) => match millis.parse::<u64>() {
            Ok(millis) => {
                tokio::time::sleep(Duration::from_millis(millis)).await;
                text(StatusCode::OK, "pong")
            }
            Err(_) => text(StatusCode::BAD_REQUEST, "/delay/MS takes milliseconds"),
        },
        (_, Some("status"), Some(code)) => match code
            .parse::<u16>()
            .ok()
            .filter(|code| (200..600).contains(code))
        {
            Some(code) => {
                let mut response = Response::new(TargetBody::Static(None));
                *response.status_mut() = StatusCode::from_u16(code).expect("range checked");
                response
            }
            None => text(
                StatusCode::BAD_REQUEST,
                "/status/CODE takes a status from 200 to 599",
            ),
        },
        (&Method::POST, Some("echo"), None) => Response::new(TargetBody::Echo(request.into_body())),
        (_, Some("echo"), None) => text(StatusCode::METHOD_NOT_ALLOWED, "POST a body to /echo"),
        _ => text(StatusCode::NOT_FOUND, "not found"),
    };
    Ok(response)
}

fn text(status: StatusCode, body: &'static str) -> Response<TargetBody> {
    let mut response = Response::new(TargetBody::Static(Some(Bytes::from_static(
        body.as_bytes(),
    ))));
    *response.status_mut() = status;
    response
}

/// Response bodies of the target, without boxing.
enum TargetBody {
    /// A fixed body (or none).
    Static(Option<Bytes>),
    /// `left` filler bytes, sent in 64 KiB slices of a static buffer.
    Filler { left: u64 },
    /// The request's own body.
    Echo(Incoming),
}

impl Body for TargetBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        match self.get_mut() {
            TargetBody::Static(bytes) => {
                Poll::Ready(bytes.take().map(|bytes| Ok(Frame::data(bytes))))
            }
            TargetBody::Filler { left } => {
                if *left == 0 {
                    return Poll::Ready(None);
                }
                let take = (*left).min(FILLER.len() as u64) as usize;
                *left -= take as u64;
                Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(&FILLER[..take])))))
            }
            TargetBody::Echo(incoming) => Pin::new(incoming).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            TargetBody::Static(bytes) => bytes.is_none(),
            TargetBody::Filler { left } => *left == 0,
            TargetBody::Echo(incoming) => incoming.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            TargetBody::Static(bytes) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
            TargetBody::Filler { left } => SizeHint::with_exact(*left),
            TargetBody::Echo(incoming) => incoming.size_hint(),
        }
    }
}
