//! Sockets: connecting (TCP, unix sockets, proxy tunnels), and the tap that counts received bytes (and HTTP/2 header frames) on the way in.

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use crate::io::driver::{Arrivals, LowWater};
use crate::io::proxy;
use crate::io::stamped::StampedTcp;
use crate::io::uring::{set_receive_low_water, Peer, RingStream, Uring};
use crate::observe::trace::ConnTrace;
use crate::plan::route::Route;
use crate::plan::TlsPlan;
use crate::recorder::{ErrorKind, Failure, Symptom, WireMeter};
use crate::tls::TlsInfo;

/// An established connection: plain or TLS, over TCP (maybe through a proxy's tunnel) or a unix
/// socket.
pub(crate) enum Transport {
    /// Cleartext.
    Tcp(StampedTcp),
    /// TLS (boxed: the session state is large).
    Tls(Box<TlsStream<StampedTcp>>),
    /// Cleartext on a unix socket.
    Unix(UnixStream),
    /// TLS on a unix socket.
    UnixTls(Box<TlsStream<UnixStream>>),
    /// TLS whose handshake goes on while requests leave as early data (`--tls-early-data`).
    EarlyTls(Box<EarlyTls>),
    /// Cleartext on the thread's io_uring (`--io uring`; TCP or a unix socket).
    Ring(RingStream),
    /// TLS on the thread's io_uring.
    RingTls(Box<TlsStream<RingStream>>),
}

/// A TLS stream sending early data: tokio-rustls finishes the handshake (and sends again what
/// the server rejected) only when flushed, and reads nothing until then, so a read flushes first.
pub(crate) struct EarlyTls {
    stream: TlsStream<StampedTcp>,
    /// When the handshake ended (`None`: still under way).
    settled: Option<Instant>,
    /// Told the handshake's outcome when it ends ([`Transport::on_handshake_settled`]).
    on_settled: Option<Box<dyn FnOnce(TlsOutcome)>>,
}

/// What the TLS handshake of a connection came to, told when it ends.
#[derive(Debug)]
pub(crate) struct TlsOutcome {
    /// It resumed a session.
    pub(crate) resumed: bool,
    /// Whether the server accepted the early data sent (`None`: none was sent).
    pub(crate) early_data: Option<bool>,
    /// When the handshake ended, if after the connection was handed over (early data).
    pub(crate) settled: Option<Instant>,
    /// What it negotiated, for a connection handed over before the handshake ended.
    pub(crate) late_info: Option<TlsInfo>,
}

impl TlsOutcome {
    /// The outcome of a handshake that ended before the connection was handed over.
    fn settled(resumed: bool) -> Self {
        TlsOutcome {
            resumed,
            early_data: None,
            settled: None,
            late_info: None,
        }
    }
}

impl Transport {
    /// Tells `report` what the TLS handshake came to as soon as it has ended: at once if it has
    /// (TLS), when the first read finishes it (early data), never for cleartext or a handshake
    /// that never ends. Not when the connection ends: a connection still open when a run
    /// abandons its drain never ends, and its handshake still counts.
    pub(crate) fn on_handshake_settled(&mut self, report: impl FnOnce(TlsOutcome) + 'static) {
        match (self.tls_outcome(), self) {
            (Some(outcome), _) => report(outcome),
            (None, Transport::EarlyTls(early)) => early.on_settled = Some(Box::new(report)),
            (None, _) => {}
        }
    }

    /// How many bytes of early data the connection may still send: `None` unless it sends early
    /// data (a resumed session whose ticket allows it, handed over before the handshake ends).
    pub(crate) fn early_data_room(&mut self) -> Option<usize> {
        match self {
            Transport::EarlyTls(early) if early.settled.is_none() => early
                .stream
                .get_mut()
                .1
                .early_data()
                .map(|early| early.bytes_left()),
            _ => None,
        }
    }

    /// What the TLS handshake came to: `None` for cleartext, or while it goes on.
    fn tls_outcome(&self) -> Option<TlsOutcome> {
        match self {
            Transport::Tcp(_) | Transport::Unix(_) | Transport::Ring(_) => None,
            Transport::Tls(stream) => Some(TlsOutcome::settled(resumed(stream.get_ref().1))),
            Transport::UnixTls(stream) => Some(TlsOutcome::settled(resumed(stream.get_ref().1))),
            Transport::RingTls(stream) => Some(TlsOutcome::settled(resumed(stream.get_ref().1))),
            Transport::EarlyTls(early) => early.outcome(),
        }
    }
}

/// Whether `session`'s handshake resumed a session.
fn resumed(session: &rustls::ClientConnection) -> bool {
    session.handshake_kind() == Some(rustls::HandshakeKind::Resumed)
}

