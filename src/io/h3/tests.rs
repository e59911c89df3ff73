//! The HTTP/3 engine against a scripted QUIC server on loopback: the whole run (runner, engine,
//! recorder) for each thing a server may do, checked against known counts and bytes.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use quinn::crypto::rustls::QuicServerConfig;
use quinn::{Endpoint, RecvStream, SendStream, ServerConfig, TransportConfig, VarInt};

use crate::plan;
use crate::proto::h3::{
    write_frame_head, DATA, GOAWAY, H3_NO_ERROR, H3_REQUEST_REJECTED, HEADERS, SETTINGS,
};
use crate::proto::ResetCode;
use crate::recorder::ErrorKind;
use crate::runner::{self, RunOutcome, Sinks};
use crate::tls;

/// What the scripted server does with each request stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Script {
    /// 200 with a 5-byte body.
    Answer,
    /// Rejects each connection's first request (H3_REQUEST_REJECTED), then answers.
    RejectFirst,
    /// Sends GOAWAY(8) at the first request: answers streams 0 and 4, rejects the rest, and
    /// closes with H3_NO_ERROR once it answered two.
    Goaway,
    /// Sends DATA before HEADERS.
    DataFirst,
    /// Answers with a reference to the QPACK dynamic table.
    DynamicReference,
    /// Resets each response stream with H3_INTERNAL_ERROR.
    ResetInternal,
    /// Reads requests and never answers.
    Silent,
    /// Sends GOAWAY(0) with its SETTINGS: it processes nothing.
    GoawayAtOnce,
    /// Answers the first request (stream N) with GOAWAY(N + 4) before the answer, and
    /// rejects any request after it, counting those that came well after the GOAWAY in
    /// [`LATE_REQUESTS`]: a client sends nothing new once it has the GOAWAY.
    GoawayAfterFirst,
    /// Answers with HEADERS carrying a DATA frame per chunk of the request stream as it reads
    /// it (frames and all), before the request has ended.
    Echo,
    /// Answers each request at once, before reading it, then reads it to its end or reset and
    /// records which in [`EARLY_ENDS`].
    AnswerEarly,
    /// Answers after this many milliseconds.
    Delay(u64),
    /// Reads the first request and vanishes: no answer, no close, not even an ACK.
    Vanish,
    /// Sends a 103 interim response to each connection's first request, then rejects it
    /// (H3_REQUEST_REJECTED); answers the others.
    InterimThenReject,
    /// Answers each request with these bytes.
    Respond(&'static [u8]),
    /// At each request, opens a second unidirectional stream of this (critical) type, and
    /// answers nothing.
    SecondStream(u64),
}

/// How the request streams a [`Script::AnswerEarly`] server answered ended: the reset code, or
/// `None` where the request was sent to its end.
static EARLY_ENDS: std::sync::Mutex<Vec<Option<u64>>> = std::sync::Mutex::new(Vec::new());

/// Requests that reached a [`Script::GoawayAfterFirst`] server well after its GOAWAY.
static LATE_REQUESTS: AtomicU64 = AtomicU64::new(0);

/// `:status 200` (static entry 25), no dynamic table.
const STATUS_200: [u8; 3] = [0x00, 0x00, 0xc0 | 25];
/// `:status 103` (static entry 24).
const STATUS_103: [u8; 3] = [0x00, 0x00, 0xc0 | 24];
/// What the server's control stream carries: its type and an empty SETTINGS frame.
const CONTROL_STREAM: u64 = 3;
const BODY: &[u8] = b"hello";

fn frame(kind: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    write_frame_head(&mut out, kind, payload.len() as u64);
    out.extend_from_slice(payload);
    out
}

fn varint(value: u64) -> VarInt {
    VarInt::from_u64(value).unwrap()
}

/// Starts a server following `script` on 127.0.0.1 that allows `streams` concurrent request
/// streams per connection; it lives until the test process ends.
fn serve(script: Script, streams: u32) -> SocketAddr {
    serve_with(script, streams, None)
}

