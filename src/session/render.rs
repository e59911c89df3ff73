//! Rendering templated requests (`{seq}`, `{conn}`, `{rand:N}`, `{uuid}`): the parts shared by
//! the protocols. Built once per thread, only when the plan has a template; rendering writes into
//! the connection's outgoing bytes or this thread's scratch buffer, both reused, so a request
//! allocates nothing once they have grown.

use std::cell::{RefCell, RefMut};
use std::sync::Arc;

use super::outgoing::Outgoing;
use super::Ledger;
use crate::plan::{RequestTemplate, Templated};
use crate::proto::h1::{write_request_head, HeadPart};
use crate::recorder::{ErrorKind, RequestStart};

/// A templated request, ready to render.
pub(crate) struct Renderer {
    /// The plan's request without its paths (the ledger has them: a long `-i` list is not copied
    /// into every thread's renderers).
    request: RequestTemplate,
    templated: Arc<Templated>,
    /// The rendered body of the request being written (templated bodies only).
    scratch: RefCell<Vec<u8>>,
    /// A gRPC message encoded from the rendered JSON in `scratch`.
    encoded: RefCell<Vec<u8>>,
}

impl Renderer {
    /// A renderer for `request`, `None` when nothing in it is templated.
    pub(crate) fn new(request: &RequestTemplate) -> Option<Renderer> {
        let templated = request.templated.clone()?;
        let RequestTemplate {
            parts,
            paths: _,
            random_paths,
            templated: _,
            numbered,
        } = request;
        Some(Renderer {
            request: RequestTemplate {
                parts: parts.clone(),
                paths: Vec::new(),
                random_paths: *random_paths,
                templated: Some(templated.clone()),
                numbered: *numbered,
            },
            templated,
            scratch: RefCell::default(),
            encoded: RefCell::default(),
        })
    }

    /// Appends path `index` of the request `start`.
    pub(crate) fn path(
        &self,
        index: usize,
        start: &RequestStart,
        ledger: &Ledger<'_>,
        out: &mut Vec<u8>,
    ) {
        match &self.templated.paths[index] {
            Some(template) => ledger.render(template, start, 0, out),
            None => out.extend_from_slice(ledger.path(index).as_bytes()),
        }
    }

    /// Appends the value of header `index` of the plan's headers.
    pub(crate) fn header_value(
        &self,
        index: usize,
        start: &RequestStart,
        ledger: &Ledger<'_>,
        out: &mut Vec<u8>,
    ) {
        match &self.templated.headers[index] {
            Some(template) => ledger.render(template, start, index as u64 + 1, out),
            None => out.extend_from_slice(self.request.parts.headers[index].1.as_bytes()),
        }
    }

    /// Whether path `index` is templated.
    pub(crate) fn path_templated(&self, index: usize) -> bool {
        self.templated.paths[index].is_some()
    }

    /// Whether header `index` of the plan's headers is templated.
    pub(crate) fn header_templated(&self, index: usize) -> bool {
        self.templated.headers[index].is_some()
    }

    /// Whether the body is templated (else it is the plan's, sent as it is).
    pub(crate) fn body_templated(&self) -> bool {
        self.templated.body.is_some()
    }

    /// Renders a templated body into the scratch buffer and hands it to `use_body`; a gRPC
    /// cell's is encoded first. `None`: the call's message did not encode, and the call is
    /// counted failed (`grpc_input`, the first named) with nothing to send: an empty message
    /// in its place would be another call than the one asked for.
    pub(crate) fn with_body<R>(
        &self,
        start: &RequestStart,
        ledger: &Ledger<'_>,
        use_body: impl FnOnce(&[u8]) -> R,
    ) -> Option<R> {
        let scratch = self.rendered_body(start, ledger);
        let Some(message) = &self.templated.message else {
            return Some(use_body(&scratch));
        };
        let mut encoded = self.encoded.borrow_mut();
        encoded.clear();
        if let Err(problem) = message.encode(&scratch, &mut encoded) {
            // The plan encoded one rendering; another (a {rand:N} past a field's range, say)
            // may not.
            ledger.note_error(|| format!("a rendered --grpc-data did not encode: {problem}"));
            ledger.fail(*start, ErrorKind::GrpcInput, start.actual);
            return None;
        }
        Some(use_body(&encoded))
    }

    /// [`Renderer::with_body`] for a request that is no gRPC call (HTTP/1.1 and HTTP/3: gRPC
    /// cells are HTTP/2 only), whose body cannot fail.
    pub(crate) fn with_plain_body<R>(
        &self,
        start: &RequestStart,
        ledger: &Ledger<'_>,
        use_body: impl FnOnce(&[u8]) -> R,
    ) -> R {
        debug_assert!(self.templated.message.is_none(), "gRPC is HTTP/2 only");
        use_body(&self.rendered_body(start, ledger))
    }

    /// The templated body of request `start`, rendered into the scratch buffer.
    fn rendered_body(&self, start: &RequestStart, ledger: &Ledger<'_>) -> RefMut<'_, Vec<u8>> {
        let mut scratch = self.scratch.borrow_mut();
        scratch.clear();
        if let Some(template) = &self.templated.body {
            let part = self.request.parts.headers.len() as u64 + 1;
            ledger.render(template, start, part, &mut scratch);
        }
        scratch
    }

    /// The Content-Length of a request whose body is `body_len` bytes long (see
    /// [`RequestParts::content_length_of`](crate::proto::request::RequestParts::content_length_of)).
    pub(crate) fn content_length(&self, body_len: usize) -> Option<usize> {
        self.request.parts.content_length_of(body_len)
    }

    /// The plan's request (method, authority, headers, static body; no paths).
    pub(crate) fn request(&self) -> &RequestTemplate {
        &self.request
    }

    /// Appends the HTTP/1.1 head of the request `start` for path `path` (`extra` headers after
    /// the plan's), declaring a body of `body_len` bytes.
    pub(crate) fn h1_head(
        &self,
        path: usize,
        start: &RequestStart,
        ledger: &Ledger<'_>,
        extra: &[(&str, &str)],
        body_len: usize,
        out: &mut Vec<u8>,
    ) {
        write_request_head(
            out,
            &self.request.parts,
            extra,
            body_len,
            |part, out| match part {
                HeadPart::Path => self.path(path, start, ledger, out),
                HeadPart::Header(index) => self.header_value(index, start, ledger, out),
            },
        );
    }

    /// Appends the whole HTTP/1.1 request `start` for path `path`: head, then body (a rendered
    /// one copied in, the plan's shared).
    pub(crate) fn h1_request(
        &self,
        path: usize,
        start: &RequestStart,
        ledger: &Ledger<'_>,
        extra: &[(&str, &str)],
        out: &mut Outgoing,
    ) {
        if self.body_templated() {
            self.with_plain_body(start, ledger, |body| {
                self.h1_head(path, start, ledger, extra, body.len(), out.bytes());
                out.bytes().extend_from_slice(body);
            });
        } else {
            let body = &self.request.parts.body;
            self.h1_head(path, start, ledger, extra, body.len(), out.bytes());
            if !body.is_empty() {
                out.push_body(body);
            }
        }
    }
}
