//! Response checks (`--expect-status`, `--expect-header`, `--expect-body-contains`): what is
//! expected, parsed once per run, and the matching the protocol parsers do as bytes arrive.
//!
//! Nothing is allocated per response. Header fields are compared while they are decoded, and an
//! HPACK dynamic table entry keeps which expectations it meets (two bit masks), not its text. The
//! body is searched in the pieces it arrives in (read boundaries, chunks, DATA frames): a match
//! inside one piece is found by `memchr`'s SIMD search, and one that straddles pieces by the
//! Knuth-Morris-Pratt state carried over, which is the length of the needle's prefix that the
//! body read so far ends with (the carry-over bytes are that prefix, so none are kept).

use memchr::memmem;

/// The most `--expect-header` checks a run may have: each is one bit of a `u64` mask.
pub(crate) const MAX_HEADER_CHECKS: usize = 64;
/// The longest expected header name or value, and `--expect-body-contains` string.
pub(crate) const MAX_EXPECTED_LEN: usize = 4096;
/// How much of a body `--expect-body-contains` searches: a match must lie in its first 64 KiB.
pub(crate) const BODY_WINDOW: usize = 64 * 1024;
/// Whitespace a received header value may have around its text and still match (trimmed); a
/// Huffman-coded value is decoded up to the longest expected text plus this much.
const TRIM_SLACK: usize = 64;

/// Every check of a run, validated.
#[derive(Debug)]
pub(crate) struct Checks {
    /// Whether the checks judge gRPC calls: a status is then a `grpc-status` code.
    grpc: bool,
    statuses: Option<StatusSet>,
    headers: Vec<ExpectedHeader>,
    /// The longest expected header name or value.
    longest: usize,
    body: Option<BodyNeedle>,
}

/// The statuses `--expect-status` accepts: one bit per status from 100 to 599, or in a gRPC
/// cell one per `grpc-status` code from 0 to 16.
#[derive(Debug)]
struct StatusSet {
    bits: [u64; 8],
    /// Whether the bits are gRPC codes.
    grpc: bool,
    /// As the user wrote it, for the mismatch message.
    spelled: String,
}

impl StatusSet {
    fn contains(&self, status: u16) -> bool {
        let first = if self.grpc { 0 } else { 100 };
        let Some(bit) = status
            .checked_sub(first)
            .map(usize::from)
            .filter(|bit| *bit < 500)
        else {
            return false;
        };
        self.bits[bit / 64] & (1 << (bit % 64)) != 0
    }
}

/// One `--expect-header`: a name (lower-case) and, unless only its presence is asked, a value.
#[derive(Debug)]
struct ExpectedHeader {
    name: Vec<u8>,
    value: Option<Vec<u8>>,
}

/// The `--expect-body-contains` string and its two searchers, built once.
#[derive(Debug)]
struct BodyNeedle {
    finder: memmem::Finder<'static>,
    /// The Knuth-Morris-Pratt failure function: for each prefix length `k + 1`, the length of
    /// its longest proper prefix that is also its suffix.
    failure: Vec<u32>,
}

/// What one response has shown of the checks so far, kept per response in flight (plain
/// numbers: a request stream copies it around for free).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResponseCheck {
    /// Which `--expect-header` checks the final response's header fields met (bit i: check i).
    pub(crate) headers: u64,
    /// How the body search stands.
    pub(crate) body: BodyScan,
}

/// The state of a body search.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BodyScan {
    /// Body bytes searched (at most [`BODY_WINDOW`]).
    scanned: u32,
    /// How many of the needle's first bytes the searched body ends with.
    prefix: u32,
    found: bool,
}

/// How a complete response fares against the checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// It met every check: it succeeded, whatever its status when `--expect-status` accepts it.
    Passed,
    /// No `--expect-status`, and its status is not 2xx/3xx: it failed as any such response (the
    /// other checks are not looked at).
    ErrorStatus,
    /// It failed a check: the first in the order status, headers (as given), body.
    Failed(Mismatch),
}

/// The first check a response failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mismatch {
    /// Its status is not one `--expect-status` accepts.
    Status(u16),
    /// The `--expect-header` check of this index found no matching field.
    Header(usize),
    /// The body did not contain the string in the bytes searched.
    Body {
        /// Body bytes searched.
        scanned: u32,
    },
}