/// [`serve`] with a stream receive window of `window` bytes, if given.
fn serve_with(script: Script, streams: u32, window: Option<u32>) -> SocketAddr {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let rustls = tls::server_config(
                tls::test_pki::SERVER_CERT.as_bytes(),
                tls::test_pki::SERVER_KEY.as_bytes(),
            )
            .unwrap();
            let mut rustls = (*rustls).clone();
            rustls.alpn_protocols = vec![b"h3".to_vec()];
            rustls.max_early_data_size = 0;
            let mut config =
                ServerConfig::with_crypto(Arc::new(QuicServerConfig::try_from(rustls).unwrap()));
            let mut transport = TransportConfig::default();
            transport.max_concurrent_bidi_streams(streams.into());
            if let Some(window) = window {
                transport.stream_receive_window(window.into());
            }
            config.transport_config(Arc::new(transport));
            let endpoint = Endpoint::server(config, "127.0.0.1:0".parse().unwrap()).unwrap();
            sender.send(endpoint.local_addr().unwrap()).unwrap();
            let vanish = Arc::new(tokio::sync::Notify::new());
            let serving = async {
                while let Some(incoming) = endpoint.accept().await {
                    let vanish = vanish.clone();
                    tokio::spawn(async move {
                        if let Ok(conn) = incoming.await {
                            let _ = connection(conn, script, &vanish).await;
                        }
                    });
                }
            };
            tokio::select! {
                () = serving => {}
                () = vanish.notified() => {}
            }
        });
        // Vanished: the runtime, the endpoint's driver and its socket are gone without a word;
        // the client hears nothing more.
        drop(runtime);
    });
    receiver.recv().unwrap()
}

async fn connection(
    conn: quinn::Connection,
    script: Script,
    vanish: &tokio::sync::Notify,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut control = conn.open_uni().await?;
    control
        .write_all(&[vec![0x00], frame(SETTINGS, &[])].concat())
        .await?;
    if script == Script::GoawayAtOnce {
        control.write_all(&frame(GOAWAY, &[0])).await?;
    }
    let mut answered = 0;
    let mut held = Vec::new();
    let mut held_uni = Vec::new();
    let mut goaway_sent = None;
    loop {
        let (mut send, mut recv) = conn.accept_bi().await?;
        let id = VarInt::from(recv.id()).into_inner();
        if script == Script::Echo {
            tokio::spawn(async move {
                let _ = echo(&mut send, &mut recv).await;
            });
            continue;
        }
        if script == Script::AnswerEarly {
            answer(&mut send).await?;
            let end = loop {
                match recv.read_chunk(usize::MAX, true).await {
                    Ok(Some(_)) => {}
                    Ok(None) => break None,
                    Err(quinn::ReadError::Reset(code)) => break Some(code.into_inner()),
                    Err(error) => return Err(error.into()),
                }
            };
            EARLY_ENDS.lock().unwrap().push(end);
            continue;
        }
        // A stream the client opened and then cancelled (the run ended) is no request.
        if recv.read_to_end(64 * 1024).await.is_err() {
            continue;
        }
        match script {
            Script::Answer => answer(&mut send).await?,
            Script::RejectFirst if id == 0 => reject(&mut send, &mut recv),
            Script::RejectFirst => answer(&mut send).await?,
            Script::Goaway => {
                if id == 0 {
                    control.write_all(&frame(GOAWAY, &[8])).await?;
                }
                if id < 8 {
                    answer(&mut send).await?;
                    answered += 1;
                    if answered == 2 {
                        // Let the answers leave before the close.
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        conn.close(varint(H3_NO_ERROR), b"");
                        return Ok(());
                    }
                } else {
                    reject(&mut send, &mut recv);
                }
            }
            Script::DataFirst => {
                send.write_all(&frame(DATA, BODY)).await?;
                send.finish()?;
            }
            Script::DynamicReference => {
                send.write_all(&frame(HEADERS, &[0x01, 0x00, 0x80])).await?;
                send.finish()?;
            }
            Script::ResetInternal => {
                send.reset(varint(0x102))?;
            }
            Script::Silent => held.push((send, recv)),
            Script::GoawayAtOnce => reject(&mut send, &mut recv),
            Script::GoawayAfterFirst if answered == 0 => {
                control.write_all(&frame(GOAWAY, &[id as u8 + 4])).await?;
                goaway_sent = Some(Instant::now());
                answer(&mut send).await?;
                answered += 1;
            }
            Script::GoawayAfterFirst => {
                // One sent as the GOAWAY left may cross it; one sent well after it is late.
                if goaway_sent.is_some_and(|at: Instant| at.elapsed() > Duration::from_millis(30)) {
                    LATE_REQUESTS.fetch_add(1, Ordering::Relaxed);
                }
                reject(&mut send, &mut recv);
            }
            Script::Echo | Script::AnswerEarly => unreachable!("handled as the request arrives"),
            Script::Delay(ms) => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                answer(&mut send).await?;
            }
            Script::Vanish => {
                vanish.notify_one();
                held.push((send, recv));
            }
            Script::InterimThenReject if id == 0 => {
                send.write_all(&frame(HEADERS, &STATUS_103)).await?;
                // Let the interim response arrive before the reset, which would discard it.
                tokio::time::sleep(Duration::from_millis(100)).await;
                reject(&mut send, &mut recv);
            }
            Script::InterimThenReject => answer(&mut send).await?,
            Script::Respond(bytes) => {
                send.write_all(bytes).await?;
                send.finish()?;
            }
            Script::SecondStream(kind) => {
                // The control stream is open already; a QPACK stream needs two to be one too many.
                for _ in 0..if kind == 0 { 1 } else { 2 } {
                    let mut stream = conn.open_uni().await?;
                    let mut opening = vec![kind as u8];
                    if kind == 0 {
                        opening.extend(frame(SETTINGS, &[]));
                    }
                    stream.write_all(&opening).await?;
                    held_uni.push(stream);
                }
                held.push((send, recv));
            }
        }
    }
}

