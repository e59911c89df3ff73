//! QPACK (RFC 9204) with the static table only: request field sections encoded once per run,
//! response field sections decoded (any dynamic-table reference is QPACK_DECOMPRESSION_FAILED).

use super::varint::write_frame_head;
use super::{H3Error, HEADERS, QPACK_DECOMPRESSION_FAILED};
use crate::proto::hpack::{
    read_integer, read_prefixed_string, write_integer, DecodedBlock, Entry, FieldMatcher,
};

/// The QPACK static table (RFC 9204 Appendix A), 0-based as in the protocol.
const STATIC_TABLE: [(&str, &str); 99] = [
    (":authority", ""),
    (":path", "/"),
    ("age", "0"),
    ("content-disposition", ""),
    ("content-length", "0"),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("referer", ""),
    ("set-cookie", ""),
    (":method", "CONNECT"),
    (":method", "DELETE"),
    (":method", "GET"),
    (":method", "HEAD"),
    (":method", "OPTIONS"),
    (":method", "POST"),
    (":method", "PUT"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "103"),
    (":status", "200"),
    (":status", "304"),
    (":status", "404"),
    (":status", "503"),
    ("accept", "*/*"),
    ("accept", "application/dns-message"),
    ("accept-encoding", "gzip, deflate, br"),
    ("accept-ranges", "bytes"),
    ("access-control-allow-headers", "cache-control"),
    ("access-control-allow-headers", "content-type"),
    ("access-control-allow-origin", "*"),
    ("cache-control", "max-age=0"),
    ("cache-control", "max-age=2592000"),
    ("cache-control", "max-age=604800"),
    ("cache-control", "no-cache"),
    ("cache-control", "no-store"),
    ("cache-control", "public, max-age=31536000"),
    ("content-encoding", "br"),
    ("content-encoding", "gzip"),
    ("content-type", "application/dns-message"),
    ("content-type", "application/javascript"),
    ("content-type", "application/json"),
    ("content-type", "application/x-www-form-urlencoded"),
    ("content-type", "image/gif"),
    ("content-type", "image/jpeg"),
    ("content-type", "image/png"),
    ("content-type", "text/css"),
    ("content-type", "text/html; charset=utf-8"),
    ("content-type", "text/plain"),
    ("content-type", "text/plain;charset=utf-8"),
    ("range", "bytes=0-"),
    ("strict-transport-security", "max-age=31536000"),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains",
    ),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains; preload",
    ),
    ("vary", "accept-encoding"),
    ("vary", "origin"),
    ("x-content-type-options", "nosniff"),
    ("x-xss-protection", "1; mode=block"),
    (":status", "100"),
    (":status", "204"),
    (":status", "206"),
    (":status", "302"),
    (":status", "400"),
    (":status", "403"),
    (":status", "421"),
    (":status", "425"),
    (":status", "500"),
    ("accept-language", ""),
    ("access-control-allow-credentials", "FALSE"),
    ("access-control-allow-credentials", "TRUE"),
    ("access-control-allow-headers", "*"),
    ("access-control-allow-methods", "get"),
    ("access-control-allow-methods", "get, post, options"),
    ("access-control-allow-methods", "options"),
    ("access-control-expose-headers", "content-length"),
    ("access-control-request-headers", "content-type"),
    ("access-control-request-method", "get"),
    ("access-control-request-method", "post"),
    ("alt-svc", "clear"),
    ("authorization", ""),
    (
        "content-security-policy",
        "script-src 'none'; object-src 'none'; base-uri 'none'",
    ),
    ("early-data", "1"),
    ("expect-ct", ""),
    ("forwarded", ""),
    ("if-range", ""),
    ("origin", ""),
    ("purpose", "prefetch"),
    ("server", ""),
    ("timing-allow-origin", "*"),
    ("upgrade-insecure-requests", "1"),
    ("user-agent", ""),
    ("x-forwarded-for", ""),
    ("x-frame-options", "deny"),
    ("x-frame-options", "sameorigin"),
];

