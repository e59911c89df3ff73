//! HPACK (RFC 7541) as a load generator needs it. Responses are decoded for their `:status` and
//! sizes only: the dynamic table keeps entry sizes, never strings (with `--expect-header`, each
//! entry also keeps which checks it meets, see [`super::check`]). Requests are encoded from
//! prebuilt fields, indexing each in the server's dynamic table on first use so that later
//! requests are a few bytes of indices, with no allocation per request.

use std::collections::VecDeque;
use std::sync::Arc;

use super::check::Checks;
use super::fields::{
    decimal, value_malformed, MediaType, NameClass, NameScan, SectionRules, ValueScan,
};
use super::{grpc, huffman};

/// The static table (RFC 7541 Appendix A), 1-based in the protocol.
const STATIC_TABLE: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

/// The dynamic table size both sides start with (and the most this encoder ever uses).
pub(crate) const DEFAULT_TABLE_SIZE: usize = 4096;
/// Per-entry overhead counted against the table size (RFC 7541 §4.1).
const ENTRY_OVERHEAD: usize = 32;

/// A malformed header block; the connection cannot continue (COMPRESSION_ERROR).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct HpackError(pub &'static str);

/// What a response header block held.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct DecodedBlock {
    /// The `:status`, if the block had one.
    pub(crate) status: Option<u16>,
    /// Sum of name and value lengths of every field (h2load's "uncompressed" header size).
    pub(crate) uncompressed: u64,
    /// Which `--expect-header` checks the block's fields met (bit i: check i); 0 without them.
    pub(crate) matched: u64,
    /// What the block's fields showed of the rules a response is held to (malformed or not).
    pub(crate) rules: SectionRules,
    /// The text of its `grpc-message`, when the block sent one as a literal (the first time a
    /// connection's server sends a text; a later reference to the same entry of the dynamic
    /// table, which keeps no strings, gives none). At most [`grpc::STATUS_MESSAGE_KEPT`] bytes
    /// of it are read.
    pub(crate) grpc_message: Option<String>,
}

impl DecodedBlock {
    /// Adds a decoded field: its sizes, the checks it met, and what the rules make of it.
    pub(crate) fn add(&mut self, entry: &Entry) {
        self.uncompressed += (entry.name_len + entry.value_len) as u64;
        self.matched |= entry.matches;
        self.rules.field(
            entry.class,
            entry.value_len,
            entry.number,
            entry.bad_value,
            entry.media,
        );
        if let Some(status) = entry.status() {
            self.status = Some(status);
        }
    }
}

/// A decoded field (and a dynamic table entry), reduced to what later references need.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    pub(crate) name_len: usize,
    pub(crate) value_len: usize,
    /// What the name is to the response rules.
    pub(crate) class: NameClass,
    /// For `:status` and `content-length`, the number the value spells.
    pub(crate) number: Option<u64>,
    /// Whether the value is malformed (a literal's; the static tables' are all well formed).
    pub(crate) bad_value: bool,
    /// For `content-type`, what the value names (kept with a dynamic table entry, which
    /// servers refer to on every response after the first).
    pub(crate) media: MediaType,
    /// The `--expect-header` checks naming its field, and those its value meets too.
    pub(crate) names: u64,
    pub(crate) matches: u64,
}

impl Entry {
    /// A static table's field.
    pub(crate) fn known(name: &str, value: &str, matcher: Option<&FieldMatcher>) -> Entry {
        let class = NameClass::of_known(name.as_bytes());
        let (names, matches) = matcher.map_or((0, 0), |matcher| matcher.known(name, value));
        Entry {
            name_len: name.len(),
            value_len: value.len(),
            class,
            number: class.numeric().then(|| decimal(value.as_bytes())).flatten(),
            bad_value: false,
            media: match class {
                NameClass::ContentType => MediaType::of(value.as_bytes()),
                _ => MediaType::Other,
            },
            names,
            matches,
        }
    }

    /// The field with its literal `value`, the name's parts known.
    pub(crate) fn with_value(
        (name_len, class, names): (usize, NameClass, u64),
        value: &StringInfo<'_>,
        matcher: Option<&mut FieldMatcher>,
    ) -> Entry {
        Entry {
            name_len,
            value_len: value.len,
            class,
            number: class.numeric().then(|| value.number()).flatten(),
            bad_value: value.value_malformed(),
            media: match class {
                NameClass::ContentType => value.media(),
                _ => MediaType::Other,
            },
            names,
            matches: matcher.map_or(0, |matcher| matcher.matches(names, value)),
        }
    }

