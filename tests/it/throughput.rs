//! The throughput the report states, against what is known (curl's own measure of a download is
//! in tests/truth/download.rs, which times it on a machine of its own): the bytes a run moved over its measured period, and the
//! decimal units (1 MB = 10^6 bytes, 1 Gbit/s = 10^9 bits a second) docs/reference.md promises.

use crate::common::{assert_usage_error, finished_fields, h2load_rs, throughput, url, Run};

/// h2load-rs run with `args`, checked to have exited 0.
fn succeeded(args: &[&str]) -> Run {
    let run = h2load_rs(args);
    assert_eq!(run.output.code, 0, "{args:?}: {}", run.output.stderr);
    run
}

/// Uploads lead with the request bodies sent: 4 of 8 MB each over h2c to `/ping`, whose answers
/// are 4 bytes, state 32 MB over the measured period; the bytes received come last.
#[test]
fn an_upload_states_its_request_bodies() {
    let dir = tempfile::tempdir().expect("temp dir");
    let body = dir.path().join("body");
    std::fs::write(&body, vec![b'x'; 8_000_000]).expect("body file written");
    let body = body.to_str().expect("utf-8 path");
    let run = succeeded(&["-c", "1", "-n", "4", "-d", body, &url("/ping")]);
    assert_eq!(run.int("requests/succeeded"), 4);
    assert_eq!(run.int("settings/body_bytes"), 8_000_000);
    let fields = finished_fields(&run.output.stdout);
    assert_eq!(fields.len(), 4, "{fields:?}");
    let sent = fields[1]
        .strip_suffix(" sent in request bodies")
        .unwrap_or_else(|| panic!("{fields:?}"));
    let truth = 32e6 / run.num("elapsed_s");
    assert!(
        (throughput(sent) / truth - 1.0).abs() < 0.005,
        "{fields:?}: 32 MB in {} s",
        run.num("elapsed_s")
    );
    // The measured period is within the process's life: the rate is at least 32 MB over that.
    assert!(throughput(sent) >= 32e6 / run.output.wall.as_secs_f64() * 0.995);
    assert!(fields[2].ends_with(" req/s"), "{fields:?}");
    let received = fields[3]
        .strip_suffix(" received")
        .unwrap_or_else(|| panic!("{fields:?}"));
    assert!((throughput(received) / run.num("bytes_per_s") - 1.0).abs() < 0.005);
}

/// Small bodies keep h2load's order, req/s first; the traffic line, the comparison's columns
/// (text, CSV, JSON) count in decimal units: 50 bodies of 100,000 bytes are `5.00 MB` of data.
#[test]
fn requests_lead_small_bodies_and_every_unit_is_decimal() {
    let dir = tempfile::tempdir().expect("temp dir");
    let csv = dir.path().join("table.csv");
    let path = csv.to_str().expect("utf-8 path");
    let run = succeeded(&[
        "--h1",
        "-c",
        "1",
        "-n",
        "50",
        "--csv",
        path,
        &url("/bytes/100000"),
    ]);
    let stdout = &run.output.stdout;
    let fields = finished_fields(stdout);
    assert_eq!(fields.len(), 3, "{fields:?}");
    assert!(fields[1].ends_with(" req/s"), "{fields:?}");
    let stated = throughput(&fields[2]);
    assert!((stated / run.num("bytes_per_s") - 1.0).abs() < 0.005);
    let traffic = stdout
        .lines()
        .find(|line| line.starts_with("traffic: "))
        .expect("a traffic line");
    assert!(traffic.ends_with(", 5.00 MB (5000000) data"), "{traffic}");

    // The comparison row: JSON and CSV, in 10^6 bytes and 10^9 bits a second.
    let row = &run.json["comparison"][0];
    let bytes_per_s = run.num("bytes_per_s");
    let megabytes = row["megabytes_per_s"].as_f64().expect("megabytes_per_s");
    let gigabits = row["gigabits_per_s"].as_f64().expect("gigabits_per_s");
    assert!((megabytes - bytes_per_s / 1e6).abs() < 1e-9 * megabytes);
    assert!((gigabits - bytes_per_s * 8.0 / 1e9).abs() < 1e-9 * gigabits);
    let table = std::fs::read_to_string(&csv).expect("CSV written");
    let mut lines = table.lines();
    let titles: Vec<&str> = lines.next().expect("titles").split(',').collect();
    let values: Vec<&str> = lines.next().expect("a row").split(',').collect();
    let column = |title: &str| {
        let at = titles
            .iter()
            .position(|name| *name == title)
            .unwrap_or_else(|| panic!("no {title} column in {titles:?}"));
        values[at].to_owned()
    };
    assert_eq!(column("MB/s"), format!("{megabytes:.2}"));
    assert_eq!(column("Gbit/s"), format!("{gigabits:.3}"));
}

