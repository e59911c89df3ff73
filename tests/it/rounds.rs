//! `--rounds N`: the sweep run N times interleaved, each cell's figures and ratios across its
//! rounds, in every output; `--fail-if`, `diff`, `merge` and scenario files on such runs. (The
//! coverage of the intervals against reruns is a truth test: tests/truth/rounds.rs.)

use std::path::Path;

use serde_json::Value;

use crate::common::{assert_usage_error, h2load_rs, run_command};

/// The 95% t-interval of the mean of `values` (t for 2 degrees of freedom: 3 rounds), its
/// standard error at least the rounds' own (`errors`: each round's, where its run had one).
fn t_interval_of_three(values: &[f64], errors: &[f64]) -> (f64, f64, f64) {
    assert_eq!(values.len(), 3);
    let mean = values.iter().sum::<f64>() / 3.0;
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 2.0;
    let floor = errors.iter().map(|e| e * e).sum::<f64>() / errors.len().max(1) as f64;
    let half = 4.303 * (variance.max(floor) / 3.0).sqrt();
    (mean, mean - half, mean + half)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
}

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).to_str().unwrap().to_owned()
}

#[test]
fn rounds_run_every_cell_each_round_interleaved_and_compare_across_them() {
    let dir = tempfile::tempdir().unwrap();
    let run = h2load_rs(&[
        "--proto",
        "h1,h2c",
        "-n",
        "200",
        "--rounds",
        "3",
        "--csv",
        &path(dir.path(), "table.csv"),
        "--markdown",
        &path(dir.path(), "table.md"),
        "--html",
        &path(dir.path(), "report.html"),
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let json = &run.json;
    assert_eq!(json["rounds"]["count"], 3);
    assert_eq!(json["rounds"]["order"], "alternate");
    // Six runs, in the order they ran: h1 h2c, then h2c h1, then h1 h2c.
    let cells = json["cells"].as_array().unwrap();
    let order: Vec<(u64, u64, u64)> = cells
        .iter()
        .map(|cell| {
            (
                cell["cell"]["index"].as_u64().unwrap(),
                cell["cell"]["round"]["round"].as_u64().unwrap(),
                cell["cell"]["round"]["cell"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            (1, 1, 1),
            (2, 1, 2),
            (3, 2, 2),
            (4, 2, 1),
            (5, 3, 1),
            (6, 3, 2)
        ]
    );
    for cell in cells {
        assert_eq!(cell["requests"]["succeeded"], 200, "every run is whole");
        let protocol = cell["cell"]["protocol"].as_str().unwrap();
        let expected = if cell["cell"]["round"]["cell"] == 1 {
            "h1"
        } else {
            "h2c"
        };
        assert_eq!(protocol, expected);
    }
    // One row per cell of the sweep; its figures the rounds' means, its intervals across them.
    let rows = json["comparison"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let rate_of = |sweep_cell: u64, round: u64| -> f64 {
        cells
            .iter()
            .find(|cell| {
                cell["cell"]["round"]["cell"] == sweep_cell
                    && cell["cell"]["round"]["round"] == round
            })
            .unwrap()["requests_per_s"]
            .as_f64()
            .unwrap()
    };
    // A run's standard error of its rate, from its own interval (when it had one).
    let error_of = |sweep_cell: u64, round: u64| -> Option<f64> {
        let run = cells.iter().find(|cell| {
            cell["cell"]["round"]["cell"] == sweep_cell && cell["cell"]["round"]["round"] == round
        })?;
        let bounds = &run["requests_per_s_ci"];
        Some((bounds["ci_high"].as_f64()? - bounds["ci_low"].as_f64()?) / (2.0 * 1.96))
    };
    for (at, row) in rows.iter().enumerate() {
        let sweep_cell = at as u64 + 1;
        assert_eq!(row["cell"], sweep_cell);
        let rounds = row["rounds"].as_array().unwrap();
        assert_eq!(rounds.len(), 3);
        let rates: Vec<f64> = rounds
            .iter()
            .map(|round| round["requests_per_s"].as_f64().unwrap())
            .collect();
        for (round, rate) in rounds.iter().zip(&rates) {
            let number = round["round"].as_u64().unwrap();
            assert!(close(*rate, rate_of(sweep_cell, number)), "round {number}");
            assert_eq!(round["failed_percent"], 0.0);
        }
        let errors: Vec<f64> = (1..=3)
            .filter_map(|round| error_of(sweep_cell, round))
            .collect();
        let (mean, low, high) = t_interval_of_three(&rates, &errors);
        assert!(close(row["requests_per_s"].as_f64().unwrap(), mean));
        assert!(close(
            row["requests_per_s_ci"]["ci_low"].as_f64().unwrap(),
            low.max(0.0)
        ));
        assert!(close(
            row["requests_per_s_ci"]["ci_high"].as_f64().unwrap(),
            high
        ));
        assert_eq!(row["connections"], 3, "one connection a round");
        // 200 requests a round: p50 is estimable in every round, p99 (500 needed) in none, so
        // five rounds of it give no interval either.
        let percentiles = row["percentiles_ci"].as_array().unwrap();
        assert_eq!(percentiles.len(), 4);
        assert!(percentiles[0]["ci_low"].is_number(), "{percentiles:?}");
        assert!(percentiles[2].is_null(), "{percentiles:?}");
    }
    // The ratio: round by round, paired, then their mean and its interval.
    let ratios: Vec<f64> = rows[1]["rounds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|round| {
            let number = round["round"].as_u64().unwrap();
            let ratio = round["ratio"].as_f64().unwrap();
            assert!(close(ratio, rate_of(2, number) / rate_of(1, number)));
            ratio
        })
        .collect();
    let errors: Vec<f64> = (1..=3u64)
        .filter_map(|round| {
            let (mine, theirs) = (error_of(2, round)?, error_of(1, round)?);
            let (a, b) = (rate_of(2, round), rate_of(1, round));
            Some(a / b * (mine / a).hypot(theirs / b))
        })
        .collect();
    let (mean, low, high) = t_interval_of_three(&ratios, &errors);
    assert_eq!(rows[1]["ratio"][0], "h2c/h1");
    assert!(close(rows[1]["ratio"][1].as_f64().unwrap(), mean));
    assert!(close(
        rows[1]["ratio_ci"]["ci_low"].as_f64().unwrap(),
        low.max(0.0)
    ));
    assert!(close(
        rows[1]["ratio_ci"]["ci_high"].as_f64().unwrap(),
        high
    ));
    assert!(rows[0]["ratio"].is_null());

    // The text: a heading per run, the comparison across rounds, the rounds, the plain words.
    let stdout = &run.output.stdout;
    assert!(
        stdout.contains("=== round 2/3, cell 2/2 (run 3 of 6): h2c c=1 m=1"),
        "{stdout}"
    );
    assert!(
        stdout.contains("comparison of 2 cells over 3 rounds"),
        "{stdout}"
    );
    assert!(
        stdout.contains("rounds (spread: highest minus lowest, over the mean):"),
        "{stdout}"
    );
    assert!(stdout.contains("across 3 rounds"), "{stdout}");
    let first_rate = format!("{:.1}", rate_of(1, 1));
    let rounds_table = &stdout[stdout.find("rounds (spread").unwrap()..];
    assert!(rounds_table.contains(&first_rate), "{rounds_table}");

    // CSV: the rounds' columns after the comparison's; Markdown and HTML: the rounds table.
    let csv = std::fs::read_to_string(dir.path().join("table.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "{csv}");
    let titles: Vec<&str> = lines[0].split(',').collect();
    let column = |title: &str| titles.iter().position(|t| *t == title).unwrap();
    let second: Vec<&str> = lines[2].split(',').collect();
    for round in 1..=3u64 {
        let rate: f64 = second[column(&format!("round {round} req/s"))]
            .parse()
            .unwrap();
        assert!(close(rate, rate_of(2, round)));
        let ratio: f64 = second[column(&format!("round {round} ratio"))]
            .parse()
            .unwrap();
        assert!(close(ratio, rate_of(2, round) / rate_of(1, round)));
    }
    let markdown = std::fs::read_to_string(dir.path().join("table.md")).unwrap();
    assert!(
        markdown.contains(
            "| # | protocol | c | m | r1 req/s | r2 req/s | r3 req/s | spread | ratio by round |"
        ),
        "{markdown}"
    );
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(html.contains("<th>ratio by round</th>"));
    assert!(html.contains(&format!("<td>{first_rate}</td>")));
}

/// The cells of each round of a run, by the sweep's cell number.
fn orders(json: &Value) -> Vec<Vec<u64>> {
    let mut orders: Vec<Vec<u64>> = Vec::new();
    for cell in json["cells"].as_array().unwrap() {
        let round = cell["cell"]["round"]["round"].as_u64().unwrap() as usize;
        if orders.len() < round {
            orders.push(Vec::new());
        }
        orders[round - 1].push(cell["cell"]["round"]["cell"].as_u64().unwrap());
    }
    orders
}

#[test]
fn a_shuffle_runs_every_cell_once_a_round_and_its_seed_repeats_it() {
    let args = [
        "-c",
        "1,2,3",
        "-n",
        "20",
        "--rounds",
        "4",
        "--round-order",
        "shuffle",
        "--seed",
        "7",
        "-q",
    ];
    let first = h2load_rs(&args);
    assert_eq!(first.output.code, 0, "{}", first.output.stderr);
    assert_eq!(first.json["rounds"]["order"], "shuffle");
    assert_eq!(first.json["rounds"]["seed"], 7);
    let order = orders(&first.json);
    assert_eq!(order.len(), 4);
    assert_eq!(
        order[0],
        [1, 2, 3],
        "the first round runs the sweep's order"
    );
    for round in &order {
        let mut cells = round.clone();
        cells.sort_unstable();
        assert_eq!(cells, [1, 2, 3]);
    }
    let again = h2load_rs(&args);
    assert_eq!(orders(&again.json), order, "the same seed, the same order");
    // -q: one line per run.
    assert_eq!(
        first
            .output
            .stdout
            .lines()
            .filter(|l| l.contains(" done, "))
            .count(),
        12
    );
}

#[test]
fn fail_if_judges_each_cell_once_on_its_rounds() {
    // Every request fails: each of the 2 cells breaches once, not each of its 6 runs.
    let run = h2load_rs(&[
        "--proto",
        "h1,h2c",
        "-n",
        "50",
        "--rounds",
        "3",
        "--target-path",
        "/status/503",
        "--fail-if",
        "errors>50%",
        "--fail-if",
        "p99>1ms",
        "-q",
    ]);
    assert_eq!(run.output.code, 3, "{}", run.output.stderr);
    let breaches: Vec<&str> = run
        .output
        .stderr
        .lines()
        .filter(|line| line.starts_with("threshold breached"))
        .collect();
    assert_eq!(
        breaches,
        [
            "threshold breached: errors 100.00% > 50% (cell h1 c=1 m=1)",
            "threshold breached: errors 100.00% > 50% (cell h2c c=1 m=1)"
        ],
        "{}",
        run.output.stderr
    );
    // p99 of 50 requests a round is estimable in none: not judged, once a cell, never breached
    // on the rounds' mean of values no round could estimate.
    let unjudged: Vec<&str> = run
        .output
        .stderr
        .lines()
        .filter(|line| line.starts_with("threshold not judged"))
        .collect();
    assert_eq!(
        unjudged,
        ["h1", "h2c"].map(|cell| format!(
            "threshold not judged: p99>1ms (cell {cell} c=1 m=1): p99 of 50 samples is not \
             estimable, fewer than 5 lie beyond it (it needs 500 samples: run longer)"
        )),
        "{}",
        run.output.stderr
    );
    let row = &run.json["comparison"][0];
    assert_eq!(row["failed_percent"], 100.0);
    assert_eq!(row["failed_percent_ci"]["ci_low"], 100.0);
}

#[test]
fn diff_tests_rounds_against_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let report = |name: &str, delay: &str, rounds: &str| {
        let file = path(dir.path(), name);
        let output = run_command(
            env!("CARGO_BIN_EXE_h2load-rs"),
            &[
                "--h1",
                "-n",
                "40",
                "--rounds",
                rounds,
                "--target-path",
                delay,
                "-q",
                "--json",
                &file,
            ],
        );
        assert_eq!(output.code, 0, "{}", output.stderr);
        file
    };
    let fast = report("fast.json", "/delay/1", "5");
    let slow = report("slow.json", "/delay/20", "5");
    let output = run_command(env!("CARGO_BIN_EXE_h2load-rs"), &["diff", &fast, &slow]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let stdout = &output.stdout;
    assert!(
        stdout.contains("h1 c=1 m=1: 5 rounds in base, 5 in new"),
        "{stdout}"
    );
    // Every slow round (20 ms and more) slower than every fast one: significant at 5 rounds a
    // side (2/252 exactly without ties; a tie between two rounds' percentiles, which a histogram's
    // buckets make common, takes it to 0.0119).
    for figure in ["req/s", "p50", "p99"] {
        let line = stdout
            .lines()
            .find(|line| line.trim_start().starts_with(figure))
            .unwrap();
        assert!(line.ends_with("worse"), "{figure}: {stdout}");
    }
    assert!(
        stdout.contains("Mann–Whitney U test of the rounds"),
        "{stdout}"
    );
    // Rounds against a single run are not the same kind of figure.
    let single = report("single.json", "/delay/1", "1");
    let mixed = run_command(env!("CARGO_BIN_EXE_h2load-rs"), &["diff", &fast, &single]);
    assert_eq!(mixed.code, 2, "{}", mixed.stderr);
    assert!(
        mixed
            .stderr
            .contains("only one of the reports ran --rounds"),
        "{}",
        mixed.stderr
    );
    // merge: runs of the same rounds add run by run; the comparison stays across rounds.
    let merged = path(dir.path(), "merged.json");
    let output = run_command(
        env!("CARGO_BIN_EXE_h2load-rs"),
        &["merge", "--json", &merged, &fast, &fast],
    );
    assert_eq!(output.code, 0, "{}", output.stderr);
    let merged: Value = serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    assert_eq!(merged["rounds"]["count"], 5);
    assert_eq!(merged["cells"].as_array().unwrap().len(), 5);
    assert_eq!(merged["cells"][4]["requests"]["succeeded"], 80);
    assert_eq!(
        merged["comparison"][0]["rounds"].as_array().unwrap().len(),
        5
    );
    let mixed = run_command(env!("CARGO_BIN_EXE_h2load-rs"), &["merge", &fast, &single]);
    assert_eq!(mixed.code, 2, "{}", mixed.stderr);
}

#[test]
fn a_scenario_file_takes_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("rounds.toml");
    std::fs::write(&scenario, "proto = [\"h1\"]\nrequests = 30\nrounds = 2\n").unwrap();
    let run = h2load_rs(&["run", scenario.to_str().unwrap(), "-q"]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    assert_eq!(run.json["rounds"]["count"], 2);
    assert_eq!(run.json["cells"].as_array().unwrap().len(), 2);
}

#[test]
fn rounds_out_of_range_are_usage_errors() {
    assert_usage_error(&["--rounds", "0", "-n", "1"], "--rounds");
    assert_usage_error(&["--rounds", "101", "-n", "1"], "--rounds");
    assert_usage_error(&["--round-order", "sideways", "-n", "1"], "--round-order");
}