async fn answer(send: &mut SendStream) -> Result<(), Box<dyn std::error::Error>> {
    send.write_all(&[frame(HEADERS, &STATUS_200), frame(DATA, BODY)].concat())
        .await?;
    send.finish()?;
    Ok(())
}

async fn echo(
    send: &mut SendStream,
    recv: &mut RecvStream,
) -> Result<(), Box<dyn std::error::Error>> {
    send.write_all(&frame(HEADERS, &STATUS_200)).await?;
    while let Some(chunk) = recv.read_chunk(usize::MAX, true).await? {
        send.write_all(&frame(DATA, &chunk.bytes)).await?;
    }
    send.finish()?;
    Ok(())
}

fn reject(send: &mut SendStream, recv: &mut RecvStream) {
    let _ = send.reset(varint(H3_REQUEST_REJECTED));
    let _ = recv.stop(varint(H3_REQUEST_REJECTED));
}

/// Runs `h2load-rs --proto h3 -k ARGS https://ADDR/` and what it measured.
fn run(addr: SocketAddr, args: &[&str]) -> RunOutcome {
    run_with(addr, args, |_| {})
}

/// [`run`] with the plan changed by `change` (what no flag sets, like the QUIC idle timeout).
fn run_with(
    addr: SocketAddr,
    args: &[&str],
    change: impl FnOnce(&mut plan::RunPlan),
) -> RunOutcome {
    let url = format!("https://localhost:{}/", addr.port());
    let words = ["h2load-rs", "--proto", "h3", "-k"]
        .into_iter()
        .chain(args.iter().copied())
        .chain([url.as_str()]);
    let cli = crate::cli::Cli::try_parse_from(words).expect("arguments parse");
    let inputs = crate::app::inputs::from_flags(&cli.load);
    let cell = &plan::cells(&inputs, None)[0];
    let mut plan = plan::build(
        &inputs,
        &cli.load.urls,
        &[],
        cell,
        false,
        &crate::io::uring::probe::check,
    )
    .expect("plan builds");
    change(&mut plan);
    runner::run(Arc::new(plan), Sinks::default()).expect("the run ends")
}

fn errors(outcome: &RunOutcome) -> Vec<(ErrorKind, u64)> {
    outcome
        .recorder
        .errors()
        .filter(|(_, count)| *count > 0)
        .collect()
}

#[test]
fn answers_are_counted_to_the_byte() {
    let addr = serve(Script::Answer, 100);
    let outcome = run(addr, &["-n", "20", "-c", "2", "-m", "3"]);
    let counters = outcome.recorder.counters;
    assert_eq!(
        (counters.started, counters.succeeded, counters.failed),
        (20, 20, 0),
        "{:?} {:?}",
        errors(&outcome),
        outcome.recorder.first_error
    );
    assert_eq!(outcome.wire.data, 20 * BODY.len() as u64);
    assert_eq!(outcome.wire.headers, 20 * STATUS_200.len() as u64);
    assert_eq!(
        outcome.wire.headers_uncompressed,
        20 * ":status200".len() as u64
    );
    // `total` is the HTTP/3 bytes of every stream: each response's two frames (type and
    // length, 1 byte each here, and payload) and each connection's control stream.
    let responses = 20 * (2 + STATUS_200.len() + 2 + BODY.len()) as u64;
    assert_eq!(outcome.wire.total, responses + 2 * CONTROL_STREAM);
    assert_eq!(outcome.recorder.effective_concurrency, Some(3));
    assert_eq!(outcome.recorder.connections_failed, 0);
}

