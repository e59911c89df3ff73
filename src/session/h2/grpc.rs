//! A gRPC call on an HTTP/2 stream. Receiving: the response headers judged as grpc-go's client
//! judges them (an HTTP status other than 200, or a `content-type` that is not gRPC's, decides
//! the call's code from the HTTP status alone, and its body is then not read as messages: a
//! proxy's HTML error page is no framing error), else the response body read as messages as DATA
//! arrives, the `grpc-status` taken from the trailers (or from a Trailers-Only response's one
//! header section), and the call's outcome when the stream ends; a body that breaks the framing
//! fails its call alone, with the stream cancelled before more of it arrives. Sending, for
//! client-streaming and bidirectional calls: the call's message goes again and again, each time
//! its last byte has left (client streams), its reply has arrived (bidirectional), or its
//! interval has passed (`--grpc-stream-interval`); the last goes with END_STREAM.
//!
//! Times measured: each call's first response message (from its send), and on bidirectional
//! calls each message's round trip, from its last byte queued to its reply's last byte read.

use std::collections::VecDeque;
use std::time::Instant;

use super::super::Ledger;
use super::H2Session;
use crate::plan::grpc::CallShape;
use crate::proto::fields::SectionRules;
use crate::proto::grpc::{code_of_headers, FramingError, MessageReader, PREFIX_LEN};
use crate::proto::h2 as frame;
use crate::recorder::grpc::{GrpcTally, MessageBytes};
use crate::recorder::{ErrorKind, RequestStart};

/// Replies a bidirectional call may owe before it stops sending (with
/// `--grpc-stream-interval`, a server that does not answer would otherwise grow the queue of
/// send times without bound).
const MAX_UNANSWERED: usize = 1024;

/// The received side of a call's tally.
fn received(tally: &mut GrpcTally) -> &mut MessageBytes {
    &mut tally.received
}

/// What a gRPC call has sent and received so far.
#[derive(Debug, Default)]
pub(super) struct GrpcResponse {
    reader: MessageReader,
    /// The `grpc-status` of the trailers, or of a Trailers-Only response.
    status: Option<u64>,
    /// The text of their `grpc-message`, if they sent one as a literal.
    message: Option<String>,
    /// Whether the response headers named a `grpc-encoding`.
    encoding: bool,
    /// The code the response headers decided alone (see [`code_of_headers`]): the response is
    /// not gRPC's, its body and any `grpc-status` are not read.
    judged: Option<u64>,
    /// Messages still to send after the one being sent (client-streaming, bidirectional).
    pub(super) to_send: u32,
    /// Bidirectional calls: when each message not answered yet left.
    unanswered: VecDeque<Instant>,
}

impl GrpcResponse {
    /// A call that sends `messages` in all.
    pub(super) fn sending(messages: u32) -> Self {
        GrpcResponse {
            to_send: messages.saturating_sub(1),
            ..GrpcResponse::default()
        }
    }

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
        self.judged = code_of_headers(status, rules.grpc_content_type);
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

