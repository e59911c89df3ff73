//! `--hdr-log FILE`: the Java-compatible HdrHistogram interval log (V2 + deflate, base64, with
//! StartTime/BaseTime headers), one histogram per interval and kind, tagged `cN-request`,
//! `cN-ttfb` and (with `--rate`) `cN-service` for cell N. HdrHistogram's log processor and plotter
//! read it; values are microseconds, and the Interval_Max column is in milliseconds.

use std::time::{Duration, UNIX_EPOCH};

use anyhow::{anyhow, Context, Result};
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;

use super::{Exporter, Rendered};
use crate::recorder::hdr;
use crate::report::Document;

/// The interval log.
pub(crate) struct HdrLog;

impl Exporter for HdrLog {
    fn render(&self, document: &Document) -> Result<Rendered> {
        let base_ms = document
            .cells
            .iter()
            .map(|cell| cell.timeline.start_unix_ms)
            .min()
            .unwrap_or(0);
        let base = UNIX_EPOCH + Duration::from_millis(base_ms);
        let mut out = Vec::new();
        let mut serializer = V2DeflateSerializer::new();
        let mut log = IntervalLogWriterBuilder::new()
            .add_comment(concat!(
                "[Logged with h2load-rs ",
                env!("CARGO_PKG_VERSION"),
                "]"
            ))
            .add_comment("[Histogram log format version 1.3]")
            .with_start_time(base)
            .with_base_time(base)
            .with_max_value_divisor(1000.0)
            .begin_log_with(&mut out, &mut serializer)
            .context("cannot start the interval log")?;
        for cell in &document.cells {
            let timeline = &cell.timeline;
            let cell_offset = Duration::from_millis(timeline.start_unix_ms - base_ms);
            for interval in &timeline.intervals {
                let start = cell_offset + Duration::from_secs_f64(timeline.start_of(interval));
                // The last interval's real length: it ends at the end of the measured period.
                let length = Duration::from_secs_f64(timeline.length_of(interval));
                let kinds = [
                    ("request", Some(&interval.hdr)),
                    ("ttfb", Some(&interval.ttfb_hdr)),
                    ("service", interval.service_hdr.as_ref()),
                ];
                for (kind, encoded) in kinds {
                    let Some(encoded) = encoded else { continue };
                    let histogram = hdr::from_base64(encoded)?;
                    let tag_text = format!("c{}-{kind}", cell.cell.index);
                    let tag = Tag::new(&tag_text).expect("tags have no commas or spaces");
                    log.write_histogram(&histogram, start, length, Some(tag))
                        .map_err(|error| anyhow!("cannot write the interval log: {error}"))?;
                }
            }
        }
        drop(log);
        // The column legend Java's HistogramLogWriter puts after the headers (its reader skips it).
        let text = String::from_utf8(out).expect("the log is ASCII");
        let headers_end = text.find("\nTag=").map_or(text.len(), |at| at + 1);
        let text = format!(
            "{}\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n{}",
            &text[..headers_end],
            &text[headers_end..]
        );
        Ok(Rendered::File(text.into_bytes()))
    }
}
