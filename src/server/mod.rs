//! The built-in target: one port serving HTTP/1.1 (keep-alive, pipelining), h2c by prior knowledge
//! and by `Upgrade: h2c`, or, with TLS, h2 and HTTP/1.1 chosen by ALPN, and HTTP/3 on the UDP port
//! of the same number (announced by `Alt-Svc` on the TLS responses).
//!
//! `h2load-rs serve --unix PATH` serves the same on a unix socket (no HTTP/3).
//!
//! Routes: `/` and `/ping` → `pong`; `/bytes/N` → N bytes, streamed; `/delay/MS` → `pong` after MS
//! milliseconds (decimals allowed, precise to microseconds; the `x-delay-applied-us` header says
//! how long it was); `/status/CODE` → that status, empty body; `POST /echo` → the request body.

mod echo;
mod events;
mod faults;
mod gate;
mod grpc_last;
mod h2c_upgrade;
mod h3;
mod idle;
mod routes;
mod sent;
mod unix;
mod watched;
mod windows;

use std::convert::Infallible;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result};
use http::header::ALT_SVC;
use http::{HeaderValue, Request, Response};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpSocket, UnixListener};
use tokio_rustls::TlsAcceptor;

use echo::EchoBudget;
pub(crate) use faults::{Fault, Speaks};
use gate::{AcceptFailures, Gate, Place};
pub(crate) use grpc_last::GrpcReply;
use idle::{Activity, Tracked};
pub(crate) use routes::Slow;
use routes::TargetBody;
pub use routes::{AppliedDelays, Behaviour, Stall};
pub use sent::{SentBytes, SentTotals};
pub(crate) use unix::listen_unix;
use watched::Watched;
use windows::{Sizes, Window, Windows};

/// Connections served at once by default (`serve --max-connections`): seed 002's 16,000 fit.
pub(crate) const DEFAULT_MAX_CONNECTIONS: usize = 20_000;

/// HTTP/2 and QUIC receive windows of the target: what a connection's clients may send that it
/// has not read yet (an `/echo` waiting for its budget, a body a delayed route reads later), for
/// the connections within the window budget (`windows`). Small, as they bound each connection's
/// memory; downloads, which the large windows were for, go the
/// other way (the client's windows). 256 KiB and 1 MiB made h2c uploads of 1 MiB bodies 40%
/// slower than 16 MiB and 1 GiB (debug build, 2 connections x 4 streams); these, about 15%.
const STREAM_WINDOW: u32 = 1 << 20;
const CONNECTION_WINDOW: u32 = 4 << 20;

/// Open-file descriptors `serve` keeps out of `--max-connections`: the cap is lowered to the
/// open-file limit minus these.
pub(crate) const RESERVED_DESCRIPTORS: u64 = 256;

/// How long a connection may stay idle or stuck by default (`serve --idle-timeout`): hyper's
/// default wait for an HTTP/1.1 request head.
pub(crate) const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// How the target behaves.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Connections served at once, over every listener (TCP, unix, QUIC); more are closed at
    /// once (QUIC: refused).
    pub max_connections: usize,
    /// Close a connection after this long without a request in progress, or without a byte
    /// moving while no answer is being decided (see `idle`); also the longest wait for an
    /// HTTP/1.1 request head and for a TLS handshake.
    pub idle_timeout: Duration,
    /// SETTINGS_MAX_CONCURRENT_STREAMS announced to h2 clients, and the concurrent bidirectional
    /// streams allowed to HTTP/3 clients.
    pub max_concurrent_streams: u32,
    /// Serve TLS with this configuration instead of cleartext.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// With `tls`, also serve HTTP/3 on the UDP port of the TLS listener (see [`bind`]).
    pub h3: bool,
    /// Delays and stalls.
    pub behaviour: Behaviour,
    /// Misbehave this way instead of serving the routes.
    pub fault: Option<Fault>,
    /// Count every byte written over TCP into this (tests compare it with the client's `traffic:`
    /// line); HTTP/3's UDP traffic is not counted.
    pub sent: Option<Arc<SentBytes>>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_concurrent_streams: 1000,
            tls: None,
            h3: false,
            behaviour: Behaviour::default(),
            fault: None,
            sent: None,
        }
    }
}

/// The target's sockets: a TCP listener and, for HTTP/3, a UDP socket on the same port number.
#[derive(Debug)]
pub(crate) struct Sockets {
    tcp: TcpListener,
    udp: Option<UdpSocket>,
}

impl Sockets {
    /// The TCP listener's address.
    pub(crate) fn local_addr(&self) -> io::Result<SocketAddr> {
        self.tcp.local_addr()
    }

