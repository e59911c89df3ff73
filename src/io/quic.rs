//! QUIC for the HTTP/3 engine: the thread's endpoint (one UDP socket for all its connections),
//! the client configuration, connecting, and how QUIC errors are counted and named.

use std::future::Future;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use quinn::crypto::rustls::QuicClientConfig;
use quinn::{
    AsyncTimer, AsyncUdpSocket, ClientConfig, Connection, ConnectionError, Endpoint,
    EndpointConfig, Runtime, TokioRuntime, TransportConfig, VarInt,
};

use crate::plan::{RunPlan, TlsPlan};
use crate::proto::h3::error_code_name;
use crate::recorder::{ErrorKind, Failure};

/// Unidirectional streams the server may have open at once: it needs three (control, QPACK
/// encoder and decoder); more are unknown types, read and dropped.
const SERVER_UNI_STREAMS: u32 = 16;

/// What one runner thread's HTTP/3 connections share: the endpoint (one UDP socket) and the
/// client configuration.
pub(crate) struct QuicContext {
    /// The thread's endpoint: its socket and quinn's driver for every connection on it.
    pub(crate) endpoint: Endpoint,
    config: ClientConfig,
    server_name: String,
    addr: SocketAddr,
    /// What the kernel gave the socket.
    pub(crate) socket: SocketInfo,
    /// Why the socket got less buffer than asked, if it did.
    pub(crate) warning: Option<String>,
}

/// The thread's UDP socket as the kernel set it up.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SocketInfo {
    /// Receive buffer, bytes (as set: Linux reports twice that, for its bookkeeping).
    pub(crate) recv_buffer: usize,
    /// Send buffer, bytes.
    pub(crate) send_buffer: usize,
    /// Datagrams one send may carry (UDP GSO; 1 without it).
    pub(crate) gso_segments: usize,
    /// Datagrams one receive may return (UDP GRO; 1 without it).
    pub(crate) gro_segments: usize,
}

impl std::fmt::Display for SocketInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = |segments: usize| if segments > 1 { "on" } else { "off" };
        write!(
            f,
            "UDP socket: receive buffer {} KiB, send buffer {} KiB; GSO {} ({} segments per send), GRO {} ({} per receive)",
            self.recv_buffer / 1024,
            self.send_buffer / 1024,
            state(self.gso_segments),
            self.gso_segments,
            state(self.gro_segments),
            self.gro_segments
        )
    }
}

/// The receive buffer a thread's socket asks for per connection (at most its receive window):
/// a burst of every connection's datagrams should not overflow it (a dropped datagram costs a
/// retransmission and halves the congestion window), between [`MIN_RECV_BUFFER`] and
/// [`MAX_RECV_BUFFER`] in all.
const RECV_BUFFER_PER_CONNECTION: usize = 1 << 20;
/// The least a socket's receive buffer is asked for: what quic-go asks for (7 MiB) is of this
/// order; Linux's default (208 KiB) overflows at a few thousand small responses at once.
const MIN_RECV_BUFFER: usize = 4 << 20;
/// The most a socket's receive buffer is asked for.
const MAX_RECV_BUFFER: usize = 64 << 20;
/// The send buffer: requests are small, but a burst of them on every connection goes at once.
const SEND_BUFFER: usize = 4 << 20;

/// Sizes the socket's buffers for `connections` connections with receive windows of `window`
/// bytes; returns what the kernel gave (with GSO/GRO as quinn-udp finds them), and a warning
/// when `net.core.rmem_max` capped the receive buffer.
fn size_buffers(
    socket: &UdpSocket,
    connections: usize,
    window: u32,
) -> (SocketInfo, Option<String>) {
    let wanted = (connections * RECV_BUFFER_PER_CONNECTION.min(window as usize))
        .clamp(MIN_RECV_BUFFER, MAX_RECV_BUFFER);
    let sock = socket2::SockRef::from(socket);
    // Best effort: a socket with the default buffers still works, only less well.
    let _ = sock.set_recv_buffer_size(wanted);
    let _ = sock.set_send_buffer_size(SEND_BUFFER);
    // Linux reports twice the size it was given, for its bookkeeping.
    let recv_buffer = sock.recv_buffer_size().unwrap_or(0) / 2;
    let send_buffer = sock.send_buffer_size().unwrap_or(0) / 2;
    let state = quinn::udp::UdpSocketState::new(socket.into()).ok();
    let info = SocketInfo {
        recv_buffer,
        send_buffer,
        gso_segments: state.as_ref().map_or(1, |state| state.max_gso_segments()),
        gro_segments: state.as_ref().map_or(1, |state| state.gro_segments()),
    };
    let warning = (recv_buffer < wanted).then(|| {
        format!(
            "the UDP receive buffer is {} KiB, not the {} KiB asked for: net.core.rmem_max caps it, and bursts of QUIC datagrams may be dropped (raise it: sysctl -w net.core.rmem_max={wanted})",
            recv_buffer / 1024,
            wanted / 1024
        )
    });
    (info, warning)
}

