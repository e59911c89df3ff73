//! Byte builders the HTTP/3 tests share: a varint, a frame, a field section.

use super::varint::{write_frame_head, write_varint};

pub(super) fn varint(value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    write_varint(&mut out, value);
    out
}

pub(super) fn frame(kind: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    write_frame_head(&mut out, kind, payload.len() as u64);
    out.extend_from_slice(payload);
    out
}

/// A field section: no dynamic table, then the given field lines.
pub(super) fn section(lines: &[u8]) -> Vec<u8> {
    let mut out = vec![0, 0];
    out.extend_from_slice(lines);
    out
}
