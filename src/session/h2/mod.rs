//! The HTTP/2 session (RFC 9113), written at the frame level for speed: no future or allocation
//! per request, header blocks encoded from prepared fields, and every frame produced while
//! handling a read leaves in one write. See docs/internals.md ("Performance") for why this
//! replaced the `h2` crate.
//!
//! Each connection waits for the server's SETTINGS (part of connecting), then keeps
//! `min(-m, SETTINGS_MAX_CONCURRENT_STREAMS)` streams open. After an h2c upgrade the requests do
//! not wait: the server is already answering stream 1, and one that sees no other stream may end
//! the connection as soon as stream 1 is answered (Apache does). So up to `-m` streams leave with
//! the preface, under the protocol's defaults until the server's SETTINGS arrive (RFC 9113 §3.4,
//! §6.5.2: no stream limit, 65,535-byte windows, 16 KiB frames); streams over the limit it then
//! announces come back REFUSED_STREAM and go again. Response bodies are counted, not kept;
//! receive windows are enforced and replenished as data arrives; request bodies respect the
//! server's windows. Everything a server can make the client hold is bounded (see the limits
//! below and the limits table in docs/reference.md).
//!
//! The session is one type, [`H2Session`], whose methods are spread by job: this file holds its
//! state, setup and its [`Session`] contract (whose `on_read` hands over to `recv.rs`); `send.rs`
//! opens streams and sends request bodies, `recv.rs` reads frames, `control.rs` answers control
//! frames, `streams.rs` holds the stream map and a stream's start and finish, `grpc.rs` sends and
//! reads a gRPC call's messages (through the message layer), `grpc_status.rs` judges its status,
//! `prepared.rs` what is prepared once per thread.

mod control;
mod events;
mod grpc;
mod grpc_status;
mod prepared;
mod recv;
mod send;
mod streams;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Instant;

use super::contract::{Progress, Read, Session};
use super::earliest;
use super::outgoing::Outgoing;
use super::Ledger;
use crate::proto::h2::{self as frame, write_frame};
use crate::proto::{hpack, ErrorBody};
use crate::recorder::{ErrorKind, Failure, RequestStart};
use control::window_update;
pub(crate) use prepared::{settings_payload, H2Template};
use recv::{DataInProgress, HeaderBlock};
use send::EarlyRoom;
use streams::StreamMap;

/// Header fields HTTP/2 forbids (RFC 9113 §8.2.2); h2load drops them too.
pub(crate) const CONNECTION_SPECIFIC: [&str; 6] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "host",
];
/// The largest header block accepted, HEADERS and CONTINUATION together, as received.
pub(crate) const MAX_HEADER_BLOCK: usize = 64 * 1024;
/// The largest header list accepted once decoded (names and values): an HPACK bomb stops here.
pub(crate) const MAX_HEADER_LIST: u64 = 64 * 1024;
/// Acknowledgements (PING, SETTINGS) queued and not yet written; more is a flood (nghttp2's
/// `max_outbound_ack` is the same 1000). A server that reads keeps this near 0 however many
/// PINGs it sends over a connection's life (grpc-go sends one with its responses to estimate the
/// bandwidth); one that floods and never reads fills the socket's buffer and then this.
pub(crate) const MAX_QUEUED_CONTROL: usize = 1000;
/// Streams the client reset that are remembered, so that frames crossing the RST_STREAM are
/// ignored; a frame on an older stream is ignored too (it cannot be told from those).
const RESETS_KEPT: usize = 256;