impl EarlyTls {
    /// What the handshake came to, once it has ended.
    fn outcome(&self) -> Option<TlsOutcome> {
        let session = self.stream.get_ref().1;
        self.settled.map(|settled| TlsOutcome {
            resumed: resumed(session),
            early_data: Some(session.is_early_data_accepted()),
            settled: Some(settled),
            late_info: Some(TlsInfo::of(session)),
        })
    }
}

/// A connection ready for an engine, with what its TLS handshake negotiated.
pub(crate) struct Established {
    /// The byte stream.
    pub(crate) transport: Transport,
    /// The TLS session's parameters (None for cleartext, and while early data leaves: the
    /// handshake has not ended).
    pub(crate) tls: Option<TlsInfo>,
    /// Through a proxy: how long the TCP connection to it and its answer to `CONNECT` took.
    pub(crate) proxy_time: Option<Duration>,
}

/// Connects by `route` (and completes the TLS handshake when `tls` is given), all within `timeout`,
/// on the thread's io_uring when there is one. A proxy's tunnel and TLS early data stay on epoll
/// (the tunnel peeks at the proxy's answer; early data needs tokio-rustls' TCP stream).
pub(crate) async fn establish(
    route: &Route,
    tls: Option<&TlsPlan>,
    timeout: Option<Duration>,
    ring: Option<&Rc<Uring>>,
) -> Result<Established, Failure> {
    let attempt = async {
        match (route, ring) {
            (Route::Direct(addr), Some(ring)) if !tls.is_some_and(|tls| tls.early_data) => {
                let stream = ring
                    .connect(&Peer::Tcp(*addr))
                    .await
                    .map_err(|error| connect_failure(error, "", &addr.to_string()))?;
                on_ring(stream, tls, route).await
            }
            (Route::Unix(path), Some(ring)) => {
                let stream = ring
                    .connect(&Peer::Unix(path))
                    .await
                    .map_err(|error| unix_failure(path, &error))?;
                on_ring(stream, tls, route).await
            }
            (Route::Direct(addr), _) => {
                let stream = connect_tcp(*addr, "").await?;
                over_tcp(stream, tls, route, None).await
            }
            (Route::Unix(path), None) => {
                let stream = UnixStream::connect(path)
                    .await
                    .map_err(|error| unix_failure(path, &error))?;
                Ok(match tls {
                    None => Established {
                        transport: Transport::Unix(stream),
                        tls: None,
                        proxy_time: None,
                    },
                    Some(tls) => {
                        // No early data on unix sockets (the plan refuses the pair).
                        let stream = handshake(stream, tls, route, false).await?;
                        Established {
                            tls: Some(TlsInfo::of(stream.get_ref().1)),
                            transport: Transport::UnixTls(Box::new(stream)),
                            proxy_time: None,
                        }
                    }
                })
            }
            (Route::Proxy(proxy), _) => {
                let began = Instant::now();
                let mut stream = connect_tcp(proxy.addr, "proxy ").await?;
                proxy::tunnel(&mut stream, proxy).await?;
                over_tcp(stream, tls, route, Some(began.elapsed())).await
            }
        }
    };
    match timeout {
        Some(limit) => tokio::time::timeout(limit, attempt)
            .await
            .unwrap_or_else(|_| {
                Err(Failure::new(
                    ErrorKind::ConnectTimeout,
                    format!("connecting to {route} timed out after {limit:?}"),
                ))
            }),
        None => attempt.await,
    }
}

/// A connection to unix socket `path` failed.
fn unix_failure(path: &std::path::Path, error: &io::Error) -> Failure {
    let failure = Failure::new(
        ErrorKind::Connect,
        format!("cannot connect to unix socket {}: {error}", path.display()),
    );
    match error.kind() {
        io::ErrorKind::ConnectionRefused | io::ErrorKind::NotFound => {
            failure.showing(Symptom::Refused)
        }
        _ => failure,
    }
}

/// A connection to `addr` (a `what` such as "proxy " names it) failed.
fn connect_failure(error: io::Error, what: &str, addr: &str) -> Failure {
    match error.raw_os_error() {
        // EMFILE / ENFILE: this process (or the system) is out of file descriptors.
        Some(23 | 24) => Failure::new(
            ErrorKind::TooManyOpenFiles,
            format!("cannot connect to {what}{addr}: out of file descriptors ({error}); raise the limit with `ulimit -n`"),
        ),
        _ => {
            let failure = Failure::new(ErrorKind::Connect, format!("cannot connect to {what}{addr}: {error}"));
            match error.kind() {
                io::ErrorKind::ConnectionRefused => failure.showing(Symptom::Refused),
                _ => failure,
            }
        }
    }
}

