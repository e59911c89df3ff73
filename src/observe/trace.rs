//! `-v`/`-vv`: a protocol trace in the spirit of `nghttp -v`, read off the socket.
//!
//! A tap on a traced connection's plaintext bytes (after TLS) parses what goes each way: the
//! HTTP/1.1 head of the first request and response, then HTTP/2 frames. `-v` shows every frame but
//! DATA, and the header fields of the first two header blocks each way; `-vv` shows every frame.
//! Only the first [`TRACED_CONNECTIONS`] connections of a run are traced, so the trace stays
//! readable; the HTTP/1.1 and HTTP/2 engines never know it exists. HTTP/3 has no one byte stream
//! (quinn owns the datagrams): its engine hands each stream's bytes to the same kind of tap
//! ([`ConnTrace::on_stream_sent`], [`ConnTrace::on_stream_received`]; parsed in `trace/h3.rs`),
//! and what only quinn knows of the connection, its handshake and its end, as a line
//! ([`ConnTrace::quic_line`]). Without `-v` no tap is installed at all.

mod h3;

use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{escaped_line, peer_text};
use crate::plan::{Protocol, RunPlan};
use crate::proto::h2::error_code_name;
use crate::proto::h2::{self as h2frame, FrameHead};
use crate::proto::hpack;
use crate::tls::TlsInfo;
use crate::units::format_micros;

/// Connections traced per run.
pub(crate) const TRACED_CONNECTIONS: usize = 4;

/// Header blocks whose fields `-v` lists, per direction and connection.
const HEADER_BLOCKS_SHOWN: usize = 2;

/// The trace of one run: which connections get a tap, and the clock they are stamped with.
#[derive(Debug)]
pub(crate) struct Tracer {
    start: Instant,
    every_frame: bool,
    traced: AtomicUsize,
    request_fields: Vec<String>,
    header_table_size: usize,
}

impl Tracer {
    /// A trace of `plan`'s run starting now; `level` 2 (`-vv`) adds DATA and every header block.
    pub(crate) fn new(plan: &RunPlan, level: u8) -> Self {
        let template = &plan.request;
        let mut request_fields = vec![
            format!(":method: {}", template.parts.method),
            format!(
                ":scheme: {}",
                if plan.tls.is_some() { "https" } else { "http" }
            ),
            format!(":path: {}", template.paths.join(" | ")),
            format!(":authority: {}", template.parts.authority),
        ];
        request_fields.extend(
            template.parts.headers.iter().map(|(name, value)| {
                format!("{name}: {}", String::from_utf8_lossy(value.as_bytes()))
            }),
        );
        Tracer {
            start: Instant::now(),
            every_frame: level >= 2,
            traced: AtomicUsize::new(0),
            request_fields,
            header_table_size: plan.h2.header_table_size as usize,
        }
    }

    /// Prints a line about the run rather than one connection (a thread's QUIC socket).
    pub(crate) fn note(&self, line: &str) {
        let stamp = self.start.elapsed().as_secs_f64();
        errln!("[{stamp:8.3}] {}", escaped_line(line));
    }

    /// Reports an established connection; returns its tap if it is among the traced ones.
    pub(crate) fn connected(
        self: &Arc<Self>,
        id: u64,
        connect_time: Duration,
        tls: Option<&TlsInfo>,
        protocol: Option<Protocol>,
    ) -> Option<ConnTrace> {
        if self.traced.fetch_add(1, Ordering::Relaxed) >= TRACED_CONNECTIONS {
            return None;
        }
        let mut line = format!(
            "connected in {}",
            format_micros(connect_time.as_micros() as f64)
        );
        if let Some(tls) = tls {
            let _ = write!(
                line,
                "; {} {} {}, ALPN {}",
                tls.version,
                tls.cipher,
                tls.key_exchange,
                tls.alpn.as_deref().unwrap_or("none")
            );
        }
        let _ = write!(
            line,
            "; speaking {}",
            protocol.map_or("HTTP/1.1, asking to upgrade to h2c", Protocol::id)
        );
        let conn = ConnTrace {
            tracer: self.clone(),
            id,
            sent: Tap::new(Direction::Send, protocol),
            received: Tap::new(Direction::Recv, protocol),
            decoder: hpack::Decoder::new(self.header_table_size),
            streams: h3::StreamTaps::default(),
        };
        conn.print(&[line]);
        Some(conn)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Direction {
    Send,
    Recv,
}

impl Direction {
    fn word(self) -> &'static str {
        match self {
            Direction::Send => "send",
            Direction::Recv => "recv",
        }
    }
}

/// Where a direction's byte stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// An HTTP/1.1 head (request line or status line and fields).
    Http1Head,
    /// The client connection preface, not shown.
    Preface,
    /// HTTP/2 frames.
    Frames,
    /// Nothing more to show (HTTP/1.1 after the first exchange).
    Done,
}

