//! Whether h2load-rs itself set the result: each runner thread's busy share (the part of its
//! time on a CPU or runnable waiting for one, not asleep waiting for I/O or a timer) against
//! known truths. A client that waits for a 10 ms handler mostly sleeps; one that shares its only
//! core with a busy loop, against
//! a fast server, is never waiting for the server; one asked to pace more requests than a thread
//! can send is flagged, and its schedule says exactly how many send times were late or missed.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::{h2load_rs, run_command_within, timer_noise, url};
use crate::exclusive;

/// A busy loop pinned to CPU 0, killed when dropped.
struct Hog(Child);

impl Hog {
    fn on_cpu0() -> Hog {
        Hog(Command::new("taskset")
            .args(["-c", "0", "sh", "-c", "while :; do :; done"])
            .stdout(Stdio::null())
            .spawn()
            .expect("taskset (util-linux) runs"))
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_client_waiting_for_a_slow_handler_is_not_flagged() {
    let _machine = exclusive();
    let noise = timer_noise();
    let run = h2load_rs(&["--h1", "-c", "10", "-D", "2s", &url("/delay/10")]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let generator = &run.cell()["generator"];
    let busy = generator["thread_busy_pct"][0].as_f64().unwrap();
    // 1,000 responses a second at a few tens of µs each: a few percent busy on an idle machine;
    // a starved one (half a core) makes each wake-up slower, still far from 90%.
    assert!(busy < 60.0, "busy {busy}%; {noise}");
    assert_eq!(generator["limited"], false, "{generator}");
    assert!(!run.output.stdout.contains("busy, rarely waiting"));
}

#[test]
fn a_client_sharing_its_core_with_a_busy_loop_against_a_fast_server_is_flagged() {
    let _machine = exclusive();
    let noise = timer_noise();
    // Two busy loops: the client gets a third of its core, so responses wait for it, never it
    // for them (with one, a debug-built client was still 88% busy, near the 90% line).
    let _hogs = [Hog::on_cpu0(), Hog::on_cpu0()];
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let output = run_command_within(
        "taskset",
        &[
            "-c",
            "0",
            env!("CARGO_BIN_EXE_h2load-rs"),
            "--h1",
            "-c",
            "50",
            "-D",
            "2s",
            "--json",
            json.to_str().unwrap(),
            &url("/ping"),
        ],
        Duration::from_secs(60),
    );
    assert_eq!(output.code, 0, "{}", output.stderr);
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let generator = &report["cells"][0]["generator"];
    eprintln!("a client sharing its core: {generator}; {noise}");
    assert_eq!(generator["limited"], true, "{generator}; {noise}");
    assert!(
        output.stdout.contains("runner thread 0 was") && output.stdout.contains("raise -t"),
        "{}",
        output.stdout
    );
}

#[test]
fn a_rate_beyond_one_thread_is_flagged_with_its_late_and_missed_sends_counted() {
    let _machine = exclusive();
    let noise = timer_noise();
    let run = h2load_rs(&[
        "--h1",
        "-t",
        "1",
        "-c",
        "50",
        "--rate",
        "2000000",
        "-D",
        "2s",
        &url("/ping"),
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    assert_eq!(run.cell()["generator"]["limited"], true, "{noise}");
    let scheduled = run.int("rate/scheduled");
    let (started, missed) = (run.int("requests/started"), run.int("rate/missed"));
    // The schedule holds 4,000,000 send times; no debug build sends them from one thread.
    assert_eq!(scheduled, 4_000_000);
    assert_eq!(
        started + missed,
        scheduled,
        "every send time started or missed"
    );
    assert!(missed > scheduled / 2, "{missed} missed");
    // The started ones were late, and the report says by how much.
    let late = run.int("rate/late");
    assert!(late > 0 && late <= started, "{late} late of {started}");
    assert!(run.num("rate/delay_p99_us") > 1000.0);
    assert!(
        run.output.stdout.contains("busy, rarely waiting"),
        "{}",
        run.output.stdout
    );
}