/// One HTTP/2 connection's state.
pub(crate) struct H2Session<'t> {
    template: &'t H2Template,
    streams: StreamMap,
    /// Streams in the order they started, for the request timeout. Finished ones are dropped from
    /// the front at each fill, so the front is the oldest live stream and the queue stays as
    /// long as the streams in flight.
    started: VecDeque<(u32, Instant)>,
    /// Streams with request body left to send.
    bodies: VecDeque<u32>,
    /// Paced streaming gRPC calls (`--grpc-stream-interval`): when each next message is due, in
    /// order (one interval for all, so each new entry is the latest).
    grpc_due: VecDeque<(Instant, u32)>,
    next_stream_id: u32,
    /// Until the server's SETTINGS arrive: when connecting gives up waiting for them.
    settings_due: Option<Instant>,
    settings_received: bool,
    /// Whether streams open before the server's SETTINGS arrive (after an h2c upgrade).
    open_before_settings: bool,
    /// On a connection sending early data, until the server's SETTINGS arrive: the room its
    /// requests have to ride in (see [`EarlyRoom`]).
    early: Option<EarlyRoom>,
    /// Whether the server acknowledged our SETTINGS: until then it may assume default windows.
    settings_acked: bool,
    server_max_streams: usize,
    /// Since when requests have been due but the server allowed no stream (MAX_CONCURRENT_STREAMS 0).
    blocked_since: Option<Instant>,
    initial_send_window: i64,
    send_window: i64,
    /// What the server may still send on the connection.
    recv_window: i64,
    max_send_frame: usize,
    unacked: i64,
    data: Option<DataInProgress>,
    /// The stream whose 4xx/5xx body this connection gathers the first bytes of, and those bytes.
    error_stream: Option<u32>,
    error_body: ErrorBody,
    headers: Option<HeaderBlock>,
    decoder: hpack::Decoder,
    encoder: hpack::Encoder,
    goaway: Option<u32>,
    /// Where each acknowledgement not yet written ends in the output ([`Outgoing::queued_end`]),
    /// oldest first: at most [`MAX_QUEUED_CONTROL`].
    unwritten_acks: VecDeque<u64>,
    budget_spent: bool,
    /// When the next scheduled request is due (`--rate`), if a stream is free for it.
    wake: Option<Instant>,
    /// A rendered header value being encoded (templated requests).
    value: Vec<u8>,
    /// The last [`RESETS_KEPT`] streams the client reset, and the highest forgotten one.
    resets: VecDeque<u32>,
    forgotten_reset: u32,
}

impl<'t> H2Session<'t> {
    /// A session that queues the preface and SETTINGS in `out`. After an h2c upgrade, `upgraded`
    /// is the start of the HTTP/1.1 request whose response arrives on stream 1, and the next
    /// [`H2Session::fill`] queues the other streams behind the preface, for the same write. On a
    /// connection sending TLS early data, `early_data` is how many bytes it may carry: the
    /// requests that fit leave with the preface, before the server's SETTINGS.
    pub(crate) fn new(
        template: &'t H2Template,
        upgraded: Option<RequestStart>,
        settings_due: Option<Instant>,
        early_data: Option<usize>,
        out: &mut Outgoing,
    ) -> Self {
        let settings = template.settings;
        let connection_window = i64::from(settings.connection_window).max(frame::DEFAULT_WINDOW);
        let mut session = H2Session {
            template,
            streams: StreamMap::with_capacity_and_hasher(
                template.lanes.min(1024) + 1,
                Default::default(),
            ),
            started: VecDeque::new(),
            bodies: VecDeque::new(),
            grpc_due: VecDeque::new(),
            next_stream_id: 1,
            settings_due,
            settings_received: false,
            open_before_settings: upgraded.is_some(),
            early: None,
            settings_acked: false,
            server_max_streams: usize::MAX,
            blocked_since: None,
            initial_send_window: frame::DEFAULT_WINDOW,
            send_window: frame::DEFAULT_WINDOW,
            recv_window: connection_window,
            max_send_frame: frame::MIN_MAX_FRAME_SIZE,
            unacked: 0,
            data: None,
            error_stream: None,
            error_body: ErrorBody::default(),
            headers: None,
            decoder: hpack::Decoder::new(settings.header_table_size as usize),
            encoder: hpack::Encoder::new(template.field_count()),
            goaway: None,
            unwritten_acks: VecDeque::new(),
            budget_spent: false,
            wake: None,
            value: Vec::new(),
            resets: VecDeque::new(),
            forgotten_reset: 0,
        };
        if let Some(checks) = &template.checks {
            session.decoder.check_headers(checks);
        }
        let bytes = out.bytes();
        bytes.extend_from_slice(frame::PREFACE);
        write_frame(bytes, frame::SETTINGS, 0, 0, &settings_payload(&settings));
        let extra_window = connection_window - frame::DEFAULT_WINDOW;
        if extra_window > 0 {
            window_update(bytes, 0, extra_window);
        }
        session.early = early_data.map(|room| EarlyRoom {
            left: room.saturating_sub(bytes.len()),
            request: 1,
        });
        if let Some(start) = upgraded {
            // The upgrade request is stream 1, half-closed from our side (RFC 9113 §3.2 of 7540).
            session.streams.insert(1, session.new_stream(start, 0));
            session.track_start(1, start.actual);
            session.next_stream_id = 3;
        }
        session
    }

