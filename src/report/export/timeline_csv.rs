//! `--csv-timeline FILE`: every cell's timeline, one row per interval.

use anyhow::Result;
use std::fmt::Write;

use super::{Exporter, Rendered};
use crate::report::Document;

/// The timelines as CSV.
pub(crate) struct TimelineCsv;

impl Exporter for TimelineCsv {
    fn render(&self, document: &Document) -> Result<Rendered> {
        let mut csv = String::from(
            "cell,protocol,interval,start_s,completed,request_errors,requests_per_s,p50_ms,p99_ms,max_ms,length_s\n",
        );
        for cell in &document.cells {
            let timeline = &cell.timeline;
            for interval in &timeline.intervals {
                let _ = writeln!(
                    csv,
                    "{},{},{},{:.3},{},{},{:.1},{:.3},{:.3},{:.3},{:.3}",
                    cell.cell.index,
                    cell.cell.protocol,
                    interval.index,
                    timeline.start_of(interval),
                    interval.completed,
                    interval.errors,
                    timeline.rate_of(interval),
                    interval.p50_us as f64 / 1000.0,
                    interval.p99_us as f64 / 1000.0,
                    interval.max_us as f64 / 1000.0,
                    timeline.length_of(interval)
                );
            }
        }
        Ok(Rendered::File(csv.into_bytes()))
    }
}
