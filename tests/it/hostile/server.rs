//! Scripted misbehaving servers on loopback: a std::net listener whose every connection runs one
//! script on its own thread, plus just enough HTTP/1.1, HTTP/2 framing and HPACK to write the
//! scripts. Nothing here may outlive its test: every socket has short timeouts so that every loop
//! re-checks the server's stop flag, and every connection has a hard lifetime on top.

use crate::common::TargetProcess;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a blocked read or write waits before the loop around it re-checks the stop flag.
const POLL: Duration = Duration::from_millis(50);
/// Hard cap on a connection's life, longer than any run the suite allows, in case a stop is lost.
const CONNECTION_LIFETIME: Duration = Duration::from_secs(20);

/// How a server misbehaves.
#[derive(Clone, Copy)]
pub enum Behaviour {
    /// Runs this script on every accepted connection (the socket closes when it returns).
    Script(fn(Conn)),
    /// HTTP/1.1: answers every request head with exactly these bytes.
    H1Reply(&'static [u8]),
    /// h2c: handshake, then answers every request stream with the frames this builds from its id.
    H2Reply(fn(u32) -> Vec<u8>),
    /// The built binary's own target over TLS (`h2load-rs serve --tls`).
    BuiltinTls,
}

/// A running server; stops (and joins every thread, or kills its process) when dropped.
pub struct Server {
    /// Where it listens.
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
    process: Option<TargetProcess>,
    never_processed: Arc<AtomicU64>,
    /// Connections whose script is still running.
    active: Arc<AtomicUsize>,
}

impl Server {
    /// Starts a server behaving as `behaviour` on 127.0.0.1 and a free port.
    pub fn start(behaviour: Behaviour) -> Server {
        match behaviour {
            Behaviour::BuiltinTls => builtin_tls(),
            scripted => listen(scripted),
        }
    }

    /// Requests its connections received and never processed (see [`Conn::never_processed`]),
    /// once every connection's script has seen the client go (or after 2 s): a client that has
    /// exited may have left requests the scripts have not read yet.
    pub fn never_processed(&self) -> u64 {
        let until = Instant::now() + Duration::from_secs(2);
        while self.active.load(Ordering::SeqCst) > 0 && Instant::now() < until {
            std::thread::sleep(POLL / 10);
        }
        self.never_processed.load(Ordering::SeqCst)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        // A built-in target's process is killed as it drops.
        drop(self.process.take());
    }
}

fn listen(behaviour: Behaviour) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    listener
        .set_nonblocking(true)
        .expect("non-blocking listener");
    let addr = listener.local_addr().expect("listener address");
    let stop = Arc::new(AtomicBool::new(false));
    let never_processed = Arc::new(AtomicU64::new(0));
    let active = Arc::new(AtomicUsize::new(0));
    let shared = Shared {
        stop: Arc::clone(&stop),
        never_processed: Arc::clone(&never_processed),
        active: Arc::clone(&active),
    };
    let acceptor = std::thread::spawn(move || accept_until_stopped(&listener, behaviour, &shared));
    Server {
        addr,
        stop,
        acceptor: Some(acceptor),
        process: None,
        never_processed,
        active,
    }
}

/// What the acceptor shares with the server handle.
struct Shared {
    stop: Arc<AtomicBool>,
    never_processed: Arc<AtomicU64>,
    active: Arc<AtomicUsize>,
}

/// Accepts until the stop flag is set (polling, so the flag is seen), then joins the connections.
fn accept_until_stopped(listener: &TcpListener, behaviour: Behaviour, shared: &Shared) {
    let mut connections: Vec<JoinHandle<()>> = Vec::new();
    while !shared.stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, _)) => {
                let conn = Conn::new(
                    stream,
                    Arc::clone(&shared.stop),
                    Arc::clone(&shared.never_processed),
                );
                let active = Arc::clone(&shared.active);
                active.fetch_add(1, Ordering::SeqCst);
                connections.push(std::thread::spawn(move || {
                    serve(behaviour, conn);
                    active.fetch_sub(1, Ordering::SeqCst);
                }));
            }
            // Nothing to accept yet (or a transient failure such as EMFILE): look again soon.
            Err(_) => std::thread::sleep(POLL / 10),
        }
        // Reconnect storms would otherwise pile up finished handles for the whole run.
        connections.retain(|handle| !handle.is_finished());
    }
    for connection in connections {
        let _ = connection.join();
    }
}

