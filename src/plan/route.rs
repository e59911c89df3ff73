//! How connections reach the server: TCP to an address, a unix socket (`--unix-socket`), or a
//! tunnel through an HTTP proxy (`--proxy`, `CONNECT`); the host and `--connect-to` resolved once
//! for the run.

use std::fmt;
use std::net::{Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use base64::Engine as _;
use http::Uri;

use super::inputs::Connection;
use crate::error::quoted;
use crate::usage_bail;

/// Where every connection of a run goes first.
#[derive(Debug, Clone)]
pub(crate) enum Route {
    /// TCP (UDP for HTTP/3) to this address: `--connect-to`'s, else the URL's, resolved once.
    Direct(SocketAddr),
    /// `--unix-socket`: the URL names the server (Host, SNI) but is not resolved.
    Unix(PathBuf),
    /// `--proxy`: TCP to the proxy, then `CONNECT`; the proxy resolves the URL's host.
    Proxy(ProxyPlan),
}

/// An HTTP proxy and the `CONNECT` request every connection sends it.
#[derive(Debug, Clone)]
pub(crate) struct ProxyPlan {
    /// The proxy's address, resolved once.
    pub(crate) addr: SocketAddr,
    /// `host:port` the tunnel is asked for (`--connect-to`'s, else the URL's).
    pub(crate) target: String,
    /// The whole request head: `CONNECT`, `Host` and, with credentials, `Proxy-Authorization`.
    pub(crate) request: Vec<u8>,
}

impl fmt::Display for Route {
    /// The route as error messages name it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Route::Direct(addr) => write!(f, "{addr}"),
            Route::Unix(path) => write!(f, "unix socket {}", path.display()),
            Route::Proxy(proxy) => write!(f, "{} through proxy {}", proxy.target, proxy.addr),
        }
    }
}

/// The route `connection` asks for to the URL's `host` and `port`; `resolve` turns a host and port
/// into an address (once for the run), `connect_to` parses `--connect-to`.
pub(crate) fn route(
    connection: &Connection,
    host: &str,
    port: u16,
    resolve: impl Fn(&str, u16) -> Result<SocketAddr>,
    connect_to: impl Fn(&str) -> Result<SocketAddr>,
) -> Result<Route> {
    if let Some(path) = &connection.unix_socket {
        if connection.connect_to.is_some() || connection.proxy.is_some() {
            usage_bail!("--unix-socket cannot be combined with --connect-to or --proxy: it is where every connection goes");
        }
        if path.as_os_str().is_empty() {
            usage_bail!("--unix-socket needs a path");
        }
        return Ok(Route::Unix(path.clone()));
    }
    let Some(proxy) = &connection.proxy else {
        return Ok(Route::Direct(match &connection.connect_to {
            Some(given) => connect_to(given)?,
            None => resolve(host, port)?,
        }));
    };
    // The target goes into the request line and `Host`: built from checked parts only.
    let target = match &connection.connect_to {
        Some(given) => {
            let (host, port) = parse_connect_to(given)?;
            authority(&host, port)
        }
        None => match checked_host(host) {
            Some(host) => authority(host, port),
            None => usage_bail!(
                "--proxy: the URL's host '{host}' cannot be a CONNECT target (a DNS name or an IP address)"
            ),
        },
    };
    let parsed = parse_proxy_url(proxy)?;
    Ok(Route::Proxy(ProxyPlan {
        addr: resolve(&parsed.host, parsed.port)?,
        request: connect_request(&target, parsed.credentials.as_deref()),
        target,
    }))
}

/// `--connect-to HOST:PORT` split into its host (an IPv6 address without brackets) and port,
/// checked but not resolved: a usage error unless the host is a DNS name or an IP address and
/// the port a number from 1 to 65535.
pub(crate) fn parse_connect_to(given: &str) -> Result<(String, u16)> {
    let Some((host, port)) = given.rsplit_once(':') else {
        usage_bail!("--connect-to '{}': expected HOST:PORT", quoted(given));
    };
    let Some(port) = port.parse::<u16>().ok().filter(|port| *port != 0) else {
        usage_bail!(
            "--connect-to '{}': '{}' is not a port number",
            quoted(given),
            quoted(port)
        );
    };
    let Some(host) = checked_host(host) else {
        usage_bail!(
            "--connect-to '{}': expected HOST:PORT, with a DNS name or an IP address as HOST",
            quoted(given)
        );
    };
    Ok((host.to_owned(), port))
}