#[test]
fn a_response_complete_before_its_request_body_resets_the_rest_with_h3_no_error() {
    // A 300 kB upload through a 16 KiB stream window, answered at once: the client stops
    // sending and resets its side with H3_NO_ERROR (RFC 9114 §4.1), never leaving it half open.
    let addr = serve_with(Script::AnswerEarly, 100, Some(16 * 1024));
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body.bin");
    std::fs::write(&body, vec![b'u'; 300_000]).unwrap();
    let args = [
        "-n",
        "3",
        "-c",
        "1",
        "-m",
        "1",
        "--request-timeout",
        "10s",
        "-d",
    ];
    let outcome = run(addr, &[&args[..], &[body.to_str().unwrap()]].concat());
    let counters = outcome.recorder.counters;
    assert_eq!(
        (counters.done, counters.succeeded),
        (3, 3),
        "{:?}",
        errors(&outcome)
    );
    // The server records a stream's end after its answer, so the ends may trail the run; the
    // last stream's reset may also be overtaken by the connection's close after the run, which
    // ends it too (and is not recorded).
    let ends = (0..500)
        .map(|_| {
            std::thread::sleep(Duration::from_millis(10));
            EARLY_ENDS.lock().unwrap().clone()
        })
        .find(|ends| ends.len() >= 2)
        .unwrap_or_else(|| EARLY_ENDS.lock().unwrap().clone());
    assert!(
        ends.len() >= 2 && ends.iter().all(|end| *end == Some(H3_NO_ERROR)),
        "{ends:?}"
    );
}

#[test]
fn an_upload_is_written_while_its_response_is_read() {
    // The server echoes each chunk as it reads it, through windows of 16 KiB each way: the
    // client must read the echo while it uploads, or both wait for the other.
    let addr = serve_with(Script::Echo, 100, Some(16 * 1024));
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body.bin");
    std::fs::write(&body, vec![b'u'; 300_000]).unwrap();
    let outcome = run(
        addr,
        &[
            "-n",
            "2",
            "-c",
            "1",
            "-m",
            "1",
            "-w",
            "14",
            "--request-timeout",
            "10s",
            "-d",
            body.to_str().unwrap(),
        ],
    );
    let counters = outcome.recorder.counters;
    assert_eq!(
        (counters.started, counters.done, counters.succeeded),
        (2, 2, 2),
        "{:?} {:?}",
        errors(&outcome),
        outcome.recorder.first_error
    );
    // The echo is the request stream as sent: HEADERS, the DATA frame's head, the body.
    let per_request = outcome.wire.data / 2;
    assert!(
        (300_000..300_000 + 500).contains(&per_request),
        "{per_request}"
    );
}

#[test]
fn the_servers_stream_limit_is_the_effective_concurrency() {
    let addr = serve(Script::Answer, 2);
    let outcome = run(addr, &["-n", "12", "-c", "1", "-m", "5"]);
    assert_eq!(outcome.recorder.counters.succeeded, 12);
    assert_eq!(outcome.recorder.effective_concurrency, Some(2));
}

#[test]
fn rejected_requests_go_again() {
    let addr = serve(Script::RejectFirst, 100);
    let outcome = run(addr, &["-n", "5", "-c", "1", "-m", "1"]);
    let counters = outcome.recorder.counters;
    assert_eq!(
        (counters.started, counters.done, counters.succeeded),
        (5, 5, 5)
    );
    assert_eq!(outcome.recorder.retried.refused, 1);
    assert_eq!(errors(&outcome), []);
}

