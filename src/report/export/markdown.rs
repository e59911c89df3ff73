//! `--markdown`: the comparison table.

use std::path::Path;

use anyhow::{Context, Result};

use crate::report::{comparison, export::outputs::write_to, rounds, Document, Exporter};

/// Writes the comparison as a Markdown table (latencies in milliseconds).
pub(crate) struct Markdown;

/// The comparison as Markdown.
pub(crate) fn render(document: &Document) -> String {
    let (titles, lines) = comparison::table(&document.comparison, comparison::Intervals::Inline);
    let mut markdown = table(&titles, &lines);
    if let Some((titles, lines)) = rounds::table(&document.comparison) {
        let titles: Vec<&str> = titles.iter().map(String::as_str).collect();
        markdown.push_str("\nRounds (spread: highest minus lowest, over the mean):\n\n");
        markdown.push_str(&table(&titles, &lines));
    }
    markdown
}

/// A GitHub-flavoured Markdown table: the titles, the separator, one line per row.
pub(crate) fn table(titles: &[&str], lines: &[Vec<String>]) -> String {
    let mut markdown = format!("| {} |\n", titles.join(" | "));
    markdown.push_str(&format!("|{}\n", "---|".repeat(titles.len())));
    for line in lines {
        markdown.push_str(&format!("| {} |\n", line.join(" | ")));
    }
    markdown
}

impl Exporter for Markdown {
    fn export(&self, document: &Document, path: &Path) -> Result<()> {
        write_to(path, render(document).as_bytes())
            .with_context(|| format!("cannot write the Markdown report to '{}'", path.display()))
    }
}
