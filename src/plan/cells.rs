//! The cells of a sweep: `-c`, `-m`, `--proto` and `--rate` lists expanded and scaled
//! (`--scale`, `--h2-multiplex`), and what each cell's rate and seed come to.

use anyhow::Result;

use super::inputs::{Inputs, Load};
use super::stages::{self, Stages};
use super::ProtoChoice;
use crate::limits::{MAX_CLIENTS, MAX_RATE, MAX_STREAMS};
use crate::usage_bail;

/// One cell of a run: a protocol at a concurrency level. A sweep is a list of cells.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct CellSpec {
    /// The protocol asked for (None: h2load's default for the URL's scheme).
    pub(crate) proto: Option<ProtoChoice>,
    /// Connections.
    pub(crate) clients: u64,
    /// Requests in flight per connection.
    pub(crate) streams: u64,
    /// Total requests per second (`--rate`), if paced.
    pub(crate) rate: Option<f64>,
    /// Which concurrency level of the sweep this cell belongs to (cells of one level are compared).
    pub(crate) level: usize,
}

impl CellSpec {
    /// Whether this cell needs a TLS target (`https://`); `target_tls` asks it of HTTP/1.1 cells too.
    pub(crate) fn needs_tls(&self, target_tls: bool) -> bool {
        match self.proto {
            Some(ProtoChoice::H2 | ProtoChoice::Auto | ProtoChoice::H3) => true,
            Some(ProtoChoice::H1) | None => target_tls,
            Some(ProtoChoice::H2c | ProtoChoice::H2cUpgrade) => false,
        }
    }
}

/// Expands `-c`, `-m` and `--proto` lists into cells, in the order they run: for each connection
/// count, for each stream count, every protocol. `first_file_url` is the first URL of the `-i`
/// file, which the caller has read and checked (it decides h2c for `--h2-multiplex`).
pub(crate) fn cells(inputs: &Inputs, first_file_url: Option<&str>) -> Vec<CellSpec> {
    let load = &inputs.load;
    let protocols: Vec<Option<ProtoChoice>> = if inputs.protocol.proto.is_empty() {
        vec![None]
    } else {
        inputs.protocol.proto.iter().copied().map(Some).collect()
    };
    let scale = load.scale.unwrap_or(1.0);
    let mut cells = Vec::new();
    let rates: Vec<Option<f64>> = if load.rate.is_empty() {
        vec![None]
    } else {
        load.rate.iter().copied().map(Some).collect()
    };
    let scaled_clients = scaled_levels(&load.clients, scale);
    for &clients in &scaled_clients {
        for (&streams, &rate) in load
            .max_concurrent_streams
            .iter()
            .flat_map(|m| rates.iter().map(move |r| (m, r)))
        {
            let level = cells.len() / protocols.len();
            for &proto in &protocols {
                let multiplexed =
                    inputs.protocol.h2_multiplex && speaks_h2(inputs, proto, first_file_url);
                let (clients, streams) = if multiplexed {
                    (1, clients * streams)
                } else {
                    (clients, streams)
                };
                cells.push(CellSpec {
                    proto,
                    clients,
                    streams,
                    rate,
                    level,
                });
            }
        }
    }
    cells
}

/// Whether a cell of `proto` speaks HTTP/2 for sure: `h2`, `h2c`, `h2c-upgrade`, or no `--proto`
/// where the default is h2c (http://, h2load's default, unless `--h1` or `-p http/1.1`). `auto`
/// (https:// by default) may end up as HTTP/1.1, so it is never multiplexed.
fn speaks_h2(inputs: &Inputs, proto: Option<ProtoChoice>, first_file_url: Option<&str>) -> bool {
    match proto {
        Some(ProtoChoice::H2 | ProtoChoice::H2c | ProtoChoice::H2cUpgrade) => true,
        // HTTP/3 multiplexes too, but --h2-multiplex is h2load's HTTP/2 option.
        Some(ProtoChoice::H1 | ProtoChoice::Auto | ProtoChoice::H3) => false,
        None => {
            let https = match inputs
                .target
                .urls
                .first()
                .map(String::as_str)
                .or(first_file_url)
            {
                Some(url) => url.starts_with("https://"),
                None => inputs.target.target_tls,
            };
            let protocol = &inputs.protocol;
            let default = protocol.default_proto.or(protocol.cleartext_proto);
            !https && matches!(default, None | Some(ProtoChoice::H2c))
        }
    }
}

/// A count multiplied by `--scale`, never below 1.
pub(super) fn scaled(count: u64, scale: f64) -> u64 {
    ((count as f64 * scale).round() as u64).max(1)
}

/// Sweep levels multiplied by `--scale`, kept apart: each distinct level is scaled, then raised
/// just above the next smaller one if scaling made them meet, so `-c 1,10,100 --scale 0.01` is
/// `1,2,3`, not `1,1,1`, and levels keep their order (equal levels stay equal).
fn scaled_levels(levels: &[u64], scale: f64) -> Vec<u64> {
    let mut distinct = levels.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    let mut previous = 0;
    let mapped: Vec<(u64, u64)> = distinct
        .into_iter()
        .map(|level| {
            previous = scaled(level, scale).max(previous + 1);
            (level, previous)
        })
        .collect();
    levels
        .iter()
        .map(|level| {
            mapped
                .iter()
                .find(|(original, _)| original == level)
                .map_or(*level, |(_, scaled)| *scaled)
        })
        .collect()
}

