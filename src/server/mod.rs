//! The built-in target: one port serving HTTP/1.1 (keep-alive, pipelining), h2c by prior knowledge
//! and by `Upgrade: h2c`, or, with TLS, h2 and HTTP/1.1 chosen by ALPN.
//!
//! Routes: `/` and `/ping` → `pong`; `/bytes/N` → N bytes, streamed; `/delay/MS` → `pong` after MS
//! milliseconds (decimals allowed, precise to microseconds; the `x-delay-applied-us` header says
//! how long it was); `/status/CODE` → that status, empty body; `POST /echo` → the request body.

mod faults;
mod h2c_upgrade;
mod routes;
mod sent;

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result};
use http::{Request, Response};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpSocket};
use tokio_rustls::TlsAcceptor;

pub use faults::Fault;
use routes::TargetBody;
pub use routes::{Behaviour, Stall};
pub use sent::{SentBytes, SentTotals};

/// HTTP/2 receive windows of the target: large, so uploads to `/echo` are not throttled.
const STREAM_WINDOW: u32 = 16 << 20;
const CONNECTION_WINDOW: u32 = (1 << 30) - 1;

/// How the target behaves.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// SETTINGS_MAX_CONCURRENT_STREAMS announced to h2 clients.
    pub max_concurrent_streams: u32,
    /// Serve TLS with this configuration instead of cleartext.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Delays and stalls.
    pub behaviour: Behaviour,
    /// Misbehave this way instead of serving the routes.
    pub fault: Option<Fault>,
    /// Count every byte written into this (tests compare it with the client's `traffic:` line).
    pub sent: Option<Arc<SentBytes>>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            max_concurrent_streams: 1000,
            tls: None,
            behaviour: Behaviour::default(),
            fault: None,
            sent: None,
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
        .initial_stream_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW);
    let builder = Arc::new(builder);
    let acceptor = options.tls.clone().map(TlsAcceptor::from);
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(error) => {
                // Out of descriptors and similar: wait for connections to close instead of spinning.
                errln!("h2load-rs serve: accept failed: {error}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        if let Some(fault) = options.fault {
            tokio::spawn(faults::serve(stream, fault));
            continue;
        }
        let builder = builder.clone();
        let acceptor = acceptor.clone();
        let max_streams = options.max_concurrent_streams;
        let behaviour = options.behaviour;
        let sent = options.sent.clone();
        // A client that goes away mid-request is normal under load: nothing below is reported.
        tokio::spawn(async move {
            match acceptor {
                Some(acceptor) => {
                    if let Ok(stream) = acceptor.accept(stream).await {
                        serve_counted(&builder, stream, None, behaviour, sent).await;
                    }
                }
                None => serve_counted(&builder, stream, Some(max_streams), behaviour, sent).await,
            }
        });
    }
}

/// Serves one connection, counting what it writes when `sent` is given (after TLS, as the
/// client counts what it reads).
async fn serve_counted<I>(
    builder: &auto::Builder<TokioExecutor>,
    io: I,
    upgrade_streams: Option<u32>,
    behaviour: Behaviour,
    sent: Option<Arc<SentBytes>>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    match sent {
        Some(sent) => {
            let io = sent::CountingIo::new(io, sent);
            serve_connection(builder, io, upgrade_streams, behaviour).await;
        }
        None => serve_connection(builder, io, upgrade_streams, behaviour).await,
    }
}

/// Serves one connection; `upgrade_streams` enables `Upgrade: h2c` (cleartext only) with that stream limit.
async fn serve_connection<I>(
    builder: &auto::Builder<TokioExecutor>,
    io: I,
    upgrade_streams: Option<u32>,
    behaviour: Behaviour,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |request: Request<Incoming>| async move {
        match upgrade_streams {
            Some(max_streams) if h2c_upgrade::is_requested(&request) => {
                Ok::<_, Infallible>(h2c_upgrade::accept(request, max_streams, behaviour))
            }
            _ => routes::route(request, behaviour).await,
        }
    });
    let _ = builder
        .serve_connection_with_upgrades(TokioIo::new(io), service)
        .await;
}

/// The HTTP/2 server for a connection upgraded from HTTP/1.1, configured like the main one.
fn http2_builder(max_streams: u32) -> hyper::server::conn::http2::Builder<TokioExecutor> {
    let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    builder
        .timer(TokioTimer::new())
        .max_concurrent_streams(max_streams)
        .initial_stream_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW);
    builder
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

/// The response type of every route.
type TargetResponse = Response<TargetBody>;
