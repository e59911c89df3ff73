//! Entry points for the `cargo fuzz` targets in `fuzz/`: the parsers that read what the outside
//! world sends, reachable without a network. Not part of the supported API, and compiled only
//! with the `fuzzing` feature (fuzz/Cargo.toml enables it) or for the unit tests that call it.

use std::ffi::OsString;
use std::sync::Arc;

use clap::Parser;

use crate::cli::Cli;
use crate::plan::Protocol;
use crate::proto::check::Checks;
use crate::proto::h1::{ByteCounts, Event, ResponseReader};
use crate::proto::hpack::Decoder;
use crate::session::testing;

/// What `merge` reads (a report, or a log holding several, as `kubectl logs` prints them), each
/// report's histograms rebuilt, and the reports merged (mixed scenarios too, to reach the adding).
pub fn merge_input(bytes: &[u8]) {
    if let Ok((documents, _)) = crate::merge::reports_from(bytes, "fuzz") {
        if !documents.is_empty() {
            let _ = crate::merge::merge(documents, true);
        }
    }
}

/// A `.proto` file's text, checked and compiled as `--grpc-proto` compiles one (without an import
/// path: only the well-known imports resolve).
pub fn proto_compile(text: &str) {
    let _ = crate::plan::proto_files::compile_text("fuzz.proto", text);
}

/// The body of one reflection answer (prefixed messages), gathered as `--grpc-reflect` gathers
/// the server's answers, then made into a schema.
pub fn reflection_answer(bytes: &[u8]) {
    let mut gathered = crate::runner::reflect::Gathered::new("fuzz.S");
    if gathered.take(bytes).is_ok() {
        let _ = gathered.pool();
    }
}

/// A scenario file's text, merged with no overrides, then parsed as the command line.
pub fn scenario(text: &str) {
    if let Ok(scenario) = crate::cli::scenario::parse(text, "fuzz.toml", &[]) {
        if let Ok(cli) = Cli::try_parse_from(&scenario.argv) {
            let _ = crate::plan::cells(&crate::app::inputs::from_flags(&cli.load), None);
        }
    }
}

/// Command-line words (split at whitespace): clap's parsing, the cells they expand to, and the
/// value parsers (URLs included, without resolving hosts).
pub fn arguments(text: &str) {
    let words: Vec<OsString> = std::iter::once("h2load-rs")
        .chain(text.split_whitespace())
        .map(OsString::from)
        .collect();
    if let Ok(cli) = Cli::try_parse_from(&words) {
        let _ = crate::plan::cells(&crate::app::inputs::from_flags(&cli.load), None);
    }
    for word in text.split_whitespace() {
        let _ = crate::units::parse_duration(word);
        let _ = crate::units::parse_size(word);
        let _ = crate::units::parse_rfc3339(word);
        let _ = word.parse::<http::Uri>();
    }
}

/// Bytes from a server, fed to the HTTP/1.1 response parser in two pieces split at `split`.
pub fn http1_responses(bytes: &[u8], split: usize) {
    let mut counts = ByteCounts::default();
    let mut reader = ResponseReader::new(false);
    let split = split.min(bytes.len());
    let mut pending = bytes[..split].to_vec();
    for next in [&bytes[split..], &[][..]] {
        loop {
            let Ok((used, event)) = reader.step(&pending, &mut counts) else {
                return;
            };
            assert!(
                used <= pending.len(),
                "the parser used bytes it was not given"
            );
            pending.drain(..used);
            match event {
                Event::NeedMore if next.is_empty() => {
                    reader.finish_at_eof();
                    break;
                }
                Event::NeedMore => break,
                Event::Interim | Event::Complete { .. } => {}
            }
        }
        pending.extend_from_slice(next);
    }
}

/// Response checks for the fuzz targets: two header checks and a body string.
fn fuzz_checks() -> Arc<Checks> {
    let headers = ["server: x".to_owned(), "content-type".to_owned()];
    Arc::new(
        Checks::parse(false, &[], &headers, Some("ab"))
            .expect("valid checks")
            .expect("some checks"),
    )
}

