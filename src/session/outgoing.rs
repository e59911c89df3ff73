//! The bytes a connection has queued for the server: small frames and heads copied in, large
//! request bodies referenced (one shared copy for every connection), written with one vectored
//! write. The buffer shrinks back once drained, so an idle connection holds almost nothing.

use std::collections::VecDeque;
use std::io::IoSlice;

use bytes::Bytes;

/// Bodies up to this size are copied in; larger ones are sent from the shared copy.
const INLINE_BODY: usize = 16 * 1024;
/// Capacity kept after the queue drains; more is given back.
const KEEP_CAPACITY: usize = 4 * 1024;
/// Slices handed to one vectored write.
pub(crate) const MAX_SLICES: usize = 16;

/// A connection's queue of bytes to write.
#[derive(Debug, Default)]
pub(crate) struct Outgoing {
    /// Copied-in bytes; shared chunks sit between them at their recorded offsets.
    bytes: Vec<u8>,
    /// Shared chunks, each to be written after `bytes[..at]`.
    shared: VecDeque<(usize, Bytes)>,
    /// How much of `bytes` has been written.
    sent: usize,
    /// How much of the first shared chunk has been written (while `sent` is at its offset).
    shared_sent: usize,
    /// Bytes written since the connection opened: with [`Outgoing::queued_end`], tells whether
    /// a frame queued earlier has gone out since.
    written: u64,
}

impl Outgoing {
    /// The copied-in bytes, for encoders to append to (only at the end).
    pub(crate) fn bytes(&mut self) -> &mut Vec<u8> {
        &mut self.bytes
    }

    /// Queues `body`: copied when small, else referenced.
    pub(crate) fn push_body(&mut self, body: &Bytes) {
        if body.len() <= INLINE_BODY {
            self.bytes.extend_from_slice(body);
        } else {
            self.shared.push_back((self.bytes.len(), body.clone()));
        }
    }

    /// Whether everything queued has been written.
    pub(crate) fn is_empty(&self) -> bool {
        self.sent == self.bytes.len() && self.shared.is_empty()
    }

    /// Bytes queued and not yet written.
    fn len(&self) -> usize {
        let shared: usize = self.shared.iter().map(|(_, chunk)| chunk.len()).sum();
        self.bytes.len() - self.sent + shared - self.shared_sent
    }

    /// Bytes written since the connection opened.
    pub(crate) fn written(&self) -> u64 {
        self.written
    }

    /// Where the bytes queued so far end, counted like [`Outgoing::written`]: a frame queued
    /// last has been written once `written()` reaches this.
    pub(crate) fn queued_end(&self) -> u64 {
        self.written + self.len() as u64
    }

    /// Fills `slices` with the next bytes to write, in order; returns how many it filled.
    pub(crate) fn slices<'s>(&'s self, slices: &mut [IoSlice<'s>; MAX_SLICES]) -> usize {
        let mut count = 0;
        let mut from = self.sent;
        for (index, (at, chunk)) in self.shared.iter().enumerate() {
            if count + 2 > MAX_SLICES {
                return count;
            }
            if *at > from {
                slices[count] = IoSlice::new(&self.bytes[from..*at]);
                count += 1;
            }
            let skip = if index == 0 { self.shared_sent } else { 0 };
            slices[count] = IoSlice::new(&chunk[skip..]);
            count += 1;
            from = *at;
        }
        if from < self.bytes.len() && count < MAX_SLICES {
            slices[count] = IoSlice::new(&self.bytes[from..]);
            count += 1;
        }
        count
    }

    /// Records that the first `count` queued bytes were written.
    pub(crate) fn advance(&mut self, mut count: usize) {
        self.written += count as u64;
        while count > 0 {
            let next_shared = self.shared.front().map(|(at, _)| *at);
            match next_shared {
                Some(at) if at == self.sent => {
                    let chunk_left = self.shared[0].1.len() - self.shared_sent;
                    let take = count.min(chunk_left);
                    self.shared_sent += take;
                    count -= take;
                    if take == chunk_left {
                        self.shared.pop_front();
                        self.shared_sent = 0;
                    }
                }
                _ => {
                    let until = next_shared.unwrap_or(self.bytes.len());
                    let take = count.min(until - self.sent);
                    self.sent += take;
                    count -= take;
                    debug_assert!(take > 0, "advanced past the queue");
                    if take == 0 {
                        return;
                    }
                }
            }
        }
        if self.is_empty() {
            self.bytes.clear();
            self.sent = 0;
            if self.bytes.capacity() > KEEP_CAPACITY {
                self.bytes.shrink_to(KEEP_CAPACITY);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes the queue out `step` bytes at a time, as a socket taking partial writes would.
    fn drain(out: &mut Outgoing, step: usize) -> Vec<u8> {
        let mut written = Vec::new();
        while !out.is_empty() {
            let mut slices = [IoSlice::new(&[]); MAX_SLICES];
            let count = out.slices(&mut slices);
            let mut taken = 0;
            for slice in &slices[..count] {
                let take = (step - taken).min(slice.len());
                written.extend_from_slice(&slice[..take]);
                taken += take;
                if taken == step {
                    break;
                }
            }
            out.advance(taken);
        }
        written
    }

    #[test]
    fn shared_bodies_keep_their_place_between_copied_bytes() {
        let large = Bytes::from(vec![7u8; INLINE_BODY + 1]);
        let small = Bytes::from_static(b"small");
        for step in [1, 3, 1000, 100_000] {
            let mut out = Outgoing::default();
            let mut expected = Vec::new();
            for round in 0..3u8 {
                out.bytes().extend_from_slice(&[round; 10]);
                expected.extend_from_slice(&[round; 10]);
                out.push_body(&large);
                expected.extend_from_slice(&large);
                out.push_body(&small);
                expected.extend_from_slice(&small);
            }
            assert_eq!(out.len(), expected.len());
            assert_eq!(drain(&mut out, step), expected, "step {step}");
            assert!(out.is_empty());
            assert_eq!(out.len(), 0);
        }
    }

    #[test]
    fn a_queued_frame_is_written_once_written_reaches_its_end() {
        let mut out = Outgoing::default();
        out.bytes().extend_from_slice(&[1; 10]);
        out.push_body(&Bytes::from(vec![2; INLINE_BODY + 1]));
        out.bytes().extend_from_slice(&[3; 17]);
        let end = out.queued_end();
        assert_eq!(end, (10 + INLINE_BODY + 1 + 17) as u64);
        out.advance(end as usize - 1);
        assert!(out.written() < end, "one byte of it is still queued");
        drain(&mut out, 5);
        assert_eq!(out.written(), end);
        out.bytes().extend_from_slice(&[4; 3]);
        assert_eq!(
            out.queued_end(),
            end + 3,
            "counted on after the queue drained"
        );
    }

    #[test]
    fn drained_queue_gives_memory_back() {
        let mut out = Outgoing::default();
        out.bytes().extend_from_slice(&[1; 100_000]);
        drain(&mut out, 70_000);
        assert!(out.bytes().capacity() <= KEEP_CAPACITY);
    }
}