    /// The UDP port HTTP/3 is served on, if it is.
    pub(crate) fn h3_port(&self) -> Option<u16> {
        self.udp
            .as_ref()
            .and_then(|udp| udp.local_addr().ok())
            .map(|addr| addr.port())
    }
}

/// How often [`bind`] with port 0 tries another TCP port when the UDP port of the same number is
/// taken (rare: the kernel picks ephemeral TCP and UDP ports independently).
const UDP_TWIN_ATTEMPTS: usize = 8;

/// Binds the target's sockets on `addr`: TCP (see [`listen`]) and, when `udp`, UDP on the same
/// port number. With port 0 a free TCP port whose UDP twin is taken is given up for another.
/// Must be called within a tokio runtime.
pub(crate) fn bind(addr: SocketAddr, udp: bool) -> io::Result<Sockets> {
    let mut attempts = 0;
    loop {
        let tcp = listen(addr)?;
        if !udp {
            return Ok(Sockets { tcp, udp: None });
        }
        let port = tcp.local_addr()?.port();
        match h3::udp_socket(SocketAddr::new(addr.ip(), port)) {
            Ok(udp) => {
                return Ok(Sockets {
                    tcp,
                    udp: Some(udp),
                })
            }
            Err(_) if addr.port() == 0 && attempts + 1 < UDP_TWIN_ATTEMPTS => attempts += 1,
            Err(error) => {
                return Err(io::Error::new(
                    error.kind(),
                    format!("UDP port {port} for HTTP/3: {error}"),
                ))
            }
        }
    }
}

/// Serves connections on `sockets` until the runtime shuts down: HTTP/3 on the UDP socket, if
/// any, when `options` have TLS and no fault.
pub(crate) async fn serve(sockets: Sockets, options: ServeOptions) -> io::Result<()> {
    let Sockets { tcp, udp } = sockets;
    let gate = Arc::new(Gate::new(options.max_connections));
    let echo = EchoBudget::new();
    let windows = Windows::new();
    let mut alt_svc = None;
    if let (Some(udp), Some(tls), None) = (udp, &options.tls, options.fault) {
        let port = udp.local_addr()?.port();
        let configs = h3::Configs::new(tls, &options)?;
        let endpoint = h3::endpoint(udp, &configs)?;
        alt_svc = Some(HeaderValue::try_from(format!("h3=\":{port}\"; ma=86400")).expect("ASCII"));
        tokio::spawn(h3::serve(
            endpoint,
            configs,
            options.clone(),
            gate.clone(),
            echo.clone(),
            windows.clone(),
        ));
    }
    let server = Server::new(&options, alt_svc, echo, windows);
    serve_tcp(tcp, options.fault, server, gate).await
}

/// Accepts TCP connections on `listener` and serves them with `server`, or with `fault`.
async fn serve_tcp(
    listener: TcpListener,
    fault: Option<Fault>,
    server: Server,
    gate: Arc<Gate>,
) -> io::Result<()> {
    let mut failures = AcceptFailures::default();
    let mut accepted = 0u64;
    loop {
        let (stream, place) = admitted(|| listener.accept(), &gate, &mut failures).await;
        accepted += 1;
        let _ = stream.set_nodelay(true);
        match fault {
            // The connections `drop-every` spares are served as usual.
            Some(Fault::DropEvery(every)) if !accepted.is_multiple_of(every) => {
                server.spawn(stream, place)
            }
            Some(fault) => {
                tokio::spawn(async move {
                    let _place = place;
                    faults::serve(stream, fault).await
                });
            }
            None => server.spawn(stream, place),
        }
    }
}

/// Serves the routes on a unix socket until the runtime shuts down: HTTP/1.1 and h2c, or with
/// TLS h2 and HTTP/1.1 by ALPN (no HTTP/3, no faults: those need UDP and TCP).
pub(crate) async fn serve_unix(listener: UnixListener, options: ServeOptions) -> io::Result<()> {
    let server = Server::new(&options, None, EchoBudget::new(), Windows::new());
    let gate = Gate::new(options.max_connections);
    let mut failures = AcceptFailures::default();
    loop {
        let (stream, place) = admitted(|| listener.accept(), &gate, &mut failures).await;
        server.spawn(stream, place);
    }
}

/// The next connection `accept` gives that gets a place at `gate`. One over the cap is closed at
/// once; a failed accept (out of descriptors, say) waits instead of spinning.
async fn admitted<S, Peer, A, F>(
    accept: F,
    gate: &Gate,
    failures: &mut AcceptFailures,
) -> (S, Place)
where
    F: Fn() -> A,
    A: std::future::Future<Output = io::Result<(S, Peer)>>,
{
    loop {
        match accept().await {
            Ok((stream, _)) => {
                failures.succeeded();
                if let Some(place) = gate.admit() {
                    return (stream, place);
                }
            }
            Err(error) => failures.failed(error).await,
        }
    }
}

