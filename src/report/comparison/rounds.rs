//! `--rounds N`: each cell's comparison row across its rounds, and its tables. One run's intervals (batch means over its
//! own timeline) cannot see what changes from one run to the next (the server's state, where the
//! scheduler put the threads, the CPU's clock, which connections landed where); run again, a
//! figure moves by more than its interval said. So with several rounds the comparison's figures
//! are the mean of the rounds' values, and their 95% interval is Student's t over those values:
//! the spread of whole runs, within-run noise included, measured at the level where it is
//! (Kalibera and Jones, "Rigorous Benchmarking in Reasonable Time", 2013). A ratio between two
//! cells is taken round by round (the rounds are interleaved, so the two runs of a round share
//! their moment) and its interval comes from those paired ratios. One round is no spread: it gets
//! no interval.

use super::{EventFigures, Row};
use crate::report::rounds::{RoundFigures, RoundOf};
use crate::stats::confidence::{Bounds, Evidence, IntervalKind, NoInterval};
use crate::stats::rounds::{mean_interval, mean_interval_floored};

/// The rows of a sweep run in rounds: `runs` holds one row per run, each with its `round` set
/// (see [`Row::round`]) and no ratio; the result has one row per cell of the sweep, in the sweep's
/// order, its figures the rounds' means with their intervals, its rounds listed.
pub(crate) fn combine(runs: Vec<(RoundOf, Row)>) -> Vec<Row> {
    let cells = runs.iter().map(|(of, _)| of.cell).max().unwrap_or(0);
    let mut combined: Vec<Row> = (1..=cells)
        .filter_map(|cell| {
            let rounds: Vec<&Row> = runs
                .iter()
                .filter(|(of, _)| of.cell == cell)
                .map(|(_, row)| row)
                .collect();
            let numbers: Vec<usize> = runs
                .iter()
                .filter(|(of, _)| of.cell == cell)
                .map(|(of, _)| of.round)
                .collect();
            (!rounds.is_empty()).then(|| one_cell(cell, &rounds, &numbers))
        })
        .collect();
    let firsts: Vec<(usize, usize)> =
        combined
            .iter()
            .fold(Vec::new(), |mut firsts: Vec<(usize, usize)>, row| {
                if !firsts.iter().any(|(level, _)| *level == row.level) {
                    firsts.push((row.level, row.cell));
                }
                firsts
            });
    let snapshot = combined.clone();
    for row in &mut combined {
        let Some(first) = firsts
            .iter()
            .find(|(level, _)| *level == row.level)
            .and_then(|(_, cell)| snapshot.iter().find(|other| other.cell == *cell))
        else {
            continue;
        };
        if first.cell == row.cell {
            continue;
        }
        // Paired by round: a round that only one of them finished says nothing of the ratio.
        let mut ratios = Vec::new();
        let mut errors = Vec::new();
        for figures in &mut row.rounds {
            let theirs = first
                .rounds
                .iter()
                .find(|other| other.round == figures.round);
            figures.ratio = theirs
                .filter(|theirs| theirs.requests_per_s > 0.0)
                .map(|theirs| figures.requests_per_s / theirs.requests_per_s);
            ratios.extend(figures.ratio);
            // A ratio's relative error: both rates' relative errors in quadrature.
            if let (Some(ratio), Some(theirs)) = (figures.ratio, theirs) {
                if let (Some(mine), Some(their)) = (figures.rate_error, theirs.rate_error) {
                    if figures.requests_per_s > 0.0 {
                        errors.push(
                            ratio
                                * (mine / figures.requests_per_s)
                                    .hypot(their / theirs.requests_per_s),
                        );
                    }
                }
            }
        }
        let (mean, bounds) = mean_interval_floored(&ratios, &errors);
        row.ratio = Some((format!("{}/{}", row.protocol, first.protocol), mean));
        row.ratio_ci = bounds.map(at_least_zero);
        row.ratio_ci_kind = bounds.map(|_| IntervalKind::AcrossRounds);
        row.ratio_ci_reason = bounds.is_none().then(|| too_few_rounds(ratios.len()));
    }
    combined
}

/// Why a figure across `rounds` rounds has no interval: a t-interval needs two.
fn too_few_rounds(rounds: usize) -> NoInterval {
    NoInterval {
        too_few: Evidence::Rounds,
        n: rounds as u64,
        needed: 2,
    }
}

/// The standard error of a run's rate, from its 95% interval (batch means: close to normal).
fn rate_error(row: &Row) -> Option<f64> {
    let bounds = row.requests_per_s_ci?;
    Some((bounds.ci_high? - bounds.ci_low) / (2.0 * 1.96))
}