/// A response header block, decoded twice in a row (the second sees the first's dynamic table),
/// with and without header checks: comparing fields changes nothing else the decoder says.
pub fn hpack_block(bytes: &[u8]) {
    let decode = |checks: Option<&Arc<Checks>>| {
        let mut decoder = Decoder::new(4096);
        if let Some(checks) = checks {
            decoder.check_headers(checks);
        }
        [decoder.decode(bytes), decoder.decode(bytes)]
            .map(|decoded| decoded.map(|block| (block.status, block.uncompressed)))
    };
    assert_eq!(decode(None), decode(Some(&fuzz_checks())));
}

/// Bytes from a server, delivered `piece` bytes at a time, through an HTTP/1.1 session with
/// requests pipelined: whatever arrives, the session ends in a counted state, never a panic.
pub fn http1_session(bytes: &[u8], piece: usize) {
    session(
        &["--h1", "-m", "4", "-n", "8"],
        Protocol::Http1,
        bytes,
        piece,
    );
}

/// Bytes from a server, delivered `piece` bytes at a time, through an HTTP/2 session with
/// streams multiplexed; an odd `piece` makes the requests bidirectional gRPC calls of three
/// messages, whose received messages and prefixes are never more than the DATA read.
pub fn h2_session(bytes: &[u8], piece: usize) {
    if piece.is_multiple_of(2) {
        session(
            &["--proto", "h2c", "-m", "4", "-n", "8"],
            Protocol::H2c,
            bytes,
            piece,
        );
        return;
    }
    let argv = [
        "--grpc",
        "/f.S/M",
        "--grpc-shape",
        "bidi",
        "--grpc-stream-messages",
        "3",
        "-m",
        "4",
        "-n",
        "8",
    ];
    let world = session(&argv, Protocol::H2c, bytes, piece);
    let recorder = world.shared.recorder.borrow();
    let received = recorder.messages.received;
    let data = world.shared.wire.totals().data;
    assert!(
        received.message_bytes + received.prefix_bytes <= data,
        "{received:?} of {data} DATA bytes"
    );
    assert!(recorder.messages.sent.messages <= 8 * 3);
}

/// The plan of the one cell of the command-line words `argv` against `http://127.0.0.1:9/`
/// (the program name and the URL are added), made as `app` makes it: the flags, their
/// [`crate::plan::Inputs`], the cell. The engine's session tests build their worlds with it.
pub(crate) fn plan_of_words(argv: &[&str]) -> crate::plan::RunPlan {
    let words = std::iter::once("h2load-rs")
        .chain(argv.iter().copied())
        .chain(["http://127.0.0.1:9/"]);
    crate::app::inputs::first_plan(words).expect("plan builds")
}

fn session(argv: &[&str], protocol: Protocol, bytes: &[u8], piece: usize) -> testing::World {
    let world = testing::world_of(plan_of_words(argv));
    let outcome = testing::converse(&world, protocol, bytes, piece.max(1));
    let counters = outcome.counters;
    assert!(counters.done <= counters.started, "{counters:?}");
    assert!(
        counters.succeeded + counters.failed == counters.done,
        "{counters:?}"
    );
    let by_kind: u64 = outcome.errors.iter().map(|(_, count)| count).sum();
    assert_eq!(by_kind, counters.errored, "every failed request has a kind");
    assert!(outcome.wire.headers + outcome.wire.data <= bytes.len() as u64);
    assert!(!outcome.sent.is_empty(), "the client spoke first");
    if let Some(failure) = outcome.failure {
        assert!(!failure.message.is_empty(), "every failure is explained");
    }
    world
}