/// `--connect-to HOST:PORT`, checked and resolved.
pub(super) fn resolve_connect_to(connect_to: &str) -> Result<SocketAddr> {
    let (host, port) = parse_connect_to(connect_to)?;
    resolve(&host, port)
}

/// Resolves `host` once for the whole run. When it has several addresses (`localhost`: ::1 and
/// 127.0.0.1), the first that accepts a connection is used, as curl and h2load would find it.
pub(super) fn resolve(host: &str, port: u16) -> Result<SocketAddr> {
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve host '{host}'"))?
        .collect();
    let Some(&first) = addrs.first() else {
        anyhow::bail!("host '{host}' has no address");
    };
    if addrs.len() == 1 {
        return Ok(first);
    }
    let probe_limit = Duration::from_secs(1);
    Ok(addrs
        .iter()
        .copied()
        .find(|addr| std::net::TcpStream::connect_timeout(addr, probe_limit).is_ok())
        .unwrap_or(first))
}

/// `host` without the brackets of an IPv6 address, if it is an IP address or a DNS name (letters,
/// digits, `-`, `.`, `_`): nothing that could end a request line or header.
fn checked_host(host: &str) -> Option<&str> {
    let unbracketed = host
        .strip_prefix('[')
        .and_then(|inner| inner.strip_suffix(']'));
    if let Some(inner) = unbracketed {
        return inner.parse::<Ipv6Addr>().is_ok().then_some(inner);
    }
    if host.parse::<Ipv6Addr>().is_ok() {
        return Some(host);
    }
    let name = !host.is_empty()
        && host
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_'));
    name.then_some(host)
}

/// `host:port`, with an IPv6 address in brackets.
fn authority(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// What a `--proxy` URL says.
#[derive(Debug, PartialEq)]
struct ProxyUrl {
    host: String,
    port: u16,
    /// `user:password`, percent-decoded.
    credentials: Option<String>,
}

fn parse_proxy_url(url: &str) -> Result<ProxyUrl> {
    // Messages show the URL without its user name and password.
    let shown = super::target::shown(url);
    let uri = match url.parse::<Uri>() {
        Ok(uri) => uri,
        Err(error) => usage_bail!("--proxy '{}' is not a valid URL: {error}", quoted(&shown)),
    };
    let url = quoted(&shown);
    match uri.scheme_str() {
        Some("http") => {}
        Some(_) | None => usage_bail!(
            "--proxy '{url}': only http:// proxies are supported (http://[USER:PASS@]HOST:PORT; the tunnel carries TLS itself for https:// URLs)"
        ),
    }
    if !matches!(uri.path_and_query().map(|pq| pq.as_str()), None | Some("/")) {
        usage_bail!("--proxy '{url}': expected http://[USER:PASS@]HOST:PORT, without a path");
    }
    let Some(authority) = uri.authority() else {
        usage_bail!("--proxy '{url}' has no host");
    };
    let Some(port) = authority.port_u16().filter(|port| *port != 0) else {
        usage_bail!("--proxy '{url}': give the proxy's port (http://HOST:PORT)");
    };
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    if host.is_empty() {
        usage_bail!("--proxy '{url}' has no host");
    }
    let credentials = match authority.as_str().rsplit_once('@') {
        Some((userinfo, _)) => match percent_decode(userinfo) {
            Some(decoded) => Some(decoded),
            None => usage_bail!("--proxy: the user name or password has a broken %-escape"),
        },
        None => None,
    };
    Ok(ProxyUrl {
        host: host.to_owned(),
        port,
        credentials,
    })
}

/// Decodes the `%XX` escapes of a URL's user information; `None` for a broken escape or a result
/// that is not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&byte, after)) = rest.split_first() {
        if byte == b'%' {
            let hex = std::str::from_utf8(after.get(..2)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &after[2..];
        } else {
            bytes.push(byte);
            rest = after;
        }
    }
    String::from_utf8(bytes).ok()
}

