//! URL lists (`-i`, `--urls-random`, `--seed`), per-URL figures, and request templates, checked
//! against what the servers received: bytes echoed or served, and request targets recorded.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use h2load_rs::testkit::server::{spawn_background, ServeOptions};
use h2load_rs::testkit::tls;

use crate::common::{assert_clean, assert_usage_error, h2load_rs, run_command, url, Run};

const CA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/certs/ca.crt");

/// Writes `lines` as a URL file in `dir`.
fn url_file(dir: &Path, lines: &[&str]) -> String {
    let path = dir.join("urls.txt");
    std::fs::write(&path, lines.join("\n")).unwrap();
    path.to_str().unwrap().to_owned()
}

/// The cell's per-URL rows as (url, requests, succeeded, failed).
fn url_rows(run: &Run) -> Vec<(String, u64, u64, u64)> {
    run.cell()["urls"]
        .as_array()
        .unwrap_or_else(|| panic!("no urls in the report: {}", run.output.stderr))
        .iter()
        .map(|row| {
            (
                row["url"].as_str().unwrap().to_owned(),
                row["requests"].as_u64().unwrap(),
                row["succeeded"].as_u64().unwrap(),
                row["failed"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Checks a run of `n` requests over `/bytes/10` and `/bytes/100000` in turn on `clients`
/// connections: every byte of the mix is counted, and the per-URL rows add up.
fn assert_mix(run: &Run, name: &str, n: u64, clients: u64) {
    assert_clean(run, name, n);
    let rows = url_rows(run);
    assert_eq!(rows.len(), 2, "{name}");
    assert_eq!(rows[0].0, "/bytes/10", "{name}");
    assert_eq!(rows[1].0, "/bytes/100000", "{name}");
    let (small, large) = (rows[0].1, rows[1].1);
    assert_eq!(small + large, n, "{name}");
    assert_eq!(
        (rows[0].2, rows[1].2, rows[0].3, rows[1].3),
        (small, large, 0, 0),
        "{name}"
    );
    assert!(
        small.abs_diff(large) <= clients,
        "{name}: in turn, {small} vs {large}"
    );
    assert_eq!(
        run.int("traffic/data_bytes"),
        small * 10 + large * 100_000,
        "{name}"
    );
    for row in run.cell()["urls"].as_array().unwrap() {
        let latency = &row["latency"];
        assert_eq!(latency["count"], row["requests"], "{name}");
        assert!(
            latency["percentiles"]["p50"].as_u64().unwrap() > 0,
            "{name}"
        );
    }
    assert!(
        run.output
            .stdout
            .contains("per URL (most requested first):"),
        "{name}"
    );
    assert!(run.output.stdout.contains("/bytes/100000"), "{name}");
}

#[test]
fn a_url_file_mixes_sizes_and_counts_every_byte() {
    let dir = tempfile::tempdir().unwrap();
    let first = url("/bytes/10");
    let file = url_file(dir.path(), &["# two sizes", &first, "", "/bytes/100000"]);
    for proto in ["h1", "h2c", "h2c-upgrade"] {
        let run = h2load_rs(&["-i", &file, "--proto", proto, "-c", "3", "-n", "301"]);
        assert_mix(&run, proto, 301, 3);
        assert_eq!(
            run.cell()["settings"]["input_file"],
            file.as_str(),
            "{proto}"
        );
        assert!(
            run.cell()["settings"]["seed"].is_null(),
            "{proto}: nothing random"
        );
    }
    // Command-line URLs come first, then the file's.
    let mixed = dir.path().join("rest.txt");
    std::fs::write(&mixed, "/bytes/100000\n").unwrap();
    let run = h2load_rs(&["-i", mixed.to_str().unwrap(), "--h1", "-n", "40", &first]);
    assert_mix(&run, "command line then file", 40, 1);
}

#[test]
fn churned_connections_keep_the_url_mix() {
    let dir = tempfile::tempdir().unwrap();
    let file = url_file(dir.path(), &[&url("/bytes/10"), "/bytes/100000"]);
    // The slot's turn survives its connections: one request per connection alternates too.
    for proto in ["h1", "h2c", "h2c-upgrade"] {
        for churn in [&["--requests-per-connection", "1"][..], &["--no-keepalive"]] {
            let name = format!("{proto} {churn:?}");
            let mut args = vec!["-i", &file, "--proto", proto, "-n", "40"];
            args.extend(churn);
            let run = h2load_rs(&args);
            assert_mix(&run, &name, 40, 1);
            assert_eq!(run.int("connections/opened"), 40, "{name}");
        }
    }
    let file = url_file(dir.path(), &[&tls_url("/bytes/10"), "/bytes/100000"]);
    let run = h2load_rs(&[
        "--cacert",
        CA,
        "-i",
        &file,
        "--proto",
        "h3",
        "-n",
        "40",
        "--requests-per-connection",
        "1",
    ]);
    assert_mix(&run, "h3", 40, 1);
    assert_eq!(run.int("connections/opened"), 40, "h3");
}

/// An https:// URL on an HTTP/3-capable built-in target of this test binary.
fn tls_url(path: &str) -> String {
    static TARGET: OnceLock<SocketAddr> = OnceLock::new();
    let addr = TARGET.get_or_init(|| {
        let config = tls::server_config(
            tls::test_pki::SERVER_CERT.as_bytes(),
            tls::test_pki::SERVER_KEY.as_bytes(),
        )
        .expect("the certificate loads");
        let options = ServeOptions {
            tls: Some(config),
            h3: true,
            ..ServeOptions::default()
        };
        spawn_background(2, options).expect("the TLS target starts")
    });
    format!("https://{addr}{path}")
}

#[test]
fn url_files_and_templates_work_over_h2_and_h3() {
    let dir = tempfile::tempdir().unwrap();
    let file = url_file(dir.path(), &[&tls_url("/bytes/10"), "/bytes/100000"]);
    let body = dir.path().join("body");
    std::fs::write(&body, "id={seq}").unwrap();
    for proto in ["h2", "h3"] {
        let run = h2load_rs(&[
            "--cacert", CA, "-i", &file, "--proto", proto, "-c", "2", "-m", "3", "-n", "200",
        ]);
        assert_mix(&run, proto, 200, 2);
        let echo = tls_url("/echo");
        let run = h2load_rs(&[
            "--cacert",
            CA,
            "--proto",
            proto,
            "-c",
            "2",
            "-m",
            "3",
            "-n",
            "1000",
            "-d",
            body.to_str().unwrap(),
            &echo,
        ]);
        assert_clean(&run, proto, 1000);
        assert_eq!(run.int("traffic/data_bytes"), echoed_ids(1000), "{proto}");
        let seq = tls_url("/bytes/{seq}");
        let run = h2load_rs(&[
            "--cacert", CA, "--proto", proto, "-c", "2", "-m", "3", "-n", "100", &seq,
        ]);
        assert_clean(&run, proto, 100);
        assert_eq!(
            run.int("traffic/data_bytes"),
            5050,
            "{proto}: /bytes/1 to /bytes/100"
        );
    }
}

/// The bytes of `id=1` … `id=n` together.
fn echoed_ids(n: u64) -> u64 {
    (1..=n).map(|i| format!("id={i}").len() as u64).sum()
}

#[test]
fn a_body_template_sends_exactly_the_rendered_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body");
    std::fs::write(&body, "id={seq}").unwrap();
    let echo = url("/echo");
    for (name, flags) in [
        ("h1", &["--h1", "-c", "3"][..]),
        ("h1 pipelined", &["--h1", "-c", "2", "-m", "4"]),
        ("h2c", &["--proto", "h2c", "-c", "2", "-m", "8", "-t", "2"]),
    ] {
        let mut args = flags.to_vec();
        args.extend(["-n", "1000", "-d", body.to_str().unwrap(), &echo]);
        let run = h2load_rs(&args);
        assert_clean(&run, name, 1000);
        assert_eq!(run.int("traffic/data_bytes"), echoed_ids(1000), "{name}");
    }
    // A path template over HPACK: /bytes/1 … /bytes/100 serve 5050 bytes in all.
    let run = h2load_rs(&[
        "--proto",
        "h2c",
        "-c",
        "2",
        "-m",
        "4",
        "-n",
        "100",
        &url("/bytes/{seq}"),
    ]);
    assert_clean(&run, "h2c path", 100);
    assert_eq!(run.int("traffic/data_bytes"), 5050);
    // Templated bodies of several frames: one that fits the windows goes with its HEADERS; one
    // larger than the stream window (or behind another) is held with its stream, then sent.
    for size in [40_000, 70_000] {
        let large = dir.path().join("large");
        std::fs::write(&large, format!("{}{{seq}}", "x".repeat(size))).unwrap();
        let run = h2load_rs(&[
            "--proto",
            "h2c",
            "-c",
            "1",
            "-m",
            "2",
            "-n",
            "20",
            "-d",
            large.to_str().unwrap(),
            &echo,
        ]);
        assert_clean(&run, "h2c large body", 20);
        let digits = echoed_ids(20) - 20 * 3;
        assert_eq!(
            run.int("traffic/data_bytes"),
            20 * size as u64 + digits,
            "{size}"
        );
    }
}

/// A plain HTTP/1.1 server that answers every request with an empty 200 and records the
/// request heads (without the final blank line).
fn recording_server() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let targets = Arc::new(Mutex::new(Vec::new()));
    let recorded = targets.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let targets = recorded.clone();
            std::thread::spawn(move || {
                let mut pending = Vec::new();
                let mut buffer = [0u8; 16 * 1024];
                loop {
                    let Ok(read) = stream.read(&mut buffer) else {
                        return;
                    };
                    if read == 0 {
                        return;
                    }
                    pending.extend_from_slice(&buffer[..read]);
                    while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&pending[..end]).into_owned();
                        pending.drain(..end + 4);
                        let close = head.ends_with("\r\nconnection: close");
                        targets.lock().unwrap().push(head);
                        if stream
                            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                            .is_err()
                            || close
                        {
                            return;
                        }
                    }
                }
            });
        }
    });
    (format!("http://{addr}"), targets)
}

