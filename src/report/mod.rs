//! Reports: a [`Summary`] is computed once from what the runner measured, then rendered as text or
//! JSON. Nothing here knows about sockets or protocols beyond their names. This file holds the
//! whole run's [`Document`]; the parts of a cell's report are in `summary/`, `timeline.rs` and
//! `rate.rs`.

pub(crate) mod capacity;
pub(crate) mod cause;
pub(crate) mod comparison;
pub(crate) mod export;
pub(crate) mod generator;
#[cfg(test)]
mod json_schema;
pub(crate) mod layout;
pub(crate) mod paint;
pub(crate) mod plain;
pub(crate) mod provenance;
mod rate;
pub(crate) mod rounds;
mod summary;
pub(crate) mod text;
pub(crate) mod thresholds;
pub(crate) mod throughput;

use serde::{Deserialize, Serialize};

use crate::observe::watch::ProcessUsage;
// Named `super::counted` by text.rs and plain.rs.
use crate::units::counted;
pub(crate) use rate::{InFlight, RateReport};
// Named by merge.
pub(crate) use summary::intervals::annotate;
pub(crate) use summary::merge::{add_histograms, Adder};
pub(crate) use summary::parts::{Part, Parts};
pub(crate) use summary::schema::{
    Cause, CellInfo, Histograms, Latencies, LatencySummary, Percentiles, Spread, Summary,
    Threshold, Tool, UrlRow,
};

/// Version of the JSON layout; bumped on any incompatible change.
pub(crate) const SCHEMA_VERSION: u32 = 3;

/// A whole run: every cell, and their comparison. Serialized as is for `--json`.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Document {
    /// Layout version of this document.
    pub(crate) schema_version: u32,
    /// The tool and its version.
    pub(crate) tool: Tool,
    /// The command line, host, start time and version of the run (or of the `merge`) that
    /// wrote it.
    #[serde(flatten)]
    pub(crate) provenance: provenance::Provenance,
    /// `merge`: each report it merged and what made it, in the order given (absent otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) merged_from: Vec<provenance::Origin>,
    /// Each cell's report, in the order they ran.
    pub(crate) cells: Vec<Summary>,
    /// One row per cell, with per-level ratios.
    pub(crate) comparison: Vec<comparison::Row>,
    /// Where a signal between two cells stopped the sweep (a signal during a cell marks that
    /// cell `interrupted` instead); `None` when no signal came between cells.
    #[serde(default)]
    pub(crate) stopped_between_cells: Option<SweepStop>,
    /// With `--rounds`: how many, in which order; each cell then holds its round
    /// (`cell.round`), and the comparison is across rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) rounds: Option<rounds::RoundsInfo>,
    /// The file it was read from (`merge`, `diff`), for errors; not written.
    #[serde(skip)]
    pub(crate) source: String,
}

impl Document {
    /// Assembles the document from the cells' summaries, made by this process now.
    pub(crate) fn new(cells: Vec<Summary>) -> Document {
        let comparison = comparison::rows(&cells);
        Document {
            schema_version: SCHEMA_VERSION,
            tool: Tool {
                name: "h2load-rs".to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
            },
            provenance: provenance::Provenance::of_this_process(),
            merged_from: Vec::new(),
            cells,
            comparison,
            stopped_between_cells: None,
            rounds: None,
            source: String::new(),
        }
    }

    /// Adds a cell and recomputes the comparison (a sweep rewrites its exports after every cell).
    pub(crate) fn push(&mut self, cell: Summary) {
        self.cells.push(cell);
        self.comparison = comparison::rows(&self.cells);
    }
}

/// Where a sweep stopped: after this many cells of the planned ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct SweepStop {
    /// The cells that ran (all of them to their end).
    pub(crate) after_cell: usize,
    /// The cells the sweep had.
    pub(crate) of: usize,
}

/// The runs of each cell of a sweep, in the sweep's order: one run each, or with `--rounds`
/// every round of it, in the order they ran.
pub(crate) fn runs_by_cell(cells: &[Summary]) -> Vec<Vec<&Summary>> {
    let mut groups: Vec<(usize, Vec<&Summary>)> = Vec::new();
    for cell in cells {
        let id = cell.cell.round.map_or(cell.cell.index, |of| of.cell);
        match groups.iter_mut().find(|(other, _)| *other == id) {
            Some((_, runs)) => runs.push(cell),
            None => groups.push((id, vec![cell])),
        }
    }
    groups.sort_by_key(|(id, _)| *id);
    groups.into_iter().map(|(_, runs)| runs).collect()
}

/// Where a cell stands in its run, and what the processes around it used.
#[derive(Debug, Clone, Default)]
pub(crate) struct CellContext {
    /// 1-based position in the run.
    pub(crate) index: usize,
    /// The concurrency level it belongs to (cells of one level are compared).
    pub(crate) level: usize,
    /// With `--rounds`: its round, and the cell of the sweep it repeats.
    pub(crate) round: Option<rounds::RoundOf>,
    /// CPU the generator itself used, in percent of one core.
    pub(crate) generator_cpu_percent: f64,
    /// What each watched process used.
    pub(crate) watched: Vec<ProcessUsage>,
}