/// What serving a connection needs, whatever socket it came on.
struct Server {
    /// For connections with full receive windows, and for those beyond the window budget.
    full: Arc<auto::Builder<TokioExecutor>>,
    floor: Arc<auto::Builder<TokioExecutor>>,
    windows: Windows,
    acceptor: Option<TlsAcceptor>,
    max_streams: u32,
    front: Front,
    sent: Option<Arc<SentBytes>>,
    idle_timeout: Duration,
}

impl Server {
    /// The server `options` describe; `alt_svc` is added to every response, `/echo` shares
    /// `echo` and the receive windows share `windows`.
    fn new(
        options: &ServeOptions,
        alt_svc: Option<HeaderValue>,
        echo: EchoBudget,
        windows: Windows,
    ) -> Server {
        Server {
            full: Arc::new(auto_builder(options, Sizes::FULL)),
            floor: Arc::new(auto_builder(options, Sizes::FLOOR)),
            windows,
            acceptor: options.tls.clone().map(TlsAcceptor::from),
            max_streams: options.max_concurrent_streams,
            front: Front {
                behaviour: options.behaviour.clone(),
                alt_svc,
                echo,
            },
            sent: options.sent.clone(),
            idle_timeout: options.idle_timeout,
        }
    }

    /// Serves `stream`, which holds `place` under the cap, in a task of its own: TLS first when
    /// configured.
    fn spawn<S>(&self, stream: S, place: Place)
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let window = self.windows.reserve();
        let builder = match window.sizes() {
            Sizes::FULL => self.full.clone(),
            _ => self.floor.clone(),
        };
        let acceptor = self.acceptor.clone();
        let max_streams = self.max_streams;
        let sent = self.sent.clone();
        let idle_timeout = self.idle_timeout;
        let conn = Conn {
            front: Front {
                echo: self.front.echo.for_connection(),
                ..self.front.clone()
            },
            activity: Arc::new(Activity::default()),
            idle_timeout,
            held: Arc::new((place, window)),
        };
        // A client that goes away mid-request is normal under load: nothing below is reported.
        tokio::spawn(async move {
            match acceptor {
                Some(acceptor) => {
                    // A handshake that never ends holds its place for the idle timeout only.
                    let handshake = tokio::time::timeout(idle_timeout, acceptor.accept(stream));
                    if let Ok(Ok(stream)) = handshake.await {
                        serve_counted(&builder, stream, None, conn, sent).await;
                    }
                }
                None => serve_counted(&builder, stream, Some(max_streams), conn, sent).await,
            }
        });
    }
}

/// What every response of a TCP connection gets: the target's behaviour, the `Alt-Svc` header
/// announcing HTTP/3, if it is served, and the budget of `/echo`.
#[derive(Clone)]
struct Front {
    behaviour: Behaviour,
    alt_svc: Option<HeaderValue>,
    echo: EchoBudget,
}

/// One connection: what its responses get, what it is doing, and its place under the cap and
/// its receive windows (kept by the HTTP/2 connection an `Upgrade: h2c` turns it into).
#[derive(Clone)]
struct Conn {
    front: Front,
    activity: Arc<Activity>,
    idle_timeout: Duration,
    held: Arc<(Place, Window)>,
}

impl Conn {
    /// Answers `request` with the routes; it is in progress until its response body ends.
    async fn answer(
        self,
        request: Request<Incoming>,
    ) -> Result<Response<Tracked<TargetBody>>, Infallible> {
        let in_progress = self.activity.begin();
        let deciding = self.activity.deciding();
        let mut response = routes::route(request, self.front.behaviour, &self.front.echo).await?;
        drop(deciding);
        if let Some(alt_svc) = self.front.alt_svc {
            response.headers_mut().insert(ALT_SVC, alt_svc);
        }
        Ok(response.map(|body| Tracked::new(body, in_progress)))
    }

    /// Drives `connection` (hyper's, serving this connection) until it ends or is quiet for the
    /// idle timeout, then shuts it down gracefully.
    async fn serve_until_quiet<C: std::future::Future>(
        &self,
        connection: C,
        shutdown: impl FnOnce(std::pin::Pin<&mut C>),
    ) {
        idle::serve_until_quiet(connection, &self.activity, self.idle_timeout, shutdown).await;
    }
}

