//! The `traffic:` line against the ground truth: a built-in target that counts every byte it
//! writes (`ServeOptions::sent`), and the HTTP/2 frames among them by type. Each run gets its own
//! target, so the counts are that run's alone.
//!
//! Definitions checked here (docs/reference.md, "traffic"): `total` is every byte the server
//! wrote; `data` the response bodies (HTTP/2: DATA payloads); `headers` on HTTP/1.1 the response
//! heads (status line to blank line, so headers + data = total), on HTTP/2 the HEADERS and
//! CONTINUATION payloads (HPACK blocks; frame headers, SETTINGS, PING, WINDOW_UPDATE and GOAWAY
//! are in `total` only).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use h2load_rs::testkit::server::{spawn_background, SentBytes, SentTotals, ServeOptions};
use h2load_rs::testkit::tls;

use crate::common::{h2load_rs, run_command, text_counts};

/// Requests per run.
const REQUESTS: u64 = 40;
/// Body sizes: none, one byte, one full HTTP/2 frame, and bodies spanning several frames and
/// more than one 64 KiB slice of the target's filler.
const SIZES: [u64; 5] = [0, 1, 16_384, 40_000, 200_000];

/// The test CA, which signed the built-in target's test certificate.
const CA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/certs/ca.crt");

/// A fresh counting target, over TLS (with the test certificate) or cleartext; returns the
/// scheme and address to measure it at.
fn counting_target(tls: bool) -> (String, Arc<SentBytes>) {
    let sent = Arc::new(SentBytes::default());
    let tls = tls.then(|| {
        tls::server_config(
            tls::test_pki::SERVER_CERT.as_bytes(),
            tls::test_pki::SERVER_KEY.as_bytes(),
        )
        .expect("the test certificate loads")
    });
    let scheme = if tls.is_some() { "https" } else { "http" };
    let options = ServeOptions {
        sent: Some(sent.clone()),
        tls,
        ..Default::default()
    };
    let addr = spawn_background(1, options).expect("built-in target starts");
    (format!("{scheme}://{addr}"), sent)
}

/// Runs `tool` with `-n REQUESTS`, `flags` and the URL of `/bytes/size` on a fresh counting
/// target (over TLS when `flags` trust the test CA); returns the traffic numbers `tool` reports
/// and the server's counts.
fn measure(
    flags: &[&str],
    size: u64,
    tool: impl FnOnce(&[&str]) -> HashMap<String, u64>,
) -> (HashMap<String, u64>, SentTotals) {
    let (base, sent) = counting_target(flags.contains(&CA));
    let url = format!("{base}/bytes/{size}");
    let requests = REQUESTS.to_string();
    let mut args = vec!["-n", &requests];
    args.extend(flags);
    args.push(&url);
    let traffic = tool(&args);
    let totals = settled(&sent, traffic["total_bytes"]);
    (traffic, totals)
}

