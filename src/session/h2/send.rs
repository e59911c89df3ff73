//! The send side of the session: opening streams (HEADERS from prepared or rendered fields, up to
//! the server's limit and, before its SETTINGS, the early data's room) and sending request bodies
//! within the server's windows.

use std::time::Instant;

use bytes::Bytes;

use super::super::contract::Progress;
use super::super::outgoing::Outgoing;
use super::super::render::Renderer;
use super::super::{Ledger, NextRequest};
use super::prepared::FIELDS_BEFORE_PATH;
use super::H2Session;
use crate::proto::h2::{self as frame, write_frame, FrameHead};
use crate::recorder::RequestStart;

/// Streams opened before the server's SETTINGS on an early-data connection, at most: RFC 9113
/// §6.5.2 advises servers to allow no fewer than 100 concurrent streams, so more would risk
/// REFUSED_STREAM once the server's limit is known.
const EARLY_STREAMS: usize = 100;

/// The early data a connection's requests may still ride in before the server's SETTINGS.
#[derive(Debug, Clone, Copy)]
pub(super) struct EarlyRoom {
    /// Bytes the server's ticket still allows (the preface and SETTINGS come off first).
    pub(super) left: usize,
    /// The size of the largest request queued so far (the next is taken to be as large: the
    /// first carries every header as a literal, later ones mostly indexes).
    pub(super) request: usize,
}

