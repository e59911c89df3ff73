//! The target the URLs name: scheme, host, port, authority and every URL's path, credentials
//! dropped (the host is resolved by `route.rs`, which reaches it).

use std::borrow::Cow;

use anyhow::Result;
use http::Uri;

use crate::error::quoted;
use crate::usage_bail;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Scheme {
    Http,
    Https,
}

/// What the URLs say: where to connect, what to ask for, and how to name the server.
pub(super) struct ParsedUrls {
    /// The URLs, without any user name and password.
    pub(super) urls: Vec<String>,
    /// The first URL's scheme.
    pub(super) scheme: Scheme,
    /// The first URL's host, without brackets.
    pub(super) host: String,
    /// The first URL's port, or the scheme's.
    pub(super) port: u16,
    /// `host[:port]` as written in the first URL.
    pub(super) authority: String,
    /// Every URL's path and query.
    pub(super) paths: Vec<String>,
    /// What was dropped from the URLs.
    pub(super) warnings: Vec<String>,
}

/// Parses the URLs, `given` then `file_urls` (`-i`): the first gives scheme, host and port; every
/// URL gives a path (h2load's rule). The host is not resolved here (`--connect-to` may make that
/// unnecessary). Only the paths of the file's URLs are kept: a long list is held once.
pub(super) fn parse_target(given: &[String], file_urls: &[String]) -> Result<ParsedUrls> {
    let mut warnings = Vec::new();
    let mut clean = |url: &String| match without_userinfo(url) {
        Some(clean) => {
            warnings.push(format!(
                "URL '{}': the user name and password in it are neither sent nor logged; \
                 to authenticate, use -H 'Authorization: Basic …'",
                quoted(&clean)
            ));
            clean
        }
        None => url.clone(),
    };
    let urls: Vec<String> = given.iter().map(&mut clean).collect();
    let file_first = match (urls.is_empty(), file_urls.first()) {
        (false, _) => None,
        (true, Some(first)) => Some(clean(first)),
        (true, None) => usage_bail!("no URL given"),
    };
    let first = file_first.as_ref().unwrap_or_else(|| &urls[0]);
    let uri = parse_absolute_url(first)?;
    let scheme = match uri.scheme_str() {
        Some("https") => Scheme::Https,
        _ => Scheme::Http,
    };
    let Some(authority) = uri.authority() else {
        usage_bail!("URL '{}' has no host", quoted(first));
    };
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    if host.is_empty() {
        usage_bail!("URL '{}' has no host", quoted(first));
    }
    let port = match (authority.port_u16(), authority.as_str().rsplit_once(':')) {
        (Some(0), _) => usage_bail!("URL '{}': port 0 cannot be connected to", quoted(first)),
        (Some(port), _) => port,
        (None, Some((_, after))) if !after.ends_with(']') => {
            usage_bail!(
                "URL '{}': '{}' is not a port number",
                quoted(first),
                quoted(after)
            )
        }
        (None, _) if scheme == Scheme::Https => 443,
        (None, _) => 80,
    };
    let mut paths = Vec::with_capacity(given.len() + file_urls.len());
    paths.push(path_of(&uri));
    let rest = if file_first.is_some() {
        &file_urls[1..]
    } else {
        file_urls
    };
    for url in urls.iter().skip(1).chain(rest) {
        if url.starts_with('/') {
            paths.push(bare_path(url)?);
        } else {
            paths.push(path_of(&parse_absolute_url(&clean(url))?));
        }
    }
    Ok(ParsedUrls {
        scheme,
        host: host.to_owned(),
        port,
        authority: authority.as_str().to_owned(),
        paths,
        warnings,
        urls,
    })
}

/// The URL without the `user:password@` of its authority, if it had one (a URL without its
/// scheme too). Credentials never reach the Host header, `:authority`, the report or a log.
fn without_userinfo(url: &str) -> Option<String> {
    let authority_start = url.find("://").map_or(0, |scheme_end| scheme_end + 3);
    let rest = &url[authority_start..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let at = rest[..authority_end].rfind('@')?;
    Some(format!("{}{}", &url[..authority_start], &rest[at + 1..]))
}

/// `url` as a message may show it: without the user name and password in it.
pub(crate) fn shown(url: &str) -> Cow<'_, str> {
    without_userinfo(url).map_or(Cow::Borrowed(url), Cow::Owned)
}

