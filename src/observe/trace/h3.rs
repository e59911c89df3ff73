//! The `-v` trace of an HTTP/3 connection, read off its streams' bytes as the HTTP/1.1 and
//! HTTP/2 traces are read off the socket. quinn owns the UDP datagrams and QUIC's own frames;
//! what HTTP/3 puts on each stream is plain bytes, which the engine hands to this tap as it
//! writes and reads them ([`ConnTrace::on_stream_sent`], [`ConnTrace::on_stream_received`]).
//! The engine never knows what is shown: frames are parsed here with `proto::h3`'s varints and
//! QPACK decoder. DATA payloads are skipped, not buffered; so is the payload of any other frame
//! larger than [`MAX_BUFFERED`] (named, not decoded), so a traced connection's memory stays
//! bounded whatever the server sends.
//!
//! [`ConnTrace::on_stream_sent`]: super::ConnTrace::on_stream_sent
//! [`ConnTrace::on_stream_received`]: super::ConnTrace::on_stream_received

use std::collections::HashMap;
use std::fmt::Write as _;

use super::{Direction, HEADER_BLOCKS_SHOWN};
use crate::proto::h3::{
    decode_field_section, read_varint, setting_name, CANCEL_PUSH, DATA, GOAWAY, HEADERS,
    MAX_HEADER_BLOCK, MAX_PUSH_ID, PUSH_PROMISE, SETTINGS, STREAM_CONTROL, STREAM_QPACK_DECODER,
    STREAM_QPACK_ENCODER,
};

/// The largest frame (other than DATA) whose payload the tap collects to decode: the largest
/// HEADERS frame the engine accepts.
const MAX_BUFFERED: u64 = MAX_HEADER_BLOCK;

/// What the tap shows, as the trace's other taps do: whether every frame is shown (`-vv`) and
/// the request's fields, shown for a sent header block (the encoder's output is ours).
pub(super) struct Shown<'a> {
    pub(super) every_frame: bool,
    pub(super) request_fields: &'a [String],
}

/// The taps on one HTTP/3 connection's streams.
#[derive(Debug, Default)]
pub(super) struct StreamTaps {
    /// One per stream and direction (a request stream has two).
    streams: HashMap<(u64, Direction), StreamTap>,
    /// Header blocks seen each way, on all request streams: `-v` shows the first ones' fields.
    header_blocks: [usize; 2],
}

/// One direction of one stream.
#[derive(Debug, Default)]
struct StreamTap {
    /// The start of a varint or of a frame not complete yet.
    pending: Vec<u8>,
    /// A unidirectional stream's type, once read.
    kind: Option<u64>,
    /// Payload bytes of the current frame still to pass over (DATA, or too large to decode).
    skip: u64,
    /// Nothing more on it is shown (a QPACK stream, or a type the client does not read).
    done: bool,
}

impl StreamTaps {
    /// Follows `bytes` of `stream` going `direction`; returns the trace's lines for them.
    pub(super) fn feed(
        &mut self,
        stream: u64,
        direction: Direction,
        bytes: &[u8],
        shown: &Shown<'_>,
    ) -> Vec<String> {
        let lines = self.follow(stream, direction, bytes, shown);
        // A tap between frames holds nothing a later chunk needs: a request stream's is dropped
        // (it would start again the same), as is a stream the client does not read, so a long
        // traced connection keeps no state per stream it is done with.
        let key = (stream, direction);
        if let Some(tap) = self.streams.get(&key) {
            let request_idle = stream & 0x2 == 0 && tap.pending.is_empty() && tap.skip == 0;
            let unread = tap.done
                && !matches!(
                    tap.kind,
                    Some(STREAM_CONTROL | STREAM_QPACK_ENCODER | STREAM_QPACK_DECODER)
                );
            if request_idle || unread {
                self.streams.remove(&key);
            }
        }
        lines
    }

