//! What each request looks like: [`RequestTemplate`] (the wire parts from `-H`, `-d` and
//! `--method`, the paths, and their placeholders), built from the flags and checked.

use std::sync::Arc;

use anyhow::Result;
use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::Method;

use super::grpc::{GrpcBody, JsonMessage};
use super::inputs::Inputs;
use super::template::Template;
use crate::error::quoted;
use crate::input;
use crate::limits::MAX_BODY_FILE;
use crate::proto::request::RequestParts;
use crate::usage_bail;

/// What each request looks like. Engines prebuild their wire form from this once per thread.
#[derive(Debug, Clone)]
pub(crate) struct RequestTemplate {
    /// Method, authority, headers and body: what the wire encoders read (`proto` knows no plan).
    pub(crate) parts: RequestParts,
    /// Paths (with query) used in turn, or at random with `random_paths`.
    pub(crate) paths: Vec<String>,
    /// `--urls-random`: each request picks its path at random.
    pub(crate) random_paths: bool,
    /// The parts with placeholders, if any: engines then render each request.
    pub(crate) templated: Option<Arc<Templated>>,
    /// Whether requests take a number over the whole run (`{seq}`, and what random draws
    /// derive from): one shared counter, touched only then.
    pub(crate) numbered: bool,
}

/// The parts of a request that hold placeholders (`None`: sent as they are).
#[derive(Debug)]
pub(crate) struct Templated {
    /// One per path of [`RequestTemplate::paths`].
    pub(crate) paths: Vec<Option<Template>>,
    /// One per header of [`RequestParts::headers`].
    pub(crate) headers: Vec<Option<Template>>,
    /// The body's.
    pub(crate) body: Option<Template>,
    /// A gRPC cell's JSON message: the rendered body is encoded by it before it is sent.
    pub(crate) message: Option<Arc<JsonMessage>>,
    /// Whether a part uses `{seq}`: the run then numbers its requests.
    pub(crate) seq: bool,
}

impl Templated {
    /// The templates of `request`, `None` when no part holds a placeholder. Its body is a
    /// template only when `body_what` names it (in errors), and is read as JSON when `json`
    /// (`--grpc-data`: the braces are the JSON's own).
    fn parse(
        request: &RequestTemplate,
        body_what: Option<&str>,
        json: bool,
    ) -> Result<Option<Templated>> {
        let paths = request
            .paths
            .iter()
            .map(|path| {
                Template::parse(path.as_bytes(), &format!("URL path '{}'", quoted(path)))
                    .map(|template| template.map(Template::in_uri))
            })
            .collect::<Result<Vec<_>>>()?;
        let headers = request
            .parts
            .headers
            .iter()
            .map(|(name, value)| {
                Template::parse(
                    value.as_bytes(),
                    &format!(
                        "-H '{name}: {}'",
                        quoted(&String::from_utf8_lossy(value.as_bytes()))
                    ),
                )
            })
            .collect::<Result<Vec<_>>>()?;
        let body = match body_what {
            Some(what) if json => Template::parse_json(&request.parts.body, what)?,
            Some(what) => Template::parse(&request.parts.body, what)?,
            None => None,
        };
        let parts = || {
            paths
                .iter()
                .chain(&headers)
                .chain(std::iter::once(&body))
                .flatten()
        };
        if parts().next().is_none() {
            return Ok(None);
        }
        let seq = parts().any(Template::uses_seq);
        Ok(Some(Templated {
            seq,
            paths,
            headers,
            body,
            message: None,
        }))
    }

    /// Whether a part draws random numbers.
    pub(crate) fn uses_random(&self) -> bool {
        self.paths
            .iter()
            .chain(&self.headers)
            .chain(std::iter::once(&self.body))
            .flatten()
            .any(Template::uses_random)
    }
}

impl RequestTemplate {
    /// Whether requests draw random numbers (`--urls-random`, `{rand:N}`, `{uuid}`).
    pub(crate) fn draws_random(&self) -> bool {
        self.random_paths || self.templated.as_ref().is_some_and(|t| t.uses_random())
    }
}

/// Headers every request carries unless `-H` replaces them.
fn default_headers() -> Vec<(HeaderName, HeaderValue)> {
    vec![
        (
            http::header::USER_AGENT,
            HeaderValue::from_static(concat!("h2load-rs/", env!("CARGO_PKG_VERSION"))),
        ),
        (http::header::ACCEPT, HeaderValue::from_static("*/*")),
    ]
}

