//! Figures that must agree with each other (issue 24 §6): each count says its unit, the plain
//! words say what the table says, and the JSON's figures add up.

use serde_json::json;

use crate::common::h2load_rs;

/// A TLS failure: no --cacert, so the one connection attempt fails on the unknown issuer and the
/// 10 requests are never sent. `errored` counts requests, `connections.failed` attempts; the
/// `errors:` line printed `1 tls` beside `10 errored` without saying which was which.
#[test]
fn error_counts_say_their_unit() {
    let run = h2load_rs(&["-n", "10", "-c", "1", &crate::h3::url("/ping")]);
    assert_eq!(run.output.code, 1, "{}", run.output.stderr);
    let cell = run.cell();
    assert_eq!(
        (
            &cell["requests"]["errored"],
            &cell["requests"]["never_sent"]
        ),
        (&json!(10), &json!(10))
    );
    assert_eq!(cell["connections"]["failed"], 1);
    assert_eq!(cell["errors"], json!({ "tls": 1 }), "kept as it was");
    assert_eq!(cell["connection_errors"], json!({ "tls": 1 }));
    assert_eq!(cell["request_errors"], json!({}));
    let text = &run.output.stdout;
    assert!(
        text.contains("\nerrors: 10 requests (10 never sent), 1 connection attempt (1 tls)\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "10 of 10 requests (100.0%) got no complete response, most often because no connection \
             could carry them (never sent: 10; connection attempts failed: 1, most often tls)"
        ),
        "{text}"
    );

    // Requests that fail on an established connection are requests.
    let run = h2load_rs(&[
        "--target-fault",
        "reset-mid-response",
        "--h1",
        "-n",
        "6",
        "-c",
        "1",
    ]);
    let cell = run.cell();
    let errored = cell["requests"]["errored"].as_u64().unwrap();
    assert_eq!(errored, 6, "{}", run.output.stdout);
    assert_eq!(cell["connections"]["failed"], 0);
    assert_eq!(cell["connection_errors"], json!({}));
    assert_eq!(cell["request_errors"], cell["errors"]);
    let kind = cell["errors"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    assert!(
        run.output
            .stdout
            .contains(&format!("\nerrors: 6 requests (6 {kind})\n")),
        "{}",
        run.output.stdout
    );
}

/// `--requests-per-connection 1` opens a connection per request: the plain words said "4
/// concurrent requests took 40 connections", mixing connections at once with connections over
/// the run.
#[test]
fn the_plain_words_tell_connections_at_once_from_connections_opened() {
    let run = h2load_rs(&[
        "--h1",
        "-c",
        "4",
        "-n",
        "40",
        "--requests-per-connection",
        "1",
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    assert_eq!(run.cell()["connections"]["opened"], 40);
    let text = &run.output.stdout;
    assert!(
        text.contains(
            "  - HTTP/1.1 carries one request at a time per connection: 4 concurrent requests \
             took 4 connections at once (40 opened over the run)\n"
        ),
        "{text}"
    );
    // Without churn the two are the same number.
    let run = h2load_rs(&["--h1", "-c", "3", "-n", "30"]);
    assert!(
        run.output.stdout.contains(
            "  - HTTP/1.1 carries one request at a time per connection: 3 concurrent requests \
             took 3 connections\n"
        ),
        "{}",
        run.output.stdout
    );
}

/// `--proto h1,h2,h3` without a URL compared cleartext HTTP/1.1 with h2 and h3 over TLS (`h2/h1 =
/// 0.12`): the built-in target's h1 cell now runs over TLS when another cell does. h2c stays
/// cleartext (its name says so), and a sweep with no TLS cell keeps h1 cleartext.
#[test]
fn a_protocol_comparison_puts_every_cell_on_the_same_side_of_tls() {
    let run = h2load_rs(&["--proto", "h1,h2,h3", "-n", "20", "-c", "1"]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let cells = run.json["cells"].as_array().unwrap();
    let seen: Vec<(&str, &str, bool)> = cells
        .iter()
        .map(|cell| {
            (
                cell["protocol"]["negotiated"].as_str().unwrap(),
                cell["settings"]["urls"][0]
                    .as_str()
                    .unwrap()
                    .split(':')
                    .next()
                    .unwrap(),
                cell["protocol"]["tls"].is_object(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("http/1.1", "https", true),
            ("h2", "https", true),
            ("h3", "https", true)
        ]
    );
    // The ratios name the h1 cell as what it was.
    assert_eq!(run.json["comparison"][1]["ratio"][0], "h2/h1-tls");
    assert!(
        run.output.stdout.contains("(h2/h1-tls = "),
        "{}",
        run.output.stdout
    );
    let run = h2load_rs(&["--proto", "h1,h2c", "-n", "20", "-c", "1"]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    for cell in run.json["cells"].as_array().unwrap() {
        assert!(cell["settings"]["urls"][0]
            .as_str()
            .unwrap()
            .starts_with("http://"));
        assert!(cell["protocol"]["tls"].is_null());
    }
}

/// Every figure of a cell's JSON that another one determines, checked against it, and the text
/// report's counts against the JSON's.
fn assert_figures_agree(run: &crate::common::Run, name: &str) {
    let cell = run.cell();
    let int = |path: &str| run.int(path);
    let sum = |path: &str| -> u64 {
        cell.pointer(path)
            .and_then(serde_json::Value::as_object)
            .unwrap_or_else(|| panic!("{name}: no {path}"))
            .values()
            .map(|count| count.as_u64().unwrap())
            .sum()
    };
    let (done, errored, never_sent) = (
        int("requests/done"),
        int("requests/errored"),
        int("requests/never_sent"),
    );
    // `failed` and `errored` count the requests never sent too; `done` does not.
    assert_eq!(
        int("requests/succeeded") + int("requests/failed"),
        done + never_sent,
        "{name}"
    );
    assert_eq!(
        int("requests/started") + never_sent,
        int("requests/total"),
        "{name}"
    );
    let responses = sum("/status_codes");
    assert_eq!(responses + errored - never_sent, done, "{name}");
    // Rates are counts over the elapsed time.
    let elapsed = run.num("elapsed_s");
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0);
    assert!(
        close(run.num("requests_per_s"), done as f64 / elapsed),
        "{name}"
    );
    assert!(
        close(
            run.num("bytes_per_s"),
            int("traffic/total_bytes") as f64 / elapsed
        ),
        "{name}"
    );
    // Errors by unit add up to their counters.
    assert_eq!(sum("/request_errors") + never_sent, errored, "{name}");
    assert_eq!(
        sum("/connection_errors"),
        int("connections/failed"),
        "{name}"
    );
    assert_eq!(
        sum("/errors"),
        sum("/request_errors")
            + sum("/connection_errors")
            + cell["checks"]["failed"].as_u64().unwrap_or(0),
        "{name}"
    );
    // Latency: one sample per response, percentiles in order up to the max, the timeline's
    // intervals adding up to the totals.
    let request = &cell["latency"]["request"];
    assert_eq!(request["count"].as_u64().unwrap(), responses, "{name}");
    assert_eq!(
        cell["latency"]["ttfb"]["count"].as_u64().unwrap(),
        responses,
        "{name}"
    );
    let percentiles: Vec<u64> = ["p50", "p75", "p90", "p95", "p99", "p99.9", "p99.99", "max"]
        .iter()
        .map(|label| request["percentiles"][label].as_u64().unwrap())
        .collect();
    assert!(
        percentiles.windows(2).all(|pair| pair[0] <= pair[1]),
        "{name}: {request}"
    );
    let max = *percentiles.last().unwrap();
    assert_eq!(request["max"].as_f64().unwrap(), max as f64, "{name}");
    assert!(
        request["min"].as_f64().unwrap() <= percentiles[0] as f64,
        "{name}"
    );
    let intervals = cell["timeline"]["intervals"].as_array().unwrap();
    let field = |key: &'static str| {
        intervals
            .iter()
            .map(move |interval| interval[key].as_u64().unwrap())
    };
    assert_eq!(field("completed").sum::<u64>(), responses, "{name}");
    assert_eq!(field("max_us").max().unwrap_or(0), max, "{name}");
    assert_eq!(field("errors").sum::<u64>() + never_sent, errored, "{name}");
    assert!(
        close(
            run.num("connections/per_s"),
            int("connections/measured") as f64 / elapsed
        ),
        "{name}"
    );
    // The text says the same numbers.
    crate::common::assert_text_matches_json(run, name);
}

/// The responses' wait in the kernel for h2load-rs: one sample per response where the transport
/// is a TCP socket (TLS included), none where it gives no receive timestamps (HTTP/3). A wait
/// runs from the arrival of the newest byte read to the read, after the request was sent: it is
/// within its response's latency, so each percentile is within the latency's (give or take the
/// wall clock's slew against the monotonic one, at most 0.05%, and a microsecond of rounding).
pub(crate) fn assert_receive_wait(run: &crate::common::Run, name: &str, stamped: bool) {
    let latency = &run.cell()["latency"];
    let wait = &latency["receive_wait"];
    if !stamped {
        assert!(wait.is_null(), "{name}: {wait}");
        return;
    }
    assert_eq!(wait["count"], latency["request"]["count"], "{name}");
    for label in ["p50", "p99", "p99.9", "max"] {
        let (ours, whole) = (
            wait["percentiles"][label].as_u64().unwrap(),
            latency["request"]["percentiles"][label].as_u64().unwrap(),
        );
        assert!(
            ours as f64 <= whole as f64 * 1.0005 + 1.0,
            "{name}: {label} wait {ours} µs, latency {whole} µs"
        );
    }
}

/// The figures of one run per protocol (h1, h2c, h2, h3 against the built-in target) agree.
#[test]
fn every_protocol_reports_figures_that_agree() {
    let cleartext = crate::common::url("/bytes/300");
    let tls = crate::h3::url("/bytes/300");
    for (proto, url) in [
        ("h1", &cleartext),
        ("h2c", &cleartext),
        ("h2", &tls),
        ("h3", &tls),
    ] {
        let run = h2load_rs(&[
            "--proto",
            proto,
            "--cacert",
            crate::h3::CA,
            "-c",
            "2",
            "-m",
            "4",
            "-n",
            "400",
            url,
        ]);
        assert_eq!(run.output.code, 0, "{proto}: {}", run.output.stderr);
        assert_eq!(run.int("requests/succeeded"), 400, "{proto}");
        assert_figures_agree(&run, proto);
        // Stamped: TCP read by epoll (under `H2LOAD_RS_IO=uring` the TCP runs are on the ring).
        let epoll = run.cell()["settings"]["io"] == "epoll";
        assert_receive_wait(&run, proto, proto != "h3" && epoll);
    }
    // And runs with errors: a TLS failure (connection attempts, requests never sent), streams
    // reset (requests), a timed run's drain.
    let run = h2load_rs(&["-n", "10", "-c", "1", &tls]);
    assert_figures_agree(&run, "tls failure");
    let run = h2load_rs(&[
        "--target-fault",
        "rst-stream-every=5",
        "--proto",
        "h2c",
        "-n",
        "50",
    ]);
    assert_eq!(run.int("requests/errored"), 10);
    assert_figures_agree(&run, "stream resets");
    let run = h2load_rs(&[
        "--proto",
        "h2c",
        "-c",
        "2",
        "-D",
        "1s",
        "--target-delay",
        "3ms",
    ]);
    assert_figures_agree(&run, "timed");
}

/// Every table's error column names its unit, as the `errors:` line and the JSON do: the
/// comparison's column (text, Markdown, HTML, CSV) and the timeline CSV's count requests that got
/// no complete response, so they say "request errors"; the capacity table's is the share of
/// requests that failed. Each holds the cell's `requests.errored` (10 of 50: every fifth stream
/// reset on one connection).
#[test]
fn table_columns_say_which_errors_they_count() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let (csv, markdown, html, timeline) = (
        path("t.csv"),
        path("t.md"),
        path("t.html"),
        path("timeline.csv"),
    );
    let run = h2load_rs(&[
        "--target-fault",
        "rst-stream-every=5",
        "--proto",
        "h2c",
        "-c",
        "1,2",
        "-n",
        "50",
        "--csv",
        &csv,
        "--markdown",
        &markdown,
        "--html",
        &html,
        "--csv-timeline",
        &timeline,
    ]);
    let errored: Vec<String> = run.json["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|cell| cell["requests"]["errored"].to_string())
        .collect();
    // One connection: streams 5, 10, … reset.
    assert_eq!(errored[0], "10");
    // Every cell ran: no stop between cells to report.
    assert_eq!(
        run.json.get("stopped_between_cells"),
        Some(&serde_json::Value::Null)
    );
    let read = |path: &str| std::fs::read_to_string(path).unwrap();
    // The column of `title` in a table whose titles `split` divides, and its values (up to a
    // blank line: the verdicts may come before the Markdown table, a legend after it).
    let column = |table: &str, split: &dyn Fn(&str) -> Vec<String>, title: &str| {
        let mut lines = table
            .lines()
            .skip_while(|line| line.starts_with("- ") || line.is_empty())
            .take_while(|line| !line.is_empty())
            .filter(|line| !line.starts_with("|--"));
        let titles = split(lines.next().unwrap());
        assert!(!titles.iter().any(|t| t == "errors"), "{titles:?}");
        let at = titles.iter().position(|t| t == title).unwrap_or_else(|| {
            panic!("no {title:?} in {titles:?}");
        });
        lines
            .map(|line| split(line).get(at).cloned().unwrap_or_default())
            .collect::<Vec<_>>()
    };
    let by_comma = |line: &str| line.split(',').map(str::to_owned).collect::<Vec<_>>();
    let by_bar = |line: &str| {
        line.trim_matches('|')
            .split('|')
            .map(|cell| cell.trim().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(column(&read(&csv), &by_comma, "request errors"), errored);
    assert_eq!(column(&read(&markdown), &by_bar, "request errors"), errored);
    let timeline = read(&timeline);
    let in_timeline: u64 = column(&timeline, &by_comma, "request_errors")
        .iter()
        .map(|count| count.parse::<u64>().unwrap())
        .sum();
    let total: u64 = errored
        .iter()
        .map(|count| count.parse::<u64>().unwrap())
        .sum();
    assert_eq!(in_timeline, total, "{timeline}");
    assert!(read(&html).contains("<th>request errors</th>"));
    // The text table (stacked: the header of the part with the counts): titles are separated by
    // two spaces or more.
    let text = &run.output.stdout;
    let header = text
        .lines()
        .find(|line| line.starts_with("#  protocol") && line.contains("request errors"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(header.contains("  request errors  "), "{header}");
}
