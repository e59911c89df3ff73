//! `h2load-rs merge A.json B.json ...`: one report from runs of the same scenario made on several
//! machines. Counts add; histograms add exactly (they travel in the JSON, HDR-encoded); timelines
//! line up on wall-clock intervals; rates are recomputed over the wall-clock span of all runs.

mod checks;
mod inert;
mod logs;
mod parts;
mod shards;
mod stability;
mod timeline;

use std::path::Path;

use anyhow::{bail, Result};

use crate::input;
use crate::limits::MAX_REPORT_FILE;
use crate::recorder::hdr;
use crate::report::provenance::Origin;
use crate::report::rounds::RoundOf;
use crate::report::{
    add_histograms, Adder, Document, Histograms, InFlight, RateReport, Spread, Summary,
    SCHEMA_VERSION,
};
use crate::usage_bail;
use timeline::merge_timelines;

/// Reads a `--json` report, the `what` of the command line (e.g. "report to merge"), and
/// rebuilds its histograms. Anything but an h2load-rs report of this schema is a usage error.
pub(crate) fn load(path: &Path, what: &str) -> Result<Document> {
    let text = input::read(path, what, MAX_REPORT_FILE)?;
    let document: Document = match serde_json::from_slice(&inert::inert(&text)) {
        Ok(document) => document,
        Err(error) => usage_bail!(
            "'{}' is not an h2load-rs JSON report: {error}",
            path.display()
        ),
    };
    prepare(document, path.display().to_string())
}

/// Reads what `merge` is given: a `--json` report, or a log holding several (`kubectl logs` of a
/// Job's pods that wrote `--json -`, with their other lines), from a file or `-` (standard
/// input); each report is named by where it was found. Also a sentence for each object in a log
/// that looked like a report and could not be read: the caller says so, and fails.
pub(crate) fn load_all(path: &Path) -> Result<(Vec<Document>, Vec<String>)> {
    const WHAT: &str = "report to merge";
    let name = path.display().to_string();
    let text = if name == "-" {
        input::read_stdin(WHAT, MAX_REPORT_FILE)?
    } else {
        input::read(path, WHAT, MAX_REPORT_FILE)?
    };
    reports_from(&text, &name)
}

/// The reports in `text`, read from `name`: one report, or a log holding several (see
/// [`load_all`]).
pub(crate) fn reports_from(text: &[u8], name: &str) -> Result<(Vec<Document>, Vec<String>)> {
    let name = name.to_owned();
    if let Ok(document) = serde_json::from_slice::<Document>(&inert::inert(text)) {
        return Ok((vec![prepare(document, name)?], Vec::new()));
    }
    let found = logs::reports_in(text);
    if found.reports.is_empty() && found.unreadable.is_empty() {
        // The error of the whole as one report says best what is wrong with a file meant as one.
        if let Err(error) = serde_json::from_slice::<Document>(text) {
            usage_bail!("'{name}' is not an h2load-rs JSON report, nor a log holding any: {error}");
        }
    }
    let documents = found
        .reports
        .into_iter()
        .map(|(line, document)| prepare(document, format!("{name}:{line}")))
        .collect::<Result<Vec<_>>>()?;
    let mut unreadable: Vec<String> = found
        .unreadable
        .into_iter()
        .map(|sentence| format!("{name}: {sentence}"))
        .collect();
    if found.more_unreadable > 0 {
        unreadable.push(format!(
            "{name}: and {} more objects that looked like reports could not be read",
            found.more_unreadable
        ));
    }
    Ok((documents, unreadable))
}

