//! Error kinds that decide the exit code, and how an error quotes the user's input.

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
}
