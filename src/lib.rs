//! h2load-rs: an HTTP/1.1, HTTP/2 and HTTP/3 load generator.
//!
//! Data flows [`cli`] → [`plan`] → [`runner`] (threads, client slots) → [`io`] (connecting,
//! the drivers; HTTP/3 on quinn) → [`session`] (one sans-IO session per protocol and the
//! `Ledger`) → [`schedule`] (budget, `--rate`) over [`proto`] (wire
//! formats, no I/O) → [`recorder`] (HDR histograms, counters) → [`report`]; [`app`] runs it,
//! [`observe`] taps the engines (progress, `-v` trace, request log). [`server`] is the built-in
//! target. Which module may use which is the `layers` block of docs/internals.md, checked by a
//! test.

#![warn(missing_docs)]
#![warn(unreachable_pub)]
#![deny(unsafe_code)]

/// Writes to a standard stream and drops the error: a reader that went away (EPIPE) must neither
/// panic the program, as `print!`/`eprint!` would, nor change its exit status. `line` adds a newline.
macro_rules! write_or_drop {
    ($stream:expr, line, $($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!($stream, $($arg)*);
    }};
    ($stream:expr, $($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!($stream, $($arg)*);
    }};
}

/// `print!` for the text report: it survives a closed stdout (`h2load-rs … | head`), so the run
/// goes on and its exports are still written; a stdout that fails otherwise (`> /dev/full`) makes
/// the exit status 1; and it goes to stderr when an export takes stdout (see [`console`]).
macro_rules! out {
    ($($arg:tt)*) => { $crate::console::write(format_args!($($arg)*)) };
}

/// `println!` for the text report, like [`out!`].
macro_rules! outln {
    ($($arg:tt)*) => { $crate::console::write(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `eprint!` that survives a closed stderr (`h2load-rs … 2>&1 | head -1`).
macro_rules! err {
    ($($arg:tt)*) => { write_or_drop!(std::io::stderr(), $($arg)*) };
}

/// `eprintln!` that survives a closed stderr, like [`err!`].
macro_rules! errln {
    ($($arg:tt)*) => { write_or_drop!(std::io::stderr(), line, $($arg)*) };
}

pub(crate) mod app;
pub(crate) mod cli;
pub(crate) mod console;
pub(crate) mod destination;
pub(crate) mod diff;
pub(crate) mod error;
pub(crate) mod exposure;
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) mod fuzzing;
pub(crate) mod input;
pub(crate) mod io;
pub(crate) mod limits;
pub(crate) mod merge;
pub(crate) mod observe;
pub(crate) mod plan;
pub(crate) mod proto;
pub(crate) mod recorder;
pub(crate) mod report;
pub(crate) mod runner;
pub(crate) mod schedule;
pub(crate) mod server;
pub(crate) mod session;
pub(crate) mod stats;
#[doc(hidden)]
pub mod testkit;
pub(crate) mod time;
pub(crate) mod tls;
pub(crate) mod units;
