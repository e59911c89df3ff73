//! What the `-v` trace and the report say of an HTTP/3 connection: its TLS facts, its
//! handshake and end as quinn tells them.

use quinn::Connection;

use crate::session::h3::H3Template;
use crate::tls::TlsInfo;
use crate::units::format_micros;

/// What is known of an HTTP/3 connection's TLS: QUIC always runs TLS 1.3 and the ALPN is
/// quinn's to tell; quinn keeps rustls's session to itself, so the cipher suite and the key
/// exchange group are `unknown` (docs/json.md says so).
pub(crate) fn tls_info(conn: &Connection) -> TlsInfo {
    TlsInfo {
        version: "TLSv1.3".to_owned(),
        cipher: "unknown".to_owned(),
        key_exchange: "unknown".to_owned(),
        alpn: Some(alpn(conn)),
    }
}

/// The protocol ALPN settled on.
fn alpn(conn: &Connection) -> String {
    conn.handshake_data()
        .and_then(|data| data.downcast::<quinn::crypto::rustls::HandshakeData>().ok())
        .and_then(|data| data.protocol)
        .map_or("none".to_owned(), |id| {
            String::from_utf8_lossy(&id).into_owned()
        })
}

/// The trace's line for a connection's handshake: what QUIC settled on and what quinn tells of
/// the path and the server's transport parameters.
pub(super) fn describe_handshake(
    conn: &Connection,
    template: &H3Template,
    lanes_open: usize,
) -> String {
    let alpn = alpn(conn);
    let path = conn.stats().path;
    let streams = if lanes_open < template.lanes {
        format!(
            "the server allows {lanes_open} concurrent request streams (initial_max_streams_bidi)"
        )
    } else {
        format!("the server allows at least the {lanes_open} request streams asked for")
    };
    format!(
        "QUIC v1 handshake done: TLSv1.3, ALPN {alpn}; RTT {}, path MTU {} bytes, congestion window {} bytes; {streams}",
        format_micros(path.rtt.as_micros() as f64),
        path.current_mtu,
        path.cwnd
    )
}

/// The trace's line for a connection's end: what quinn counted, to tell a stall's cause (lost
/// datagrams, a small congestion window, stream credit that came late, ACK traffic).
pub(super) fn describe_end(stats: &quinn::ConnectionStats) -> String {
    let path = &stats.path;
    format!(
        "QUIC connection done: sent {} datagrams in {} sends ({} bytes), received {} in {} receives ({} bytes); ACK frames sent {}, received {}; MAX_STREAMS received {}, STREAMS_BLOCKED sent {}; lost packets {}, congestion events {}; RTT {} (min {}), congestion window {} bytes",
        stats.udp_tx.datagrams,
        stats.udp_tx.ios,
        stats.udp_tx.bytes,
        stats.udp_rx.datagrams,
        stats.udp_rx.ios,
        stats.udp_rx.bytes,
        stats.frame_tx.acks,
        stats.frame_rx.acks,
        stats.frame_rx.max_streams_bidi,
        stats.frame_tx.streams_blocked_bidi,
        path.lost_packets,
        path.congestion_events,
        format_micros(path.rtt.as_micros() as f64),
        format_micros(path.min_rtt.as_micros() as f64),
        path.cwnd
    )
}
