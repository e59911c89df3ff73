//! The built-in target stays bounded when exposed (`h2load-rs serve`): out-of-range route
//! arguments are 400s, idle connections of every protocol close, connections are capped with one
//! rate-limited log line (QUIC too), and uploads that are never read hold bounded memory, per
//! connection and over the whole target (h2c and HTTP/3).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2load_rs::testkit::h2::{self as h2frame, FrameHead};
use h2load_rs::testkit::tls;

const BIN: &str = env!("CARGO_BIN_EXE_h2load-rs");

/// Longest any wait in these tests may take: generous, for a busy machine.
const PATIENCE: Duration = Duration::from_secs(20);

/// `h2load-rs serve` in a process of its own (its memory and stderr are its own), stopped when dropped.
struct Serve {
    child: Child,
    addr: SocketAddr,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Serve {
    /// Starts `serve --port 0` with `flags`, once it says where it listens.
    fn start(flags: &[&str]) -> Serve {
        let mut child = Command::new(BIN)
            .args(["serve", "--port", "0"])
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let lines = stderr.clone();
        let pipe = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                lines.lock().unwrap().push(line);
            }
        });
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .split_whitespace()
            .find_map(|word| {
                word.strip_prefix("http://")
                    .or(word.strip_prefix("https://"))
            })
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .parse()
            .unwrap();
        Serve {
            child,
            addr,
            stderr,
        }
    }

    /// Its resident memory, from /proc.
    fn rss_bytes(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let kib: u64 = status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap();
        kib * 1024
    }

    /// Still running, and nothing panicked.
    fn assert_alive(&mut self) {
        assert!(
            self.child.try_wait().unwrap().is_none(),
            "serve exited: {:?}",
            self.stderr()
        );
        assert!(
            !self.stderr().iter().any(|line| line.contains("panicked")),
            "{:?}",
            self.stderr()
        );
    }

    fn stderr(&self) -> Vec<String> {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET path` over HTTP/1.1 on a new connection: the status code and the body.
fn get(addr: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(PATIENCE))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nhost: target\r\nconnection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let (head, body) = response
        .split_once("\r\n\r\n")
        .ok_or_else(|| std::io::Error::other(format!("no complete response: {response:?}")))?;
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no status in {head:?}")))?;
    Ok((code, body.to_owned()))
}

#[test]
fn out_of_range_route_arguments_are_400_and_the_target_stays_up() {
    let mut serve = Serve::start(&[]);
    for path in [
        "/delay/1e22",
        "/delay/18446744073709551615",
        "/delay/2592000001",
        "/delay/-1",
        "/delay/inf",
        "/delay/NaN",
        "/delay/",
        "/bytes/-1",
        "/bytes/18446744073709551616",
        "/bytes/1e3",
        "/status/99999",
        "/status/0x200",
    ] {
        let (code, body) = get(serve.addr, path).unwrap_or_else(|error| panic!("{path}: {error}"));
        assert_eq!(code, 400, "{path}: {body}");
    }
    // The largest delay allowed is accepted (not waited for here: the request is abandoned).
    let mut long = TcpStream::connect(serve.addr).unwrap();
    write!(long, "GET /delay/2592000000 HTTP/1.1\r\nhost: t\r\n\r\n").unwrap();
    assert_eq!(get(serve.addr, "/ping").unwrap(), (200, "pong".to_owned()));
    drop(long);
    std::thread::sleep(Duration::from_millis(200));
    serve.assert_alive();
}

/// Waits for the server to close `stream` (EOF or reset), reading and discarding what it
/// sends; how long that took. Fails if it stays open for [`PATIENCE`].
fn closed_after(stream: &mut TcpStream, since: Instant) -> Duration {
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut buffer = [0u8; 16 * 1024];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return since.elapsed(),
            Ok(_) => {}
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return since.elapsed(),
        }
        assert!(
            since.elapsed() < PATIENCE,
            "the connection was still open after {PATIENCE:?}"
        );
    }
}

/// An h2c request's HEADERS frame (END_HEADERS, and END_STREAM unless `upload`) on `stream`.
fn h2_request(out: &mut Vec<u8>, stream: u32, method: &str, path: &str, upload: bool) {
    // :method GET or POST and :scheme http from the static table; :path and :authority literal
    // without indexing, with the static table's names.
    let mut block = vec![if method == "POST" { 0x83 } else { 0x82 }, 0x86, 0x04];
    block.push(path.len() as u8);
    block.extend_from_slice(path.as_bytes());
    block.extend_from_slice(&[0x01, 1, b't']);
    let end_stream = if upload { 0 } else { h2frame::END_STREAM };
    h2frame::write_frame(
        out,
        h2frame::HEADERS,
        h2frame::END_HEADERS | end_stream,
        stream,
        &block,
    );
}

/// An h2c connection: the preface and SETTINGS announcing `initial_window` for our streams.
fn h2c_connect(addr: SocketAddr, initial_window: u32) -> TcpStream {
    let mut stream = TcpStream::connect(addr).unwrap();
    let mut out = h2frame::PREFACE.to_vec();
    let mut settings = h2frame::SETTINGS_INITIAL_WINDOW_SIZE.to_be_bytes().to_vec();
    settings.extend_from_slice(&initial_window.to_be_bytes());
    h2frame::write_frame(&mut out, h2frame::SETTINGS, 0, 0, &settings);
    stream.write_all(&out).unwrap();
    stream
}

#[test]
fn idle_and_stuck_connections_of_every_protocol_close_after_the_idle_timeout() {
    const TIMEOUT: Duration = Duration::from_secs(1);
    let mut serve = Serve::start(&["--idle-timeout", "1s"]);
    let addr = serve.addr;
    let mut cases: Vec<(&str, Duration)> = Vec::new();

    // HTTP/1.1: nothing sent; a request head dribbled a byte at a time; kept alive after a request.
    // Each `since` is taken before the connection is made: the target's clock starts later.
    let since = Instant::now();
    let mut silent = TcpStream::connect(addr).unwrap();
    cases.push(("h1 silent", closed_after(&mut silent, since)));
    let since = Instant::now();
    let mut dribbling = TcpStream::connect(addr).unwrap();
    let mut writer = dribbling.try_clone().unwrap();
    std::thread::spawn(move || {
        for byte in b"GET /ping HTTP/1.1\r\nx: "
            .iter()
            .chain([b'y'; 200].iter())
        {
            if writer.write_all(&[*byte]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    cases.push(("h1 dribbling", closed_after(&mut dribbling, since)));
    let mut kept = TcpStream::connect(addr).unwrap();
    // Idle from the end of the request, which is after it began.
    let since = Instant::now();
    kept.write_all(b"GET /ping HTTP/1.1\r\nhost: t\r\n\r\n")
        .unwrap();
    let mut response = [0u8; 256];
    let read = kept.read(&mut response).unwrap();
    assert!(response[..read].starts_with(b"HTTP/1.1 200"));
    cases.push(("h1 kept alive", closed_after(&mut kept, since)));

    // h2c: SETTINGS only; PINGs every 100 ms and no request; a download whose window stays 0.
    let since = Instant::now();
    let mut settings_only = h2c_connect(addr, 65_535);
    cases.push(("h2c idle", closed_after(&mut settings_only, since)));
    let since = Instant::now();
    let mut pinging = h2c_connect(addr, 65_535);
    let mut writer = pinging.try_clone().unwrap();
    std::thread::spawn(move || loop {
        let mut ping = Vec::new();
        h2frame::write_frame(&mut ping, h2frame::PING, 0, 0, &[7; 8]);
        if writer.write_all(&ping).is_err() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    });
    cases.push(("h2c pinging", closed_after(&mut pinging, since)));
    let since = Instant::now();
    let mut stuck = h2c_connect(addr, 0);
    let mut request = Vec::new();
    h2_request(&mut request, 1, "GET", "/bytes/1000000000", false);
    stuck.write_all(&request).unwrap();
    cases.push(("h2c stuck download", closed_after(&mut stuck, since)));

    // A request sleeping in /delay longer than the timeout is not idle.
    assert_eq!(get(addr, "/delay/2500").unwrap(), (200, "pong".to_owned()));

    // TLS: a handshake never begun.
    let tls = Serve::start(&["--idle-timeout", "1s", "--tls"]);
    let since = Instant::now();
    let mut no_handshake = TcpStream::connect(tls.addr).unwrap();
    cases.push(("tls no handshake", closed_after(&mut no_handshake, since)));

    // A unix socket: nothing sent.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("target.sock");
    let mut unix = Command::new(BIN)
        .args([
            "serve",
            "--idle-timeout",
            "1s",
            "--unix",
            path.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    BufReader::new(unix.stdout.take().unwrap())
        .read_line(&mut String::new())
        .unwrap();
    let since = Instant::now();
    let mut socket = std::os::unix::net::UnixStream::connect(&path).unwrap();
    socket.set_read_timeout(Some(PATIENCE)).unwrap();
    let eof = socket.read(&mut [0u8; 64]);
    cases.push(("unix silent", since.elapsed()));
    let _ = unix.kill();
    let _ = unix.wait();
    assert!(matches!(eof, Ok(0)), "unix: {eof:?}");

    for (case, after) in cases {
        // Never before the timeout; the upper bound is PATIENCE (closed_after).
        assert!(after >= TIMEOUT, "{case}: closed after {after:?}");
    }
    serve.assert_alive();
}

/// The target's lines about connections over `cap`, after refusals that took `seconds`: at least
/// one, the first at once for the first refusal, then at most one a second.
fn cap_lines(serve: &Serve, cap: usize, seconds: u64) -> Vec<String> {
    let lines: Vec<String> = serve
        .stderr()
        .into_iter()
        .filter(|line| line.contains(&format!("--max-connections {cap} reached")))
        .collect();
    assert!(
        !lines.is_empty() && lines.len() as u64 <= 1 + seconds,
        "{seconds} s: {lines:#?}"
    );
    assert!(
        lines[0].contains(" 1 connection(s) closed at once"),
        "{lines:#?}"
    );
    lines
}

#[test]
fn connections_over_the_cap_are_closed_at_once_with_one_line_a_second() {
    const CAP: usize = 4;
    let mut serve = Serve::start(&["--max-connections", "4", "--idle-timeout", "60s"]);
    let addr = serve.addr;
    // Each holds a place: it was answered.
    let mut held: Vec<TcpStream> = (0..CAP)
        .map(|_| {
            let mut stream = TcpStream::connect(addr).unwrap();
            stream.set_read_timeout(Some(PATIENCE)).unwrap();
            stream
                .write_all(b"GET /ping HTTP/1.1\r\nhost: t\r\n\r\n")
                .unwrap();
            let mut response = [0u8; 256];
            let read = stream.read(&mut response).unwrap();
            assert!(response[..read].starts_with(b"HTTP/1.1 200"));
            stream
        })
        .collect();
    let since = Instant::now();
    for _ in 0..20 {
        let mut over = TcpStream::connect(addr).unwrap();
        let _ = over.write_all(b"GET /ping HTTP/1.1\r\nhost: t\r\n\r\n");
        over.set_read_timeout(Some(PATIENCE)).unwrap();
        let mut answer = Vec::new();
        let _ = over.read_to_end(&mut answer);
        assert!(answer.is_empty(), "{}", String::from_utf8_lossy(&answer));
    }
    let seconds = since.elapsed().as_secs();
    // Two of the held connections go; a normal client gets in once the server sees it.
    held.truncate(CAP - 2);
    let served = loop {
        match get(addr, "/ping") {
            Ok(answer) => break answer,
            Err(_) if since.elapsed() < PATIENCE => std::thread::sleep(Duration::from_millis(50)),
            Err(error) => panic!("no place freed: {error}"),
        }
    };
    assert_eq!(served, (200, "pong".to_owned()));
    cap_lines(&serve, CAP, seconds);
    serve.assert_alive();
}

/// Our send windows on one h2c connection, as the target's SETTINGS and WINDOW_UPDATEs set them.
#[derive(Default)]
struct SendWindows {
    connection: i64,
    /// By stream id / 2.
    streams: Vec<i64>,
    /// The updates seen (a writer waiting for room watches this).
    updates: u64,
}

/// What [`upload_without_reading`] does on one h2c connection.
#[derive(Clone, Copy)]
struct Upload {
    /// `POST` to this path.
    path: &'static str,
    /// The stream window we give the target for its answers, never raised.
    answer_window: u32,
    streams: u32,
    per_stream: i64,
    /// Stop after no window opened for this long.
    quiet: Duration,
}

/// Uploads on `streams` h2c streams of one connection, never granting the target more window for
/// its answers than `answer_window`: as much as the target's flow control lets through, up to
/// `per_stream` bytes a stream, until no window has opened for `quiet`. Returns the bytes sent
/// and the connection (still open).
fn upload_without_reading(addr: SocketAddr, upload: Upload) -> (i64, TcpStream) {
    let Upload {
        path,
        answer_window,
        streams,
        per_stream,
        quiet,
    } = upload;
    let stream = h2c_connect(addr, answer_window);
    let writer = Arc::new(Mutex::new(stream.try_clone().unwrap()));
    let windows = Arc::new((
        Mutex::new(SendWindows {
            connection: h2frame::DEFAULT_WINDOW,
            streams: vec![h2frame::DEFAULT_WINDOW; streams as usize],
            updates: 0,
        }),
        Condvar::new(),
    ));
    let mut reader = stream.try_clone().unwrap();
    let (reader_windows, reader_writer) = (windows.clone(), writer.clone());
    std::thread::spawn(move || {
        let mut head = [0u8; h2frame::HEADER_LEN];
        while reader.read_exact(&mut head).is_ok() {
            let head = FrameHead::parse(&head);
            let mut payload = vec![0u8; head.length];
            if reader.read_exact(&mut payload).is_err() {
                return;
            }
            let (lock, changed) = &*reader_windows;
            let mut windows = lock.lock().unwrap();
            match head.kind {
                h2frame::SETTINGS if head.flags & h2frame::ACK == 0 => {
                    for setting in payload.chunks_exact(6) {
                        if u16::from_be_bytes([setting[0], setting[1]])
                            == h2frame::SETTINGS_INITIAL_WINDOW_SIZE
                        {
                            let initial = i64::from(h2frame::read_u32(&setting[2..]).unwrap());
                            for window in &mut windows.streams {
                                *window += initial - h2frame::DEFAULT_WINDOW;
                            }
                        }
                    }
                    let mut ack = Vec::new();
                    h2frame::write_frame(&mut ack, h2frame::SETTINGS, h2frame::ACK, 0, &[]);
                    let _ = reader_writer.lock().unwrap().write_all(&ack);
                }
                h2frame::WINDOW_UPDATE => {
                    let increment = i64::from(h2frame::read_u32(&payload).unwrap() & 0x7fff_ffff);
                    match head.stream {
                        0 => windows.connection += increment,
                        id => {
                            if let Some(window) = windows.streams.get_mut((id / 2) as usize) {
                                *window += increment;
                            }
                        }
                    }
                }
                _ => continue,
            }
            windows.updates += 1;
            changed.notify_all();
        }
    });
    let mut out = Vec::new();
    for index in 0..streams {
        h2_request(&mut out, 2 * index + 1, "POST", path, true);
    }
    writer.lock().unwrap().write_all(&out).unwrap();
    let chunk = [b'u'; 16_384];
    let mut sent = vec![0i64; streams as usize];
    loop {
        let (lock, changed) = &*windows;
        let mut frames = Vec::new();
        {
            let mut windows = lock.lock().unwrap();
            for (index, sent) in sent.iter_mut().enumerate() {
                let room = windows
                    .connection
                    .min(windows.streams[index])
                    .min(per_stream - *sent)
                    .min(chunk.len() as i64);
                if room > 0 {
                    windows.connection -= room;
                    windows.streams[index] -= room;
                    *sent += room;
                    h2frame::write_frame(
                        &mut frames,
                        h2frame::DATA,
                        0,
                        2 * index as u32 + 1,
                        &chunk[..room as usize],
                    );
                }
            }
        }
        if !frames.is_empty() {
            writer.lock().unwrap().write_all(&frames).unwrap();
            continue;
        }
        if sent.iter().all(|sent| *sent == per_stream) {
            break;
        }
        let windows = lock.lock().unwrap();
        let updates = windows.updates;
        let (windows, _) = changed
            .wait_timeout_while(windows, quiet, |windows| windows.updates == updates)
            .unwrap();
        if windows.updates == updates {
            break; // no window opened for a while: the target holds what it will
        }
    }
    (sent.iter().sum(), stream)
}

/// [`upload_without_reading`] on `connections` connections at once: the bytes sent in all, and
/// the connections (still open).
fn upload_on_connections(
    addr: SocketAddr,
    connections: i64,
    upload: Upload,
) -> (i64, Vec<TcpStream>) {
    let uploads: Vec<_> = (0..connections)
        .map(|_| std::thread::spawn(move || upload_without_reading(addr, upload)))
        .collect();
    uploads
        .into_iter()
        .map(|upload| upload.join().unwrap())
        .fold((0, Vec::new()), |(total, mut open), (sent, stream)| {
            open.push(stream);
            (total + sent, open)
        })
}

#[test]
fn uploads_to_echo_that_are_never_read_hold_bounded_memory() {
    // reference.md: /echo holds at most 64 MiB over the whole target, and each connection at
    // most its 4 MiB receive window of data not read yet; 32 MiB for the rest (hyper's buffers,
    // the allocator's slack).
    const BOUND: i64 = 64 * MIB + 2 * 4 * MIB + 32 * MIB;
    let serve = Serve::start(&[]);
    assert_eq!(get(serve.addr, "/ping").unwrap().0, 200);
    let before = serve.rss_bytes() as i64;
    let (sent, _open) = upload_on_connections(
        serve.addr,
        2,
        Upload {
            path: "/echo",
            answer_window: h2frame::DEFAULT_WINDOW as u32,
            streams: 100,
            per_stream: 4 * MIB,
            quiet: Duration::from_secs(1),
        },
    );
    let grown = serve.rss_bytes() as i64 - before;
    eprintln!("sent {} MiB, target grew {} MiB", sent / MIB, grown / MIB);
    assert!(
        grown <= BOUND,
        "the target grew by {} MiB after {} MiB were uploaded",
        grown / MIB,
        sent / MIB
    );
    // Both receive windows were filled: this measured a target holding what it may.
    assert!(sent >= 2 * 4 * MIB, "only {} KiB uploaded", sent / 1024);
}

const MIB: i64 = 1 << 20;

/// Resident memory `serve` may gain beyond the data the bounds let it hold: hyper's and quinn's
/// buffers, the allocator's slack.
const SLACK: i64 = 32 * MIB;

/// reference.md: the receive windows of all connections together are within 128 MiB, and a
/// connection beyond that budget gets 64 KiB windows.
const WINDOW_BUDGET: i64 = 128 * MIB;
const FLOOR_WINDOW: i64 = 65_535;

/// Checks that `serve`, at `before` bytes of resident memory before `connections` uploaded `sent`
/// bytes it does not read, grew by at most the window budget, the floor of each connection and
/// [`SLACK`].
fn assert_within_the_window_budget(serve: &Serve, before: i64, sent: i64, connections: i64) {
    let grown = serve.rss_bytes() as i64 - before;
    eprintln!("sent {} MiB, target grew {} MiB", sent / MIB, grown / MIB);
    let bound = WINDOW_BUDGET + connections * FLOOR_WINDOW + SLACK;
    assert!(
        grown <= bound,
        "the target grew by {} MiB (bound {} MiB) after {} MiB were uploaded",
        grown / MIB,
        bound / MIB,
        sent / MIB
    );
}

#[test]
fn many_h2c_connections_uploading_unread_hold_at_most_the_window_budget() {
    // 80 connections with full 4 MiB windows would hold 320 MiB; within the budget, 32 hold 4 MiB
    // and 48 hold 64 KiB.
    const CONNECTIONS: i64 = 80;
    let serve = Serve::start(&[]);
    assert_eq!(get(serve.addr, "/ping").unwrap().0, 200);
    let before = serve.rss_bytes() as i64;
    // A delayed answer reads nothing of its request meanwhile.
    let (sent, _open) = upload_on_connections(
        serve.addr,
        CONNECTIONS,
        Upload {
            path: "/delay/600000",
            answer_window: h2frame::DEFAULT_WINDOW as u32,
            streams: 8,
            per_stream: MIB,
            quiet: Duration::from_secs(2),
        },
    );
    assert_within_the_window_budget(&serve, before, sent, CONNECTIONS);
    // Every window the target gave was filled: this measured a target holding what it may.
    assert!(sent >= WINDOW_BUDGET, "only {} KiB uploaded", sent / 1024);
}

/// `POST /echo` of `body` over HTTP/1.1 on a new connection, waiting at most `patience` for each
/// read or write: the status code and the body echoed.
fn echo_h1(addr: SocketAddr, body: &[u8], patience: Duration) -> std::io::Result<(u16, Vec<u8>)> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(patience))?;
    stream.set_write_timeout(Some(patience))?;
    write!(
        stream,
        "POST /echo HTTP/1.1\r\nhost: t\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )?;
    stream.write_all(body)?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let end = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no complete response head"))?;
    let head = String::from_utf8_lossy(&response[..end]).into_owned();
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no status in {head:?}")))?;
    Ok((code, response[end + 4..].to_vec()))
}

#[test]
fn one_connection_that_never_reads_its_echoes_does_not_stall_the_others() {
    // reference.md: /echo holds at most 64 MiB over the target, 16 MiB of it per connection.
    const ECHO_BUDGET: i64 = 64 * MIB;
    // Long enough that the hog is not closed as stuck during the test.
    let mut serve = Serve::start(&["--max-concurrent-streams", "5000", "--idle-timeout", "300s"]);
    // One 16 KiB chunk on each of 4500 streams is 70 MiB: more than the whole budget. The target
    // may send one byte of each answer, and reads one chunk a stream to echo it.
    let (hogged, _hog) = upload_without_reading(
        serve.addr,
        Upload {
            path: "/echo",
            answer_window: 1,
            streams: 4500,
            per_stream: 16_384,
            // A busy target takes a while over 4500 streams: the hog must not stop early.
            quiet: Duration::from_secs(5),
        },
    );
    eprintln!("the hog uploaded {} KiB", hogged / 1024);
    // More than the whole budget: on the old target it held all of it, and others' echoes waited.
    assert!(hogged >= ECHO_BUDGET, "only {} KiB uploaded", hogged / 1024);
    let body: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let since = Instant::now();
    let (code, echoed) =
        echo_h1(serve.addr, &body, Duration::from_secs(10)).unwrap_or_else(|error| {
            panic!(
                "another client's /echo: {error} after {:?}",
                since.elapsed()
            )
        });
    assert_eq!(code, 200);
    assert!(
        echoed == body,
        "echoed {} of {} bytes",
        echoed.len(),
        body.len()
    );
    serve.assert_alive();
}

/// A QUIC connection to the target's UDP port `addr` (ALPN h3, trusting the test CA), or why
/// the target would not have it.
async fn quic_connect(addr: SocketAddr) -> Result<quinn::Connection, quinn::ConnectionError> {
    let crypto = tls::client_config(&tls::ClientTlsOptions {
        alpn: vec![b"h3".to_vec()],
        trust_test_ca: true,
        ..Default::default()
    })
    .unwrap();
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(crypto).unwrap();
    let mut endpoint = quinn::Endpoint::client(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
    endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    endpoint.connect(addr, "localhost").unwrap().await
}

type H3Send = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// HTTP/3 on `quic`, its connection driven in a task of its own.
async fn h3_client(quic: &quinn::Connection) -> H3Send {
    let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(quic.clone()))
        .await
        .unwrap();
    tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
    send
}

/// `GET /ping` over HTTP/3 on `send`: the status code.
async fn h3_ping(send: &mut H3Send) -> u16 {
    let request = http::Request::get("https://localhost/ping")
        .body(())
        .unwrap();
    let mut stream = send.send_request(request).await.unwrap();
    stream.finish().await.unwrap();
    let status = stream.recv_response().await.unwrap().status().as_u16();
    while stream.recv_data().await.unwrap().is_some() {}
    status
}

fn client_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn quic_connections_over_the_cap_are_refused_with_one_line_a_second() {
    let mut serve = Serve::start(&["--tls", "--max-connections", "2", "--idle-timeout", "60s"]);
    let addr = serve.addr;
    let seconds = client_runtime().block_on(async {
        let mut held = Vec::new();
        for _ in 0..2 {
            let quic = quic_connect(addr).await.expect("a place under the cap");
            let mut send = h3_client(&quic).await;
            assert_eq!(h3_ping(&mut send).await, 200);
            held.push((quic, send));
        }
        let since = Instant::now();
        for _ in 0..10 {
            let refused = quic_connect(addr).await.expect_err("over the cap");
            assert!(
                matches!(&refused, quinn::ConnectionError::ConnectionClosed(close)
                    if close.error_code == quinn::TransportErrorCode::CONNECTION_REFUSED),
                "{refused:?}"
            );
        }
        let seconds = since.elapsed().as_secs();
        // One held connection goes; a normal client gets in once the target sees it.
        held.pop().unwrap().0.close(0u32.into(), b"done");
        loop {
            match quic_connect(addr).await {
                Ok(quic) => {
                    assert_eq!(h3_ping(&mut h3_client(&quic).await).await, 200);
                    break seconds;
                }
                Err(_) if since.elapsed() < PATIENCE => {
                    tokio::time::sleep(Duration::from_millis(50)).await
                }
                Err(error) => panic!("no place freed: {error}"),
            }
        }
    });
    let lines = cap_lines(&serve, 2, seconds);
    let counted: u64 = lines
        .iter()
        .filter_map(|line| line.split_whitespace().nth(2)?.parse::<u64>().ok())
        .sum();
    // The last line may still be due: at least the first is counted, at most all ten.
    assert!((1..=10).contains(&counted), "{lines:#?}");
    serve.assert_alive();
}

#[test]
fn many_http3_connections_uploading_unread_hold_at_most_the_window_budget() {
    // 64 connections with full 4 MiB windows would hold 256 MiB; within the budget, 32 hold 4 MiB
    // and 32 hold 64 KiB.
    const CONNECTIONS: i64 = 64;
    const STREAMS: usize = 4;
    let serve = Serve::start(&["--tls"]);
    let addr = serve.addr;
    let runtime = client_runtime();
    let _first = runtime.block_on(async {
        let quic = quic_connect(addr).await.unwrap();
        let mut send = h3_client(&quic).await;
        assert_eq!(h3_ping(&mut send).await, 200);
        (quic, send)
    });
    let before = serve.rss_bytes() as i64;
    let sent = Arc::new(std::sync::atomic::AtomicI64::new(0));
    let _held = runtime.block_on(async {
        let mut held = Vec::new();
        for _ in 0..CONNECTIONS {
            let quic = quic_connect(addr).await.unwrap();
            let mut send = h3_client(&quic).await;
            // Every request is opened before any uploads: with 64 KiB windows, an upload would
            // leave no room for the next request's head. A delayed answer reads nothing of its
            // request meanwhile.
            let mut streams = Vec::new();
            for _ in 0..STREAMS {
                let request = http::Request::post("https://localhost/delay/600000")
                    .body(())
                    .unwrap();
                streams.push(send.send_request(request).await.unwrap());
            }
            for mut stream in streams {
                let sent = sent.clone();
                tokio::spawn(async move {
                    let chunk = Bytes::from(vec![b'u'; 64 << 10]);
                    for _ in 0..16 {
                        if stream.send_data(chunk.clone()).await.is_err() {
                            return;
                        }
                        sent.fetch_add(chunk.len() as i64, std::sync::atomic::Ordering::Relaxed);
                    }
                    std::future::pending::<()>().await;
                });
            }
            held.push((quic, send));
        }
        // Until no byte more went for two seconds: the target holds what it will.
        let mut last = -1;
        loop {
            tokio::time::sleep(Duration::from_secs(2)).await;
            let now = sent.load(std::sync::atomic::Ordering::Relaxed);
            if now == last {
                break held;
            }
            last = now;
        }
    });
    let sent = sent.load(std::sync::atomic::Ordering::Relaxed);
    assert_within_the_window_budget(&serve, before, sent, CONNECTIONS);
    // Every window the target gave was filled (but for the chunk of each stream that did not fit).
    assert!(
        sent >= WINDOW_BUDGET - CONNECTIONS * STREAMS as i64 * (64 << 10),
        "only {} KiB uploaded",
        sent / 1024
    );
}
