//! Request templates: `{seq}`, `{conn}`, `{rand:N}` and `{uuid}` in paths, header values and the
//! body file, rendered per request into reusable buffers (see docs/reference.md, "Templates").
//!
//! A text is a template only when it holds something shaped like a placeholder (`{` and lower-case
//! letters, then `}` or `:`): a JSON body or a path without one is sent byte for byte as before,
//! with no rendering cost. In a template, `{{` and `}}` stand for `{` and `}`; any other brace, or
//! an unknown placeholder, is a usage error naming it.

use anyhow::Result;

use crate::proto::request::write_decimal;
use crate::usage_bail;

/// One part of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    /// Bytes sent as they are (escapes resolved).
    Text(Vec<u8>),
    /// The request's number over the whole run, from 1.
    Seq,
    /// The connection's number: its client slot over the whole run, from 0.
    Conn,
    /// A uniform random number below N.
    Rand(u64),
    /// A random version-4 UUID.
    Uuid,
}

/// A text with placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Template {
    pieces: Vec<Piece>,
}

/// What a request's placeholders take their values from.
pub(crate) struct Draw {
    /// `{seq}`.
    pub(crate) seq: u64,
    /// `{conn}`.
    pub(crate) conn: u64,
    /// `{rand:N}` and `{uuid}`.
    pub(crate) rng: Rng,
}

impl Template {
    /// Parses `text` (`what` names it in errors, e.g. "-H 'x-id: {seq}'"); `None` when it holds
    /// no placeholder and is sent as it is.
    pub(crate) fn parse(text: &[u8], what: &str) -> Result<Option<Template>> {
        if !looks_templated(text) {
            return Ok(None);
        }
        let mut pieces = Vec::new();
        let mut literal = Vec::new();
        let mut at = 0;
        while at < text.len() {
            match (text[at], text.get(at + 1)) {
                (b'{', Some(b'{')) | (b'}', Some(b'}')) => {
                    literal.push(text[at]);
                    at += 2;
                }
                (b'{', _) => {
                    let Some(length) = text[at..].iter().position(|&byte| byte == b'}') else {
                        usage_bail!("{what}: unclosed '{{' (write {{{{ for a brace)");
                    };
                    let inner = String::from_utf8_lossy(&text[at + 1..at + length]);
                    if !literal.is_empty() {
                        pieces.push(Piece::Text(std::mem::take(&mut literal)));
                    }
                    pieces.push(placeholder(&inner, what)?);
                    at += length + 1;
                }
                (b'}', _) => usage_bail!("{what}: unmatched '}}' (write }}}} for a brace)"),
                (byte, _) => {
                    literal.push(byte);
                    at += 1;
                }
            }
        }
        if !literal.is_empty() {
            pieces.push(Piece::Text(literal));
        }
        Ok(Some(Template { pieces }))
    }

    /// Parses a JSON text (`--grpc-data`), where braces are the JSON's own: only the exact
    /// placeholders (`{seq}`, `{conn}`, `{uuid}`, `{rand:N}`) are rendered, every other brace is
    /// literal and none is escaped. `None` when it holds no placeholder.
    pub(crate) fn parse_json(text: &[u8], what: &str) -> Result<Option<Template>> {
        let mut pieces = Vec::new();
        let mut literal = Vec::new();
        let mut at = 0;
        while at < text.len() {
            let inner = (text[at] == b'{')
                .then(|| {
                    let rest = &text[at + 1..];
                    let end = rest.iter().take(32).position(|&byte| byte == b'}')?;
                    let inner = std::str::from_utf8(&rest[..end]).ok()?;
                    let known = matches!(inner, "seq" | "conn" | "uuid")
                        || inner.strip_prefix("rand:").is_some_and(|bound| {
                            !bound.is_empty() && bound.bytes().all(|byte| byte.is_ascii_digit())
                        });
                    known.then_some(inner)
                })
                .flatten();
            match inner {
                Some(inner) => {
                    if !literal.is_empty() {
                        pieces.push(Piece::Text(std::mem::take(&mut literal)));
                    }
                    pieces.push(placeholder(inner, what)?);
                    at += inner.len() + 2;
                }
                None => {
                    literal.push(text[at]);
                    at += 1;
                }
            }
        }
        if pieces.is_empty() {
            return Ok(None);
        }
        if !literal.is_empty() {
            pieces.push(Piece::Text(literal));
        }
        Ok(Some(Template { pieces }))
    }