/// An http:// or https:// URL (its fragment, if any, dropped as `Uri` does).
pub(crate) fn parse_absolute_url(url: &str) -> Result<Uri> {
    let shown = shown(url);
    let quoted_url = quoted(&shown);
    if !url.contains("://") {
        usage_bail!(
            "URL '{}' has no scheme: write http://{} (or https://{} for TLS)",
            quoted_url,
            quoted_url,
            quoted_url
        );
    }
    match url.parse::<Uri>() {
        Ok(uri) => match uri.scheme_str() {
            Some("http" | "https") => Ok(uri),
            Some(other) => {
                usage_bail!(
                    "URL '{}': unsupported scheme '{}' (use http:// or https://)",
                    quoted_url,
                    quoted(other)
                )
            }
            None => usage_bail!("URL '{}' has no scheme (write http://…)", quoted_url),
        },
        Err(error) => usage_bail!("URL '{}' is not valid: {error}", quoted_url),
    }
}

/// A path given without scheme and host (`/…`), normalised like a URL's: its fragment dropped
/// (never sent), and refused where a URL's path would be.
pub(crate) fn bare_path(path: &str) -> Result<String> {
    match path.parse::<http::uri::PathAndQuery>() {
        Ok(valid) => Ok(valid.as_str().to_owned()),
        Err(error) => usage_bail!("path '{}' is not valid: {error}", quoted(path)),
    }
}