impl Checks {
    /// Validates the flags' values; `None` when no check is asked for. `Err` is the usage error's
    /// line.
    pub(crate) fn parse(
        grpc: bool,
        statuses: &[String],
        headers: &[String],
        body: Option<&str>,
    ) -> Result<Option<Checks>, String> {
        if statuses.is_empty() && headers.is_empty() && body.is_none() {
            return Ok(None);
        }
        let statuses = (!statuses.is_empty())
            .then(|| {
                if grpc {
                    parse_grpc_codes(statuses)
                } else {
                    parse_statuses(statuses)
                }
            })
            .transpose()?;
        if headers.len() > MAX_HEADER_CHECKS {
            return Err(format!(
                "--expect-header is given {} times, more than the limit of {MAX_HEADER_CHECKS}",
                headers.len()
            ));
        }
        let headers = headers
            .iter()
            .map(|raw| parse_expected_header(raw))
            .collect::<Result<Vec<_>, _>>()?;
        let longest = headers
            .iter()
            .map(|header| {
                header
                    .name
                    .len()
                    .max(header.value.as_ref().map_or(0, Vec::len))
            })
            .max()
            .unwrap_or(0);
        let body = body.map(parse_needle).transpose()?;
        Ok(Some(Checks {
            grpc,
            statuses,
            headers,
            longest,
            body,
        }))
    }

    /// Whether header fields must be compared: with no `--expect-header` they are not decoded.
    pub(crate) fn has_headers(&self) -> bool {
        !self.headers.is_empty()
    }

    /// Searches the next piece of a response body (in arrival order) for the expected string.
    /// Costs a branch without `--expect-body-contains`.
    pub(crate) fn scan_body(&self, scan: &mut BodyScan, piece: &[u8]) {
        if let Some(needle) = &self.body {
            needle.feed(scan, piece);
        }
    }

    /// Which header checks name the field `name` (bit i: check i), case-insensitively.
    pub(crate) fn names(&self, name: &[u8]) -> u64 {
        self.headers
            .iter()
            .enumerate()
            .filter(|(_, expected)| expected.name.eq_ignore_ascii_case(name))
            .fold(0, |mask, (index, _)| mask | 1 << index)
    }

    /// Of the checks in `names` (those naming the field), which its `value` meets: any value for
    /// a presence check, else the expected text, exactly, once whitespace around it is trimmed.
    pub(crate) fn fields(&self, names: u64, value: &[u8]) -> u64 {
        if names == 0 {
            return 0;
        }
        let value = value.trim_ascii();
        self.headers
            .iter()
            .enumerate()
            .filter(|(index, expected)| {
                names & (1 << index) != 0
                    && expected.value.as_deref().is_none_or(|text| text == value)
            })
            .fold(0, |mask, (index, _)| mask | 1 << index)
    }

    /// The checks met by a field whose name and value are both known text (an HTTP/1.1 field, a
    /// static table entry).
    pub(crate) fn field(&self, name: &[u8], value: &[u8]) -> u64 {
        self.fields(self.names(name), value)
    }

    /// A buffer for decoding Huffman-coded names and values, long enough for any text that can
    /// match (allocated once per connection or request lane, never grown).
    pub(crate) fn scratch(&self) -> Vec<u8> {
        Vec::with_capacity(self.longest + TRIM_SLACK)
    }

    /// Judges a complete response by its status and what its headers and body showed.
    pub(crate) fn judge(&self, status: u16, check: &ResponseCheck) -> Verdict {
        match &self.statuses {
            Some(accepted) if !accepted.contains(status) => {
                return Verdict::Failed(Mismatch::Status(status))
            }
            Some(_) => {}
            None if self.grpc && status != 0 => return Verdict::ErrorStatus,
            None if !self.grpc && !(200..400).contains(&status) => return Verdict::ErrorStatus,
            None => {}
        }
        let all = u64::MAX >> (64 - self.headers.len().max(1));
        let missing = !check.headers & all;
        if self.has_headers() && missing != 0 {
            return Verdict::Failed(Mismatch::Header(missing.trailing_zeros() as usize));
        }
        if self.body.is_some() && !check.body.found {
            return Verdict::Failed(Mismatch::Body {
                scanned: check.body.scanned,
            });
        }
        Verdict::Passed
    }