/// Opens a TCP connection to `addr` (a `what` such as "proxy " names it in errors).
async fn connect_tcp(addr: SocketAddr, what: &str) -> Result<TcpStream, Failure> {
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|error| connect_failure(error, what, &addr.to_string()))?;
    // Best effort: a socket that refuses NODELAY still carries requests.
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

/// Completes a connection on the ring: TLS when `tls` is given.
async fn on_ring(
    stream: RingStream,
    tls: Option<&TlsPlan>,
    route: &Route,
) -> Result<Established, Failure> {
    let Some(tls) = tls else {
        return Ok(Established {
            transport: Transport::Ring(stream),
            tls: None,
            proxy_time: None,
        });
    };
    let stream = handshake(stream, tls, route, false).await?;
    Ok(Established {
        tls: Some(TlsInfo::of(stream.get_ref().1)),
        transport: Transport::RingTls(Box::new(stream)),
        proxy_time: None,
    })
}

/// Completes a TCP connection: TLS when `tls` is given. From here on its reads are stamped with
/// their arrival (a tunnel's `CONNECT` answer is not a response).
async fn over_tcp(
    stream: TcpStream,
    tls: Option<&TlsPlan>,
    route: &Route,
    proxy_time: Option<Duration>,
) -> Result<Established, Failure> {
    let stream = StampedTcp::new(stream);
    let Some(tls) = tls else {
        return Ok(Established {
            transport: Transport::Tcp(stream),
            tls: None,
            proxy_time,
        });
    };
    let stream = handshake(stream, tls, route, tls.early_data).await?;
    // Early data: tokio-rustls hands the stream over at once, the handshake still going.
    if stream.get_ref().1.is_handshaking() {
        return Ok(Established {
            tls: None,
            transport: Transport::EarlyTls(Box::new(EarlyTls {
                stream,
                settled: None,
                on_settled: None,
            })),
            proxy_time,
        });
    }
    Ok(Established {
        tls: Some(TlsInfo::of(stream.get_ref().1)),
        transport: Transport::Tls(Box::new(stream)),
        proxy_time,
    })
}

/// The TLS handshake over `stream`, whose `route` names the server in errors. With
/// `early_data`, a resumed session's stream is handed over before the handshake ends.
async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    tls: &TlsPlan,
    route: &Route,
    early_data: bool,
) -> Result<TlsStream<S>, Failure> {
    TlsConnector::from(tls.config.clone())
        .early_data(early_data)
        .connect(tls.server_name.clone(), stream)
        .await
        .map_err(|error| {
            let failure = Failure::new(
                ErrorKind::Tls,
                format!(
                    "TLS handshake with {route} failed: {}",
                    explain_tls_error(&error)
                ),
            );
            match rustls_error(&error) {
                Some(rustls::Error::InvalidCertificate(_)) => failure.showing(Symptom::Certificate),
                _ => failure,
            }
        })
}

/// The rustls error inside a handshake's I/O error, if that is what it is.
fn rustls_error(error: &io::Error) -> Option<&rustls::Error> {
    error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
}

/// The handshake's error, with what to do about the common mistakes: a certificate that does not
/// verify (worded by `tls::certificate_problem`, never rustls's `Debug` of it), or `https://` to
/// a cleartext port (whose answer is no TLS record).
fn explain_tls_error(error: &io::Error) -> String {
    use rustls::InvalidMessage;
    match rustls_error(error) {
        Some(rustls::Error::InvalidMessage(InvalidMessage::InvalidContentType)) => {
            format!("{error} (the server answered in cleartext: use http://)")
        }
        Some(rustls::Error::InvalidCertificate(problem)) => format!(
            "invalid peer certificate: {}",
            crate::tls::certificate_problem(problem)
        ),
        _ => error.to_string(),
    }
}

macro_rules! delegate {
    ($self:ident, $stream:ident => $call:expr) => {
        match $self.get_mut() {
            Transport::Tcp($stream) => $call,
            Transport::Tls($stream) => $call,
            Transport::Unix($stream) => $call,
            Transport::UnixTls($stream) => $call,
            Transport::Ring($stream) => $call,
            Transport::RingTls($stream) => $call,
            Transport::EarlyTls(early) => {
                let $stream = &mut early.stream;
                $call
            }
        }
    };
}