    /// The status a well-formed `:status` field gives.
    fn status(&self) -> Option<u16> {
        let status = self
            .number
            .filter(|_| self.class == NameClass::Status && self.value_len == 3);
        status.map(|status| status as u16)
    }

    fn size(&self) -> usize {
        self.name_len + self.value_len + ENTRY_OVERHEAD
    }
}

/// Decodes response header blocks, keeping the dynamic table in step with the server's encoder.
#[derive(Debug)]
pub(crate) struct Decoder {
    entries: VecDeque<Entry>,
    size: usize,
    max_size: usize,
    /// The most the server may set `max_size` to: our SETTINGS_HEADER_TABLE_SIZE.
    limit: usize,
    /// With `--expect-header`: the checks fields are compared with.
    matcher: Option<FieldMatcher>,
}

/// Compares decoded header fields with the `--expect-header` checks.
#[derive(Debug)]
pub(crate) struct FieldMatcher {
    checks: Arc<Checks>,
    /// Where a Huffman-coded name or value is decoded to be compared.
    scratch: Vec<u8>,
}

impl FieldMatcher {
    /// A matcher for `checks`; `None` when they have no header check (fields are then only sized).
    pub(crate) fn new(checks: &Arc<Checks>) -> Option<Self> {
        checks.has_headers().then(|| FieldMatcher {
            checks: Arc::clone(checks),
            scratch: checks.scratch(),
        })
    }

    /// The text of a string literal: its bytes, or for a Huffman-coded one its decoding, up to the
    /// scratch buffer's capacity; `None` when longer (no expected text is that long).
    fn text<'a>(scratch: &'a mut Vec<u8>, string: &StringInfo<'a>) -> Option<&'a [u8]> {
        if !string.huffman {
            return Some(string.raw);
        }
        scratch.clear();
        let room = scratch.capacity();
        let mut overflow = false;
        // The literal decoded once already; it cannot fail now.
        let _ = huffman::decode(string.raw, |byte| {
            if scratch.len() < room {
                scratch.push(byte);
            } else {
                overflow = true;
            }
        });
        (!overflow).then_some(scratch.as_slice())
    }

    /// The checks naming a field whose name is the literal `name`.
    pub(crate) fn names(&mut self, name: &StringInfo<'_>) -> u64 {
        match Self::text(&mut self.scratch, name) {
            Some(text) => self.checks.names(text),
            None => 0,
        }
    }

    /// Of the checks in `names`, those the literal `value` meets.
    pub(crate) fn matches(&mut self, names: u64, value: &StringInfo<'_>) -> u64 {
        if names == 0 {
            return 0;
        }
        match Self::text(&mut self.scratch, value) {
            Some(text) => self.checks.fields(names, text),
            None => 0,
        }
    }

    /// The checks naming `name` and those `name: value` meets, for a static table entry.
    pub(crate) fn known(&self, name: &str, value: &str) -> (u64, u64) {
        let names = self.checks.names(name.as_bytes());
        (names, self.checks.fields(names, value.as_bytes()))
    }
}

impl Decoder {
    /// A decoder for a connection that announced `limit` as its SETTINGS_HEADER_TABLE_SIZE.
    pub(crate) fn new(limit: usize) -> Self {
        Decoder {
            entries: VecDeque::with_capacity(32),
            size: 0,
            max_size: limit,
            limit,
            matcher: None,
        }
    }

    /// Compares every decoded field with the `--expect-header` checks (if `checks` has any),
    /// reporting those met in [`DecodedBlock::matched`].
    pub(crate) fn check_headers(&mut self, checks: &Arc<Checks>) {
        self.matcher = FieldMatcher::new(checks);
    }

