//! A sweep's capacities side by side: each cell's against its concurrency level's first
//! ([`level_ratio`], as the comparison table shows it) and the lines printed after the sweep.

use super::answer::{ratio, CapacityRatio};
use super::{Answer, Capacity};
use crate::report::Summary;

/// `h2c/h1 = 1.06 (1.01–1.09)`: `cell`'s capacity over its level's first cell's in `cells`, from
/// the two answers; `None` for the first cell itself, a cell without a search, and where
/// [`ratio`] gives none.
pub(crate) fn level_ratio(cells: &[Summary], cell: &Summary) -> Option<CapacityRatio> {
    let first = cells
        .iter()
        .find(|other| other.cell.level == cell.cell.level)?;
    if first.cell.index == cell.cell.index {
        return None;
    }
    ratio(
        format!("{}/{}", cell.cell.protocol, first.cell.protocol),
        cell.capacity.as_ref()?,
        first.capacity.as_ref()?,
    )
}

/// After a sweep, one line per concurrency level that searched:
/// `capacity: h1 8,450 req/s (8,450–8,870) at p99<20ms; h2c 7,900 req/s (7,900–8,290), h2c/h1 =
/// 0.93 (0.89–0.98)`: the objectives once, each cell's answer, and each protocol's ratio to the
/// level's first from the two answers ([`level_ratio`], as the comparison table's). The level's
/// `c=… m=…` is named when the sweep has several levels.
pub(crate) fn sweep_lines(cells: &[Summary]) -> Vec<String> {
    let searched: Vec<(&Summary, &Capacity)> = cells
        .iter()
        .filter_map(|cell| Some((cell, cell.capacity.as_ref()?)))
        .collect();
    let levels = {
        let mut levels: Vec<usize> = searched.iter().map(|(cell, _)| cell.cell.level).collect();
        levels.dedup();
        levels
    };
    levels
        .iter()
        .map(|&level| {
            let at_level: Vec<_> = searched
                .iter()
                .filter(|(cell, _)| cell.cell.level == level)
                .collect();
            let (first, _) = at_level[0];
            let setting = match levels.len() {
                1 => String::new(),
                _ => format!(" c={} m={}", first.cell.clients, first.cell.streams),
            };
            let parts: Vec<String> = at_level
                .iter()
                .enumerate()
                .map(|(position, (cell, capacity))| {
                    let caveat = match (&capacity.answer, capacity.interrupted) {
                        (_, true) => " (interrupted)",
                        (Answer::Consistent { interval, .. }, false)
                            if interval.high.is_none() && capacity.limited_by_client =>
                        {
                            " (the client's ceiling: raise -c or -m)"
                        }
                        _ => "",
                    };
                    let rate = format!(
                        "{} {}{caveat}",
                        cell.cell.protocol,
                        capacity.answer.figure()
                    );
                    match (position, level_ratio(cells, cell)) {
                        (0, _) => format!("{rate} at {}", capacity.objectives.join(", ")),
                        (_, Some(ratio)) => format!("{rate}, {}", ratio.text()),
                        (_, None) => rate,
                    }
                })
                .collect();
            format!("capacity{setting}: {}", parts.join("; "))
        })
        .collect()
}