/// Checks a parsed report read from `source` and rebuilds its histograms.
fn prepare(mut document: Document, source: String) -> Result<Document> {
    if document.schema_version != SCHEMA_VERSION {
        usage_bail!(
            "'{source}' has schema_version {}; this h2load-rs reads {SCHEMA_VERSION}",
            document.schema_version
        );
    }
    document.source = source;
    for cell in &mut document.cells {
        checks::check_shard(cell, &document.source)?;
        let latency = &cell.latency;
        let histograms = || -> Result<Histograms> {
            Ok(Histograms {
                request: hdr::from_base64(&latency.request.hdr)?,
                service: latency
                    .service
                    .as_ref()
                    .map(|service| hdr::from_base64(&service.hdr))
                    .transpose()?,
                connect: hdr::from_base64(&latency.connect.hdr)?,
                ttfb: hdr::from_base64(&latency.ttfb.hdr)?,
            })
        };
        cell.histograms = match histograms() {
            Ok(histograms) => histograms,
            Err(error) => usage_bail!(
                "'{}' is not an h2load-rs JSON report: cell {} has a broken histogram ({error:#})",
                document.source,
                cell.cell.index
            ),
        };
        let answered = check_totals(cell, &document.source)?;
        check_timeline(cell, &document.source, answered)?;
        checks::check_counters(cell, &document.source)?;
    }
    Ok(document)
}

/// The responses answered, as the checks' messages name them: the requests never sent are
/// `errored` but not `done`.
const ANSWERED: &str = "requests.done - (requests.errored - requests.never_sent)";

/// Refuses a cell whose histograms disagree with its counters: every response answered (`done`
/// less the `errored` requests that were sent) is one value of the response time, time to first
/// byte and service time histograms. A report edited by hand, or mangled, would otherwise merge
/// into figures that contradict each other. Returns the responses answered.
fn check_totals(cell: &Summary, source: &str) -> Result<u64> {
    let counters = &cell.requests.counters;
    let never_sent = cell.requests.never_sent;
    // `errored` counts the requests never sent too (as h2load does), and those are not `done`:
    // a run that never connected has more errored than done.
    let Some(sent_errored) = counters.errored.checked_sub(never_sent) else {
        usage_bail!(
            "'{source}': cell {}: requests.never_sent ({never_sent}) is more than requests.errored ({})",
            cell.cell.index,
            counters.errored
        );
    };
    let Some(answered) = counters.done.checked_sub(sent_errored) else {
        usage_bail!(
            "'{source}': cell {}: requests.errored less requests.never_sent ({sent_errored}) is more than requests.done ({})",
            cell.cell.index,
            counters.done
        );
    };
    let histograms = &cell.histograms;
    for (field, histogram) in [
        ("latency.request", Some(&histograms.request)),
        ("latency.ttfb", Some(&histograms.ttfb)),
        ("latency.service", histograms.service.as_ref()),
    ] {
        let Some(histogram) = histogram else { continue };
        let values = hdr::checked_len(histogram)?;
        if values != answered {
            usage_bail!(
                "'{source}': cell {}: {field}.hdr holds {values} values, but {ANSWERED} is {answered}",
                cell.cell.index
            );
        }
    }
    Ok(answered)
}

/// Refuses a cell whose timeline disagrees with itself or with the cell's `answered` responses:
/// each response completed in an interval is one value of that interval's response time, time to
/// first byte and service time histograms, and the intervals' completions are the responses
/// answered. Read without building the histograms, so a long timeline costs its size.
fn check_timeline(cell: &Summary, source: &str, answered: u64) -> Result<()> {
    let index = cell.cell.index;
    for interval in &cell.timeline.intervals {
        for (field, encoded) in [
            ("hdr", Some(&interval.hdr)),
            ("ttfb_hdr", Some(&interval.ttfb_hdr)),
            ("service_hdr", interval.service_hdr.as_ref()),
        ] {
            let Some(encoded) = encoded else { continue };
            let values =
                hdr::base64_bytes(encoded).and_then(|bytes| hdr::scan(&bytes, |_, _| Ok(())));
            match values {
                Ok(values) if values == interval.completed => {}
                Ok(values) => usage_bail!(
                    "'{source}': cell {index}: timeline interval {}: {field} holds {values} values, but its completed is {}",
                    interval.index,
                    interval.completed
                ),
                Err(error) => usage_bail!(
                    "'{source}' is not an h2load-rs JSON report: cell {index} has a broken histogram in timeline interval {} ({field}: {error:#})",
                    interval.index
                ),
            }
        }
    }
    let completed = (cell
        .timeline
        .intervals
        .iter()
        .map(|interval| interval.completed))
    .try_fold(0u64, u64::checked_add);
    if completed != Some(answered) {
        let sum = completed.map_or("more than 2^64 - 1".to_owned(), |sum| sum.to_string());
        usage_bail!(
            "'{source}': cell {index}: the timeline intervals' completed add up to {sum}, but {ANSWERED} is {answered}"
        );
    }
    Ok(())
}