    /// The mismatch in words, as the report shows it after `check failed: `.
    pub(crate) fn describe(&self, mismatch: Mismatch) -> String {
        match mismatch {
            Mismatch::Status(code) if self.grpc => format!(
                "grpc-status {}, expected {}",
                crate::proto::grpc::slot_name(crate::proto::grpc::code_slot(u64::from(code))),
                self.statuses
                    .as_ref()
                    .map_or("", |statuses| statuses.spelled.as_str())
            ),
            Mismatch::Status(status) => format!(
                "status {status}, expected {}",
                self.statuses
                    .as_ref()
                    .map_or("", |statuses| statuses.spelled.as_str())
            ),
            Mismatch::Header(index) => {
                let expected = &self.headers[index];
                let name = String::from_utf8_lossy(&expected.name);
                match &expected.value {
                    Some(value) => format!(
                        "no header '{name}: {}'",
                        String::from_utf8_lossy(value).escape_debug()
                    ),
                    None => format!("no header '{name}'"),
                }
            }
            Mismatch::Body { scanned } => {
                let needle = self
                    .body
                    .as_ref()
                    .map_or(&[][..], |body| body.finder.needle());
                format!(
                    "the body does not contain \"{}\" (searched {scanned} bytes)",
                    String::from_utf8_lossy(needle).escape_debug()
                )
            }
        }
    }
}

/// `--expect-status` values: codes (`200`) and classes (`2xx`), each flag a comma-separated list.
fn parse_statuses(given: &[String]) -> Result<StatusSet, String> {
    let mut bits = [0u64; 8];
    let mut spelled = Vec::new();
    for item in given.iter().flat_map(|list| list.split(',')) {
        let item = item.trim();
        let range = match item.as_bytes() {
            [class @ b'1'..=b'5', b'x' | b'X', b'x' | b'X'] => {
                let first = u16::from(class - b'0') * 100;
                first..=first + 99
            }
            _ => match item.parse::<u16>() {
                Ok(code) if (100..=599).contains(&code) && item.len() == 3 => code..=code,
                _ => {
                    return Err(format!(
                        "--expect-status '{}': expected a status from 100 to 599 or a class such as 2xx",
                        item.escape_debug()
                    ))
                }
            },
        };
        for status in range {
            let bit = usize::from(status - 100);
            bits[bit / 64] |= 1 << (bit % 64);
        }
        spelled.push(item.to_ascii_lowercase());
    }
    Ok(StatusSet {
        bits,
        grpc: false,
        spelled: spelled.join(","),
    })
}

/// `--expect-status` in a gRPC cell: `grpc-status` codes by name or number (`OK,NOT_FOUND`, `0,5`).
fn parse_grpc_codes(given: &[String]) -> Result<StatusSet, String> {
    let mut bits = [0u64; 8];
    let mut spelled = Vec::new();
    for item in given.iter().flat_map(|list| list.split(',')) {
        let item = item.trim();
        let Some(code) = crate::proto::grpc::parse_code(item) else {
            return Err(format!(
                "--expect-status '{}': with --grpc, expected a gRPC status code: a name (OK, NOT_FOUND, UNAVAILABLE, ...) or a number from 0 to 16",
                item.escape_debug()
            ));
        };
        bits[0] |= 1 << code;
        spelled.push(crate::proto::grpc::CODE_NAMES[code as usize]);
    }
    Ok(StatusSet {
        bits,
        grpc: true,
        spelled: spelled.join(","),
    })
}

/// An `--expect-header`: `Name: value` (the value trimmed, possibly empty) or `Name` alone, for a
/// field that must be present whatever its value.
fn parse_expected_header(raw: &str) -> Result<ExpectedHeader, String> {
    let shown = crate::error::quoted(raw);
    let (name, value) = match raw.split_once(':') {
        Some((name, value)) => (name.trim(), Some(value.trim())),
        None => (raw.trim(), None),
    };
    if name.is_empty() {
        return Err(format!(
            "--expect-header '{shown}': the header name is empty (a pseudo-header such as :status is checked with --expect-status)"
        ));
    }
    if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
        return Err(format!(
            "--expect-header '{shown}': '{}' is not a valid header name",
            crate::error::quoted(name)
        ));
    }
    if let Some(value) = value {
        if http::HeaderValue::from_str(value).is_err() {
            return Err(format!(
                "--expect-header '{shown}': the value has characters not allowed in a header"
            ));
        }
    }
    if name.len().max(value.map_or(0, str::len)) > MAX_EXPECTED_LEN {
        return Err(format!(
            "--expect-header '{shown}': longer than {MAX_EXPECTED_LEN} bytes"
        ));
    }
    Ok(ExpectedHeader {
        name: name.to_ascii_lowercase().into_bytes(),
        value: value.map(|value| value.as_bytes().to_vec()),
    })
}

