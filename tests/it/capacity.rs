//! `--find-max`: the capacity search against the built-in target, whose capacity is known from a
//! closed-loop run of the same connections; its report in text, JSON and HTML; its usage errors.

use std::time::Duration;

use crate::common::{
    assert_usage_error, h2load_rs, poisson_pair_distance, run_command, run_command_within,
    scheduled_send_times, timer_noise, url, Noise, Output,
};

const BIN: &str = env!("CARGO_BIN_EXE_h2load-rs");

/// A search may take this long in a test (the issue asks for under 2 minutes).
const SEARCH_LIMIT: Duration = Duration::from_secs(120);

/// Runs h2load-rs with `args` plus `--json` (within `limit`) and parses the JSON.
fn search_within(args: &[&str], limit: Duration) -> (Output, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let mut full = args.to_vec();
    full.extend(["--json", json.to_str().unwrap()]);
    let output = run_command_within(BIN, &full, limit);
    assert!(!output.stderr.contains("panicked"), "{}", output.stderr);
    let text = std::fs::read_to_string(&json).unwrap_or_default();
    // Scripts read `capacity_rps` first: it leads the object.
    for (at, _) in text.match_indices("\"capacity\": {") {
        let next = text[at + 13..].trim_start();
        assert!(next.starts_with("\"capacity_rps\""), "{next:.80}");
    }
    let document = match text.is_empty() {
        true => serde_json::Value::Null,
        false => serde_json::from_str(&text).unwrap(),
    };
    (output, document)
}

/// Runs h2load-rs with `args` plus `--json` (within [`SEARCH_LIMIT`]) and parses the JSON.
fn search(args: &[&str]) -> (Output, serde_json::Value) {
    search_within(args, SEARCH_LIMIT)
}

#[test]
fn the_capacity_of_a_10ms_target_at_c_10_is_its_closed_loop_rate() {
    // The truth: 10 connections, one request each per 10 ms plus the round trip's overhead,
    // which a closed-loop run of the same connections measures.
    let noise = timer_noise();
    let closed = h2load_rs(&[
        "--h1",
        "-c",
        "10",
        "--target-delay",
        "10ms",
        "-D",
        "3s",
        "-q",
    ]);
    assert_eq!(closed.output.code, 0, "{}", closed.output.stderr);
    let truth = closed.num("requests_per_s");
    let floor = closed_loop_floor(&noise);
    assert!(
        (floor..=1000.0).contains(&truth),
        "closed loop: {truth} req/s, at least {floor:.0} ({noise})"
    );

    // The search's steps are CPU-bound too: its limit stretches by the slowdown, at most twice,
    // and so does its SLO, 30 ms at p99 (the closed loop's p99 went from 18 ms to 35 ms at a CPU
    // share of 0.13, so a 30 ms SLO failed steps far below the truth); a search far from the
    // closed loop's rate still fails.
    let limit = noise.stretch(SEARCH_LIMIT, 2.0);
    let slo = format!(
        "p99<{}ms",
        noise.stretch(Duration::from_millis(30), 2.0).as_millis()
    );
    let (output, json) = search_within(
        &[
            "--h1",
            "-c",
            "10",
            "--target-delay",
            "10ms",
            "--find-max",
            "--slo",
            &slo,
        ],
        limit,
    );
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(output.wall < limit, "took {:?} ({noise})", output.wall);
    let capacity = &json["cells"][0]["capacity"];
    // Within 15 %, stretched by the slowdown up to twice: the closed loop and the search run at
    // different moments of a machine whose load moves (30 % at most still fails a search off by
    // half or double). A busy machine may make the search contradict itself: its range must
    // then reach the truth, within the same tolerance.
    let tolerance = 0.15 * noise.slowdown(2.0);
    let answer = &capacity["answer"];
    let (low, high) = match answer["kind"].as_str().unwrap() {
        "inconsistent" => (
            answer["between"][0].as_f64().unwrap(),
            answer["between"][1].as_f64().unwrap(),
        ),
        _ => {
            let found = capacity["capacity_rps"].as_f64().unwrap_or(0.0);
            (found, found)
        }
    };
    assert!(
        low - tolerance * truth <= truth && truth <= high + tolerance * truth,
        "found {}, closed loop {truth} req/s, {:.0}% allowed ({noise})\n{}",
        answer,
        tolerance * 100.0,
        output.stdout
    );
    let found = capacity["capacity_rps"].as_f64().unwrap_or(high);
    // 10 connections over every step: the search ran on warm connections.
    assert_eq!(json["cells"][0]["connections"]["opened"], 10);
    eprintln!(
        "find-max: {found:.0} req/s vs closed loop {truth:.0} req/s in {:.1} s, {} steps",
        output.wall.as_secs_f64(),
        capacity["steps"].as_array().unwrap().len()
    );
}