/// The `CONNECT` request head for `target`, with Basic credentials when given (RFC 9110 §9.3.6,
/// §11.7.1).
fn connect_request(target: &str, credentials: Option<&str>) -> Vec<u8> {
    let mut head = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n");
    if let Some(credentials) = credentials {
        let encoded = base64::engine::general_purpose::STANDARD.encode(credentials);
        head.push_str(&format!("Proxy-Authorization: Basic {encoded}\r\n"));
    }
    head.push_str("\r\n");
    head.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(url: &str) -> std::result::Result<ProxyUrl, String> {
        parse_proxy_url(url).map_err(|error| {
            assert!(crate::error::is_usage(&error), "{error}");
            error.to_string()
        })
    }

    #[test]
    fn proxy_urls_give_host_port_and_decoded_credentials() {
        assert_eq!(
            parsed("http://127.0.0.1:3128").unwrap(),
            ProxyUrl {
                host: "127.0.0.1".into(),
                port: 3128,
                credentials: None
            }
        );
        assert_eq!(
            parsed("http://al%40ice:p%3Ass@[::1]:8080/").unwrap(),
            ProxyUrl {
                host: "::1".into(),
                port: 8080,
                credentials: Some("al@ice:p:ss".into())
            }
        );
    }

    #[test]
    fn other_proxies_are_usage_errors_that_say_why() {
        for (url, says) in [
            ("https://127.0.0.1:3128", "only http:// proxies"),
            ("socks5://127.0.0.1:1080", "only http:// proxies"),
            ("127.0.0.1:3128", "only http:// proxies"),
            ("http://127.0.0.1", "give the proxy's port"),
            ("http://127.0.0.1:0", "give the proxy's port"),
            ("http://127.0.0.1:3128/path", "without a path"),
            ("http://u:%zz@127.0.0.1:3128", "broken %-escape"),
        ] {
            let message = parsed(url).unwrap_err();
            assert!(message.contains(says), "{url}: {message}");
        }
    }

    #[test]
    fn connect_to_gives_a_host_and_port_with_nothing_else() {
        for (given, host, port) in [
            ("127.0.0.1:443", "127.0.0.1", 443),
            ("backend-1.example_x.com:80", "backend-1.example_x.com", 80),
            ("[::1]:8443", "::1", 8443),
            ("::1:8443", "::1", 8443),
        ] {
            assert_eq!(
                parse_connect_to(given).unwrap(),
                (host.to_owned(), port),
                "{given}"
            );
        }
        for given in [
            "127.0.0.1",
            ":80",
            "127.0.0.1:",
            "127.0.0.1:65536",
            "127.0.0.1:0",
            "127.0.0.1:1\r\nX: y",
            "a\nb:1",
            "a b:1",
            "u@host:1",
            "host/x:1",
            "[::1:80",
            "[not-v6]:80",
        ] {
            let error = parse_connect_to(given).unwrap_err();
            assert!(crate::error::is_usage(&error), "{given}: {error}");
            let message = error.to_string();
            assert!(!message.contains(['\r', '\n']), "{given:?}: {message}");
        }
    }

    #[test]
    fn connect_requests_name_the_target_and_carry_basic_credentials() {
        assert_eq!(
            connect_request("localhost:443", None),
            b"CONNECT localhost:443 HTTP/1.1\r\nHost: localhost:443\r\n\r\n"
        );
        // RFC 7617 §2's example.
        assert_eq!(
            String::from_utf8(connect_request("[::1]:80", Some("Aladdin:open sesame"))).unwrap(),
            "CONNECT [::1]:80 HTTP/1.1\r\nHost: [::1]:80\r\n\
             Proxy-Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==\r\n\r\n"
        );
    }
}
