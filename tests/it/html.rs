//! The `--html` page of each kind of run, rendered by headless Chromium (issue 36 §6): a sweep, a
//! single run, a paced run, a capacity search, a failed run and a run of rounds. Each test saves a
//! screenshot under `target/tmp/html-pages/` (its path on stderr) and asserts on the text as
//! rendered (`--dump-dom`): the verdicts the text report printed are on the page, in its words,
//! and every chart's legend names each line in full, inside its box. The clipping check is a
//! script the test adds to a copy of the page (the page itself has none); two probes clipped on
//! purpose show that it can fail.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{h2load_rs, run_command, Run};

/// Chromium's name on this machine (tests/setup.sh installs it).
fn chromium() -> &'static str {
    ["chromium", "chromium-browser"]
        .into_iter()
        .find(|name| {
            std::process::Command::new("sh")
                .args(["-c", &format!("command -v {name}")])
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .expect("chromium is not installed: run tests/setup.sh (the README's test command does)")
}

/// Runs headless Chromium on `page` with `extra` flags (a profile of its own, nothing from the
/// network) and returns its stdout.
fn run_chromium(page: &Path, extra: &[&str]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let profile_flag = format!("--user-data-dir={}", profile.path().display());
    let url = format!("file://{}", page.display());
    let mut args = vec![
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        profile_flag.as_str(),
    ];
    args.extend(extra);
    args.push(&url);
    let output = run_command(chromium(), &args);
    assert_eq!(output.code, 0, "chromium: {}", output.stderr);
    output.stdout
}

/// The DOM of `page` once Chromium has loaded it, 1000 pixels wide.
pub(crate) fn dump_dom(page: &Path) -> String {
    run_chromium(page, &["--window-size=1000,1200", "--dump-dom"])
}

/// A screenshot of `page`, 1000 pixels wide, kept as `target/tmp/html-pages/{name}.png` beside a
/// copy of the page (for a person to look at; nothing in the repository); its path is printed.
pub(crate) fn screenshot(page: &Path, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html-pages");
    std::fs::create_dir_all(&dir).unwrap();
    let shot = dir.join(format!("{name}.png"));
    let _ = std::fs::remove_file(&shot);
    std::fs::copy(page, dir.join(format!("{name}.html"))).unwrap();
    let flag = format!("--screenshot={}", shot.display());
    run_chromium(page, &["--window-size=1000,3000", &flag]);
    eprintln!("screenshot of the {name} page: {}", shot.display());
    assert!(shot.exists(), "no screenshot at {}", shot.display());
    shot
}

/// What the check script reports, and two probes it must find clipped: a label that runs off its
/// SVG, and a legend entry wider than its legend.
const LAYOUT_CHECK: &str = r#"
<svg id="probe" width="60" height="20"><text x="30" y="15">clipped on purpose</text></svg>
<figure><svg id="probe-legend" width="10" height="10"></svg><ul class="legend" style="max-width: 40px"><li style="overflow-wrap: normal">unbreakable_name_wider_than_its_legend</li></ul></figure>
<script>
(() => {
  const clipped = [];
  const inside = (r, box) => r.left >= box.left - 0.5 && r.right <= box.right + 0.5
    && r.top >= box.top - 0.5 && r.bottom <= box.bottom + 0.5;
  for (const svg of document.querySelectorAll('svg')) {
    const box = svg.getBoundingClientRect();
    for (const text of svg.querySelectorAll('text')) {
      if (!inside(text.getBoundingClientRect(), box)) clipped.push(svg.id + ': ' + text.textContent);
    }
  }
  const legends = [];
  const page = document.documentElement.getBoundingClientRect();
  for (const list of document.querySelectorAll('ul.legend')) {
    const box = list.getBoundingClientRect();
    const chart = list.closest('figure').querySelector('svg').id;
    for (const entry of list.querySelectorAll('li')) {
      legends.push([chart, entry.textContent]);
      const r = entry.getBoundingClientRect();
      if (!inside(r, box) || r.right > page.right + 0.5 || entry.scrollWidth > entry.clientWidth + 1) {
        clipped.push('legend of ' + chart + ': ' + entry.textContent);
      }
    }
  }
  const root = document.documentElement;
  if (root.scrollWidth > root.clientWidth + 1) clipped.push('page: wider than the window');
  const out = document.createElement('pre');
  out.id = 'layout-check';
  out.textContent = JSON.stringify({ clipped, legends });
  document.body.appendChild(out);
})();
</script>
"#;

/// A page as Chromium rendered it.
struct Rendered {
    /// Its DOM, serialized.
    dom: String,
    /// Its text: each element's text on a line of its own, entities decoded.
    text: String,
    /// Each legend entry: its chart's id and its text.
    legends: Vec<(String, String)>,
}

impl Rendered {
    /// Whether the rendered text holds `line` whole, within one element.
    fn shows(&self, line: &str) -> bool {
        self.text.lines().any(|shown| shown.contains(line))
    }

    fn assert_shows(&self, line: &str) {
        assert!(
            self.shows(line),
            "the page does not show {line:?}:\n{}",
            self.text
        );
    }

    /// The legend of chart `id`, entry by entry.
    fn legend(&self, id: &str) -> Vec<&str> {
        self.legends
            .iter()
            .filter(|(chart, _)| chart == id)
            .map(|(_, entry)| entry.as_str())
            .collect()
    }

    /// The ids of the page's charts, in order.
    fn charts(&self) -> Vec<&str> {
        self.dom
            .split("<svg id=\"")
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .filter(|id| !id.starts_with("probe"))
            .collect()
    }
}

fn decoded(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&")
}

/// The text of `dom`, an element's text a line: tags become line breaks; the style sheet and the
/// check script are left out.
fn text_of(dom: &str) -> String {
    let mut text = String::new();
    let mut rest = dom;
    while let Some(open) = rest.find('<') {
        text.push_str(&rest[..open]);
        text.push('\n');
        rest = &rest[open..];
        let skip_to = ["<style", "<script"]
            .iter()
            .zip(["</style>", "</script>"])
            .find(|(start, _)| rest.starts_with(*start))
            .map(|(_, end)| end);
        let end = match skip_to {
            Some(end) => rest.find(end).map(|at| at + end.len()),
            None => rest.find('>').map(|at| at + 1),
        };
        rest = &rest[end.unwrap_or(rest.len())..];
    }
    text.push_str(rest);
    decoded(&text)
}

/// Renders `page` with the layout check, screenshots it as `name`, and asserts that nothing but
/// the two probes is clipped: no SVG text outside its SVG, no legend entry outside its legend or
/// the page, or wider than its box, and no page wider than the window (a wide table scrolls by
/// itself).
fn render(page: &Path, name: &str) -> Rendered {
    let html = std::fs::read_to_string(page).unwrap();
    let checked = page.with_extension("checked.html");
    let at = html.rfind("</body>").expect("</body>");
    std::fs::write(
        &checked,
        format!("{}{LAYOUT_CHECK}{}", &html[..at], &html[at..]),
    )
    .unwrap();
    let dom = dump_dom(&checked);
    let report = dom
        .split("<pre id=\"layout-check\">")
        .nth(1)
        .and_then(|rest| rest.split("</pre>").next())
        .unwrap_or_else(|| panic!("the check script did not run:\n{dom}"));
    let report: Value = serde_json::from_str(&decoded(report)).unwrap();
    let clipped: Vec<&str> = report["clipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry.as_str().unwrap())
        .collect();
    assert_eq!(
        clipped,
        [
            "probe: clipped on purpose",
            "legend of probe-legend: unbreakable_name_wider_than_its_legend"
        ],
        "only the probes are clipped"
    );
    let legends = report["legends"]
        .as_array()
        .unwrap()
        .iter()
        .map(|pair| {
            (
                pair[0].as_str().unwrap().to_owned(),
                pair[1].as_str().unwrap().to_owned(),
            )
        })
        .filter(|(chart, _)| !chart.starts_with("probe"))
        .collect();
    screenshot(page, name);
    let text = text_of(&dom);
    Rendered { dom, text, legends }
}

/// Runs h2load-rs with `args` and `--html`, and renders the page as `name`.
fn run_page(name: &str, args: &[&str]) -> (Run, Rendered) {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join(format!("{name}.html"));
    let mut full = args.to_vec();
    full.extend(["--html", page.to_str().unwrap()]);
    let run = h2load_rs(&full);
    assert!(page.exists(), "no page:\n{}", run.output.stderr);
    let rendered = render(&page, name);
    (run, rendered)
}

/// The plain-words lines of the text report (`  - …` after `in plain words:`), every one of
/// them, in order.
fn plain_words(stdout: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut within = false;
    for line in stdout.lines() {
        if line == "in plain words:" {
            within = true;
        } else if let Some(sentence) = line.strip_prefix("  - ").filter(|_| within) {
            lines.push(sentence);
        } else {
            within = false;
        }
    }
    lines
}

/// Every plain-words line of the run's text is on the page; returns how many there were.
fn assert_plain_words(run: &Run, page: &Rendered) -> usize {
    let lines = plain_words(&run.output.stdout);
    for line in &lines {
        page.assert_shows(line);
    }
    lines.len()
}

/// The cells' labels, as the charts name them.
fn labels(run: &Run) -> Vec<String> {
    run.json["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|cell| {
            let label = cell["cell"]["label"].as_str().unwrap();
            match cell["cell"]["round"]["round"].as_u64() {
                Some(round) => format!("{label} (round {round})"),
                None => label.to_owned(),
            }
        })
        .collect()
}

/// The latency-over-time chart of every cell, each drawn through its intervals: its legend
/// names p50 and max (and p99 where an interval could estimate it). A run of the built-in
/// target's `/ping` may end within 50 ms on an idle machine, too soon for five intervals of the
/// shortest length: the runs that draw it give the target a delay that makes them last longer.
fn assert_latency_over_time(run: &Run, page: &Rendered) {
    for cell in run.json["cells"].as_array().unwrap() {
        let id = format!("latency-over-time-{}", cell["cell"]["index"]);
        let legend = page.legend(&id);
        assert!(
            legend == ["p50", "max"] || legend == ["p50", "p99", "max"],
            "{id}: {legend:?}"
        );
        let intervals = cell["timeline"]["intervals"].as_array().unwrap().len();
        assert!(intervals >= 5, "{id}: {intervals} intervals");
    }
}

#[test]
fn a_sweep_page_leads_with_the_comparison_in_plain_words() {
    let (run, page) = run_page(
        "sweep",
        &[
            "-c",
            "1,4",
            "--proto",
            "h1,h2c",
            "-n",
            "300",
            "--target-delay",
            "2ms",
        ],
    );
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    // The comparison's sentences and each cell's, as the text report says them.
    let said = assert_plain_words(&run, &page);
    assert!(said >= 6, "{}", run.output.stdout);
    assert!(
        run.output.stdout.contains("no difference we can see")
            || run.output.stdout.contains("requests per second than")
    );
    page.assert_shows("comparison of 4 cells (latencies in ms; 95% intervals within one run):");
    // The charts: throughput against concurrency (two levels), then per cell.
    assert_eq!(
        page.charts(),
        [
            "throughput",
            "latency",
            "timeline",
            "latency-over-time-1",
            "latency-over-time-2",
            "latency-over-time-3",
            "latency-over-time-4"
        ]
    );
    assert_eq!(page.legend("throughput"), ["h1", "h2c"]);
    assert_eq!(page.legend("latency"), labels(&run));
    assert_eq!(page.legend("timeline"), labels(&run));
    assert_latency_over_time(&run, &page);
}

#[test]
fn a_single_run_page_shows_its_figures_as_a_card_not_a_one_dot_chart() {
    let (run, page) = run_page("single", &["-n", "400", "--target-delay", "1ms"]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    assert_plain_words(&run, &page);
    // No throughput-vs-concurrency chart of one dot: the figures are a card, the rate the JSON's.
    assert_eq!(
        page.charts(),
        ["latency", "timeline", "latency-over-time-1"]
    );
    let rate = format!("{:.1}", run.num("requests_per_s"));
    let card = &page.dom[page.dom.find("<table id=\"card\">").expect("a card")..];
    let card = &card[..card.find("</table>").unwrap()];
    assert!(
        card.contains(&format!("<th scope=\"row\">req/s</th><td>{rate} (")),
        "{card}"
    );
    assert!(
        card.contains(&format!(
            "<th scope=\"row\">conns</th><td>{}</td>",
            run.int("connections/opened")
        )),
        "{card}"
    );
    assert_eq!(page.legend("timeline"), labels(&run));
    assert_latency_over_time(&run, &page);
}

#[test]
fn a_rate_page_shows_the_rate_requested_beside_the_achieved_and_the_thresholds() {
    // -q: the threshold verdicts on stdout, to hold the page's against.
    let (run, page) = run_page(
        "rate",
        &[
            "-q",
            "-c",
            "4",
            "--rate",
            "200",
            "-D",
            "1s",
            "--fail-if",
            "errors>50%",
            "--fail-if",
            "p50>10s",
        ],
    );
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let rate = &run.cell()["rate"];
    assert_eq!(rate["requested_per_s"], 200.0);
    let label = &labels(&run)[0];
    // The table: requested beside achieved, as the text's rate line has them.
    let row = format!(
        "<tr><td>{label}</td><td>200.0</td><td>{:.1}</td>",
        rate["achieved_per_s"].as_f64().unwrap()
    );
    assert!(page.dom.contains(&row), "{row}\n{}", page.dom);
    // The timeline: the requested rate as a dashed line across the run, in its cell's colour.
    assert_eq!(
        page.legend("timeline"),
        [label.clone(), format!("{label} requested")]
    );
    let timeline = &page.dom[page.dom.find("<svg id=\"timeline\"").unwrap()..];
    let reference = &timeline[timeline
        .find(&format!(
            "<g class=\"reference\" data-series=\"{label} requested\" data-points=\"2\">"
        ))
        .expect("the requested rate's line")..];
    assert!(reference.contains("stroke-dasharray"), "{reference}");
    // Every threshold's verdict, as -q printed it.
    let verdicts: Vec<&str> = run
        .output
        .stdout
        .lines()
        .filter_map(|line| line.strip_prefix("  --fail-if "))
        .collect();
    assert_eq!(verdicts.len(), 2, "{}", run.output.stdout);
    for verdict in verdicts {
        assert!(verdict.contains(": passed ("), "{verdict}");
        page.assert_shows(&format!("--fail-if {verdict}"));
    }
    assert_latency_over_time(&run, &page);
}

#[test]
fn a_find_max_page_states_the_capacity_the_json_has() {
    let target = crate::common::url("/ping");
    let (run, page) = run_page(
        "find-max",
        &[
            "-c",
            "2",
            "--find-max",
            "--step-duration",
            "300ms",
            "--slo",
            "p99<50ms",
            &target,
        ],
    );
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let capacity = &run.cell()["capacity"];
    let figure = crate::capacity::figure(&capacity["answer"]);
    // The one answer, with its SLO: the closing line as the text prints it, the card's figure,
    // and the search's own line.
    let closing = format!("capacity: h2c {figure}");
    let line = run
        .output
        .stdout
        .lines()
        .find(|line| line.starts_with(&closing))
        .unwrap_or_else(|| panic!("{closing}\n{}", run.output.stdout));
    assert!(line.contains(" at p99<50ms"), "{line}");
    page.assert_shows(line);
    assert!(
        page.dom
            .contains(&format!("<th scope=\"row\">capacity</th><td>{figure}</td>")),
        "{}",
        page.dom
    );
    page.assert_shows(&format!("capacity: {figure}"));
    let label = &labels(&run)[0];
    assert_eq!(
        page.legend("knee-rate"),
        ["achieved = offered".to_owned(), label.clone()]
    );
    assert_eq!(
        page.legend("knee-latency"),
        [format!("{label} p50"), format!("{label} p99")]
    );
    assert!(!page.charts().contains(&"throughput"));
}

#[test]
fn a_failed_run_page_says_why_before_anything_else() {
    let server = crate::hostile::server::Server::start(crate::hostile::server::Behaviour::H1Reply(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    ));
    let url = format!("http://{}/", server.addr);
    let (run, page) = run_page("failed", &["-n", "100", "-c", "2", &url]);
    assert_eq!(run.output.code, 1, "{}", run.output.stdout);
    let cause = run
        .output
        .stdout
        .lines()
        .find(|line| line.starts_with("failed: "))
        .expect("the cause");
    assert_eq!(
        format!("failed: {}", run.cell()["cause"]["text"].as_str().unwrap()),
        cause
    );
    // The first thing after the heading of the verdicts, before any figure or chart.
    let verdicts = page.text.split("Verdicts").nth(1).expect("verdicts");
    let first = verdicts
        .lines()
        .find(|line| !line.trim().is_empty())
        .unwrap();
    assert_eq!(first, cause);
    let before_figures = page.text.find("Figures").unwrap();
    assert!(page.text.find(cause).unwrap() < before_figures);
    assert_plain_words(&run, &page);
}

#[test]
fn a_rounds_page_shows_each_round_and_the_ratio_across_them() {
    let (run, page) = run_page(
        "rounds",
        &[
            "--proto",
            "h1,h2c",
            "-n",
            "200",
            "--rounds",
            "3",
            "--target-delay",
            "1ms",
        ],
    );
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    assert_plain_words(&run, &page);
    let comparison = plain_words(&run.output.stdout)
        .into_iter()
        .find(|line| line.starts_with("at c=1 m=1"))
        .expect("the comparison in plain words");
    assert!(comparison.contains("across 3 rounds"), "{comparison}");
    page.assert_shows("comparison of 2 cells over 3 rounds (latencies in ms; each figure is the mean of its rounds, its 95% interval across them):");
    let rounds = &page.dom[page
        .dom
        .find("<table id=\"rounds\">")
        .expect("the rounds table")..];
    let rounds = &rounds[..rounds.find("</table>").unwrap()];
    assert!(rounds.contains("<th>ratio by round</th>"), "{rounds}");
    // The ratio across rounds, in the comparison table, as the JSON has it.
    let row = &run.json["comparison"][1];
    let (low, high) = (
        row["ratio_ci"]["ci_low"].as_f64().unwrap(),
        row["ratio_ci"]["ci_high"].as_f64().unwrap(),
    );
    let ratio = format!(
        "h2c/h1 = {:.2} ({low:.2}–{high:.2})",
        row["ratio"][1].as_f64().unwrap()
    );
    assert!(page.dom.contains(&format!("<td>{ratio}</td>")), "{ratio}");
    // Each run is a line of its own, named by its round.
    assert_eq!(page.legend("timeline"), labels(&run));
    assert!(labels(&run).contains(&"h2c c=1 m=1 (round 3)".to_owned()));
    assert_latency_over_time(&run, &page);
}
