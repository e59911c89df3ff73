//! What a gRPC cell counts besides requests: calls by `grpc-status`, the first status message,
//! and how gRPC's framing counts the messages of the message layer ([`super::messages`]):
//! message bytes apart from the 5-byte prefixes that frame them.

use crate::proto::grpc::{self, MessageReader, CODE_SLOTS};

pub(crate) use super::messages::MessageBytes;

/// gRPC calls by status of one thread or run (zero in other cells; their messages are the
/// message layer's, [`super::messages::MessageFigures`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct GrpcTally {
    /// Calls with a response, by status slot (see [`grpc::code_slot`]).
    pub(crate) codes: [u64; CODE_SLOTS],
}

/// What a call that ended with a status other than OK said of it in its `grpc-message`.
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub(crate) struct StatusMessage {
    /// The status's name (`UNAVAILABLE`; `OTHER` for a code outside 0-16).
    pub(crate) status: String,
    /// The text, percent-decoded (see [`grpc::status_message_text`]).
    pub(crate) text: String,
}

impl StatusMessage {
    /// The text `text` of a call that ended with `code`.
    pub(crate) fn new(code: u64, text: &str) -> StatusMessage {
        StatusMessage {
            status: grpc::slot_name(grpc::code_slot(code)).to_owned(),
            text: text.to_owned(),
        }
    }
}

/// gRPC's ways of counting a stream's messages (the prefix is its framing).
impl MessageBytes {
    /// What `reader` has read of one response.
    pub(crate) fn read_by(reader: &MessageReader) -> MessageBytes {
        MessageBytes {
            messages: reader.messages,
            message_bytes: reader.message_bytes,
            prefix_bytes: reader.prefix_bytes(),
        }
    }

    /// `count` messages of `len` bytes each, prefixed.
    pub(crate) fn framed(count: u64, len: usize) -> MessageBytes {
        MessageBytes {
            messages: count,
            message_bytes: count * len as u64,
            prefix_bytes: count * grpc::PREFIX_LEN as u64,
        }
    }
}

impl GrpcTally {
    /// A call ended with `code` (a [`ResponseSample`](super::ResponseSample)'s `grpc`).
    pub(crate) fn call(&mut self, code: u16) {
        self.codes[grpc::code_slot(u64::from(code))] += 1;
    }

    /// Adds another thread's counts.
    pub(crate) fn merge(&mut self, other: &GrpcTally) {
        for (mine, theirs) in self.codes.iter_mut().zip(other.codes) {
            *mine += theirs;
        }
    }

    /// Calls by status name, in code order, those seen only.
    pub(crate) fn named_codes(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.codes
            .iter()
            .enumerate()
            .filter(|(_, count)| **count > 0)
            .map(|(slot, count)| (grpc::slot_name(slot), *count))
    }
}
