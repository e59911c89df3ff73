//! Error kinds that decide the exit code, how an error quotes the user's input, and how a line
//! of ours shows a peer's words.

use std::borrow::Cow;
use std::fmt;

/// The user asked for something impossible (bad URL, flag value or combination): exit code 2.
#[derive(Debug)]
pub(crate) struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Returns early with a [`UsageError`] built from a format string; a message that still carries
/// a long stretch of input (from a parser's own message, say) is cut by [`clipped`].
#[macro_export]
macro_rules! usage_bail {
    ($($arg:tt)*) => {
        return Err(anyhow::Error::new($crate::error::UsageError(
            $crate::error::clipped(format!($($arg)*)),
        )))
    };
}

/// The exit status of a usage error.
pub(crate) const USAGE: u8 = 2;

/// Whether `error` is, or was caused by, a [`UsageError`].
pub(crate) fn is_usage(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| cause.is::<UsageError>())
}

/// The most bytes of the user's input one quote shows: enough to recognise the line, and a
/// 50 MB line in an `-i` file still makes one short line on stderr.
pub(crate) const QUOTE_LIMIT: usize = 200;

/// The longest message [`clipped`] leaves whole: a few quotes and the words around them.
const MESSAGE_LIMIT: usize = 4 * QUOTE_LIMIT;

/// How an error shows a piece of the user's input: escaped (a CR or LF cannot break the line),
/// and cut after [`QUOTE_LIMIT`] bytes with "…(N bytes)" saying how long it was.
pub(crate) struct Quoted<'a>(&'a str);

/// The quote of `text` in an error message; see [`Quoted`].
pub(crate) fn quoted(text: &str) -> Quoted<'_> {
    Quoted(text)
}

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.0;
        if text.len() <= QUOTE_LIMIT {
            return write!(f, "{}", text.escape_debug());
        }
        let head = &text[..char_start(text, QUOTE_LIMIT)];
        write!(f, "{}…({} bytes)", head.escape_debug(), text.len())
    }
}

/// `message`, or when it is longer than [`MESSAGE_LIMIT`] its start and end around "…(N bytes)…":
/// the net under every usage error, for the input a parser's own message quotes.
pub(crate) fn clipped(message: String) -> String {
    if message.len() <= MESSAGE_LIMIT {
        return message;
    }
    let head = char_start(&message, MESSAGE_LIMIT / 2);
    let tail = char_start(&message, message.len() - MESSAGE_LIMIT / 4);
    format!(
        "{}…({} bytes)…{}",
        &message[..head],
        message.len(),
        &message[tail..]
    )
}

/// Whether `c` would change how a terminal shows what follows rather than show itself: control
/// characters (C0, DEL, C1: escape sequences, a bell, a newline that starts a forged line) and
/// the bidirectional overrides and isolates, which reorder the rest of the line.
pub(crate) fn drives_the_terminal(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Text with every character that [`drives_the_terminal`] written as an escape (`\n`, `\r`,
/// `\t`, else `\u{1b}`): what it says stays readable, and it prints as itself on one line.
fn escape_terminal(text: &str) -> Cow<'_, str> {
    if !text.contains(drives_the_terminal) {
        return Cow::Borrowed(text);
    }
    let mut escaped = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\n' => escaped.push_str("\\n"),
            '\r' => escaped.push_str("\\r"),
            '\t' => escaped.push_str("\\t"),
            c if drives_the_terminal(c) => escaped.extend(c.escape_unicode()),
            c => escaped.push(c),
        }
    }
    Cow::Owned(escaped)
}

/// A peer's words (a server's error text, reason phrase, header value, `grpc-message`; a string
/// read from a report file) as they go into a line of ours: invalid UTF-8 replaced, every
/// character that [`drives_the_terminal`] escaped, and cut after [`QUOTE_LIMIT`] bytes with
/// "…(N bytes)" as a quote of the user's input is.
pub(crate) fn peer_text(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let escaped = escape_terminal(&text);
    if escaped.len() <= QUOTE_LIMIT {
        return escaped.into_owned();
    }
    let head = &escaped[..char_start(&escaped, QUOTE_LIMIT)];
    format!("{head}…({} bytes)", bytes.len())
}

/// A line of ours that may carry a peer's words, as it is printed: every character that
/// [`drives_the_terminal`] escaped and the whole [`clipped`]. The net under every line that
/// quotes a server or a file (the first error, a run's error, the `-v` trace), so that words
/// which did not come through [`peer_text`] still cannot start a line or drive the terminal.
/// Text already escaped is left as it is.
pub(crate) fn escaped_line(line: &str) -> Cow<'_, str> {
    match escape_terminal(line) {
        Cow::Borrowed(line) if line.len() <= MESSAGE_LIMIT => Cow::Borrowed(line),
        escaped => Cow::Owned(clipped(escaped.into_owned())),
    }
}

/// The start of the character of `text` that holds byte `at` (`str::floor_char_boundary`, stable
/// only from Rust 1.91).
fn char_start(text: &str, at: usize) -> usize {
    (0..=at.min(text.len()))
        .rev()
        .find(|&at| text.is_char_boundary(at))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_quotes_are_cut_and_say_how_long_they_were() {
        assert_eq!(quoted("a\nb").to_string(), "a\\nb");
        let long = "é".repeat(1000);
        let shown = quoted(&long).to_string();
        assert_eq!(shown, format!("{}…(2000 bytes)", "é".repeat(100)));
        let message = format!("start {} end", "x".repeat(1_000_000));
        let clipped = clipped(message);
        assert!(clipped.len() < 1000, "{}", clipped.len());
        assert!(clipped.starts_with("start xx") && clipped.ends_with("xx end"));
        assert!(clipped.contains("…(1000010 bytes)…"), "{clipped}");
    }

    /// The words of a hostile server: a window title (OSC 0 … BEL), a cleared screen (CSI 2 J),
    /// a newline and a forged line of ours, a right-to-left override.
    const HOSTILE: &str = "no\u{1b}]0;owned\u{7}\u{1b}[2J\nh2load-rs: all fine\u{202e}txt.exe";

    #[test]
    fn a_peer_s_words_print_as_themselves_on_one_line() {
        let shown = peer_text(HOSTILE.as_bytes());
        assert_eq!(
            shown,
            "no\\u{1b}]0;owned\\u{7}\\u{1b}[2J\\nh2load-rs: all fine\\u{202e}txt.exe"
        );
        assert!(!shown.contains(drives_the_terminal));
        assert_eq!(escaped_line(HOSTILE), shown, "the net escapes the same");
        assert_eq!(escaped_line(&shown), shown, "escaped text stays as it is");
        assert!(matches!(
            escaped_line("plain words"),
            Cow::Borrowed("plain words")
        ));
        assert_eq!(peer_text(b"bad \xff byte"), "bad \u{fffd} byte");
        assert_eq!(peer_text(b"can't \"quote\""), "can't \"quote\"");
    }

    #[test]
    fn a_peer_s_long_words_are_cut_and_say_how_long_they_were() {
        let long = "\u{1b}".repeat(1000);
        let shown = peer_text(long.as_bytes());
        assert!(shown.starts_with("\\u{1b}\\u{1b}"), "{shown}");
        assert!(shown.ends_with("…(1000 bytes)"), "{shown}");
        assert!(shown.len() <= QUOTE_LIMIT + "…(1000 bytes)".len());
        let line = escaped_line(&long);
        assert!(line.len() < MESSAGE_LIMIT + 100, "{}", line.len());
        assert!(!line.contains(drives_the_terminal));
    }
}