/// What a merge made: the merged report, and its warnings (also among each merged cell's).
pub(crate) struct Merged {
    pub(crate) document: Document,
    /// The sentence naming the `--shard` parts that are missing or were interrupted, if any.
    pub(crate) missing: Option<String>,
    /// With `--allow-mixed`, the sentence saying the reports were of different scenarios.
    pub(crate) mixed: Option<String>,
}

/// Merges `documents` cell by cell into one. They must come from the same scenario (same cells,
/// in order, and what [`checks::mixed`] compares), or, with `allow_mixed` (`--allow-mixed`),
/// are merged with a warning saying they did not.
pub(crate) fn merge(documents: Vec<Document>, allow_mixed: bool) -> Result<Merged> {
    let Some(first) = documents.first() else {
        bail!("nothing to merge");
    };
    // With --rounds, the parts must have run the same rounds in the same order: each run is
    // merged with the same run of the others.
    let shape = |document: &Document| -> Vec<(String, usize, Option<RoundOf>)> {
        document
            .cells
            .iter()
            .map(|cell| {
                (
                    cell.cell.protocol.clone(),
                    cell.cell.streams,
                    cell.cell.round,
                )
            })
            .collect()
    };
    if documents
        .iter()
        .any(|document| shape(document) != shape(first))
    {
        usage_bail!("the reports come from different scenarios (their cells differ), so they cannot be merged");
    }
    if documents
        .iter()
        .any(|document| document.rounds != first.rounds)
    {
        usage_bail!("the reports ran different --rounds (or --round-order, or --seed), so they cannot be merged");
    }
    let mixed = checks::mixed(&documents);
    if let Some(mixed) = &mixed {
        if !allow_mixed {
            usage_bail!("{mixed}: they are not parts of one scenario, so they are not merged (--allow-mixed merges them anyway, with a warning)");
        }
    }
    let mixed = mixed.map(|mixed| {
        format!("merged with --allow-mixed: {mixed}; these totals are no one scenario's")
    });
    // The merge is of one scenario: its cells say which, as each part did, so it merges again
    // with other parts of it.
    let wholes: Vec<_> = first.cells.iter().map(checks::whole).collect();
    let rounds = first.rounds.clone();
    let cell_count = first.cells.len();
    let sources: Vec<String> = documents
        .iter()
        .map(|document| document.source.clone())
        .collect();
    let missing = shards::incomplete(&documents, &sources)?;
    let merged_from = documents
        .iter()
        .map(|document| Origin {
            source: document.source.clone(),
            provenance: document.provenance.clone(),
            merged_from: document.merged_from.clone(),
        })
        .collect();
    let mut columns: Vec<Vec<Summary>> = (0..cell_count)
        .map(|_| Vec::with_capacity(documents.len()))
        .collect();
    for document in documents {
        for (column, cell) in columns.iter_mut().zip(document.cells) {
            column.push(cell);
        }
    }
    let mut cells = columns
        .into_iter()
        .map(|parts| merge_cells(parts, &sources))
        .collect::<Result<Vec<_>>>()?;
    for (cell, whole) in cells.iter_mut().zip(wholes) {
        // The whole of the parts there are: no one part of it.
        cell.settings.shard = None;
        cell.settings.whole = whole;
        cell.warnings.extend(missing.clone());
        cell.warnings.extend(mixed.clone());
    }
    let mut document = Document::new(cells);
    document.merged_from = merged_from;
    document.rounds = rounds;
    Ok(Merged {
        document,
        missing,
        mixed,
    })
}

