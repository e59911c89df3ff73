//! Tests of the session as the driver calls it (`mod.rs`): filling, timers, readiness.

use std::time::{Duration, Instant};

use crate::plan::Protocol;
use crate::proto::h2::{self as frame, write_frame};
use crate::recorder::ErrorKind;
use crate::session::any::feed;
use crate::session::any::AnySession;
use crate::session::contract::Progress;
use crate::session::testing::{drain, open, world, Server};

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
        session.fill(Instant::now(), &ledger, &mut out).unwrap();
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

#[test]
fn h2_settings_wait_is_bounded_and_zero_streams_is_not_ready() {
    let world = world(&["--proto", "h2c", "-n", "1", "--request-timeout", "1s"]);
    let due = Instant::now() + Duration::from_millis(10);
    let (ledger, mut out, mut session) = open(&world, Protocol::H2c, Some(due));
    assert_eq!(
        session.fill(Instant::now(), &ledger, &mut out),
        Ok(Progress::Continue)
    );
    assert_eq!(session.next_timer(), Some(due));
    let failure = session.on_timer(due, &ledger, &mut out).unwrap_err();
    assert_eq!(failure.kind, ErrorKind::ConnectTimeout);
    assert!(!session.is_ready());

    let (_, mut out, mut session) = open(&world, Protocol::H2c, Some(due));
    let server = Server::default().settings(&[(frame::SETTINGS_MAX_CONCURRENT_STREAMS, 0)]);
    let mut pending = Vec::new();
    feed(
        &mut session,
        &server.0,
        &mut pending,
        Instant::now(),
        &ledger,
        &mut out,
    )
    .unwrap();
    assert_eq!(
        session.fill(Instant::now(), &ledger, &mut out),
        Ok(Progress::Continue)
    );
    assert!(
        !session.is_ready(),
        "a server allowing no streams cannot carry requests"
    );
    let blocked_until = session
        .next_timer()
        .expect("the wait for a stream is bounded");
    assert!(blocked_until <= Instant::now() + Duration::from_secs(1));
    let failure = session
        .on_timer(blocked_until, &ledger, &mut out)
        .unwrap_err();
    assert_eq!(failure.kind, ErrorKind::Timeout);
    assert_eq!(world.shared.recorder.borrow().counters.started, 0);
}

#[test]
fn h2_request_timeout_cancels_only_the_late_stream() {
    let world = world(&[
        "--proto",
        "h2c",
        "-m",
        "2",
        "-n",
        "2",
        "--request-timeout",
        "1s",
    ]);
    let (ledger, mut out, mut session) = open(&world, Protocol::H2c, None);
    let mut pending = Vec::new();
    let server = Server::default().settings(&[]);
    feed(
        &mut session,
        &server.0,
        &mut pending,
        Instant::now(),
        &ledger,
        &mut out,
    )
    .unwrap();
    session.fill(Instant::now(), &ledger, &mut out).unwrap();
    let answer = Server::default().ok(3, true);
    feed(
        &mut session,
        &answer.0,
        &mut pending,
        Instant::now(),
        &ledger,
        &mut out,
    )
    .unwrap();
    let due = session.next_timer().expect("stream 1 has a deadline");
    session.on_timer(due, &ledger, &mut out).unwrap();
    let recorder = world.shared.recorder.borrow();
    assert_eq!(recorder.counters.succeeded, 1);
    assert_eq!(recorder.counters.timeout, 1);
    let cancel = [
        0,
        0,
        4,
        frame::RST_STREAM,
        0,
        0,
        0,
        0,
        1,
        0,
        0,
        0,
        frame::CANCEL as u8,
    ];
    assert!(drain(&mut out).ends_with(&cancel));
}
