//! How a cell's connections arrive at their protocol: the negotiation its inputs and scheme ask
//! for (`--proto`'s [`ProtoChoice`]), the TLS settings (ALPN list, trust, SNI), the TLS-reuse
//! checks, and the I/O backend (`--io`'s [`IoChoice`]).

use anyhow::Result;
use clap::ValueEnum as _;
use http::Method;

use super::inputs::{Inputs, IoChoice, ProtoChoice, Tls};
use super::request::RequestTemplate;
use super::run_plan::{IoBackend, Negotiation, Protocol, TlsPlan};
use super::target::Scheme;
use crate::tls;
use crate::usage_bail;

pub(super) fn choose_negotiation(
    inputs: &Inputs,
    proto: Option<ProtoChoice>,
    scheme: Scheme,
) -> Result<Negotiation> {
    let protocol = &inputs.protocol;
    let requested = proto.or(protocol.default_proto).or(match scheme {
        // h2load's -p applies to http:// URLs only.
        Scheme::Https => None,
        Scheme::Http => protocol.cleartext_proto,
    });
    if inputs.grpc.method.is_some() {
        // gRPC runs over HTTP/2 only (PROTOCOL-HTTP2.md): by prior knowledge on cleartext,
        // ALPN h2 on TLS; no server speaks it after an Upgrade.
        return match (scheme, requested) {
            (Scheme::Http, None | Some(ProtoChoice::H2c)) => Ok(Negotiation::Direct(Protocol::H2c)),
            (Scheme::Https, None | Some(ProtoChoice::H2)) => Ok(Negotiation::Alpn {
                require: Some(Protocol::H2),
            }),
            (_, Some(other)) => usage_bail!(
                "--grpc runs over HTTP/2: --proto h2c for http:// or h2 for https://, not {}",
                other
                    .to_possible_value()
                    .map_or_else(String::new, |value| value.get_name().to_owned())
            ),
        };
    }
    Ok(match (scheme, requested) {
        (Scheme::Http, None | Some(ProtoChoice::H2c)) => Negotiation::Direct(Protocol::H2c),
        (Scheme::Http, Some(ProtoChoice::H1)) => Negotiation::Direct(Protocol::Http1),
        (Scheme::Http, Some(ProtoChoice::H2cUpgrade)) => Negotiation::H2cUpgrade,
        (Scheme::Http, Some(ProtoChoice::H2)) => usage_bail!(
            "--proto h2 is HTTP/2 over TLS and needs an https:// URL; use --proto h2c for cleartext HTTP/2"
        ),
        (Scheme::Http, Some(ProtoChoice::H3)) => {
            usage_bail!("--proto h3 is HTTP/3 over QUIC, always encrypted, and needs an https:// URL")
        }
        (Scheme::Https, Some(ProtoChoice::H3)) => Negotiation::Quic,
        (Scheme::Http, Some(ProtoChoice::Auto)) => usage_bail!(
            "--proto auto lets TLS ALPN choose and needs an https:// URL; for http:// use h1, h2c or h2c-upgrade"
        ),
        (Scheme::Https, None | Some(ProtoChoice::Auto)) => Negotiation::Alpn { require: None },
        (Scheme::Https, Some(ProtoChoice::H2)) => Negotiation::Alpn {
            require: Some(Protocol::H2),
        },
        (Scheme::Https, Some(ProtoChoice::H1)) => Negotiation::Alpn {
            require: Some(Protocol::Http1),
        },
        (Scheme::Https, Some(ProtoChoice::H2c | ProtoChoice::H2cUpgrade)) => {
            usage_bail!("h2c is cleartext HTTP/2 and needs an http:// URL; use --proto h2 for https://")
        }
    })
}