/// The position in [`STATIC_TABLE`] of `name: value`, or of the first entry named `name`.
fn static_index(name: &str, value: &[u8]) -> (Option<usize>, Option<usize>) {
    let exact = STATIC_TABLE
        .iter()
        .position(|(n, v)| *n == name && v.as_bytes() == value);
    let named = STATIC_TABLE.iter().position(|(n, _)| *n == name);
    (exact, named)
}

/// Encodes a request's field section (RFC 9204 §4.5) once, with static-table references where
/// the table has the field or its name and literals otherwise (no Huffman: the server decodes
/// it once per request, and plain literals cost it least). Names must be lower-case.
pub(crate) fn encode_field_section(fields: &[(&str, &[u8])]) -> Vec<u8> {
    // Required Insert Count 0 and Delta Base 0: no dynamic table.
    let mut out = vec![0, 0];
    for (name, value) in fields {
        match static_index(name, value) {
            (Some(index), _) => write_integer(&mut out, index, 6, 0xc0),
            (None, Some(index)) => {
                write_integer(&mut out, index, 4, 0x50);
                write_integer(&mut out, value.len(), 7, 0);
                out.extend_from_slice(value);
            }
            (None, None) => {
                write_integer(&mut out, name.len(), 3, 0x20);
                out.extend_from_slice(name.as_bytes());
                write_integer(&mut out, value.len(), 7, 0);
                out.extend_from_slice(value);
            }
        }
    }
    out
}

/// A HEADERS frame carrying `section`.
pub(crate) fn headers_frame(section: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(section.len() + 8);
    write_frame_head(&mut out, HEADERS, section.len() as u64);
    out.extend_from_slice(section);
    out
}

/// Decodes a response field section for its `:status`, size and the response rules, and with a
/// `matcher` the `--expect-header` checks its fields meet. Only the static table and literals
/// are accepted: the client disabled the dynamic table, so any reference to it is
/// QPACK_DECOMPRESSION_FAILED.
pub(crate) fn decode_field_section(
    block: &[u8],
    mut matcher: Option<&mut FieldMatcher>,
) -> Result<DecodedBlock, H3Error> {
    const DYNAMIC: H3Error = H3Error::new(
        QPACK_DECOMPRESSION_FAILED,
        "a reference to the QPACK dynamic table, which the client set to 0 bytes",
    );
    let failed =
        |error: crate::proto::hpack::HpackError| H3Error::new(QPACK_DECOMPRESSION_FAILED, error.0);
    let out_of_range = H3Error::new(
        QPACK_DECOMPRESSION_FAILED,
        "a static table index beyond the table",
    );
    let mut rest = block;
    if read_integer(&mut rest, 8).map_err(failed)? != 0 {
        return Err(DYNAMIC);
    }
    // The base only locates dynamic entries, which cannot occur.
    read_integer(&mut rest, 7).map_err(failed)?;
    let mut decoded = DecodedBlock::default();
    while let Some(&first) = rest.first() {
        let name = if first & 0x80 != 0 {
            if first & 0x40 == 0 {
                return Err(DYNAMIC);
            }
            let index = read_integer(&mut rest, 6).map_err(failed)?;
            let (name, value) = STATIC_TABLE.get(index).ok_or(out_of_range)?;
            decoded.add(&Entry::known(name, value, matcher.as_deref()));
            continue;
        } else if first & 0x40 != 0 {
            if first & 0x10 == 0 {
                return Err(DYNAMIC);
            }
            let index = read_integer(&mut rest, 4).map_err(failed)?;
            let (name, _) = STATIC_TABLE.get(index).ok_or(out_of_range)?;
            let named = Entry::known(name, "", matcher.as_deref());
            (named.name_len, named.class, named.names)
        } else if first & 0x20 != 0 {
            let name = read_prefixed_string(&mut rest, 3).map_err(failed)?;
            let names = matcher
                .as_deref_mut()
                .map_or(0, |matcher| matcher.names(&name));
            (name.len, name.name_class(), names)
        } else {
            // Post-base references (0001xxxx, 0000xxxx) always name dynamic entries.
            return Err(DYNAMIC);
        };
        let value = read_prefixed_string(&mut rest, 7).map_err(failed)?;
        decoded.add(&Entry::with_value(name, &value, matcher.as_deref_mut()));
    }
    Ok(decoded)
}

