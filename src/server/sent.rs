//! What the built-in target wrote, counted at its sockets: the ground truth the client's
//! `traffic:` line is tested against. Counting is off unless [`super::ServeOptions::sent`] is set.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::watched::Watch;

use crate::proto::h2::{self as h2frame, FrameHead};

/// Bytes the target wrote, summed over its connections (after TLS: what the client decrypts).
#[derive(Debug, Default)]
pub struct SentBytes {
    total: AtomicU64,
    header_blocks: AtomicU64,
    data: AtomicU64,
    goaway: AtomicU64,
}

/// A reading of [`SentBytes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SentTotals {
    /// Every byte written.
    pub total: u64,
    /// HTTP/2 HEADERS and CONTINUATION frame payloads (0 on HTTP/1.1 connections).
    pub h2_header_blocks: u64,
    /// HTTP/2 DATA frame payloads (0 on HTTP/1.1 connections).
    pub h2_data: u64,
    /// HTTP/2 GOAWAY frames, frame headers included: the server's answer to a client's GOAWAY,
    /// which a client that closes at once never reads.
    pub h2_goaway: u64,
}

impl SentBytes {
    /// The counts so far.
    pub fn totals(&self) -> SentTotals {
        SentTotals {
            total: self.total.load(Ordering::Relaxed),
            h2_header_blocks: self.header_blocks.load(Ordering::Relaxed),
            h2_data: self.data.load(Ordering::Relaxed),
            h2_goaway: self.goaway.load(Ordering::Relaxed),
        }
    }
}

/// What one connection's output has shown so far.
#[derive(Debug)]
enum Framing {
    /// Nothing written yet.
    Unknown,
    /// An HTTP/1.1 connection (its first byte began a status line): only the total is counted,
    /// also after an `Upgrade: h2c`, whose frames are not split out.
    Http1,
    /// HTTP/2 frames: `head` collects a frame header, then `payload_left` bytes of type `kind` follow.
    Frames {
        head: [u8; h2frame::HEADER_LEN],
        filled: usize,
        kind: u8,
        payload_left: usize,
    },
}

/// Counts what is written on a connection into a shared [`SentBytes`] (see [`Watched`]).
pub(super) struct Counter {
    sent: Arc<SentBytes>,
    framing: Framing,
}

impl Counter {
    /// Counts into `sent`.
    pub(super) fn new(sent: Arc<SentBytes>) -> Self {
        Counter {
            sent,
            framing: Framing::Unknown,
        }
    }

    /// Counts `bytes`, which were just written, splitting HTTP/2 frames by type.
    fn count(&mut self, mut bytes: &[u8]) {
        self.sent
            .total
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        if let Framing::Unknown = self.framing {
            // A server speaks first with a status line (HTTP/1.1) or its SETTINGS frame (HTTP/2).
            self.framing = match bytes.first() {
                None => return,
                Some(b'H') => Framing::Http1,
                Some(_) => Framing::Frames {
                    head: [0; h2frame::HEADER_LEN],
                    filled: 0,
                    kind: 0,
                    payload_left: 0,
                },
            };
        }
        let Framing::Frames {
            head,
            filled,
            kind,
            payload_left,
        } = &mut self.framing
        else {
            return;
        };
        while !bytes.is_empty() {
            if *payload_left > 0 {
                let take = (*payload_left).min(bytes.len());
                let counter = match *kind {
                    h2frame::HEADERS | h2frame::CONTINUATION => Some(&self.sent.header_blocks),
                    h2frame::DATA => Some(&self.sent.data),
                    _ => None,
                };
                if let Some(counter) = counter {
                    counter.fetch_add(take as u64, Ordering::Relaxed);
                }
                *payload_left -= take;
                bytes = &bytes[take..];
                continue;
            }
            let take = (h2frame::HEADER_LEN - *filled).min(bytes.len());
            head[*filled..*filled + take].copy_from_slice(&bytes[..take]);
            *filled += take;
            bytes = &bytes[take..];
            if *filled == h2frame::HEADER_LEN {
                let frame = FrameHead::parse(head);
                if frame.kind == h2frame::GOAWAY {
                    let frame_bytes = h2frame::HEADER_LEN + frame.length;
                    self.sent
                        .goaway
                        .fetch_add(frame_bytes as u64, Ordering::Relaxed);
                }
                *filled = 0;
                *kind = frame.kind;
                *payload_left = frame.length;
            }
        }
    }
}

impl Watch for Counter {
    fn read(&mut self, _bytes: &[u8]) {}

    fn written(&mut self, bytes: &[u8]) {
        self.count(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(pieces: &[&[u8]]) -> SentTotals {
        let sent = Arc::new(SentBytes::default());
        let mut counter = Counter::new(sent.clone());
        for piece in pieces {
            counter.written(piece);
        }
        sent.totals()
    }

    #[test]
    fn splits_http2_frames_written_in_any_pieces() {
        let mut wire = Vec::new();
        h2frame::write_frame(&mut wire, h2frame::SETTINGS, 0, 0, &[0; 6]);
        h2frame::write_frame(&mut wire, h2frame::HEADERS, 0, 1, &[7; 5]);
        h2frame::write_frame(&mut wire, h2frame::CONTINUATION, 4, 1, &[7; 3]);
        h2frame::write_frame(&mut wire, h2frame::DATA, 1, 1, &[b'x'; 100]);
        h2frame::write_frame(&mut wire, h2frame::GOAWAY, 0, 0, &[0; 8]);
        let expected = SentTotals {
            total: wire.len() as u64,
            h2_header_blocks: 8,
            h2_data: 100,
            h2_goaway: 17,
        };
        assert_eq!(counted(&[&wire]), expected);
        for split in 1..wire.len() {
            let (first, rest) = wire.split_at(split);
            let bytes: Vec<&[u8]> = rest.chunks(3).collect();
            assert_eq!(counted(&[&[first], bytes.as_slice()].concat()), expected);
        }
    }

    #[test]
    fn http1_counts_only_the_total() {
        let response = b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\npong";
        assert_eq!(
            counted(&[response, response]),
            SentTotals {
                total: 2 * response.len() as u64,
                h2_header_blocks: 0,
                h2_data: 0,
                h2_goaway: 0,
            }
        );
    }
}
