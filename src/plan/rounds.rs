//! `--rounds N`: the order in which the cells of a sweep run, round after round. Round 1 runs them
//! in the sweep's order; each later round in another (the reverse of the round before, or a
//! seeded shuffle), so a drift over the run (a server warming up, a CPU throttling, a neighbour
//! starting) falls on every cell alike instead of on whichever runs last. This is the design of
//! careful benchmark comparisons: repeat at the level where the variance is (Kalibera and Jones,
//! "Rigorous Benchmarking in Reasonable Time", 2013), interleaved so the repeats are paired.

use super::template::Rng;

/// Values of `--round-order`: how the cells of a round after the first are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum RoundOrder {
    /// The reverse of the round before: a drift over the run hits every cell alike.
    #[default]
    Alternate,
    /// A new order each round, drawn from --seed.
    Shuffle,
}

impl RoundOrder {
    /// Its name in the report and in `--round-order`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            RoundOrder::Alternate => "alternate",
            RoundOrder::Shuffle => "shuffle",
        }
    }
}

/// One run of the sweep: the cell (0-based, in the sweep's order) in a round (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Run {
    /// The round it belongs to, 1-based.
    pub(crate) round: usize,
    /// The cell it repeats, 0-based in the sweep's order.
    pub(crate) cell: usize,
}

/// Every run of `cells` cells over `rounds` rounds, in the order they run.
pub(crate) fn runs(cells: usize, rounds: usize, order: RoundOrder, seed: u64) -> Vec<Run> {
    let mut sequence: Vec<usize> = (0..cells).collect();
    // Its own stream of the seed: the URLs and values a request draws use parts 0.. and
    // PATH_CHOICE of each request number; this one is apart from all of them.
    let mut rng = Rng::for_request(seed, u64::MAX, u64::MAX - 1);
    let mut all = Vec::with_capacity(cells * rounds);
    for round in 1..=rounds {
        if round > 1 {
            match order {
                RoundOrder::Alternate => sequence.reverse(),
                RoundOrder::Shuffle => shuffle(&mut sequence, &mut rng),
            }
        }
        all.extend(sequence.iter().map(|&cell| Run { round, cell }));
    }
    all
}

/// Fisher–Yates.
fn shuffle(items: &mut [usize], rng: &mut Rng) {
    for last in (1..items.len()).rev() {
        let pick = rng.below(last as u64 + 1) as usize;
        items.swap(last, pick);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells_of(runs: &[Run], round: usize) -> Vec<usize> {
        runs.iter()
            .filter(|run| run.round == round)
            .map(|run| run.cell)
            .collect()
    }

    #[test]
    fn alternate_reverses_each_round() {
        let runs = runs(3, 3, RoundOrder::Alternate, 7);
        assert_eq!(runs.len(), 9);
        assert_eq!(cells_of(&runs, 1), [0, 1, 2]);
        assert_eq!(cells_of(&runs, 2), [2, 1, 0]);
        assert_eq!(cells_of(&runs, 3), [0, 1, 2]);
    }

    #[test]
    fn one_round_is_the_sweep_itself() {
        let runs = runs(4, 1, RoundOrder::Shuffle, 1);
        assert_eq!(cells_of(&runs, 1), [0, 1, 2, 3]);
    }

    #[test]
    fn shuffle_runs_every_cell_once_a_round_and_repeats_with_its_seed() {
        let first = runs(6, 20, RoundOrder::Shuffle, 42);
        for round in 1..=20 {
            let mut cells = cells_of(&first, round);
            cells.sort_unstable();
            assert_eq!(cells, [0, 1, 2, 3, 4, 5], "round {round}");
        }
        assert_eq!(first, runs(6, 20, RoundOrder::Shuffle, 42));
        // Some later round differs from the sweep's order: 19 identity shuffles of 6 cells
        // would be a chance of 720^-19.
        assert!((2..=20).any(|round| cells_of(&first, round) != [0, 1, 2, 3, 4, 5]));
        assert_ne!(first, runs(6, 20, RoundOrder::Shuffle, 43));
    }
}
