//! A gRPC call on an HTTP/2 stream: its response body read as messages as DATA arrives, its
//! `grpc-status` taken from the trailers (or from a Trailers-Only response's one header
//! section), and the call's outcome when the stream ends. A body that breaks the framing fails
//! its call alone, with the stream cancelled before more of it arrives.

use super::super::Ledger;
use super::H2Session;
use crate::proto::fields::SectionRules;
use crate::proto::grpc::{code_of_http_status, FramingError, MessageReader};
use crate::proto::h2 as frame;
use crate::recorder::grpc::MessageBytes;
use crate::recorder::{ErrorKind, RequestStart};

/// What a gRPC call's response has shown so far.
#[derive(Debug, Default)]
pub(super) struct GrpcResponse {
    reader: MessageReader,
    /// The `grpc-status` of the trailers, or of a Trailers-Only response.
    status: Option<u64>,
    /// Whether the response headers named a `grpc-encoding`.
    encoding: bool,
}

impl GrpcResponse {
    /// The response's first (final) header section: `ended` when it ends the stream, a
    /// Trailers-Only response whose section carries the status too.
    pub(super) fn headers(&mut self, rules: &SectionRules, ended: bool) {
        self.encoding = rules.grpc_encoding;
        if ended {
            self.status = rules.grpc_status;
        }
    }

    /// The trailers.
    pub(super) fn trailers(&mut self, rules: &SectionRules) {
        self.status = rules.grpc_status;
    }

    /// The call's `grpc-status` once its stream ended with HTTP status `status`, or the error
    /// kind it failed with (noted, with its received messages counted either way).
    pub(super) fn outcome(
        &self,
        status: u16,
        ledger: &Ledger<'_>,
        start: &RequestStart,
    ) -> Result<u16, ErrorKind> {
        ledger.grpc_received(start, MessageBytes::read_by(&self.reader));
        if !self.reader.at_boundary() {
            ledger.note_error(|| "a gRPC response ended inside a message".to_owned());
            return Err(ErrorKind::GrpcFraming);
        }
        let Some(code) = self.status.or_else(|| code_of_http_status(status)) else {
            ledger.note_error(|| {
                "a gRPC response (HTTP status 200) ended without grpc-status".to_owned()
            });
            return Err(ErrorKind::GrpcStatusMissing);
        };
        let messages = self.reader.messages;
        if code == 0 && messages != 1 {
            // A unary call has exactly one response message (grpc-go: "no response message"
            // or "more than one message" are INTERNAL).
            ledger.note_error(|| {
                format!("a unary gRPC call answered OK with {messages} messages instead of 1")
            });
            return Err(ErrorKind::GrpcFraming);
        }
        Ok(u16::try_from(code).unwrap_or(u16::MAX))
    }
}

impl<'t> H2Session<'t> {
    /// Reads `body`, the next bytes of stream `id`'s response, as gRPC messages; a framing
    /// error fails the call and cancels the stream.
    pub(super) fn grpc_body(
        &mut self,
        id: u32,
        body: &[u8],
        limit: u32,
        ledger: &Ledger<'_>,
        out: &mut Vec<u8>,
    ) {
        let Some(stream) = self.streams.get_mut(&id) else {
            return;
        };
        let grpc = &mut stream.grpc;
        let Err(error) = grpc.reader.feed(body, grpc.encoding, limit, |_| {}) else {
            return;
        };
        let Some(stream) = self.streams.remove(&id) else {
            return;
        };
        // CANCEL: the client gives up on the call (as a gRPC client does on such a message).
        self.reset(id, frame::CANCEL, out);
        ledger.grpc_received(&stream.start, MessageBytes::read_by(&stream.grpc.reader));
        ledger.note_error(|| error.describe(limit));
        let kind = match error {
            FramingError::BadFlag(_) => ErrorKind::GrpcFraming,
            FramingError::CompressedWithoutEncoding => ErrorKind::GrpcCompressed,
            FramingError::TooLarge(_) => ErrorKind::GrpcTooLarge,
        };
        ledger.fail(stream.start, kind);
    }

    /// Counts the message a gRPC call sends (`framed`: its bytes, prefix included).
    pub(super) fn grpc_sent(&self, start: &RequestStart, framed: usize, ledger: &Ledger<'_>) {
        if self.template.grpc_max_message.is_some() {
            let len = framed.saturating_sub(crate::proto::grpc::PREFIX_LEN);
            ledger.grpc_sent(start, MessageBytes::framed(1, len));
        }
    }
}
