//! QUIC for the HTTP/3 engine: the thread's endpoint (one UDP socket for all its connections),
//! the client configuration, connecting, and how QUIC errors are counted and named.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use quinn::crypto::rustls::QuicClientConfig;
use quinn::{
    ClientConfig, Connection, ConnectionError, Endpoint, EndpointConfig, TransportConfig, VarInt,
};

use super::H3Template;
use crate::plan::{RunPlan, TlsPlan};
use crate::proto::h3::error_code_name;
use crate::recorder::{ErrorKind, Failure};

/// How long a QUIC connection may hear nothing before quinn gives it up (RFC 9000 §10.1):
/// long enough for any response a load test waits for, short enough that a vanished server
/// ends the run (`-N` and `--request-timeout` act sooner when given).
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// Unidirectional streams the server may have open at once: it needs three (control, QPACK
/// encoder and decoder); more are unknown types, read and dropped.
const SERVER_UNI_STREAMS: u32 = 16;

/// What one runner thread's HTTP/3 connections share: the endpoint (one UDP socket), the client
/// configuration and the prepared requests.
pub(crate) struct QuicContext {
    /// The thread's endpoint: its socket and quinn's driver for every connection on it.
    pub(crate) endpoint: Endpoint,
    config: ClientConfig,
    server_name: String,
    addr: SocketAddr,
    /// The prepared requests.
    pub(crate) template: H3Template,
}

impl QuicContext {
    /// The thread's endpoint and configuration for `plan` (an https:// plan). Must be called
    /// inside the thread's runtime: the socket registers with it.
    pub(crate) fn new(plan: &RunPlan, tls: &TlsPlan) -> Result<Self> {
        let addr = plan.destination.addr;
        let local: SocketAddr = if addr.is_ipv4() {
            (Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let socket = UdpSocket::bind(local).context("cannot open a UDP socket for QUIC")?;
        let endpoint = Endpoint::new(
            EndpointConfig::default(),
            None,
            socket,
            Arc::new(quinn::TokioRuntime),
        )
        .context("cannot start the QUIC endpoint")?;
        let crypto = QuicClientConfig::try_from(tls.config.clone())
            .context("the TLS configuration cannot carry QUIC (it needs TLS 1.3)")?;
        let mut transport = TransportConfig::default();
        transport
            .stream_receive_window(VarInt::from_u32(plan.h2.stream_window))
            .receive_window(VarInt::from_u32(plan.h2.connection_window))
            .max_idle_timeout(Some(
                IDLE_TIMEOUT
                    .try_into()
                    .expect("30 s is a valid idle timeout"),
            ))
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
            template: H3Template::new(plan),
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
            connecting
                .await
                .map_err(|error| handshake_failure(&error, addr))
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
            Failure::new(
                ErrorKind::Tls,
                format!("TLS handshake with {addr} (QUIC) failed: the server sent {close}"),
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
            let reason = String::from_utf8_lossy(&close.reason);
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
            format!(
                "the QUIC idle timeout ({} s) expired: the server went silent",
                IDLE_TIMEOUT.as_secs()
            ),
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
