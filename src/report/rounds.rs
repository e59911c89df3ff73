//! `--rounds N`: how a run of several rounds was made, which round each run was, and a round's
//! figures as the comparison lists them (the across-rounds rows: `comparison/rounds.rs`; the
//! estimates: `stats/rounds.rs`).

use serde::{Deserialize, Serialize};

/// How a run of several rounds was made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct RoundsInfo {
    /// Rounds asked for (`--rounds`); an interrupted run has fewer in its cells.
    pub count: usize,
    /// How the cells of each round after the first were ordered: `alternate` or `shuffle`.
    pub order: String,
    /// The seed a shuffle drew from.
    pub seed: u64,
}

/// Which round a run was, and which cell of the sweep it repeated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct RoundOf {
    /// The round, 1-based.
    pub round: usize,
    /// The cell of the sweep (1-based, in the sweep's order) this run is a round of.
    pub cell: usize,
}

/// One round's figures of a cell, as the comparison shows them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct RoundFigures {
    /// The round, 1-based.
    pub round: usize,
    /// Finished requests per second.
    pub requests_per_s: f64,
    /// Request latency percentiles, µs.
    pub p50_us: u64,
    /// 90th percentile.
    pub p90_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// 99.9th percentile.
    pub p99_9_us: u64,
    /// Failed requests, percent of those done (as `--fail-if errors` counts).
    pub failed_percent: f64,
    /// This round's rate over the rate of the level's first cell in the same round.
    #[serde(default)]
    pub ratio: Option<f64>,
    /// The standard error of this round's rate as its own run measured it (batch means), when
    /// it had an interval: the floor of the rounds' spread (see [`mean_interval_floored`]).
    /// Recomputed from the runs' reports, so not written.
    #[serde(skip)]
    #[schemars(skip)]
    pub rate_error: Option<f64>,
}