/// An `--expect-body-contains` string: not empty, at most [`MAX_EXPECTED_LEN`] bytes.
fn parse_needle(text: &str) -> Result<BodyNeedle, String> {
    if text.is_empty() {
        return Err("--expect-body-contains: the string is empty".to_owned());
    }
    if text.len() > MAX_EXPECTED_LEN {
        return Err(format!(
            "--expect-body-contains: the string is longer than {MAX_EXPECTED_LEN} bytes"
        ));
    }
    let needle = text.as_bytes();
    let mut failure = vec![0u32; needle.len()];
    let mut k = 0usize;
    for i in 1..needle.len() {
        while k > 0 && needle[i] != needle[k] {
            k = failure[k - 1] as usize;
        }
        if needle[i] == needle[k] {
            k += 1;
        }
        failure[i] = k as u32;
    }
    Ok(BodyNeedle {
        finder: memmem::Finder::new(needle).into_owned(),
        failure,
    })
}

impl BodyNeedle {
    /// Searches the next piece of the body, within the first [`BODY_WINDOW`] bytes.
    fn feed(&self, scan: &mut BodyScan, piece: &[u8]) {
        let room = BODY_WINDOW.saturating_sub(scan.scanned as usize);
        if scan.found || room == 0 || piece.is_empty() {
            return;
        }
        let piece = &piece[..piece.len().min(room)];
        scan.scanned += piece.len() as u32;
        let needle_len = self.failure.len();
        // A match that began in earlier pieces ends within the next needle_len - 1 bytes.
        let edge = piece.len().min(needle_len - 1);
        if scan.prefix > 0 {
            match self.advance(scan.prefix as usize, &piece[..edge]) {
                None => {
                    scan.found = true;
                    return;
                }
                Some(prefix) if edge == piece.len() => {
                    scan.prefix = prefix as u32;
                    return;
                }
                Some(_) => {}
            }
        }
        if self.finder.find(piece).is_some() {
            scan.found = true;
            return;
        }
        // What the body now ends with lies in the piece's last needle_len - 1 bytes: had it
        // begun earlier, the part before would be a longer carried prefix than the one that
        // ended at the piece's start, and the search above would have gone through it.
        let tail = &piece[piece.len() - edge..];
        scan.prefix = self.advance(0, tail).expect("the finder saw no match") as u32;
    }

