//! Control frames and connection errors: WINDOW_UPDATE, SETTINGS, GOAWAY, the client's own
//! RST_STREAM and GOAWAY, the flood limit on acknowledgements, and naming a server that does not
//! speak HTTP/2.

use std::time::Instant;

use super::super::outgoing::Outgoing;
use super::super::Ledger;
use super::{H2Session, MAX_QUEUED_CONTROL, RESETS_KEPT};
use crate::proto::h2::{self as frame, error_code_name, read_u32, write_frame, FrameHead};
use crate::recorder::{ErrorKind, Failure, Symptom};

impl<'t> H2Session<'t> {
    /// One more acknowledgement queued (just now, at the end of `out`): a server that floods
    /// them while not reading, so that they pile up unwritten, is cut off. Those written since
    /// are forgotten first, so what counts is what is queued now, not how many came over the
    /// connection's life.
    pub(super) fn count_control(&mut self, out: &mut Outgoing) -> Result<(), Failure> {
        let written = out.written();
        while self
            .unwritten_acks
            .front()
            .is_some_and(|end| *end <= written)
        {
            self.unwritten_acks.pop_front();
        }
        self.unwritten_acks.push_back(out.queued_end());
        if self.unwritten_acks.len() > MAX_QUEUED_CONTROL {
            return Err(self.connection_error(
                out,
                frame::ENHANCE_YOUR_CALM,
                format!(
                    "the server sent over {MAX_QUEUED_CONTROL} PING/SETTINGS frames without reading our acknowledgements"
                ),
            ));
        }
        Ok(())
    }

    /// Queues GOAWAY with `code` (the connection closes after it) and names the failure.
    pub(super) fn connection_error(
        &mut self,
        out: &mut Outgoing,
        code: u32,
        message: String,
    ) -> Failure {
        let last = self.next_stream_id.saturating_sub(2);
        let mut payload = [0u8; 8];
        payload[..4].copy_from_slice(&last.to_be_bytes());
        payload[4..].copy_from_slice(&code.to_be_bytes());
        write_frame(out.bytes(), frame::GOAWAY, 0, 0, &payload);
        Failure::protocol(message)
    }

    pub(super) fn on_window_update(
        &mut self,
        head: FrameHead,
        payload: &[u8],
    ) -> Result<(), Failure> {
        let increment = i64::from(
            read_u32(payload).ok_or_else(|| Failure::protocol("short WINDOW_UPDATE"))?
                & 0x7fff_ffff,
        );
        let window = if head.stream == 0 {
            &mut self.send_window
        } else if let Some(stream) = self.streams.get_mut(&head.stream) {
            &mut stream.send_window
        } else {
            return Ok(());
        };
        if increment == 0 {
            return Err(Failure::protocol("WINDOW_UPDATE with an increment of 0"));
        }
        *window += increment;
        if *window > frame::MAX_WINDOW {
            return Err(Failure::protocol(
                "WINDOW_UPDATE took a flow-control window above 2^31-1 (FLOW_CONTROL_ERROR)",
            ));
        }
        Ok(())
    }

    /// Resets stream `id` with `code`, remembering it: frames may still come for it.
    pub(super) fn reset(&mut self, id: u32, code: u32, out: &mut Vec<u8>) {
        write_frame(out, frame::RST_STREAM, 0, id, &code.to_be_bytes());
        if self.resets.len() == RESETS_KEPT {
            let forgotten = self.resets.pop_front().expect("the queue is full");
            self.forgotten_reset = self.forgotten_reset.max(forgotten);
        }
        self.resets.push_back(id);
    }

