//! A gRPC call's messages on an HTTP/2 stream. Receiving: the response body read as messages as
//! DATA arrives (its status is `grpc_status.rs`'s); a body that breaks the framing fails its call
//! alone, with the stream cancelled before more of it arrives. Sending, for client-streaming and
//! bidirectional calls: the call's message goes again and again, each time its last byte has
//! left (client streams), its reply has arrived (bidirectional), or its interval has passed
//! (`--grpc-stream-interval`); the last goes with END_STREAM.
//!
//! The messages go through the message layer (`recorder::messages`), which times them: each
//! call's first response message (from its send), and on bidirectional calls each message's
//! round trip, from its last byte queued to its reply's last byte read.

use std::time::Instant;

use super::super::Ledger;
use super::grpc_status::GrpcStatus;
use super::H2Session;
use crate::plan::grpc::CallShape;
use crate::proto::grpc::{FramingError, MessageReader, PREFIX_LEN};
use crate::proto::h2 as frame;
use crate::recorder::messages::{MessageBytes, MessageStream};
use crate::recorder::{ErrorKind, RequestStart};

/// Replies a bidirectional call may owe before it stops sending (with
/// `--grpc-stream-interval`, a server that does not answer would otherwise grow the queue of
/// send times without bound).
const MAX_UNANSWERED: usize = 1024;

/// What a gRPC call has sent and received so far.
#[derive(Debug)]
pub(super) struct GrpcResponse {
    reader: MessageReader,
    /// What the response has said of the call's status.
    pub(super) status: GrpcStatus,
    /// Messages still to send after the one being sent (client-streaming, bidirectional).
    pub(super) to_send: u32,
    /// The call's messages in the message layer: a bidirectional call's replies pair with its
    /// messages.
    messages: MessageStream,
}

impl GrpcResponse {
    /// A call of `shape` sent at `sent` that sends `messages` in all.
    pub(super) fn sending(shape: CallShape, sent: Instant, messages: u32) -> Self {
        GrpcResponse {
            reader: MessageReader::default(),
            status: GrpcStatus::default(),
            to_send: messages.saturating_sub(1),
            messages: MessageStream::opened(sent, shape == CallShape::Bidi),
        }
    }
}

/// The `grpc-status` of `call` (of `shape`, request `start`) once its stream ended, or the error
/// kind it failed with (noted); its received messages are counted either way. Every stream of
/// a gRPC cell has its call; a missing one reads as nothing read.
pub(super) fn outcome(
    call: Option<&GrpcResponse>,
    shape: CallShape,
    ledger: &Ledger<'_>,
    start: &RequestStart,
) -> Result<u16, ErrorKind> {
    let (nothing, unread) = (GrpcStatus::default(), MessageReader::default());
    let (status, reader) = call.map_or((&nothing, &unread), |call| (&call.status, &call.reader));
    ledger.message_stream_ended(start, MessageBytes::read_by(reader));
    status.outcome(shape, reader, ledger, start)
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
            .filter(|call| !call.status.judged())
        else {
            return;
        };
        let before = call.reader.messages;
        let fed = call
            .reader
            .feed(body, call.status.encoding(), limit, |_| {});
        let completed = call.reader.messages - before;
        if completed > 0 {
            ledger.messages_received(&stream.start, &mut call.messages, completed, at);
            // The reply sends the next message when replies pace the call; back to back
            // (`--grpc-stream-interval 0`), it resumes a call stopped at MAX_UNANSWERED.
            let waiting = match plan.interval {
                None => call.messages.unanswered() == 0,
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
            ledger.message_stream_ended(&stream.start, MessageBytes::read_by(&call.reader));
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
            ledger.message_sent(start, MessageBytes::framed(1, len));
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
        if call.messages.unanswered() < MAX_UNANSWERED {
            call.messages.left(now);
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
        if call.to_send == 0 || call.messages.unanswered() >= MAX_UNANSWERED {
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