    /// The template of a URL path: its literal braces (written `{{` and `}}`) are sent
    /// percent-encoded, `%7B` and `%7D`, as a request target cannot hold a raw brace (RFC 3986
    /// §2.1); the other literal bytes passed the path's own check already.
    pub(crate) fn in_uri(mut self) -> Template {
        for piece in &mut self.pieces {
            if let Piece::Text(bytes) = piece {
                if bytes.iter().any(|byte| matches!(byte, b'{' | b'}')) {
                    *bytes = bytes.iter().fold(Vec::new(), |mut out, &byte| {
                        match byte {
                            b'{' => out.extend_from_slice(b"%7B"),
                            b'}' => out.extend_from_slice(b"%7D"),
                            _ => out.push(byte),
                        }
                        out
                    });
                }
            }
        }
        self
    }

    /// Whether it uses `{seq}` (the run then numbers its requests).
    pub(crate) fn uses_seq(&self) -> bool {
        self.pieces.contains(&Piece::Seq)
    }

    /// Whether it draws random numbers.
    pub(crate) fn uses_random(&self) -> bool {
        self.pieces
            .iter()
            .any(|piece| matches!(piece, Piece::Rand(_) | Piece::Uuid))
    }

    /// Appends the rendered text to `out` (no allocation once `out` has grown).
    pub(crate) fn render(&self, out: &mut Vec<u8>, draw: &mut Draw) {
        self.render_with(out, draw, Rng::below);
    }

    /// Appends the rendering with every `{rand:N}` at one end of its range, `top` (N − 1) or
    /// not (0): the plan tries both before the run, to say up front whether some calls' values
    /// will not fit the message.
    pub(crate) fn render_at_end(&self, out: &mut Vec<u8>, draw: &mut Draw, top: bool) {
        let end = |_: &mut Rng, below: u64| if top { below - 1 } else { 0 };
        self.render_with(out, draw, end);
    }

    fn render_with(
        &self,
        out: &mut Vec<u8>,
        draw: &mut Draw,
        mut rand: impl FnMut(&mut Rng, u64) -> u64,
    ) {
        for piece in &self.pieces {
            match piece {
                Piece::Text(bytes) => out.extend_from_slice(bytes),
                Piece::Seq => write_decimal(out, draw.seq),
                Piece::Conn => write_decimal(out, draw.conn),
                Piece::Rand(below) => write_decimal(out, rand(&mut draw.rng, *below)),
                Piece::Uuid => write_uuid(out, draw.rng.next_u64(), draw.rng.next_u64()),
            }
        }
    }
}

/// Whether `text` holds `{` + lower-case letters + `}` or `:`: the shape of a placeholder.
fn looks_templated(text: &[u8]) -> bool {
    text.iter().enumerate().any(|(at, &byte)| {
        if byte != b'{' {
            return false;
        }
        let name = text[at + 1..]
            .iter()
            .take_while(|byte| byte.is_ascii_lowercase())
            .count();
        name > 0 && matches!(text.get(at + 1 + name), Some(b'}' | b':'))
    })
}