/// One direction of a traced connection.
#[derive(Debug)]
struct Tap {
    stage: Stage,
    pending: Vec<u8>,
    header_blocks: usize,
    /// A header block waiting for its CONTINUATION frames.
    header_block: Option<(u32, Vec<u8>)>,
}

impl Tap {
    fn new(direction: Direction, protocol: Option<Protocol>) -> Self {
        let stage = match (protocol, direction) {
            (Some(Protocol::H2 | Protocol::H2c), Direction::Send) => Stage::Preface,
            (Some(Protocol::H2 | Protocol::H2c), Direction::Recv) => Stage::Frames,
            _ => Stage::Http1Head,
        };
        Tap {
            stage,
            pending: Vec::new(),
            header_blocks: 0,
            header_block: None,
        }
    }
}

/// The tap on one traced connection.
#[derive(Debug)]
pub(crate) struct ConnTrace {
    tracer: Arc<Tracer>,
    id: u64,
    sent: Tap,
    received: Tap,
    decoder: hpack::Decoder,
    /// HTTP/3's streams.
    streams: h3::StreamTaps,
}

impl ConnTrace {
    /// Bytes the engine wrote.
    pub(crate) fn on_sent(&mut self, bytes: &[u8]) {
        let lines = self.feed(Direction::Send, bytes);
        self.print(&lines);
    }

    /// Bytes the server sent.
    pub(crate) fn on_received(&mut self, bytes: &[u8]) {
        let lines = self.feed(Direction::Recv, bytes);
        self.print(&lines);
    }

    /// HTTP/3: bytes the engine wrote on `stream`.
    pub(crate) fn on_stream_sent(&mut self, stream: u64, bytes: &[u8]) {
        self.on_stream(stream, Direction::Send, bytes);
    }

    /// HTTP/3: bytes the server sent on `stream`.
    pub(crate) fn on_stream_received(&mut self, stream: u64, bytes: &[u8]) {
        self.on_stream(stream, Direction::Recv, bytes);
    }

    /// HTTP/3: a fact only quinn knows of the connection (its handshake, its end).
    pub(crate) fn quic_line(&self, line: String) {
        self.print(&[line]);
    }

    fn on_stream(&mut self, stream: u64, direction: Direction, bytes: &[u8]) {
        let shown = h3::Shown {
            every_frame: self.tracer.every_frame,
            request_fields: &self.tracer.request_fields,
        };
        let lines = self.streams.feed(stream, direction, bytes, &shown);
        self.print(&lines);
    }

    fn print(&self, lines: &[String]) {
        if lines.is_empty() {
            return;
        }
        let stamp = self.tracer.start.elapsed().as_secs_f64();
        let mut text = String::new();
        for line in lines {
            // Heads and header values are the server's words.
            let line = escaped_line(line);
            // Details (indented) belong to the frame or head above them.
            if line.starts_with(' ') {
                let _ = writeln!(text, "{:11}{line}", "");
            } else {
                let _ = writeln!(text, "[{stamp:8.3}] [conn {}] {line}", self.id);
            }
        }
        err!("{text}");
    }

    fn tap(&mut self, direction: Direction) -> &mut Tap {
        match direction {
            Direction::Send => &mut self.sent,
            Direction::Recv => &mut self.received,
        }
    }

    fn feed(&mut self, direction: Direction, bytes: &[u8]) -> Vec<String> {
        let mut lines = Vec::new();
        if self.tap(direction).stage == Stage::Done {
            return lines;
        }
        self.tap(direction).pending.extend_from_slice(bytes);
        loop {
            let tap = self.tap(direction);
            let progressed = match tap.stage {
                Stage::Done => {
                    tap.pending = Vec::new();
                    false
                }
                Stage::Preface if tap.pending.len() >= h2frame::PREFACE_LEN => {
                    tap.pending.drain(..h2frame::PREFACE_LEN);
                    tap.stage = Stage::Frames;
                    true
                }
                Stage::Preface => false,
                Stage::Http1Head => self.http1_head(direction, &mut lines),
                Stage::Frames => self.frame(direction, &mut lines),
            };
            if !progressed {
                return lines;
            }
        }
    }

