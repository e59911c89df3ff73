//! Tests of a connection's lifecycle as its `Ledger` and `ConnState` (`mod.rs`) keep it:
//! requests per connection, `--no-keepalive`, a request reserved before connecting.

use std::time::Instant;

use crate::plan::Protocol;
use crate::session::any::feed;
use crate::session::contract::Progress;
use crate::session::testing::{drain, open, world};

#[test]
fn h1_connection_retires_after_its_requests_per_connection() {
    let world = world(&[
        "--h1",
        "-m",
        "8",
        "-n",
        "10",
        "--requests-per-connection",
        "3",
    ]);
    let (ledger, mut out, mut session) = open(&world, Protocol::Http1, None);
    assert_eq!(
        session.fill(Instant::now(), &ledger, &mut out),
        Ok(Progress::Continue)
    );
    let sent = drain(&mut out);
    assert_eq!(sent.windows(4).filter(|w| w == b"GET ").count(), 3);
    assert!(world.conn.retiring(&world.shared));
    assert!(
        !ledger.may_have_more(),
        "a retiring connection takes nothing more"
    );
    let mut pending = Vec::new();
    let responses = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".repeat(3);
    feed(
        &mut session,
        &responses,
        &mut pending,
        Instant::now(),
        &ledger,
        &mut out,
    )
    .unwrap();
    // Answered: the connection is done; the rest of the budget is for the next one.
    assert_eq!(
        session.fill(Instant::now(), &ledger, &mut out),
        Ok(Progress::Finished)
    );
    assert_eq!(world.shared.recorder.borrow().counters.succeeded, 3);
    assert!(world.shared.budget.has_more());
}

#[test]
fn no_keepalive_sends_one_request_with_connection_close() {
    let world = world(&["--h1", "-m", "4", "-n", "5", "--no-keepalive"]);
    let (ledger, mut out, mut session) = open(&world, Protocol::Http1, None);
    session.fill(Instant::now(), &ledger, &mut out).unwrap();
    let sent = String::from_utf8(drain(&mut out)).unwrap();
    assert_eq!(sent.matches("GET ").count(), 1, "{sent}");
    assert!(sent.contains("\r\nconnection: close\r\n"), "{sent}");
}

#[test]
fn a_reserved_request_is_the_connections_first() {
    let world = world(&["--h1", "-n", "1", "--requests-per-connection", "1"]);
    // The slot took the only request before connecting.
    assert!(world.shared.budget.try_take());
    world.conn.reserved.set(true);
    let (ledger, mut out, mut session) = open(&world, Protocol::Http1, None);
    assert!(ledger.may_have_more());
    session.fill(Instant::now(), &ledger, &mut out).unwrap();
    assert_eq!(world.conn.requests.get(), 1);
    assert!(!world.conn.reserved.get());
    assert_eq!(world.shared.recorder.borrow().counters.started, 1);
}