fn serve(behaviour: Behaviour, conn: Conn) {
    match behaviour {
        Behaviour::Script(script) => script(conn),
        Behaviour::H1Reply(reply) => answer_each_h1(conn, reply),
        Behaviour::H2Reply(build) => h2::answer_each(conn, build),
        Behaviour::BuiltinTls => unreachable!("served by its own process"),
    }
}

/// `h2load-rs serve --tls` on a free port, its address read from the line it prints.
fn builtin_tls() -> Server {
    let process = TargetProcess::start(&[], &["--tls", "--threads", "1"]);
    Server {
        addr: process.addr(),
        stop: Arc::new(AtomicBool::new(false)),
        acceptor: None,
        process: Some(process),
        never_processed: Arc::default(),
        active: Arc::default(),
    }
}

/// One accepted connection, with what has been read but not consumed yet.
pub struct Conn {
    stream: TcpStream,
    stop: Arc<AtomicBool>,
    until: Instant,
    pending: Vec<u8>,
    never_processed: Arc<AtomicU64>,
}

/// Whether an I/O error only means "nothing yet": the short socket timeouts end in these.
fn transient(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
    )
}

impl Conn {
    fn new(stream: TcpStream, stop: Arc<AtomicBool>, never_processed: Arc<AtomicU64>) -> Conn {
        // Accepted sockets may inherit the listener's non-blocking mode on some platforms.
        let _ = stream.set_nonblocking(false);
        let _ = stream.set_read_timeout(Some(POLL));
        let _ = stream.set_write_timeout(Some(POLL));
        let _ = stream.set_nodelay(true);
        Conn {
            stream,
            stop,
            until: Instant::now() + CONNECTION_LIFETIME,
            pending: Vec::new(),
            never_processed,
        }
    }

    /// Counts a request the server received and will never process: the client should send it
    /// again, and its report should count it as retried (or failed, with `--no-retry`).
    pub fn never_processed(&self) {
        self.never_processed.fetch_add(1, Ordering::SeqCst);
    }

    /// Shuts down our side (FIN) and keeps reading, as a server closing gracefully does.
    pub fn shutdown_write(&self) {
        let _ = self.stream.shutdown(Shutdown::Write);
    }

    /// Whether the script should go on: the server is not stopping and the lifetime is not over.
    pub fn live(&self) -> bool {
        !self.stop.load(Ordering::SeqCst) && Instant::now() < self.until
    }

    /// Writes all of `bytes`, waiting out a peer that does not read; false once the peer is gone
    /// or the server stops.
    pub fn send(&mut self, mut bytes: &[u8]) -> bool {
        while !bytes.is_empty() {
            if !self.live() {
                return false;
            }
            match self.stream.write(bytes) {
                Ok(0) => return false,
                Ok(n) => bytes = &bytes[n..],
                Err(error) if transient(&error) => {}
                Err(_) => return false,
            }
        }
        true
    }

    /// Sends `bytes` over and over until the peer is gone or the server stops.
    pub fn send_forever(&mut self, bytes: &[u8]) {
        while self.send(bytes) {}
    }

    /// Sends `bytes` one byte every `gap` until the peer is gone or the server stops.
    pub fn dribble(&mut self, bytes: impl IntoIterator<Item = u8>, gap: Duration) {
        for byte in bytes {
            if !self.send(&[byte]) {
                return;
            }
            std::thread::sleep(gap);
        }
    }

    /// Reads more into `pending`; false at end of stream, on error, or when the server stops.
    fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 16 * 1024];
        while self.live() {
            match self.stream.read(&mut chunk) {
                Ok(0) => return false,
                Ok(n) => {
                    self.pending.extend_from_slice(&chunk[..n]);
                    return true;
                }
                Err(error) if transient(&error) => {}
                Err(_) => return false,
            }
        }
        false
    }

    /// The next `n` bytes the peer sends, or None if it stops first.
    pub fn take(&mut self, n: usize) -> Option<Vec<u8>> {
        while self.pending.len() < n {
            if !self.fill() {
                return None;
            }
        }
        Some(self.pending.drain(..n).collect())
    }

    /// Consumes one HTTP/1.1 request head (GET: no body); false if the peer stops first.
    pub fn read_h1_head(&mut self) -> bool {
        loop {
            if let Some(end) = self.pending.windows(4).position(|w| w == b"\r\n\r\n") {
                self.pending.drain(..end + 4);
                return true;
            }
            if !self.fill() {
                return false;
            }
        }
    }

    /// Reads and throws away everything until the peer closes or the server stops.
    pub fn discard_until_closed(&mut self) {
        while self.fill() {
            self.pending.clear();
        }
    }

    /// Closes with a FIN: shuts down our side, then drains the peer so that unread input does
    /// not turn the close into a reset.
    pub fn close_gracefully(mut self) {
        self.shutdown_write();
        self.discard_until_closed();
    }

    /// Closes with a TCP RST. std cannot set SO_LINGER 0 on stable Rust, but Linux resets a
    /// connection closed with unread input, so this waits for the peer's first bytes and drops the
    /// socket without reading them.
    pub fn reset(self) {
        let mut byte = [0u8; 1];
        while self.live() {
            match self.stream.peek(&mut byte) {
                Ok(_) => break,
                Err(error) if transient(&error) => {}
                Err(_) => break,
            }
        }
    }
}

