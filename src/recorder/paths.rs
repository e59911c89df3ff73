//! Per-URL measurements, kept when a run has two paths or more: counts for every path, and a
//! latency histogram for the first [`MAX_PATH_HISTOGRAMS`] (each is allocated at its first
//! response, with 2 significant digits, so a list of 100,000 URLs stays within memory).

use hdrhistogram::Histogram;

use super::hdr::MAX_MICROS;

/// Paths that get a latency histogram; the ones after it are counted only.
pub const MAX_PATH_HISTOGRAMS: usize = 1000;

/// One path's counts and latency.
#[derive(Debug, Clone, Default)]
pub struct PathRow {
    /// Responses that succeeded as the cell counts them: status 2xx or 3xx, or with response
    /// checks (`--expect-*`) every check met.
    pub succeeded: u64,
    /// The rest: error responses, failed checks and requests that ended without a response.
    pub failed: u64,
    /// Response latency (µs), for the first [`MAX_PATH_HISTOGRAMS`] paths once one responded.
    pub latency: Option<Histogram<u64>>,
}

/// Every path's row, indexed like the plan's paths.
#[derive(Debug, Clone)]
pub struct PathStats {
    /// One row per path.
    pub rows: Vec<PathRow>,
}

fn path_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_MICROS, 2).expect("static histogram bounds are valid")
}

impl PathStats {
    /// Rows for `paths` paths; `None` for a single path (the cell's figures are its figures).
    pub fn new(paths: usize) -> Option<PathStats> {
        (paths >= 2).then(|| PathStats {
            rows: vec![PathRow::default(); paths],
        })
    }

    /// A response for `path` completed after `micros`.
    pub(super) fn completed(&mut self, path: usize, succeeded: bool, micros: u64) {
        let row = &mut self.rows[path];
        if succeeded {
            row.succeeded += 1;
        } else {
            row.failed += 1;
        }
        if path < MAX_PATH_HISTOGRAMS {
            row.latency
                .get_or_insert_with(path_histogram)
                .saturating_record(micros);
        }
    }

    /// A request for `path` ended without a response.
    pub(super) fn failed(&mut self, path: usize) {
        self.rows[path].failed += 1;
    }

    /// Adds another thread's rows (of the same plan).
    pub(super) fn merge(&mut self, other: PathStats) {
        for (mine, theirs) in self.rows.iter_mut().zip(other.rows) {
            mine.succeeded += theirs.succeeded;
            mine.failed += theirs.failed;
            match (&mut mine.latency, theirs.latency) {
                (Some(mine), Some(theirs)) => mine.add(theirs).expect("histograms share bounds"),
                (mine @ None, theirs) => *mine = theirs,
                (Some(_), None) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_count_and_merge_and_histograms_stop_at_the_limit() {
        assert!(PathStats::new(1).is_none());
        let mut a = PathStats::new(MAX_PATH_HISTOGRAMS + 1).unwrap();
        let mut b = a.clone();
        a.completed(0, true, 100);
        a.completed(1, false, 200);
        b.completed(0, true, 300);
        b.failed(1);
        b.completed(MAX_PATH_HISTOGRAMS, true, 5);
        a.merge(b);
        let row = &a.rows[0];
        assert_eq!((row.succeeded, row.failed), (2, 0));
        let latency = row.latency.as_ref().unwrap();
        assert_eq!(latency.len(), 2);
        assert_eq!(latency.max(), latency.highest_equivalent(300));
        assert_eq!((a.rows[1].succeeded, a.rows[1].failed), (0, 2));
        let last = &a.rows[MAX_PATH_HISTOGRAMS];
        assert_eq!((last.succeeded, last.latency.is_none()), (1, true));
        assert!(
            a.rows[2].latency.is_none(),
            "allocated at the first response only"
        );
    }
}
