//! Live metrics (`--metrics-listen`): every cell of a sweep, as its workers last published it
//! (see [`crate::observe::live`]), served at `/metrics` for Prometheus. Nothing here touches the
//! load threads: a scrape reads the published copies.

pub(crate) mod endpoint;
pub(crate) mod exposition;

use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::observe::live::{Live, Snapshot};
use crate::plan::stages::Stages;

/// Where a cell's requested rate comes from.
#[derive(Debug, Clone)]
pub(crate) enum Requested {
    /// No pacing: no requested rate.
    Nothing,
    /// `--rate`.
    Constant(f64),
    /// `--stages`: the rate the ramp offers at the time of the scrape.
    Ramp(Stages),
    /// `--find-max`: the rate of the step under way ([`Live::offered`]).
    Steered,
}

/// The cells exposed so far: a cell's series stay after it ends, with its final values.
#[derive(Debug, Default)]
pub(crate) struct Board {
    cells: Mutex<Vec<CellSeries>>,
}

/// One cell's source of numbers.
#[derive(Debug)]
struct CellSeries {
    /// The `cell` label: the cell's label in the report (`h2c c=10 m=1`).
    cell: String,
    /// The `protocol` label: `h1`, `h2c`, …
    protocol: &'static str,
    /// Where its requested rate comes from.
    requested: Requested,
    live: Arc<Live>,
    started: Instant,
    /// The report's requests per second, once the cell has ended.
    achieved_rps: Option<f64>,
}

/// What one cell shows at a scrape.
#[derive(Debug)]
pub(crate) struct Reading {
    pub(crate) cell: String,
    pub(crate) protocol: &'static str,
    pub(crate) requested_rps: Option<f64>,
    /// Requests finished per second: the report's figure once the cell has ended, the mean
    /// since its start while it runs.
    pub(crate) achieved_rps: f64,
    pub(crate) snapshot: Snapshot,
}

impl Board {
    /// Exposes a cell from now on; returns its number for [`Board::finish_cell`].
    pub(crate) fn add_cell(
        &self,
        cell: String,
        protocol: &'static str,
        requested: Requested,
        live: Arc<Live>,
    ) -> usize {
        let mut cells = self.lock();
        cells.push(CellSeries {
            cell,
            protocol,
            requested,
            live,
            started: Instant::now(),
            achieved_rps: None,
        });
        cells.len() - 1
    }

    /// Cell `index` has ended: its achieved rate is from now on the report's.
    pub(crate) fn finish_cell(&self, index: usize, achieved_rps: f64) {
        if let Some(cell) = self.lock().get_mut(index) {
            cell.achieved_rps = Some(achieved_rps);
        }
    }

    /// Every cell's numbers now.
    pub(crate) fn read(&self) -> Vec<Reading> {
        self.lock()
            .iter()
            .map(|cell| {
                let snapshot = cell.live.snapshot();
                let achieved_rps = cell.achieved_rps.unwrap_or_else(|| {
                    let elapsed = cell.started.elapsed().as_secs_f64();
                    if elapsed > 0.0 {
                        snapshot.done as f64 / elapsed
                    } else {
                        0.0
                    }
                });
                Reading {
                    cell: cell.cell.clone(),
                    protocol: cell.protocol,
                    requested_rps: match &cell.requested {
                        Requested::Nothing => None,
                        Requested::Constant(rate) => Some(*rate),
                        Requested::Ramp(stages) => Some(stages.rate_at(cell.started.elapsed())),
                        Requested::Steered => cell.live.offered(),
                    },
                    achieved_rps,
                    snapshot,
                }
            })
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<CellSeries>> {
        self.cells
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
