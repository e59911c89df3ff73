//! Tests of the session as the driver calls it (`mod.rs`): filling, timers, readiness.

use std::time::Instant;

use crate::engine::driver::feed;
use crate::engine::session::AnySession;
use crate::engine::testing::{open, world};
use crate::plan::Protocol;
use crate::proto::h2::{self as frame, write_frame};

#[test]
fn the_timeout_queue_holds_only_streams_in_flight() {
    let world = world(&[
        "--proto",
        "h2c",
        "-m",
        "4",
        "-n",
        "1000",
        "--request-timeout",
        "10s",
    ]);
    let (ledger, mut out, mut session) = open(&world, Protocol::H2c, None);
    let mut pending = Vec::new();
    let mut settings = Vec::new();
    write_frame(&mut settings, frame::SETTINGS, 0, 0, &[]);
    feed(
        &mut session,
        &settings,
        &mut pending,
        Instant::now(),
        &ledger,
        &mut out,
    )
    .unwrap();
    for round in 0..250u32 {
        session.fill(&ledger, &mut out).unwrap();
        let mut answers = Vec::new();
        for lane in 0..4 {
            let id = 1 + 2 * (4 * round + lane);
            write_frame(
                &mut answers,
                frame::HEADERS,
                frame::END_HEADERS | frame::END_STREAM,
                id,
                &[0x88],
            );
        }
        feed(
            &mut session,
            &answers,
            &mut pending,
            Instant::now(),
            &ledger,
            &mut out,
        )
        .unwrap();
        let AnySession::H2(h2) = &session else {
            unreachable!("an h2c session")
        };
        assert!(
            h2.started.len() <= 8,
            "round {round}: {} tracked",
            h2.started.len()
        );
    }
    assert_eq!(world.shared.recorder.borrow().counters.succeeded, 1000);
}
