//! Which parts of a sharded scenario (`--shard I/N`) a merge holds. Parts of different splits, a
//! part given twice and whole runs mixed with parts are refused; a part that is missing (its
//! machine or pod died before writing its report) or that was interrupted (its pod deleted or
//! evicted: SIGTERM, and the report of what it ran) is named, never a silently smaller total.

use anyhow::Result;

use crate::plan::shard::Shard;
use crate::report::Document;
use crate::usage_bail;

/// The parts of `documents` (by their first cell's `settings.shard`; `sources` names them) that
/// are missing or were interrupted, as a sentence for the merged report; `None` when they are
/// whole runs or every part is there and ran whole.
pub(super) fn incomplete(documents: &[Document], sources: &[String]) -> Result<Option<String>> {
    let shards: Vec<Option<Shard>> = documents
        .iter()
        .map(|document| document.cells.first().and_then(|cell| cell.settings.shard))
        .collect();
    let Some(count) = shards.iter().flatten().map(|shard| shard.count).next() else {
        return Ok(None);
    };
    let mut seen: Vec<Option<&str>> = vec![None; usize::try_from(count).unwrap_or(usize::MAX)];
    for (shard, source) in shards.iter().zip(sources) {
        let Some(shard) = shard else {
            usage_bail!("{source} is a whole run, the others parts of a --shard split: merge the parts alone");
        };
        if shard.count != count {
            usage_bail!(
                "{source} is shard {shard}, the others parts of {count}: the reports come from different splits"
            );
        }
        let slot = &mut seen[(shard.index - 1) as usize];
        if let Some(first) = slot.replace(source) {
            usage_bail!("shard {shard} is in two reports, {first} and {source}");
        }
    }
    let absent: Vec<String> = seen
        .iter()
        .enumerate()
        .filter(|(_, source)| source.is_none())
        .map(|(index, _)| format!("{}/{count}", index + 1))
        .collect();
    let mut cut_short: Vec<(u64, &str)> = documents
        .iter()
        .zip(&shards)
        .zip(sources)
        .filter(|((document, _), _)| document.cells.iter().any(|cell| cell.interrupted))
        .filter_map(|((_, shard), source)| shard.map(|shard| (shard.index, source.as_str())))
        .collect();
    cut_short.sort_unstable();
    let mut sentences = Vec::new();
    if !absent.is_empty() {
        sentences.push(format!(
            "shard{} {} missing: these totals lack {} part of the load (a part of the scenario that never reported)",
            plural(absent.len()),
            absent.join(", "),
            if absent.len() == 1 { "its" } else { "their" }
        ));
    }
    if !cut_short.is_empty() {
        let named: Vec<String> = cut_short
            .iter()
            .map(|(index, source)| format!("{index}/{count} ({source})"))
            .collect();
        sentences.push(format!(
            "shard{} {} interrupted: these totals lack the rest of {} part of the load (stopped by a signal before it ran all of it)",
            plural(cut_short.len()),
            named.join(", "),
            if cut_short.len() == 1 { "its" } else { "their" }
        ));
    }
    Ok((!sentences.is_empty()).then(|| sentences.join("; ")))
}

fn plural(count: usize) -> &'static str {
    if count == 1 {
        ""
    } else {
        "s"
    }
}