    /// Whether the connection is done.
    fn progress(&self) -> Progress {
        if !self.streams.is_empty() {
            return Progress::Continue;
        }
        if self.budget_spent {
            Progress::Finished
        } else if self.goaway.is_some() {
            Progress::Reconnect
        } else {
            Progress::Continue
        }
    }
}

impl Session for H2Session<'_> {
    type Next = Infallible;

    /// Whether the connection can carry requests: the server's SETTINGS arrived and allow streams.
    /// After an h2c upgrade requests are in flight before then, but the handshake still ends
    /// with the server's SETTINGS.
    fn is_ready(&self) -> bool {
        self.settings_received && self.server_max_streams > 0
    }

    fn fill(
        &mut self,
        now: Instant,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<Progress, Failure> {
        while let Some(&(id, _)) = self.started.front() {
            if self.streams.contains_key(&id) {
                break;
            }
            self.started.pop_front();
        }
        if let Some(progress) = self.open_streams(now, ledger, out) {
            return Ok(progress);
        }
        self.send_bodies(now, ledger, out);
        Ok(self.progress())
    }

    /// Reads frames (see `recv.rs`).
    #[inline]
    fn on_read(
        &mut self,
        input: &[u8],
        at: Instant,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<Read<Infallible>, Failure> {
        self.read_frames(input, at, ledger, out).map(Read::Used)
    }

    fn on_eof(&mut self, _at: Instant, _ledger: &Ledger<'_>) -> Result<(), Failure> {
        if self.streams.is_empty() {
            if !self.settings_received {
                return Err(Failure::new(
                    ErrorKind::Closed,
                    "the server closed the connection before its HTTP/2 SETTINGS",
                ));
            }
            return Ok(());
        }
        Err(Failure::new(
            ErrorKind::Closed,
            "the server closed an HTTP/2 connection with requests in flight",
        ))
    }

    fn next_timer(&self) -> Option<Instant> {
        let limit = self.template.request_timeout;
        // The front may have finished since the last fill: then the timer fires early, and
        // `on_timer` drops it without cancelling anything.
        let oldest = self
            .started
            .front()
            .zip(limit)
            .map(|((_, start), limit)| *start + limit);
        let blocked = self
            .blocked_since
            .zip(limit)
            .map(|(since, limit)| since + limit);
        // The SETTINGS deadline (cleared once they arrive) does not hide the streams': after an
        // upgrade, streams are in flight before the SETTINGS.
        let paced = self.grpc_due.front().map(|(due, _)| *due);
        earliest(
            earliest(self.settings_due, paced),
            earliest(earliest(oldest, blocked), self.wake),
        )
    }

    fn on_timer(
        &mut self,
        now: Instant,
        ledger: &Ledger<'_>,
        out: &mut Outgoing,
    ) -> Result<(), Failure> {
        // `settings_due` is cleared when the SETTINGS arrive.
        if self.settings_due.is_some_and(|due| now >= due) {
            return Err(Failure::new(
                ErrorKind::ConnectTimeout,
                "the server sent no HTTP/2 SETTINGS within --connect-timeout",
            ));
        }
        self.grpc_due_messages(now, ledger);
        let Some(limit) = self.template.request_timeout else {
            return Ok(());
        };
        if self.blocked_since.is_some_and(|since| now >= since + limit) {
            return Err(Failure::new(
                ErrorKind::Timeout,
                "the server allows no concurrent streams (SETTINGS_MAX_CONCURRENT_STREAMS 0): requests ran past --request-timeout waiting for one",
            ));
        }
        // Cancel every stream past its deadline, oldest first (client-side timeouts).
        while let Some(&(id, start)) = self.started.front() {
            // Stream ids are never reused on a connection: one still in the map is the same request.
            let live = self.streams.contains_key(&id);
            if live && now < start + limit {
                break;
            }
            self.started.pop_front();
            if live {
                let stream = self.streams.remove(&id).expect("checked live");
                self.reset(id, frame::CANCEL, out.bytes());
                ledger.fail(stream.start, ErrorKind::Timeout, now);
            }
        }
        Ok(())
    }

    fn fail_all(&mut self, kind: ErrorKind, at: Instant, ledger: &Ledger<'_>) -> usize {
        let count = self.streams.len();
        for (_, stream) in self.streams.drain() {
            ledger.fail(stream.start, kind, at);
        }
        count
    }
}