    /// The call's `grpc-status` once its stream ended, or the error kind it failed with (noted,
    /// with its received messages counted either way).
    pub(super) fn outcome(
        &self,
        shape: CallShape,
        ledger: &Ledger<'_>,
        start: &RequestStart,
    ) -> Result<u16, ErrorKind> {
        ledger.grpc_messages(start, received, MessageBytes::read_by(&self.reader));
        if let Some(code) = self.judged {
            return Ok(code as u16);
        }
        if !self.reader.at_boundary() {
            ledger.note_error(|| "a gRPC response ended inside a message".to_owned());
            return Err(ErrorKind::GrpcFraming);
        }
        let Some(code) = self.status else {
            ledger.note_error(|| {
                "a gRPC response (HTTP status 200) ended without grpc-status".to_owned()
            });
            return Err(ErrorKind::GrpcStatusMissing);
        };
        let messages = self.reader.messages;
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

impl<'t> H2Session<'t> {
    /// Reads `body`, the next bytes of stream `id`'s response, as gRPC messages, timing those
    /// it completes at `at`; a framing error fails the call and cancels the stream.
    pub(super) fn grpc_body(
        &mut self,
        id: u32,
        body: &[u8],
        at: Instant,
        ledger: &Ledger<'_>,
        out: &mut Vec<u8>,
    ) {
        let Some(plan) = &self.template.grpc else {
            return;
        };
        let (limit, shape) = (plan.max_message, plan.shape);
        let Some(stream) = self.streams.get_mut(&id) else {
            return;
        };
        let body_left = stream.body_left;
        let Some(call) = stream
            .grpc
            .as_deref_mut()
            .filter(|call| call.judged.is_none())
        else {
            return;
        };
        let before = call.reader.messages;
        let fed = call.reader.feed(body, call.encoding, limit, |_| {});
        let completed = call.reader.messages - before;
        if completed > 0 {
            if before == 0 {
                ledger.grpc_first_message(&stream.start, at - stream.start.actual);
            }
            for _ in 0..completed {
                if let Some(sent) = call.unanswered.pop_front() {
                    ledger.grpc_round_trip(&stream.start, at.saturating_duration_since(sent));
                }
            }
            // The reply sends the next message when replies pace the call; back to back
            // (`--grpc-stream-interval 0`), it resumes a call stopped at MAX_UNANSWERED.
            let waiting = match plan.interval {
                None => call.unanswered.is_empty(),
                Some(interval) => interval.is_zero() && body_left == 0,
            };
            if shape == CallShape::Bidi && call.to_send > 0 && waiting {
                self.grpc_next_message(id, ledger);
            }
        }
        let Err(error) = fed else {
            return;
        };
        let Some(stream) = self.streams.remove(&id) else {
            return;
        };
        // CANCEL: the client gives up on the call (as a gRPC client does on such a message).
        self.reset(id, frame::CANCEL, out);
        if let Some(call) = stream.grpc.as_deref() {
            ledger.grpc_messages(&stream.start, received, MessageBytes::read_by(&call.reader));
        }
        ledger.note_error(|| error.describe(limit));
        let kind = match error {
            FramingError::BadFlag(_) => ErrorKind::GrpcFraming,
            FramingError::CompressedWithoutEncoding => ErrorKind::GrpcCompressed,
            FramingError::TooLarge(_) => ErrorKind::GrpcTooLarge,
        };
        ledger.fail(stream.start, kind, at);
    }

    /// Counts the message a gRPC call sends (`framed`: its bytes, prefix included).
    pub(super) fn grpc_sent(&self, start: &RequestStart, framed: usize, ledger: &Ledger<'_>) {
        if self.template.grpc.is_some() {
            let len = framed.saturating_sub(PREFIX_LEN);
            ledger.grpc_messages(start, |tally| &mut tally.sent, MessageBytes::framed(1, len));
        }
    }

    /// Stream `id`'s current message has left whole at `now`: time it for its reply
    /// (bidirectional calls), then queue the next as the call's pacing says. Returns whether the
    /// next is queued already (client streams, as fast as flow control allows).
    pub(super) fn grpc_message_left(&mut self, id: u32, now: Instant, ledger: &Ledger<'_>) -> bool {
        let Some(plan) = &self.template.grpc else {
            return false;
        };
        let (shape, interval) = (plan.shape, plan.interval);
        let Some(call) = self
            .streams
            .get_mut(&id)
            .and_then(|stream| stream.grpc.as_deref_mut())
        else {
            return false;
        };
        if shape == CallShape::Bidi && call.unanswered.len() < MAX_UNANSWERED {
            call.unanswered.push_back(now);
        }
        if call.to_send == 0 {
            return false;
        }
        match interval {
            // `--grpc-stream-interval 0`: back to back, replies or not (ghz's streams).
            Some(interval) if interval.is_zero() => self.grpc_next_message(id, ledger),
            Some(interval) => {
                self.grpc_due.push_back((now + interval, id));
                false
            }
            // Bidirectional: the reply sends the next (`grpc_body`).
            None if shape == CallShape::Bidi => false,
            None => self.grpc_next_message(id, ledger),
        }
    }

    /// Queues stream `id`'s next message (the same bytes again), counting it as sent; whether
    /// it did (not when the call is done sending, or owes [`MAX_UNANSWERED`] replies).
    fn grpc_next_message(&mut self, id: u32, ledger: &Ledger<'_>) -> bool {
        let template = self.template;
        let Some(stream) = self.streams.get_mut(&id) else {
            return false;
        };
        let Some(call) = stream.grpc.as_deref_mut() else {
            return false;
        };
        if call.to_send == 0 || call.unanswered.len() >= MAX_UNANSWERED {
            return false;
        }
        call.to_send -= 1;
        let len = stream.body.as_ref().unwrap_or(&template.body).len();
        stream.body_left = len;
        let start = stream.start;
        if !self.bodies.contains(&id) {
            self.bodies.push_back(id);
        }
        self.grpc_sent(&start, len, ledger);
        true
    }

    /// The paced messages due by `now` (`--grpc-stream-interval`): queued to be sent. One held
    /// back by [`MAX_UNANSWERED`] is tried again an interval later.
    pub(super) fn grpc_due_messages(&mut self, now: Instant, ledger: &Ledger<'_>) {
        let interval = self
            .template
            .grpc
            .as_ref()
            .and_then(|plan| plan.interval)
            .unwrap_or_default();
        while let Some(&(due, id)) = self.grpc_due.front() {
            if due > now {
                break;
            }
            self.grpc_due.pop_front();
            let held = self
                .streams
                .get(&id)
                .is_some_and(|stream| stream.grpc_to_send() > 0);
            if !self.grpc_next_message(id, ledger) && held {
                self.grpc_due.push_back((now + interval, id));
            }
        }
    }
}
