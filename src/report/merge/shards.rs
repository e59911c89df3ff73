//! Which parts of a sharded scenario (`--shard I/N`) a merge holds. Parts of different splits, a
//! part given twice and whole runs mixed with parts are refused; a part that is missing (its
//! machine or pod died before writing its report) is named, never a silently smaller total.

use anyhow::Result;

use crate::cli::shard::Shard;
use crate::report::Document;
use crate::usage_bail;

/// The parts of `documents` (by their first cell's `settings.shard`; `sources` names them) that
/// are missing, as a sentence for the merged report; `None` when they are whole runs or every
/// part is there.
pub(super) fn missing(documents: &[Document], sources: &[String]) -> Result<Option<String>> {
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
    Ok((!absent.is_empty()).then(|| {
        format!(
            "shard{} {} missing: these totals lack {} part of the load (a part of the scenario that never reported)",
            if absent.len() == 1 { "" } else { "s" },
            absent.join(", "),
            if absent.len() == 1 { "its" } else { "their" }
        )
    }))
}