/// `--tls-resume` and `--tls-early-data` need TLS over TCP; early data also needs a protocol known
/// before the handshake ends (the requests leave before ALPN answers) and a method that is safe
/// to replay (RFC 8470 §3: a server or an attacker may replay early data).
pub(super) fn check_tls_reuse(
    inputs: &Inputs,
    negotiation: Negotiation,
    request: &RequestTemplate,
) -> Result<()> {
    let tls = &inputs.tls;
    let flag = match (tls.early_data, tls.resume) {
        (true, _) => "--tls-early-data",
        (false, true) => "--tls-resume",
        (false, false) => return Ok(()),
    };
    match negotiation {
        Negotiation::Direct(_) | Negotiation::H2cUpgrade => {
            usage_bail!("{flag} resumes TLS sessions and needs an https:// URL")
        }
        Negotiation::Quic => usage_bail!(
            "{flag} is not supported with --proto h3: quinn does not tell whether a QUIC handshake resumed"
        ),
        Negotiation::Alpn { require: None } if tls.early_data => usage_bail!(
            "--tls-early-data needs --proto h1 or --proto h2: requests leave before ALPN settles the protocol"
        ),
        Negotiation::Alpn { .. } => {}
    }
    if tls.early_data && ![Method::GET, Method::HEAD].contains(&request.parts.method) {
        usage_bail!(
            "--tls-early-data sends only GET or HEAD requests early (a server may replay early data), not {}",
            request.parts.method
        );
    }
    if tls.early_data && inputs.connection.unix_socket.is_some() {
        usage_bail!("--tls-early-data is not supported with --unix-socket (TLS over TCP only)");
    }
    Ok(())
}

pub(super) fn tls_plan(
    given: &Tls,
    negotiation: Negotiation,
    host: &str,
    trust_test_ca: bool,
) -> Result<TlsPlan> {
    let alpn = match (&given.alpn_list, negotiation) {
        (Some(list), _) => tls::parse_alpn_list(list)?,
        (
            None,
            Negotiation::Alpn {
                require: Some(Protocol::Http1),
            },
        ) => vec![b"http/1.1".to_vec()],
        (None, Negotiation::Quic) => vec![b"h3".to_vec()],
        // Early data goes out before ALPN answers: offer only the protocol it is written in.
        (
            None,
            Negotiation::Alpn {
                require: Some(Protocol::H2),
            },
        ) if given.early_data => vec![b"h2".to_vec()],
        (None, _) => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
    };
    if negotiation == Negotiation::Quic && !alpn.iter().any(|id| id == b"h3") {
        usage_bail!("--proto h3 needs h3 in --alpn-list");
    }
    if negotiation
        == (Negotiation::Alpn {
            require: Some(Protocol::H2),
        })
        && !alpn.iter().any(|id| id == b"h2")
    {
        usage_bail!("--proto h2 needs h2 in --alpn-list");
    }
    let config = tls::client_config(&tls::ClientTlsOptions {
        alpn,
        insecure: given.insecure,
        ca_file: given.cacert.as_deref(),
        trust_test_ca,
        client_identity: given.cert.as_deref().zip(given.key.as_deref()),
        // QUIC carries TLS 1.3 only (RFC 9001 §4.2).
        tls13_only: negotiation == Negotiation::Quic,
    })?;
    Ok(TlsPlan {
        config,
        server_name: tls::server_name(given.sni.as_deref().unwrap_or(host))?,
        resume: given.resume || given.early_data,
        early_data: given.early_data,
    })
}

