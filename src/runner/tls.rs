//! TLS on rustls: the client configuration a run uses, the built-in target's server configuration,
//! and a description of what a handshake negotiated.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use anyhow::{Context, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig, SignatureScheme};
use serde::Serialize;

use crate::cli::input;
use crate::cli::limits::MAX_PEM_FILE;
use crate::plan::TlsPlan;
use crate::usage_bail;

/// The test PKI's CA, server certificate and key (`certs/`), built in so `serve --tls` works anywhere.
pub mod test_pki {
    /// The test CA certificate (PEM).
    pub const CA_CERT: &str = include_str!("../../certs/ca.crt");
    /// The server certificate for localhost / 127.0.0.1 / ::1, signed by the test CA (PEM).
    pub const SERVER_CERT: &str = include_str!("../../certs/server.crt");
    /// The server certificate's private key (PEM, PKCS#8).
    pub const SERVER_KEY: &str = include_str!("../../certs/server.key");
}

/// How the client authenticates the server and itself.
#[derive(Debug, Default)]
pub struct ClientTlsOptions<'a> {
    /// ALPN identifiers offered, in order of preference.
    pub alpn: Vec<Vec<u8>>,
    /// Skip certificate verification (`-k`).
    pub insecure: bool,
    /// Extra trusted CA certificates (PEM file), besides the webpki roots.
    pub ca_file: Option<&'a Path>,
    /// Client certificate chain and key (PEM files).
    pub client_identity: Option<(&'a Path, &'a Path)>,
    /// Also trust the built-in test CA (the built-in target's certificate).
    pub trust_test_ca: bool,
    /// Offer TLS 1.3 only (QUIC).
    pub tls13_only: bool,
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Builds the client configuration for a run. Every connection makes a full handshake (no session
/// resumption), so each connect time measures the same work; `--tls-resume` replaces this per
/// thread ([`thread_plan`]).
pub fn client_config(options: &ClientTlsOptions<'_>) -> Result<Arc<ClientConfig>> {
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if options.trust_test_ca {
        for cert in CertificateDer::pem_slice_iter(test_pki::CA_CERT.as_bytes()) {
            roots
                .add(cert.context("the built-in test CA is valid PEM")?)
                .context("the built-in test CA is a usable certificate")?;
        }
    }
    if let Some(path) = options.ca_file {
        for cert in read_certs(path, "--cacert")? {
            if let Err(error) = roots.add(cert) {
                usage_bail!(
                    "--cacert '{}' holds a certificate rustls cannot use: {error}",
                    path.display()
                );
            }
        }
    }
    let versions: &[&rustls::SupportedProtocolVersion] = if options.tls13_only {
        &[&rustls::version::TLS13]
    } else {
        rustls::DEFAULT_VERSIONS
    };
    let builder = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(versions)
        .expect("the ring provider supports TLS 1.2 and 1.3")
        .with_root_certificates(roots);
    let mut config = match options.client_identity {
        Some((cert, key)) => {
            match builder
                .with_client_auth_cert(read_certs(cert, "--cert")?, read_key(key, "--key")?)
            {
                Ok(config) => config,
                Err(error) => {
                    usage_bail!("--cert and --key do not form a usable client identity: {error}")
                }
            }
        }
        None => builder.with_no_client_auth(),
    };
    if options.insecure {
        config
            .dangerous()
            .set_certificate_verifier(Arc::new(AcceptAnyCertificate(provider())));
    }
    config.alpn_protocols = options.alpn.clone();
    config.resumption = rustls::client::Resumption::disabled();
    Ok(Arc::new(config))
}

/// Server names a thread's session cache keeps TLS 1.2 sessions and key-exchange hints for.
const SESSION_CACHE: usize = 256;

/// A runner thread's TLS settings: the plan's, but with `--tls-resume` a session cache of the
/// thread's own for its `connections` (they resume from it, with no lock shared between
/// threads) and, with `--tls-early-data`, early data enabled.
pub fn thread_plan(plan: &TlsPlan, connections: usize) -> TlsPlan {
    if !plan.resume {
        return plan.clone();
    }
    let mut config = ClientConfig::clone(&plan.config);
    config.resumption = rustls::client::Resumption::store(Arc::new(ThreadSessions::new(
        MIN_TICKETS.max(2 * connections),
    )));
    config.enable_early_data = plan.early_data;
    TlsPlan {
        config: Arc::new(config),
        ..plan.clone()
    }
}

/// The fewest TLS 1.3 tickets a thread's cache keeps (rustls's own cache keeps 8 per server).
const MIN_TICKETS: usize = 8;

/// A thread's session cache: rustls's in-memory cache, but with room for as many TLS 1.3 tickets
/// as the thread has connections, twice over. A ticket is used once (RFC 8446 §C.4) and each
/// connection takes one as it opens; with rustls's 8 per server, a thread of 20 connections
/// found none now and then and fell back to a full handshake (55 of 2000 connections against
/// nghttpx, where 1 connection at a time made a single full handshake in 2000).
#[derive(Debug)]
struct ThreadSessions {
    others: rustls::client::ClientSessionMemoryCache,
    tickets: Mutex<VecDeque<Ticket>>,
    capacity: usize,
}

type Ticket = (ServerName<'static>, rustls::client::Tls13ClientSessionValue);

impl ThreadSessions {
    fn new(capacity: usize) -> Self {
        ThreadSessions {
            others: rustls::client::ClientSessionMemoryCache::new(SESSION_CACHE),
            tickets: Mutex::new(VecDeque::with_capacity(capacity)),
            capacity,
        }
    }

    fn tickets(&self) -> MutexGuard<'_, VecDeque<Ticket>> {
        // Only this thread's connections use it: a poisoned lock means a panic on this thread,
        // which already ends the run; the tickets themselves are still whole.
        self.tickets.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl rustls::client::ClientSessionStore for ThreadSessions {
    fn set_kx_hint(&self, server_name: ServerName<'static>, group: rustls::NamedGroup) {
        self.others.set_kx_hint(server_name, group);
    }

    fn kx_hint(&self, server_name: &ServerName<'_>) -> Option<rustls::NamedGroup> {
        self.others.kx_hint(server_name)
    }

    fn set_tls12_session(
        &self,
        server_name: ServerName<'static>,
        value: rustls::client::Tls12ClientSessionValue,
    ) {
        self.others.set_tls12_session(server_name, value);
    }

    fn tls12_session(
        &self,
        server_name: &ServerName<'_>,
    ) -> Option<rustls::client::Tls12ClientSessionValue> {
        self.others.tls12_session(server_name)
    }

    fn remove_tls12_session(&self, server_name: &ServerName<'static>) {
        self.others.remove_tls12_session(server_name);
    }

    fn insert_tls13_ticket(
        &self,
        server_name: ServerName<'static>,
        value: rustls::client::Tls13ClientSessionValue,
    ) {
        let mut tickets = self.tickets();
        if tickets.len() == self.capacity {
            tickets.pop_front();
        }
        tickets.push_back((server_name, value));
    }

    fn take_tls13_ticket(
        &self,
        server_name: &ServerName<'static>,
    ) -> Option<rustls::client::Tls13ClientSessionValue> {
        let mut tickets = self.tickets();
        // The newest first: the oldest are the nearest to their lifetime's end.
        let at = tickets.iter().rposition(|(name, _)| name == server_name)?;
        tickets.remove(at).map(|(_, value)| value)
    }
}

/// Builds the built-in target's server configuration, offering `h2` and `http/1.1` by ALPN.
pub fn server_config(cert_pem: &[u8], key_pem: &[u8]) -> Result<Arc<ServerConfig>> {
    let certs = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .context("the server certificate is not valid PEM")?;
    let key = PrivateKeyDer::from_pem_slice(key_pem)
        .context("the server key is not a valid PEM private key")?;
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("the ring provider supports the default versions")
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("the server certificate and key do not match")?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The name to verify the server's certificate against (and to send as SNI unless it is an address).
pub fn server_name(name: &str) -> Result<ServerName<'static>> {
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    match ServerName::try_from(bare.to_owned()) {
        Ok(name) => Ok(name),
        Err(_) => usage_bail!("'{name}' is not a valid TLS server name"),
    }
}

/// Parses `--alpn-list` (comma-separated identifiers).
pub fn parse_alpn_list(list: &str) -> Result<Vec<Vec<u8>>> {
    let ids: Vec<Vec<u8>> = list
        .split(',')
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(|id| id.as_bytes().to_vec())
        .collect();
    if ids.is_empty() || ids.iter().any(|id| id.len() > 255) {
        usage_bail!("--alpn-list '{list}' must name one or more protocols, e.g. h2,http/1.1");
    }
    Ok(ids)
}

/// Reads a PEM file the user named with `flag` (bounded, regular files only).
pub fn read_pem(path: &Path, flag: &str) -> Result<Vec<u8>> {
    input::read(path, &format!("{flag} file"), MAX_PEM_FILE)
}

fn read_certs(path: &Path, flag: &str) -> Result<Vec<CertificateDer<'static>>> {
    let pem = read_pem(path, flag)?;
    let certs = match CertificateDer::pem_slice_iter(&pem).collect::<Result<Vec<_>, _>>() {
        Ok(certs) => certs,
        Err(error) => usage_bail!(
            "the {flag} file '{}' is not valid PEM: {error}",
            path.display()
        ),
    };
    if certs.is_empty() {
        usage_bail!("the {flag} file '{}' holds no certificate", path.display());
    }
    Ok(certs)
}

fn read_key(path: &Path, flag: &str) -> Result<PrivateKeyDer<'static>> {
    match PrivateKeyDer::from_pem_slice(&read_pem(path, flag)?) {
        Ok(key) => Ok(key),
        Err(error) => usage_bail!(
            "the {flag} file '{}' holds no PEM private key: {error}",
            path.display()
        ),
    }
}

/// What a TLS handshake settled on, as h2load reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct TlsInfo {
    /// e.g. `TLSv1.3`.
    pub version: String,
    /// e.g. `TLS13_AES_256_GCM_SHA384`.
    pub cipher: String,
    /// Key exchange group, e.g. `X25519`.
    pub key_exchange: String,
    /// The ALPN protocol, if any was selected.
    pub alpn: Option<String>,
}

