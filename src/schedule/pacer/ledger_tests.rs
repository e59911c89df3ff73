//! The pacer as connections meet it, through their `Ledger`: one waiter per send time, a timed
//! run's end, a `--stages` curve, a steered run's throttle. (The pacer alone: `pacer.rs`'s tests.)

use std::time::{Duration, Instant};

use crate::session::testing::world;
use crate::session::{ConnState, Ledger, NextRequest};

// ---- --rate ----

#[test]
fn waiting_connections_come_back_one_per_send_time_and_wake_when_the_schedule_ends() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};

    let mut world = world(&["--h1", "-n", "1"]);
    let period = Duration::from_millis(1);
    let start = Instant::now() + Duration::from_secs(1);
    world.shared.pacer = Some(super::Pacer::new(period, start, None));
    let (a, b) = (ConnState::default(), ConnState::default());
    let (ledger_a, ledger_b) = (
        Ledger::new(&world.shared, &a, 0),
        Ledger::new(&world.shared, &b, 1),
    );
    let at = |ledger: &Ledger<'_>| match ledger.next_request(Instant::now()) {
        NextRequest::At(time) => time,
        other => panic!("expected to wait, got {other:?}"),
    };
    assert_eq!(at(&ledger_a), start);
    assert_eq!(at(&ledger_b), start + period, "one waiter per send time");
    assert_eq!(at(&ledger_a), start, "a connection keeps its time");
    // Whoever finds the first time due takes it: a's time is gone, b's stands.
    let pacer = world.shared.pacer.as_ref().unwrap();
    pacer.next.set(start + period);
    assert_eq!(at(&ledger_b), start + period);
    assert_eq!(at(&ledger_a), start + 2 * period);

    // b waits; a finds the one request taken (the schedule is over) and wakes b at once.
    assert!(world.shared.budget.try_take());
    pacer.next.set(Instant::now());
    let mut context = Context::from_waker(Waker::noop());
    let mut waiting = Box::pin(ledger_b.schedule_calls_back());
    assert_eq!(waiting.as_mut().poll(&mut context), Poll::Pending);
    assert_eq!(ledger_a.next_request(Instant::now()), NextRequest::Done);
    assert_eq!(waiting.as_mut().poll(&mut context), Poll::Ready(()));
}

#[test]
fn a_timed_run_tells_no_send_time_past_its_end_and_ends_its_waiters_there() {
    let mut world = world(&["--h1", "-D", "10s"]);
    let period = Duration::from_millis(100);
    let start = Instant::now() + Duration::from_secs(1);
    let ends = start + period + period / 2;
    world.shared.pacer = Some(super::Pacer::new(period, start, Some(ends)));
    let conns = [
        ConnState::default(),
        ConnState::default(),
        ConnState::default(),
    ];
    let told: Vec<_> = conns
        .iter()
        .map(|conn| Ledger::new(&world.shared, conn, 0).next_request(Instant::now()))
        .collect();
    assert_eq!(
        told,
        [
            NextRequest::At(start),
            NextRequest::At(start + period),
            NextRequest::At(ends)
        ],
        "the third send time is past the end: that connection comes back at the end"
    );
    // At the end, whoever asks learns the schedule is over and wakes the rest.
    let mut late = super::Pacer::new(period, Instant::now() + period, Some(Instant::now()));
    std::mem::swap(world.shared.pacer.as_mut().unwrap(), &mut late);
    let ledger = Ledger::new(&world.shared, &conns[0], 0);
    assert_eq!(ledger.next_request(Instant::now()), NextRequest::Done);
    assert_eq!(conns[0].requests.get(), 0, "nothing sent");
}