/// HTTP/1.1: answers every request head on the connection with `reply`.
pub fn answer_each_h1(mut conn: Conn, reply: &[u8]) {
    while conn.read_h1_head() && conn.send(reply) {}
}

/// Just enough HTTP/2 to misbehave: frames, SETTINGS, the handshake, and request streams.
pub mod h2 {
    use super::Conn;

    // The wire facts are the client's own (RFC constants, defined once in `proto::h2`); only the
    // frames built from them misbehave.
    pub use h2load_rs::testkit::h2::{
        ACK, CONTINUATION, DATA, END_HEADERS, END_STREAM, GOAWAY, HEADERS, INTERNAL_ERROR,
        NO_ERROR, PADDED, PING, PUSH_PROMISE, REFUSED_STREAM, RST_STREAM, SETTINGS,
        SETTINGS_INITIAL_WINDOW_SIZE, SETTINGS_MAX_CONCURRENT_STREAMS, WINDOW_UPDATE,
    };
    use h2load_rs::testkit::h2::{HEADER_LEN as FRAME_HEADER_LEN, PREFACE_LEN};

    /// HPACK block of the single static entry 8, `:status: 200`.
    pub const STATUS_200: &[u8] = &[0x88];

    /// One frame: 24-bit length, type, flags, 31-bit stream id, payload.
    pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(FRAME_HEADER_LEN + payload.len());
        h2load_rs::testkit::h2::write_frame(&mut bytes, kind, flags, stream, payload);
        bytes
    }

    /// A SETTINGS frame carrying these (identifier, value) pairs.
    pub fn settings(pairs: &[(u16, u32)]) -> Vec<u8> {
        let payload: Vec<u8> = pairs
            .iter()
            .flat_map(|(id, value)| id.to_be_bytes().into_iter().chain(value.to_be_bytes()))
            .collect();
        frame(SETTINGS, 0, 0, &payload)
    }

    /// A frame whose payload is one 32-bit value: RST_STREAM's code, WINDOW_UPDATE's increment.
    pub fn frame_u32(kind: u8, stream: u32, value: u32) -> Vec<u8> {
        frame(kind, 0, stream, &value.to_be_bytes())
    }

    /// GOAWAY naming the last stream processed and an error code.
    pub fn goaway(last_stream: u32, code: u32) -> Vec<u8> {
        let payload: Vec<u8> = last_stream
            .to_be_bytes()
            .into_iter()
            .chain(code.to_be_bytes())
            .collect();
        frame(GOAWAY, 0, 0, &payload)
    }

    /// A complete `200` response without a body on `stream`.
    pub fn ok(stream: u32) -> Vec<u8> {
        frame(HEADERS, END_HEADERS | END_STREAM, stream, STATUS_200)
    }

    /// A complete `200` response on `stream` with a 4-byte body, HEADERS and DATA both padded.
    pub fn padded_ok(stream: u32) -> Vec<u8> {
        let headers = [&[5][..], STATUS_200, &[0; 5]].concat();
        let data = [&[10][..], b"pong", &[0; 10]].concat();
        [
            frame(HEADERS, END_HEADERS | PADDED, stream, &headers),
            frame(DATA, END_STREAM | PADDED, stream, &data),
        ]
        .concat()
    }

    /// Reads the client preface, then sends our SETTINGS and acknowledges the client's (blindly:
    /// the client sends SETTINGS first, and what it says does not matter to these scripts).
    pub fn handshake(conn: &mut Conn, ours: &[(u16, u32)]) -> bool {
        conn.take(PREFACE_LEN).is_some()
            && conn.send(&settings(ours))
            && conn.send(&frame(SETTINGS, ACK, 0, &[]))
    }

    /// Skips client frames up to the next HEADERS and returns its stream id (None if the client
    /// stops first).
    pub fn next_request(conn: &mut Conn) -> Option<u32> {
        loop {
            let header = conn.take(FRAME_HEADER_LEN)?;
            let length = u32::from_be_bytes([0, header[0], header[1], header[2]]) as usize;
            conn.take(length)?;
            if header[3] == HEADERS {
                return Some(
                    u32::from_be_bytes([header[5], header[6], header[7], header[8]]) & 0x7fff_ffff,
                );
            }
        }
    }

    /// Handshake, then answers every request stream with the frames `build` makes for it.
    pub fn answer_each(mut conn: Conn, build: fn(u32) -> Vec<u8>) {
        if !handshake(&mut conn, &[]) {
            return;
        }
        while let Some(stream) = next_request(&mut conn) {
            if !conn.send(&build(stream)) {
                return;
            }
        }
    }
}

