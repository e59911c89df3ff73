//! What a run measured, merged across its threads: the recorder-level facts the runner hands to
//! the report ([`RunOutcome`]), with how a timed schedule was kept ([`Kept`], counted by the pacer).

use std::time::{Duration, SystemTime};

use super::{Recorder, WireTotals};

/// Everything measured by a run, merged across threads.
#[derive(Debug)]
pub struct RunOutcome {
    /// Histograms and counters (requests never sent are already counted as failed and errored).
    pub recorder: Recorder,
    /// Bytes received during the measured period.
    pub wire: WireTotals,
    /// Length of the measured period: from its start until the last request finished or the run stopped.
    pub elapsed: Duration,
    /// Requests of `-n` never sent because every connection failed.
    pub never_sent: u64,
    /// Requests sent but unfinished when the run stopped waiting for them.
    pub in_flight_at_stop: u64,
    /// How a timed schedule (`-D` with `--rate`, `--stages`) was kept: its send times in the
    /// measured period and those missed; `None` without one, or when the run was interrupted.
    pub schedule: Option<Kept>,
    /// Whether the user interrupted the run.
    pub interrupted: bool,
    /// Wall-clock time at the start of the measured period (to line up runs of several machines).
    pub measure_start_wall: SystemTime,
}

/// How a timed schedule (`-D` with `--rate`, `--stages`) was kept over the measured period.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Kept {
    /// Its send times from the start of the measured period to the schedule's end.
    pub scheduled: u64,
    /// Those no request took before the end: the client (or a server holding its connections)
    /// could not keep up, and the run ended first. Each of the others started a request.
    pub missed: u64,
}

impl Kept {
    /// The two counts of several threads' schedules, added.
    pub fn add(self, other: Kept) -> Kept {
        Kept {
            scheduled: self.scheduled + other.scheduled,
            missed: self.missed + other.missed,
        }
    }
}