#[cfg(test)]
mod tests {
    use super::super::testing::section;
    use super::*;

    #[test]
    fn request_sections_use_the_static_table_and_literals() {
        // RFC 9204 §B.1: `:path /index.html` as a literal with a static name reference.
        assert_eq!(
            encode_field_section(&[(":path", b"/index.html")]),
            [&[0x00, 0x00, 0x51, 0x0b][..], b"/index.html"].concat()
        );
        let encoded = encode_field_section(&[
            (":method", b"GET"),    // exact: index 17
            (":scheme", b"https"),  // exact: index 23
            ("user-agent", b"x/1"), // name: index 95
            ("x-custom", b"v"),     // literal name
        ]);
        let expected = [
            &[0x00, 0x00, 0xc0 | 17, 0xc0 | 23][..],
            &[0x5f, 95 - 15, 0x03],
            b"x/1",
            &[0x20 | 7, 0x01],
            b"x-custom",
            &[0x01],
            b"v",
        ]
        .concat();
        assert_eq!(encoded, expected);
        // Decoding what was encoded counts every name and value.
        let decoded = decode_field_section(&encoded, None).unwrap();
        assert_eq!(decoded.status, None);
        assert_eq!(
            decoded.uncompressed,
            (7 + 3 + 7 + 5 + 10 + 3 + 8 + 1) as u64
        );
    }

    #[test]
    fn statuses_decode_from_every_representation() {
        // Indexed static entry 25 is `:status 200`.
        let indexed = decode_field_section(&section(&[0xc0 | 25]), None).unwrap();
        assert_eq!(indexed.status, Some(200));
        assert_eq!(indexed.uncompressed, 10);
        // Name reference to entry 24 (`:status`), value "201".
        let named =
            decode_field_section(&section(&[0x5f, 24 - 15, 0x03, b'2', b'0', b'1']), None).unwrap();
        assert_eq!(named.status, Some(201));
        // The same with a Huffman-coded value: "302" is 0x64 0x02 (RFC 7541 §C.4).
        let huffman =
            decode_field_section(&section(&[0x5f, 24 - 15, 0x82, 0x64, 0x02]), None).unwrap();
        assert_eq!(huffman.status, Some(302));
        assert_eq!(huffman.uncompressed, 10);
        // A literal name: length 7 fills the 3-bit prefix, so a continuation byte of 0 follows.
        let literal = decode_field_section(
            &[&section(&[0x27, 0x00])[..], b":status", &[0x03], b"404"].concat(),
            None,
        )
        .unwrap();
        assert_eq!(literal.status, Some(404));
        // A non-numeric status is no status.
        let bad =
            decode_field_section(&section(&[0x5f, 24 - 15, 0x03, b'2', b'x', b'1']), None).unwrap();
        assert_eq!(bad.status, None);
    }

    #[test]
    fn dynamic_references_fail_decompression() {
        for block in [
            &[0x01, 0x00][..],               // Required Insert Count 1
            &section(&[0x80 | 1])[..],       // indexed, dynamic
            &section(&[0x40 | 1, 0x00])[..], // name reference, dynamic
            &section(&[0x10])[..],           // indexed post-base
            &section(&[0x00, 0x00])[..],     // literal with post-base name reference
        ] {
            let error = decode_field_section(block, None).unwrap_err();
            assert_eq!(error.code, QPACK_DECOMPRESSION_FAILED, "{block:02x?}");
        }
        let out_of_range = decode_field_section(&section(&[0xff, 0x30]), None).unwrap_err();
        assert_eq!(out_of_range.code, QPACK_DECOMPRESSION_FAILED);
        let truncated = decode_field_section(&section(&[0x5f]), None).unwrap_err();
        assert_eq!(truncated.code, QPACK_DECOMPRESSION_FAILED);
    }
}