pub(super) fn request_template(
    inputs: &Inputs,
    paths: Vec<String>,
    authority: &str,
    grpc: Option<(&str, GrpcBody)>,
) -> Result<RequestTemplate> {
    let given = &inputs.request;
    let grpc_method = inputs.grpc.method.is_some();
    let mut headers = default_headers();
    if grpc.is_some() {
        headers.extend(grpc_headers(inputs.connection.request_timeout));
    }
    let mut authority = authority.to_owned();
    for raw in &given.headers {
        match header_flag(raw)? {
            HeaderFlag::Authority(text) => authority = text,
            HeaderFlag::Field(name, value) => {
                headers.retain(|(existing, _)| *existing != name);
                headers.push((name, value));
            }
        }
    }
    let (paths, body, body_what, encoder) = match grpc {
        Some((path, GrpcBody::Fixed(message))) => (vec![path.to_owned()], message, None, None),
        Some((path, GrpcBody::Templated { json, encoder })) => (
            vec![path.to_owned()],
            json,
            Some("--grpc-data".to_owned()),
            Some(encoder),
        ),
        None => match (&given.data, &given.body) {
            (Some(path), _) => (
                paths,
                Bytes::from(input::read(path, "-d file", MAX_BODY_FILE)?),
                Some(format!("-d file '{}'", path.display())),
                None,
            ),
            (None, Some(text)) => (
                paths,
                Bytes::from(text.clone()),
                Some("--body".to_owned()),
                None,
            ),
            (None, None) => (paths, Bytes::new(), None, None),
        },
    };
    let method = match &given.method {
        Some(_) if encoder.is_some() || grpc_method => {
            usage_bail!("--method cannot be given with --grpc: a gRPC call is a POST")
        }
        None if grpc_method => Method::POST,
        Some(method) => match Method::from_bytes(method.as_bytes()) {
            Ok(method) => method,
            Err(_) => usage_bail!("--method '{}' is not a valid HTTP method", quoted(method)),
        },
        None if given.data.is_some() || given.body.is_some() => Method::POST,
        None => Method::GET,
    };
    let mut request = RequestTemplate {
        parts: RequestParts {
            method,
            authority,
            headers,
            body,
            declares_length: !grpc_method,
        },
        paths,
        random_paths: inputs.target.urls_random,
        templated: None,
        numbered: false,
    };
    let json = encoder.is_some();
    request.templated =
        Templated::parse(&request, body_what.as_deref(), json)?.map(|mut templated| {
            templated.message = encoder;
            Arc::new(templated)
        });
    request.numbered = request.draws_random()
        || request
            .templated
            .as_ref()
            .is_some_and(|templated| templated.seq);
    Ok(request)
}

/// The fields every gRPC call carries (PROTOCOL-HTTP2.md): its content-type, `te: trailers`
/// (which proxies read as "this client understands trailers"), and its deadline from
/// `--request-timeout`. `-H` may replace the content-type (`application/grpc+proto`, say) and
/// adds metadata.
fn grpc_headers(timeout: Option<std::time::Duration>) -> Vec<(HeaderName, HeaderValue)> {
    let mut headers = vec![
        (
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/grpc"),
        ),
        (http::header::TE, HeaderValue::from_static("trailers")),
    ];
    if let Some(timeout) = timeout {
        let mut value = Vec::new();
        crate::proto::grpc::write_timeout(&mut value, timeout);
        headers.push((
            HeaderName::from_static("grpc-timeout"),
            HeaderValue::from_bytes(&value).expect("digits and a unit letter"),
        ));
    }
    headers
}

/// What one `-H` sets: the authority the connections are made for, or a header field.
pub(crate) enum HeaderFlag {
    Authority(String),
    Field(HeaderName, HeaderValue),
}