impl AsyncRead for Transport {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Tcp(stream) => Pin::new(stream).poll_read(cx, buf),
            Transport::Tls(stream) => Pin::new(stream).poll_read(cx, buf),
            Transport::Unix(stream) => Pin::new(stream).poll_read(cx, buf),
            Transport::UnixTls(stream) => Pin::new(stream).poll_read(cx, buf),
            Transport::Ring(stream) => Pin::new(stream).poll_read(cx, buf),
            Transport::RingTls(stream) => Pin::new(stream).poll_read(cx, buf),
            Transport::EarlyTls(early) => {
                if early.settled.is_none() {
                    ready!(Pin::new(&mut early.stream).poll_flush(cx))?;
                    early.settled = Some(Instant::now());
                    if let (Some(report), Some(outcome)) =
                        (early.on_settled.take(), early.outcome())
                    {
                        report(outcome);
                    }
                }
                Pin::new(&mut early.stream).poll_read(cx, buf)
            }
        }
    }
}

impl LowWater for Transport {
    /// On TCP sockets only: the io_uring backend's reads do not wait on socket readiness the
    /// same way, and a unix socket's readiness ignores the mark.
    fn set_low_water(&mut self, bytes: usize) {
        let socket = match &*self {
            Transport::Tcp(stream) => AsFd::as_fd(stream),
            Transport::Tls(stream) => AsFd::as_fd(stream.get_ref().0),
            Transport::EarlyTls(early) => AsFd::as_fd(early.stream.get_ref().0),
            Transport::Unix(_)
            | Transport::UnixTls(_)
            | Transport::Ring(_)
            | Transport::RingTls(_) => return,
        };
        // Best effort: without the mark the connection wakes more often, nothing else.
        let _ = set_receive_low_water(socket, bytes);
    }
}

impl Arrivals for Transport {
    /// On TCP sockets only (TLS included: the stamp is the newest TLS record byte's): the
    /// io_uring backend's reads are not `recvmsg` calls, and unix sockets are not stamped.
    fn take_arrival(&mut self) -> Option<Duration> {
        match self {
            Transport::Tcp(stream) => stream.take_arrival(),
            Transport::Tls(stream) => stream.get_mut().0.take_arrival(),
            Transport::EarlyTls(early) => early.stream.get_mut().0.take_arrival(),
            Transport::Unix(_)
            | Transport::UnixTls(_)
            | Transport::Ring(_)
            | Transport::RingTls(_) => None,
        }
    }
}

impl AsyncWrite for Transport {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        delegate!(self, stream => Pin::new(stream).poll_write(cx, buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        delegate!(self, stream => Pin::new(stream).poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Transport::Tcp(stream) => stream.is_write_vectored(),
            Transport::Tls(stream) => stream.is_write_vectored(),
            Transport::Unix(stream) => stream.is_write_vectored(),
            Transport::UnixTls(stream) => stream.is_write_vectored(),
            Transport::Ring(stream) => stream.is_write_vectored(),
            Transport::RingTls(stream) => stream.is_write_vectored(),
            Transport::EarlyTls(early) => early.stream.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        delegate!(self, stream => Pin::new(stream).poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        delegate!(self, stream => Pin::new(stream).poll_shutdown(cx))
    }
}

/// A socket wrapper that counts received bytes into the thread's [`WireMeter`] and shows what
/// passes in the `-v` trace.
pub(crate) struct TappedIo<S> {
    inner: S,
    meter: Rc<WireMeter>,
    trace: Option<Box<ConnTrace>>,
}

impl<S> TappedIo<S> {
    /// Wraps `inner`.
    pub(crate) fn new(inner: S, meter: Rc<WireMeter>) -> Self {
        TappedIo {
            inner,
            meter,
            trace: None,
        }
    }

    /// Shows what passes through in the `-v` trace.
    pub(crate) fn traced(mut self, trace: Option<ConnTrace>) -> Self {
        self.trace = trace.map(Box::new);
        self
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for TappedIo<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let poll = Pin::new(&mut this.inner).poll_read(cx, buf);
        let fresh = &buf.filled()[before..];
        if !fresh.is_empty() {
            this.meter.add_total(fresh.len() as u64);
            if let Some(trace) = &mut this.trace {
                trace.on_received(fresh);
            }
        }
        poll
    }
}

impl<S: LowWater> LowWater for TappedIo<S> {
    fn set_low_water(&mut self, bytes: usize) {
        self.inner.set_low_water(bytes);
    }
}

impl<S: Arrivals> Arrivals for TappedIo<S> {
    fn take_arrival(&mut self) -> Option<Duration> {
        self.inner.take_arrival()
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for TappedIo<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let (Some(trace), Poll::Ready(Ok(written))) = (&mut this.trace, &poll) {
            trace.on_sent(&buf[..*written]);
        }
        poll
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        if let (Some(trace), Poll::Ready(Ok(written))) = (&mut this.trace, &poll) {
            let mut left = *written;
            for buf in bufs {
                let take = left.min(buf.len());
                trace.on_sent(&buf[..take]);
                left -= take;
            }
        }
        poll
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
