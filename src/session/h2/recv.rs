//! The receive side of the session: frames split from the bytes read, DATA counted against the
//! receive windows, header blocks (HEADERS and CONTINUATION) decoded and applied to their stream,
//! and malformed responses failing their stream alone.

use std::time::Instant;

use super::super::outgoing::Outgoing;
use super::super::Ledger;
use super::control::{not_http2, window_update};
use super::events;
use super::{H2Session, MAX_HEADER_BLOCK, MAX_HEADER_LIST};
use crate::proto::h2::{self as frame, error_code_name, read_u32, write_frame, FrameHead};
use crate::proto::MAX_INTERIM;
use crate::recorder::{ErrorKind, Failure};

/// A DATA frame whose payload is still arriving.
#[derive(Debug, Clone, Copy)]
pub(super) struct DataInProgress {
    stream: u32,
    /// Payload bytes still to come (pad length byte, data, padding).
    left: usize,
    /// Whether the pad length byte is still to come.
    padded: bool,
    padding: usize,
    end_stream: bool,
    length: usize,
}

/// A header block spread over HEADERS and CONTINUATION frames.
#[derive(Debug, Default)]
pub(super) struct HeaderBlock {
    stream: u32,
    end_stream: bool,
    wire_len: usize,
    block: Vec<u8>,
}