/// `bounds` with its lower end no lower than zero.
fn at_least_zero(bounds: Bounds<f64>) -> Bounds<f64> {
    Bounds {
        ci_low: bounds.ci_low.max(0.0),
        ci_high: bounds.ci_high,
    }
}

/// One cell's row from its rounds' rows (`numbers` are their rounds).
fn one_cell(cell: usize, rounds: &[&Row], numbers: &[usize]) -> Row {
    let first = rounds[0];
    let of =
        |figure: fn(&Row) -> f64| -> Vec<f64> { rounds.iter().map(|row| figure(row)).collect() };
    let mean = |figure: fn(&Row) -> f64| -> f64 { mean_interval(&of(figure)).0 };
    // A percentile's interval across rounds, when every round's run could estimate it (a p99 of
    // 50 requests a round is no better known for being measured five times over).
    let latency = |index: usize, figure: fn(&Row) -> f64| -> (u64, Option<Bounds<u64>>) {
        let (mean, bounds) = mean_interval(&of(figure));
        let micros = |value: f64| value.max(0.0).round() as u64;
        let estimable = rounds
            .iter()
            .all(|row| row.percentiles_ci.is_some_and(|all| all[index].is_some()));
        let bounds = bounds.filter(|_| estimable).map(|bounds| Bounds {
            ci_low: micros(bounds.ci_low),
            ci_high: bounds.ci_high.map(micros),
        });
        (micros(mean), bounds)
    };
    let errors: Vec<f64> = rounds.iter().filter_map(|row| rate_error(row)).collect();
    let (requests_per_s, requests_per_s_ci) =
        mean_interval_floored(&of(|row| row.requests_per_s), &errors);
    let (failed_percent, failed_percent_ci) = mean_interval(&of(|row| row.failed_percent));
    // A rate or a share below zero is no value it could have.
    let (requests_per_s_ci, failed_percent_ci) = (
        requests_per_s_ci.map(at_least_zero),
        failed_percent_ci.map(at_least_zero),
    );
    let (p50_us, p50) = latency(0, |row| row.p50_us as f64);
    let (p90_us, p90) = latency(1, |row| row.p90_us as f64);
    let (p99_us, p99) = latency(2, |row| row.p99_us as f64);
    let (p99_9_us, p99_9) = latency(3, |row| row.p99_9_us as f64);
    Row {
        cell,
        protocol: first.protocol.clone(),
        clients: first.clients,
        streams: first.streams,
        rate: first.rate,
        level: first.level,
        requests_per_s,
        requests_per_s_ci,
        requests_per_s_ci_reason: requests_per_s_ci
            .is_none()
            .then(|| too_few_rounds(rounds.len())),
        megabytes_per_s: mean(|row| row.megabytes_per_s),
        gigabits_per_s: mean(|row| row.gigabits_per_s),
        p50_us,
        p90_us,
        p99_us,
        p99_9_us,
        max_us: rounds.iter().map(|row| row.max_us).max().unwrap_or(0),
        percentiles_ci: (rounds.len() > 1).then_some([p50, p90, p99, p99_9]),
        errors: rounds.iter().map(|row| row.errors).sum(),
        failed_percent,
        failed_percent_ci,
        connections: rounds.iter().map(|row| row.connections).sum(),
        generator_cpu_percent: mean(|row| row.generator_cpu_percent),
        generator_limited: rounds.iter().any(|row| row.generator_limited),
        target_cpu_percent: first
            .target_cpu_percent
            .map(|_| mean(|row| row.target_cpu_percent.unwrap_or(0.0))),
        target_rss_peak_kib: rounds
            .iter()
            .filter_map(|row| row.target_rss_peak_kib)
            .max(),
        ratio: None,
        ratio_ci: None,
        ratio_ci_kind: None,
        ratio_ci_reason: None,
        // --rounds does not search capacities (it conflicts with --find-max).
        capacity: None,
        capacity_ratio: None,
        // The rounds' means, figure by figure.
        events: first.events.map(|_| {
            let events = |figure: fn(&EventFigures) -> f64| {
                let values: Vec<f64> = (rounds.iter())
                    .map(|row| row.events.as_ref().map_or(0.0, figure))
                    .collect();
                mean_interval(&values).0
            };
            let micros = |figure: fn(&EventFigures) -> u64| {
                let values: Vec<f64> = (rounds.iter())
                    .map(|row| row.events.as_ref().map_or(0, figure) as f64)
                    .collect();
                mean_interval(&values).0.round() as u64
            };
            EventFigures {
                events_per_s: events(|events| events.events_per_s),
                first_event_p50_us: micros(|events| events.first_event_p50_us),
                first_event_p99_us: micros(|events| events.first_event_p99_us),
                event_gap_p50_us: micros(|events| events.event_gap_p50_us),
                event_gap_p99_us: micros(|events| events.event_gap_p99_us),
            }
        }),
        rounds: rounds
            .iter()
            .zip(numbers)
            .map(|(row, &round)| RoundFigures {
                round,
                requests_per_s: row.requests_per_s,
                p50_us: row.p50_us,
                p90_us: row.p90_us,
                p99_us: row.p99_us,
                p99_9_us: row.p99_9_us,
                failed_percent: row.failed_percent,
                ratio: None,
                rate_error: rate_error(row),
            })
            .collect(),
    }
}

