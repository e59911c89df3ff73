//! Watching a run while it goes: the live progress bar, the `-v` protocol trace, the per-request
//! log (`--log-file`) and the sampling of other processes (`--watch-pid`).

pub(crate) mod live;
pub(crate) mod metrics;
pub(crate) mod progress;
pub(crate) mod request_log;
pub(crate) mod trace;
pub(crate) mod watch;
