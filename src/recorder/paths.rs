//! Per-URL measurements, kept when a run has two paths or more: two counters for every path
//! (16 bytes, so a million URLs take 16 MB per thread), and a latency histogram for the first
//! [`MAX_PATH_HISTOGRAMS`] only (each allocated at its first response, with 2 significant digits,
//! beside the exact smallest and largest value: the report gives a URL's min and max at the run's
//! precision, so they agree with the run's own).

use hdrhistogram::Histogram;

use super::hdr::MAX_MICROS;

/// Paths that get a latency histogram; the ones after it are counted only.
pub(crate) const MAX_PATH_HISTOGRAMS: usize = 1000;

/// One path's counts and latency, as [`PathStats::row`] gives them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PathRow<'a> {
    /// Responses that succeeded as the cell counts them: status 2xx or 3xx, or with response
    /// checks (`--expect-*`) every check met.
    pub(crate) succeeded: u64,
    /// The rest: error responses, failed checks and requests that ended without a response.
    pub(crate) failed: u64,
    /// Response latency (µs), for the first [`MAX_PATH_HISTOGRAMS`] paths once one responded.
    pub(crate) latency: Option<&'a PathLatency>,
}

/// One path's response times (µs).
#[derive(Debug, Clone)]
pub(crate) struct PathLatency {
    /// Every response time, with 2 significant digits.
    pub(crate) histogram: Histogram<u64>,
    /// The smallest response time, exact.
    pub(crate) min: u64,
    /// The largest response time, exact (at most [`MAX_MICROS`], as the histograms saturate).
    pub(crate) max: u64,
}

impl PathLatency {
    fn new() -> PathLatency {
        PathLatency {
            histogram: Histogram::new_with_bounds(1, MAX_MICROS, 2)
                .expect("static histogram bounds are valid"),
            min: u64::MAX,
            max: 0,
        }
    }

    fn record(&mut self, micros: u64) {
        let micros = micros.min(MAX_MICROS);
        self.histogram.saturating_record(micros);
        self.min = self.min.min(micros);
        self.max = self.max.max(micros);
    }

    fn add(&mut self, other: PathLatency) {
        self.histogram
            .add(other.histogram)
            .expect("histograms share bounds");
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }
}

/// Every path's counts, indexed like the plan's paths, and the first paths' latency.
#[derive(Debug, Clone)]
pub(crate) struct PathStats {
    /// Per path: succeeded, failed.
    counts: Vec<[u64; 2]>,
    /// Per path among the first [`MAX_PATH_HISTOGRAMS`]: its latency, once one responded.
    latency: Vec<Option<PathLatency>>,
}

impl PathStats {
    /// Rows for `paths` paths; `None` for a single path (the cell's figures are its figures).
    pub(crate) fn new(paths: usize) -> Option<PathStats> {
        (paths >= 2).then(|| PathStats {
            counts: vec![[0; 2]; paths],
            latency: vec![None; paths.min(MAX_PATH_HISTOGRAMS)],
        })
    }

    /// Path `path`'s row.
    pub(crate) fn row(&self, path: usize) -> PathRow<'_> {
        let [succeeded, failed] = self.counts[path];
        PathRow {
            succeeded,
            failed,
            latency: self.latency.get(path).and_then(Option::as_ref),
        }
    }

    /// Every path's row, in order.
    pub(crate) fn rows(&self) -> impl Iterator<Item = PathRow<'_>> {
        (0..self.counts.len()).map(|path| self.row(path))
    }

    /// A response for `path` completed after `micros`.
    pub(super) fn completed(&mut self, path: usize, succeeded: bool, micros: u64) {
        self.counts[path][usize::from(!succeeded)] += 1;
        if let Some(latency) = self.latency.get_mut(path) {
            latency.get_or_insert_with(PathLatency::new).record(micros);
        }
    }

    /// A request for `path` ended without a response.
    pub(super) fn failed(&mut self, path: usize) {
        self.counts[path][1] += 1;
    }

    /// Adds another thread's rows (of the same plan).
    pub(super) fn merge(&mut self, other: PathStats) {
        for (mine, theirs) in self.counts.iter_mut().zip(other.counts) {
            mine[0] += theirs[0];
            mine[1] += theirs[1];
        }
        for (mine, theirs) in self.latency.iter_mut().zip(other.latency) {
            match (mine, theirs) {
                (Some(mine), Some(theirs)) => mine.add(theirs),
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
        assert_eq!(
            a.latency.len(),
            MAX_PATH_HISTOGRAMS,
            "no room past the limit"
        );
        let row = a.row(0);
        assert_eq!((row.succeeded, row.failed), (2, 0));
        let latency = row.latency.unwrap();
        assert_eq!(latency.histogram.len(), 2);
        assert_eq!((latency.min, latency.max), (100, 300), "exact");
        assert_eq!((a.row(1).succeeded, a.row(1).failed), (0, 2));
        let last = a.row(MAX_PATH_HISTOGRAMS);
        assert_eq!((last.succeeded, last.latency.is_none()), (1, true));
        assert!(
            a.row(2).latency.is_none(),
            "allocated at the first response only"
        );
    }
}