/// One cell from the same cell of every run; `sources` names the runs' files. Each part of the
/// first run's summary merges the others' (`Summary::merge`); what only the whole decides is
/// worked out here: its wall-clock span and the rates over it, the timeline, the schedule, the
/// parts' figures and the intervals.
fn merge_cells(parts: Vec<Summary>, sources: &[String]) -> Result<Summary> {
    let start_ms = parts
        .iter()
        .map(|part| part.timeline.start_unix_ms)
        .min()
        .unwrap_or(0);
    let end_ms = parts
        .iter()
        .map(|part| part.timeline.start_unix_ms as f64 + part.elapsed_s * 1000.0)
        .fold(0.0, f64::max);
    let elapsed_s = ((end_ms - start_ms as f64) / 1000.0).max(0.0);
    let per_second = |count: u64| {
        if elapsed_s > 0.0 {
            count as f64 / elapsed_s
        } else {
            0.0
        }
    };
    let timeline = merge_timelines(&parts, sources)?;
    let rate = merge_rates(&parts, per_second)?;
    let stabilities: Vec<_> = parts.iter().map(|part| part.until_stable).collect();
    let part_figures = parts::of(&parts, sources);
    let per_client = pooled(
        &parts
            .iter()
            .map(|part| (part.cell.clients, &part.requests_per_client_per_s))
            .collect::<Vec<_>>(),
    );
    let mut parts = parts.into_iter();
    let mut merged = parts.next().expect("at least one part");
    for (part, source) in parts.zip(sources.iter().skip(1)) {
        merged.merge(part, &Adder { source })?;
    }
    let traffic = &mut merged.traffic;
    traffic.header_space_savings = if traffic.header_bytes_uncompressed > 0 {
        1.0 - traffic.header_bytes as f64 / traffic.header_bytes_uncompressed as f64
    } else {
        0.0
    };
    merged.cell.label = format!(
        "{} {}",
        merged.cell.protocol,
        crate::plan::setting_label(merged.cell.clients, merged.cell.streams, merged.cell.rate)
    );
    // The first part's cause, said only when the merged cell failed as a whole.
    if !crate::report::cause::failed(&merged) {
        merged.cause = None;
    }
    merged.elapsed_s = elapsed_s;
    merged.requests_per_s = per_second(merged.requests.counters.done);
    merged.bytes_per_s = per_second(merged.traffic.total_bytes);
    if let Some(events) = &mut merged.events {
        events.events_per_s = per_second(events.events);
    }
    merged.requests_per_client_per_s = per_client;
    merged.latency.summarize(&merged.histograms)?;
    merged.connections.per_s = per_second(merged.connections.measured);
    merged.timeline = timeline;
    merged.rate = rate;
    // The intervals of the whole, from the merged histograms and timeline.
    crate::report::annotate(&mut merged);
    merged.until_stable = stability::of(&stabilities, &merged);
    // A merge's own start lateness is its parts' (each in `parts`).
    merged.start_late_ms = None;
    merged.parts = Some(part_figures);
    merged.steadiness = crate::stats::steadiness::Steadiness::of(&merged.timeline);
    Ok(merged)
}

