//! h2load-rs: an HTTP/1.1 and HTTP/2 load generator.
//!
//! Data flows one way: [`cli`] → [`plan`] → [`runner`] (threads, budget, connecting) → [`engine`]
//! (one I/O driver, one session per protocol) over [`proto`] (wire formats, no I/O) →
//! [`recorder`] (HDR histograms, counters) → [`report`]. [`server`] is the built-in target.

#![warn(missing_docs)]
#![deny(unsafe_code)]

/// `print!` that survives a closed stdout (`h2load-rs … | head`): the run goes on and its exports
/// are still written, where `print!` would panic.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($arg)*);
    }};
}

/// `println!` that survives a closed stdout, like [`out!`].
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// `eprint!` that survives a closed stderr (`h2load-rs … 2>&1 | head -1`): a message nobody can
/// read any more is dropped, where `eprint!` would panic and turn the exit status into 101.
macro_rules! err {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($arg)*);
    }};
}

/// `eprintln!` that survives a closed stderr, like [`err!`].
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub mod app;
pub mod cli;
pub(crate) mod engine;
pub(crate) mod error;
#[doc(hidden)]
pub mod fuzzing;
pub(crate) mod observe;
pub mod plan;
pub mod proto;
pub mod recorder;
pub(crate) mod report;
pub mod runner;
pub mod server;