    /// Decodes one complete header block.
    pub(crate) fn decode(&mut self, block: &[u8]) -> Result<DecodedBlock, HpackError> {
        let mut decoded = DecodedBlock::default();
        let mut rest = block;
        while let Some(&first) = rest.first() {
            if first & 0x80 != 0 {
                let index = read_integer(&mut rest, 7)?;
                decoded.add(&self.lookup(index)?);
            } else if first & 0x40 != 0 {
                let entry = self.literal(&mut rest, 6, &mut decoded)?;
                self.insert(entry);
            } else if first & 0x20 != 0 {
                let size = read_integer(&mut rest, 5)?;
                if size > self.limit {
                    return Err(HpackError(
                        "table size update above SETTINGS_HEADER_TABLE_SIZE",
                    ));
                }
                self.max_size = size;
                self.evict_to(size);
            } else {
                self.literal(&mut rest, 4, &mut decoded)?;
            }
        }
        Ok(decoded)
    }

    /// Reads a literal field into `decoded` (its prefix decides indexing; the caller inserts it
    /// if needed).
    fn literal(
        &mut self,
        rest: &mut &[u8],
        prefix: u8,
        decoded: &mut DecodedBlock,
    ) -> Result<Entry, HpackError> {
        let name_index = read_integer(rest, prefix)?;
        let name = if name_index == 0 {
            let name = read_string(rest)?;
            let names = self
                .matcher
                .as_mut()
                .map_or(0, |matcher| matcher.names(&name));
            (name.len, name.name_class(), names)
        } else {
            let named = self.lookup(name_index)?;
            (named.name_len, named.class, named.names)
        };
        let value = read_string(rest)?;
        let entry = Entry::with_value(name, &value, self.matcher.as_mut());
        decoded.add(&entry);
        if entry.class == NameClass::GrpcMessage {
            decoded.grpc_message = Some(value.grpc_message());
        }
        Ok(entry)
    }

    fn lookup(&self, index: usize) -> Result<Entry, HpackError> {
        match index {
            0 => Err(HpackError("index 0")),
            1..=61 => {
                let (name, value) = STATIC_TABLE[index - 1];
                Ok(Entry::known(name, value, self.matcher.as_ref()))
            }
            _ => self
                .entries
                .get(index - 62)
                .copied()
                .ok_or(HpackError("index beyond the dynamic table")),
        }
    }

    fn insert(&mut self, entry: Entry) {
        let size = entry.size();
        if size > self.max_size {
            // An entry larger than the table empties it (RFC 7541 §4.4).
            self.entries.clear();
            self.size = 0;
            return;
        }
        self.evict_to(self.max_size - size);
        self.entries.push_front(entry);
        self.size += size;
    }

    fn evict_to(&mut self, target: usize) {
        while self.size > target {
            let oldest = self.entries.pop_back().expect("size counts entries");
            self.size -= oldest.size();
        }
    }
}

/// A decoded string's length, and the literal as it arrived, for the response
/// rules and header checks to decode and compare.
pub(crate) struct StringInfo<'a> {
    pub(crate) len: usize,
    raw: &'a [u8],
    huffman: bool,
}

impl StringInfo<'_> {
    /// Hands the string's bytes, decoded, to `each`.
    fn each_byte(&self, each: impl FnMut(u8)) {
        if self.huffman {
            // The literal decoded once already; it cannot fail now.
            let _ = huffman::decode(self.raw, each);
        } else {
            self.raw.iter().copied().for_each(each);
        }
    }

    /// What the string, as a field name, is to the response rules.
    pub(crate) fn name_class(&self) -> NameClass {
        let mut scan = NameScan::default();
        self.each_byte(|byte| scan.push(byte));
        scan.class()
    }

    /// Whether the string, as a field value, is malformed (see [`value_malformed`]).
    pub(crate) fn value_malformed(&self) -> bool {
        if self.huffman {
            let mut scan = ValueScan::default();
            self.each_byte(|byte| scan.push(byte));
            scan.malformed()
        } else {
            value_malformed(self.raw)
        }
    }

    /// The text of the string as a `grpc-message` value (its first
    /// [`grpc::STATUS_MESSAGE_KEPT`] bytes).
    pub(crate) fn grpc_message(&self) -> String {
        let mut kept = Vec::with_capacity(self.len.min(grpc::STATUS_MESSAGE_KEPT));
        self.each_byte(|byte| {
            if kept.len() < grpc::STATUS_MESSAGE_KEPT {
                kept.push(byte);
            }
        });
        grpc::status_message_text(&kept)
    }

    /// What the string, as a `content-type` value, names (its first bytes decide).
    pub(crate) fn media(&self) -> MediaType {
        let mut head = [0u8; MediaType::HEAD];
        let mut len = 0;
        self.each_byte(|byte| {
            if let Some(slot) = head.get_mut(len) {
                *slot = byte;
                len += 1;
            }
        });
        MediaType::of(&head[..len])
    }

    /// The number the string spells, if only digits (see [`decimal`]).
    pub(crate) fn number(&self) -> Option<u64> {
        let mut text = [0u8; 20];
        if self.len > text.len() {
            return None;
        }
        let mut len = 0;
        self.each_byte(|byte| {
            text[len] = byte;
            len += 1;
        });
        decimal(&text[..len])
    }
}