    /// [`Self::feed`]'s parsing of one stream's bytes.
    fn follow(
        &mut self,
        stream: u64,
        direction: Direction,
        bytes: &[u8],
        shown: &Shown<'_>,
    ) -> Vec<String> {
        let mut lines = Vec::new();
        let header_blocks = &mut self.header_blocks[direction as usize];
        let tap = self.streams.entry((stream, direction)).or_default();
        // Bit 0x2 of a stream id marks a unidirectional stream (RFC 9000 §2.1).
        let unidirectional = stream & 0x2 != 0;
        let mut input = bytes;
        loop {
            if tap.done {
                tap.pending = Vec::new();
                return lines;
            }
            if tap.skip > 0 {
                if tap.pending.is_empty() {
                    let passed = tap.skip.min(input.len() as u64);
                    input = &input[passed as usize..];
                    tap.skip -= passed;
                } else {
                    let passed = tap.skip.min(tap.pending.len() as u64);
                    tap.pending.drain(..passed as usize);
                    tap.skip -= passed;
                }
                if tap.skip > 0 && input.is_empty() {
                    return lines;
                }
                continue;
            }
            tap.pending.extend_from_slice(input);
            input = &[];
            if unidirectional && tap.kind.is_none() {
                let Some((kind, used)) = read_varint(&tap.pending) else {
                    return lines;
                };
                tap.pending.drain(..used);
                tap.kind = Some(kind);
                let name = match kind {
                    // Its SETTINGS line says which stream it is.
                    STREAM_CONTROL => continue,
                    STREAM_QPACK_ENCODER => "QPACK encoder".to_owned(),
                    STREAM_QPACK_DECODER => "QPACK decoder".to_owned(),
                    other => format!("unknown type 0x{other:x}, not read"),
                };
                lines.push(format!("{} stream {stream}: {name}", direction.word()));
                tap.done = true;
                continue;
            }
            let Some((kind, kind_len)) = read_varint(&tap.pending) else {
                return lines;
            };
            let Some((length, length_len)) = read_varint(&tap.pending[kind_len..]) else {
                return lines;
            };
            let head = kind_len + length_len;
            if kind == DATA || length > MAX_BUFFERED {
                tap.pending.drain(..head);
                tap.skip = length;
                if kind != DATA || shown.every_frame {
                    lines.push(frame_line(direction, kind, length, stream));
                }
                continue;
            }
            let Some(end) = head.checked_add(length as usize) else {
                return lines;
            };
            if tap.pending.len() < end {
                return lines;
            }
            let frame: Vec<u8> = tap.pending.drain(..end).collect();
            let payload = &frame[head..];
            match kind {
                HEADERS => {
                    let show = shown.every_frame || *header_blocks < HEADER_BLOCKS_SHOWN;
                    *header_blocks += 1;
                    if show {
                        lines.push(frame_line(direction, kind, length, stream));
                        header_details(direction, payload, shown, &mut lines);
                    }
                }
                SETTINGS => lines.push(format!(
                    "{} SETTINGS <{}> on control stream {stream}",
                    direction.word(),
                    settings(payload)
                )),
                GOAWAY => lines.push(format!(
                    "{} GOAWAY <stream_id={}>",
                    direction.word(),
                    read_varint(payload).map_or("undecodable".to_owned(), |(id, _)| id.to_string())
                )),
                _ => lines.push(frame_line(direction, kind, length, stream)),
            }
        }
    }
}

/// A frame's line: its name, length and stream.
fn frame_line(direction: Direction, kind: u64, length: u64, stream: u64) -> String {
    let word = direction.word();
    match kind {
        // The DATA line reads as it always has (`recv DATA <length=…>`).
        DATA => format!("{word} DATA <length={length}, stream_id={stream}>"),
        _ => format!(
            "{word} {} frame <length={length}, stream_id={stream}>",
            frame_name(kind)
        ),
    }
}

/// What a header block shows: the request's fields as sent, or the response's `:status`.
fn header_details(
    direction: Direction,
    payload: &[u8],
    shown: &Shown<'_>,
    lines: &mut Vec<String>,
) {
    match direction {
        Direction::Send => lines.extend(
            shown
                .request_fields
                .iter()
                .map(|field| format!("  {field}")),
        ),
        Direction::Recv => lines.push(match decode_field_section(payload, None) {
            Ok(decoded) => format!(
                "  :status: {} ({} bytes of header fields)",
                decoded
                    .status
                    .map_or("none".to_owned(), |status| status.to_string()),
                decoded.uncompressed
            ),
            Err(error) => format!("  undecodable field section: {}", error.reason),
        }),
    }
}

/// A SETTINGS payload as `NAME=value, …`, or `none`.
fn settings(mut payload: &[u8]) -> String {
    let mut text = String::new();
    while let Some((id, id_len)) = read_varint(payload) {
        let Some((value, value_len)) = read_varint(&payload[id_len..]) else {
            break;
        };
        payload = &payload[id_len + value_len..];
        let separator = if text.is_empty() { "" } else { ", " };
        let _ = write!(text, "{separator}{}={value}", setting_name(id));
    }
    if text.is_empty() {
        "none".to_owned()
    } else {
        text
    }
}

