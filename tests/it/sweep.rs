//! Sweeps (levels × protocols), their exports, the scenario files, and the HTML page in Chromium.

use std::path::Path;
use std::process::Command;

use crate::common::{h2load_rs, h2load_rs_within, timer_noise, Run, COMMAND_LIMIT};

/// Runs the example sweep once against the built-in target, with every export.
/// Its 120,000 requests are CPU-bound in a debug build (client and target), so the command limit
/// stretches by the machine's measured slowdown, at most 3 times: a sweep that hangs still fails.
fn sweep(dir: &Path) -> Run {
    let path = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    let noise = timer_noise();
    let limit = noise.stretch(COMMAND_LIMIT, 3.0);
    eprintln!("sweep: command limit {limit:?} ({noise})");
    h2load_rs_within(
        &[],
        &[
            "-c",
            "1,10,100",
            "--proto",
            "h1,h2c",
            "-n",
            "20000",
            "--csv",
            &path("table.csv"),
            "--markdown",
            &path("table.md"),
            "--hgrm",
            &path("hgrm"),
            "--html",
            &path("report.html"),
        ],
        limit,
    )
}

/// One series of an SVG chart as the page draws it.
#[derive(Debug)]
struct DrawnSeries {
    name: String,
    /// Points in its path (`M`/`L` commands), or 1 for a marker.
    points: usize,
    /// Whether it is a lone point drawn as a circle.
    marker: bool,
}

/// The series of chart `id` in `html`, read from the SVG (not from the `data-points` claim).
fn drawn_series(html: &str, id: &str) -> Vec<DrawnSeries> {
    let start = html
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("chart {id}"));
    let svg = &html[start..start + html[start..].find("</svg>").unwrap()];
    svg.split("<g class=\"series\" ")
        .skip(1)
        .map(|group| {
            let group = &group[..group.find("</g>").unwrap()];
            let name = group
                .split("data-series=\"")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .unwrap()
                .to_owned();
            let claimed: usize = group
                .split("data-points=\"")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .unwrap()
                .parse()
                .unwrap();
            let marker = group.contains("<circle class=\"marker\"");
            let points = if marker {
                1
            } else {
                let d = group
                    .split(" d=\"")
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap();
                d.matches(['M', 'L']).count()
            };
            assert_eq!(points, claimed, "{id}/{name}: {group}");
            assert_eq!(marker, points == 1, "{id}/{name}: a lone point is a marker");
            DrawnSeries {
                name,
                points,
                marker,
            }
        })
        .collect()
}

