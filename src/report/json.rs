//! The `--json` report: the [`Summary`] as one JSON document.

use std::path::Path;

use anyhow::{Context, Result};

use super::Summary;

/// Writes the summary to `path` as pretty-printed JSON.
pub fn write(summary: &Summary, path: &Path) -> Result<()> {
    let json = serde_json::to_vec_pretty(summary).expect("the summary is plain data");
    std::fs::write(path, json)
        .with_context(|| format!("cannot write the JSON report to '{}'", path.display()))
}
