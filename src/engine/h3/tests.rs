//! The HTTP/3 engine against a scripted QUIC server on loopback: the whole run (runner, engine,
//! recorder) for each thing a server may do, checked against known counts and bytes.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use quinn::crypto::rustls::QuicServerConfig;
use quinn::{Endpoint, RecvStream, SendStream, ServerConfig, TransportConfig, VarInt};

use crate::plan;
use crate::proto::h3::{
    write_frame_head, DATA, GOAWAY, H3_NO_ERROR, H3_REQUEST_REJECTED, HEADERS, SETTINGS,
};
use crate::recorder::ErrorKind;
use crate::runner::{self, tls, RunOutcome, Sinks};

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
}

/// `:status 200` (static entry 25), no dynamic table.
const STATUS_200: [u8; 3] = [0x00, 0x00, 0xc0 | 25];
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
            config.transport_config(Arc::new(transport));
            let endpoint = Endpoint::server(config, "127.0.0.1:0".parse().unwrap()).unwrap();
            sender.send(endpoint.local_addr().unwrap()).unwrap();
            while let Some(incoming) = endpoint.accept().await {
                tokio::spawn(async move {
                    if let Ok(conn) = incoming.await {
                        let _ = connection(conn, script).await;
                    }
                });
            }
        });
    });
    receiver.recv().unwrap()
}

async fn connection(
    conn: quinn::Connection,
    script: Script,
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
    loop {
        let (mut send, mut recv) = conn.accept_bi().await?;
        let id = VarInt::from(recv.id()).into_inner();
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
        }
    }
}

async fn answer(send: &mut SendStream) -> Result<(), Box<dyn std::error::Error>> {
    send.write_all(&[frame(HEADERS, &STATUS_200), frame(DATA, BODY)].concat())
        .await?;
    send.finish()?;
    Ok(())
}

fn reject(send: &mut SendStream, recv: &mut RecvStream) {
    let _ = send.reset(varint(H3_REQUEST_REJECTED));
    let _ = recv.stop(varint(H3_REQUEST_REJECTED));
}

/// Runs `h2load-rs --proto h3 -k ARGS https://ADDR/` and what it measured.
fn run(addr: SocketAddr, args: &[&str]) -> RunOutcome {
    let url = format!("https://localhost:{}/", addr.port());
    let words = ["h2load-rs", "--proto", "h3", "-k"]
        .into_iter()
        .chain(args.iter().copied())
        .chain([url.as_str()]);
    let cli = crate::cli::Cli::try_parse_from(words).expect("arguments parse");
    let cell = &plan::cells(&cli.load)[0];
    let plan = plan::build(&cli.load, &cli.load.urls, cell, false).expect("plan builds");
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
    // Every response is at least its frames, in UDP payloads of at least one QUIC header each.
    let frames = 20 * (2 + STATUS_200.len() + 2 + BODY.len()) as u64;
    assert!(
        outcome.wire.total > frames,
        "{} <= {frames}",
        outcome.wire.total
    );
    assert_eq!(outcome.recorder.effective_concurrency, Some(3));
    assert_eq!(outcome.recorder.connections_failed, 0);
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
    assert_eq!(outcome.recorder.counters.succeeded, 5);
    assert_eq!(outcome.recorder.retried.refused, 1);
    assert_eq!(errors(&outcome), []);
}

#[test]
fn requests_past_a_goaway_go_again_on_a_new_connection() {
    let addr = serve(Script::Goaway, 100);
    let outcome = run(addr, &["-n", "10", "-c", "1", "-m", "3"]);
    let recorder = &outcome.recorder;
    assert_eq!(
        recorder.counters.succeeded, 10,
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

#[test]
fn stream_resets_are_counted_by_code() {
    let addr = serve(Script::ResetInternal, 100);
    let outcome = run(addr, &["-n", "3", "-c", "1", "-m", "1"]);
    assert_eq!(errors(&outcome), [(ErrorKind::StreamReset, 3)]);
    assert_eq!(
        outcome.recorder.stream_reset_codes.get(&0x102).copied(),
        Some(3)
    );
    assert_eq!(crate::proto::stream_error_name(0x102), "H3_INTERNAL_ERROR");
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
    assert_eq!(outcome.recorder.counters.timeout, 4);
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
    let counters = outcome.recorder.counters;
    assert_eq!(counters.succeeded, 0);
    // Every request fails as not processed (GOAWAY or H3_REQUEST_REJECTED), after its retries.
    let failed: u64 = errors(&outcome)
        .iter()
        .filter(|(kind, _)| matches!(kind, ErrorKind::Goaway | ErrorKind::Refused))
        .map(|(_, count)| count)
        .sum();
    assert_eq!(failed, 6, "{:?}", errors(&outcome));
    assert!(began.elapsed() < Duration::from_secs(10));
}
