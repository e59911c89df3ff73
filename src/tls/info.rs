//! What a TLS handshake settled on ([`TlsInfo`]): the engines take it from each connection, and
//! the `-v` trace, the recorder and the report show it.

use serde::Serialize;

/// What a TLS handshake settled on, as h2load reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct TlsInfo {
    /// e.g. `TLSv1.3`.
    pub(crate) version: String,
    /// e.g. `TLS13_AES_256_GCM_SHA384`.
    pub(crate) cipher: String,
    /// Key exchange group, e.g. `X25519`.
    pub(crate) key_exchange: String,
    /// The ALPN protocol, if any was selected.
    pub(crate) alpn: Option<String>,
}

impl TlsInfo {
    /// Describes an established client connection.
    pub(crate) fn of(connection: &rustls::ClientConnection) -> TlsInfo {
        let version = match connection.protocol_version() {
            Some(rustls::ProtocolVersion::TLSv1_3) => "TLSv1.3".to_owned(),
            Some(rustls::ProtocolVersion::TLSv1_2) => "TLSv1.2".to_owned(),
            Some(other) => format!("{other:?}"),
            None => "unknown".to_owned(),
        };
        let cipher = connection.negotiated_cipher_suite().map_or_else(
            || "unknown".to_owned(),
            |suite| format!("{:?}", suite.suite()),
        );
        let key_exchange = connection.negotiated_key_exchange_group().map_or_else(
            || "unknown".to_owned(),
            |group| format!("{:?}", group.name()),
        );
        TlsInfo {
            version,
            cipher,
            key_exchange,
            alpn: connection
                .alpn_protocol()
                .map(|id| String::from_utf8_lossy(id).into_owned()),
        }
    }
}
