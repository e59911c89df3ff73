//! The page's first section, what the run concluded, in the text report's own words (each line
//! from the function the text report prints it with): why a cell failed, the comparison and each
//! cell in plain words, why a paced cell fell short of its rate, the capacity with its SLO, and
//! every `--fail-if` verdict.

use std::fmt::Write;

use super::escape;
use crate::report::text::run_label;
use crate::report::{capacity, plain, text, thresholds, Document};

/// The verdicts as a `<section id="verdicts">`.
pub(super) fn section(document: &Document) -> String {
    let cells = &document.cells;
    let several = cells.len() > 1;
    let mut out = String::from(r#"<section id="verdicts"><h2>Verdicts</h2>"#);
    // The cause first, as the text report leads with it.
    for line in text::cause_lines(cells) {
        let _ = write!(out, r#"<p class="cause">{}</p>"#, escape(&line));
    }
    for line in text::warning_lines(cells) {
        let _ = write!(out, r#"<p class="warning">{}</p>"#, escape(&line));
    }
    list(
        &mut out,
        "comparison",
        &plain::comparison(&document.comparison),
    );
    for line in capacity::sweep::sweep_lines(cells) {
        let _ = write!(out, r#"<p class="capacity">{}</p>"#, escape(&line));
    }
    list(&mut out, "thresholds", &threshold_lines(document));
    for cell in cells {
        let mut sentences = plain::cell(cell);
        sentences.extend(plain::cell_rate_shortfall(cell));
        if sentences.is_empty() {
            continue;
        }
        let _ = write!(
            out,
            "<h3>{}in plain words</h3>",
            match several {
                true => escape(&run_label(cell)) + ": ",
                false => String::new(),
            }
        );
        list(&mut out, "plain", &sentences);
    }
    out.push_str("</section>\n");
    out
}

/// `lines` as a `<ul class="{class}">`; nothing when there are none.
fn list(out: &mut String, class: &str, lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    let _ = write!(out, r#"<ul class="{class}">"#);
    for line in lines {
        let _ = write!(out, "<li>{}</li>", escape(line));
    }
    out.push_str("</ul>");
}

/// Every `--fail-if` verdict, `passed` or `breached`, of each cell (with `--rounds`, each cell of
/// the sweep judged across its rounds, as the exit status is), then the thresholds not judged.
fn threshold_lines(document: &Document) -> Vec<String> {
    let fail_if = thresholds::objectives(&document.cells);
    if fail_if.is_empty() {
        return Vec::new();
    }
    // Each cell as the exit status judges it; a cell's run, not the sweep's cell, without rounds.
    let judged = thresholds::judge(document, &fail_if);
    let labels: Vec<String> = match document.rounds {
        Some(_) => judged.iter().map(|cell| cell.label.clone()).collect(),
        None => document.cells.iter().map(run_label).collect(),
    };
    let unjudged = thresholds::unjudged(&judged, &fail_if);
    let judged: Vec<(String, Vec<String>)> = labels
        .into_iter()
        .zip(&judged)
        .map(|(label, cell)| (label, thresholds::verdict_lines(&cell.thresholds, &fail_if)))
        .collect();
    let several = judged.len() > 1;
    let mut lines: Vec<String> = judged
        .into_iter()
        .flat_map(|(label, lines)| {
            lines.into_iter().map(move |line| match several {
                true => format!("{label}: {line}"),
                false => line,
            })
        })
        .collect();
    lines.extend(unjudged);
    lines
}
