//! Whether a run was steady, against runs whose course is known: a closed loop against a fixed
//! handler is steady; a rate above what the connections can carry builds a queue, so the p99
//! rises through the run; a target that answers nothing for the first second is a warm-up.

use std::time::{Duration, Instant};

use h2load_rs::testkit::server::{spawn_background, Behaviour, ServeOptions, Stall};

use crate::common::{h2load_rs, timer_noise, url};
use crate::exclusive;

#[test]
fn a_closed_loop_against_a_fixed_handler_is_steady() {
    let _machine = exclusive();
    let noise = timer_noise();
    let run = h2load_rs(&["--h1", "-c", "10", "-D", "4s", &url("/delay/5")]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let steadiness = &run.cell()["steadiness"];
    assert_eq!(steadiness["steady"], true, "{steadiness}; {noise}");
    assert!(!run.output.stdout.contains("was not steady"));
}

#[test]
fn a_queue_building_up_is_a_rising_p99() {
    let _machine = exclusive();
    let noise = timer_noise();
    // 10 connections × 100 responses a second each carry 1,000/s: at 1,500/s the send times
    // fall behind by 0.5 s every second, and latency from the schedule grows with them.
    let run = h2load_rs(&[
        "--h1",
        "-c",
        "10",
        "--rate",
        "1500",
        "-D",
        "4s",
        &url("/delay/10"),
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let steadiness = &run.cell()["steadiness"];
    assert_eq!(steadiness["steady"], false, "{steadiness}; {noise}");
    assert!(
        steadiness["p99_trend_pct"].as_f64().unwrap() > 100.0,
        "{steadiness}"
    );
    assert!(steadiness["p99_trend_p"].as_f64().unwrap() < 0.01);
    assert!(
        run.output.stdout.contains("the run was not steady: ")
            && run.output.stdout.contains("the p99 rose"),
        "{}",
        run.output.stdout
    );
}

#[test]
fn a_target_silent_for_its_first_second_is_a_warm_up() {
    let _machine = exclusive();
    let noise = timer_noise();
    // A stall of 1 s in every 60 s, the first starting now: nothing is answered for 1 s (the
    // period's start lies 59 s back: a machine up for less than that has no such instant).
    let every = Duration::from_secs(60);
    let length = Duration::from_secs(1);
    let options = ServeOptions {
        behaviour: Behaviour {
            stall: Some(Stall {
                every,
                length,
                epoch: Instant::now() + length - every,
            }),
            ..Behaviour::default()
        },
        ..ServeOptions::default()
    };
    let addr = spawn_background(2, options).expect("built-in target starts");
    let run = h2load_rs(&[
        "--h1",
        "-c",
        "10",
        "-D",
        "5s",
        &format!("http://{addr}/ping"),
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let steadiness = &run.cell()["steadiness"];
    assert_eq!(steadiness["steady"], false, "{steadiness}; {noise}");
    let until = steadiness["warm_up_until_s"].as_f64().expect("a warm-up");
    assert!((0.5..=2.0).contains(&until), "{steadiness}");
    assert!(
        run.output.stdout.contains("--warm-up-time"),
        "{}",
        run.output.stdout
    );
}