#[test]
fn a_send_time_due_before_the_end_goes_just_after_it_but_a_backlog_does_not() {
    let mut world = world(&["--h1", "-D", "10s"]);
    let conn = ConnState::default();
    let now = Instant::now();
    // Due 1 ms before an end that passed 1 ms ago: a late wake-up, it still goes.
    let ends = now - Duration::from_millis(1);
    let late = super::Pacer::new(
        Duration::from_secs(1),
        ends - Duration::from_millis(1),
        Some(ends),
    );
    world.shared.pacer = Some(late);
    let ledger = Ledger::new(&world.shared, &conn, 0);
    assert!(matches!(
        ledger.next_request(Instant::now()),
        NextRequest::Now(_)
    ));
    // Due 1 s before an end that passed 50 ms ago (an overloaded server's backlog): over.
    let ends = now - Duration::from_millis(50);
    let backlog = super::Pacer::new(
        Duration::from_millis(1),
        ends - Duration::from_secs(1),
        Some(ends),
    );
    world.shared.pacer = Some(backlog);
    let ledger = Ledger::new(&world.shared, &conn, 0);
    assert_eq!(ledger.next_request(Instant::now()), NextRequest::Done);
}

// ---- --stages and the steered run ----

#[test]
fn a_ramp_tells_waiting_connections_the_send_times_of_its_curve() {
    use super::Source;
    use crate::plan::stages::{Share, Stage, Stages};

    let mut world = world(&["--h1", "-D", "10s"]);
    // A step to 1000/s held for 1 s: a request every ms, the first half a period in.
    let stages = Stages::new(
        0.0,
        ["0s:1000", "1s:1000"]
            .iter()
            .map(|text| Stage::parse(text).unwrap())
            .collect(),
    )
    .unwrap();
    let start = Instant::now() + Duration::from_secs(1);
    let ends = start + Duration::from_secs(1);
    world.shared.pacer = Some(super::Pacer::with_source(
        Source::Stages(Share::new(stages, 1.0)),
        None,
        start,
        Some(ends),
    ));
    let conns = [ConnState::default(), ConnState::default()];
    let told: Vec<_> = conns
        .iter()
        .map(|conn| Ledger::new(&world.shared, conn, 0).next_request(Instant::now()))
        .collect();
    let at = |micros| NextRequest::At(start + Duration::from_micros(micros));
    assert_eq!(
        told,
        [at(500), at(1500)],
        "one waiter per send time of the curve"
    );
}

#[test]
fn a_steered_pacer_follows_its_throttle_and_wakes_its_waiters_on_a_change() {
    use super::{Offered, Source, Steering, Throttle};
    use std::future::Future;
    use std::sync::Arc;
    use std::task::{Context, Poll, Waker};

    let mut world = world(&["--h1", "-D", "10s"]);
    let throttle = Arc::new(Throttle::new());
    world.shared.pacer = Some(super::Pacer::with_source(
        Source::Steered(Steering::new(throttle.clone(), 1.0)),
        None,
        Instant::now(),
        None,
    ));
    let conn = ConnState::default();
    let ledger = Ledger::new(&world.shared, &conn, 0);
    // Paused: the connection waits until the rate changes, looking again every 50 ms (a
    // change between its look and its wait would not wake it).
    for _ in 0..2 {
        let asked = Instant::now();
        match ledger.next_request(Instant::now()) {
            NextRequest::At(time) => assert!(
                time >= asked + Duration::from_millis(50)
                    && time <= Instant::now() + Duration::from_millis(50)
            ),
            other => panic!("a paused run sends nothing, got {other:?}"),
        }
    }
    let mut context = Context::from_waker(Waker::noop());
    let mut waiting = Box::pin(ledger.schedule_calls_back());
    assert_eq!(waiting.as_mut().poll(&mut context), Poll::Pending);
    throttle.set(Offered::Paced(1000.0));
    assert_eq!(waiting.as_mut().poll(&mut context), Poll::Ready(()));
    // The new rate starts at once; the time told under the old one no longer holds.
    let before = Instant::now();
    let first = match ledger.next_request(Instant::now()) {
        NextRequest::Now(start) => start.intended,
        other => panic!("the first request of the step goes now, got {other:?}"),
    };
    assert!(first >= before);
    assert_eq!(
        ledger.next_request(Instant::now()),
        NextRequest::At(first + Duration::from_millis(1)),
        "1000/s: the next a millisecond later"
    );
    // Unpaced: every request goes at once, intended when sent.
    throttle.set(Offered::Unpaced);
    for _ in 0..3 {
        assert!(
            matches!(ledger.next_request(Instant::now()), NextRequest::Now(start) if start.intended == start.actual)
        );
    }
    throttle.set(Offered::Stopped);
    assert_eq!(ledger.next_request(Instant::now()), NextRequest::Done);
}
