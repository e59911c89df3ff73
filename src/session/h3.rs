//! The requests of a run as HTTP/3 frames: HEADERS prepared once per thread for the first
//! paths, encoded per request past them or when templated, and the body's DATA frame.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::Method;

use crate::plan::RunPlan;
use crate::proto::check::Checks;
use crate::proto::events::EventPlan;
use crate::proto::h3::{
    client_control_stream, encode_field_section, headers_frame, write_frame_head, DATA,
};
use crate::recorder::RequestStart;
use crate::session::h2::CONNECTION_SPECIFIC;
use crate::session::render::Renderer;
use crate::session::{Ledger, PREPARED_PATHS};

/// Requests prepared once per thread: a HEADERS frame for each of the first [`PREPARED_PATHS`]
/// paths, the body's DATA frame, the opening of the client's control stream.
pub(crate) struct H3Template {
    headers: Vec<Bytes>,
    /// The fields of an untemplated request, with an empty `:path` at [`PATH_FIELD`], for the
    /// paths past the prepared ones.
    fields: Vec<(String, Vec<u8>)>,
    /// The DATA frame's type and length for the body (empty without a body).
    body_head: Bytes,
    body: Bytes,
    pub(crate) control: Bytes,
    pub(crate) lanes: usize,
    pub(crate) request_timeout: Option<Duration>,
    /// How long a lane may wait for stream credit while the connection holds no stream:
    /// `--request-timeout`, else the QUIC idle timeout.
    pub(crate) credit_wait: Duration,
    pub(crate) checks: Option<Arc<Checks>>,
    /// How responses are read as event streams.
    pub(crate) events: Option<EventPlan>,
    /// Templated requests, rendered one by one.
    renderer: Option<Renderer>,
    /// Whether requests are HEAD: their responses have no content.
    pub(crate) head: bool,
}

impl H3Template {
    pub(crate) fn new(plan: &RunPlan) -> Self {
        let template = &plan.request;
        let mut fields: Vec<(String, Vec<u8>)> = vec![
            (":method".into(), template.parts.method.as_str().into()),
            (":scheme".into(), b"https".to_vec()),
            (
                ":authority".into(),
                template.parts.authority.as_bytes().to_vec(),
            ),
            (":path".into(), Vec::new()),
        ];
        for (name, value) in &template.parts.headers {
            if !CONNECTION_SPECIFIC.contains(&name.as_str()) {
                fields.push((name.as_str().into(), value.as_bytes().to_vec()));
            }
        }
        if let Some(length) = template.parts.content_length() {
            fields.push(("content-length".into(), length.to_string().into_bytes()));
        }
        let headers = template
            .paths
            .iter()
            .take(PREPARED_PATHS)
            .map(|path| headers_for(&fields, path.as_bytes()))
            .collect();
        let body = if template.parts.method == Method::HEAD {
            Bytes::new()
        } else {
            template.parts.body.clone()
        };
        let mut body_head = Vec::new();
        if !body.is_empty() {
            write_frame_head(&mut body_head, DATA, body.len() as u64);
        }
        H3Template {
            headers,
            fields,
            body_head: body_head.into(),
            body,
            control: client_control_stream().into(),
            lanes: plan.max_concurrent,
            request_timeout: plan.timeouts.request,
            credit_wait: plan.timeouts.request.unwrap_or(plan.timeouts.quic_idle),
            checks: plan.checks.clone(),
            events: plan.events,
            renderer: Renderer::new(template),
            head: template.parts.method == Method::HEAD,
        }
    }

    /// The frames of request `start` for path `path`: HEADERS, the DATA frame's head and the
    /// body. A templated request is rendered into new buffers (quinn takes ownership of what it
    /// sends, so there is no buffer to reuse); literals only, QPACK's dynamic table is off.
    pub(crate) fn frames(
        &self,
        path: usize,
        start: &RequestStart,
        ledger: &Ledger<'_>,
    ) -> [Bytes; 3] {
        let Some(renderer) = &self.renderer else {
            let headers = match self.headers.get(path) {
                Some(prepared) => prepared.clone(),
                None => headers_for(&self.fields, ledger.path(path).as_bytes()),
            };
            return [headers, self.body_head.clone(), self.body.clone()];
        };
        let request = renderer.request();
        let mut path_value = Vec::new();
        renderer.path(path, start, ledger, &mut path_value);
        let mut rest: Vec<(&str, Vec<u8>)> = Vec::new();
        for (index, (name, _)) in request.parts.headers.iter().enumerate() {
            if !CONNECTION_SPECIFIC.contains(&name.as_str()) {
                let mut value = Vec::new();
                renderer.header_value(index, start, ledger, &mut value);
                rest.push((name.as_str(), value));
            }
        }
        let body = if renderer.body_templated() && request.parts.method != Method::HEAD {
            renderer.with_plain_body(start, ledger, Bytes::copy_from_slice)
        } else {
            self.body.clone()
        };
        if let Some(length) = renderer.content_length(body.len()) {
            rest.push(("content-length", length.to_string().into_bytes()));
        }
        let mut fields: Vec<(&str, &[u8])> = vec![
            (":method", request.parts.method.as_str().as_bytes()),
            (":scheme", b"https"),
            (":authority", request.parts.authority.as_bytes()),
            (":path", &path_value),
        ];
        fields.extend(rest.iter().map(|(name, value)| (*name, value.as_slice())));
        let mut body_head = Vec::new();
        if !body.is_empty() {
            write_frame_head(&mut body_head, DATA, body.len() as u64);
        }
        [
            Bytes::from(headers_frame(&encode_field_section(&fields))),
            Bytes::from(body_head),
            body,
        ]
    }
}

/// Where `:path` is among an untemplated request's fields.
const PATH_FIELD: usize = 3;

/// The HEADERS frame of `fields` (an untemplated request's) with `path` as its `:path`.
fn headers_for(fields: &[(String, Vec<u8>)], path: &[u8]) -> Bytes {
    let fields: Vec<(&str, &[u8])> = fields
        .iter()
        .enumerate()
        .map(|(index, (name, value))| {
            let value = if index == PATH_FIELD { path } else { value };
            (name.as_str(), value)
        })
        .collect();
    Bytes::from(headers_frame(&encode_field_section(&fields)))
}
