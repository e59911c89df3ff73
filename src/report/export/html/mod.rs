//! `--html`: one self-contained page (inline CSS and SVG, no scripts, no network) that leads with
//! the verdicts ([`verdicts`]: the cause of a failed run, the plain words, the capacity, the
//! thresholds), then the figures (the comparison table, or for a single cell its figures as a
//! card), the rate requested beside the rate achieved, and the charts ([`charts`]); with
//! `--find-max` each cell's search as the text states it.

mod chart;
mod charts;
mod verdicts;

use std::fmt::Write;

use anyhow::Result;

use super::{Exporter, Rendered};
use crate::report::{capacity, comparison, text, Document};

/// Writes the page.
pub(crate) struct Html;

/// `text` as HTML text or an attribute value: a server's words are shown, never run.
pub(crate) fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The figures: the comparison table (with `--rounds`, each round's too), or for a sweep of one
/// cell its row as a card, a figure a line; then the rates requested and achieved of the paced
/// cells.
fn figures(document: &Document) -> String {
    let mut out = String::from(r#"<section id="figures"><h2>Figures</h2>"#);
    let (titles, lines) = comparison::table(&document.comparison, comparison::Intervals::Inline);
    match &lines[..] {
        [] => {}
        [line] => {
            let _ = write!(
                out,
                r#"<p>{}:</p><table id="card"><tbody>"#,
                match document.rounds {
                    Some(_) => "The run (latencies in ms; each figure is the mean of its rounds, its 95% interval across them)",
                    None => "The run (latencies in ms; 95% intervals within one run)",
                }
            );
            for (title, value) in titles.iter().zip(line) {
                if !value.is_empty() {
                    let _ = write!(
                        out,
                        r#"<tr><th scope="row">{}</th><td>{}</td></tr>"#,
                        escape(title),
                        escape(value)
                    );
                }
            }
            out.push_str("</tbody></table>");
        }
        _ => {
            let _ = write!(
                out,
                "<p>{}</p>",
                escape(&text::comparison_heading(document))
            );
            out.push_str(&html_table("comparison", &titles, &lines));
        }
    }
    if let Some((titles, lines)) = comparison::rounds::table(&document.comparison) {
        let titles: Vec<&str> = titles.iter().map(String::as_str).collect();
        out.push_str("<p>Rounds (spread: highest minus lowest, over the mean):</p>");
        out.push_str(&html_table("rounds", &titles, &lines));
    }
    if let Some(legend) = comparison::legend(&document.comparison) {
        let _ = write!(out, "<p>{}</p>", escape(&legend));
    }
    out.push_str(&rates(document));
    out.push_str("</section>\n");
    out
}

/// The paced cells' rates: requested beside achieved, with how late the sends went out (the
/// text report's `rate:` line); nothing without `--rate`.
fn rates(document: &Document) -> String {
    let lines: Vec<Vec<String>> = document
        .cells
        .iter()
        .filter_map(|cell| {
            let rate = cell.rate.as_ref()?;
            Some(vec![
                text::run_label(cell),
                format!("{:.1}", rate.requested_per_s),
                format!("{:.1}", rate.achieved_per_s),
                format!("{} ({:.2}%)", rate.late, rate.late_pct),
                crate::units::format_micros(rate.delay_p99_us as f64),
            ])
        })
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    let titles = [
        "cell",
        "requested req/s",
        "achieved req/s",
        "sent late",
        "start delay p99",
    ];
    format!(
        "<p>Rate requested and achieved (late: sent more than {} ms after its time):</p>{}",
        crate::recorder::LATE_AFTER.as_millis(),
        html_table("rates", &titles, &lines)
    )
}

/// Each searching cell's capacity search as the text report prints it: its steps, and the
/// capacity with its SLO.
fn searches(document: &Document) -> String {
    let mut out = String::new();
    for cell in &document.cells {
        if let Some(search) = &cell.capacity {
            let _ = write!(
                out,
                r#"<h3>{}</h3><pre class="search">{}</pre>"#,
                escape(&text::run_label(cell)),
                escape(capacity::render(search).trim_start())
            );
        }
    }
    match out.is_empty() {
        true => out,
        false => format!(r#"<section id="searches"><h2>Capacity searches</h2>{out}</section>"#),
    }
}

/// The whole page.
pub(crate) fn render(document: &Document) -> String {
    let target = document
        .cells
        .first()
        .map_or_else(String::new, |cell| cell.settings.urls.join(" "));
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>h2load-rs report</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; max-width: 1100px; }}
table {{ border-collapse: collapse; margin: 12px 0 24px; font-size: 12px; }}
th, td {{ border: 1px solid #ccc; padding: 3px 8px; text-align: right; }}
th {{ background: #f3f3f3; }}
#card th {{ text-align: left; }}
.wide {{ overflow-x: auto; }}
.cause {{ color: #b00020; font-weight: 600; }}
.warning {{ color: #8a5a00; }}
.capacity {{ font-weight: 600; }}
pre.search {{ font-size: 12px; background: #f7f7f7; padding: 8px; overflow-x: auto; }}
figure {{ margin: 16px 0; }}
figcaption {{ font-weight: 600; margin-bottom: 4px; }}
.plot {{ fill: #fff; stroke: #999; }}
.grid {{ stroke: #e5e5e5; }}
.tick {{ font-size: 11px; fill: #444; }}
.axis {{ font-size: 12px; fill: #222; }}
.line {{ fill: none; stroke-width: 2; }}
.ci {{ fill: none; stroke-width: 1; opacity: 0.7; }}
.legend {{ list-style: none; margin: 4px 0 0; padding: 0; max-width: {width}px; display: flex; flex-wrap: wrap; gap: 2px 18px; font-size: 12px; color: #444; }}
.legend li {{ max-width: 100%; overflow-wrap: anywhere; }}
.swatch {{ display: inline-block; width: 20px; margin-right: 6px; vertical-align: middle; }}
</style></head><body>
<h1>h2load-rs {version}</h1>
<p>{cells} against {target}</p>
{verdicts}{figures}{throughput}{latency}{timeline}{over_time}{knee}{searches}</body></html>
"#,
        width = chart::WIDTH,
        version = escape(&document.tool.version),
        cells = crate::units::counted(document.cells.len() as u64, "cell"),
        target = escape(&target),
        verdicts = verdicts::section(document),
        figures = figures(document),
        throughput = charts::throughput(document),
        latency = charts::latency(document),
        timeline = charts::timeline(document),
        over_time = charts::latency_over_time(document),
        knee = charts::knee(document),
        searches = searches(document),
    )
}

/// A table of `titles` over `lines`, every cell escaped; one wider than the page scrolls by
/// itself.
fn html_table(id: &str, titles: &[&str], lines: &[Vec<String>]) -> String {
    let mut table = format!(r#"<div class="wide"><table id="{id}"><thead><tr>"#);
    for title in titles {
        let _ = write!(table, "<th>{}</th>", escape(title));
    }
    table.push_str("</tr></thead><tbody>");
    for line in lines {
        table.push_str("<tr>");
        for cell in line {
            let _ = write!(table, "<td>{}</td>", escape(cell));
        }
        table.push_str("</tr>");
    }
    table.push_str("</tbody></table></div>");
    table
}

impl Exporter for Html {
    fn render(&self, document: &Document) -> Result<Rendered> {
        Ok(Rendered::File(render(document).into_bytes()))
    }
}
