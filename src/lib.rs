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

pub mod app;
pub mod budget;
pub mod cli;
pub mod engine;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod hdr;
pub mod input;
pub mod limits;
pub mod live;
pub mod net;
pub mod paint;
pub mod panics;
pub mod plan;
pub mod progress;
pub mod proto;
pub mod recorder;
pub mod report;
pub mod request_log;
pub mod runner;
pub mod scenario;
pub mod server;
pub mod signals;
pub mod sweep;
pub mod target;
pub mod tls;
pub mod trace;
pub mod units;
pub mod watch;