impl<'t> H2Session<'t> {
    /// Handles every complete frame in `input` (and the part of a DATA frame that has arrived);
    /// returns how much it used.
    pub(super) fn read_frames(
        &mut self,
        input: &[u8],
        at: Instant,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<usize, Failure> {
        let mut used = 0;
        loop {
            if let Some(data) = self.data {
                let (taken, done) =
                    self.consume_data(data, &input[used..], at, ledger, out.bytes())?;
                used += taken;
                if !done {
                    return Ok(used);
                }
                self.data_frame_done(data, at, ledger, out.bytes());
                continue;
            }
            let rest = &input[used..];
            let Some(head) = rest.first_chunk::<{ frame::HEADER_LEN }>() else {
                if !self.settings_received {
                    if let Some(failure) = not_http2(rest) {
                        return Err(failure);
                    }
                }
                return Ok(used);
            };
            if !self.settings_received {
                if let Some(failure) = not_http2(rest) {
                    return Err(failure);
                }
            }
            let head = FrameHead::parse(head);
            if !self.settings_received && head.kind != frame::SETTINGS {
                return Err(Failure::protocol(format!(
                    "the server's first HTTP/2 frame is not SETTINGS (type {:#x}): is it an HTTP/2 server?",
                    head.kind
                )));
            }
            if head.length > self.template.settings.max_frame_size as usize {
                return Err(self.connection_error(
                    out,
                    frame::FRAME_SIZE_ERROR,
                    format!(
                        "the server sent a {}-byte frame, over our MAX_FRAME_SIZE",
                        head.length
                    ),
                ));
            }
            if self.headers.is_some() && head.kind != frame::CONTINUATION {
                return Err(Failure::protocol(
                    "a header block was interrupted by another frame",
                ));
            }
            if head.kind == frame::DATA {
                self.check_response_stream(head.stream, "DATA")?;
                self.start_data(head)?;
                match self.streams.get(&head.stream) {
                    None => self.on_closed_stream(head.stream, "DATA", out)?,
                    Some(stream) if stream.status.is_none() => {
                        let reason = "DATA before the response's HEADERS";
                        self.malformed(head.stream, reason, false, at, ledger, out.bytes());
                    }
                    Some(_) => {}
                }
                used += frame::HEADER_LEN;
                continue;
            }
            if rest.len() < frame::HEADER_LEN + head.length {
                return Ok(used);
            }
            let payload = &rest[frame::HEADER_LEN..frame::HEADER_LEN + head.length];
            used += frame::HEADER_LEN + head.length;
            self.handle_frame(head, payload, at, ledger, out)?;
        }
    }

    /// HEADERS and DATA may only come on streams we opened: never on stream 0, a server-side
    /// (even) id, or an id we have not used yet. Closed streams are fine (we may have reset them).
    fn check_response_stream(&self, id: u32, what: &str) -> Result<(), Failure> {
        if id == 0 || id.is_multiple_of(2) || id >= self.next_stream_id {
            return Err(Failure::protocol(format!(
                "the server sent {what} on stream {id}, which the client never opened"
            )));
        }
        Ok(())
    }

    /// A DATA frame header arrived: charge its length to the receive windows.
    fn start_data(&mut self, head: FrameHead) -> Result<(), Failure> {
        let length = head.length as i64;
        self.recv_window -= length;
        let stream_overrun = self.streams.get_mut(&head.stream).is_some_and(|stream| {
            stream.recv_window -= length;
            stream.recv_window < 0
        });
        if self.recv_window < 0 || stream_overrun {
            return Err(Failure::protocol(
                "the server sent more DATA than the flow-control window allows (FLOW_CONTROL_ERROR)",
            ));
        }
        self.data = Some(DataInProgress {
            stream: head.stream,
            left: head.length,
            padded: head.flags & frame::PADDED != 0,
            padding: 0,
            end_stream: head.flags & frame::END_STREAM != 0,
            length: head.length,
        });
        Ok(())
    }

    /// Counts the arrived part of a DATA frame: how much of `input` it used, and whether the frame is complete.
    fn consume_data(
        &mut self,
        mut data: DataInProgress,
        mut input: &[u8],
        at: Instant,
        ledger: &Ledger<'_>,
        out: &mut Vec<u8>,
    ) -> Result<(usize, bool), Failure> {
        let mut used = 0;
        if data.padded && data.left > 0 {
            let Some((&padding, rest)) = input.split_first() else {
                return Ok((0, false));
            };
            data.padding = usize::from(padding);
            data.padded = false;
            data.left -= 1;
            used += 1;
            input = rest;
            if data.padding > data.left {
                return Err(Failure::protocol("DATA padding longer than the frame"));
            }
        }
        let take = data.left.min(input.len());
        let body_bytes = take.min(data.left.saturating_sub(data.padding));
        if body_bytes > 0 {
            if let Some(stream) = self.streams.get_mut(&data.stream) {
                ledger.wire().add_data(body_bytes as u64);
                if let Some(checks) = &self.template.checks {
                    checks.scan_body(&mut stream.check.body, &input[..body_bytes]);
                }
                if self.error_stream == Some(data.stream) {
                    self.error_body
                        .gather(stream.status.unwrap_or(0), &input[..body_bytes]);
                }
                stream.received += body_bytes as u64;
                if stream
                    .content_length
                    .is_some_and(|length| stream.received > length)
                {
                    let reason = "a body longer than its content-length (or a response that has none with DATA)";
                    self.malformed(data.stream, reason, false, at, ledger, out);
                } else if self.template.grpc.is_some() {
                    self.grpc_body(data.stream, &input[..body_bytes], at, ledger, out);
                } else if stream.events.is_some() {
                    self.events_body(data.stream, &input[..body_bytes], at, ledger, out);
                }
            }
        }
        data.left -= take;
        used += take;
        if data.left > 0 {
            self.data = Some(data);
            return Ok((used, false));
        }
        self.data = None;
        Ok((used, true))
    }

    /// A whole DATA frame arrived: hand its window back, and finish the stream at END_STREAM.
    fn data_frame_done(
        &mut self,
        data: DataInProgress,
        at: Instant,
        ledger: &Ledger<'_>,
        out: &mut Vec<u8>,
    ) {
        let length = data.length as i64;
        self.unacked += length;
        if self.unacked >= i64::from(self.template.settings.connection_window) / 2 {
            let increment = std::mem::take(&mut self.unacked);
            self.recv_window += increment;
            window_update(out, 0, increment);
        }
        if data.end_stream {
            self.finish_stream(data.stream, at, ledger, out);
            return;
        }
        let half_window = i64::from(self.template.settings.stream_window) / 2;
        if let Some(stream) = self.streams.get_mut(&data.stream) {
            stream.unacked += length;
            if stream.unacked >= half_window {
                let increment = std::mem::take(&mut stream.unacked);
                stream.recv_window += increment;
                window_update(out, data.stream, increment);
            }
        }
    }

    fn handle_frame(
        &mut self,
        head: FrameHead,
        payload: &[u8],
        at: Instant,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<(), Failure> {
        match head.kind {
            frame::HEADERS => {
                self.check_response_stream(head.stream, "HEADERS")?;
                self.on_headers(head, payload, at, ledger, out)
            }
            frame::CONTINUATION => self.on_continuation(head, payload, at, ledger, out),
            frame::RST_STREAM => {
                if head.stream == 0 || head.stream >= self.next_stream_id {
                    return Err(Failure::protocol(format!(
                        "the server reset stream {}, which the client never opened",
                        head.stream
                    )));
                }
                let code =
                    read_u32(payload).ok_or_else(|| Failure::protocol("short RST_STREAM"))?;
                if let Some(stream) = self.streams.remove(&head.stream) {
                    // A refused stream was never processed (RFC 9113 §8.7): it goes again.
                    if code == frame::REFUSED_STREAM
                        && ledger.retry(stream.start, ErrorKind::Refused, at)
                    {
                        // Even when the budget is spent, this connection can send it.
                        self.budget_spent = false;
                    } else {
                        ledger.note_error(|| {
                            format!("the server reset a stream ({})", error_code_name(code))
                        });
                        ledger.fail_stream_reset(
                            stream.start,
                            crate::proto::ResetCode::H2(code),
                            at,
                        );
                    }
                }
                Ok(())
            }
            frame::SETTINGS => self.on_settings(head, payload, ledger, out),
            frame::PING if head.flags & frame::ACK == 0 => {
                if payload.len() != 8 {
                    return Err(Failure::protocol("PING payload not 8 bytes"));
                }
                write_frame(out.bytes(), frame::PING, frame::ACK, 0, payload);
                self.count_control(out)
            }
            frame::GOAWAY => self.on_goaway(payload, at, ledger),
            frame::WINDOW_UPDATE => self.on_window_update(head, payload),
            frame::PUSH_PROMISE => Err(Failure::protocol(
                "the server pushed although we disabled push",
            )),
            // PRIORITY, PING acknowledgements and unknown frame types need nothing.
            _ => Ok(()),
        }
    }

    fn on_headers(
        &mut self,
        head: FrameHead,
        payload: &[u8],
        at: Instant,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<(), Failure> {
        let block = frame::header_fragment(head, payload).ok_or_else(|| {
            Failure::protocol("HEADERS padding or priority longer than the frame")
        })?;
        let mut pending = HeaderBlock {
            stream: head.stream,
            end_stream: head.flags & frame::END_STREAM != 0,
            wire_len: head.length,
            block: Vec::new(),
        };
        if head.flags & frame::END_HEADERS != 0 {
            return self.on_header_block(&pending, block, at, ledger, out);
        }
        pending.block.extend_from_slice(block);
        self.headers = Some(pending);
        Ok(())
    }

    fn on_continuation(
        &mut self,
        head: FrameHead,
        payload: &[u8],
        at: Instant,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<(), Failure> {
        let mut pending = self
            .headers
            .take()
            .ok_or_else(|| Failure::protocol("CONTINUATION without HEADERS"))?;
        if pending.stream != head.stream {
            return Err(Failure::protocol("CONTINUATION on another stream"));
        }
        pending.wire_len += head.length;
        if pending.wire_len > MAX_HEADER_BLOCK {
            return Err(Failure::protocol(format!(
                "a response header block larger than {} KiB (HEADERS and CONTINUATION)",
                MAX_HEADER_BLOCK / 1024
            )));
        }
        pending.block.extend_from_slice(payload);
        if head.flags & frame::END_HEADERS != 0 {
            let block = std::mem::take(&mut pending.block);
            return self.on_header_block(&pending, &block, at, ledger, out);
        }
        self.headers = Some(pending);
        Ok(())
    }

    /// A complete header block: decode it (always, to keep HPACK in step) and apply it to its
    /// stream. A malformed one fails its stream alone (RFC 9113 §8.1.1).
    fn on_header_block(
        &mut self,
        pending: &HeaderBlock,
        block: &[u8],
        at: Instant,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<(), Failure> {
        let mut decoded = self
            .decoder
            .decode(block)
            .map_err(|error| Failure::protocol(format!("invalid response headers: {}", error.0)))?;
        if decoded.uncompressed > MAX_HEADER_LIST {
            return Err(Failure::protocol(format!(
                "a response header list of {} bytes decoded, over the {} KiB limit",
                decoded.uncompressed,
                MAX_HEADER_LIST / 1024
            )));
        }
        let template = self.template;
        let head = template.head;
        let Some(stream) = self.streams.get_mut(&pending.stream) else {
            return self.on_closed_stream(pending.stream, "HEADERS", out);
        };
        ledger
            .wire()
            .add_headers(pending.wire_len as u64, decoded.uncompressed);
        let rules = decoded.rules;
        let malformed = match (stream.status, decoded.status) {
            _ if rules.malformed.is_some() => rules.malformed,
            (None, None) => Some("a response without a valid :status"),
            (None, Some(status)) if !(100..=599).contains(&status) || status == 101 => {
                Some("a :status outside 100-599, or 101 (not allowed in HTTP/2)")
            }
            (None, Some(100..=199)) if pending.end_stream => {
                Some("an interim (1xx) response that ends the stream")
            }
            (None, Some(100..=199)) => {
                stream.interim += 1;
                if stream.interim > MAX_INTERIM {
                    return Err(Failure::protocol(format!(
                        "more than {MAX_INTERIM} interim (1xx) responses to one request"
                    )));
                }
                None
            }
            (None, Some(status)) => {
                stream.status = Some(status);
                stream.first_byte = Some(at);
                stream.check.headers = decoded.matched;
                stream.events = events::head(
                    template.events.as_ref(),
                    &stream.start,
                    rules.media.events(),
                    at,
                    ledger,
                );
                if let Some(call) = stream.grpc.as_deref_mut() {
                    call.status.headers(
                        status,
                        &rules,
                        decoded.grpc_message.take(),
                        pending.end_stream,
                    );
                }
                // Responses with no content (RFC 9110 §6.4.1) may announce a length anyway.
                let no_content = head || status == 204 || status == 304;
                stream.content_length = if no_content {
                    Some(0)
                } else {
                    rules.content_length
                };
                // The run quotes its first error response: a connection gathers one at most.
                if status >= 400 && self.error_stream.is_none() {
                    self.error_stream = Some(pending.stream);
                    self.error_body.start();
                }
                None
            }
            (Some(_), _) if rules.pseudo => Some("a pseudo-header in trailers"),
            (Some(_), _) if !pending.end_stream => Some("trailers that do not end the stream"),
            (Some(_), _) => {
                if let Some(call) = stream.grpc.as_deref_mut() {
                    call.status.trailers(&rules, decoded.grpc_message.take());
                }
                None
            }
        };
        if let Some(reason) = malformed {
            self.malformed(
                pending.stream,
                reason,
                pending.end_stream,
                at,
                ledger,
                out.bytes(),
            );
        } else if pending.end_stream {
            self.finish_stream(pending.stream, at, ledger, out.bytes());
        }
        Ok(())
    }

    /// A frame on a stream no longer open. Ignored when the client reset the stream (frames may
    /// cross its RST_STREAM) or a GOAWAY left it unprocessed; after the server ended it
    /// (END_STREAM, RST_STREAM), a connection error STREAM_CLOSED (RFC 9113 §5.1).
    fn on_closed_stream(&mut self, id: u32, what: &str, out: &mut Outgoing) -> Result<(), Failure> {
        let reset_by_us = id <= self.forgotten_reset || self.resets.contains(&id);
        if reset_by_us || self.goaway.is_some_and(|last| id > last) {
            return Ok(());
        }
        Err(self.connection_error(
            out,
            frame::STREAM_CLOSED,
            format!("the server sent {what} on stream {id} after ending it (STREAM_CLOSED)"),
        ))
    }

    /// A malformed response (RFC 9113 §8.1.1), a stream error: its request fails once, as a
    /// protocol error, and the stream is reset with PROTOCOL_ERROR unless both sides ended it
    /// (`ended`: the server did).
    pub(super) fn malformed(
        &mut self,
        id: u32,
        reason: &'static str,
        ended: bool,
        at: Instant,
        ledger: &Ledger<'_>,
        out: &mut Vec<u8>,
    ) {
        let Some(stream) = self.streams.remove(&id) else {
            return;
        };
        if !ended || stream.body_left > 0 || stream.grpc_to_send() > 0 {
            self.reset(id, frame::PROTOCOL_ERROR, out);
        }
        ledger.note_error(|| format!("a malformed HTTP/2 response: {reason}"));
        ledger.fail(stream.start, ErrorKind::Protocol, at);
    }
}
