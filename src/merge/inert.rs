//! A report file's JSON made inert before it is read: every string in it that would hold a
//! character which drives a terminal ([`crate::error::drives_the_terminal`]: an escape
//! sequence, a bell, a newline that starts a forged line, a bidirectional override) holds its
//! escape instead (`\n`, `\u{1b}`, as [`crate::error::peer_text`] writes them). `merge` and `diff`
//! print a report's names, causes and errors; a file is no more to be trusted than a server, and
//! this way no string read from one can reach the terminal raw, whichever line prints it.

use std::borrow::Cow;

use crate::error::drives_the_terminal;

/// `json` with each string's terminal-driving characters, raw or `\`-escaped, turned into the
/// text of their escapes. Outside strings nothing changes (JSON's white space stays); text that
/// is not UTF-8 is left to the JSON reader to refuse.
pub(super) fn inert(json: &[u8]) -> Cow<'_, [u8]> {
    let Ok(text) = std::str::from_utf8(json) else {
        return Cow::Borrowed(json);
    };
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if !in_string {
            in_string = c == '"';
            out.push(c);
            continue;
        }
        match c {
            '"' => {
                in_string = false;
                out.push(c);
            }
            '\\' => match chars.next() {
                Some(name @ ('n' | 'r' | 't' | 'b' | 'f')) => {
                    out.push_str(r"\\");
                    out.push(name);
                }
                Some('u') => {
                    let hex: String = chars.by_ref().take(4).collect();
                    let code = u32::from_str_radix(&hex, 16)
                        .ok()
                        .filter(|_| hex.len() == 4);
                    match code.and_then(char::from_u32) {
                        Some(escaped) if drives_the_terminal(escaped) => {
                            out.push_str(&format!(r"\\u{{{:x}}}", u32::from(escaped)));
                        }
                        _ => {
                            out.push_str(r"\u");
                            out.push_str(&hex);
                        }
                    }
                }
                Some(other) => {
                    out.push('\\');
                    out.push(other);
                }
                None => out.push('\\'),
            },
            c if drives_the_terminal(c) => {
                out.push_str(&format!(r"\\u{{{:x}}}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> serde_json::Value {
        serde_json::from_slice(&inert(json.as_bytes())).expect("still JSON")
    }

    #[test]
    fn strings_hold_escapes_instead_of_what_drives_a_terminal() {
        let json = "{\n  \"first_error\": \"no\\u001b]0;owned\\u0007\\u001b[2J\\nh2load-rs: fine\",\n  \
                    \"name\": \"raw \u{202e}txt \u{9b}2J\",\n  \"quote\": \"a \\\"b\\\" \\\\n c\\u00e9\"\n}";
        let value = read(json);
        assert_eq!(
            value["first_error"],
            r"no\u{1b}]0;owned\u{7}\u{1b}[2J\nh2load-rs: fine"
        );
        assert_eq!(value["name"], r"raw \u{202e}txt \u{9b}2J");
        // Escaped quotes and backslashes, and characters that print, are read as they were.
        assert_eq!(value["quote"], "a \"b\" \\n cé");
        for text in [&value["first_error"], &value["name"], &value["quote"]] {
            assert!(!text.as_str().unwrap().contains(drives_the_terminal));
        }
    }

    #[test]
    fn what_is_not_json_is_left_to_the_reader() {
        assert_eq!(inert(b"\xff{"), Cow::Borrowed(&b"\xff{"[..]));
        assert_eq!(&*inert(b"{\"cut\": \"\\u00"), b"{\"cut\": \"\\u00");
    }
}