/// The lowest closed-loop rate of 10 connections on a 10 ms target: 700 req/s (the round trip's
/// overhead in a debug build is under 30 %), divided by the machine's measured slowdown, at most
/// 1.4 times: 500 still fails a run that serializes its connections or loses half of them.
fn closed_loop_floor(noise: &Noise) -> f64 {
    700.0 / noise.slowdown(1.4)
}

/// A quick search (300 ms steps) of two protocols against the shared target.
fn quick_search(extra: &[&str]) -> (Output, serde_json::Value) {
    let target = url("/ping");
    let mut args = vec![
        "-c",
        "2",
        "--proto",
        "h1,h2c",
        "--find-max",
        "--step-duration",
        "300ms",
    ];
    args.extend(extra);
    args.push(&target);
    search(&args)
}

#[test]
fn every_step_is_reported_and_the_verdicts_follow_the_rule() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("report.html");
    let (output, json) = quick_search(&["--slo", "p99<50ms", "--html", html.to_str().unwrap()]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let mut capacities = Vec::new();
    for cell in json["cells"].as_array().unwrap() {
        let capacity = &cell["capacity"];
        assert_eq!(capacity["objectives"], serde_json::json!(["p99<50ms"]));
        // On a busy machine the search may contradict itself: then there is no one figure.
        let found = capacity["capacity_rps"].as_f64();
        assert_eq!(
            found.is_some(),
            capacity["answer"]["kind"] == "consistent",
            "{capacity}"
        );
        capacities.push(capacity.clone());
        let steps = capacity["steps"].as_array().unwrap();
        assert_eq!(steps[0]["phase"], "ceiling");
        // The ceiling is the unpaced step's rate of successful responses.
        let first = &steps[0];
        let done = first["done"].as_f64().unwrap();
        let succeeded_rps = first["achieved_rps"].as_f64().unwrap()
            * (done - first["failed"].as_f64().unwrap())
            / done;
        let ceiling = capacity["ceiling_rps"].as_f64().unwrap();
        assert!(
            (ceiling - succeeded_rps).abs() <= 1e-9 * ceiling,
            "{capacity}"
        );
        let mut measured = 0;
        for step in steps {
            measured += step["done"].as_u64().unwrap();
            let Some(offered) = step["offered_rps"].as_f64() else {
                continue;
            };
            // The rule: a request of its own finished, every objective held and at least 97% of
            // the offered rate succeeded, less one request over the step (its schedule's count
            // is whole).
            let achieved = step["achieved_rps"].as_f64().unwrap();
            let done = step["done"].as_f64().unwrap();
            let succeeded = achieved * (done - step["failed"].as_f64().unwrap()) / done.max(1.0);
            let slack = 1.0 / step["measured_s"].as_f64().unwrap();
            let keeps = done > 0.0
                && step["p99_us"].as_u64().unwrap() < 50_000
                && succeeded >= 0.97 * offered - slack;
            assert_eq!(step["passed"], keeps, "{step}");
            // Its p50 and p99 each within their 95% interval (an open upper end reaching any
            // value), present whenever it has samples.
            for (value, ci) in [("p50_us", "p50_ci"), ("p99_us", "p99_ci")] {
                let bounds = &step[ci];
                if done == 0.0 {
                    assert!(bounds.is_null(), "{step}");
                    continue;
                }
                let value = step[value].as_u64().unwrap();
                assert!(bounds["ci_low"].as_u64().unwrap() <= value, "{step}");
                assert!(
                    bounds["ci_high"].as_u64().is_none_or(|high| value <= high),
                    "{step}"
                );
            }
            // The measured part follows the settling (a third of the step) and lasts at least
            // as long as the search waited: the worker published when asked at both edges.
            // Under load it runs longer, by the waits for a CPU at its end (14 ms seen with both
            // cores busy), never by the settling.
            let nominal = match step["phase"].as_str().unwrap() {
                "ramp" => 0.1,
                _ => 0.3,
            };
            let measured_s = step["measured_s"].as_f64().unwrap();
            assert!(
                (nominal..nominal * 4.0 / 3.0).contains(&measured_s),
                "{step}"
            );
            // The achieved rate is what the step counted over that: one worker thread (the
            // default), so exactly its count over its own span between the publications.
            let counted = done / measured_s;
            assert!(
                (counted - achieved).abs() <= 1e-9 * achieved.max(1.0),
                "{step}"
            );
        }
        // The steps' measured parts are a part of the cell (the settling is not in them).
        assert!(measured <= cell["requests"]["done"].as_u64().unwrap());
        let Some(found) = found else {
            continue;
        };
        // The capacity held for a full step, which the 100% point is.
        let full = steps.iter().any(|step| {
            step["offered_rps"].as_f64() == Some(found)
                && step["passed"] == true
                && (step["measured_s"].as_f64().unwrap() - 0.3).abs() < 0.05
        });
        assert!(full, "{capacity}");
        let shares: Vec<f64> = capacity["latency_at"]
            .as_array()
            .unwrap()
            .iter()
            .map(|point| point["share_pct"].as_f64().unwrap())
            .collect();
        assert_eq!(shares.last(), Some(&100.0), "{capacity}");
    }
    // After the sweep: one line, the objectives once; a capacity that is the client's ceiling
    // says so, and the ratio to the first protocol is there only between two of a kind.
    let line = output
        .stdout
        .lines()
        .find(|line| line.starts_with("capacity: h1 "))
        .unwrap_or_else(|| panic!("{}", output.stdout));
    assert_eq!(line, closing_line(&capacities, "p99<50ms"));
    // The knee plots: achieved and p50/p99 against offered, one series per cell.
    let page = std::fs::read_to_string(&html).unwrap();
    for id in ["knee-rate", "knee-latency"] {
        assert!(page.contains(&format!("id=\"{id}\"")), "{id}");
    }
    // Each step's p50 and p99 carry their interval as an error bar.
    let knee = &page[page.find("id=\"knee-latency\"").unwrap()..];
    let knee = &knee[..knee.find("</figure>").unwrap()];
    assert!(knee.matches(r#"class="ci""#).count() >= 4, "{knee}");
    for series in ["h1 c=2 m=1", "h2c c=2 m=1 p99", "achieved = offered"] {
        assert!(
            page.contains(&format!("data-series=\"{series}\"")),
            "{series}"
        );
    }
}

#[test]
fn fail_if_applies_to_the_whole_searched_cell() {
    let (output, json) = quick_search(&["--fail-if", "p99>1us", "-q"]);
    assert_eq!(output.code, 3, "{}", output.stderr);
    for cell in json["cells"].as_array().unwrap() {
        // The default objectives, and the threshold read on the cell's whole latency.
        assert_eq!(
            cell["capacity"]["objectives"],
            serde_json::json!(["p99<100ms", "errors<1%"])
        );
        assert_eq!(
            cell["thresholds"][0]["value"],
            cell["latency"]["request"]["percentiles"]["p99"]
                .as_f64()
                .unwrap()
        );
    }
    assert_eq!(
        output
            .stderr
            .lines()
            .filter(|line| line.starts_with("threshold breached: p99 "))
            .count(),
        2,
        "{}",
        output.stderr
    );
}

#[test]
fn the_search_sets_rates_and_lengths_itself() {
    let target = url("/ping");
    for (extra, says) in [
        (&["-n", "100"][..], "--requests"),
        (&["-D", "2s"], "--duration"),
        (&["--rate", "100"], "--rate"),
        (&["--stages", "1s:100"], "--stages"),
        (&["--slo", "p99>5ms"], "upper bound"),
        (&["--slo", "rps<5000"], "sets the rate itself"),
        (&["--precision", "0%"], "precision"),
        (&["--step-duration", "100ms"], "step length"),
    ] {
        let mut args = vec!["--find-max"];
        args.extend(extra);
        args.push(&target);
        assert_usage_error(&args, says);
    }
    // The search's flags mean nothing without it.
    for flag in [
        ["--slo", "p99<5ms"],
        ["--step-duration", "1s"],
        ["--precision", "5%"],
    ] {
        let run = run_command(BIN, &[flag[0], flag[1], &target]);
        assert_eq!(run.code, 2, "{flag:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("--find-max"),
            "{flag:?}: {}",
            run.stderr
        );
    }
}

#[test]
fn an_interrupted_search_reports_the_steps_it_took() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let child = std::process::Command::new(BIN)
        .args(["--h1", "-c", "2", "--find-max", "--step-duration", "3s"])
        .args(["--target-delay", "1ms", "--json", json.to_str().unwrap()])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The ceiling step (1 s settling, 3 s measured) is under way.
    std::thread::sleep(Duration::from_millis(2500));
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(130), "{stdout}");
    let document: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let cell = &document["cells"][0];
    assert_eq!(cell["interrupted"], true);
    assert_eq!(cell["connections"]["opened"], 2);
    // The search ended at the signal (the ceiling step took 1.33 s, ramp steps as long) and the
    // steps it took are kept: the ceiling of 2 connections on a 1 ms handler is about 1500 req/s
    // (more than 500 whatever the machine's load, at most 2000).
    let steps = cell["capacity"]["steps"].as_array().unwrap();
    assert!((1..=2).contains(&steps.len()), "{steps:?}");
    assert_eq!(steps[0]["phase"], "ceiling");
    let ceiling = steps[0]["achieved_rps"].as_f64().unwrap();
    assert!((500.0..=2000.0).contains(&ceiling), "{ceiling}");
    // The capacity found so far is marked as cut short, in the cell's block, the sweep's line
    // and the JSON.
    assert_eq!(cell["capacity"]["interrupted"], true);
    assert!(
        stdout.contains("; the search was interrupted\n"),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|line| line.starts_with("capacity: h1 ") && line.contains(" (interrupted) at ")),
        "{stdout}"
    );
}

