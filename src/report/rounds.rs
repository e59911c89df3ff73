//! `--rounds N`: how a run of several rounds was made, which round each run was, and a round's
//! figures as the comparison lists them (the across-rounds rows: `comparison/rounds.rs`; the
//! estimates: `stats/rounds.rs`).

use serde::{Deserialize, Serialize};

/// How a run of several rounds was made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct RoundsInfo {
    /// Rounds asked for (`--rounds`); an interrupted run has fewer in its cells.
    pub(crate) count: usize,
    /// How the cells of each round after the first were ordered: `alternate` or `shuffle`.
    pub(crate) order: String,
    /// The seed a shuffle drew from.
    pub(crate) seed: u64,
}

/// Which round a run was, and which cell of the sweep it repeated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct RoundOf {
    /// The round, 1-based.
    pub(crate) round: usize,
    /// The cell of the sweep (1-based, in the sweep's order) this run is a round of.
    pub(crate) cell: usize,
}

/// One round's figures of a cell, as the comparison shows them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct RoundFigures {
    /// The round, 1-based.
    pub(crate) round: usize,
    /// Finished requests per second.
    pub(crate) requests_per_s: f64,
    /// Request latency percentiles, µs.
    pub(crate) p50_us: u64,
    /// 90th percentile.
    pub(crate) p90_us: u64,
    /// 99th percentile.
    pub(crate) p99_us: u64,
    /// 99.9th percentile.
    pub(crate) p99_9_us: u64,
    /// Failed requests, percent of those done (as `--fail-if errors` counts).
    pub(crate) failed_percent: f64,
    /// This round's rate over the rate of the level's first cell in the same round.
    #[serde(default)]
    pub(crate) ratio: Option<f64>,
    /// The standard error of this round's rate as its own run measured it (batch means), when
    /// it had an interval: the floor of the rounds' spread (see [`mean_interval_floored`]).
    /// Recomputed from the runs' reports, so not written.
    #[serde(skip)]
    #[schemars(skip)]
    pub(crate) rate_error: Option<f64>,
}