#[test]
fn one_command_sweeps_levels_and_protocols_and_every_export_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let run = sweep(dir.path());
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let cells = run.json["cells"].as_array().unwrap();
    let order: Vec<(String, u64)> = cells
        .iter()
        .map(|cell| {
            (
                cell["cell"]["protocol"].as_str().unwrap().to_owned(),
                cell["cell"]["clients"].as_u64().unwrap(),
            )
        })
        .collect();
    let expected: Vec<(String, u64)> = [
        ("h1", 1),
        ("h2c", 1),
        ("h1", 10),
        ("h2c", 10),
        ("h1", 100),
        ("h2c", 100),
    ]
    .iter()
    .map(|(p, c)| (p.to_string(), *c))
    .collect();
    assert_eq!(order, expected, "fixed order: each level, every protocol");
    for cell in cells {
        assert_eq!(cell["requests"]["succeeded"], 20000);
        assert_eq!(cell["requests"]["errored"], 0);
        assert_eq!(cell["connections"]["opened"], cell["cell"]["clients"]);
        assert!(
            cell["watched"][0]["cpu_percent"].as_f64().unwrap() > 0.0,
            "the built-in target is watched"
        );
    }
    let stdout = &run.output.stdout;
    assert!(stdout.contains("comparison of 6 cells"), "{stdout}");
    let table_rows: Vec<&str> = stdout
        .lines()
        .skip_while(|line| !line.starts_with("comparison of"))
        .skip(2)
        .take_while(|line| !line.trim().is_empty())
        .collect();
    assert_eq!(table_rows.len(), 6, "{stdout}");

    let csv = std::fs::read_to_string(dir.path().join("table.csv")).unwrap();
    let markdown = std::fs::read_to_string(dir.path().join("table.md")).unwrap();
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    let csv_rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|line| line.split(',').collect())
        .collect();
    assert_eq!(csv_rows.len(), 6);
    // Columns by title: each figure is followed by its interval's two ends.
    let titles: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let column = |title: &str| titles.iter().position(|t| *t == title).unwrap();
    assert_eq!(
        titles[column("p99")..column("p99") + 3],
        ["p99", "p99 low", "p99 high"]
    );
    // The table (after the verdicts' list): titles, separator, a row per cell.
    assert_eq!(
        markdown
            .lines()
            .filter(|line| line.starts_with('|'))
            .count(),
        2 + 6,
        "{markdown}"
    );
    for (index, cell) in cells.iter().enumerate() {
        let rps = format!("{:.1}", cell["requests_per_s"].as_f64().unwrap());
        let p99 = format!(
            "{:.2}",
            cell["latency"]["request"]["percentiles"]["p99"]
                .as_u64()
                .unwrap() as f64
                / 1000.0
        );
        assert_eq!(csv_rows[index][column("req/s")], rps, "CSV row {index}");
        assert_eq!(csv_rows[index][column("p99")], p99, "CSV row {index}");
        // The interval's ends hold the value.
        let (low, high): (f64, f64) = (
            csv_rows[index][column("p99 low")].parse().unwrap(),
            csv_rows[index][column("p99 high")]
                .parse()
                .unwrap_or(f64::INFINITY),
        );
        let value: f64 = p99.parse().unwrap();
        assert!(
            low <= value && value <= high,
            "CSV row {index}: {low}–{high}"
        );
        assert_eq!(
            table_rows[index].split_whitespace().nth(4),
            Some(rps.as_str()),
            "text row {index}"
        );
        let markdown_row: Vec<&str> = markdown
            .lines()
            .filter(|line| line.starts_with('|'))
            .nth(2 + index)
            .unwrap()
            .split('|')
            .map(str::trim)
            .collect();
        // Figures for people carry their interval inline: `15278.9 (13820.8–16736.9)`.
        assert!(
            markdown_row[5].starts_with(&format!("{rps} (")),
            "Markdown row {index}: {}",
            markdown_row[5]
        );
        assert!(html.contains(&format!("<td>{rps} (")), "HTML has {rps}");
        let ratio = &run.json["comparison"][index]["ratio"];
        if index % 2 == 1 {
            let expected = cell["requests_per_s"].as_f64().unwrap()
                / cells[index - 1]["requests_per_s"].as_f64().unwrap();
            assert_eq!(ratio[0], "h2c/h1");
            assert!((ratio[1].as_f64().unwrap() - expected).abs() < 1e-9);
            assert!(csv_rows[index].last().unwrap().starts_with("h2c/h1 = "));
            let clients = cell["settings"]["clients"].as_u64().unwrap();
            // A difference is stated only when the ratio's interval excludes 1.
            let bounds = &run.json["comparison"][index]["ratio_ci"];
            let (low, high) = (
                bounds["ci_low"].as_f64().unwrap(),
                bounds["ci_high"].as_f64().unwrap(),
            );
            let figures = format!(
                "(h2c/h1 = {:.2}, 95% interval {low:.2}–{high:.2} within one run)",
                ratio[1].as_f64().unwrap()
            );
            let sentence = format!("  - at c={clients} m=1");
            let said = run
                .output
                .stdout
                .lines()
                .find(|line| line.starts_with(&format!("{sentence} ")))
                .or_else(|| {
                    run.output
                        .stdout
                        .lines()
                        .find(|line| line.starts_with(&format!("{sentence},")))
                })
                .unwrap_or_else(|| panic!("no {sentence:?} in\n{}", run.output.stdout));
            let verdict = if low <= 1.0 && 1.0 <= high {
                format!("{sentence}, no difference we can see {figures} between h2c and h1, h2c using {clients} connection")
            } else {
                format!("{sentence} {figures}, h2c served ")
            };
            assert!(
                said.starts_with(&verdict) && said.contains(&format!("using {clients} connection")),
                "{said}\n{verdict}"
            );
        } else {
            assert!(
                ratio.is_null(),
                "the first protocol of a level has no ratio"
            );
        }
    }
    // Every chart draws every data point: 3 levels per protocol, a curve per cell, and each cell's
    // timeline interval by interval (the automatic interval gives short cells several).
    let throughput = drawn_series(&html, "throughput");
    assert_eq!(
        throughput
            .iter()
            .map(|s| (s.name.as_str(), s.points))
            .collect::<Vec<_>>(),
        [("h1", 3), ("h2c", 3)]
    );
    let latency = drawn_series(&html, "latency");
    assert_eq!(latency.len(), 6);
    assert!(latency.iter().all(|s| s.points >= 10), "{latency:?}");
    let timeline = drawn_series(&html, "timeline");
    assert_eq!(timeline.len(), 6);
    for (series, cell) in timeline.iter().zip(cells) {
        assert_eq!(series.name, cell["cell"]["label"].as_str().unwrap());
        let intervals = cell["timeline"]["intervals"].as_array().unwrap();
        assert_eq!(series.points, intervals.len(), "{}", series.name);
        let elapsed = cell["elapsed_s"].as_f64().unwrap();
        if elapsed >= 0.1 {
            assert!(
                series.points >= 5 && !series.marker,
                "{}: {} intervals in {elapsed} s",
                series.name,
                series.points
            );
        }
    }
    let hgrm_files = std::fs::read_dir(dir.path().join("hgrm")).unwrap().count();
    assert_eq!(hgrm_files, 6 * 3);
    let distribution =
        std::fs::read_to_string(dir.path().join("hgrm/cell-04-h2c-c10-m1.request.hgrm")).unwrap();
    assert!(
        distribution.contains(&format!("Total count    = {:>12}", 20000)),
        "{distribution}"
    );
}