fn read_string<'a>(rest: &mut &'a [u8]) -> Result<StringInfo<'a>, HpackError> {
    read_prefixed_string(rest, 7)
}

/// Reads a string literal whose length has a `prefix`-bit integer prefix and whose Huffman flag
/// is the bit above it (7 for HPACK; QPACK also packs 5- and 3-bit prefixes, RFC 9204 §4.1.2).
pub(crate) fn read_prefixed_string<'a>(
    rest: &mut &'a [u8],
    prefix: u8,
) -> Result<StringInfo<'a>, HpackError> {
    let huffman_coded = rest.first().ok_or(HpackError("truncated string"))? & (1 << prefix) != 0;
    let length = read_integer(rest, prefix)?;
    if length > rest.len() {
        return Err(HpackError("string longer than the block"));
    }
    let (bytes, after) = rest.split_at(length);
    *rest = after;
    let mut info = StringInfo {
        len: bytes.len(),
        raw: bytes,
        huffman: huffman_coded,
    };
    if huffman_coded {
        info.len =
            huffman::decode(bytes, |_| {}).map_err(|_| HpackError("invalid Huffman string"))?;
    }
    Ok(info)
}

/// Reads an integer with an N-bit prefix (RFC 7541 §5.1), advancing `rest`.
pub(crate) fn read_integer(rest: &mut &[u8], prefix: u8) -> Result<usize, HpackError> {
    let max_prefix = (1usize << prefix) - 1;
    let (&first, mut tail) = rest.split_first().ok_or(HpackError("truncated integer"))?;
    let mut value = usize::from(first) & max_prefix;
    if value == max_prefix {
        let mut shift = 0;
        loop {
            let (&byte, after) = tail.split_first().ok_or(HpackError("truncated integer"))?;
            tail = after;
            if shift > 28 {
                return Err(HpackError("integer too large"));
            }
            value += usize::from(byte & 0x7f) << shift;
            shift += 7;
            if byte & 0x80 == 0 {
                break;
            }
        }
    }
    *rest = tail;
    Ok(value)
}

