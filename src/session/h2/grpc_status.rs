//! A gRPC call's status, judged as grpc-go's client judges it: the response headers first (an
//! HTTP status other than 200, or a `content-type` that is not gRPC's, decides the call's code
//! from the HTTP status alone, and its body is then not read as messages: a proxy's HTML error
//! page is no framing error), else the `grpc-status` of the trailers (or of a Trailers-Only
//! response's one header section), and the call's outcome once its stream ended. The messages
//! themselves are the session's (`grpc.rs`) and the message layer's.

use super::super::Ledger;
use crate::plan::grpc::CallShape;
use crate::proto::fields::{MediaType, SectionRules};
use crate::proto::grpc::{code_of_headers, MessageReader};
use crate::recorder::{ErrorKind, RequestStart};

/// What a gRPC call's response has said of its status so far.
#[derive(Debug, Default)]
pub(super) struct GrpcStatus {
    /// The `grpc-status` of the trailers, or of a Trailers-Only response.
    status: Option<u64>,
    /// The text of their `grpc-message`, if they sent one as a literal.
    message: Option<String>,
    /// Whether the response headers named a `grpc-encoding`.
    encoding: bool,
    /// The code the response headers decided alone (see [`code_of_headers`]): the response is
    /// not gRPC's, its body and any `grpc-status` are not read.
    judged: Option<u64>,
}

impl GrpcStatus {
    /// The response's first (final) header section, with HTTP status `status`: `ended` when it
    /// ends the stream, a Trailers-Only response whose section carries the status too.
    pub(super) fn headers(
        &mut self,
        status: u16,
        rules: &SectionRules,
        message: Option<String>,
        ended: bool,
    ) {
        self.encoding = rules.grpc_encoding;
        self.judged = code_of_headers(status, rules.media == MediaType::Grpc);
        if ended && self.judged.is_none() {
            self.trailers(rules, message);
        }
    }

    /// The trailers, with the text of their `grpc-message` (of a gRPC response only).
    pub(super) fn trailers(&mut self, rules: &SectionRules, message: Option<String>) {
        if self.judged.is_some() {
            return;
        }
        self.status = rules.grpc_status;
        self.message = message;
    }

    /// Whether the response headers named a `grpc-encoding` (compressed messages are allowed).
    pub(super) fn encoding(&self) -> bool {
        self.encoding
    }

    /// Whether the headers decided the code alone: the body is not read as messages.
    pub(super) fn judged(&self) -> bool {
        self.judged.is_some()
    }

    /// The call's `grpc-status` once its stream ended, having read `reader` of its body, or
    /// the error kind it failed with (noted).
    pub(super) fn outcome(
        &self,
        shape: CallShape,
        reader: &MessageReader,
        ledger: &Ledger<'_>,
        start: &RequestStart,
    ) -> Result<u16, ErrorKind> {
        if let Some(code) = self.judged {
            return Ok(code as u16);
        }
        if !reader.at_boundary() {
            ledger.note_error(|| "a gRPC response ended inside a message".to_owned());
            return Err(ErrorKind::GrpcFraming);
        }
        let Some(code) = self.status else {
            ledger.note_error(|| {
                "a gRPC response (HTTP status 200) ended without grpc-status".to_owned()
            });
            return Err(ErrorKind::GrpcStatusMissing);
        };
        let messages = reader.messages;
        if code == 0 && shape.one_response() && messages != 1 {
            // Unary and client-streaming calls have exactly one response message (grpc-go: "no
            // response message" or "more than one message" are INTERNAL).
            ledger.note_error(|| {
                format!(
                    "a {} gRPC call answered OK with {messages} messages instead of 1",
                    shape.name()
                )
            });
            return Err(ErrorKind::GrpcFraming);
        }
        if let Some(text) = self.message.as_deref().filter(|_| code != 0) {
            ledger.grpc_status_message(start, code, text);
        }
        Ok(u16::try_from(code).unwrap_or(u16::MAX))
    }
}