/// A frame type's name (RFC 9114 §7.2); a reserved or unknown one by its number.
fn frame_name(kind: u64) -> String {
    match kind {
        DATA => "DATA".to_owned(),
        HEADERS => "HEADERS".to_owned(),
        CANCEL_PUSH => "CANCEL_PUSH".to_owned(),
        SETTINGS => "SETTINGS".to_owned(),
        PUSH_PROMISE => "PUSH_PROMISE".to_owned(),
        GOAWAY => "GOAWAY".to_owned(),
        MAX_PUSH_ID => "MAX_PUSH_ID".to_owned(),
        other => format!("UNKNOWN(0x{other:x})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::h3::varint::write_varint;
    use crate::proto::h3::{encode_field_section, headers_frame, write_frame_head};

    const SHOWN: Shown<'static> = Shown {
        every_frame: false,
        request_fields: &[],
    };

    #[test]
    fn frames_split_anywhere_read_the_same() {
        // A response: HEADERS (`:status: 200`), a 5-byte DATA frame, a reserved frame type.
        let mut response = headers_frame(&encode_field_section(&[(":status", &b"200"[..])]));
        write_frame_head(&mut response, DATA, 5);
        response.extend_from_slice(b"hello");
        write_frame_head(&mut response, 0x21, 1);
        response.push(0);
        let every = Shown {
            every_frame: true,
            request_fields: &[],
        };
        let whole = StreamTaps::default().feed(0, Direction::Recv, &response, &every);
        assert_eq!(
            whole,
            [
                format!("recv HEADERS frame <length={}, stream_id=0>", response[1]),
                "  :status: 200 (10 bytes of header fields)".to_owned(),
                "recv DATA <length=5, stream_id=0>".to_owned(),
                "recv UNKNOWN(0x21) frame <length=1, stream_id=0>".to_owned(),
            ]
        );
        for split in 1..response.len() {
            let mut taps = StreamTaps::default();
            let mut lines = taps.feed(0, Direction::Recv, &response[..split], &every);
            lines.extend(taps.feed(0, Direction::Recv, &response[split..], &every));
            assert_eq!(lines, whole, "split at {split}");
        }
    }

    #[test]
    fn control_and_qpack_streams_are_named() {
        let mut control = Vec::new();
        write_varint(&mut control, STREAM_CONTROL);
        write_frame_head(&mut control, SETTINGS, 4);
        control.extend_from_slice(&[0x01, 0x00, 0x06, 0x20]);
        write_frame_head(&mut control, GOAWAY, 1);
        control.push(8);
        let mut taps = StreamTaps::default();
        assert_eq!(
            taps.feed(3, Direction::Recv, &control, &SHOWN),
            [
                "recv SETTINGS <QPACK_MAX_TABLE_CAPACITY=0, MAX_FIELD_SECTION_SIZE=32> on control stream 3",
                "recv GOAWAY <stream_id=8>",
            ]
        );
        assert_eq!(
            taps.feed(
                7,
                Direction::Recv,
                &[STREAM_QPACK_ENCODER as u8, 1, 2, 3],
                &SHOWN
            ),
            ["recv stream 7: QPACK encoder"]
        );
        // Nothing more is shown of it, whatever comes.
        assert!(taps
            .feed(7, Direction::Recv, &[0xff; 64], &SHOWN)
            .is_empty());
    }

    #[test]
    fn only_the_first_header_blocks_are_shown_and_large_frames_are_not_kept() {
        let section = headers_frame(&encode_field_section(&[(":status", &b"204"[..])]));
        let mut taps = StreamTaps::default();
        let shown: usize = (0..4u64)
            .map(|stream| {
                taps.feed(stream * 4, Direction::Recv, &section, &SHOWN)
                    .len()
            })
            .sum();
        // Two header blocks of two lines each; DATA is not shown with -v.
        assert_eq!(shown, 4);
        let mut large = Vec::new();
        write_frame_head(&mut large, 0x21, MAX_BUFFERED + 1);
        let lines = taps.feed(16, Direction::Recv, &large, &SHOWN);
        assert_eq!(
            lines,
            [format!(
                "recv UNKNOWN(0x21) frame <length={}, stream_id=16>",
                MAX_BUFFERED + 1
            )]
        );
        let tap = &taps.streams[&(16, Direction::Recv)];
        assert!(tap.pending.is_empty() && tap.skip == MAX_BUFFERED + 1);
        // The rest of the frame, then zeros that read as empty DATA frames (type 0, length 0,
        // an even number of them): between frames, nothing is kept.
        taps.feed(16, Direction::Recv, &vec![0; 65_537 + 4_464], &SHOWN);
        assert!(!taps.streams.contains_key(&(16, Direction::Recv)));
        // No state is left for the request streams that are done, however many there were.
        let every = Shown {
            every_frame: true,
            request_fields: &[],
        };
        for stream in 0..1000u64 {
            taps.feed(stream * 4, Direction::Recv, &section, &every);
        }
        assert!(taps.streams.is_empty(), "{} kept", taps.streams.len());
    }
}