    pub(super) fn on_settings(
        &mut self,
        head: FrameHead,
        payload: &[u8],
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<(), Failure> {
        if head.flags & frame::ACK != 0 {
            if !self.settings_acked {
                // Our SETTINGS_INITIAL_WINDOW_SIZE now holds for the streams already open too.
                let before = self.stream_recv_window();
                self.settings_acked = true;
                let delta = self.stream_recv_window() - before;
                for stream in self.streams.values_mut() {
                    stream.recv_window += delta;
                }
            }
            return Ok(());
        }
        if !payload.len().is_multiple_of(6) {
            return Err(Failure::protocol("SETTINGS payload not a multiple of 6"));
        }
        for setting in payload.chunks_exact(6) {
            let value = u32::from_be_bytes([setting[2], setting[3], setting[4], setting[5]]);
            match u16::from_be_bytes([setting[0], setting[1]]) {
                frame::SETTINGS_HEADER_TABLE_SIZE => self.encoder.server_table_size(value as usize),
                frame::SETTINGS_MAX_CONCURRENT_STREAMS => self.server_max_streams = value as usize,
                frame::SETTINGS_INITIAL_WINDOW_SIZE => {
                    if i64::from(value) > frame::MAX_WINDOW {
                        return Err(Failure::protocol("INITIAL_WINDOW_SIZE above 2^31-1"));
                    }
                    let delta = i64::from(value) - self.initial_send_window;
                    self.initial_send_window = i64::from(value);
                    for stream in self.streams.values_mut() {
                        stream.send_window += delta;
                    }
                }
                frame::SETTINGS_MAX_FRAME_SIZE => {
                    if !(frame::MIN_MAX_FRAME_SIZE..1 << 24).contains(&(value as usize)) {
                        return Err(Failure::protocol(format!(
                            "MAX_FRAME_SIZE {value} outside 2^14..2^24-1"
                        )));
                    }
                    self.max_send_frame = value as usize;
                }
                _ => {}
            }
        }
        write_frame(out.bytes(), frame::SETTINGS, frame::ACK, 0, &[]);
        if !self.settings_received {
            self.settings_received = true;
            self.settings_due = None;
            ledger.note_effective_concurrency(self.template.lanes.min(self.server_max_streams));
            return Ok(());
        }
        self.count_control(out)
    }

    /// GOAWAY: streams above the last one the server will process were never processed (RFC 9113
    /// §6.8); they go again on another connection (they fail with `--no-retry`), and no new
    /// stream opens on this one.
    pub(super) fn on_goaway(
        &mut self,
        payload: &[u8],
        at: Instant,
        ledger: &Ledger<'_>,
    ) -> Result<(), Failure> {
        let last =
            read_u32(payload).ok_or_else(|| Failure::protocol("short GOAWAY"))? & 0x7fff_ffff;
        let code = payload
            .get(4..8)
            .and_then(read_u32)
            .unwrap_or(frame::NO_ERROR);
        if self.next_stream_id == 1 {
            return Err(Failure::new(
                ErrorKind::Goaway,
                format!(
                    "the server sent GOAWAY ({}) before the first request",
                    error_code_name(code)
                ),
            ));
        }
        if code != frame::NO_ERROR {
            ledger.note_error(|| format!("the server sent GOAWAY with {}", error_code_name(code)));
        }
        self.goaway = Some(last);
        let mut unprocessed: Vec<u32> = self
            .streams
            .keys()
            .copied()
            .filter(|id| *id > last)
            .collect();
        // Oldest first, so they go again in the order they were sent (the map has no order).
        unprocessed.sort_unstable();
        for id in unprocessed {
            if let Some(stream) = self.streams.remove(&id) {
                if !ledger.retry(stream.start, ErrorKind::Goaway, at) {
                    ledger.fail(stream.start, ErrorKind::Goaway, at);
                }
            }
        }
        Ok(())
    }
}

/// What a server that answers the preface with something other than HTTP/2 speaks, if the
/// first bytes tell: TLS records (an h2c request to a TLS port) or an HTTP/1.1 response.
pub(super) fn not_http2(first: &[u8]) -> Option<Failure> {
    if crate::proto::is_tls_record(first) {
        return Some(
            Failure::protocol(
                "the server answered with TLS: it expects https:// (h2 over TLS), not h2c",
            )
            .showing(Symptom::TlsPort),
        );
    }
    if first.starts_with(b"HTTP/1.")
        || (first.len() < 7 && b"HTTP/1.".starts_with(first) && !first.is_empty())
    {
        return Some(Failure::protocol("the server answered in HTTP/1.1: it does not speak h2c by prior knowledge (try --proto h2c-upgrade or h1)").showing(Symptom::Http1Only));
    }
    None
}

pub(super) fn window_update(out: &mut Vec<u8>, stream: u32, increment: i64) {
    write_frame(
        out,
        frame::WINDOW_UPDATE,
        0,
        stream,
        &(increment as u32).to_be_bytes(),
    );
}