/// One `-H` `raw`, checked as a run takes it (also by `k8s-job`, for the pods' load).
pub(crate) fn header_flag(raw: &str) -> Result<HeaderFlag> {
    let (name, text) = parse_header(raw)?;
    // Host / :authority too: a CR or LF there would smuggle a header into every request.
    let Ok(value) = HeaderValue::from_str(&text) else {
        usage_bail!(
            "-H '{}': the value has characters not allowed in a header",
            quoted(raw)
        );
    };
    if name == "host" || name == ":authority" {
        // Connections are made for one authority (and TLS for one name): it is not rendered.
        if Template::parse(text.as_bytes(), "-H")?.is_some() {
            usage_bail!(
                "-H '{}': placeholders are not rendered in the authority (Host, :authority)",
                raw.escape_debug()
            );
        }
        return Ok(HeaderFlag::Authority(text));
    }
    refuse_framing(&name, &text, raw)?;
    let Ok(name) = HeaderName::from_bytes(name.as_bytes()) else {
        usage_bail!(
            "-H '{}': '{}' is not a valid header name",
            quoted(raw),
            quoted(&name)
        );
    };
    Ok(HeaderFlag::Field(name, value))
}

/// Header fields a request's framing or connection depends on: the run writes them itself
/// (Content-Length from the body, `connection: close` for `--no-keepalive`, the h2c upgrade's),
/// and HTTP/2 and HTTP/3 forbid the connection-specific ones (RFC 9113 §8.2.2, RFC 9114
/// §4.2). Given twice, or beside the computed value, they would desynchronise the connection.
const FRAMING_HEADERS: [&str; 8] = [
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "upgrade",
    "http2-settings",
    "te",
];

/// Refuses `-H` `raw` (`name: value`) when it sets a framing or connection-specific field; `te:
/// trailers`, the one value HTTP/2 and HTTP/3 allow, passes.
fn refuse_framing(name: &str, value: &str, raw: &str) -> Result<()> {
    if !FRAMING_HEADERS.contains(&name) || (name == "te" && value.eq_ignore_ascii_case("trailers"))
    {
        return Ok(());
    }
    usage_bail!(
        "-H '{}': {name} is the run's to set (the body's length comes from -d, the connection's \
         handling from --no-keepalive and --proto); it cannot be given as a header",
        quoted(raw)
    )
}

/// Splits `Name: value`; a leading `:` belongs to the name (`:authority: x`).
fn parse_header(raw: &str) -> Result<(String, String)> {
    // Shown escaped: a CR or LF in the flag must not break the error message's one line.
    let shown = quoted(raw);
    let search_from = usize::from(raw.starts_with(':'));
    let Some(colon) = raw[search_from..].find(':').map(|at| at + search_from) else {
        usage_bail!("-H '{shown}': expected 'Name: value'");
    };
    let name = raw[..colon].trim().to_ascii_lowercase();
    let value = raw[colon + 1..].trim().to_owned();
    if name.is_empty() || name == ":" {
        usage_bail!("-H '{shown}': the header name is empty");
    }
    if name.starts_with(':') && name != ":authority" {
        usage_bail!(
            "-H '{shown}': only the :authority pseudo-header can be set (use --method for :method)"
        );
    }
    Ok((name, value))
}

#[cfg(test)]
mod tests {
    use crate::plan::testing::{plan, usage_message};

    #[test]
    fn headers_replace_defaults_and_host_sets_authority() {
        let plan = plan(&[
            "-H",
            "User-Agent: x",
            "-H",
            "Host: example",
            "-H",
            "x-a:  b ",
            "http://127.0.0.1:1/",
        ])
        .unwrap();
        let names: Vec<_> = plan
            .request
            .parts
            .headers
            .iter()
            .map(|(n, v)| format!("{n}={}", v.to_str().unwrap()))
            .collect();
        assert_eq!(names, ["accept=*/*", "user-agent=x", "x-a=b"]);
        assert_eq!(plan.request.parts.authority, "example");
    }

    #[test]
    fn host_is_checked_like_every_header() {
        for header in ["Host: a\r\nEvil: b", ":authority: a\nb", "Host: a\0b"] {
            let message = usage_message(&["-H", header, "http://127.0.0.1:1/"]);
            assert!(message.contains("not allowed in a header"), "{message}");
            assert!(
                !message.contains('\n') && !message.contains('\r'),
                "{message}"
            );
        }
    }

    #[test]
    fn unreadable_body_files_are_usage_errors() {
        assert!(
            usage_message(&["-d", "/nonexistent/body", "http://127.0.0.1:1/"])
                .contains("cannot read the -d file '/nonexistent/body'")
        );
        assert!(usage_message(&["-d", "/dev/zero", "http://127.0.0.1:1/"])
            .contains("the -d file '/dev/zero' is not a regular file"));
    }
}