/// Appends an integer with an N-bit prefix, OR-ing `flags` into the first byte.
pub(crate) fn write_integer(out: &mut Vec<u8>, mut value: usize, prefix: u8, flags: u8) {
    let max_prefix = (1usize << prefix) - 1;
    if value < max_prefix {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max_prefix as u8);
    value -= max_prefix;
    while value >= 0x80 {
        out.push((value & 0x7f) as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends a string literal, not Huffman-coded.
fn write_string(out: &mut Vec<u8>, bytes: &[u8]) {
    write_integer(out, bytes.len(), 7, 0);
    out.extend_from_slice(bytes);
}

/// One request header field, prepared once.
#[derive(Debug, Clone)]
pub(crate) struct Field {
    /// Index of an exact static-table match (name and value), if any.
    exact: Option<usize>,
    /// Index of a static-table entry with this name (0 when none).
    name_index: usize,
    name: Vec<u8>,
    value: Vec<u8>,
}

impl Field {
    /// Prepares `name: value` (name lower-case).
    pub(crate) fn new(name: &str, value: &[u8]) -> Field {
        let position = |matches: &dyn Fn(&(&str, &str)) -> bool| {
            STATIC_TABLE.iter().position(matches).map(|i| i + 1)
        };
        Field {
            exact: position(&|(n, v)| *n == name && v.as_bytes() == value),
            name_index: position(&|(n, _)| *n == name).unwrap_or(0),
            name: name.as_bytes().to_vec(),
            value: value.to_vec(),
        }
    }

    /// Appends this field's name with `value` as a literal never added to the table: values
    /// rendered per request would only evict the ones that repeat.
    pub(crate) fn encode_unindexed(&self, out: &mut Vec<u8>, value: &[u8]) {
        write_integer(out, self.name_index, 4, 0x00);
        if self.name_index == 0 {
            write_string(out, &self.name);
        }
        write_string(out, value);
    }

    fn table_size(&self) -> usize {
        self.name.len() + self.value.len() + ENTRY_OVERHEAD
    }
}

/// One connection's request encoder: which prepared fields the server's table holds, and where.
#[derive(Debug)]
pub(crate) struct Encoder {
    /// For each field (by the caller's numbering), its insertion ordinal in the server's table.
    inserted: Vec<Option<usize>>,
    insertions: usize,
    used: usize,
    capacity: usize,
    /// A table size to announce at the start of the next block.
    size_update: Option<usize>,
}

impl Encoder {
    /// An encoder for `fields` prepared fields, starting from the protocol's default table size.
    pub(crate) fn new(fields: usize) -> Self {
        Encoder {
            inserted: vec![None; fields],
            insertions: 0,
            used: 0,
            capacity: DEFAULT_TABLE_SIZE,
            size_update: None,
        }
    }

    /// The server announced SETTINGS_HEADER_TABLE_SIZE. Below what we use, the table is emptied
    /// (announced at the next block) and refilled within the new size.
    pub(crate) fn server_table_size(&mut self, size: usize) {
        if size < self.capacity {
            self.capacity = size;
            self.size_update = Some(size);
            self.inserted.fill(None);
            self.insertions = 0;
            self.used = 0;
        }
    }

    /// Starts a header block (announcing a pending table size change).
    pub(crate) fn begin_block(&mut self, out: &mut Vec<u8>) {
        if let Some(size) = self.size_update.take() {
            write_integer(out, 0, 5, 0x20);
            write_integer(out, size, 5, 0x20);
        }
    }

    /// Appends field number `slot`: indexed when the server's table has it, inserted if it fits.
    pub(crate) fn encode(&mut self, out: &mut Vec<u8>, slot: usize, field: &Field) {
        if let Some(index) = field.exact {
            write_integer(out, index, 7, 0x80);
        } else if let Some(ordinal) = self.inserted[slot] {
            write_integer(out, 62 + self.insertions - 1 - ordinal, 7, 0x80);
        } else if self.used + field.table_size() <= self.capacity {
            write_integer(out, field.name_index, 6, 0x40);
            if field.name_index == 0 {
                write_string(out, &field.name);
            }
            write_string(out, &field.value);
            self.inserted[slot] = Some(self.insertions);
            self.insertions += 1;
            self.used += field.table_size();
        } else {
            write_integer(out, field.name_index, 4, 0x00);
            if field.name_index == 0 {
                write_string(out, &field.name);
            }
            write_string(out, &field.value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(text: &str) -> Vec<u8> {
        let text: String = text.split_whitespace().collect();
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn integers_round_trip() {
        for (value, prefix) in [(10, 5), (1337, 5), (42, 8), (127, 7), (0, 4), (1 << 20, 6)] {
            let mut out = Vec::new();
            write_integer(&mut out, value, prefix, 0);
            let mut rest = out.as_slice();
            assert_eq!(read_integer(&mut rest, prefix).unwrap(), value);
            assert!(rest.is_empty());
        }
        let mut rest: &[u8] = &[0x1f, 0x9a, 0x0a];
        assert_eq!(read_integer(&mut rest, 5).unwrap(), 1337, "RFC 7541 C.1.2");
    }

    #[test]
    fn decodes_the_rfc_response_examples_with_huffman() {
        // RFC 7541 C.6: three responses sharing a 256-byte table, with evictions.
        let mut decoder = Decoder::new(256);
        let first = decoder
            .decode(&hex(
                "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
                 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
            ))
            .unwrap();
        assert_eq!(first.status, Some(302));
        assert_eq!(first.uncompressed, (7 + 3) + (13 + 7) + (4 + 29) + (8 + 23));
        assert_eq!(decoder.size, 222);
        let second = decoder.decode(&hex("4883 640e ff c1 c0 bf")).unwrap();
        assert_eq!(second.status, Some(307));
        assert_eq!(decoder.size, 222);
        let third = decoder
            .decode(&hex(
                "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab
                 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
                 9587 3160 65c0 03ed 4ee5 b106 3d50 07",
            ))
            .unwrap();
        assert_eq!(third.status, Some(200));
        assert_eq!(decoder.size, 215);
        assert_eq!(decoder.entries.len(), 3);
    }

    #[test]
    fn header_checks_follow_huffman_literals_and_the_dynamic_table() {
        let owned = |items: &[&str]| {
            items
                .iter()
                .map(|item| item.to_string())
                .collect::<Vec<_>>()
        };
        let checks = Arc::new(
            Checks::parse(
                false,
                &[],
                &owned(&[
                    "location: https://www.example.com",
                    "Cache-Control: private",
                    "content-encoding",
                    "date: Mon, 21 Oct 2013 20:13:21 GMT",
                ]),
                None,
            )
            .unwrap()
            .unwrap(),
        );
        // RFC 7541 C.6: Huffman-coded literals indexed in a 256-byte table, then referenced
        // (the second response), then evicted and replaced (the third has a new date).
        let mut decoder = Decoder::new(256);
        decoder.check_headers(&checks);
        let first = decoder
            .decode(&hex(
                "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
                 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
            ))
            .unwrap();
        assert_eq!(first.matched, 0b1011);
        let second = decoder.decode(&hex("4883 640e ff c1 c0 bf")).unwrap();
        assert_eq!(second.matched, 0b1011, "from the dynamic table");
        let third = decoder
            .decode(&hex(
                "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab
                 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
                 9587 3160 65c0 03ed 4ee5 b106 3d50 07",
            ))
            .unwrap();
        assert_eq!(third.matched, 0b0111, "a new date, and content-encoding");
        // Without checks nothing is compared.
        let mut plain = Decoder::new(256);
        let block = hex(
            "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
                 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
        );
        assert_eq!(plain.decode(&block).unwrap().matched, 0);
        // The fuzz target's property: checks change nothing else the decoder says.
        crate::fuzzing::hpack_block(&block);
        crate::fuzzing::hpack_block(&hex("4883 640e ff c1 c0 bf"));
    }

    /// A literal field with a new name: `first` (0x40 indexes it, 0x00 does not), the name, then
    /// `value` as it goes on the wire (its length prefix included).
    fn new_name(first: u8, name: &[u8], value: &[u8]) -> Vec<u8> {
        let mut out = vec![first];
        write_integer(&mut out, name.len(), 7, 0);
        out.extend_from_slice(name);
        out.extend_from_slice(value);
        out
    }

    /// A plain (not Huffman-coded) string literal.
    fn plain(text: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        write_integer(&mut out, text.len(), 7, 0);
        out.extend_from_slice(text);
        out
    }

    #[test]
    fn a_grpc_message_is_kept_as_text_from_its_literal() {
        let mut decoder = Decoder::new(DEFAULT_TABLE_SIZE);
        let indexed = new_name(0x40, b"grpc-message", &plain(b"a%20b%25"));
        let block = decoder.decode(&indexed).unwrap();
        assert_eq!(block.grpc_message.as_deref(), Some("a b%"));
        assert_eq!(block.rules.malformed, None);
        // The same field again by its index in the dynamic table (62), which keeps no strings.
        assert_eq!(decoder.decode(&[0x80 | 62]).unwrap().grpc_message, None);
        // Huffman-coded "custom-value" (RFC 7541 C.4.3).
        let huffman = new_name(0, b"grpc-message", &hex("89 25a8 49e9 5bb8 e8b4 bf"));
        let block = decoder.decode(&huffman).unwrap();
        assert_eq!(block.grpc_message.as_deref(), Some("custom-value"));
        // A long text: its first STATUS_MESSAGE_KEPT bytes, the block still decoded whole.
        let long = [
            new_name(0, b"grpc-message", &plain(&[b'x'; 5000])),
            vec![0x88],
        ]
        .concat();
        let block = decoder.decode(&long).unwrap();
        // Of those, a line's worth is shown, saying how long the text was.
        assert_eq!(
            block.grpc_message.as_deref(),
            Some(format!("{}…(1024 bytes)", "x".repeat(200)).as_str())
        );
        assert_eq!(block.status, Some(200));
        // Other fields keep none.
        let other = new_name(0, b"x-message", &plain(b"hello"));
        assert_eq!(decoder.decode(&other).unwrap().grpc_message, None);
    }

    #[test]
    fn malformed_blocks_are_errors() {
        let mut decoder = Decoder::new(4096);
        assert!(decoder.decode(&[0x80]).is_err(), "index 0");
        assert!(decoder.decode(&[0xbe]).is_err(), "empty dynamic table");
        assert!(
            decoder.decode(&[0x3f, 0xe1, 0x3f]).is_err(),
            "size update above the limit"
        );
        assert!(
            decoder.decode(&[0x40, 0x05, b'a']).is_err(),
            "truncated string"
        );
    }

    #[test]
    fn encoder_indexes_fields_and_decoder_follows() {
        let fields = [
            Field::new(":method", b"GET"),
            Field::new(":path", b"/ping"),
            Field::new(":authority", b"127.0.0.1:8080"),
            Field::new("user-agent", b"h2load-rs"),
        ];
        let mut encoder = Encoder::new(fields.len());
        let mut server = ServerDecoderForTest::new();
        let mut first = Vec::new();
        encoder.begin_block(&mut first);
        for (slot, field) in fields.iter().enumerate() {
            encoder.encode(&mut first, slot, field);
        }
        let mut second = Vec::new();
        encoder.begin_block(&mut second);
        for (slot, field) in fields.iter().enumerate() {
            encoder.encode(&mut second, slot, field);
        }
        assert_eq!(
            second,
            [0x82, 0xc0, 0xbf, 0xbe],
            "indexed from the dynamic table"
        );
        for block in [&first, &second] {
            assert_eq!(
                server.fields(block),
                [
                    ":method GET",
                    ":path /ping",
                    ":authority 127.0.0.1:8080",
                    "user-agent h2load-rs"
                ]
            );
        }
        encoder.server_table_size(0);
        let mut third = Vec::new();
        encoder.begin_block(&mut third);
        encoder.encode(&mut third, 1, &fields[1]);
        assert_eq!(third[..2], [0x20, 0x20], "table emptied, then sized 0");
        assert_eq!(
            third[2], 0x04,
            "literal without indexing, static name :path"
        );
    }

    /// A full decoder (names and values), to check what the encoder produces.
    #[test]
    fn rendered_values_are_literals_that_leave_the_table_alone() {
        let path = Field::new(":path", b"/x/{seq}");
        let custom = Field::new("x-id", b"{uuid}");
        let mut server = ServerDecoderForTest::new();
        let mut block = Vec::new();
        path.encode_unindexed(&mut block, b"/x/1");
        custom.encode_unindexed(&mut block, b"abc");
        assert_eq!(
            block[0], 0x04,
            ":path's static name, literal without indexing"
        );
        assert_eq!(server.fields(&block), [":path /x/1", "x-id abc"]);
        assert!(server.table.is_empty());
    }

    struct ServerDecoderForTest {
        table: VecDeque<(String, String)>,
    }

    impl ServerDecoderForTest {
        fn new() -> Self {
            ServerDecoderForTest {
                table: VecDeque::new(),
            }
        }

        fn entry(&self, index: usize) -> (String, String) {
            match index {
                1..=61 => (
                    STATIC_TABLE[index - 1].0.to_owned(),
                    STATIC_TABLE[index - 1].1.to_owned(),
                ),
                _ => self.table[index - 62].clone(),
            }
        }

        fn fields(&mut self, mut block: &[u8]) -> Vec<String> {
            let mut fields = Vec::new();
            let raw = |rest: &mut &[u8]| {
                let length = read_integer(rest, 7).unwrap();
                let (text, after) = rest.split_at(length);
                *rest = after;
                String::from_utf8(text.to_vec()).unwrap()
            };
            while let Some(&first) = block.first() {
                if first & 0x80 != 0 {
                    let (name, value) = self.entry(read_integer(&mut block, 7).unwrap());
                    fields.push(format!("{name} {value}"));
                } else if first & 0x20 != 0 && first & 0x40 == 0 {
                    read_integer(&mut block, 5).unwrap();
                    self.table.clear();
                } else {
                    let indexing = first & 0x40 != 0;
                    let index = read_integer(&mut block, if indexing { 6 } else { 4 }).unwrap();
                    let name = if index == 0 {
                        raw(&mut block)
                    } else {
                        self.entry(index).0
                    };
                    let value = raw(&mut block);
                    if indexing {
                        self.table.push_front((name.clone(), value.clone()));
                    }
                    fields.push(format!("{name} {value}"));
                }
            }
            fields
        }
    }
}