#[test]
fn a_rejected_requests_headers_count_once() {
    let addr = serve(Script::InterimThenReject, 100);
    let outcome = run(addr, &["-n", "3", "-c", "1", "-m", "1"]);
    let counters = outcome.recorder.counters;
    assert_eq!(
        (counters.started, counters.done, counters.succeeded),
        (3, 3, 3)
    );
    assert_eq!(outcome.recorder.retried.refused, 1);
    // The rejected attempt's 103 is not part of any response...
    assert_eq!(outcome.wire.headers, 3 * STATUS_200.len() as u64);
    assert_eq!(
        outcome.wire.headers_uncompressed,
        3 * ":status200".len() as u64
    );
    // ...but its bytes were received.
    let responses = 3 * (2 + STATUS_200.len() + 2 + BODY.len()) as u64;
    let interim = (2 + STATUS_103.len()) as u64;
    assert_eq!(outcome.wire.total, responses + interim + CONTROL_STREAM);
}

#[test]
fn requests_past_a_goaway_go_again_on_a_new_connection() {
    let addr = serve(Script::Goaway, 100);
    let outcome = run(addr, &["-n", "10", "-c", "1", "-m", "3"]);
    let recorder = &outcome.recorder;
    let counters = recorder.counters;
    assert_eq!(
        (counters.started, counters.done, counters.succeeded),
        (10, 10, 10),
        "{:?}",
        recorder.first_error
    );
    assert_eq!(errors(&outcome), []);
    // Two answers per connection: at least five connections.
    assert!(recorder.protocols().map(|(_, count)| count).sum::<u64>() >= 5);
    assert!(recorder.retried.goaway + recorder.retried.refused > 0);
}

#[test]
fn protocol_violations_fail_requests_with_named_codes() {
    for (script, code) in [
        (Script::DataFirst, "H3_FRAME_UNEXPECTED"),
        (Script::DynamicReference, "QPACK_DECOMPRESSION_FAILED"),
    ] {
        let addr = serve(script, 100);
        let outcome = run(addr, &["-n", "4", "-c", "1", "-m", "1"]);
        assert_eq!(errors(&outcome), [(ErrorKind::Protocol, 4)], "{script:?}");
        let message = outcome.recorder.first_error.clone().unwrap_or_default();
        assert!(message.contains(code), "{script:?}: {message}");
    }
}

/// `:status 200`, `content-length: 9` (a literal with the static name 4), and a 5-byte body.
const SHORT_BODY: &[u8] = &[
    0x01,
    6,
    0x00,
    0x00,
    0xc0 | 25,
    0x54,
    1,
    b'9',
    0x00,
    5,
    b'h',
    b'e',
    b'l',
    b'l',
    b'o',
];
/// `:status 200` and `X: 1` (an upper-case literal name).
const UPPER_CASE: &[u8] = &[0x01, 7, 0x00, 0x00, 0xc0 | 25, 0x21, b'X', 1, b'1'];
/// `:status 200` and `connection: close`.
const CONNECTION: &[u8] = &[
    0x01,
    21,
    0x00,
    0x00,
    0xc0 | 25,
    0x27,
    3,
    b'c',
    b'o',
    b'n',
    b'n',
    b'e',
    b'c',
    b't',
    b'i',
    b'o',
    b'n',
    5,
    b'c',
    b'l',
    b'o',
    b's',
    b'e',
];
/// `:status 200` twice.
const TWO_STATUSES: &[u8] = &[0x01, 4, 0x00, 0x00, 0xc0 | 25, 0xc0 | 25];
/// `:status 200` and `server: a\rb` (a static name, RFC 9204 Appendix A index 92).
const VALUE_CR: &[u8] = &[
    0x01,
    9,
    0x00,
    0x00,
    0xc0 | 25,
    0x5f,
    77,
    3,
    b'a',
    b'\r',
    b'b',
];
/// `:status 200` and `x: "a "` (a trailing space).
const VALUE_SPACE: &[u8] = &[0x01, 8, 0x00, 0x00, 0xc0 | 25, 0x21, b'x', 2, b'a', b' '];

#[test]
fn malformed_responses_fail_their_request_alone() {
    for (name, bytes) in [
        ("short body", SHORT_BODY),
        ("upper-case name", UPPER_CASE),
        ("connection", CONNECTION),
        ("two :status", TWO_STATUSES),
        ("CR in a value", VALUE_CR),
        ("a value with a trailing space", VALUE_SPACE),
    ] {
        let addr = serve(Script::Respond(bytes), 100);
        let outcome = run(addr, &["-n", "3", "-c", "1", "-m", "1"]);
        let counters = outcome.recorder.counters;
        assert_eq!(
            (counters.done, counters.succeeded, counters.failed),
            (3, 0, 3),
            "{name}"
        );
        assert_eq!(errors(&outcome), [(ErrorKind::Protocol, 3)], "{name}");
        let message = outcome.recorder.first_error.clone().unwrap_or_default();
        assert!(
            message.starts_with("a malformed HTTP/3 response: "),
            "{name}: {message}"
        );
        let connections: u64 = outcome.recorder.protocols().map(|(_, n)| n).sum();
        assert_eq!(
            connections, 1,
            "{name}: a stream error, the connection goes on"
        );
    }
}