fn path_of(uri: &Uri) -> String {
    uri.path_and_query()
        .map(|pq| pq.as_str())
        .filter(|pq| !pq.is_empty())
        .unwrap_or("/")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::uring::probe::check;
    use crate::plan::build::build;
    use crate::plan::cells::cells;
    use crate::plan::route::Route;
    use crate::plan::run_plan::{Negotiation, Protocol, StopRule};
    use crate::plan::testing::{plan, usage_message};
    use crate::plan::DEFAULT_REQUESTS;
    use clap::Parser;

    #[test]
    fn first_url_gives_the_target_and_every_url_a_path() {
        let plan = plan(&[
            "http://127.0.0.1:8080/ping?x=1#top",
            "http://other/b#f",
            "/c",
            "/d?q#frag",
        ])
        .unwrap();
        assert!(
            matches!(plan.destination.route, Route::Direct(addr) if addr == "127.0.0.1:8080".parse().unwrap())
        );
        assert_eq!(plan.request.parts.authority, "127.0.0.1:8080");
        // Fragments are never sent, whether the URL is full or a bare path.
        assert_eq!(plan.request.paths, ["/ping?x=1", "/b", "/c", "/d?q"]);
        assert_eq!(plan.negotiation, Negotiation::Direct(Protocol::H2c));
        assert!(plan.tls.is_none());
        assert_eq!(plan.stop, StopRule::Requests(DEFAULT_REQUESTS));
    }

    #[test]
    fn file_urls_follow_the_command_line_and_templates_are_found() {
        let cli = crate::cli::Cli::try_parse_from([
            "h2load-rs",
            "--urls-random",
            "--seed",
            "9",
            "-H",
            "x-id: {uuid}",
            "http://127.0.0.1:1/a",
        ])
        .unwrap();
        let inputs = crate::app::inputs::from_flags(&cli.load);
        let file = ["/b/{seq}".to_owned(), "http://other:2/c".to_owned()];
        let built = build(
            &inputs,
            &cli.load.urls,
            &file,
            &cells(&inputs, None)[0],
            false,
            &check,
        )
        .unwrap();
        assert_eq!(built.request.paths, ["/a", "/b/{seq}", "/c"]);
        assert_eq!(
            built.destination.urls,
            ["http://127.0.0.1:1/a"],
            "the file's stay out"
        );
        assert!(
            matches!(built.destination.route, Route::Direct(addr) if addr == "127.0.0.1:1".parse().unwrap())
        );
        assert_eq!(built.seed, 9);
        assert!(built.request.random_paths && built.request.numbered);
        let templated = built.request.templated.as_ref().unwrap();
        let templated_paths: Vec<bool> = templated.paths.iter().map(Option::is_some).collect();
        assert_eq!(templated_paths, [false, true, false]);
        assert!(templated.seq && templated.uses_random());
        let plain = plan(&["http://127.0.0.1:1/a", "/b"]).unwrap();
        assert!(plain.request.templated.is_none() && !plain.request.numbered);
    }

    #[test]
    fn credentials_in_the_url_are_dropped_with_a_warning() {
        let plan = plan(&["http://user:secret@127.0.0.1:8080/p?q", "/b"]).unwrap();
        assert_eq!(plan.request.parts.authority, "127.0.0.1:8080");
        assert_eq!(plan.destination.urls, ["http://127.0.0.1:8080/p?q", "/b"]);
        assert_eq!(plan.warnings.len(), 1);
        assert!(!plan.warnings[0].contains("secret"), "{}", plan.warnings[0]);
        assert!(plan.warnings[0].contains("-H 'Authorization: Basic"));
        assert_eq!(
            without_userinfo("http://a@b.example/x@y"),
            Some("http://b.example/x@y".to_owned())
        );
        assert_eq!(without_userinfo("http://b.example/x@y"), None);
    }

    #[test]
    fn connect_to_needs_no_resolvable_host() {
        let plan = plan(&[
            "--connect-to",
            "127.0.0.1:9",
            "http://no-such-host.invalid/",
        ])
        .unwrap();
        assert!(
            matches!(plan.destination.route, Route::Direct(addr) if addr == "127.0.0.1:9".parse().unwrap())
        );
        assert_eq!(plan.request.parts.authority, "no-such-host.invalid");
    }

    #[test]
    fn unix_sockets_and_proxies_leave_the_host_unresolved() {
        let built = plan(&[
            "--unix-socket",
            "/run/app.sock",
            "https://no-such-host.invalid/",
        ])
        .unwrap();
        assert!(
            matches!(&built.destination.route, Route::Unix(path) if path.to_str() == Some("/run/app.sock"))
        );
        assert_eq!(built.request.parts.authority, "no-such-host.invalid");
        let built = plan(&[
            "--proxy",
            "http://u:p@127.0.0.1:3128",
            "http://no-such-host.invalid:8080/",
        ])
        .unwrap();
        let Route::Proxy(proxy) = &built.destination.route else {
            panic!("{:?}", built.destination.route);
        };
        assert_eq!(proxy.addr, "127.0.0.1:3128".parse().unwrap());
        assert_eq!(proxy.target, "no-such-host.invalid:8080");
        assert_eq!(
            proxy.request,
            b"CONNECT no-such-host.invalid:8080 HTTP/1.1\r\nHost: no-such-host.invalid:8080\r\n\
              Proxy-Authorization: Basic dTpw\r\n\r\n"
        );
        let built = plan(&[
            "--proxy",
            "http://127.0.0.1:3128",
            "--connect-to",
            "10.0.0.1:443",
            "https://[::1]/",
        ])
        .unwrap();
        assert_eq!(
            built.destination.route.to_string(),
            "10.0.0.1:443 through proxy 127.0.0.1:3128"
        );
    }

    #[test]
    fn a_proxy_tunnel_target_from_connect_to_is_checked_like_without_a_proxy() {
        fn proxied(connect_to: &str) -> [&str; 5] {
            let url = "http://127.0.0.1:19180/ping";
            [
                "--proxy",
                "http://127.0.0.1:3128",
                "--connect-to",
                connect_to,
                url,
            ]
        }
        // What reached the request line unchecked: a header injection, then a missing port.
        for (connect_to, says) in [
            ("127.0.0.1:1\r\nX-Injected: yes", "is not a port number"),
            (
                "127.0.0.1\r\nX-Injected: yes:1",
                "with a DNS name or an IP address as HOST",
            ),
            ("not a host", "expected HOST:PORT"),
            ("not a host:1", "with a DNS name or an IP address as HOST"),
            ("127.0.0.1:0", "is not a port number"),
        ] {
            let message = usage_message(&proxied(connect_to));
            assert!(message.contains(says), "{connect_to:?}: {message}");
            let direct = usage_message(&["--connect-to", connect_to, "http://127.0.0.1/"]);
            assert_eq!(direct, message);
        }
        // Without --connect-to the URL's host is the target: what a URL allows in a host but
        // a CONNECT target has no use for is refused too.
        let message = usage_message(&["--proxy", "http://127.0.0.1:3128", "http://a!b'c/"]);
        assert!(message.contains("cannot be a CONNECT target"), "{message}");
        // The target is rebuilt from its parts: IPv6 in brackets, given with or without.
        for connect_to in ["[::1]:8443", "::1:8443"] {
            let built = plan(&proxied(connect_to)).unwrap();
            let Route::Proxy(proxy) = &built.destination.route else {
                panic!("{:?}", built.destination.route);
            };
            assert_eq!(
                proxy.request,
                b"CONNECT [::1]:8443 HTTP/1.1\r\nHost: [::1]:8443\r\n\r\n"
            );
        }
    }
}
