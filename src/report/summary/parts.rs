//! A merged cell's parts: when each began its measured period against the others (the start
//! skew of runs on several machines), the rate it was to offer against the rate it achieved, and
//! whether either is outside tolerance (`merge` works them out), so a merged total built on a
//! late or starved machine says so.

use serde::{Deserialize, Serialize};

use crate::plan::shard::Shard;

/// The parts of a merged cell.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Parts {
    /// The latest part's start of its measured period after the earliest's, ms.
    pub(crate) start_skew_ms: f64,
    /// How late a start may be before it is flagged, ms.
    pub(crate) late_after_ms: f64,
    /// Each part, in the order given.
    pub(crate) parts: Vec<Part>,
}

/// One part of a merged cell.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Part {
    /// The report it came from.
    pub(crate) source: String,
    /// Its `--shard`, if it was one.
    pub(crate) shard: Option<Shard>,
    /// When its measured period began after the earliest part's, ms.
    pub(crate) started_after_ms: f64,
    /// With `--start-at`: how long after that time its measured period began, ms.
    pub(crate) start_late_ms: Option<f64>,
    /// The rate it was to offer (paced parts).
    pub(crate) requested_per_s: Option<f64>,
    /// The rate it achieved.
    pub(crate) achieved_per_s: f64,
    /// Why it is outside tolerance, if it is.
    pub(crate) outside: Option<String>,
}

impl Parts {
    /// The lines the merge prints: the skew, and each part outside tolerance.
    pub(crate) fn lines(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "parts: {}; their measured periods began within {:.0} ms of each other",
            self.parts.len(),
            self.start_skew_ms
        )];
        lines.extend(self.parts.iter().filter_map(|part| {
            let outside = part.outside.as_ref()?;
            let name = match part.shard {
                Some(shard) => format!("shard {shard} ({})", part.source),
                None => part.source.clone(),
            };
            Some(format!("  outside tolerance: {name} {outside}"))
        }));
        lines
    }
}