/// The request targets of the recorded heads.
fn request_targets(heads: &Mutex<Vec<String>>) -> Vec<String> {
    heads
        .lock()
        .unwrap()
        .iter()
        .map(|head| head.split(' ').nth(1).unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn no_keepalive_asks_the_server_to_close_templated_requests_too() {
    let (base, heads) = recording_server();
    for path in ["/plain", "/seq/{seq}"] {
        let target = format!("{base}{path}");
        let run = h2load_rs(&["--h1", "-n", "3", "--no-keepalive", &target]);
        assert_clean(&run, path, 3);
        assert_eq!(run.int("connections/opened"), 3, "{path}");
    }
    let heads = heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 6);
    for head in &heads {
        assert!(head.ends_with("\r\nconnection: close"), "{head:?}");
    }
    assert!(heads[3].starts_with("GET /seq/1 HTTP/1.1\r\n"), "{heads:?}");
}

#[test]
fn path_templates_render_every_placeholder() {
    let (base, heads) = recording_server();
    let path = format!("{base}/k/{{seq}}/{{conn}}/{{rand:7}}/{{uuid}}?x={{{{y}}}}");
    let run = h2load_rs(&["--h1", "-c", "3", "-t", "2", "-n", "300", &path]);
    assert_clean(&run, "templated path", 300);
    let targets = request_targets(&heads);
    assert_eq!(targets.len(), 300);
    let (mut seqs, mut conns, mut uuids) = (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    for target in &targets {
        let (path, query) = target.split_once('?').unwrap();
        // `{{` and `}}` are literal braces, which a request target carries percent-encoded
        // (RFC 3986 §2.1): a raw brace is not valid in a URI.
        assert_eq!(query, "x=%7By%7D", "{target}");
        let parts: Vec<&str> = path.split('/').collect();
        assert_eq!(parts[..2], ["", "k"], "{target}");
        seqs.insert(parts[2].parse::<u64>().unwrap());
        conns.insert(parts[3].parse::<u64>().unwrap());
        assert!(parts[4].parse::<u64>().unwrap() < 7, "{target}");
        let uuid = parts[5];
        let groups: Vec<usize> = uuid.split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12], "{target}");
        assert!(uuid
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase() || c == '-'));
        assert_eq!(&uuid[14..15], "4", "version 4: {target}");
        assert!("89ab".contains(&uuid[19..20]), "RFC 9562 variant: {target}");
        uuids.insert(uuid.to_owned());
    }
    assert_eq!(seqs, (1..=300).collect(), "every {{seq}} once");
    assert_eq!(conns, (0..3).collect(), "one {{conn}} per connection");
    assert_eq!(uuids.len(), 300, "no {{uuid}} repeats");
    let rands: BTreeSet<&str> = targets
        .iter()
        .map(|t| t.split('/').nth(4).unwrap())
        .collect();
    assert_eq!(rands.len(), 7, "300 draws below 7 hit every value");
}