/// Serves one connection, counting what it writes when `sent` is given (after TLS, as the
/// client counts what it reads).
async fn serve_counted<I>(
    builder: &auto::Builder<TokioExecutor>,
    io: I,
    upgrade_streams: Option<u32>,
    conn: Conn,
    sent: Option<Arc<SentBytes>>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    match sent {
        Some(sent) => {
            let io = Watched::new(io, sent::Counter::new(sent));
            serve_connection(builder, io, upgrade_streams, conn).await;
        }
        None => serve_connection(builder, io, upgrade_streams, conn).await,
    }
}

/// Serves one connection; `upgrade_streams` enables `Upgrade: h2c` (cleartext only) with that stream limit.
async fn serve_connection<I>(
    builder: &auto::Builder<TokioExecutor>,
    io: I,
    upgrade_streams: Option<u32>,
    conn: Conn,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let io = Watched::new(io, conn.activity.clone());
    let service_conn = conn.clone();
    let service = service_fn(move |request: Request<Incoming>| {
        let conn = service_conn.clone();
        async move {
            match upgrade_streams {
                Some(max_streams) if h2c_upgrade::is_requested(&request) => {
                    let in_progress = conn.activity.begin();
                    let response = h2c_upgrade::accept(request, max_streams, conn);
                    Ok::<_, Infallible>(response.map(|body| Tracked::new(body, in_progress)))
                }
                _ => conn.answer(request).await,
            }
        }
    });
    let connection = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
    conn.serve_until_quiet(connection, |connection| connection.graceful_shutdown())
        .await;
}

/// The server of TCP and unix connections: HTTP/1.1 and HTTP/2 with receive windows of `sizes`.
fn auto_builder(options: &ServeOptions, sizes: Sizes) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .keep_alive(true)
        .header_read_timeout(options.idle_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(options.max_concurrent_streams)
        .initial_stream_window_size(sizes.stream)
        .initial_connection_window_size(sizes.connection);
    builder
}

/// The HTTP/2 server for a connection upgraded from HTTP/1.1, configured like the main one.
fn http2_builder(
    max_streams: u32,
    sizes: Sizes,
) -> hyper::server::conn::http2::Builder<TokioExecutor> {
    let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    builder
        .timer(TokioTimer::new())
        .max_concurrent_streams(max_streams)
        .initial_stream_window_size(sizes.stream)
        .initial_connection_window_size(sizes.connection);
    builder
}

/// Listens on `addr` with a deep accept queue, so thousands of clients connecting at once are not
/// held back by SYN retransmits (the kernel caps the depth at `net.core.somaxconn`).
/// Must be called within a tokio runtime.
pub(crate) fn listen(addr: SocketAddr) -> io::Result<TcpListener> {
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
    let udp = options.h3 && options.tls.is_some();
    let sockets = runtime
        .block_on(async { bind(SocketAddr::from(([127, 0, 0, 1], 0)), udp) })
        .context("cannot listen for the built-in target")?;
    let addr = sockets.local_addr()?;
    std::thread::Builder::new()
        .name("h2load-rs-target".to_owned())
        .spawn(move || runtime.block_on(serve(sockets, options)))
        .context("cannot start the built-in target's thread")?;
    Ok(addr)
}

/// The response type of every route.
type TargetResponse = Response<TargetBody>;

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn port_zero_binds_udp_on_the_tcp_port() {
        let runtime = runtime();
        let _guard = runtime.enter();
        for _ in 0..20 {
            let sockets = bind(SocketAddr::from(([127, 0, 0, 1], 0)), true).unwrap();
            assert_eq!(
                sockets.h3_port(),
                Some(sockets.local_addr().unwrap().port())
            );
        }
        let tcp_only = bind(SocketAddr::from(([127, 0, 0, 1], 0)), false).unwrap();
        assert_eq!(tcp_only.h3_port(), None);
    }

    #[test]
    fn a_fixed_port_whose_udp_side_is_taken_fails_naming_udp() {
        let runtime = runtime();
        let _guard = runtime.enter();
        // Hold a free UDP port first (no window for another test to take it); its TCP twin is
        // almost always free too, and another port is tried when it is not.
        for _ in 0..20 {
            let udp = UdpSocket::bind(("127.0.0.1", 0)).unwrap();
            let port = udp.local_addr().unwrap().port();
            let error = bind(SocketAddr::from(([127, 0, 0, 1], port)), true).unwrap_err();
            let message = error.to_string();
            if !message.starts_with("UDP port") && error.kind() == io::ErrorKind::AddrInUse {
                continue; // the TCP side of this port was taken
            }
            assert_eq!(error.kind(), io::ErrorKind::AddrInUse);
            assert!(
                message.starts_with(&format!("UDP port {port} for HTTP/3: ")),
                "{error}"
            );
            return;
        }
        panic!("no free TCP port beside 20 free UDP ports");
    }
}