fn placeholder(inner: &str, what: &str) -> Result<Piece> {
    // The inner text is the user's (a body file's, say): shown escaped and cut short, so the
    // error stays one line.
    let shown = || {
        let mut shown: String = inner
            .chars()
            .take(40)
            .flat_map(char::escape_debug)
            .collect();
        if inner.chars().nth(40).is_some() {
            shown.push('…');
        }
        shown
    };
    Ok(match inner.split_once(':') {
        None if inner == "seq" => Piece::Seq,
        None if inner == "conn" => Piece::Conn,
        None if inner == "uuid" => Piece::Uuid,
        Some(("rand", bound)) => match bound.parse::<u64>() {
            Ok(0) => usage_bail!("{what}: {{rand:0}} has no number below 0 (N must be at least 1)"),
            Ok(bound) => Piece::Rand(bound),
            Err(_) => usage_bail!("{what}: {{{}}}: N must be a whole number from 1", shown()),
        },
        _ => usage_bail!(
            "{what}: unknown placeholder {{{}}} (known: {{seq}}, {{conn}}, {{rand:N}}, {{uuid}}; write {{{{ and }}}} for braces)",
            shown()
        ),
    })
}

/// Appends a version-4 UUID (RFC 9562 §5.4) made of two random words.
fn write_uuid(out: &mut Vec<u8>, high: u64, low: u64) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let high = (high & !0xf000) | 0x4000;
    let low = (low & !(0b11 << 62)) | (0b10 << 62);
    let bytes = (u128::from(high) << 64 | u128::from(low)).to_be_bytes();
    for (index, byte) in bytes.iter().enumerate() {
        if matches!(index, 4 | 6 | 8 | 10) {
            out.push(b'-');
        }
        out.push(HEX[usize::from(byte >> 4)]);
        out.push(HEX[usize::from(byte & 0xf)]);
    }
}

/// wyrand (Wang Yi's generator, public domain): one multiply per number and a state of one word,
/// so a request starts its own in a few instructions. It runs on the hot path; it is not a
/// cryptographic generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rng(u64);

/// The `part` of a request whose generator picks its URL (`--urls-random`), apart from the
/// parts its placeholders draw from (0: the path, 1..: the headers, then the body).
pub(crate) const PATH_CHOICE: u64 = u64::MAX;

impl Rng {
    /// The generator of `part` of request number `number` (its `{seq}`) for `--seed` `seed`: what
    /// a request draws depends on the seed and its number only, not on the connection or thread
    /// that sends it, so a run with the same seed and `-n` draws the same values again whatever
    /// the timing.
    pub(crate) fn for_request(seed: u64, number: u64, part: u64) -> Rng {
        let mut mixer = Rng(seed
            ^ number.wrapping_mul(0x9e37_79b9_7f4a_7c15)
            ^ part.wrapping_add(1).wrapping_mul(0xc2b2_ae3d_27d4_eb4f));
        Rng(mixer.next_u64())
    }