#[test]
fn a_search_where_no_rate_passes_says_so_without_a_ratio() {
    // No response comes back within 1 µs: the ramp's first step and every halving fail.
    let (output, json) = quick_search(&["--slo", "p99<1us"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    for cell in json["cells"].as_array().unwrap() {
        assert_eq!(cell["capacity"]["capacity_rps"], serde_json::Value::Null);
        assert_eq!(cell["capacity"]["answer"]["kind"], "none");
        assert_eq!(cell["capacity"]["limited_by_client"], false);
    }
    assert!(
        output.stdout.lines().any(|line| line
            == "capacity: h1 none (no rate passed) at p99<1us; h2c none (no rate passed)"),
        "{}",
        output.stdout
    );
}

/// Issue 24 §6: a step counts only what its own schedule sent (no request of the step before
/// finishing in it, no send beyond its schedule): achieved ≤ offered, give or take the rounding
/// of one request over the step (1 / measured_s). And the text agrees with itself: a short
/// step's pass says it is short (only a full step confirms a rate), and the capacity line says
/// when no full step passed.
#[test]
fn each_step_counts_its_own_schedule_and_the_text_matches_the_table() {
    let (output, json) = search(&[
        "--h1",
        "-c",
        "2",
        "--target-delay",
        "2ms",
        "--find-max",
        "--step-duration",
        "300ms",
    ]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let capacity = &json["cells"][0]["capacity"];
    let steps = capacity["steps"].as_array().unwrap();
    let table: Vec<&str> = output
        .stdout
        .lines()
        .skip_while(|line| !line.starts_with("capacity search:"))
        .skip(2)
        .take(steps.len())
        .collect();
    // The share column counts failed requests (error statuses too), as `failed` does elsewhere.
    let header = output
        .stdout
        .lines()
        .skip_while(|line| !line.starts_with("capacity search:"))
        .nth(1)
        .unwrap();
    assert!(header.ends_with("   failed  result"), "{header}");
    let mut full_passes = Vec::new();
    let mut short_passes = 0;
    for (step, row) in steps.iter().zip(&table) {
        let Some(offered) = step["offered_rps"].as_f64() else {
            continue;
        };
        let achieved = step["achieved_rps"].as_f64().unwrap();
        let measured_s = step["measured_s"].as_f64().unwrap();
        assert!(
            achieved <= offered + 1.0 / measured_s + 1e-9,
            "achieved above offered: {step}"
        );
        let short = step["phase"] == "ramp";
        let verdict = match (step["passed"].as_bool().unwrap(), short) {
            (true, true) => {
                short_passes += 1;
                "pass (short)"
            }
            (true, false) => {
                full_passes.push(offered);
                "pass"
            }
            (false, _) => "fail",
        };
        assert!(row.ends_with(&format!("  {verdict}")), "{row}\n{step}");
    }
    let line = output
        .stdout
        .lines()
        .find(|line| line.starts_with("capacity: "))
        .unwrap();
    assert!(
        line.starts_with(&format!("capacity: {}", figure(&capacity["answer"]))),
        "{line}\n{capacity}"
    );
    // On a busy machine even the lowest rates may fail; the line then says which case it is.
    match capacity["answer"]["kind"].as_str().unwrap() {
        "consistent" => {
            let found = capacity["capacity_rps"].as_f64().unwrap();
            assert!(full_passes.contains(&found), "{capacity}");
        }
        "inconsistent" => assert!(!full_passes.is_empty(), "{capacity}"),
        _ if short_passes > 0 => {
            assert!(full_passes.is_empty(), "{capacity}");
            assert_eq!(line, "capacity: none (no rate passed a full step)");
        }
        _ => {
            assert!(full_passes.is_empty(), "{capacity}");
            assert_eq!(line, "capacity: none (no rate passed)");
        }
    }
}

/// `--find-max --arrival poisson`: the paced steps' send times are a Poisson process at each
/// step's rate (neighbouring gaps in the proportions of exponential ones), and the search still
/// finds a capacity that a full step passed.
#[test]
fn a_search_with_poisson_arrivals_paces_its_steps_with_exponential_gaps() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.tsv");
    let target = url("/ping");
    let (output, json) = search(&[
        "--h1",
        "-c",
        "16",
        "--find-max",
        "--step-duration",
        "300ms",
        "--arrival",
        "poisson",
        "--seed",
        "5",
        "--log-file",
        log.to_str().unwrap(),
        &target,
    ]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let cell = &json["cells"][0];
    assert_eq!(cell["settings"]["arrival"], "poisson");
    let capacity = &cell["capacity"];
    let found = capacity["capacity_rps"].as_f64().unwrap();
    assert!(found > 0.0, "{capacity}");
    let steps = capacity["steps"].as_array().unwrap();
    assert!(
        steps
            .iter()
            .any(|step| step["offered_rps"].as_f64() == Some(found) && step["passed"] == true),
        "{capacity}"
    );
    // The unpaced ceiling step comes first and sends as fast as it can; the later part of the
    // search (its first fifth at most) is paced steps alone.
    let times = scheduled_send_times(&log);
    let (distance, critical) = poisson_pair_distance(&times[times.len() * 2 / 5..]);
    assert!(
        distance < critical,
        "pairs of gaps {distance:.4} from exponential ones (1% critical {critical:.4}), {} send times",
        times.len()
    );
}

/// `8,450`: a rate as the report groups it, whole, with thousands separators.
fn grouped(rate: f64) -> String {
    let digits = format!("{rate:.0}");
    let mut out = String::new();
    for (at, digit) in digits.chars().enumerate() {
        if at > 0 && (digits.len() - at) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// The figure every output must state for a JSON `capacity.answer`, formatted here from its
/// numbers: `8,450 req/s (8,450–8,870)`, `at least 8,450 req/s` (no rate above failed; `at least
/// 8,450 req/s (every step at 8,000 held)` when the steps at the capacity disagreed),
/// `inconsistent: between 1,748 and 3,497 req/s`, `none (no rate passed)`.
pub(crate) fn figure(answer: &serde_json::Value) -> String {
    match answer["kind"].as_str().unwrap() {
        "consistent" => {
            let rate = grouped(answer["capacity_rps"].as_f64().unwrap());
            let interval = &answer["interval"];
            match interval["high"].as_f64() {
                Some(high) => format!(
                    "{rate} req/s ({}–{})",
                    grouped(interval["low"].as_f64().unwrap()),
                    grouped(high)
                ),
                None if interval["low"] != answer["capacity_rps"] => format!(
                    "at least {rate} req/s (every step at {} held)",
                    grouped(interval["low"].as_f64().unwrap())
                ),
                None => format!("at least {rate} req/s"),
            }
        }
        "inconsistent" => format!(
            "inconsistent: between {} and {} req/s",
            grouped(answer["between"][0].as_f64().unwrap()),
            grouped(answer["between"][1].as_f64().unwrap())
        ),
        "none" => format!("none ({})", answer["reason"].as_str().unwrap()),
        kind => panic!("capacity answer of kind {kind}"),
    }
}

/// `h2c/h1 = 1.06 (1.01–1.09)`: `capacity` over `first`'s (JSON `capacity` objects), from their
/// answers: only between two consistent searches of a kind (both bounded by a failing rate, or
/// both open), none cut short; the ratio of the two capacities, its range from the low end over
/// the other's high to the reverse.
fn ratio_text(
    label: &str,
    capacity: &serde_json::Value,
    first: &serde_json::Value,
) -> Option<String> {
    let bounded = |capacity: &serde_json::Value| {
        let answer = &capacity["answer"];
        (answer["kind"] == "consistent" && capacity["interrupted"] == false).then(|| {
            (
                answer["capacity_rps"].as_f64().unwrap(),
                answer["interval"]["low"].as_f64().unwrap(),
                answer["interval"]["high"].as_f64(),
            )
        })
    };
    let ((rate, low, high), (first_rate, first_low, first_high)) =
        (bounded(capacity)?, bounded(first)?);
    if high.is_some() != first_high.is_some() {
        return None;
    }
    let ratio = rate / first_rate;
    Some(match high.zip(first_high) {
        Some((high, first_high)) => format!(
            "{label} = {ratio:.2} ({:.2}–{:.2})",
            low / first_high,
            high / first_low
        ),
        None => format!("{label} = {ratio:.2}"),
    })
}

/// The sweep's closing line for one level of an h1 and an h2c cell (their JSON `capacity`):
/// each cell's figure with its caveat, the objectives once, the ratio when there is one.
fn closing_line(capacities: &[serde_json::Value], objectives: &str) -> String {
    let [h1, h2c] = capacities else {
        panic!("{capacities:?}")
    };
    let caveat = |capacity: &serde_json::Value| {
        if capacity["interrupted"] == true {
            " (interrupted)"
        } else if capacity["answer"]["kind"] == "consistent"
            && capacity["answer"]["interval"]["high"].is_null()
            && capacity["limited_by_client"] == true
        {
            " (the client's ceiling: raise -c or -m)"
        } else {
            ""
        }
    };
    let ratio = ratio_text("h2c/h1", h2c, h1).map_or_else(String::new, |text| format!(", {text}"));
    format!(
        "capacity: h1 {}{} at {objectives}; h2c {}{}{ratio}",
        figure(&h1["answer"]),
        caveat(h1),
        figure(&h2c["answer"]),
        caveat(h2c)
    )
}

fn html_escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Issue 36 §3: a target whose capacity alternates, every other second each response waiting
/// 9 ms more (4 connections: about 4 / 1 ms, then 4 / 10 ms = 400 req/s), makes a search's
/// verdicts depend on when each step ran: before, a rate failed below one that passed and the
/// search still printed the higher as its capacity, the comparison table another ratio and the
/// HTML none. Now contradicting rates are taken again, and whatever the search concludes, the cell's
/// line, the closing line, the comparison table in text, Markdown, CSV and HTML, and the JSON state
/// the same answer: one figure with its interval, or `inconsistent: between X and Y req/s` (no bare
/// figure) with the steps that contradict; the ratio comes from the two answers. Which form
/// occurs depends on the machine's load; each is checked.
#[test]
fn a_target_whose_capacity_alternates_gets_one_answer_in_every_output() {
    let files = Exports::new();
    let mut args = h1_and_h2c_searches("1ms");
    args.extend([
        "--target-slow-every",
        "1s",
        "--target-slow-by",
        "9ms",
        "--slo",
        "p99<30ms",
    ]);
    args.extend(files.args());
    let (output, json) = search(&args);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let figures = assert_one_answer_everywhere(&output, &json, &files, "p99<30ms");
    eprintln!("answers: {figures:?}");
}

/// `--proto h1,h2c -c 4 --target-delay DELAY --find-max --step-duration 300ms`: a quick search
/// of each protocol against a built-in target of this service time.
fn h1_and_h2c_searches(delay: &str) -> Vec<&str> {
    vec![
        "--proto",
        "h1,h2c",
        "-c",
        "4",
        "--target-delay",
        delay,
        "--find-max",
        "--step-duration",
        "300ms",
    ]
}

/// The CSV, Markdown and HTML exports of a run, in a directory of their own.
struct Exports {
    _dir: tempfile::TempDir,
    csv: String,
    markdown: String,
    html: String,
}

impl Exports {
    fn new() -> Exports {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
        Exports {
            csv: path("r.csv"),
            markdown: path("r.md"),
            html: path("r.html"),
            _dir: dir,
        }
    }

    /// The flags that write them.
    fn args(&self) -> [&str; 6] {
        [
            "--csv",
            &self.csv,
            "--markdown",
            &self.markdown,
            "--html",
            &self.html,
        ]
    }
}

/// Asserts that a search of an h1 and an h2c cell (objectives `objectives`) states one answer per
/// cell in every output: the JSON's `answer`, `capacity_rps` and `failing_rps` agree and an
/// inconsistent answer names full steps; the cells' `capacity:` lines, the closing line, the text
/// comparison table, the Markdown, the HTML and the CSV state the same figures, and the ratio from
/// the two answers. Returns the figures.
fn assert_one_answer_everywhere(
    output: &Output,
    json: &serde_json::Value,
    files: &Exports,
    objectives: &str,
) -> Vec<String> {
    let cells = json["cells"].as_array().unwrap();
    let capacities: Vec<serde_json::Value> =
        cells.iter().map(|cell| cell["capacity"].clone()).collect();
    let figures: Vec<String> = capacities
        .iter()
        .map(|capacity| figure(&capacity["answer"]))
        .collect();
    eprintln!("answers: {figures:?}");
    // The JSON: `capacity_rps` is the figure only when consistent, never a bare number beside
    // an inconsistent answer.
    for (capacity, row) in capacities
        .iter()
        .zip(json["comparison"].as_array().unwrap())
    {
        let answer = &capacity["answer"];
        assert_eq!(
            row["capacity"], *answer,
            "the comparison's answer is the cell's"
        );
        assert_eq!(capacity["capacity_rps"], answer["capacity_rps"]);
        let steps = capacity["steps"].as_array().unwrap();
        match answer["kind"].as_str().unwrap() {
            "consistent" => assert_eq!(
                capacity["failing_rps"], answer["interval"]["high"],
                "{capacity}"
            ),
            "inconsistent" => {
                assert!(capacity["capacity_rps"].is_null());
                assert!(capacity["latency_at"].as_array().unwrap().is_empty());
                let [low, high] = [0, 1].map(|end| answer["between"][end].as_f64().unwrap());
                assert!(low < high, "{answer}");
                // The steps named contradict: a pass at or above a rate that failed, or the
                // reverse, among the full steps.
                let named = answer["contradicting_steps"].as_array().unwrap();
                assert!(!named.is_empty(), "{answer}");
                for number in named {
                    let step = &steps[number.as_u64().unwrap() as usize - 1];
                    assert_ne!(step["phase"], "ramp", "{step}");
                    assert_ne!(step["phase"], "ceiling", "{step}");
                }
            }
            kind => assert_eq!(kind, "none", "{answer}"),
        }
        // Repeats are bounded: twice a rate, six in all, each a step's rounds.
        let rounds = capacity["rounds"].as_u64().unwrap() as usize;
        let repeats: Vec<f64> = steps
            .iter()
            .filter(|step| step["phase"] == "repeat")
            .map(|step| step["offered_rps"].as_f64().unwrap())
            .collect();
        assert!(repeats.len() <= 6 * rounds, "{repeats:?}");
        for rate in &repeats {
            assert!(repeats.iter().filter(|other| *other == rate).count() <= 2 * rounds);
        }
    }
    // The cells' lines and the closing line.
    let cell_lines: Vec<&str> = output
        .stdout
        .lines()
        .filter(|line| line.starts_with("capacity: ") && !line.starts_with("capacity: h1 "))
        .collect();
    assert_eq!(cell_lines.len(), 2, "{}", output.stdout);
    for (line, figure) in cell_lines.iter().zip(&figures) {
        let stated = line["capacity: ".len()..].split("; ").next().unwrap();
        assert_eq!(stated, figure, "{line}");
    }
    let closing = closing_line(&capacities, objectives);
    assert!(
        output.stdout.lines().any(|line| line == closing),
        "{closing}\n{}",
        output.stdout
    );
    let ratio = ratio_text("h2c/h1", &capacities[1], &capacities[0]);
    // The text comparison table: each row its cell's figure; the second the ratio of the two.
    let table = crate::common::comparison_rows(&output.stdout);
    assert_eq!(table.len(), 2, "{}", output.stdout);
    for (row, figure) in table.iter().zip(&figures) {
        assert_eq!(&row["capacity"], figure, "{row:?}");
    }
    assert_eq!(
        ratio.as_deref().unwrap_or(""),
        table[1]["vs first"],
        "{:?}",
        table[1]
    );
    // Markdown and HTML: the same texts in the table's cells; the HTML closes with the line.
    let markdown = std::fs::read_to_string(&files.markdown).unwrap();
    let page = std::fs::read_to_string(&files.html).unwrap();
    for figure in &figures {
        assert!(markdown.contains(&format!("| {figure} |")), "{markdown}");
        assert!(
            page.contains(&format!("<td>{}</td>", html_escaped(figure))),
            "{figure}"
        );
    }
    assert!(page.contains(&format!(
        r#"<p class="capacity">{}</p>"#,
        html_escaped(&closing)
    )));
    if let Some(ratio) = &ratio {
        assert!(markdown.contains(&format!("| {ratio} |")), "{markdown}");
        assert!(page.contains(&format!("<td>{}</td>", html_escaped(ratio))));
    }
    // The CSV: the answer in three columns of whole req/s, the ratio as the text says it.
    let csv = std::fs::read_to_string(&files.csv).unwrap();
    let mut lines = csv.lines();
    let titles: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = |title: &str| titles.iter().position(|t| *t == title).unwrap();
    for (line, capacity) in lines.zip(&capacities) {
        let fields: Vec<&str> = line.split(',').collect();
        let answer = &capacity["answer"];
        let whole =
            |value: &serde_json::Value| value.as_f64().map_or(String::new(), |v| format!("{v:.0}"));
        let expected = match answer["kind"].as_str().unwrap() {
            "consistent" => [
                whole(&answer["capacity_rps"]),
                whole(&answer["interval"]["low"]),
                whole(&answer["interval"]["high"]),
            ],
            "inconsistent" => [
                "inconsistent".to_owned(),
                whole(&answer["between"][0]),
                whole(&answer["between"][1]),
            ],
            _ => ["none".to_owned(), String::new(), String::new()],
        };
        let found =
            ["capacity", "capacity low", "capacity high"].map(|title| fields[column(title)]);
        assert_eq!(found, expected.each_ref().map(String::as_str), "{line}");
    }
    let csv_ratio = csv.lines().nth(2).unwrap().rsplit(',').next().unwrap();
    assert_eq!(csv_ratio, ratio.as_deref().unwrap_or(""));
    figures
}

/// `--find-max --rounds 3` (issue 36 §1 and §3): each step of the search is taken three times in
/// a row, each round on fresh connections, and every output states the one answer the rounds
/// give together. The target: 4 connections, each response held 10 ms, so the truth is at most
/// 4 / 10 ms = 400 req/s (less the round trip's overhead, a few percent; no paced rate above can
/// be delivered, and the search fails a step delivering less than 97% of its rate).
#[test]
fn find_max_with_rounds_takes_each_step_three_times_and_states_one_answer() {
    let noise = timer_noise();
    // 50 ms at p99 (five times the service time), stretched by the machine's slowdown as the
    // search's steps are: a loaded machine's queueing is not the target's.
    let slo = format!(
        "p99<{}ms",
        noise.stretch(Duration::from_millis(50), 2.0).as_millis()
    );
    let files = Exports::new();
    let mut args = h1_and_h2c_searches("10ms");
    args.extend(["--rounds", "3", "--slo", &slo, "--precision", "10%"]);
    args.extend(files.args());
    let limit = noise.stretch(SEARCH_LIMIT, 2.0);
    let (output, json) = search_within(&args, limit);
    assert_eq!(output.code, 0, "{}", output.stderr);
    // One run a cell (the search takes the rounds), not three runs of each.
    let cells = json["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2, "{}", output.stdout);
    assert!(json["rounds"].is_null(), "{}", json["rounds"]);
    assert!(!output.stdout.contains("=== round"), "{}", output.stdout);
    let mut announced = output
        .stderr
        .lines()
        .filter(|line| line.starts_with("find-max step "));
    for cell in cells {
        let capacity = &cell["capacity"];
        assert_eq!(capacity["rounds"], 3);
        let steps = capacity["steps"].as_array().unwrap();
        // Every step three times: the rounds of a step are consecutive, of one phase and rate,
        // and the progress lines name each round.
        assert_eq!(steps.len() % 3, 0, "{} steps", steps.len());
        for (at, step) in steps.iter().enumerate() {
            let first = &steps[at - at % 3];
            assert_eq!(
                (&step["phase"], &step["offered_rps"]),
                (&first["phase"], &first["offered_rps"]),
                "step {}",
                at + 1
            );
            let line = announced.next().unwrap();
            let named = format!("find-max step {} (round {}/3): ", at + 1, at % 3 + 1);
            assert!(line.starts_with(&named), "{line}");
        }
        // Each round on fresh connections: 4 opened for each step.
        assert_eq!(
            cell["connections"]["opened"].as_u64().unwrap(),
            4 * steps.len() as u64,
            "{} steps",
            steps.len()
        );
        // The capacity is the truth's, within 35% below (stretched by the machine's slowdown,
        // at most twice: a loaded machine's steps deliver less) and 5% above (the schedule's
        // own noise): a search off by half, or past what 4 connections can carry, fails. A
        // search a busy machine made contradict itself must have the truth in its range.
        let answer = &capacity["answer"];
        let (low_end, high_end) = match answer["kind"].as_str().unwrap() {
            "inconsistent" => (
                answer["between"][0].as_f64().unwrap(),
                answer["between"][1].as_f64().unwrap(),
            ),
            "consistent" => {
                let found = answer["capacity_rps"].as_f64().unwrap();
                (found, found)
            }
            _ => panic!("no capacity: {answer}\n{}", output.stdout),
        };
        let low = 400.0 * (1.0 - 0.35 * noise.slowdown(2.0));
        assert!(
            low_end <= 420.0 && high_end >= low,
            "{answer}: at least {low:.0} req/s, at most 420 ({noise})\n{}",
            output.stdout
        );
    }
    assert_eq!(announced.next(), None);
    let figures = assert_one_answer_everywhere(&output, &json, &files, &slo);
    eprintln!(
        "find-max --rounds 3: {figures:?} in {:.1} s ({noise})",
        output.wall.as_secs_f64()
    );
}
