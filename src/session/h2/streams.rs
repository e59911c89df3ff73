//! The stream map and a stream's life on the session: [`Stream`] (a request in flight), opening
//! one with its windows, tracking its start for the request timeout, and finishing it.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::time::Instant;

use bytes::Bytes;

use super::super::Ledger;
use super::events::StreamEvents;
use super::grpc::{self, GrpcResponse};
use super::H2Session;
use crate::proto::check::ResponseCheck;
use crate::proto::h2 as frame;
use crate::recorder::{ErrorKind, RequestStart, ResponseSample};

/// Stream ids hash to themselves: they are unique, and a map keyed by them needs no mixing.
#[derive(Default)]
pub(super) struct StreamIdHasher(u64);

impl Hasher for StreamIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, _bytes: &[u8]) {
        unreachable!("only u32 stream ids are hashed");
    }

    fn write_u32(&mut self, id: u32) {
        // Spread consecutive odd ids over the table's buckets.
        self.0 = u64::from(id).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

pub(super) type StreamMap = HashMap<u32, Stream, BuildHasherDefault<StreamIdHasher>>;

/// A request in flight.
#[derive(Debug)]
pub(super) struct Stream {
    pub(super) start: RequestStart,
    pub(super) first_byte: Option<Instant>,
    pub(super) status: Option<u16>,
    pub(super) interim: u32,
    /// Bytes received since the last stream WINDOW_UPDATE.
    pub(super) unacked: i64,
    /// What the server may still send on this stream.
    pub(super) recv_window: i64,
    /// What the server lets us send on this stream.
    pub(super) send_window: i64,
    /// Request body bytes not sent yet.
    pub(super) body_left: usize,
    /// What the response has shown of the response checks.
    pub(super) check: ResponseCheck,
    /// A rendered body that could not go with its HEADERS (flow control), else the plan's.
    pub(super) body: Option<Bytes>,
    /// The body length the final response's HEADERS announced (0 for a response with no
    /// content), and the body bytes received: they must agree (RFC 9113 §8.1.1).
    pub(super) content_length: Option<u64>,
    pub(super) received: u64,
    /// In a gRPC cell, the call's state (boxed: a plain HTTP/2 stream pays one pointer).
    pub(super) grpc: Option<Box<GrpcResponse>>,
    /// A response read as an event stream: its reading and timing.
    pub(super) events: Option<Box<StreamEvents>>,
}

impl Stream {
    /// Messages the stream's gRPC call has still to send after its current one (0 otherwise).
    pub(super) fn grpc_to_send(&self) -> u32 {
        self.grpc.as_ref().map_or(0, |call| call.to_send)
    }
}

impl<'t> H2Session<'t> {
    pub(super) fn new_stream(&self, start: RequestStart, body_left: usize) -> Stream {
        Stream {
            start,
            first_byte: None,
            status: None,
            interim: 0,
            unacked: 0,
            recv_window: self.stream_recv_window(),
            send_window: self.initial_send_window,
            body_left,
            check: ResponseCheck::default(),
            body: None,
            content_length: None,
            received: 0,
            grpc: self.template.grpc.as_ref().map(|plan| {
                Box::new(GrpcResponse::sending(
                    plan.shape,
                    start.actual,
                    plan.messages,
                ))
            }),
            events: None,
        }
    }

    /// What the server may send on a new stream: our SETTINGS_INITIAL_WINDOW_SIZE once it has
    /// acknowledged it, the larger of that and the default before.
    pub(super) fn stream_recv_window(&self) -> i64 {
        let ours = i64::from(self.template.settings.stream_window);
        if self.settings_acked {
            ours
        } else {
            ours.max(frame::DEFAULT_WINDOW)
        }
    }

    pub(super) fn track_start(&mut self, id: u32, start: Instant) {
        if self.template.request_timeout.is_some() {
            self.started.push_back((id, start));
        }
    }

    /// The server ended stream `id`: its response is complete, unless its body fell short of
    /// its content-length (malformed).
    pub(super) fn finish_stream(
        &mut self,
        id: u32,
        at: Instant,
        ledger: &Ledger<'_>,
        out: &mut Vec<u8>,
    ) {
        let Some(stream) = self.streams.get(&id) else {
            return;
        };
        if stream
            .content_length
            .is_some_and(|length| length != stream.received)
        {
            let reason = "a body shorter than its content-length";
            return self.malformed(id, reason, true, at, ledger, out);
        }
        let Some(mut stream) = self.streams.remove(&id) else {
            return;
        };
        if let Some(events) = stream.events.as_deref_mut() {
            events.ended(&stream.start, at, ledger);
        }
        if stream.body_left > 0 || stream.grpc_to_send() > 0 {
            // The server answered before the whole body went: the rest is abandoned, and
            // RST_STREAM closes our half of the stream, which would otherwise stay open on the
            // server (RFC 9113 §8.1). NO_ERROR: the response is complete, nothing failed.
            self.reset(id, frame::NO_ERROR, out);
        }
        let Some(status) = stream.status else {
            ledger.fail(stream.start, ErrorKind::Protocol, at);
            return;
        };
        let grpc = match &self.template.grpc {
            Some(plan) => {
                match grpc::outcome(stream.grpc.as_deref(), plan.shape, ledger, &stream.start) {
                    Ok(code) => Some(code),
                    Err(kind) => return ledger.fail(stream.start, kind, at),
                }
            }
            None => None,
        };
        ledger.complete(
            ResponseSample {
                start: stream.start,
                first_byte: stream.first_byte.unwrap_or(at),
                end: at,
                status,
                grpc,
            },
            &stream.check,
        );
        if self.error_stream.take_if(|kept| *kept == id).is_some() {
            ledger.error_response(status, &mut self.error_body);
        }
    }
}