    /// The next random word.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0xa076_1d64_78bd_642f);
        let product = u128::from(self.0) * u128::from(self.0 ^ 0xe703_7ed1_a0b4_28db);
        (product >> 64) as u64 ^ product as u64
    }

    /// A number below `bound` (at least 1), by multiply-shift: the bias is below bound / 2^64.
    pub(crate) fn below(&mut self, bound: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(bound)) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(text: &str, seq: u64, conn: u64) -> String {
        let template = Template::parse(text.as_bytes(), "test").unwrap().unwrap();
        let mut out = Vec::new();
        template.render(
            &mut out,
            &mut Draw {
                seq,
                conn,
                rng: Rng::for_request(7, seq, 0),
            },
        );
        String::from_utf8(out).unwrap()
    }

    fn error(text: &str) -> String {
        Template::parse(text.as_bytes(), "-d file 'b'")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn texts_without_placeholders_are_not_templates() {
        for text in ["/ping", "{\"a\":{\"b\":1}}", "{}", "{{", "}", "{A}", "x{1}"] {
            assert_eq!(
                Template::parse(text.as_bytes(), "t").unwrap(),
                None,
                "{text}"
            );
        }
    }

    #[test]
    fn json_keeps_its_braces_and_renders_exact_placeholders() {
        let template = Template::parse_json(br#"{"a":{"id":"{seq}","n":{rand:1}},"b":"{x}"}"#, "t")
            .unwrap()
            .unwrap();
        let mut out = Vec::new();
        template.render(
            &mut out,
            &mut Draw {
                seq: 7,
                conn: 0,
                rng: Rng::for_request(1, 1, 1),
            },
        );
        assert_eq!(out, br#"{"a":{"id":"7","n":0},"b":"{x}"}"#);
        let template = Template::parse_json(br#"{"n":{rand:300},"s":{seq}}"#, "t")
            .unwrap()
            .unwrap();
        for (top, rendered) in [
            (true, &br#"{"n":299,"s":7}"#[..]),
            (false, br#"{"n":0,"s":7}"#),
        ] {
            out.clear();
            let mut draw = Draw {
                seq: 7,
                conn: 0,
                rng: Rng::for_request(1, 1, 1),
            };
            template.render_at_end(&mut out, &mut draw, top);
            assert_eq!(out, rendered, "top {top}");
        }
        assert!(Template::parse_json(br#"{"a":{}}"#, "t").unwrap().is_none());
        assert!(Template::parse_json(b"{rand:0}", "t").is_err());
    }

    #[test]
    fn placeholders_render_and_braces_escape() {
        assert_eq!(render("/k/{seq}?c={conn}", 1234, 0), "/k/1234?c=0");
        assert_eq!(
            render("{{\"id\":{seq}}}", u64::MAX, 3),
            "{\"id\":18446744073709551615}"
        );
        let value: u64 = render("{rand:10}", 1, 1).parse().unwrap();
        assert!(value < 10);
        let uuid = render("{uuid}", 1, 1);
        assert_eq!(uuid.len(), 36);
        assert_eq!(&uuid[14..15], "4", "{uuid}");
        assert!("89ab".contains(&uuid[19..20]), "{uuid}");
        assert_eq!(uuid.matches('-').count(), 4);
    }

    #[test]
    fn literal_braces_of_a_path_are_percent_encoded() {
        let template = Template::parse(b"/a/{seq}?q={{x}}", "t").unwrap().unwrap();
        let mut out = Vec::new();
        template.in_uri().render(
            &mut out,
            &mut Draw {
                seq: 5,
                conn: 0,
                rng: Rng::for_request(1, 5, 0),
            },
        );
        assert_eq!(out, b"/a/5?q=%7Bx%7D");
    }

    #[test]
    fn bad_templates_are_usage_errors_naming_the_problem() {
        assert!(error("/{foo}").contains("unknown placeholder {foo}"));
        assert!(error("/{rand:0}").contains("{rand:0}"));
        assert!(error("/{rand:x}").contains("whole number"));
        assert!(error("{seq} }").contains("unmatched '}'"));
        assert!(error("{seq} {").contains("unclosed '{'"));
        assert!(error("{nope}").starts_with("-d file 'b'"));
        // What the braces hold is the user's: escaped and cut short, the error is one line.
        let long = format!("{{seq}} {{x\n{}}}", "y".repeat(100));
        let message = error(&long);
        assert!(
            message.contains(&format!("{{x\\n{}…}}", "y".repeat(38))),
            "{message}"
        );
        assert!(!message.contains('\n'), "{message}");
        assert!(error("{seq}{rand:\r}").contains("{rand:\\r}: N must be"));
    }

    #[test]
    fn requests_draw_repeatable_and_different_numbers() {
        let draw = |seed, number, part| {
            let mut rng = Rng::for_request(seed, number, part);
            (0..4).map(|_| rng.below(1000)).collect::<Vec<_>>()
        };
        assert_eq!(draw(7, 1, 0), draw(7, 1, 0));
        assert_ne!(draw(7, 1, 0), draw(7, 2, 0));
        assert_ne!(draw(7, 1, 0), draw(7, 1, 1));
        assert_ne!(draw(7, 1, 0), draw(8, 1, 0));
        // One draw per request number, as --urls-random makes: uniform over consecutive numbers.
        let mut seen = [0u32; 10];
        for number in 1..=10_000 {
            seen[Rng::for_request(3, number, PATH_CHOICE).below(10) as usize] += 1;
        }
        assert!(
            seen.iter().all(|&count| (850..1150).contains(&count)),
            "{seen:?}"
        );
    }
}
