//! `--hgrm DIR`: each cell's histograms (request, connect, TTFB, and service time with `--rate`) as HdrHistogram percentile distributions, the text format
//! HdrHistogram's `outputPercentileDistribution` writes and its plotter reads (values in ms).

use std::fmt::Write;

use anyhow::Result;
use hdrhistogram::Histogram;

use super::{Exporter, Rendered};
use crate::report::Document;

/// Microseconds per reported unit (milliseconds).
const SCALE: f64 = 1000.0;
/// Percentile ticks per halving of the distance to 100%, as in HdrHistogram's default output.
const TICKS_PER_HALF_DISTANCE: u32 = 5;

/// The `cell-NN-PROTOCOL-cC-mM.{request,connect,ttfb}.hgrm` files of a directory.
pub(crate) struct Hgrm;

/// The percentile distribution of `histogram` in HdrHistogram's text format.
pub(crate) fn distribution(histogram: &Histogram<u64>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>12} {:>14} {:>10} {:>14}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    let mut total = 0u64;
    for step in histogram.iter_quantiles(TICKS_PER_HALF_DISTANCE) {
        total += step.count_since_last_iteration();
        let value = step.value_iterated_to() as f64 / SCALE;
        let quantile = step.quantile_iterated_to();
        if quantile < 1.0 {
            let _ = writeln!(
                out,
                "{value:12.3} {quantile:2.12} {total:10} {:14.2}",
                1.0 / (1.0 - quantile)
            );
        } else {
            let _ = writeln!(out, "{value:12.3} {quantile:2.12} {total:10}");
        }
    }
    let _ = writeln!(
        out,
        "#[Mean    = {:12.3}, StdDeviation   = {:12.3}]",
        histogram.mean() / SCALE,
        histogram.stdev() / SCALE
    );
    let _ = writeln!(
        out,
        "#[Max     = {:12.3}, Total count    = {:12}]",
        histogram.max() as f64 / SCALE,
        histogram.len()
    );
    let _ = writeln!(
        out,
        "#[Buckets = {:12}, SubBuckets     = {:12}]",
        histogram.buckets(),
        histogram.distinct_values()
    );
    out
}

impl Exporter for Hgrm {
    fn render(&self, document: &Document) -> Result<Rendered> {
        let mut files = Vec::new();
        for cell in &document.cells {
            let info = &cell.cell;
            let stem = format!(
                "cell-{:02}-{}-c{}-m{}",
                info.index, info.protocol, info.clients, info.streams
            );
            let histograms = &cell.histograms;
            let kinds = [
                ("request", Some(&histograms.request)),
                ("service", histograms.service.as_ref()),
                ("connect", Some(&histograms.connect)),
                ("ttfb", Some(&histograms.ttfb)),
            ];
            for (kind, histogram) in kinds.into_iter().filter_map(|(kind, h)| Some((kind, h?))) {
                files.push((
                    format!("{stem}.{kind}.hgrm"),
                    distribution(histogram).into_bytes(),
                ));
            }
        }
        Ok(Rendered::Files(files))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distribution_has_hdrhistograms_layout() {
        let mut histogram = crate::recorder::hdr::new_histogram();
        for micros in 1..=1000u64 {
            histogram.record(micros * 10).unwrap();
        }
        let text = distribution(&histogram);
        let rows: Vec<&str> = text
            .lines()
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .skip(1)
            .collect();
        let first: Vec<&str> = rows[0].split_whitespace().collect();
        assert_eq!(first[1], "0.000000000000");
        let last: Vec<&str> = rows.last().unwrap().split_whitespace().collect();
        assert_eq!(last[1], "1.000000000000");
        assert_eq!(last[2], "1000", "the total count ends at every sample");
        assert_eq!(last.len(), 3, "no 1/(1-p) at 100%");
        assert!(text.contains("#[Max     =       10.007"), "{text}");
    }
}
