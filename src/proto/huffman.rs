//! HPACK's Huffman code (RFC 7541 Appendix B), decoding only.
//!
//! The code is canonical: codes of one length are consecutive and ordered by symbol, so the table
//! of code lengths alone defines it, and decoding walks one bit at a time with per-length ranges.

/// Code length in bits of each byte value (the 257th symbol, EOS, is 30 bits long).
const CODE_LENGTHS: [u8; 256] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28,
    28, 28, 28, 28, 28, 28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5,
    5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6,
    6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23, 22,
    23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22,
    21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20,
    22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19,
    21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22,
    22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,
];

/// Length of the end-of-string symbol, which never appears in valid input.
const EOS_LENGTH: usize = 30;

/// The canonical decoding tables, built once.
struct Canonical {
    /// Symbols sorted by (code length, symbol); index 256 is EOS.
    symbols: [u16; 257],
    /// For each length, the first code of that length.
    first_code: [u32; EOS_LENGTH + 1],
    /// For each length, the index in `symbols` of its first symbol.
    first_index: [u16; EOS_LENGTH + 1],
    /// For each length, how many symbols have it.
    count: [u16; EOS_LENGTH + 1],
}

fn length_of(symbol: usize) -> usize {
    CODE_LENGTHS
        .get(symbol)
        .map_or(EOS_LENGTH, |&length| usize::from(length))
}

fn canonical() -> &'static Canonical {
    static TABLES: std::sync::OnceLock<Canonical> = std::sync::OnceLock::new();
    TABLES.get_or_init(|| {
        let mut symbols: Vec<u16> = (0..257).collect();
        symbols.sort_by_key(|&symbol| (length_of(usize::from(symbol)), symbol));
        let mut tables = Canonical {
            symbols: symbols.try_into().expect("257 symbols"),
            first_code: [0; EOS_LENGTH + 1],
            first_index: [0; EOS_LENGTH + 1],
            count: [0; EOS_LENGTH + 1],
        };
        let mut code = 0u32;
        let mut previous_length = 0;
        for (index, &symbol) in tables.symbols.iter().enumerate() {
            let length = length_of(usize::from(symbol));
            if index > 0 {
                code = (code + 1) << (length - previous_length);
            }
            if tables.count[length] == 0 {
                tables.first_code[length] = code;
                tables.first_index[length] = index as u16;
            }
            tables.count[length] += 1;
            previous_length = length;
        }
        tables
    })
}

/// Why a Huffman string could not be decoded.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct InvalidHuffman;

/// Decodes `input`, handing each decoded byte to `sink`; returns how many bytes it decoded.
pub(super) fn decode(input: &[u8], mut sink: impl FnMut(u8)) -> Result<usize, InvalidHuffman> {
    let tables = canonical();
    let mut decoded = 0;
    let (mut code, mut length) = (0u32, 0usize);
    for byte in input {
        for shift in (0..8).rev() {
            code = (code << 1) | u32::from((byte >> shift) & 1);
            length += 1;
            if length > EOS_LENGTH {
                return Err(InvalidHuffman);
            }
            let offset = code.wrapping_sub(tables.first_code[length]);
            if tables.count[length] > 0 && offset < u32::from(tables.count[length]) {
                let symbol =
                    tables.symbols[usize::from(tables.first_index[length]) + offset as usize];
                if symbol == 256 {
                    return Err(InvalidHuffman);
                }
                sink(symbol as u8);
                decoded += 1;
                code = 0;
                length = 0;
            }
        }
    }
    // What is left must be padding: fewer than 8 bits, all ones (a prefix of EOS).
    if length >= 8 || code != (1 << length) - 1 {
        return Err(InvalidHuffman);
    }
    Ok(decoded)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_to_string(hex: &str) -> Result<String, InvalidHuffman> {
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        let mut out = Vec::new();
        let count = decode(&bytes, |byte| out.push(byte))?;
        assert_eq!(count, out.len());
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn decodes_the_rfc_examples() {
        // RFC 7541 C.4.1 - C.4.3 and C.6.1.
        assert_eq!(
            decode_to_string("f1e3c2e5f23a6ba0ab90f4ff").unwrap(),
            "www.example.com"
        );
        assert_eq!(decode_to_string("a8eb10649cbf").unwrap(), "no-cache");
        assert_eq!(decode_to_string("25a849e95ba97d7f").unwrap(), "custom-key");
        assert_eq!(decode_to_string("6402").unwrap(), "302");
        assert_eq!(decode_to_string("aec3771a4b").unwrap(), "private");
        assert_eq!(
            decode_to_string("d07abe941054d444a8200595040b8166e082a62d1bff").unwrap(),
            "Mon, 21 Oct 2013 20:13:21 GMT"
        );
    }

    #[test]
    fn rejects_bad_padding() {
        assert_eq!(
            decode_to_string("f1e3c2e5f23a6ba0ab90f4fe"),
            Err(InvalidHuffman)
        );
        assert_eq!(decode_to_string("ffffffff"), Err(InvalidHuffman));
    }
}