/// quinn's tokio runtime, except that its drivers (the endpoint's and each connection's) are
/// spawned on the thread's `LocalSet`, beside the lanes they wake. A driver on the runtime that
/// wakes a lane wakes the runtime's `block_on` future, and tokio then polls its I/O driver once
/// more (an `epoll_wait` with a zero timeout) before running the lanes: one syscall more for
/// every batch of datagrams (measured: 2.45 `epoll_wait` per request against Caddy, 1.5 here).
#[derive(Debug)]
struct LocalRuntime;

impl Runtime for LocalRuntime {
    fn new_timer(&self, at: std::time::Instant) -> Pin<Box<dyn AsyncTimer>> {
        TokioRuntime.new_timer(at)
    }

    fn spawn(&self, future: Pin<Box<dyn Future<Output = ()> + Send>>) {
        tokio::task::spawn_local(future);
    }

    fn wrap_udp_socket(&self, socket: UdpSocket) -> std::io::Result<Arc<dyn AsyncUdpSocket>> {
        TokioRuntime.wrap_udp_socket(socket)
    }

    fn now(&self) -> std::time::Instant {
        TokioRuntime.now()
    }
}

impl QuicContext {
    /// The thread's endpoint and configuration for `plan` (an https:// plan). Must be called
    /// inside the thread's `LocalSet`, which runs quinn's drivers: they stop with it.
    pub(crate) fn new(plan: &RunPlan, tls: &TlsPlan) -> Result<Self> {
        let crate::plan::route::Route::Direct(addr) = plan.destination.route else {
            anyhow::bail!("HTTP/3 goes over UDP straight to the server: no unix socket, no proxy");
        };
        let local: SocketAddr = if addr.is_ipv4() {
            (Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let socket = UdpSocket::bind(local).context("cannot open a UDP socket for QUIC")?;
        let connections = plan.clients.div_ceil(plan.threads).max(1);
        let (socket_info, warning) = size_buffers(&socket, connections, plan.h2.connection_window);
        let endpoint = Endpoint::new(
            EndpointConfig::default(),
            None,
            socket,
            Arc::new(LocalRuntime),
        )
        .context("cannot start the QUIC endpoint")?;
        let crypto = QuicClientConfig::try_from(tls.config.clone())
            .context("the TLS configuration cannot carry QUIC (it needs TLS 1.3)")?;
        let idle = plan.timeouts.quic_idle;
        let mut transport = TransportConfig::default();
        transport
            .stream_receive_window(VarInt::from_u32(plan.h2.stream_window))
            .receive_window(VarInt::from_u32(plan.h2.connection_window))
            .max_idle_timeout(Some(
                idle.try_into()
                    .context("the QUIC idle timeout is out of range")?,
            ))
            // A response that takes longer than the idle timeout (a slow route with a long
            // --request-timeout) must not end the connection: PINGs keep it alive while the
            // server is there, so only a vanished server reaches the idle timeout.
            .keep_alive_interval(Some(idle / 3))
            // The server opens no request streams towards a client.
            .max_concurrent_bidi_streams(VarInt::from_u32(0))
            .max_concurrent_uni_streams(VarInt::from_u32(SERVER_UNI_STREAMS));
        let mut config = ClientConfig::new(Arc::new(crypto));
        config.transport_config(Arc::new(transport));
        Ok(QuicContext {
            endpoint,
            config,
            server_name: tls.server_name.to_str().into_owned(),
            addr,
            socket: socket_info,
            warning,
        })
    }

    /// Connects and completes the QUIC handshake (1-RTT) within `limit`.
    pub(crate) async fn connect(&self, limit: Option<Duration>) -> Result<Connection, Failure> {
        let addr = self.addr;
        let connecting = self
            .endpoint
            .connect_with(self.config.clone(), addr, &self.server_name)
            .map_err(|error| {
                Failure::new(
                    ErrorKind::Connect,
                    format!("cannot connect to {addr} over QUIC: {error}"),
                )
            })?;
        let handshake = async {
            tokio::select! {
                biased;
                done = connecting => done.map_err(|error| handshake_failure(&error, addr)),
                refused = probe(addr) => Err(refused),
            }
        };
        match limit {
            Some(limit) => tokio::time::timeout(limit, handshake).await.unwrap_or_else(|_| {
                Err(Failure::new(
                    ErrorKind::ConnectTimeout,
                    format!(
                        "the QUIC handshake with {addr} timed out after {limit:?} (CONNECTION_REFUSED? nothing may be listening on UDP port {})",
                        addr.port()
                    ),
                ))
            }),
            None => handshake.await,
        }
    }
}

/// How long a handshake may go unanswered before [`probe`] looks for a closed port.
const PROBE_AFTER: Duration = Duration::from_millis(250);

/// Completes only if nothing listens on `addr`'s UDP port, as far as ICMP tells. quinn's
/// socket is unconnected and ignores ICMP errors, so a handshake to a closed port would wait
/// for the whole connect timeout; a connected socket sees "port unreachable" as ECONNREFUSED.
/// The probe is one byte, which a QUIC server drops (RFC 9000 §14.1).
async fn probe(addr: SocketAddr) -> Failure {
    tokio::time::sleep(PROBE_AFTER).await;
    let refused = async {
        let local: SocketAddr = if addr.is_ipv4() {
            (Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let socket = tokio::net::UdpSocket::bind(local).await.ok()?;
        socket.connect(addr).await.ok()?;
        socket.send(&[0]).await.ok()?;
        let mut buffer = [0u8; 64];
        loop {
            match socket.recv(&mut buffer).await {
                Err(error) if error.kind() == std::io::ErrorKind::ConnectionRefused => {
                    return Some(())
                }
                Err(_) => return None,
                Ok(_) => {}
            }
        }
    };
    match refused.await {
        Some(()) => Failure::new(
            ErrorKind::Connect,
            format!(
                "cannot connect to {addr} over QUIC: CONNECTION_REFUSED (ICMP port unreachable: nothing listens on UDP port {})",
                addr.port()
            ),
        ),
        None => std::future::pending().await,
    }
}

/// Why a QUIC handshake failed, counted as TLS over TCP's failures are where it is TLS's doing.
fn handshake_failure(error: &ConnectionError, addr: SocketAddr) -> Failure {
    match error {
        ConnectionError::TimedOut => Failure::new(
            ErrorKind::ConnectTimeout,
            format!(
                "no answer to the QUIC handshake from {addr} (CONNECTION_REFUSED? nothing may be listening on UDP port {})",
                addr.port()
            ),
        ),
        ConnectionError::TransportError(error) if is_crypto(u64::from(error.code)) => Failure::new(
            ErrorKind::Tls,
            format!(
                "TLS handshake with {addr} (QUIC) failed: {}{}",
                error.reason,
                certificate_hint(&error.reason)
            ),
        ),
        ConnectionError::ConnectionClosed(close) if is_crypto(u64::from(close.error_code)) => {
            let alert = rustls::AlertDescription::from((u64::from(close.error_code) - 0x100) as u8);
            let reason = crate::error::peer_text(&close.reason);
            Failure::new(
                ErrorKind::Tls,
                format!(
                    "TLS handshake with {addr} (QUIC) failed: the server sent TLS alert {alert:?}{}",
                    if reason.is_empty() { String::new() } else { format!(" ({reason})") }
                ),
            )
        }
        other => {
            let failure = connection_failure(other);
            let kind = match failure.kind {
                ErrorKind::Protocol | ErrorKind::Closed | ErrorKind::Reset => ErrorKind::Connect,
                kind => kind,
            };
            Failure::new(kind, format!("cannot connect to {addr} over QUIC: {}", failure.message))
        }
    }
}

/// QUIC transport error codes 0x100-0x1ff carry a TLS alert (RFC 9001 §4.8).
fn is_crypto(code: u64) -> bool {
    (0x100..0x200).contains(&code)
}

/// The advice TLS over TCP gives for a certificate rustls rejected, from quinn's reason text.
fn certificate_hint(reason: &str) -> &'static str {
    if !reason.contains("certificate") {
        ""
    } else if reason.contains("NotValidForName") {
        " (check the URL's host or --sni, or skip verification with -k)"
    } else if reason.contains("Expired") || reason.contains("NotValidYet") {
        " (check the server's certificate dates, or skip verification with -k)"
    } else {
        " (trust its CA with --cacert FILE, or skip verification with -k)"
    }
}

/// How a lost QUIC connection is counted, with the codes named.
pub(crate) fn connection_failure(error: &ConnectionError) -> Failure {
    match error {
        ConnectionError::VersionMismatch => Failure::new(
            ErrorKind::Connect,
            "QUIC version negotiation failed: the server speaks no QUIC version the client does",
        ),
        ConnectionError::TransportError(error) => Failure::new(
            ErrorKind::Protocol,
            format!("the client ended the QUIC connection: {error}"),
        ),
        ConnectionError::ConnectionClosed(close) => Failure::new(
            if u64::from(close.error_code) == 0 {
                ErrorKind::Closed
            } else {
                ErrorKind::Protocol
            },
            format!("the server closed the QUIC connection: {close}"),
        ),
        ConnectionError::ApplicationClosed(close) => {
            let code = close.error_code.into_inner();
            let reason = crate::error::peer_text(&close.reason);
            let reason = if reason.is_empty() {
                String::new()
            } else {
                format!(": {reason}")
            };
            Failure::new(
                if code == crate::proto::h3::H3_NO_ERROR {
                    ErrorKind::Closed
                } else {
                    ErrorKind::Protocol
                },
                format!(
                    "the server closed the HTTP/3 connection with {}{reason}",
                    error_code_name(code)
                ),
            )
        }
        ConnectionError::Reset => Failure::new(
            ErrorKind::Reset,
            "the server reset the QUIC connection (stateless reset: it lost the connection's state)",
        ),
        ConnectionError::TimedOut => Failure::new(
            ErrorKind::Timeout,
            "the QUIC idle timeout expired: the server stopped answering, keep-alive PINGs included",
        ),
        ConnectionError::LocallyClosed => {
            Failure::new(ErrorKind::Closed, "the client closed the QUIC connection")
        }
        ConnectionError::CidsExhausted => Failure::new(
            ErrorKind::Connect,
            "no QUIC connection id left for a new connection",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_read_back_and_a_cap_is_reported() {
        let Ok(rmem_max) = std::fs::read_to_string("/proc/sys/net/core/rmem_max") else {
            return; // Not Linux: nothing to compare with.
        };
        let rmem_max: usize = rmem_max.trim().parse().unwrap();
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        // 1000 connections ask for the most, 64 MiB.
        let (info, warning) = size_buffers(&socket, 1000, u32::MAX);
        assert!(info.gso_segments >= 1 && info.gro_segments >= 1);
        if rmem_max < MAX_RECV_BUFFER {
            assert_eq!(info.recv_buffer, rmem_max);
            let warning = warning.expect("a capped buffer is reported");
            assert!(warning.contains("net.core.rmem_max"), "{warning}");
            assert!(
                warning.contains(&format!("{} KiB", rmem_max / 1024)),
                "{warning}"
            );
        } else {
            assert_eq!((info.recv_buffer, warning), (MAX_RECV_BUFFER, None));
        }
        // Few connections with small windows ask for the least.
        let small = UdpSocket::bind("127.0.0.1:0").unwrap();
        let (info, warning) = size_buffers(&small, 3, 64 * 1024);
        if rmem_max >= MIN_RECV_BUFFER {
            assert_eq!((info.recv_buffer, warning), (MIN_RECV_BUFFER, None));
        }
    }
}
