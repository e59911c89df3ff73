//! QUIC variable-length integers (RFC 9000 §16): writing, reading, a frame's head, and
//! [`Varints`], which gathers them when they arrive split across reads.

/// The largest value of a QUIC variable-length integer.
pub(crate) const MAX_VARINT: u64 = (1 << 62) - 1;

/// Appends a QUIC variable-length integer (RFC 9000 §16), in its shortest form.
pub(crate) fn write_varint(out: &mut Vec<u8>, value: u64) {
    debug_assert!(value <= MAX_VARINT);
    if value < 1 << 6 {
        out.push(value as u8);
    } else if value < 1 << 14 {
        out.extend_from_slice(&(value as u16 | 0x4000).to_be_bytes());
    } else if value < 1 << 30 {
        out.extend_from_slice(&(value as u32 | 0x8000_0000).to_be_bytes());
    } else {
        out.extend_from_slice(&(value | 0xc000_0000_0000_0000).to_be_bytes());
    }
}

/// Reads a variable-length integer at the start of `input`: its value and length, or `None`
/// when `input` holds only part of it.
pub(crate) fn read_varint(input: &[u8]) -> Option<(u64, usize)> {
    let first = *input.first()?;
    let length = 1usize << (first >> 6);
    let bytes = input.get(..length)?;
    let value = bytes[1..]
        .iter()
        .fold(u64::from(first & 0x3f), |value, byte| {
            (value << 8) | u64::from(*byte)
        });
    Some((value, length))
}

/// Appends a frame's type and length.
pub(crate) fn write_frame_head(out: &mut Vec<u8>, kind: u64, length: u64) {
    write_varint(out, kind);
    write_varint(out, length);
}

/// Collects up to two variable-length integers that may arrive split across reads (a frame's
/// type and length, or a stream's type).
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Varints {
    bytes: [u8; 16],
    pub(super) len: usize,
}

impl Varints {
    /// The bytes `count` integers take, as far as the bytes so far tell.
    fn needed(&self, count: usize) -> usize {
        let mut at = 0;
        for _ in 0..count {
            let Some(first) = self.bytes.get(at).filter(|_| at < self.len) else {
                return at + 1;
            };
            at += 1 << (first >> 6);
        }
        at
    }

    /// Takes bytes from `input` until `count` integers are complete; returns the bytes it used
    /// and the integers once complete (it is then empty again).
    pub(super) fn collect(&mut self, input: &[u8], count: usize) -> (usize, Option<[u64; 2]>) {
        let mut used = 0;
        loop {
            let needed = self.needed(count);
            if self.len >= needed {
                let mut values = [0; 2];
                let mut at = 0;
                for value in values.iter_mut().take(count) {
                    let (read, length) =
                        read_varint(&self.bytes[at..self.len]).expect("the bytes are complete");
                    *value = read;
                    at += length;
                }
                self.len = 0;
                return (used, Some(values));
            }
            if used == input.len() {
                return (used, None);
            }
            let take = (needed - self.len).min(input.len() - used);
            self.bytes[self.len..self.len + take].copy_from_slice(&input[used..used + take]);
            self.len += take;
            used += take;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::varint;
    use super::*;

    #[test]
    fn varints_follow_rfc_9000() {
        // RFC 9000 §A.1's examples, and the shortest form for each length.
        for (bytes, value) in [
            (&[0x25][..], 37),
            (&[0x40, 0x25][..], 37),
            (&[0x7b, 0xbd][..], 15_293),
            (&[0x9d, 0x7f, 0x3e, 0x7d][..], 494_878_333),
            (
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c][..],
                151_288_809_941_952_652,
            ),
        ] {
            assert_eq!(read_varint(bytes), Some((value, bytes.len())));
            assert_eq!(read_varint(&bytes[..bytes.len() - 1]), None);
        }
        for value in [
            0,
            63,
            64,
            16_383,
            16_384,
            (1 << 30) - 1,
            1 << 30,
            MAX_VARINT,
        ] {
            let bytes = varint(value);
            let expected_len = match value {
                0..=63 => 1,
                64..=16_383 => 2,
                16_384..=0x3fff_ffff => 4,
                _ => 8,
            };
            assert_eq!(bytes.len(), expected_len, "{value}");
            assert_eq!(read_varint(&bytes), Some((value, expected_len)));
        }
    }
}
