//! Runs a plan: `-t` OS threads, each with its own current-thread tokio runtime owning its share of
//! the connections (h2load's model), drawing from one shared request budget. The main thread only
//! watches the clock and Ctrl-C, and merges the threads' measurements at the end. `launch.rs`
//! starts and supervises the threads, `worker.rs` is one thread, `slot.rs` one client slot.

pub(crate) mod control;
mod launch;
pub(crate) mod panics;
pub(crate) mod reflect;
pub(crate) mod signals;
mod slot;
mod stable;
pub(crate) mod steer;
mod worker;

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::observe::live::Live;
use crate::observe::request_log::LogFile;
use crate::observe::trace::Tracer;
use crate::plan::RunPlan;
pub(crate) use crate::recorder::outcome::RunOutcome;
use launch::Launched;
pub(crate) use steer::steer;

/// How long in-flight requests may finish after a timed run ends or is interrupted, unless
/// `--request-timeout` says otherwise.
pub(crate) const DEFAULT_DRAIN: Duration = Duration::from_secs(1);

/// Descriptors kept free for everything but connections (stdio, runtimes, files).
const RESERVED_FDS: u64 = 64;

/// Raises RLIMIT_NOFILE to its hard limit and fails clearly, before any connection is made, if
/// `clients` connections needing `fds_per_client` descriptors each still do not fit.
pub(crate) fn ensure_fd_limit(clients: usize, fds_per_client: u64) -> Result<()> {
    let needed = clients as u64 * fds_per_client + RESERVED_FDS;
    let available =
        rlimit::increase_nofile_limit(u64::MAX).context("cannot read the open-file limit")?;
    if available < needed {
        let fit = available.saturating_sub(RESERVED_FDS) / fds_per_client;
        bail!(
            "-c {clients} needs about {needed} open files but the limit is {available}, enough for about {fit} \
             connections; raise the hard limit (e.g. `ulimit -Hn {needed}` as root, or /etc/security/limits.conf)"
        );
    }
    Ok(())
}

/// Where a run writes one line per request (`--log-file`), and as which cell of a sweep.
#[derive(Debug, Clone)]
pub(crate) struct CellLog {
    /// The file all threads append to.
    pub(crate) file: LogFile,
    /// The cell's number, from 1.
    pub(crate) cell: usize,
}

/// Where a run reports besides its result: the per-request log and the live progress.
#[derive(Debug, Clone, Default)]
pub struct Sinks {
    /// `--log-file`.
    pub(crate) log: Option<CellLog>,
    /// Progress published for the display (one slot per thread).
    pub(crate) live: Option<Arc<Live>>,
    /// The `-v` protocol trace.
    pub(crate) trace: Option<Arc<Tracer>>,
}

/// Runs the plan to the end and returns what was measured.
pub fn run(plan: Arc<RunPlan>, sinks: Sinks) -> Result<RunOutcome> {
    Launched::start(plan, sinks, None)?.finish(false)
}

/// Pauses (while the metrics linger, or for `--start-at`); `true` when a signal asked to stop
/// during the pause. After a signal that came before (the one that stopped the run), only a later
/// one (which quits) ends it.
pub(crate) fn pause(duration: Duration) -> bool {
    let stopping = signals::received().is_some();
    sleep_unless_stopped(duration, !stopping)
}

/// Pauses between a sweep's cells, unless a signal asked to stop, before (while the exports were
/// written) or during the pause.
pub(crate) fn cool_down(duration: Duration) {
    sleep_unless_stopped(duration, true);
}

/// Sleeps for `duration`, or until a signal asks to stop if `stoppable`; `true` if one did.
fn sleep_unless_stopped(duration: Duration, stoppable: bool) -> bool {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        std::thread::sleep(duration);
        return false;
    };
    runtime.block_on(async {
        tokio::select! {
            _ = tokio::time::sleep(duration) => false,
            () = signals::requested(), if stoppable => true,
        }
    })
}
