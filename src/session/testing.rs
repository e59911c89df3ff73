//! A connection's world without a network, for the session unit tests and the fuzz targets:
//! a plan from command-line words, a thread's shared state, a loop that feeds a session the
//! server's bytes the way the driver does (on real time, or on a scripted clock), and (tests only) the helpers the session tests share.
//! Compiled for tests and with the `fuzzing` feature only (src/fuzzing.rs uses it), never into
//! the program.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::any::{feed, AnySession, Speaks};
use super::outgoing::{Outgoing, MAX_SLICES};
use super::{read_buffer, ConnState, Ledger, Templates, ThreadShared};
use crate::plan::{self, Protocol};
use crate::proto::h2 as frame;
use crate::recorder::{ErrorKind, Failure, Recorder, RequestCounters, WireMeter, WireTotals};
use crate::schedule::budget::Budget;

/// One thread's world for a plan: its shared state, a connection and the templates.
pub(crate) struct World {
    pub(crate) shared: ThreadShared,
    pub(crate) conn: ConnState,
    pub(crate) templates: Templates,
}

/// The world of a plan made from command-line words (the URL is added), as
/// `fuzzing::plan_of_words` makes it; tests only, since that reaches up to the flags.
#[cfg(test)]
pub(crate) fn world(argv: &[&str]) -> World {
    world_of(crate::fuzzing::plan_of_words(argv))
}

/// One thread's world for `plan`.
pub(crate) fn world_of(plan: plan::RunPlan) -> World {
    let budget = Budget::new(match plan.stop {
        plan::StopRule::Requests(n) => Some(n),
        plan::StopRule::Duration { .. } => None,
    });
    let templates = Templates::new(&plan);
    World {
        shared: ThreadShared {
            recorder: RefCell::new(Recorder::new(
                Instant::now() - Duration::from_secs(1),
                1,
                plan.interval,
                false,
            )),
            budget: Arc::new(budget),
            wire: Rc::new(WireMeter::default()),
            pacer: None,
            request_log: None,
            read_buffer: read_buffer(),
            retries: RefCell::default(),
            first_slot: 0,
            plan: Arc::new(plan),
            tls: None,
            // Two slots: tests drive slots 0 and 1.
            path_cursors: vec![Cell::new(0), Cell::new(0)],
        },
        conn: ConnState::default(),
        templates,
    }
}

/// A fresh connection's ledger, outgoing queue and session for `protocol` (`None`: an h2c
/// upgrade; `ready_by`: the handshake deadline).
pub(crate) fn open(
    world: &World,
    protocol: impl Into<Option<Protocol>>,
    ready_by: Option<Instant>,
) -> (Ledger<'_>, Outgoing, AnySession<'_>) {
    let mut out = Outgoing::default();
    let speaks = Speaks::of(protocol.into()).expect("HTTP/3 has no byte-stream session");
    let session = AnySession::new(&world.templates, speaks, ready_by, None, &mut out);
    (Ledger::new(&world.shared, &world.conn, 0), out, session)
}

/// What a session made of the server's bytes.
#[derive(Debug)]
pub(crate) struct Conversation {
    /// The failure that ended the connection, if one did.
    pub(crate) failure: Option<Failure>,
    pub(crate) counters: RequestCounters,
    pub(crate) errors: Vec<(ErrorKind, u64)>,
    pub(crate) wire: WireTotals,
    /// What the client sent, after the first fill.
    pub(crate) sent: Vec<u8>,
}

/// Runs a session for `protocol` over `server` bytes delivered `piece` bytes at a time, as the
/// driver would (without writing: what the client queues is collected).
/// `protocol`: `None` for an h2c upgrade, which finds out on the connection.
pub(crate) fn converse(
    world: &World,
    protocol: impl Into<Option<Protocol>>,
    server: &[u8],
    piece: usize,
) -> Conversation {
    let protocol = protocol.into();
    // A server answers only what it was sent: its first frame (SETTINGS) comes in pieces of its
    // own, so the client has opened its streams before their responses arrive.
    let first_frame = match protocol {
        Some(Protocol::Http1 | Protocol::H3) | None => 0,
        Some(Protocol::H2c | Protocol::H2) => server
            .first_chunk::<{ frame::HEADER_LEN }>()
            .map_or(server.len(), |head| {
                (frame::HEADER_LEN + frame::FrameHead::parse(head).length).min(server.len())
            }),
    };
    let (first, rest) = server.split_at(first_frame);
    let pieces = first.chunks(piece.max(1)).chain(rest.chunks(piece.max(1)));
    run(
        world,
        protocol,
        Instant::now(),
        pieces.map(|chunk| (Instant::now(), chunk)),
    )
}

/// [`converse`] on a scripted clock, as quinn-proto's tests drive a connection: the client
/// fills at `t0`, and each step's bytes arrive at `t0` plus the step's offset, after which the
/// client fills again at that time. The session and the ledger see no other time, so every
/// duration they record is a difference of the script's times, to the nanosecond.
#[cfg(test)]
pub(crate) fn converse_scripted(
    world: &World,
    protocol: impl Into<Option<Protocol>>,
    t0: Instant,
    steps: &[(Duration, &[u8])],
) -> Conversation {
    let arrivals = steps.iter().map(|&(offset, bytes)| (t0 + offset, bytes));
    run(world, protocol.into(), t0, arrivals)
}