    /// Shows a complete HTTP/1.1 head; after an upgrade, HTTP/2 follows.
    fn http1_head(&mut self, direction: Direction, lines: &mut Vec<String>) -> bool {
        let tap = self.tap(direction);
        let Some(end) = tap
            .pending
            .windows(4)
            .position(|window| window == b"\r\n\r\n")
        else {
            return false;
        };
        let head = String::from_utf8_lossy(&tap.pending[..end]).into_owned();
        tap.pending.drain(..end + 4);
        let mut head_lines = head.lines();
        let first = head_lines.next().unwrap_or_default();
        lines.push(format!("{} {first}", direction.word()));
        lines.extend(head_lines.map(|line| format!("  {line}")));
        let upgrading = match direction {
            Direction::Send => head.to_ascii_lowercase().contains("upgrade: h2c"),
            Direction::Recv => first.split(' ').nth(1) == Some("101"),
        };
        tap.stage = match (upgrading, direction) {
            (true, Direction::Send) => Stage::Preface,
            (true, Direction::Recv) => Stage::Frames,
            (false, _) => Stage::Done,
        };
        true
    }

    /// Shows one complete frame, if one has arrived.
    fn frame(&mut self, direction: Direction, lines: &mut Vec<String>) -> bool {
        let tap = self.tap(direction);
        let Some(head) = tap.pending.first_chunk::<{ h2frame::HEADER_LEN }>() else {
            return false;
        };
        let head = FrameHead::parse(head);
        let total = h2frame::HEADER_LEN + head.length;
        if tap.pending.len() < total {
            return false;
        }
        let frame: Vec<u8> = tap.pending.drain(..total).collect();
        let payload = &frame[h2frame::HEADER_LEN..];
        let mut details = Vec::new();
        let show = match head.kind {
            h2frame::DATA => self.tracer.every_frame,
            h2frame::HEADERS | h2frame::CONTINUATION => {
                self.header_frame(direction, head, payload, &mut details)
            }
            _ => {
                frame_details(head, payload, &mut details);
                true
            }
        };
        if show {
            lines.push(format!(
                "{} {} frame <length={}, flags=0x{:02x}, stream_id={}>",
                direction.word(),
                frame_name(head.kind),
                head.length,
                head.flags,
                head.stream
            ));
            lines.extend(details.into_iter().map(|detail| format!("  {detail}")));
        }
        true
    }

    /// Follows header blocks (keeping the HPACK table in step); whether to show this frame.
    fn header_frame(
        &mut self,
        direction: Direction,
        head: FrameHead,
        payload: &[u8],
        details: &mut Vec<String>,
    ) -> bool {
        let every_frame = self.tracer.every_frame;
        let tap = self.tap(direction);
        let fragment = if head.kind == h2frame::HEADERS {
            h2frame::header_fragment(head, payload).unwrap_or_default()
        } else {
            payload
        };
        let (stream, mut block) = tap.header_block.take().unwrap_or((head.stream, Vec::new()));
        block.extend_from_slice(fragment);
        let shown = every_frame || tap.header_blocks < HEADER_BLOCKS_SHOWN;
        if head.flags & h2frame::END_HEADERS == 0 {
            tap.header_block = Some((stream, block));
            return shown;
        }
        tap.header_blocks += 1;
        match direction {
            Direction::Send if shown => details.extend(self.tracer.request_fields.iter().cloned()),
            Direction::Send => {}
            Direction::Recv => match self.decoder.decode(&block) {
                Ok(decoded) if shown => details.push(format!(
                    ":status: {} ({} bytes of header fields)",
                    decoded
                        .status
                        .map_or("none".to_owned(), |status| status.to_string()),
                    decoded.uncompressed
                )),
                Ok(_) => {}
                Err(error) => details.push(format!("undecodable header block: {}", error.0)),
            },
        }
        shown
    }
}

fn frame_name(kind: u8) -> &'static str {
    match kind {
        h2frame::DATA => "DATA",
        h2frame::HEADERS => "HEADERS",
        0x2 => "PRIORITY",
        h2frame::RST_STREAM => "RST_STREAM",
        h2frame::SETTINGS => "SETTINGS",
        h2frame::PUSH_PROMISE => "PUSH_PROMISE",
        h2frame::PING => "PING",
        h2frame::GOAWAY => "GOAWAY",
        h2frame::WINDOW_UPDATE => "WINDOW_UPDATE",
        h2frame::CONTINUATION => "CONTINUATION",
        _ => "UNKNOWN",
    }
}

