//! `--csv-urls FILE`: every cell's per-URL figures, one row per cell and URL (the `urls` of the
//! JSON report; a cell with a single URL has no row), with the 95% intervals of p50, p90 and p99
//! in columns after the figures, so that scripts reading the first ten keep working.

use anyhow::Result;
use std::fmt::Write;

use super::csv::field;
use super::{Exporter, Rendered};
use crate::report::comparison::NOT_ESTIMABLE;
use crate::report::Document;

/// Writes the per-URL rows as CSV.
pub(crate) struct UrlsCsv;

impl Exporter for UrlsCsv {
    fn render(&self, document: &Document) -> Result<Rendered> {
        let mut csv = String::from(
            "cell,label,url,requests,succeeded,failed,p50_ms,p90_ms,p99_ms,max_ms,\
                          p50_low_ms,p50_high_ms,p90_low_ms,p90_high_ms,p99_low_ms,p99_high_ms\n",
        );
        for cell in &document.cells {
            for row in &cell.urls {
                // Empty latency fields: a URL past the first 1000, or without a response.
                let latency = row.latency.as_ref().filter(|latency| latency.count > 0);
                let ms = |pick: fn(&crate::report::Percentiles) -> u64| {
                    latency.map_or_else(String::new, |latency| {
                        format!("{:.3}", pick(&latency.percentiles) as f64 / 1000.0)
                    })
                };
                // The 95% interval's ends (empty: none, or an open upper end; `n/e` both for a
                // percentile not estimable).
                let ends = |label: &str| {
                    let confidence = latency.and_then(|latency| latency.confidence.as_ref());
                    if confidence.is_some_and(|confidence| confidence.not_estimable(label)) {
                        return (NOT_ESTIMABLE.to_owned(), NOT_ESTIMABLE.to_owned());
                    }
                    let bounds = confidence.and_then(|confidence| confidence.of(label));
                    let millis = |micros: u64| format!("{:.3}", micros as f64 / 1000.0);
                    (
                        bounds.map_or_else(String::new, |bounds| millis(bounds.ci_low)),
                        bounds
                            .and_then(|bounds| bounds.ci_high)
                            .map_or_else(String::new, millis),
                    )
                };
                let [(p50_low, p50_high), (p90_low, p90_high), (p99_low, p99_high)] =
                    ["p50", "p90", "p99"].map(ends);
                let _ = writeln!(
                    csv,
                    "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                    cell.cell.index,
                    field(&cell.cell.label),
                    field(&row.url),
                    row.requests,
                    row.succeeded,
                    row.failed,
                    ms(|p| p.p50),
                    ms(|p| p.p90),
                    ms(|p| p.p99),
                    ms(|p| p.max),
                    p50_low,
                    p50_high,
                    p90_low,
                    p90_high,
                    p99_low,
                    p99_high,
                );
            }
        }
        Ok(Rendered::File(csv.into_bytes()))
    }
}