/// The target's counts once they hold at least `read` bytes, the total a client said it read, or
/// as they are after [`COUNT_LAG`]. The target counts a write after its `write` call returned, so
/// a client may have read (and exited) before the target's thread ran again to count it; a
/// client that said it read more than was written still fails its test, a moment later.
fn settled(sent: &SentBytes, read: u64) -> SentTotals {
    let deadline = Instant::now() + COUNT_LAG;
    loop {
        let totals = sent.totals();
        if totals.total >= read || Instant::now() > deadline {
            return totals;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// How long after a run the target's count may still be catching up with its writes.
const COUNT_LAG: Duration = Duration::from_secs(2);

/// h2load-rs's traffic numbers: the JSON report's, checked equal to the text report's.
fn h2load_rs_traffic(args: &[&str]) -> HashMap<String, u64> {
    let run = h2load_rs(args);
    assert_eq!(run.output.code, 0, "{args:?}: {}", run.output.stderr);
    assert_eq!(run.int("requests/succeeded"), REQUESTS, "{args:?}");
    let text = text_counts(&run.output.stdout);
    [
        ("total_bytes", "total_bytes"),
        ("headers_bytes", "header_bytes"),
        ("data_bytes", "data_bytes"),
    ]
    .into_iter()
    .map(|(name, json)| {
        let value = run.int(&format!("traffic/{json}"));
        assert_eq!(
            text[name], value,
            "{args:?}: text and JSON differ on {name}"
        );
        (name.to_owned(), value)
    })
    .collect()
}

/// h2load's traffic numbers, from its text report.
fn h2load_traffic(args: &[&str]) -> HashMap<String, u64> {
    let output = run_command("h2load", args);
    assert_eq!(output.code, 0, "{args:?}: h2load failed: {}", output.stderr);
    text_counts(&output.stdout)
}

/// Runs h2load-rs against a fresh counting target (see [`measure`]).
fn run(flags: &[&str], size: u64) -> (HashMap<String, u64>, SentTotals) {
    measure(flags, size, h2load_rs_traffic)
}

/// HTTP/1.1 against the ground truth: the total is what the server wrote, the data exactly the
/// bodies, and the headers the rest.
fn check_http1(flags: &[&str], size: u64) {
    let (ours, sent) = run(flags, size);
    let case = format!("{flags:?} /bytes/{size}");
    assert_eq!(ours["total_bytes"], sent.total, "{case}");
    assert_eq!(ours["data_bytes"], REQUESTS * size, "{case}");
    assert_eq!(
        ours["headers_bytes"],
        sent.total - REQUESTS * size,
        "{case}: HTTP/1.1 headers are the rest"
    );
}

/// HTTP/2 against the ground truth: the total is what the server wrote, the data exactly the
/// bodies (and the server's DATA payloads), the headers the server's HEADERS and CONTINUATION
/// payloads.
fn check_http2(flags: &[&str], size: u64) {
    let (ours, sent) = run(flags, size);
    let case = format!("{flags:?} /bytes/{size}");
    assert_eq!(ours["total_bytes"], sent.total, "{case}");
    assert_eq!(ours["data_bytes"], REQUESTS * size, "{case}");
    assert_eq!(sent.h2_data, REQUESTS * size, "{case}: the server's DATA");
    assert_eq!(ours["headers_bytes"], sent.h2_header_blocks, "{case}");
    assert!(ours["headers_bytes"] > 0, "{case}");
}

#[test]
fn http1_bytes_are_what_the_server_sent() {
    for flags in [&["--h1", "-c", "2"][..], &["--h1", "-c", "2", "-m", "4"]] {
        for size in SIZES {
            check_http1(flags, size);
        }
    }
}

/// Bodies long enough for the client to raise its socket's receive low-water mark (src/io/
/// driver.rs, `LOW_WATER_FROM`: 512 KiB due) and lower it again before the end: every byte
/// still arrives, and the last ones, fewer than the mark, still wake the client (a mark left up
/// would hang the run). Cleartext and TLS, pipelined too, and HTTP/2 with several streams; more
/// than one read buffer (256 KiB).
#[test]
fn long_bodies_under_the_low_water_mark_are_what_the_server_sent() {
    for size in [512 * 1024, 2 * 1024 * 1024 + 1] {
        check_http1(&["--h1", "-c", "2", "-m", "2"], size);
        check_http1(&["--cacert", CA, "--proto", "h1", "-c", "2"], size);
        // HTTP/2: the mark follows the streams' content-lengths (four streams at once here).
        check_http2(&["--proto", "h2c", "-c", "2", "-m", "4"], size);
        check_http2(
            &["--cacert", CA, "--proto", "h2", "-c", "2", "-m", "4"],
            size,
        );
    }
}

#[test]
fn h2c_bytes_are_what_the_server_sent() {
    for size in SIZES {
        check_http2(&["--proto", "h2c", "-c", "2", "-m", "4"], size);
    }
}

/// Over TLS the counts are of the decrypted stream, on both sides: TLS records are not counted.
#[test]
fn tls_bytes_are_what_the_server_sent() {
    for size in [0, 40_000] {
        check_http2(
            &["--cacert", CA, "--proto", "h2", "-c", "2", "-m", "4"],
            size,
        );
        check_http1(&["--cacert", CA, "--proto", "h1", "-c", "2"], size);
    }
}

#[test]
fn h2c_upgrade_bytes_are_what_the_server_sent() {
    for size in [0, 40_000] {
        let (ours, sent) = run(&["--proto", "h2c-upgrade", "-c", "2", "-m", "4"], size);
        let case = format!("h2c-upgrade /bytes/{size}");
        assert_eq!(ours["total_bytes"], sent.total, "{case}");
        assert_eq!(ours["data_bytes"], REQUESTS * size, "{case}");
    }
}

/// h2load measures the same runs against the same ground truth: its total and data bytes equal
/// what the server sent (but for the server's last GOAWAY), and so do ours, so the two tools
/// agree wherever their definitions do.
#[test]
fn h2load_counts_the_same_bytes_on_the_counting_target() {
    crate::common::require("h2load");
    for (name, flags) in [
        ("h2c", &["-c", "2", "-m", "4"][..]),
        ("h1", &["--h1", "-c", "2"]),
    ] {
        for size in [0, 40_000] {
            let (theirs, sent) = measure(flags, size, h2load_traffic);
            let case = format!("h2load {name} /bytes/{size}");
            // h2load ends with a GOAWAY and closes without reading the server's answering
            // GOAWAY, which the server may or may not have written by then.
            let read = theirs["total_bytes"];
            assert!(
                (sent.total - sent.h2_goaway..=sent.total).contains(&read),
                "{case}: h2load read {read} bytes, the server wrote {sent:?}"
            );
            assert_eq!(theirs["data_bytes"], REQUESTS * size, "{case}");
            if name == "h2c" {
                assert_eq!(theirs["headers_bytes"], sent.h2_header_blocks, "{case}");
            }
        }
    }
}