/// The schedule of the parts together (`--rate`: known only if every part had one): their
/// rates, in-flight requests and sends add up, the delays' histograms too, and the achieved rate
/// is over the whole's span (`per_second`).
fn merge_rates(parts: &[Summary], per_second: impl Fn(u64) -> f64) -> Result<Option<RateReport>> {
    let Some(rates) = parts
        .iter()
        .map(|part| part.rate.as_ref())
        .collect::<Option<Vec<_>>>()
    else {
        return Ok(None);
    };
    let delays = rates
        .iter()
        .map(|rate| hdr::from_base64(&rate.delay_hdr))
        .collect::<Result<Vec<_>>>()?;
    let requested = rates.iter().map(|rate| rate.requested_per_s).sum();
    // A report cannot make a sum wrap: that is bad input, like any count past 2^64 - 1.
    let past = |field: &str| {
        anyhow::Error::new(crate::error::UsageError(format!(
            "the reports' {field} add up past 2^64 - 1"
        )))
    };
    let done = (parts.iter().map(|part| part.requests.counters.done))
        .try_fold(0u64, u64::checked_add)
        .ok_or_else(|| past("requests.done"))?;
    // Concurrent runs: their requests in flight and their limits add up.
    let in_flight = InFlight {
        mean: rates.iter().map(|rate| rate.in_flight.mean).sum(),
        limit: (rates.iter().map(|rate| rate.in_flight.limit))
            .try_fold(0u64, u64::checked_add)
            .ok_or_else(|| past("rate.in_flight.limit"))?,
    };
    // Concurrent runs' schedules add up too (known only if every run's is).
    let overflow = || past("rate.scheduled or rate.missed");
    let scheduled = rates
        .iter()
        .map(|rate| rate.scheduled)
        .try_fold(Some(0u64), |sum, count| match (sum, count) {
            (Some(sum), Some(count)) => sum.checked_add(count).map(Some),
            _ => Some(None),
        })
        .ok_or_else(overflow)?;
    let missed = (rates.iter().map(|rate| rate.missed))
        .try_fold(0u64, u64::checked_add)
        .ok_or_else(overflow)?;
    Ok(Some(RateReport {
        scheduled,
        missed,
        ..RateReport::from_delays(
            requested,
            per_second(done),
            &add_histograms(delays.into_iter())?,
            in_flight,
        )
    }))
}

/// The spread of the union of several groups, from each group's size, mean and sd (exact for
/// min, max, mean and sd; the share within one sd is the groups' weighted average).
fn pooled(groups: &[(usize, &Spread)]) -> Spread {
    let total: usize = groups.iter().map(|(n, _)| *n).sum();
    if total == 0 {
        return Spread::default();
    }
    let weight = |n: usize| n as f64 / total as f64;
    let mean: f64 = groups.iter().map(|(n, s)| weight(*n) * s.mean).sum();
    let second_moment: f64 = groups
        .iter()
        .map(|(n, s)| weight(*n) * (s.sd * s.sd + s.mean * s.mean))
        .sum();
    Spread {
        min: groups
            .iter()
            .map(|(_, s)| s.min)
            .fold(f64::INFINITY, f64::min),
        max: groups
            .iter()
            .map(|(_, s)| s.max)
            .fold(f64::NEG_INFINITY, f64::max),
        mean,
        sd: (second_moment - mean * mean).max(0.0).sqrt(),
        within_sd_pct: groups
            .iter()
            .map(|(n, s)| weight(*n) * s.within_sd_pct)
            .sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pooled_spread_is_exact_for_mean_and_sd() {
        // Groups {1, 3} and {5, 7, 9}: the union's mean is 5 and population sd is sqrt(8).
        let a = Spread {
            min: 1.0,
            max: 3.0,
            mean: 2.0,
            sd: 1.0,
            within_sd_pct: 100.0,
        };
        let b = Spread {
            min: 5.0,
            max: 9.0,
            mean: 7.0,
            sd: (8.0f64 / 3.0).sqrt(),
            within_sd_pct: 33.3,
        };
        let union = pooled(&[(2, &a), (3, &b)]);
        assert_eq!((union.min, union.max), (1.0, 9.0));
        assert!((union.mean - 5.0).abs() < 1e-12);
        assert!((union.sd - 8f64.sqrt()).abs() < 1e-12);
    }
}
