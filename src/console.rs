//! The text report's stream. It goes to standard output, or to standard error when an export
//! takes standard output (`--json -`). A failed write is kept, not dropped: `> /dev/full` lost
//! the whole report with status 0. A reader that went away (EPIPE, `| head`) is not a failure:
//! it read what it wanted.

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// When to color the report (`--color`); `report::paint` reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum ColorChoice {
    /// When stdout is a terminal and `NO_COLOR` is not set.
    #[default]
    Auto,
    /// Always, even into a pipe.
    Always,
    /// Never.
    Never,
}

/// Whether the text goes to standard error (an export has standard output).
static TO_STDERR: AtomicBool = AtomicBool::new(false);

/// The first failed write of the text to standard output.
static FAILED: OnceLock<io::Error> = OnceLock::new();

/// Sends the text report to standard error from now on.
pub(crate) fn text_to_stderr() {
    TO_STDERR.store(true, Ordering::Relaxed);
}

/// Writes text to the report's stream (what `out!` and `outln!` do).
pub(crate) fn write(text: fmt::Arguments<'_>) {
    if TO_STDERR.load(Ordering::Relaxed) {
        let _ = io::stderr().write_fmt(text);
    } else {
        note(io::stdout().write_fmt(text));
    }
}

/// Keeps the first failure of a write to standard output.
pub(crate) fn note(result: io::Result<()>) {
    if let Err(error) = result {
        if error.kind() != io::ErrorKind::BrokenPipe {
            let _ = FAILED.set(error);
        }
    }
}

/// Flushes the text still buffered; the first write of it that failed, if one did.
pub(crate) fn finish() -> Option<&'static io::Error> {
    if !TO_STDERR.load(Ordering::Relaxed) {
        note(io::stdout().flush());
    }
    FAILED.get()
}