/// Just enough HPACK (RFC 7541) to build hostile header blocks, without Huffman coding.
pub mod hpack {
    /// An integer with an N-bit prefix; `flags` are the first byte's bits above the prefix.
    pub fn int(prefix_bits: u32, flags: u8, value: usize) -> Vec<u8> {
        let max = (1usize << prefix_bits) - 1;
        if value < max {
            return vec![flags | value as u8];
        }
        let mut bytes = vec![flags | max as u8];
        let mut rest = value - max;
        while rest >= 128 {
            bytes.push(0x80 | (rest % 128) as u8);
            rest /= 128;
        }
        bytes.push(rest as u8);
        bytes
    }

    /// A string literal, not Huffman-coded.
    pub fn string(text: &[u8]) -> Vec<u8> {
        let mut bytes = int(7, 0, text.len());
        bytes.extend(text);
        bytes
    }

    /// Literal with incremental indexing and a new name: the entry enters the dynamic table.
    pub fn indexed_literal(name: &[u8], value: &[u8]) -> Vec<u8> {
        [vec![0x40], string(name), string(value)].concat()
    }

    /// Literal without indexing and a new name.
    pub fn literal(name: &[u8], value: &[u8]) -> Vec<u8> {
        [vec![0x00], string(name), string(value)].concat()
    }

    /// Literal without indexing whose name is the static table's entry `index`.
    pub fn literal_indexed_name(index: usize, value: &[u8]) -> Vec<u8> {
        [int(4, 0x00, index), string(value)].concat()
    }

    /// Indexed field: a reference to table entry `index` (static 1..=61, dynamic from 62).
    pub fn indexed(index: usize) -> Vec<u8> {
        int(7, 0x80, index)
    }

    /// The static table's index of the `:status` name.
    pub const STATUS: usize = 8;
    /// The first dynamic table index: the newest entry.
    pub const NEWEST_DYNAMIC: usize = 62;
}

/// The scripts: one misbehaviour each, named for what the server does.
pub mod scripts {
    use std::time::Duration;

    use super::h2::{self, frame};
    use super::{hpack, Conn};

    /// Floods are written in batches of this many bytes or more, so a flood outruns the client.
    const BATCH: usize = 64 * 1024;

    /// `part` repeated into one batch of at least [`BATCH`] bytes.
    fn batch(part: &[u8]) -> Vec<u8> {
        part.repeat(BATCH.div_ceil(part.len()))
    }

    // ---- connection level, any protocol ----

    /// Closes with a FIN right after accepting.
    pub fn close_on_accept(conn: Conn) {
        conn.close_gracefully();
    }

    /// Closes with a TCP RST as soon as the client has sent something.
    pub fn reset_on_accept(conn: Conn) {
        conn.reset();
    }

    /// Accepts and reads, but never answers anything.
    pub fn never_answer(mut conn: Conn) {
        conn.discard_until_closed();
    }

    /// Answers the client's first bytes with a fatal TLS alert record (handshake_failure), as a
    /// TLS server does to a client that does not speak TLS, then closes.
    pub fn tls_alert(mut conn: Conn) {
        if conn.take(1).is_some() && conn.send(&[0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28]) {
            conn.close_gracefully();
        }
    }

    // ---- HTTP/1.1 ----

    /// Endless `100 Continue` interim responses to the first request.
    pub fn h1_endless_continue(mut conn: Conn) {
        if conn.read_h1_head() {
            conn.send_forever(&batch(b"HTTP/1.1 100 Continue\r\n\r\n"));
        }
    }

    /// Slowloris: a response head that never ends, one byte every 200 ms.
    pub fn h1_slow_head(mut conn: Conn) {
        if conn.read_h1_head() {
            let head = b"HTTP/1.1 200 OK\r\n".iter().copied();
            let endless = b"X-Slow: 1\r\n".iter().copied().cycle();
            conn.dribble(head.chain(endless), Duration::from_millis(200));
        }
    }