/// Resolves `--io` and `--io-sqpoll` for a cell: `auto` becomes io_uring if the kernel allows it,
/// else epoll with a note saying why (`uring_verdict`, the caller's probe, is asked only for
/// `auto` and `uring`: it runs once per process, and the sweep prints each note once); `uring`
/// where the kernel refuses it is a runtime failure (status 1), not a usage error: the command
/// line is right, the machine says no. HTTP/3 runs on quinn's UDP socket,
/// which only the epoll reactor drives, so an h3 cell is epoll whatever `--io` says; so is a run
/// through `--proxy` or with `--tls-early-data`, whose connections stay on tokio's TCP stream
/// (the tunnel peeks at the proxy's answer; early data needs tokio-rustls' stream).
pub(super) fn io_backend(
    inputs: &Inputs,
    negotiation: Negotiation,
    uring_verdict: &dyn Fn() -> Result<(), String>,
    notes: &mut Vec<String>,
) -> Result<IoBackend> {
    let uring = IoBackend::Uring {
        sqpoll: inputs.protocol.io_sqpoll,
    };
    match inputs.protocol.io {
        IoChoice::Epoll if inputs.protocol.io_sqpoll => {
            usage_bail!("--io-sqpoll needs --io uring or --io auto (it polls an io_uring)")
        }
        IoChoice::Epoll => Ok(IoBackend::Epoll),
        _ if negotiation == Negotiation::Quic
            || inputs.connection.proxy.is_some()
            || inputs.tls.early_data =>
        {
            Ok(IoBackend::Epoll)
        }
        IoChoice::Uring => match uring_verdict() {
            Ok(()) => Ok(uring),
            Err(reason) => anyhow::bail!("--io uring: io_uring unavailable ({reason})"),
        },
        IoChoice::Auto => match uring_verdict() {
            Ok(()) => Ok(uring),
            Err(reason) => {
                notes.push(format!(
                    "--io auto: io_uring unavailable ({reason}); using epoll"
                ));
                Ok(IoBackend::Epoll)
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::testing::{plan, usage_message};

    #[test]
    fn h1_spellings_agree() {
        for argv in [["--h1"], ["--proto=h1"], ["-phttp/1.1"]] {
            let plan = plan(&[argv[0], "http://127.0.0.1:1/"]).unwrap();
            assert_eq!(
                plan.negotiation,
                Negotiation::Direct(Protocol::Http1),
                "{argv:?}"
            );
        }
    }

    #[test]
    fn io_resolves_by_flag_kernel_and_protocol() {
        let url = "http://127.0.0.1:1/";
        let io = |argv: &[&str]| plan(&[&["-n", "10"], argv, &[url]].concat());
        assert_eq!(io(&["--io", "epoll"]).unwrap().io, IoBackend::Epoll);
        assert!(usage_message(&["--io", "epoll", "--io-sqpoll", url])
            .contains("--io-sqpoll needs --io uring or --io auto"));
        let h3 = plan(&["--io", "uring", "--proto", "h3", "https://127.0.0.1:1/"]).unwrap();
        assert_eq!(h3.io, IoBackend::Epoll, "QUIC stays on its UDP socket");
        assert!(h3.notes.is_empty(), "{:?}", h3.notes);
        let proxied = io(&["--io", "uring", "--proxy", "http://127.0.0.1:2"]).unwrap();
        assert_eq!(
            proxied.io,
            IoBackend::Epoll,
            "a proxy's tunnel stays on epoll"
        );
        let early = plan(&[
            "--io",
            "auto",
            "--tls-early-data",
            "--proto",
            "h1",
            "https://127.0.0.1:1/",
        ])
        .unwrap();
        assert_eq!(early.io, IoBackend::Epoll, "early data stays on epoll");
        assert!(early.notes.is_empty(), "{:?}", early.notes);
        match crate::io::uring::probe::check() {
            Ok(()) => {
                let auto = io(&["--io", "auto", "--io-sqpoll"]).unwrap();
                assert_eq!(auto.io, IoBackend::Uring { sqpoll: true });
                assert!(auto.notes.is_empty(), "{:?}", auto.notes);
                assert_eq!(
                    io(&["--io", "uring"]).unwrap().io,
                    IoBackend::Uring { sqpoll: false }
                );
            }
            Err(reason) => {
                let auto = io(&["--io", "auto", "--io-sqpoll"]).unwrap();
                assert_eq!(auto.io, IoBackend::Epoll);
                assert_eq!(
                    auto.notes,
                    [format!(
                        "--io auto: io_uring unavailable ({reason}); using epoll"
                    )]
                );
                let refused = io(&["--io", "uring"]).unwrap_err();
                assert!(!crate::error::is_usage(&refused), "the kernel said no");
                assert_eq!(
                    refused.to_string(),
                    format!("--io uring: io_uring unavailable ({reason})")
                );
            }
        }
    }
}