impl TlsInfo {
    /// Describes an established client connection.
    pub fn of(connection: &rustls::ClientConnection) -> TlsInfo {
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

/// `-k`: accepts any certificate, but still checks handshake signatures so the session is real.
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_pki_loads() {
        server_config(
            test_pki::SERVER_CERT.as_bytes(),
            test_pki::SERVER_KEY.as_bytes(),
        )
        .unwrap();
        let ca = std::env::temp_dir().join(format!("h2load-rs-ca-{}.pem", std::process::id()));
        std::fs::write(&ca, test_pki::CA_CERT).unwrap();
        let options = ClientTlsOptions {
            alpn: parse_alpn_list("h2, http/1.1").unwrap(),
            ca_file: Some(&ca),
            ..Default::default()
        };
        let config = client_config(&options).unwrap();
        assert_eq!(
            config.alpn_protocols,
            [b"h2".to_vec(), b"http/1.1".to_vec()]
        );
        std::fs::remove_file(ca).unwrap();
    }

    #[test]
    fn bad_tls_input_is_explained() {
        let missing = client_config(&ClientTlsOptions {
            ca_file: Some(Path::new("/nonexistent/ca.pem")),
            ..Default::default()
        });
        assert!(format!("{:#}", missing.unwrap_err())
            .contains("cannot read the --cacert file '/nonexistent/ca.pem'"));
        let empty =
            std::env::temp_dir().join(format!("h2load-rs-empty-{}.pem", std::process::id()));
        std::fs::write(&empty, "not a certificate").unwrap();
        let no_cert = client_config(&ClientTlsOptions {
            ca_file: Some(&empty),
            ..Default::default()
        });
        assert!(format!("{:#}", no_cert.unwrap_err()).contains("holds no certificate"));
        std::fs::remove_file(empty).unwrap();
        assert!(parse_alpn_list(" , ").is_err());
        assert!(server_name("[::1]").is_ok());
    }
}