/// `-q`'s one line leads its rate with a transfer's throughput too: 2 downloads of 20 MB; a cell
/// of small bodies keeps `… errored, R req/s`.
#[test]
fn the_quiet_line_leads_with_a_transfer_s_throughput() {
    let run = succeeded(&["-q", "-c", "1", "-n", "2", &url("/bytes/20000000")]);
    let line = run.output.stdout.trim_end();
    let (_, rest) = line
        .split_once(" 0 errored, ")
        .unwrap_or_else(|| panic!("{line}"));
    let (rate, rest) = rest.split_once(", ").unwrap_or_else(|| panic!("{line}"));
    assert!(
        rate.contains("Gbit/s (") || rate.contains("Mbit/s ("),
        "{line}"
    );
    assert!((throughput(rate) / run.num("bytes_per_s") - 1.0).abs() < 0.005);
    assert!(rest.contains(" req/s, p99 "), "{line}");

    let run = succeeded(&["-q", "-c", "1", "-n", "2", &url("/bytes/1000")]);
    let line = run.output.stdout.trim_end();
    let (_, rest) = line
        .split_once(" 0 errored, ")
        .unwrap_or_else(|| panic!("{line}"));
    assert!(
        rest.split_once(", ")
            .is_some_and(|(rate, _)| rate.ends_with(" req/s")),
        "{line}"
    );
}

/// A report of schema 2, whose comparison counted `mb_per_s` in MiB (and named KiB `_kb`), is
/// refused by `merge` and `diff` with one line that says why, rather than read beside decimal
/// figures.
#[test]
fn merge_and_diff_refuse_a_report_in_the_old_units() {
    let dir = tempfile::tempdir().expect("temp dir");
    // The built-in target: its memory is in the report (`rss_peak_kb` in schema 2).
    let run = succeeded(&["-q", "-c", "1", "-n", "10"]);
    let new = dir.path().join("new.json");
    std::fs::write(&new, run.json.to_string()).expect("new report written");
    let new = new.to_str().expect("utf-8 path");
    let mut report = run.json.clone();
    report["schema_version"] = 2.into();
    let row = report["comparison"][0]
        .as_object_mut()
        .expect("a comparison row");
    let megabytes = row.remove("megabytes_per_s").expect("megabytes_per_s");
    row.insert(
        "mb_per_s".to_owned(),
        (megabytes.as_f64().expect("a number") * 1e6 / 1_048_576.0).into(),
    );
    let gigabits = row.remove("gigabits_per_s").expect("gigabits_per_s");
    row.insert("gbps".to_owned(), gigabits);
    let rss = row
        .remove("target_rss_peak_kib")
        .expect("target_rss_peak_kib");
    row.insert("target_rss_peak_kb".to_owned(), rss);
    let watched = report["cells"][0]["watched"][0]
        .as_object_mut()
        .expect("the target's usage");
    for (old, new) in [
        ("rss_peak_kb", "rss_peak_kib"),
        ("rss_mean_kb", "rss_mean_kib"),
    ] {
        let value = watched.remove(new).expect(new);
        watched.insert(old.to_owned(), value);
    }
    let old = dir.path().join("old.json");
    std::fs::write(&old, report.to_string()).expect("old report written");
    let old = old.to_str().expect("utf-8 path");
    let says = "has schema_version 2; this h2load-rs reads 3";
    assert_usage_error(&["merge", old], says);
    assert_usage_error(&["merge", new, old], says);
    assert_usage_error(&["diff", old, new], says);
}
