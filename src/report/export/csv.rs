//! `--csv`: the comparison table, one row per cell.

use std::path::Path;

use anyhow::{Context, Result};

use crate::report::{comparison, export::outputs::write_to, Document, Exporter};

/// Writes the comparison as CSV (RFC 4180 quoting).
pub(crate) struct Csv;

/// `text` as one CSV field, quoted when it must be.
pub(crate) fn field(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

impl Exporter for Csv {
    fn export(&self, document: &Document, path: &Path) -> Result<()> {
        let (titles, lines) =
            comparison::table(&document.comparison, comparison::Intervals::Columns);
        let mut csv = titles
            .iter()
            .map(|title| field(title))
            .collect::<Vec<_>>()
            .join(",");
        csv.push('\n');
        for line in lines {
            csv.push_str(
                &line
                    .iter()
                    .map(|cell| field(cell))
                    .collect::<Vec<_>>()
                    .join(","),
            );
            csv.push('\n');
        }
        write_to(path, csv.as_bytes())
            .with_context(|| format!("cannot write the CSV report to '{}'", path.display()))
    }
}
