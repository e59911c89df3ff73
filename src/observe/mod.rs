//! Watching a run while it goes: the live progress bar, the `-v` protocol trace, the per-request
//! log (`--log-file`) and the sampling of other processes (`--watch-pid`).

pub mod live;
pub mod metrics;
pub mod progress;
pub mod request_log;
pub mod trace;
pub mod watch;