#[test]
fn a_second_control_or_qpack_stream_is_a_stream_creation_error() {
    for kind in [0x00, 0x02, 0x03] {
        let addr = serve(Script::SecondStream(kind), 100);
        let args = ["-n", "2", "-c", "1", "-m", "1", "--request-timeout", "10s"];
        let outcome = run(addr, &args);
        let counters = outcome.recorder.counters;
        assert_eq!((counters.succeeded, counters.failed), (0, 2), "{kind}");
        assert_eq!(errors(&outcome), [(ErrorKind::Protocol, 2)], "{kind}");
        let message = outcome.recorder.first_error.clone().unwrap_or_default();
        assert!(
            message.contains("H3_STREAM_CREATION_ERROR"),
            "{kind}: {message}"
        );
    }
}

#[test]
fn stream_resets_are_counted_by_code() {
    let addr = serve(Script::ResetInternal, 100);
    let outcome = run(addr, &["-n", "3", "-c", "1", "-m", "1"]);
    assert_eq!(errors(&outcome), [(ErrorKind::StreamReset, 3)]);
    assert_eq!(
        outcome
            .recorder
            .stream_reset_codes
            .get(&ResetCode::H3(0x102))
            .copied(),
        Some(3)
    );
    assert_eq!(ResetCode::H3(0x102).name(), "H3_INTERNAL_ERROR");
    // HTTP/3's codes are named from HTTP/3's table, whole: 0x8 is HTTP/2's CANCEL only, and
    // a reserved (GREASE) code past 32 bits keeps its value.
    assert_eq!(ResetCode::H2(0x8).name(), "CANCEL");
    assert_eq!(ResetCode::H3(0x8).name(), "HTTP/3 error 0x8");
    let grease = 0x1f * 0x1_0000_0000 + 0x21;
    assert_eq!(
        ResetCode::H3(grease).name(),
        format!("HTTP/3 error 0x{grease:x}")
    );
}

#[test]
fn requests_waiting_for_their_send_time_stop_at_a_goaway() {
    // A GOAWAY comes with the first request's answer; the lanes holding the other streams wait
    // for --rate's send times (100 ms apart) and must send nothing on that connection after
    // it. (A request that crosses the GOAWAY goes again: --rate may send two at once on a new
    // connection, to catch up with a send time told to the closing one.)
    let addr = serve(Script::GoawayAfterFirst, 100);
    let outcome = run(addr, &["-n", "4", "-c", "1", "-m", "3", "--rate", "10"]);
    let recorder = &outcome.recorder;
    let counters = recorder.counters;
    assert_eq!(
        (counters.started, counters.done, counters.succeeded),
        (4, 4, 4),
        "{:?}",
        recorder.first_error
    );
    assert_eq!(errors(&outcome), []);
    assert_eq!(LATE_REQUESTS.load(Ordering::Relaxed), 0);
    // Each connection carried one request, and each retry (if any) another connection.
    assert!(recorder.protocols().map(|(_, count)| count).sum::<u64>() >= 4);
}

#[test]
fn a_server_that_allows_no_request_stream_fails_the_connection_in_bounded_time() {
    let addr = serve(Script::Answer, 0);
    let began = Instant::now();
    let outcome = run(
        addr,
        &[
            "-n",
            "4",
            "-c",
            "1",
            "-m",
            "2",
            "--request-timeout",
            "300ms",
        ],
    );
    let recorder = &outcome.recorder;
    assert!(began.elapsed() < Duration::from_secs(5));
    assert_eq!(recorder.effective_concurrency, Some(0));
    // Nothing was sent: the slot gives up after 3 connections in a row lost before their first
    // request, each a failed connection with its kind named.
    assert_eq!(
        (recorder.counters.started, recorder.counters.succeeded),
        (0, 0)
    );
    assert_eq!(recorder.connections_failed, 3);
    assert_eq!(errors(&outcome), [(ErrorKind::Timeout, 3)]);
    assert_eq!(recorder.connections_closed_by_client, 3);
    let message = recorder.first_error.clone().unwrap_or_default();
    assert!(message.contains("initial_max_streams_bidi 0"), "{message}");
}