/// The per-URL request counts of a run, by URL.
fn split(run: &Run) -> BTreeMap<String, u64> {
    url_rows(run)
        .into_iter()
        .map(|(url, requests, ..)| (url, requests))
        .collect()
}

#[test]
fn random_urls_repeat_with_the_same_seed() {
    let dir = tempfile::tempdir().unwrap();
    let file = url_file(
        dir.path(),
        &[&url("/bytes/1"), "/bytes/2", "/bytes/3", "/bytes/4"],
    );
    let random = |seed: &str, clients: &str, threads: &str| {
        let run = h2load_rs(&[
            "-i",
            &file,
            "--urls-random",
            "--seed",
            seed,
            "-c",
            clients,
            "-t",
            threads,
            "-m",
            "4",
            "-n",
            "600",
        ]);
        assert_clean(&run, seed, 600);
        assert_eq!(
            run.cell()["settings"]["seed"].as_u64().unwrap().to_string(),
            seed
        );
        assert_eq!(run.cell()["settings"]["urls_random"], true);
        let split = split(&run);
        let bytes: u64 = split
            .iter()
            .map(|(url, n)| url[7..].parse::<u64>().unwrap() * n)
            .sum();
        assert_eq!(run.int("traffic/data_bytes"), bytes, "seed {seed}");
        split
    };
    let first = random("7", "3", "2");
    assert_eq!(first.values().sum::<u64>(), 600);
    assert!(
        first.values().all(|&n| n > 100),
        "about 150 each: {first:?}"
    );
    assert_eq!(
        random("7", "3", "2"),
        first,
        "the same seed draws the same URLs"
    );
    assert_eq!(
        random("7", "1", "1"),
        first,
        "whatever the connections and threads"
    );
    assert_ne!(random("8", "3", "2"), first, "another seed draws others");
    let verbose = h2load_rs(&[
        "-i",
        &file,
        "--urls-random",
        "--seed",
        "7",
        "-n",
        "10",
        "-v",
    ]);
    assert!(
        verbose.output.stderr.contains("seed: 7 (--seed 7 "),
        "{}",
        verbose.output.stderr
    );
    // Without --seed, the seed drawn is reported and repeats the run.
    let run = h2load_rs(&["-i", &file, "--urls-random", "-n", "600", "-c", "2"]);
    let seed = run.cell()["settings"]["seed"].as_u64().unwrap().to_string();
    assert_eq!(random(&seed, "2", "1"), split(&run));
}