    /// Runs the Knuth-Morris-Pratt automaton from `prefix` over `bytes`: the prefix length the
    /// bytes end with, or `None` when the whole needle occurred.
    fn advance(&self, mut prefix: usize, bytes: &[u8]) -> Option<usize> {
        let needle = self.finder.needle();
        for &byte in bytes {
            while prefix > 0 && needle[prefix] != byte {
                prefix = self.failure[prefix - 1] as usize;
            }
            if needle[prefix] == byte {
                prefix += 1;
                if prefix == needle.len() {
                    return None;
                }
            }
        }
        Some(prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checks(statuses: &[&str], headers: &[&str], body: Option<&str>) -> Checks {
        let owned = |items: &[&str]| {
            items
                .iter()
                .map(|item| item.to_string())
                .collect::<Vec<_>>()
        };
        Checks::parse(false, &owned(statuses), &owned(headers), body)
            .expect("valid checks")
            .expect("some check")
    }

    /// Whether `body`, cut at `cuts`, is found to contain the needle.
    fn found(checks: &Checks, body: &[u8], cuts: &[usize]) -> bool {
        let mut scan = BodyScan::default();
        let mut from = 0;
        for &cut in cuts.iter().chain([&body.len()]) {
            checks.scan_body(&mut scan, &body[from..cut]);
            from = cut;
        }
        scan.found
    }

    #[test]
    fn the_body_matcher_finds_a_string_split_anywhere() {
        for needle in ["pong", "aab", "abab", "x", "aaaa"] {
            let checks = checks(&[], &[], Some(needle));
            for body in [
                needle.to_owned(),
                format!("zz{needle}zz"),
                format!("aabaabaab{needle}"),
                format!("abaababa{needle}a"),
            ] {
                let body = body.as_bytes();
                // Every single cut, and every pair of cuts.
                for first in 0..=body.len() {
                    assert!(
                        found(&checks, body, &[first]),
                        "{needle} in {body:?} cut at {first}"
                    );
                    for second in first..=body.len() {
                        assert!(
                            found(&checks, body, &[first, second]),
                            "{needle} in {body:?} cut at {first}, {second}"
                        );
                    }
                }
                // One byte at a time.
                let bytes: Vec<usize> = (1..body.len()).collect();
                assert!(found(&checks, body, &bytes), "{needle} byte by byte");
            }
        }
    }

    #[test]
    fn near_misses_split_anywhere_are_not_matches() {
        let checks = checks(&[], &[], Some("abab"));
        for body in [&b"abaabba"[..], b"aba", b"ab ab", b"babbab", b"ABAB", b""] {
            for first in 0..=body.len() {
                for second in first..=body.len() {
                    assert!(
                        !found(&checks, body, &[first, second]),
                        "{body:?} cut at {first}, {second}"
                    );
                }
            }
        }
    }

    #[test]
    fn only_the_first_64_kib_of_a_body_are_searched() {
        let checks = checks(&[], &[], Some("needle"));
        for start in [
            BODY_WINDOW - 6,
            BODY_WINDOW - 5,
            BODY_WINDOW,
            BODY_WINDOW + 10,
        ] {
            let mut body = vec![b'x'; start];
            body.extend_from_slice(b"needle");
            body.resize(BODY_WINDOW + 100, b'x');
            let expected = start + 6 <= BODY_WINDOW;
            for cuts in [
                &[][..],
                &[start + 3],
                &[1000, 40_000, start + 1],
                &[BODY_WINDOW],
            ] {
                let cuts: Vec<usize> = cuts
                    .iter()
                    .copied()
                    .filter(|cut| *cut <= body.len())
                    .collect();
                assert_eq!(
                    found(&checks, &body, &cuts),
                    expected,
                    "match at {start}, cuts {cuts:?}"
                );
            }
        }
        let mut scan = BodyScan::default();
        checks.scan_body(&mut scan, &vec![b'x'; 100_000]);
        assert_eq!(
            checks.judge(
                200,
                &ResponseCheck {
                    headers: 0,
                    body: scan
                }
            ),
            Verdict::Failed(Mismatch::Body { scanned: 65_536 })
        );
        assert_eq!(
            checks.describe(Mismatch::Body { scanned: 65_536 }),
            "the body does not contain \"needle\" (searched 65536 bytes)"
        );
    }

    #[test]
    fn statuses_codes_and_classes() {
        let checks = checks(&["200,3xx", "404"], &[], None);
        let judge = |status| checks.judge(status, &ResponseCheck::default());
        for status in [200, 300, 301, 399, 404] {
            assert_eq!(judge(status), Verdict::Passed, "{status}");
        }
        for status in [201, 204, 299, 400, 405, 500, 100] {
            assert_eq!(
                judge(status),
                Verdict::Failed(Mismatch::Status(status)),
                "{status}"
            );
        }
        assert_eq!(
            checks.describe(Mismatch::Status(204)),
            "status 204, expected 200,3xx,404"
        );
        // Without --expect-status, an error status is an error status, not a check failure.
        let body_only = self::checks(&[], &[], Some("x"));
        assert_eq!(
            body_only.judge(503, &ResponseCheck::default()),
            Verdict::ErrorStatus
        );
        for bad in ["20", "2000", "600", "099", "6xx", "2x", "abc", "", "+200"] {
            assert!(
                Checks::parse(false, &[bad.to_owned()], &[], None).is_err(),
                "{bad:?} is refused"
            );
        }
    }

    #[test]
    fn header_checks_compare_names_case_insensitively_and_trimmed_values_exactly() {
        let checks = checks(
            &[],
            &["Content-Type: text/plain", "server", "x-empty:"],
            None,
        );
        assert_eq!(checks.field(b"content-type", b"text/plain"), 0b001);
        assert_eq!(checks.field(b"CONTENT-TYPE", b"  text/plain \t"), 0b001);
        assert_eq!(
            checks.field(b"content-type", b"text/plain; charset=utf-8"),
            0
        );
        assert_eq!(checks.field(b"content-type", b"TEXT/PLAIN"), 0);
        assert_eq!(checks.field(b"server", b"anything"), 0b010);
        assert_eq!(checks.field(b"x-empty", b""), 0b100);
        assert_eq!(checks.field(b"x-empty", b"no"), 0);
        let seen = ResponseCheck {
            headers: 0b101,
            body: BodyScan::default(),
        };
        assert_eq!(
            checks.judge(200, &seen),
            Verdict::Failed(Mismatch::Header(1))
        );
        assert_eq!(checks.describe(Mismatch::Header(1)), "no header 'server'");
        assert_eq!(
            checks.describe(Mismatch::Header(0)),
            "no header 'content-type: text/plain'"
        );
        let all = ResponseCheck {
            headers: 0b111,
            body: BodyScan::default(),
        };
        assert_eq!(checks.judge(204, &all), Verdict::Passed);
        for bad in [": x", "", "bad name: x", ":status: 200", "x: a\r\nb"] {
            assert!(
                Checks::parse(false, &[], &[bad.to_owned()], None).is_err(),
                "{bad:?} is refused"
            );
        }
        assert!(Checks::parse(false, &[], &[], Some("")).is_err());
        assert!(Checks::parse(false, &[], &[], None).unwrap().is_none());
    }
}