    /// Header lines forever, never the blank line that ends the head.
    pub fn h1_endless_head(mut conn: Conn) {
        if conn.read_h1_head() && conn.send(b"HTTP/1.1 200 OK\r\n") {
            conn.send_forever(&batch(
                b"X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n",
            ));
        }
    }

    /// Announces a 1 TB body, then sends bytes forever.
    pub fn h1_endless_body(mut conn: Conn) {
        if conn.read_h1_head()
            && conn.send(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\n")
        {
            conn.send_forever(&[b'x'; BATCH]);
        }
    }

    /// A chunked body whose chunks never end.
    pub fn h1_endless_chunked(mut conn: Conn) {
        if conn.read_h1_head()
            && conn.send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        {
            let chunk = [b"4000\r\n".as_slice(), &[b'x'; 0x4000], b"\r\n"].concat();
            conn.send_forever(&batch(&chunk));
        }
    }

    /// A complete response whose head has 1000 header lines.
    pub fn h1_thousand_headers(conn: Conn) {
        let mut reply = b"HTTP/1.1 200 OK\r\n".to_vec();
        for line in 0..1000 {
            reply.extend(format!("X-Header-{line}: v\r\n").bytes());
        }
        reply.extend(b"Content-Length: 2\r\n\r\nok");
        super::answer_each_h1(conn, &reply);
    }

    /// Answers 10 requests, the 10th with `Connection: close`, then closes gracefully and counts
    /// the pipelined requests it never answered.
    pub fn h1_close_every_10(mut conn: Conn) {
        for answered in 1..=10 {
            let reply: &[u8] = if answered == 10 {
                b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"
            } else {
                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
            };
            if !conn.read_h1_head() || !conn.send(reply) {
                return;
            }
        }
        conn.shutdown_write();
        while conn.read_h1_head() {
            conn.never_processed();
        }
    }

    // ---- h2c: the connection ----

    /// Reads the preface and everything after it, but never sends SETTINGS.
    pub fn h2_no_settings(conn: Conn) {
        never_answer(conn);
    }

    /// Garbage where the server's SETTINGS should be; keeps the connection open.
    pub fn h2_garbage_preface(mut conn: Conn) {
        if conn.send(b"this is not HTTP/2 at all\r\n") {
            conn.discard_until_closed();
        }
    }

    /// SETTINGS, then PING after PING, never reading: the client's ACKs can only pile up.
    pub fn h2_ping_flood_unread(mut conn: Conn) {
        let ping = frame(h2::PING, 0, 0, &[0; 8]);
        if conn.send(&h2::settings(&[])) {
            conn.send_forever(&batch(&ping));
        }
    }

    /// SETTINGS after SETTINGS, never reading: each one asks for an ACK that cannot be sent.
    pub fn h2_settings_flood_unread(mut conn: Conn) {
        let settings = h2::settings(&[(h2::SETTINGS_MAX_CONCURRENT_STREAMS, 100)]);
        conn.send_forever(&batch(&settings));
    }

    /// Allows no streams at all: SETTINGS_MAX_CONCURRENT_STREAMS = 0.
    pub fn h2_zero_streams(mut conn: Conn) {
        if h2::handshake(&mut conn, &[(h2::SETTINGS_MAX_CONCURRENT_STREAMS, 0)]) {
            conn.discard_until_closed();
        }
    }

    /// GOAWAY(last stream 0, NO_ERROR) right after SETTINGS: no request is ever processed.
    pub fn h2_goaway_at_once(mut conn: Conn) {
        if h2::handshake(&mut conn, &[]) && conn.send(&h2::goaway(0, h2::NO_ERROR)) {
            conn.discard_until_closed();
        }
    }

    /// Answers 50 streams, the 50th with GOAWAY(NO_ERROR) naming it the last stream processed
    /// (a server rotating its connections), then counts the streams the client had opened
    /// beyond it until the client closes.
    pub fn h2_goaway_every_50(conn: Conn) {
        goaway_every_50(conn, &[], h2::ok);
    }

    /// [`h2_goaway_every_50`] with padded HEADERS and DATA, a 1000-byte initial window and at
    /// most 7 concurrent streams.
    pub fn h2_goaway_every_50_padded(conn: Conn) {
        let settings = [
            (h2::SETTINGS_INITIAL_WINDOW_SIZE, 1000),
            (h2::SETTINGS_MAX_CONCURRENT_STREAMS, 7),
        ];
        goaway_every_50(conn, &settings, h2::padded_ok);
    }

    fn goaway_every_50(mut conn: Conn, settings: &[(u16, u32)], answer: fn(u32) -> Vec<u8>) {
        if !h2::handshake(&mut conn, settings) {
            return;
        }
        for answered in 1..=50 {
            let Some(stream) = h2::next_request(&mut conn) else {
                return;
            };
            let mut reply = answer(stream);
            if answered == 50 {
                reply.extend(h2::goaway(stream, h2::NO_ERROR));
            }
            if !conn.send(&reply) {
                return;
            }
        }
        while h2::next_request(&mut conn).is_some() {
            conn.never_processed();
        }
    }

    /// RST_STREAM(REFUSED_STREAM) on every other stream of a connection (its 2nd, 4th, ...), a
    /// `200` on the others.
    pub fn h2_refuse_every_other_stream(mut conn: Conn) {
        if !h2::handshake(&mut conn, &[]) {
            return;
        }
        let mut refuse = false;
        while let Some(stream) = h2::next_request(&mut conn) {
            let reply = if refuse {
                conn.never_processed();
                h2_refuse_every_stream(stream)
            } else {
                h2::ok(stream)
            };
            refuse = !refuse;
            if !conn.send(&reply) {
                return;
            }
        }
    }

    /// WINDOW_UPDATE on stream 0 that takes the client's send window past 2^31-1.
    pub fn h2_window_overflow(mut conn: Conn) {
        if h2::handshake(&mut conn, &[])
            && conn.send(&h2::frame_u32(h2::WINDOW_UPDATE, 0, 0x7fff_ffff))
        {
            conn.discard_until_closed();
        }
    }

    /// SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1 (a FLOW_CONTROL_ERROR by RFC 9113 6.5.2).
    pub fn h2_initial_window_too_big(mut conn: Conn) {
        if h2::handshake(
            &mut conn,
            &[(h2::SETTINGS_INITIAL_WINDOW_SIZE, 0x8000_0000)],
        ) {
            conn.discard_until_closed();
        }
    }

    /// A SETTINGS frame of 5 bytes (not a multiple of 6: FRAME_SIZE_ERROR).
    pub fn h2_settings_bad_length(mut conn: Conn) {
        if conn.send(&frame(h2::SETTINGS, 0, 0, &[0, 3, 0, 0, 0])) {
            conn.discard_until_closed();
        }
    }

    // ---- h2c: responses ----

    /// HEADERS without END_HEADERS, then CONTINUATION frames forever.
    pub fn h2_endless_continuation(mut conn: Conn) {
        if !h2::handshake(&mut conn, &[]) {
            return;
        }
        let Some(stream) = h2::next_request(&mut conn) else {
            return;
        };
        // Whole literal fields of 130 bytes, about 16 KB a frame: a growing header list.
        let field = hpack::literal(b"x", &[b'a'; 126]);
        let continuation = frame(h2::CONTINUATION, 0, stream, &field.repeat(126));
        if conn.send(&frame(h2::HEADERS, h2::END_STREAM, stream, h2::STATUS_200)) {
            conn.send_forever(&batch(&continuation));
        }
    }

    /// Interim `100` header blocks on the first stream, forever.
    pub fn h2_endless_interim(mut conn: Conn) {
        if !h2::handshake(&mut conn, &[]) {
            return;
        }
        if let Some(stream) = h2::next_request(&mut conn) {
            let interim = hpack::literal_indexed_name(hpack::STATUS, b"100");
            conn.send_forever(&batch(&frame(
                h2::HEADERS,
                h2::END_HEADERS,
                stream,
                &interim,
            )));
        }
    }

    /// PUSH_PROMISE (the client disabled push, or at least never asked for it), then the answer.
    pub fn h2_push_promise(stream: u32) -> Vec<u8> {
        let promised = 2u32.to_be_bytes();
        // :method GET, :path /, :scheme http (static 2, 4, 6).
        let block = [promised.as_slice(), &[0x82, 0x84, 0x86]].concat();
        let push = frame(h2::PUSH_PROMISE, h2::END_HEADERS, stream, &block);
        [push, h2::ok(stream)].concat()
    }

    /// `:status: abc`.
    pub fn h2_status_not_a_number(stream: u32) -> Vec<u8> {
        let block = hpack::literal_indexed_name(hpack::STATUS, b"abc");
        frame(
            h2::HEADERS,
            h2::END_HEADERS | h2::END_STREAM,
            stream,
            &block,
        )
    }

    /// A response header block without `:status`.
    pub fn h2_status_missing(stream: u32) -> Vec<u8> {
        let block = hpack::literal(b"x-no-status", b"1");
        frame(
            h2::HEADERS,
            h2::END_HEADERS | h2::END_STREAM,
            stream,
            &block,
        )
    }

    /// HPACK bomb: one 4000-byte header enters the dynamic table (it fits the default 4096), then
    /// 10,000 one-byte references to it, about 40 MB of decoded headers.
    pub fn h2_hpack_bomb(stream: u32) -> Vec<u8> {
        let mut block = h2::STATUS_200.to_vec();
        block.extend(hpack::indexed_literal(b"x-bomb", &[b'b'; 4000]));
        block.extend(hpack::indexed(hpack::NEWEST_DYNAMIC).repeat(10_000));
        frame(
            h2::HEADERS,
            h2::END_HEADERS | h2::END_STREAM,
            stream,
            &block,
        )
    }

    /// 1 MB of DATA at once, whatever window the client granted.
    pub fn h2_data_past_window(stream: u32) -> Vec<u8> {
        let headers = frame(h2::HEADERS, h2::END_HEADERS, stream, h2::STATUS_200);
        let data = frame(h2::DATA, 0, stream, &[b'x'; 16 * 1024]).repeat(64);
        [headers, data, frame(h2::DATA, h2::END_STREAM, stream, &[])].concat()
    }

    /// A 20,000-byte DATA frame, above the default SETTINGS_MAX_FRAME_SIZE of 16,384.
    pub fn h2_oversized_frame(stream: u32) -> Vec<u8> {
        let headers = frame(h2::HEADERS, h2::END_HEADERS, stream, h2::STATUS_200);
        [
            headers,
            frame(h2::DATA, h2::END_STREAM, stream, &[b'x'; 20_000]),
        ]
        .concat()
    }

    /// HEADERS carrying `:status: 200` and `extra`, ending the stream when `end_stream`.
    fn headers_with(stream: u32, extra: &[u8], end_stream: bool) -> Vec<u8> {
        let flags = h2::END_HEADERS | if end_stream { h2::END_STREAM } else { 0 };
        frame(
            h2::HEADERS,
            flags,
            stream,
            &[h2::STATUS_200, extra].concat(),
        )
    }

    /// `:status: 200` and `content-length: length`, then `pong` with END_STREAM.
    fn answer_with_length(stream: u32, length: &[u8]) -> Vec<u8> {
        let headers = headers_with(stream, &hpack::literal(b"content-length", length), false);
        [headers, frame(h2::DATA, h2::END_STREAM, stream, b"pong")].concat()
    }

    /// `content-length: 10`, 4 bytes of body.
    pub fn h2_body_shorter_than_length(stream: u32) -> Vec<u8> {
        answer_with_length(stream, b"10")
    }

    /// `content-length: 2`, 4 bytes of body.
    pub fn h2_body_longer_than_length(stream: u32) -> Vec<u8> {
        answer_with_length(stream, b"2")
    }

    /// A field named `X-Upper`.
    pub fn h2_upper_case_field_name(stream: u32) -> Vec<u8> {
        headers_with(stream, &hpack::literal(b"X-Upper", b"1"), true)
    }

    /// `connection: keep-alive`.
    pub fn h2_connection_field(stream: u32) -> Vec<u8> {
        headers_with(stream, &hpack::literal(b"connection", b"keep-alive"), true)
    }

    /// `transfer-encoding: chunked`, its name from the static table (entry 57).
    pub fn h2_transfer_encoding_field(stream: u32) -> Vec<u8> {
        headers_with(stream, &hpack::literal_indexed_name(57, b"chunked"), true)
    }

    /// `server: a\r\nx-injected: 1`: a CR LF inside a value.
    pub fn h2_line_break_in_value(stream: u32) -> Vec<u8> {
        headers_with(
            stream,
            &hpack::literal(b"server", b"a\r\nx-injected: 1"),
            true,
        )
    }

    /// `x-padded: "1 "`: a value ending with a space.
    pub fn h2_value_with_trailing_space(stream: u32) -> Vec<u8> {
        headers_with(stream, &hpack::literal(b"x-padded", b"1 "), true)
    }

    /// RST_STREAM(NO_ERROR) frames [`h2_answer_uploads_early`] received.
    pub static EARLY_ANSWER_RESETS: std::sync::atomic::AtomicU64 =
        std::sync::atomic::AtomicU64::new(0);

    /// Answers each request as its HEADERS arrive, before reading any of its body and without
    /// granting more window, then reads on, counting the client's RST_STREAM(NO_ERROR) frames in
    /// [`EARLY_ANSWER_RESETS`]: the client must close the streams it cannot finish.
    pub fn h2_answer_uploads_early(mut conn: Conn) {
        if !h2::handshake(&mut conn, &[]) {
            return;
        }
        while let Some(header) = conn.take(9) {
            let length = u32::from_be_bytes([0, header[0], header[1], header[2]]) as usize;
            let Some(payload) = conn.take(length) else {
                return;
            };
            let stream =
                u32::from_be_bytes([header[5], header[6], header[7], header[8]]) & 0x7fff_ffff;
            match header[3] {
                h2::HEADERS if !conn.send(&h2::ok(stream)) => return,
                h2::RST_STREAM if payload == h2::NO_ERROR.to_be_bytes() => {
                    EARLY_ANSWER_RESETS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                _ => {}
            }
        }
    }

    /// A regular field, then `:status`.
    pub fn h2_pseudo_header_after_field(stream: u32) -> Vec<u8> {
        let block = [hpack::literal(b"server", b"x"), h2::STATUS_200.to_vec()].concat();
        frame(
            h2::HEADERS,
            h2::END_HEADERS | h2::END_STREAM,
            stream,
            &block,
        )
    }

    /// `:status: 200` and `:status: 204` (static entries 8 and 9).
    pub fn h2_two_statuses(stream: u32) -> Vec<u8> {
        headers_with(stream, &hpack::indexed(9), true)
    }

    /// An answer whose trailers carry `:status`.
    pub fn h2_pseudo_header_in_trailers(stream: u32) -> Vec<u8> {
        let trailers = frame(
            h2::HEADERS,
            h2::END_HEADERS | h2::END_STREAM,
            stream,
            h2::STATUS_200,
        );
        [headers_with(stream, &[], false), trailers].concat()
    }

    /// A complete answer, then DATA on its stream.
    pub fn h2_data_after_end_stream(stream: u32) -> Vec<u8> {
        [
            h2::ok(stream),
            frame(h2::DATA, h2::END_STREAM, stream, b"late"),
        ]
        .concat()
    }

    /// `:status: 103`, then `200` with a 4-byte body and trailers.
    pub fn h2_interim_then_final(stream: u32) -> Vec<u8> {
        let early_hints = hpack::literal_indexed_name(hpack::STATUS, b"103");
        let length = hpack::literal(b"content-length", b"4");
        let trailers = hpack::literal(b"x-trailer", b"1");
        [
            frame(h2::HEADERS, h2::END_HEADERS, stream, &early_hints),
            headers_with(stream, &length, false),
            frame(h2::DATA, 0, stream, b"pong"),
            frame(
                h2::HEADERS,
                h2::END_HEADERS | h2::END_STREAM,
                stream,
                &trailers,
            ),
        ]
        .concat()
    }

    /// `204` with `content-length: 10` and no DATA (a response with no content may say so).
    pub fn h2_no_content_with_length(stream: u32) -> Vec<u8> {
        let block = [hpack::indexed(9), hpack::literal(b"content-length", b"10")].concat();
        frame(
            h2::HEADERS,
            h2::END_HEADERS | h2::END_STREAM,
            stream,
            &block,
        )
    }

    /// `200` with `content-length: 10` and no DATA: right for HEAD.
    pub fn h2_head_answer_with_length(stream: u32) -> Vec<u8> {
        headers_with(stream, &hpack::literal(b"content-length", b"10"), true)
    }

    /// RST_STREAM(REFUSED_STREAM) for every request.
    pub fn h2_refuse_every_stream(stream: u32) -> Vec<u8> {
        h2::frame_u32(h2::RST_STREAM, stream, h2::REFUSED_STREAM)
    }

    /// RST_STREAM(INTERNAL_ERROR) for every request.
    pub fn h2_reset_every_stream(stream: u32) -> Vec<u8> {
        h2::frame_u32(h2::RST_STREAM, stream, h2::INTERNAL_ERROR)
    }

    /// RST_STREAM on stream 0 (a PROTOCOL_ERROR), then the answer.
    pub fn h2_reset_stream_zero(stream: u32) -> Vec<u8> {
        [
            h2::frame_u32(h2::RST_STREAM, 0, h2::INTERNAL_ERROR),
            h2::ok(stream),
        ]
        .concat()
    }

    /// HEADERS on even stream 2, which only a PUSH_PROMISE could have opened, then the answer.
    pub fn h2_headers_on_even_stream(stream: u32) -> Vec<u8> {
        [h2::ok(2), h2::ok(stream)].concat()
    }

    /// DATA on an odd stream the client has not opened yet (idle), then the answer.
    pub fn h2_data_on_idle_stream(stream: u32) -> Vec<u8> {
        [
            frame(h2::DATA, h2::END_STREAM, stream + 100, b"x"),
            h2::ok(stream),
        ]
        .concat()
    }
}
