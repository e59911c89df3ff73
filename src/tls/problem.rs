//! A certificate that failed verification, worded for people: rustls's own `Display` of many of
//! its errors (and of every error webpki found, wrapped as `Other`) is a `Debug` dump such as
//! `Other(OtherError(CaUsedAsEndEntity))`, which tells a reader nothing they can act on.

use rustls::{CertificateError, OtherError};

/// What is wrong with the server's certificate, and what to do about it, in words.
pub(crate) fn certificate_problem(error: &CertificateError) -> String {
    use CertificateError as E;
    let (what, fix) = match error {
        E::UnknownIssuer => (
            "the certificate's issuer is not a CA this client trusts (a self-signed certificate, or a private CA)".to_owned(),
            TRUST,
        ),
        E::NotValidForName | E::NotValidForNameContext { .. } => (
            match error {
                E::NotValidForNameContext { .. } => format!("the certificate does not name the host it was asked for: {error}"),
                _ => "the certificate does not name the host it was asked for".to_owned(),
            },
            "check the URL's host or --sni, or skip verification with -k",
        ),
        E::Expired | E::ExpiredContext { .. } => (
            "the certificate has expired".to_owned(),
            DATES,
        ),
        E::NotValidYet | E::NotValidYetContext { .. } => (
            "the certificate is not valid yet (check this machine's clock too)".to_owned(),
            DATES,
        ),
        E::BadEncoding => ("the certificate is not well-formed DER".to_owned(), SKIP),
        E::BadSignature => (
            "the certificate's signature does not verify with its issuer's key".to_owned(),
            TRUST,
        ),
        E::UnsupportedSignatureAlgorithmContext { .. }
        | E::UnsupportedSignatureAlgorithmForPublicKeyContext { .. } => (
            "the certificate is signed with an algorithm this client does not support".to_owned(),
            SKIP,
        ),
        E::Revoked => ("the certificate has been revoked".to_owned(), SKIP),
        E::InvalidPurpose | E::InvalidPurposeContext { .. } => (
            "the certificate is not meant for a TLS server (its extended key usage)".to_owned(),
            SKIP,
        ),
        E::Other(other) => match webpki_problem(other) {
            Some(what) => (what.to_owned(), SKIP),
            None => (format!("the certificate did not verify: {other}"), TRUST),
        },
        _ => (format!("the certificate did not verify: {error}"), TRUST),
    };
    format!("{what} ({fix})")
}

const TRUST: &str = "trust its CA with --cacert FILE, or skip verification with -k";
const DATES: &str = "check the server's certificate dates, or skip verification with -k";
const SKIP: &str = "serve a proper certificate, or skip verification with -k";

/// The words for a failure that rustls passes on from webpki without a variant of its own.
fn webpki_problem(other: &OtherError) -> Option<&'static str> {
    use webpki::Error as W;
    Some(match other.0.downcast_ref::<W>()? {
        W::CaUsedAsEndEntity => "the certificate is a CA certificate used as a server certificate",
        W::EndEntityUsedAsCa => {
            "the chain uses a server (end-entity) certificate as a CA to sign another"
        }
        W::PathLenConstraintViolated | W::MaximumPathDepthExceeded => {
            "the certificate chain is longer than its CAs allow"
        }
        W::NameConstraintViolation => "the certificate names a host its CA may not certify",
        W::RequiredEkuNotFoundContext(_) | W::EmptyEkuExtension => {
            "the certificate is not meant for a TLS server (its extended key usage)"
        }
        W::UnsupportedCertVersion => "the certificate is not an X.509 v3 certificate",
        W::CertDistrusted => "the certificate's CA is distrusted",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn every_problem_is_worded_without_a_debug_dump() {
        let wrapped = |error: webpki::Error| CertificateError::Other(OtherError(Arc::new(error)));
        let cases = [
            (
                wrapped(webpki::Error::CaUsedAsEndEntity),
                "the certificate is a CA certificate used as a server certificate (serve a proper certificate, or skip verification with -k)",
            ),
            (
                CertificateError::UnknownIssuer,
                "the certificate's issuer is not a CA this client trusts (a self-signed certificate, or a private CA) (trust its CA with --cacert FILE, or skip verification with -k)",
            ),
            (
                CertificateError::Expired,
                "the certificate has expired (check the server's certificate dates, or skip verification with -k)",
            ),
            (
                CertificateError::NotValidForName,
                "the certificate does not name the host it was asked for (check the URL's host or --sni, or skip verification with -k)",
            ),
        ];
        for (error, said) in cases {
            assert_eq!(certificate_problem(&error), said);
        }
        let unnamed = certificate_problem(&wrapped(webpki::Error::BadDerTime));
        assert!(
            unnamed.starts_with("the certificate did not verify: "),
            "{unnamed}"
        );
    }
}
