//! What is prepared once per thread for every HTTP/2 connection: the request's HPACK fields and
//! shared body ([`H2Template`]), and the SETTINGS payload the client announces.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::Method;

use super::super::render::Renderer;
use super::super::PREPARED_PATHS;
use super::CONNECTION_SPECIFIC;
use crate::plan::grpc::GrpcPlan;
use crate::plan::{H2Settings, RunPlan};
use crate::proto::check::Checks;
use crate::proto::events::EventPlan;
use crate::proto::h2 as frame;
use crate::proto::hpack;

/// Requests prepared once per thread: HPACK fields and the shared body.
pub(crate) struct H2Template {
    /// `:method`, `:scheme`, then `:authority` and the other headers; the path goes in between.
    pub(super) fields: Vec<hpack::Field>,
    /// A `:path` field for each of the first [`PREPARED_PATHS`] URLs, which the encoder may add to
    /// the server's table (4 KiB by default: a few dozen paths at most); the others go as literals.
    pub(super) paths: Vec<hpack::Field>,
    /// The `:path` name, for literal paths: rendered ones and those past the prepared ones.
    pub(super) path_literal: hpack::Field,
    pub(super) body: Bytes,
    pub(super) lanes: usize,
    pub(super) settings: H2Settings,
    pub(super) request_timeout: Option<Duration>,
    pub(super) checks: Option<Arc<Checks>>,
    /// Templated requests: rendered one by one, their rendered values never indexed.
    pub(super) renderer: Option<Renderer>,
    /// For each of `fields`, the plan header it comes from (`:authority` and content-length
    /// come from none), to find its template.
    pub(super) field_headers: Vec<Option<usize>>,
    /// The content-length field of a templated body, whose value is rendered per request.
    pub(super) content_length: hpack::Field,
    /// Whether each request's body is rendered (a templated body, and a method that sends one).
    pub(super) renders_body: bool,
    /// Whether requests are HEAD: their responses have no content whatever content-length says.
    pub(super) head: bool,
    /// In a gRPC cell, the call: responses are then read as gRPC calls (messages,
    /// `grpc-status`), and streaming calls send their messages one by one.
    pub(super) grpc: Option<GrpcPlan>,
    /// How responses are read as event streams (`None` in gRPC cells and with `--events off`).
    pub(super) events: Option<EventPlan>,
}

/// Fields before `:path` in `H2Template::fields` (`:method`, `:scheme`).
pub(super) const FIELDS_BEFORE_PATH: usize = 2;

impl H2Template {
    pub(crate) fn new(plan: &RunPlan) -> Self {
        let template = &plan.request;
        let scheme: &[u8] = if plan.tls.is_some() {
            b"https"
        } else {
            b"http"
        };
        let mut fields = vec![
            hpack::Field::new(":method", template.parts.method.as_str().as_bytes()),
            hpack::Field::new(":scheme", scheme),
            hpack::Field::new(":authority", template.parts.authority.as_bytes()),
        ];
        let mut field_headers = vec![None; fields.len()];
        for (index, (name, value)) in template.parts.headers.iter().enumerate() {
            if !CONNECTION_SPECIFIC.contains(&name.as_str()) {
                fields.push(hpack::Field::new(name.as_str(), value.as_bytes()));
                field_headers.push(Some(index));
            }
        }
        let renderer = Renderer::new(template);
        let body_templated = renderer.as_ref().is_some_and(Renderer::body_templated)
            && template.parts.method != Method::HEAD;
        if let Some(length) = template.parts.content_length().filter(|_| !body_templated) {
            fields.push(hpack::Field::new(
                "content-length",
                length.to_string().as_bytes(),
            ));
        }
        H2Template {
            fields,
            paths: template
                .paths
                .iter()
                .take(PREPARED_PATHS)
                .map(|path| hpack::Field::new(":path", path.as_bytes()))
                .collect(),
            path_literal: hpack::Field::new(":path", b""),
            body: if template.parts.method == Method::HEAD {
                Bytes::new()
            } else {
                template.parts.body.clone()
            },
            lanes: plan.max_concurrent,
            settings: plan.h2,
            request_timeout: plan.timeouts.request,
            checks: plan.checks.clone(),
            renderer,
            field_headers,
            content_length: hpack::Field::new("content-length", b""),
            renders_body: body_templated,
            head: template.parts.method == Method::HEAD,
            grpc: plan.grpc.clone(),
            events: plan.events,
        }
    }

    pub(super) fn field_count(&self) -> usize {
        self.fields.len() + self.paths.len()
    }
}

/// The SETTINGS payload the client announces (also sent as `HTTP2-Settings` when upgrading).
pub(crate) fn settings_payload(settings: &H2Settings) -> Vec<u8> {
    let mut payload = Vec::with_capacity(24);
    for (id, value) in [
        (
            frame::SETTINGS_HEADER_TABLE_SIZE,
            settings.header_table_size,
        ),
        (frame::SETTINGS_ENABLE_PUSH, 0),
        (frame::SETTINGS_INITIAL_WINDOW_SIZE, settings.stream_window),
        (frame::SETTINGS_MAX_FRAME_SIZE, settings.max_frame_size),
    ] {
        payload.extend_from_slice(&id.to_be_bytes());
        payload.extend_from_slice(&value.to_be_bytes());
    }
    payload
}