#[test]
fn per_url_rows_are_exported_merged_and_cut_in_text() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = vec![url("/bytes/0")];
    lines.extend((1..12).map(|i| format!("/bytes/{i}")));
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let file = url_file(dir.path(), &lines);
    let csv = dir.path().join("urls.csv");
    let run = h2load_rs(&[
        "-i",
        &file,
        "-n",
        "240",
        "-c",
        "1",
        "--csv-urls",
        csv.to_str().unwrap(),
    ]);
    assert_clean(&run, "12 urls", 240);
    assert!(
        run.output.stdout.contains("… and 2 more in JSON"),
        "{}",
        run.output.stdout
    );
    // One connection takes the URLs in turn: 20 each.
    assert!(url_rows(&run).iter().all(|row| row.1 == 20 && row.2 == 20));
    let csv = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(
        rows[0],
        "cell,label,url,requests,succeeded,failed,p50_ms,p90_ms,p99_ms,max_ms,\
         p50_low_ms,p50_high_ms,p90_low_ms,p90_high_ms,p99_low_ms,p99_high_ms"
    );
    assert_eq!(rows.len(), 13);
    assert!(
        rows[12].starts_with("1,h2c c=1 m=1,/bytes/11,20,20,0,"),
        "{}",
        rows[12]
    );
    // Each URL's percentiles carry 95% intervals that assume its 20 samples independent, the same
    // in JSON, CSV and text: the p50 of 20 lies between their 6th and 15th (binomial ranks), so
    // both ends exist and hold it; the p90 and p99 of 20 are not estimable (2 and 0.2 samples
    // beyond them, fewer than 5; p75 has 5): no interval, marked `n/e`.
    let json_rows = run.cell()["urls"].as_array().unwrap();
    for (row, line) in json_rows.iter().zip(&rows[1..]) {
        let latency = &row["latency"];
        let confidence = &latency["confidence"];
        assert_eq!(confidence["method"], "independent", "{row}");
        let p50 = latency["percentiles"]["p50"].as_u64().unwrap();
        let (low, high) = (
            confidence["p50"]["ci_low"].as_u64().unwrap(),
            confidence["p50"]["ci_high"].as_u64().unwrap(),
        );
        assert!(low <= p50 && p50 <= high, "{row}");
        assert!(confidence["p99"].is_null(), "{row}");
        assert!(confidence["p90"].is_null(), "{row}");
        assert_eq!(
            confidence["not_estimable"],
            serde_json::json!(["p90", "p95", "p99", "p99.9", "p99.99"]),
            "{row}"
        );
        let fields: Vec<&str> = line.split(',').collect();
        let ms = |micros: u64| format!("{:.3}", micros as f64 / 1000.0);
        assert_eq!(fields[10..12], [ms(low), ms(high)], "{line}");
        assert_eq!(fields[12..16], ["n/e"; 4], "{line}");
    }
    assert!(
        run.output
            .stdout
            .contains("a URL has no timeline of its own"),
        "{}",
        run.output.stdout
    );
    // Two runs merged: the rows add up, the latency of each URL too.
    let reports: Vec<String> = (0..2)
        .map(|index| {
            let path = dir.path().join(format!("run{index}.json"));
            std::fs::write(&path, run.json.to_string()).unwrap();
            path.to_str().unwrap().to_owned()
        })
        .collect();
    let merged_path = dir.path().join("merged.json");
    let merge = run_command(
        env!("CARGO_BIN_EXE_h2load-rs"),
        &[
            "merge",
            &reports[0],
            &reports[1],
            "--json",
            merged_path.to_str().unwrap(),
        ],
    );
    assert_eq!(merge.code, 0, "{}", merge.stderr);
    let merged: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&merged_path).unwrap()).unwrap();
    for row in merged["cells"][0]["urls"].as_array().unwrap() {
        assert_eq!(row["requests"], 40);
        assert_eq!(row["latency"]["count"], 40);
    }
}