/// Past this many rounds a table shows the lowest, median and highest round instead of each.
const LISTED_ROUNDS: usize = 8;

/// The rounds table for people (text, Markdown, HTML): per cell, each round's requests per second
/// and their spread, and each round's ratio to the level's first cell; `None` without rounds.
pub(crate) fn table(rows: &[Row]) -> Option<(Vec<String>, Vec<Vec<String>>)> {
    let most = rows.iter().map(|row| row.rounds.len()).max()?;
    if most == 0 {
        return None;
    }
    let listed = most <= LISTED_ROUNDS;
    let mut titles: Vec<String> = ["#", "protocol", "c", "m"].map(str::to_owned).to_vec();
    if listed {
        titles.extend((1..=most).map(|round| format!("r{round} req/s")));
    } else {
        titles.extend(["lowest req/s", "median req/s", "highest req/s"].map(str::to_owned));
    }
    titles.extend(["spread", "ratio by round"].map(str::to_owned));
    let lines = rows
        .iter()
        .map(|row| {
            let mut line = row.key_columns();
            let mut rates: Vec<f64> = row
                .rounds
                .iter()
                .map(|round| round.requests_per_s)
                .collect();
            if listed {
                line.extend(rates.iter().map(|rate| format!("{rate:.1}")));
                line.extend((rates.len()..most).map(|_| String::new()));
            } else {
                rates.sort_by(f64::total_cmp);
                let at = |share: f64| {
                    rates
                        .get(((rates.len().saturating_sub(1)) as f64 * share).round() as usize)
                        .map_or_else(String::new, |rate| format!("{rate:.1}"))
                };
                line.extend([at(0.0), at(0.5), at(1.0)]);
            }
            line.push(spread(&rates).map_or_else(String::new, |spread| format!("{spread:.1}%")));
            let ratios: Vec<String> = row
                .rounds
                .iter()
                .filter_map(|round| round.ratio)
                .map(|ratio| format!("{ratio:.2}"))
                .collect();
            line.push(match ratios.len() {
                0 => String::new(),
                count if count <= LISTED_ROUNDS => ratios.join(" "),
                count => format!("{count} ratios (see the JSON)"),
            });
            line
        })
        .collect();
    Some((titles, lines))
}

/// The rounds' spread: (highest − lowest) / mean, in percent; none from fewer than two.
fn spread(rates: &[f64]) -> Option<f64> {
    let (low, high) = rates
        .iter()
        .fold((f64::MAX, f64::MIN), |(low, high), &rate| {
            (low.min(rate), high.max(rate))
        });
    let mean = rates.iter().sum::<f64>() / rates.len() as f64;
    (rates.len() > 1 && mean > 0.0).then(|| 100.0 * (high - low) / mean)
}

/// The rounds as CSV columns, appended to the comparison's row of each cell: each round's
/// requests per second, then each round's ratio. Empty without rounds.
pub(crate) fn columns(rows: &[Row]) -> (Vec<String>, Vec<Vec<String>>) {
    let most = rows.iter().map(|row| row.rounds.len()).max().unwrap_or(0);
    let mut titles: Vec<String> = (1..=most)
        .map(|round| format!("round {round} req/s"))
        .collect();
    titles.extend((1..=most).map(|round| format!("round {round} ratio")));
    let lines = rows
        .iter()
        .map(|row| {
            let nth = |round: usize| row.rounds.iter().find(|figures| figures.round == round);
            let mut line: Vec<String> = (1..=most)
                .map(|round| nth(round).map_or_else(String::new, |f| f.requests_per_s.to_string()))
                .collect();
            line.extend((1..=most).map(|round| {
                nth(round)
                    .and_then(|figures| figures.ratio)
                    .map_or_else(String::new, |ratio| ratio.to_string())
            }));
            line
        })
        .collect();
    (titles, lines)
}