fn setting_name(id: u16) -> &'static str {
    match id {
        0x1 => "SETTINGS_HEADER_TABLE_SIZE",
        0x2 => "SETTINGS_ENABLE_PUSH",
        0x3 => "SETTINGS_MAX_CONCURRENT_STREAMS",
        0x4 => "SETTINGS_INITIAL_WINDOW_SIZE",
        0x5 => "SETTINGS_MAX_FRAME_SIZE",
        0x6 => "SETTINGS_MAX_HEADER_LIST_SIZE",
        0x8 => "SETTINGS_ENABLE_CONNECT_PROTOCOL",
        0x9 => "SETTINGS_NO_RFC7540_PRIORITIES",
        _ => "UNKNOWN",
    }
}

fn be_u32(bytes: &[u8]) -> u32 {
    bytes
        .first_chunk::<4>()
        .map_or(0, |bytes| u32::from_be_bytes(*bytes))
}

/// The decoded fields of control frames, in nghttp's wording.
fn frame_details(head: FrameHead, payload: &[u8], details: &mut Vec<String>) {
    match head.kind {
        h2frame::SETTINGS if head.flags & h2frame::ACK != 0 => details.push("; ACK".to_owned()),
        h2frame::SETTINGS => {
            details.push(format!("(niv={})", payload.len() / 6));
            for setting in payload.chunks_exact(6) {
                let id = u16::from_be_bytes([setting[0], setting[1]]);
                details.push(format!(
                    "[{}(0x{id:02x}):{}]",
                    setting_name(id),
                    be_u32(&setting[2..])
                ));
            }
        }
        h2frame::WINDOW_UPDATE => details.push(format!(
            "(window_size_increment={})",
            be_u32(payload) & 0x7fff_ffff
        )),
        h2frame::RST_STREAM => details.push(format!(
            "(error_code={}({:#x}))",
            error_code_name(be_u32(payload)),
            be_u32(payload)
        )),
        h2frame::GOAWAY => {
            let code = be_u32(payload.get(4..).unwrap_or_default());
            details.push(format!(
                "(last_stream_id={}, error_code={}({code:#x}), opaque_data({})=[{}])",
                be_u32(payload) & 0x7fff_ffff,
                error_code_name(code),
                payload.len().saturating_sub(8),
                peer_text(payload.get(8..).unwrap_or_default())
            ));
        }
        h2frame::PING if head.flags & h2frame::ACK != 0 => details.push("; ACK".to_owned()),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let head = FrameHead {
            length: payload.len(),
            kind,
            flags,
            stream,
        };
        [&head.encode()[..], payload].concat()
    }

    #[test]
    fn control_frames_read_like_nghttp() {
        let mut details = Vec::new();
        let settings = [0, 3, 0, 0, 0, 100, 0, 4, 0, 0, 0xff, 0xff];
        frame_details(
            FrameHead::parse(
                frame(h2frame::SETTINGS, 0, 0, &settings)[..9]
                    .try_into()
                    .unwrap(),
            ),
            &settings,
            &mut details,
        );
        assert_eq!(
            details,
            [
                "(niv=2)",
                "[SETTINGS_MAX_CONCURRENT_STREAMS(0x03):100]",
                "[SETTINGS_INITIAL_WINDOW_SIZE(0x04):65535]"
            ]
        );
        details.clear();
        let goaway = [0, 0, 0, 5, 0, 0, 0, 2, b'b', b'y', b'e'];
        let head = FrameHead::parse(
            frame(h2frame::GOAWAY, 0, 0, &goaway)[..9]
                .try_into()
                .unwrap(),
        );
        frame_details(head, &goaway, &mut details);
        assert_eq!(
            details,
            ["(last_stream_id=5, error_code=INTERNAL_ERROR(0x2), opaque_data(3)=[bye])"]
        );
    }

    #[test]
    fn header_fragments_drop_padding_and_priority() {
        let head = FrameHead {
            length: 10,
            kind: h2frame::HEADERS,
            flags: h2frame::PADDED | h2frame::PRIORITY,
            stream: 1,
        };
        let payload = [2, 0, 0, 0, 0, 9, 0x88, 0x89, 0, 0];
        assert_eq!(
            h2frame::header_fragment(head, &payload),
            Some(&[0x88, 0x89][..])
        );
    }
}