#[test]
fn bad_url_files_and_templates_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    assert_usage_error(
        &["-i", "/nonexistent/urls.txt"],
        "cannot read the -i file '/nonexistent/urls.txt'",
    );
    let bad = url_file(dir.path(), &[&url("/a"), "# fine", "", "b/c"]);
    assert_usage_error(&["-i", &bad], &format!("{bad}:4: 'b/c' is neither a URL"));
    let path_first = url_file(dir.path(), &["/a", &url("/b")]);
    assert_usage_error(&["-i", &path_first], "the first line of the -i file");
    let empty = url_file(dir.path(), &["# nothing"]);
    assert_usage_error(&["-i", &empty], "holds no URL");
    assert_usage_error(&[&url("/x/{foo}")], "unknown placeholder {foo}");
    assert_usage_error(&[&url("/x/{rand:0}")], "{rand:0}");
    assert_usage_error(
        &["-H", "x-id: {sequence}", &url("/")],
        "-H 'x-id: {sequence}': unknown placeholder {sequence}",
    );
    assert_usage_error(
        &["-H", "Host: {conn}.example", &url("/")],
        "placeholders are not rendered in the authority",
    );
    let body = dir.path().join("body");
    std::fs::write(&body, "{seq} }").unwrap();
    assert_usage_error(
        &["-d", body.to_str().unwrap(), &url("/echo")],
        "unmatched '}'",
    );
    // A JSON body without placeholders is sent as it is, braces and all.
    std::fs::write(&body, "{\"a\":{\"b\":1}}").unwrap();
    let run = h2load_rs(&["-n", "10", "-d", body.to_str().unwrap(), &url("/echo")]);
    assert_clean(&run, "json body", 10);
    assert_eq!(run.int("traffic/data_bytes"), 10 * 13);
}

