//! The parts of a request the wire encoders write, whatever its path: method, authority, headers,
//! body and the Content-Length they declare. The plan's `RequestTemplate` embeds them (its paths
//! and templates stay in the plan), so a wire format never needs to know the plan.

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method};

/// What each request carries besides its path. Engines prebuild their wire form from this once
/// per thread.
#[derive(Debug, Clone)]
pub(crate) struct RequestParts {
    /// Request method.
    pub(crate) method: Method,
    /// Host header / `:authority`.
    pub(crate) authority: String,
    /// Headers besides Host, lower-case names, defaults merged with `-H`.
    pub(crate) headers: Vec<(HeaderName, HeaderValue)>,
    /// Request body (empty for none).
    pub(crate) body: Bytes,
    /// Whether the request declares its body's length (Content-Length): not a gRPC call, whose
    /// streaming body has no length known in advance (gRPC clients never send one).
    pub(crate) declares_length: bool,
}

impl RequestParts {
    /// The Content-Length the request declares: the body's, when there is one or the method expects one.
    pub(crate) fn content_length(&self) -> Option<usize> {
        self.content_length_of(self.body.len())
    }

    /// The Content-Length a request with a `body_len`-byte body (a rendered one, say) declares.
    pub(crate) fn content_length_of(&self, body_len: usize) -> Option<usize> {
        let expects_body = matches!(self.method, Method::POST | Method::PUT | Method::PATCH);
        (self.declares_length && (expects_body || body_len > 0)).then_some(body_len)
    }
}

/// Appends `value` in decimal.
pub(crate) fn write_decimal(out: &mut Vec<u8>, mut value: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}