/// The seed of a run without `--seed`: drawn once per process, so every cell of a sweep shares it.
pub(super) fn run_seed(given: Option<u64>) -> u64 {
    static DRAWN: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    given.unwrap_or_else(|| {
        *DRAWN.get_or_init(|| {
            use std::hash::{BuildHasher, Hasher};
            std::collections::hash_map::RandomState::new()
                .build_hasher()
                .finish()
        })
    })
}

/// The flags' limits still hold for the cell once `--scale` and `--h2-multiplex` have been applied.
pub(super) fn check_cell_limits(cell: &CellSpec) -> Result<()> {
    if cell.clients > MAX_CLIENTS {
        usage_bail!(
            "--scale makes -c {} connections, more than the limit of {MAX_CLIENTS}",
            cell.clients
        );
    }
    if cell.streams > MAX_STREAMS {
        usage_bail!(
            "--h2-multiplex puts -c × -m = {} streams on one connection, more than the limit of {MAX_STREAMS}",
            cell.streams
        );
    }
    Ok(())
}

/// The cell's ramp, if `--stages` is given: from `--rate` (a single one) or 0.
pub(super) fn stages_plan(load: &Load, cell: &CellSpec) -> Result<Option<Stages>> {
    if load.stages.is_empty() {
        return Ok(None);
    }
    if load.rate.len() > 1 {
        usage_bail!("--rate with --stages is the ramp's starting rate: give one rate, not a list");
    }
    match Stages::new(cell.rate.unwrap_or(0.0), scaled_stages(load)) {
        Ok(stages) => Ok(Some(stages)),
        Err(problem) => usage_bail!("{problem}"),
    }
}

/// `--stages` with each stage's length multiplied by `--scale` (the rates stay: a scaled-down
/// ramp is a shorter one, not a gentler one).
pub(super) fn scaled_stages(load: &Load) -> Vec<stages::Stage> {
    let scale = load.scale.unwrap_or(1.0);
    load.stages
        .iter()
        .map(|stage| stages::Stage {
            duration: stage.duration.mul_f64(scale),
            ..*stage
        })
        .collect()
}

/// `--rps` × connections, within the rate limit.
pub(super) fn per_client_rate(per_client: f64, clients: usize) -> Result<f64> {
    let rate = per_client * clients as f64;
    if rate > MAX_RATE {
        usage_bail!("--rps {per_client} × {clients} connections is more than the limit of {MAX_RATE} requests/s");
    }
    Ok(rate)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::uring::probe::check;
    use crate::plan::build::build;
    use crate::plan::run_plan::StopRule;
    use clap::Parser;

    #[test]
    fn lists_expand_into_cells_in_order() {
        let cli = crate::cli::Cli::try_parse_from([
            "h2load-rs",
            "-c",
            "1,10",
            "--proto",
            "h1,h2c",
            "--h2-multiplex",
            "-n",
            "2x",
            "http://127.0.0.1:1/",
        ])
        .unwrap();
        let inputs = crate::app::inputs::from_flags(&cli.load);
        let cells = cells(&inputs, None);
        let shape: Vec<_> = cells
            .iter()
            .map(|c| (c.proto, c.clients, c.streams, c.level))
            .collect();
        assert_eq!(
            shape,
            [
                (Some(ProtoChoice::H1), 1, 1, 0),
                (Some(ProtoChoice::H2c), 1, 1, 0),
                (Some(ProtoChoice::H1), 10, 1, 1),
                (Some(ProtoChoice::H2c), 1, 10, 1),
            ]
        );
        let plan = build(&inputs, &cli.load.urls, &[], &cells[3], false, &check).unwrap();
        assert_eq!(
            plan.stop,
            StopRule::Requests(20),
            "2x of 1 connection × 10 streams"
        );
        assert_eq!(plan.protocol_label(), "h2c");
    }

    #[test]
    fn scaled_levels_stay_distinct_and_ordered() {
        assert_eq!(scaled_levels(&[1, 10, 100], 0.01), [1, 2, 3]);
        assert_eq!(scaled_levels(&[4, 16, 64], 0.01), [1, 2, 3]);
        assert_eq!(scaled_levels(&[100, 10, 1000], 0.1), [10, 1, 100]);
        assert_eq!(scaled_levels(&[10, 10, 20], 0.01), [1, 1, 2]);
        assert_eq!(scaled_levels(&[16000], 0.01), [160]);
        assert_eq!(scaled_levels(&[1, 2], 10.0), [10, 20]);
    }

    #[test]
    fn h2_multiplex_applies_to_the_default_protocol_of_http_urls() {
        let shape = |argv: &[&str]| {
            let cli = crate::cli::Cli::try_parse_from(
                ["h2load-rs", "-c", "4", "-m", "2", "--h2-multiplex"]
                    .iter()
                    .chain(argv),
            )
            .unwrap();
            let inputs = crate::app::inputs::from_flags(&cli.load);
            let cell = cells(&inputs, None)[0];
            (cell.clients, cell.streams)
        };
        assert_eq!(shape(&["http://127.0.0.1:1/"]), (1, 8));
        assert_eq!(shape(&[]), (1, 8), "the built-in target, cleartext");
        assert_eq!(shape(&["--h1", "http://127.0.0.1:1/"]), (4, 2));
        assert_eq!(shape(&["-p", "http/1.1", "http://127.0.0.1:1/"]), (4, 2));
        assert_eq!(
            shape(&["https://127.0.0.1:1/"]),
            (4, 2),
            "auto may be HTTP/1.1"
        );
    }
}