/// What a server sends on an HTTP/3 response stream and on a unidirectional stream, in pieces
/// of `piece` bytes: the parsers never panic, count no more body and header bytes than they
/// were given, and parse the same whole as in pieces.
pub fn h3_response(bytes: &[u8], piece: usize) {
    use crate::proto::h3::{ResponseEvent, ResponseParser, UniStreamParser};

    let checks = fuzz_checks();
    let parse = |piece: usize, checks: Option<&Arc<Checks>>| {
        let mut parser = ResponseParser::checking(checks);
        let mut counted = 0u64;
        let mut events = 0usize;
        let mut result = Ok(());
        for chunk in bytes.chunks(piece) {
            result = parser.feed(chunk, |event| {
                events += 1;
                counted += match event {
                    ResponseEvent::Headers { wire_len, .. } => wire_len,
                    ResponseEvent::Data(length) => length as u64,
                };
            });
            if result.is_err() {
                break;
            }
        }
        let end = result.and_then(|()| parser.finish());
        assert!(
            counted <= bytes.len() as u64,
            "counted {counted} of {}",
            bytes.len()
        );
        (end, counted, events)
    };
    // In pieces, the parser also follows the checks, which changes nothing it says.
    let whole = parse(bytes.len().max(1), None);
    let pieces = parse(piece.max(1), Some(&checks));
    // Data events split with the input, so only the outcome and byte counts must agree.
    assert_eq!((whole.0, whole.1), (pieces.0, pieces.1));

    let mut uni = UniStreamParser::default();
    for chunk in bytes.chunks(piece.max(1)) {
        if uni.feed(chunk, |_| {}).is_err() {
            break;
        }
    }
}

/// A proxy's answer to `CONNECT`, arriving `piece` bytes at a time as the tunnel reads it: the
/// head it takes ends within the bytes just read (the tunnel consumes the rest of it), a refusal
/// is a `proxy` error of one line, and below the head limit the split changes nothing.
pub fn proxy_answer(bytes: &[u8], piece: usize) {
    use crate::io::proxy::{answer, Answer};
    use crate::plan::route::ProxyPlan;
    use crate::recorder::ErrorKind;

    let proxy = ProxyPlan {
        addr: ([127, 0, 0, 1], 3128).into(),
        target: "localhost:443".into(),
        request: Vec::new(),
    };
    // The tunnel peeks at most 2 KiB at a time.
    let piece = piece.clamp(1, 2048);
    let mut head = Vec::new();
    let mut outcome = Answer::Partial;
    for chunk in bytes.chunks(piece) {
        let before = head.len();
        head.extend_from_slice(chunk);
        outcome = answer(&head, &proxy);
        match &outcome {
            Answer::Partial => {}
            Answer::Open(length) => {
                assert!(
                    (before + 1..=head.len()).contains(length),
                    "a head of {length} after {before} of {} bytes",
                    head.len()
                );
                break;
            }
            Answer::Refused(failure) => {
                assert_eq!(failure.kind, ErrorKind::Proxy);
                assert!(one_line(&failure.message), "{:?}", failure.message);
                break;
            }
        }
    }
    if bytes.len() < 16 * 1024 {
        assert_eq!(outcome, answer(bytes, &proxy));
    }
}

/// The plan's text parsers: an -i file's lines, then each URL line it accepts and the whole
/// text as templates (a templated path, a templated body). A rejection is a usage error of one
/// line; a template renders the same twice from the same draw, and differently for another
/// `{seq}` when it uses one.
pub fn plan_texts(text: &str) {
    use crate::plan::template::{Draw, Rng, Template};

    let usage = |error: anyhow::Error| {
        assert!(crate::error::is_usage(&error), "{error}");
        let message = error.to_string();
        assert!(one_line(&message), "{message:?}");
    };
    let lines = crate::plan::urls::url_lines(text, &"fuzz.txt").unwrap_or_else(|error| {
        usage(error);
        Vec::new()
    });
    for line in &lines {
        assert!(
            !line.is_empty() && !line.bytes().any(|byte| byte <= b' ' || byte == 0x7f),
            "{line:?}"
        );
    }
    let draw = |seq| Draw {
        seq,
        conn: 3,
        rng: Rng::for_request(7, seq, 0),
    };
    let mut out = Vec::new();
    let mut again = Vec::new();
    for bytes in lines.iter().map(String::as_bytes).chain([text.as_bytes()]) {
        let template = match Template::parse(bytes, "fuzz") {
            Ok(Some(template)) => template,
            Ok(None) => continue,
            Err(error) => {
                usage(error);
                continue;
            }
        };
        out.clear();
        again.clear();
        template.render(&mut out, &mut draw(1));
        template.render(&mut again, &mut draw(1));
        assert_eq!(out, again);
        if template.uses_seq() {
            again.clear();
            template.render(&mut again, &mut draw(2));
            assert_ne!(out, again);
        }
    }
}

/// Whether `message` prints as one line.
fn one_line(message: &str) -> bool {
    !message.contains(['\r', '\n'])
}