#[test]
fn scenario_files_take_the_url_list_keys() {
    let dir = tempfile::tempdir().unwrap();
    let file = url_file(dir.path(), &[&url("/bytes/1"), "/bytes/2"]);
    let scenario = dir.path().join("scenario.toml");
    std::fs::write(
        &scenario,
        format!("input-file = {file:?}\nurls-random = true\nseed = 11\nrequests = 100\n"),
    )
    .unwrap();
    let run = h2load_rs(&["run", scenario.to_str().unwrap()]);
    assert_clean(&run, "scenario", 100);
    assert_eq!(run.cell()["settings"]["seed"], 11);
    let split = split(&run);
    assert_eq!(split.values().sum::<u64>(), 100);
    let bytes = split["/bytes/1"] + 2 * split["/bytes/2"];
    assert_eq!(run.int("traffic/data_bytes"), bytes);
}

#[test]
fn urls_past_the_first_thousand_are_counted_without_latency() {
    let dir = tempfile::tempdir().unwrap();
    // Past the first 1000 URLs, HTTP/2 and HTTP/3 encode the path per request: the last URL's
    // bytes show it was asked for as written.
    let middle = (1..1000).map(|i| format!("/bytes/{}", i % 10));
    let bytes = 2 * ((1..1000).map(|i| i % 10).sum::<u64>() + 777);
    for (proto, first) in [
        ("h1", url("/bytes/0")),
        ("h2c", url("/bytes/0")),
        ("h3", tls_url("/bytes/0")),
    ] {
        let mut lines = vec![first];
        lines.extend(middle.clone());
        lines.push("/bytes/777".to_owned());
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let file = url_file(dir.path(), &lines);
        let run = h2load_rs(&[
            "--cacert", CA, "-i", &file, "--proto", proto, "-c", "1", "-n", "2002",
        ]);
        assert_clean(&run, proto, 2002);
        assert_eq!(run.int("traffic/data_bytes"), bytes, "{proto}");
        let rows = run.cell()["urls"].as_array().unwrap();
        assert_eq!(rows.len(), 1001);
        assert!(rows.iter().all(|row| row["requests"] == 2), "{proto}");
        assert!(rows[..1000].iter().all(|row| row["latency"]["count"] == 2));
        assert!(rows[1000]["latency"].is_null());
        assert!(run.output.stdout.contains("… and 991 more in JSON"));
        assert!(run
            .output
            .stdout
            .contains("latency is kept for the first 1000 URLs only"));
    }
}