impl<'t> H2Session<'t> {
    /// Opens streams up to the lane count; `Some` ends the connection (stream ids ran out).
    pub(super) fn open_streams(
        &mut self,
        now: Instant,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Option<Progress> {
        self.wake = None;
        if self.goaway.is_some() {
            return None;
        }
        let mut limit = self.template.lanes.min(self.server_max_streams);
        if !(self.settings_received || self.open_before_settings) {
            // Full handshakes wait for the server's limits; early data may not.
            self.early?;
            limit = limit.min(EARLY_STREAMS);
        }
        if limit == 0 && !self.budget_spent {
            self.blocked_since.get_or_insert(now);
            return None;
        }
        self.blocked_since = None;
        let mut queued = out.bytes().len();
        while !self.budget_spent && self.streams.len() < limit {
            if self.early_room_spent(out.bytes().len() - queued) {
                break;
            }
            queued = out.bytes().len();
            if self.next_stream_id > frame::MAX_WINDOW as u32 {
                // Stream ids are spent: finish what is open, then reconnect.
                return self.streams.is_empty().then_some(Progress::Reconnect);
            }
            let mut start = match ledger.next_request(now) {
                NextRequest::Now(start) => start,
                NextRequest::At(time) => {
                    self.wake = Some(time);
                    break;
                }
                NextRequest::Done => {
                    self.budget_spent = true;
                    break;
                }
            };
            let id = self.next_stream_id;
            // --log-file derives stream ids from the request's number on the connection.
            debug_assert_eq!(u64::from(id), 2 * u64::from(start.sequence) - 1);
            self.next_stream_id += 2;
            let path = ledger.pick_path(&mut start);
            match &self.template.renderer {
                Some(renderer) if self.template.renders_body => {
                    if !self.write_rendered(renderer, id, path, start, ledger, out) {
                        // Not sent (its gRPC message did not encode): the next waits for the
                        // I/O of this loop, so calls that all fail cannot hold the thread.
                        self.wake = Some(now);
                        break;
                    }
                    continue;
                }
                Some(renderer) => self.write_rendered_headers(
                    renderer,
                    id,
                    path,
                    &start,
                    ledger,
                    None,
                    out.bytes(),
                ),
                None => self.write_headers(id, path, ledger, out.bytes()),
            }
            let body_left = self.template.body.len();
            self.grpc_sent(&start, body_left, ledger);
            self.streams.insert(id, self.new_stream(start, body_left));
            self.track_start(id, start.actual);
            if body_left > 0 {
                self.bodies.push_back(id);
            }
        }
        self.early_room_spent(out.bytes().len() - queued);
        None
    }

    /// Before the server's SETTINGS on a connection sending early data: takes the `written`
    /// bytes of the last request off the room left, and says whether another as large as the
    /// largest so far might not fit (it then waits for the SETTINGS instead of leaving after the
    /// handshake, outside the early data, before the server's limits are known).
    fn early_room_spent(&mut self, written: usize) -> bool {
        match &mut self.early {
            Some(early) if !self.settings_received => {
                if written > 0 {
                    early.left = early.left.saturating_sub(written);
                    early.request = early.request.max(written);
                }
                early.left < early.request
            }
            _ => false,
        }
    }

    /// Appends the request's HEADERS (and CONTINUATION, if the block exceeds the server's frame size).
    fn write_headers(&mut self, id: u32, path: usize, ledger: &Ledger<'_>, out: &mut Vec<u8>) {
        let template = self.template;
        let head_at = self.begin_headers(out);
        self.write_path(path, ledger, out);
        for (slot, field) in template.fields.iter().enumerate().skip(FIELDS_BEFORE_PATH) {
            self.encoder.encode(out, slot, field);
        }
        self.frame_header_block(id, head_at, template.body.is_empty(), out);
    }

    /// Leaves room for a frame head, begins a header block and encodes the fields before
    /// `:path`; returns where the frame head goes (see [`H2Session::frame_header_block`]).
    fn begin_headers(&mut self, out: &mut Vec<u8>) -> usize {
        let head_at = out.len();
        out.extend_from_slice(&[0; frame::HEADER_LEN]);
        self.encoder.begin_block(out);
        for (slot, field) in self.template.fields[..FIELDS_BEFORE_PATH]
            .iter()
            .enumerate()
        {
            self.encoder.encode(out, slot, field);
        }
        head_at
    }

    /// Appends the `:path` of URL `path`: its prepared field, else a literal.
    fn write_path(&mut self, path: usize, ledger: &Ledger<'_>, out: &mut Vec<u8>) {
        let template = self.template;
        match template.paths.get(path) {
            Some(field) => self
                .encoder
                .encode(out, template.fields.len() + path, field),
            None => template
                .path_literal
                .encode_unindexed(out, ledger.path(path).as_bytes()),
        }
    }

    /// Opens stream `id` for a request with a templated body: its HEADERS (see
    /// [`H2Session::write_rendered_headers`]), then the rendered body, at once when the windows
    /// let it go with the HEADERS (no allocation), else kept with the stream. `false`: a gRPC
    /// call whose message did not encode, failed and not sent (see [`Renderer::with_body`]).
    fn write_rendered(
        &mut self,
        renderer: &Renderer,
        id: u32,
        path: usize,
        start: RequestStart,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> bool {
        let sent = renderer.with_body(&start, ledger, |body| {
            self.write_rendered_headers(
                renderer,
                id,
                path,
                &start,
                ledger,
                Some(body.len()),
                out.bytes(),
            );
            self.grpc_sent(&start, body.len(), ledger);
            let mut stream = self.new_stream(start, body.len());
            let room = self.send_window.min(stream.send_window).max(0) as usize;
            // A streaming gRPC call's messages go through the body queue, which times them and
            // queues the next.
            let streaming = self
                .template
                .grpc
                .as_ref()
                .is_some_and(|plan| plan.shape.client_streams());
            if !body.is_empty() && body.len() <= room && !streaming {
                let mut chunks = body.chunks(self.max_send_frame).peekable();
                while let Some(chunk) = chunks.next() {
                    let last = chunks.peek().is_none();
                    let flags = if last { frame::END_STREAM } else { 0 };
                    write_frame(out.bytes(), frame::DATA, flags, id, chunk);
                }
                self.send_window -= body.len() as i64;
                stream.send_window -= body.len() as i64;
                stream.body_left = 0;
            } else if !body.is_empty() {
                stream.body = Some(Bytes::copy_from_slice(body));
                self.bodies.push_back(id);
            }
            self.streams.insert(id, stream);
            self.track_start(id, start.actual);
        });
        sent.is_some()
    }

    /// The HEADERS of a templated request, with the rendered path and header values as literals
    /// never indexed; `body_len` is a rendered body's length (`None`: the plan's body, whose
    /// content-length is among the prepared fields).
    #[allow(clippy::too_many_arguments)]
    fn write_rendered_headers(
        &mut self,
        renderer: &Renderer,
        id: u32,
        path: usize,
        start: &RequestStart,
        ledger: &Ledger<'_>,
        body_len: Option<usize>,
        out: &mut Vec<u8>,
    ) {
        let template = self.template;
        let head_at = self.begin_headers(out);
        if renderer.path_templated(path) {
            self.value.clear();
            renderer.path(path, start, ledger, &mut self.value);
            template.path_literal.encode_unindexed(out, &self.value);
        } else {
            self.write_path(path, ledger, out);
        }
        for (slot, field) in template.fields.iter().enumerate().skip(FIELDS_BEFORE_PATH) {
            match template.field_headers[slot].filter(|&header| renderer.header_templated(header)) {
                Some(header) => {
                    self.value.clear();
                    renderer.header_value(header, start, ledger, &mut self.value);
                    field.encode_unindexed(out, &self.value);
                }
                None => self.encoder.encode(out, slot, field),
            }
        }
        let length = body_len.and_then(|len| renderer.content_length(len));
        if let Some(length) = length {
            self.value.clear();
            crate::proto::request::write_decimal(&mut self.value, length as u64);
            template.content_length.encode_unindexed(out, &self.value);
        }
        let end_stream = body_len.map_or(template.body.is_empty(), |len| len == 0);
        self.frame_header_block(id, head_at, end_stream, out);
    }

    /// Frames the header block written after `head_at` (where a frame head's room was left) as
    /// HEADERS, and CONTINUATION frames if it exceeds the server's frame size.
    fn frame_header_block(
        &mut self,
        id: u32,
        head_at: usize,
        end_of_request: bool,
        out: &mut Vec<u8>,
    ) {
        let end_stream = if end_of_request { frame::END_STREAM } else { 0 };
        let block_len = out.len() - head_at - frame::HEADER_LEN;
        if block_len <= self.max_send_frame {
            let head = FrameHead {
                length: block_len,
                kind: frame::HEADERS,
                flags: end_stream | frame::END_HEADERS,
                stream: id,
            };
            out[head_at..head_at + frame::HEADER_LEN].copy_from_slice(&head.encode());
            return;
        }
        let block = out.split_off(head_at + frame::HEADER_LEN);
        out.truncate(head_at);
        let mut chunks = block.chunks(self.max_send_frame).peekable();
        let mut kind = frame::HEADERS;
        let mut flags = end_stream;
        while let Some(chunk) = chunks.next() {
            if chunks.peek().is_none() {
                flags |= frame::END_HEADERS;
            }
            write_frame(out, kind, flags, id, chunk);
            kind = frame::CONTINUATION;
            flags = 0;
        }
    }

    /// Sends as much pending request body as the server's windows allow; a streaming gRPC
    /// call's message that leaves whole at `now` may queue its next.
    pub(super) fn send_bodies(&mut self, now: Instant, ledger: &Ledger<'_>, out: &mut Outgoing) {
        let template = self.template;
        while let Some(&id) = self.bodies.front() {
            let Some(stream) = self.streams.get_mut(&id) else {
                self.bodies.pop_front();
                continue;
            };
            while stream.body_left > 0 {
                let room = self.send_window.min(stream.send_window).max(0) as usize;
                let chunk = stream.body_left.min(room).min(self.max_send_frame);
                if chunk == 0 {
                    return;
                }
                let body = stream.body.as_ref().unwrap_or(&template.body);
                let from = body.len() - stream.body_left;
                let data = body.slice(from..from + chunk);
                stream.body_left -= chunk;
                stream.send_window -= chunk as i64;
                self.send_window -= chunk as i64;
                // A streaming call's last message ends the stream; the others do not.
                let flags = if stream.body_left == 0 && stream.grpc_to_send() == 0 {
                    frame::END_STREAM
                } else {
                    0
                };
                let head = FrameHead {
                    length: chunk,
                    kind: frame::DATA,
                    flags,
                    stream: id,
                };
                out.bytes().extend_from_slice(&head.encode());
                out.push_body(&data);
            }
            if template.grpc.is_some() && self.grpc_message_left(id, now, ledger) {
                continue;
            }
            self.bodies.pop_front();
        }
    }
}