#[test]
fn keep_alive_holds_a_connection_through_a_slow_response() {
    // A 600 ms idle timeout and a response after 1.5 s: the client's PINGs keep it alive.
    let addr = serve(Script::Delay(1500), 100);
    let outcome = run_with(
        addr,
        &["-n", "2", "-c", "1", "-m", "2", "--request-timeout", "10s"],
        |plan| plan.timeouts.quic_idle = Duration::from_millis(600),
    );
    let counters = outcome.recorder.counters;
    assert_eq!(
        (counters.started, counters.done, counters.succeeded),
        (2, 2, 2),
        "{:?}",
        outcome.recorder.first_error
    );
    assert_eq!(errors(&outcome), []);
}

#[test]
fn a_vanished_server_is_an_idle_timeout_not_a_client_close() {
    let addr = serve(Script::Vanish, 100);
    let began = Instant::now();
    let outcome = run_with(
        addr,
        &["-n", "1", "-c", "1", "--connect-timeout", "1s"],
        |plan| plan.timeouts.quic_idle = Duration::from_millis(600),
    );
    let recorder = &outcome.recorder;
    assert!(began.elapsed() < Duration::from_secs(5));
    assert_eq!(errors(&outcome), [(ErrorKind::Timeout, 1)]);
    assert_eq!(
        (
            recorder.counters.started,
            recorder.counters.errored,
            recorder.counters.timeout
        ),
        (1, 1, 1)
    );
    assert_eq!(recorder.connections_failed, 0);
    assert_eq!(recorder.connections_closed_by_client, 0);
    let message = recorder.first_error.clone().unwrap_or_default();
    assert!(message.contains("idle timeout"), "{message}");
}

#[test]
fn a_silent_server_ends_in_timeouts() {
    let addr = serve(Script::Silent, 100);
    let began = Instant::now();
    let outcome = run(
        addr,
        &[
            "-n",
            "4",
            "-c",
            "1",
            "-m",
            "2",
            "--request-timeout",
            "200ms",
        ],
    );
    assert_eq!(errors(&outcome), [(ErrorKind::Timeout, 4)]);
    let counters = outcome.recorder.counters;
    assert_eq!(
        (
            counters.started,
            counters.done,
            counters.errored,
            counters.timeout
        ),
        (4, 4, 4, 4)
    );
    // Request timeouts cancel streams; the connection stays.
    assert_eq!(outcome.recorder.connections_closed_by_client, 0);
    assert_eq!(outcome.recorder.connections_failed, 0);
    assert!(began.elapsed() < Duration::from_secs(5));
}

#[test]
fn nothing_listening_is_connection_refused() {
    // A port just used and closed: nothing listens there.
    let addr = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let began = Instant::now();
    let outcome = run(addr, &["-n", "2", "-c", "1"]);
    assert_eq!(outcome.recorder.connections_failed, 1);
    assert_eq!(errors(&outcome), [(ErrorKind::Connect, 1)]);
    assert!(began.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_server_that_processes_nothing_ends_the_run_with_named_errors() {
    let addr = serve(Script::GoawayAtOnce, 100);
    let began = Instant::now();
    let outcome = run(addr, &["-n", "6", "-c", "2", "-m", "2"]);
    let recorder = &outcome.recorder;
    let counters = recorder.counters;
    assert_eq!(
        (
            counters.started,
            counters.done,
            counters.succeeded,
            counters.failed,
            counters.errored
        ),
        (6, 6, 0, 6, 6)
    );
    // Every request fails as not processed (GOAWAY or H3_REQUEST_REJECTED), after its three
    // retries; a connection that got its GOAWAY before its first request is counted apart.
    let not_processed: u64 = recorder
        .request_errors()
        .filter(|(kind, _)| matches!(kind, ErrorKind::Goaway | ErrorKind::Refused))
        .map(|(_, count)| count)
        .sum();
    assert_eq!(not_processed, 6, "{:?}", errors(&outcome));
    assert_eq!(recorder.retried.total(), 6 * 3);
    let all: u64 = errors(&outcome).iter().map(|(_, count)| count).sum();
    assert_eq!(all, 6 + recorder.connections_failed);
    assert!(began.elapsed() < Duration::from_secs(10));
}