#[test]
fn html_report_renders_in_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("report.html");
    let run = h2load_rs(&[
        "-c",
        "1,4",
        "--proto",
        "h1,h2c,h2",
        "-n",
        "400",
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let dom = crate::html::dump_dom(&html);
    let series_in = |chart: &str| {
        let start = dom
            .find(&format!("id=\"{chart}\""))
            .unwrap_or_else(|| panic!("chart {chart} in the DOM"));
        let end = dom[start..].find("</svg>").unwrap() + start;
        dom[start..end].matches("class=\"series\"").count()
    };
    assert_eq!(series_in("throughput"), 3, "one line per protocol");
    assert_eq!(series_in("latency"), 6, "one curve per cell");
    assert_eq!(series_in("timeline"), 6, "one timeline per cell");
    // Each series is drawn: a line through its points, or a marker for a lone point.
    for chart in ["throughput", "latency", "timeline"] {
        let drawn = drawn_series(&dom, chart);
        assert!(drawn.iter().all(|s| s.points >= 1), "{chart}: {drawn:?}");
    }

    let shot = crate::html::screenshot(&html, "sweep-three-protocols");
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(&shot).expect("a screenshot"),
    ));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut pixels).unwrap();
    let channels = frame.color_type.samples();
    let rgb: Vec<&[u8]> = pixels[..frame.buffer_size()].chunks(channels).collect();
    let first_series = rgb
        .iter()
        .filter(|p| p[0] == 0x1f && p[1] == 0x77 && p[2] == 0xb4)
        .count();
    let second_series = rgb
        .iter()
        .filter(|p| p[0] == 0xd6 && p[1] == 0x27 && p[2] == 0x28)
        .count();
    let non_white = rgb
        .iter()
        .filter(|p| p[0] < 250 || p[1] < 250 || p[2] < 250)
        .count();
    assert!(
        first_series > 200 && second_series > 200,
        "series lines drawn: {first_series} / {second_series}"
    );
    assert!(non_white * 50 > rgb.len(), "the page is not blank");
}

#[test]
fn scenario_errors_name_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(&file, "clients = [10]\nthreadz = 2\n").unwrap();
    let run = h2load_rs(&["run", file.to_str().unwrap()]);
    assert_eq!(run.output.code, 2);
    assert!(
        run.output.stderr.contains("unknown key 'threadz'"),
        "{}",
        run.output.stderr
    );
    std::fs::write(&file, "clients = \"lots\"\n").unwrap();
    let run = h2load_rs(&["run", file.to_str().unwrap()]);
    assert_eq!(run.output.code, 2);
    let stderr = run.output.stderr.trim();
    assert!(
        stderr.contains("bad.toml") && stderr.contains("'lots'") && stderr.contains("--clients"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1);
}

#[test]
fn watched_processes_and_cooldown_between_cells() {
    let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = sleeper.id().to_string();
    let run = h2load_rs(&[
        "--proto",
        "h1,h2c",
        "-n",
        "200",
        "--cooldown",
        "700ms",
        "--watch-pid",
        &pid,
    ]);
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    assert!(
        run.output.wall >= std::time::Duration::from_millis(700),
        "one pause between two cells"
    );
    for cell in run.json["cells"].as_array().unwrap() {
        let watched = cell["watched"].as_array().unwrap();
        assert_eq!(watched.len(), 2, "the built-in target, then --watch-pid");
        assert_eq!(watched[1]["pid"].to_string(), pid);
        assert!(watched[1]["rss_peak_kib"].as_u64().unwrap() > 0);
        assert!(
            watched[1]["cpu_percent"].as_f64().unwrap() < 5.0,
            "sleep uses no CPU"
        );
    }
}

