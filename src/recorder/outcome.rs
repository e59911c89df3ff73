//! What a run measured, merged across its threads: the recorder-level facts the runner hands to
//! the report ([`RunOutcome`]), with how a timed schedule was kept ([`Kept`], counted by the pacer).

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::{Recorder, WireTotals};

/// Everything measured by a run, merged across threads.
#[derive(Debug)]
pub struct RunOutcome {
    /// Histograms and counters (requests never sent are already counted as failed and errored).
    pub recorder: Recorder,
    /// Bytes received during the measured period.
    pub(crate) wire: WireTotals,
    /// Length of the measured period: from its start until the last request finished or the run stopped.
    pub elapsed: Duration,
    /// Requests of `-n` never sent because every connection failed.
    pub(crate) never_sent: u64,
    /// Requests sent but unfinished when the run stopped waiting for them.
    pub(crate) in_flight_at_stop: u64,
    /// How a timed schedule (`-D` with `--rate`, `--stages`) was kept: its send times in the
    /// measured period and those missed; `None` without one, or when the run was interrupted.
    pub(crate) schedule: Option<Kept>,
    /// Whether the user interrupted the run.
    pub interrupted: bool,
    /// Wall-clock time at the start of the measured period (to line up runs of several machines).
    pub(crate) measure_start_wall: SystemTime,
    /// Each runner thread's busy share (0 to 1): the part of its time it was on a CPU or
    /// runnable waiting for one, not asleep waiting for I/O or a timer.
    pub(crate) threads_busy: Vec<f64>,
    /// With `--until-stable`: how sure the answer got, and whether that stopped the run.
    pub(crate) stability: Option<Stability>,
}

/// How an `--until-stable` run ended: the 95% half-widths of its p99 and request rate at the last
/// look, as percentages of their values, against the target.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Stability {
    /// `--until-stable`: the largest half-width accepted, percent.
    pub(crate) target_pct: f64,
    /// Both half-widths were within the target at the last look.
    pub(crate) reached: bool,
    /// When the run stopped for it, seconds after the start of the measured period; `None`:
    /// the cap (`-n`, `-D`) or a signal came first.
    pub(crate) stopped_after_s: Option<f64>,
    /// The p99's half-width, percent (`None`: not enough batches yet, or no upper end).
    pub(crate) p99_half_width_pct: Option<f64>,
    /// The request rate's half-width, percent.
    pub(crate) rate_half_width_pct: Option<f64>,
}

/// How a timed schedule (`-D` with `--rate`, `--stages`) was kept over the measured period.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Kept {
    /// Its send times from the start of the measured period to the schedule's end.
    pub(crate) scheduled: u64,
    /// Those no request took before the end: the client (or a server holding its connections)
    /// could not keep up, and the run ended first. Each of the others started a request.
    pub(crate) missed: u64,
}

impl Kept {
    /// The two counts of several threads' schedules, added.
    pub(crate) fn add(self, other: Kept) -> Kept {
        Kept {
            scheduled: self.scheduled + other.scheduled,
            missed: self.missed + other.missed,
        }
    }
}
