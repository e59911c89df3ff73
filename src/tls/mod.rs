//! TLS on rustls: the client configuration a run uses, the built-in target's server configuration,
//! the PEM files they read, and what a handshake negotiated ([`TlsInfo`]). Below `plan`, which
//! builds a run's TLS from it; a runner thread's session cache for `--tls-resume` is the runner's.

mod info;
mod problem;

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig, SignatureScheme};

use crate::input;
use crate::limits::MAX_PEM_FILE;
use crate::usage_bail;
pub(crate) use info::TlsInfo;
pub(crate) use problem::certificate_problem;

/// The test PKI's CA, server certificate and key (`certs/`), built in so `serve --tls` works anywhere.
pub mod test_pki {
    /// The test CA certificate (PEM).
    pub(crate) const CA_CERT: &str = include_str!("../../certs/ca.crt");
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
/// thread (the runner's `tls_resume::thread_plan`).
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
pub(crate) fn server_name(name: &str) -> Result<ServerName<'static>> {
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    match ServerName::try_from(bare.to_owned()) {
        Ok(name) => Ok(name),
        Err(_) => usage_bail!("'{name}' is not a valid TLS server name"),
    }
}

/// Parses `--alpn-list` (comma-separated identifiers).
pub(crate) fn parse_alpn_list(list: &str) -> Result<Vec<Vec<u8>>> {
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
pub(crate) fn read_pem(path: &Path, flag: &str) -> Result<Vec<u8>> {
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
