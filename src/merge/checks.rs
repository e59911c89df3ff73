//! What `merge` refuses in a report before adding it to others: a `--shard` that cannot exist,
//! request counters that contradict each other, and parts of different scenarios. A report is a
//! file anyone can edit; each of these would otherwise panic, abort on an allocation, or merge
//! into totals no run measured.

use anyhow::Result;
use serde_json::{json, Value};

use crate::plan::shard::{Shard, Whole, MAX_SHARDS};
use crate::report::{Document, Summary};
use crate::usage_bail;

/// The largest count a report may hold: 2^63 - 1. No run counts that far, and a count past it
/// is read as a negative number by tools built on signed integers (jq, JavaScript, SQL).
const MAX_COUNT: u64 = i64::MAX as u64;

/// Refuses a cell whose `--shard` is not one of a split `--shard` could make: the index from 1 to
/// the count, the count from 1 to [`MAX_SHARDS`].
pub(super) fn check_shard(cell: &Summary, source: &str) -> Result<()> {
    let Some(Shard { index, count }) = cell.settings.shard else {
        return Ok(());
    };
    if !(1..=MAX_SHARDS).contains(&count) || !(1..=count).contains(&index) {
        usage_bail!(
            "'{source}': cell {}: settings.shard {index}/{count} is no part of a split (the count runs from 1 to {MAX_SHARDS}, the index from 1 to the count)",
            cell.cell.index
        );
    }
    Ok(())
}

/// Refuses a cell whose request counters contradict each other: each is a subset of the one
/// before it (succeeded of done, done of started, started of total; timeout of errored, errored
/// of failed), and none reaches 2^63.
pub(super) fn check_counters(cell: &Summary, source: &str) -> Result<()> {
    let requests = &cell.requests;
    let counters = &requests.counters;
    let index = cell.cell.index;
    for (field, value) in [
        ("total", requests.total),
        ("started", counters.started),
        ("done", counters.done),
        ("succeeded", counters.succeeded),
        ("failed", counters.failed),
        ("errored", counters.errored),
        ("timeout", counters.timeout),
        ("never_sent", requests.never_sent),
        ("in_flight_at_stop", requests.in_flight_at_stop),
    ] {
        if value > MAX_COUNT {
            usage_bail!("'{source}': cell {index}: requests.{field} ({value}) is past 2^63 - 1, more than any run counts");
        }
    }
    for ((part, part_value), (whole, whole_value)) in [
        (("succeeded", counters.succeeded), ("done", counters.done)),
        (("done", counters.done), ("started", counters.started)),
        (("started", counters.started), ("total", requests.total)),
        (("timeout", counters.timeout), ("errored", counters.errored)),
        (("errored", counters.errored), ("failed", counters.failed)),
    ] {
        if part_value > whole_value {
            usage_bail!("'{source}': cell {index}: requests.{part} ({part_value}) is more than requests.{whole} ({whole_value})");
        }
    }
    Ok(())
}

/// What identifies the scenario a cell ran, the same in every part of it: protocol, method,
/// URLs (or input file), the h2load-rs version, and the whole scenario's `-c`, `-n` and rate (a
/// part's `settings.whole`; a whole run's own figures). Not its length: a timed run's is what it
/// ran (`--until-stable` stops each part on its own), and the streams are the cells' shape,
/// compared before.
fn scenario(document: &Document, cell: &Summary) -> Value {
    let settings = &cell.settings;
    // A part written before parts recorded their whole: its share tells nothing.
    let whole = whole(cell).map_or(Value::Null, |whole| json!(whole));
    json!({
        "protocol": cell.cell.protocol,
        "method": settings.method,
        "URLs": settings.urls,
        "input file": settings.input_file,
        "h2load-rs version": document.provenance.version,
        "-c, -n and rate": whole,
    })
}

/// The whole scenario's `-c`, `-n` and rate that `cell` ran: a part's or a merge's
/// `settings.whole`, or a whole run's own figures (`None` for a part written before parts
/// recorded it).
pub(super) fn whole(cell: &Summary) -> Option<Whole> {
    let settings = &cell.settings;
    match (settings.shard, settings.whole) {
        (_, Some(whole)) => Some(whole),
        (None, None) => Some(Whole {
            clients: settings.clients as u64,
            requests: settings.requests,
            rate_per_s: cell.cell.rate,
        }),
        (Some(_), None) => None,
    }
}

/// How the reports' scenarios differ, if they do: the first report that differs from the first
/// one, in which cell, and in what.
pub(super) fn mixed(documents: &[Document]) -> Option<String> {
    let first = documents.first()?;
    documents[1..].iter().find_map(|document| {
        first
            .cells
            .iter()
            .zip(&document.cells)
            .find_map(|(mine, theirs)| {
                let (Value::Object(mine_key), Value::Object(their_key)) =
                    (scenario(first, mine), scenario(document, theirs))
                else {
                    return None;
                };
                let differ: Vec<&str> = mine_key
                    .iter()
                    .filter(|(key, value)| their_key.get(key.as_str()) != Some(value))
                    .map(|(key, _)| key.as_str())
                    .collect();
                (!differ.is_empty()).then(|| {
                    format!(
                        "'{}' ran another scenario than '{}' (cell {}: they differ in {})",
                        document.source,
                        first.source,
                        mine.cell.index,
                        differ.join(", ")
                    )
                })
            })
    })
}