/// A conversation: the first fill at `start`, then each piece of the server's bytes fed at its
/// time and a fill at that time; a failure fails what is in flight at the last time seen.
fn run<'b>(
    world: &World,
    protocol: Option<Protocol>,
    start: Instant,
    arrivals: impl Iterator<Item = (Instant, &'b [u8])>,
) -> Conversation {
    let (ledger, mut out, mut session) = open(world, protocol, None);
    let mut pending = Vec::new();
    let mut failure = session.fill(start, &ledger, &mut out).err();
    let mut last = start;
    for (at, chunk) in arrivals {
        if failure.is_some() {
            break;
        }
        last = at;
        failure = feed(&mut session, chunk, &mut pending, at, &ledger, &mut out)
            .and_then(|()| session.fill(at, &ledger, &mut out))
            .err();
    }
    if let Some(failure) = &failure {
        session.fail_all(failure, last, &ledger);
    }
    let recorder = world.shared.recorder.borrow();
    Conversation {
        failure,
        counters: recorder.counters,
        errors: recorder.errors().filter(|(_, n)| *n > 0).collect(),
        wire: world.shared.wire.totals(),
        sent: drain(&mut out),
    }
}

pub(crate) fn drain(out: &mut Outgoing) -> Vec<u8> {
    let mut sent = Vec::new();
    while !out.is_empty() {
        let mut slices = [std::io::IoSlice::new(&[]); MAX_SLICES];
        let count = out.slices(&mut slices);
        let taken: usize = slices[..count].iter().map(|slice| slice.len()).sum();
        for slice in &slices[..count] {
            sent.extend_from_slice(slice);
        }
        out.advance(taken);
    }
    sent
}

// ---- Shared by the session tests (h1, h2, upgrade) ----

#[cfg(test)]
pub(crate) fn kind(outcome: &Conversation) -> Option<ErrorKind> {
    outcome.failure.as_ref().map(|failure| failure.kind)
}

/// The requests waiting in the thread's queue to be sent again.
#[cfg(test)]
pub(crate) fn queued(world: &World) -> Vec<super::Retry> {
    world.shared.retries.borrow().iter().copied().collect()
}

/// Frames a server sends: built with the same encoder the client uses.
#[cfg(test)]
#[derive(Default)]
pub(crate) struct Server(pub(crate) Vec<u8>);

#[cfg(test)]
impl Server {
    pub(crate) fn frame(mut self, kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Self {
        frame::write_frame(&mut self.0, kind, flags, stream, payload);
        self
    }

    pub(crate) fn settings(self, settings: &[(u16, u32)]) -> Self {
        let mut payload = Vec::new();
        for (id, value) in settings {
            payload.extend_from_slice(&id.to_be_bytes());
            payload.extend_from_slice(&value.to_be_bytes());
        }
        self.frame(frame::SETTINGS, 0, 0, &payload)
    }

    /// `:status 200` (static index 8), whole.
    pub(crate) fn ok(self, stream: u32, end_stream: bool) -> Self {
        let flags = frame::END_HEADERS | if end_stream { frame::END_STREAM } else { 0 };
        self.frame(frame::HEADERS, flags, stream, &[0x88])
    }

    pub(crate) fn data(self, stream: u32, body: &[u8], end_stream: bool) -> Self {
        self.frame(
            frame::DATA,
            if end_stream { frame::END_STREAM } else { 0 },
            stream,
            body,
        )
    }
}

/// GOAWAY(NO_ERROR) naming `last` as the last stream processed.
#[cfg(test)]
pub(crate) fn goaway(last: u32) -> Vec<u8> {
    [last.to_be_bytes(), frame::NO_ERROR.to_be_bytes()].concat()
}

/// The frames in `bytes` (whole ones, as the client writes them): type and stream of each.
#[cfg(test)]
pub(crate) fn frames(mut bytes: &[u8]) -> Vec<(u8, u32)> {
    let mut frames = Vec::new();
    while let Some(head) = bytes.first_chunk::<{ frame::HEADER_LEN }>() {
        let head = frame::FrameHead::parse(head);
        frames.push((head.kind, head.stream));
        bytes = &bytes[frame::HEADER_LEN + head.length..];
    }
    assert!(bytes.is_empty(), "a partial frame");
    frames
}

/// A literal header field (not indexed), as a server's encoder may send it.
#[cfg(test)]
pub(crate) fn literal(name: &str, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    crate::proto::hpack::Field::new(name, value).encode_unindexed(&mut out, value);
    out
}

/// `bytes` as one gRPC message: the 5-byte prefix, then the bytes.
#[cfg(test)]
pub(crate) fn message(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    crate::proto::grpc::write_prefix(&mut out, bytes.len());
    out.extend_from_slice(bytes);
    out
}
