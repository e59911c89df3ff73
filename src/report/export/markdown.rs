//! `--markdown`: what the run concluded (why a cell failed, the comparison in plain words, the
//! capacity), in the text report's own words, then the comparison table.

use anyhow::Result;

use super::html::escape;
use super::{Exporter, Rendered};
use crate::report::{capacity, comparison, plain, text, Document};

/// Writes the comparison as a Markdown table (latencies in milliseconds).
pub(crate) struct Markdown;

/// The verdicts as a list (each line from the function the text report prints it with), then the
/// comparison as Markdown, with the legend of `n/e` when a percentile is marked so.
pub(crate) fn render(document: &Document) -> String {
    let verdicts: Vec<String> = text::cause_lines(&document.cells)
        .into_iter()
        .chain(text::warning_lines(&document.cells))
        .chain(plain::comparison(&document.comparison))
        .chain(capacity::sweep::sweep_lines(&document.cells))
        .collect();
    let mut markdown = String::new();
    for line in &verdicts {
        // A cause quotes the server's own words: as text, never as HTML a renderer would run.
        markdown.push_str(&format!("- {}\n", escape(line)));
    }
    if !verdicts.is_empty() {
        markdown.push('\n');
    }
    let (titles, lines) = comparison::table(&document.comparison, comparison::Intervals::Inline);
    markdown.push_str(&table(&titles, &lines));
    if let Some(legend) = comparison::legend(&document.comparison) {
        markdown.push_str(&format!("\n{legend}\n"));
    }
    if let Some((titles, lines)) = comparison::rounds::table(&document.comparison) {
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
    fn render(&self, document: &Document) -> Result<Rendered> {
        Ok(Rendered::File(render(document).into_bytes()))
    }
}