/// Issue 24 §6: a per-URL `max` came from a 2-digit histogram's bucket top and so sat above the
/// run's `max` (a 3-digit bucket top) every time. One rule now: each URL's max (and min) is its
/// largest (smallest) response time at the run's precision, so no URL's max is above the run's,
/// the largest of them is the run's, and no percentile of a URL is above its max.
#[test]
fn per_url_extremes_agree_with_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let lines = [url("/delay/2.3"), url("/delay/4.7"), url("/ping")];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let file = url_file(dir.path(), &lines);
    let run = h2load_rs(&["-i", &file, "-n", "60", "-c", "3"]);
    assert_clean(&run, "3 urls", 60);
    let check = |cell: &serde_json::Value, name: &str| {
        let run_max = cell["latency"]["request"]["percentiles"]["max"]
            .as_u64()
            .unwrap();
        let run_min = cell["latency"]["request"]["min"].as_f64().unwrap();
        assert_eq!(
            cell["latency"]["request"]["max"].as_f64().unwrap(),
            run_max as f64
        );
        let mut largest = 0;
        let mut smallest = f64::MAX;
        for row in cell["urls"].as_array().unwrap() {
            let latency = &row["latency"];
            let max = latency["percentiles"]["max"].as_u64().unwrap();
            assert_eq!(
                latency["max"].as_f64().unwrap(),
                max as f64,
                "{name}: {row}"
            );
            assert!(
                max <= run_max,
                "{name}: {} max {max} > run max {run_max}",
                row["url"]
            );
            for (label, value) in latency["percentiles"].as_object().unwrap() {
                assert!(
                    value.as_u64().unwrap() <= max,
                    "{name}: {label} {value} > max {max}"
                );
            }
            largest = largest.max(max);
            smallest = smallest.min(latency["min"].as_f64().unwrap());
        }
        assert_eq!(largest, run_max, "{name}: the run's max is one URL's max");
        assert_eq!(smallest, run_min, "{name}: the run's min is one URL's min");
    };
    check(run.cell(), "run");
    // Merged reports keep the rule.
    let report = dir.path().join("run.json");
    std::fs::write(&report, run.json.to_string()).unwrap();
    let merged_path = dir.path().join("merged.json");
    let report = report.to_str().unwrap();
    let merge = run_command(
        env!("CARGO_BIN_EXE_h2load-rs"),
        &[
            "merge",
            report,
            report,
            "--json",
            merged_path.to_str().unwrap(),
        ],
    );
    assert_eq!(merge.code, 0, "{}", merge.stderr);
    let merged: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&merged_path).unwrap()).unwrap();
    check(&merged["cells"][0], "merged");
}

#[test]
fn framing_and_connection_headers_never_reach_the_wire_beside_the_computed_ones() {
    let (base, heads) = recording_server();
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body");
    std::fs::write(&body, "hello").unwrap();
    let body = body.to_str().unwrap();
    let target = format!("{base}/post");
    for header in [
        "content-length: 3",
        "Content-Length: 5",
        "transfer-encoding: chunked",
        "connection: close",
        "keep-alive: timeout=5",
        "proxy-connection: keep-alive",
        "upgrade: websocket",
        "http2-settings: AAMAAABkAAQAoAAAAAIAAAAA",
        "te: gzip",
    ] {
        for proto in ["h1", "h2c"] {
            let output = assert_usage_error(
                &[
                    "--proto", proto, "-n", "2", "-d", body, "-H", header, &target,
                ],
                "is the run's to set",
            );
            assert!(output.stdout.is_empty(), "{header} {proto}");
        }
    }
    assert_eq!(heads.lock().unwrap().len(), 0, "nothing was sent");
    // `te: trailers` is allowed (on HTTP/2 too), and the body's length is sent once.
    let run = h2load_rs(&["--h1", "-n", "2", "-d", body, "-H", "te: trailers", &target]);
    assert_clean(&run, "te: trailers", 2);
    let heads = heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 2);
    for head in &heads {
        let fields: Vec<&str> = head.split("\r\n").skip(1).collect();
        let count = |name: &str| {
            fields
                .iter()
                .filter(|field| field.to_ascii_lowercase().starts_with(name))
                .count()
        };
        assert_eq!(count("content-length: 5"), 1, "{head:?}");
        assert_eq!(count("content-length"), 1, "{head:?}");
        assert_eq!(count("transfer-encoding"), 0, "{head:?}");
        assert_eq!(count("te: trailers"), 1, "{head:?}");
    }
}
