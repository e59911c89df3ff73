//! `--csv`: the comparison table, one row per cell.

use anyhow::Result;

use super::{Exporter, Rendered};
use crate::report::{comparison, Document};

/// The comparison as CSV (RFC 4180 quoting).
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
    fn render(&self, document: &Document) -> Result<Rendered> {
        let (titles, lines) =
            comparison::table(&document.comparison, comparison::Intervals::Columns);
        // With --rounds, each round's figures follow in columns of their own.
        let (round_titles, round_lines) = comparison::rounds::columns(&document.comparison);
        let mut csv = titles
            .iter()
            .copied()
            .chain(round_titles.iter().map(String::as_str))
            .map(field)
            .collect::<Vec<_>>()
            .join(",");
        csv.push('\n');
        for (index, line) in lines.iter().enumerate() {
            let extra = round_lines.get(index).map_or(&[][..], Vec::as_slice);
            csv.push_str(
                &line
                    .iter()
                    .chain(extra)
                    .map(|cell| field(cell))
                    .collect::<Vec<_>>()
                    .join(","),
            );
            csv.push('\n');
        }
        Ok(Rendered::File(csv.into_bytes()))
    }
}