#[test]
fn rate_lists_are_told_apart_in_every_export() {
    let noise = timer_noise();
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let run = h2load_rs(&[
        "--h1",
        "-c",
        "4",
        "--rate",
        "500,2000",
        "-D",
        "1s",
        "--csv",
        &path("table.csv"),
        "--markdown",
        &path("table.md"),
        "--html",
        &path("report.html"),
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let cells = run.json["cells"].as_array().unwrap();
    let rates = [500.0, 2000.0];
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    // One concurrency: no chart of throughput against concurrency, whose lone dots would say
    // nothing (the rates are in the table, beside the rates requested).
    assert!(!html.contains("id=\"throughput\""), "a chart of lone dots");
    let timeline = drawn_series(&html, "timeline");
    for (series, cell) in timeline.iter().zip(cells) {
        assert_eq!(series.name, cell["cell"]["label"].as_str().unwrap());
        // -D 1s picks 50 ms intervals: 20 of them, and a 21st when the last responses come
        // more than a quarter interval after the end (a loaded machine's drain: a shorter
        // stub joins the 10th); a point for each.
        let timeline = &cell["timeline"];
        assert_eq!(
            timeline["interval_s"].as_f64(),
            Some(0.05),
            "{}",
            series.name
        );
        let end = timeline["end_s"].as_f64().unwrap() / 0.05;
        let intervals = if end - end.floor() <= 0.25 {
            end.floor() as usize
        } else {
            end.floor() as usize + 1
        };
        assert_eq!(series.points, intervals, "{}", series.name);
        assert_eq!(
            series.points,
            timeline["intervals"].as_array().unwrap().len()
        );
    }
    for (index, (cell, rate)) in cells.iter().zip(rates).enumerate() {
        let label = format!("h1 c=4 m=1 rate={rate}");
        assert_eq!(cell["cell"]["label"], label.as_str());
        assert_eq!(cell["cell"]["rate"].as_f64(), Some(rate));
        assert_eq!(run.json["comparison"][index]["rate"].as_f64(), Some(rate));
        // Each cell keeps its own rate's schedule, exactly: 1 s of it, each send time sent or
        // counted missed (a client starved of CPU misses some, under any timer noise).
        let (scheduled, started, missed) = (
            cell["rate"]["scheduled"].as_u64(),
            cell["requests"]["started"].as_u64().unwrap(),
            cell["rate"]["missed"].as_u64().unwrap(),
        );
        assert_eq!(scheduled, Some(rate as u64), "{label}");
        assert_eq!(started + missed, rate as u64, "{label}: {missed} missed");
        // Kept, it is achieved: ±5%, plus the timer noise's share of the 1 s (at most 20 ms).
        let widening = noise.widening(std::time::Duration::from_millis(20));
        let achieved = cell["requests_per_s"].as_f64().unwrap();
        assert!(
            missed > 0 || (achieved - rate).abs() <= rate * (0.05 + widening.as_secs_f64()),
            "{label}: {achieved} req/s (widened by {widening:?}; {noise})"
        );
        assert!(
            run.output
                .stdout
                .contains(&format!("=== cell {}/2: {label}", index + 1)),
            "{}",
            run.output.stdout
        );
    }
    let csv = std::fs::read_to_string(dir.path().join("table.csv")).unwrap();
    let mut lines = csv.lines();
    let titles: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(
        titles[..6],
        ["#", "protocol", "c", "m", "rate", "req/s"],
        "{csv}"
    );
    let csv_rates: Vec<&str> = lines.map(|line| line.split(',').nth(4).unwrap()).collect();
    assert_eq!(csv_rates, ["500", "2000"], "{csv}");
    let markdown = std::fs::read_to_string(dir.path().join("table.md")).unwrap();
    // The table after the verdicts' list, past its titles and separator.
    let markdown_rates: Vec<&str> = markdown
        .lines()
        .skip_while(|line| !line.starts_with('|'))
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .map(|line| line.split('|').nth(5).unwrap().trim())
        .collect();
    assert_eq!(markdown_rates, ["500", "2000"], "{markdown}");
    let table: Vec<&str> = run
        .output
        .stdout
        .lines()
        .skip_while(|line| !line.starts_with("comparison of"))
        .skip(1)
        .take(3)
        .collect();
    assert!(
        table[0].split_whitespace().any(|title| title == "rate"),
        "{table:?}"
    );
    assert_eq!(table[1].split_whitespace().nth(4), Some("500"), "{table:?}");
    assert_eq!(
        table[2].split_whitespace().nth(4),
        Some("2000"),
        "{table:?}"
    );
}
