//! Entry points for the `cargo fuzz` targets in `fuzz/`: the parsers that read what the outside
//! world sends, reachable without a network. Not part of the supported API.

use std::ffi::OsString;

use clap::Parser;

use crate::cli::Cli;
use crate::proto::h1::{ByteCounts, Event, ResponseReader};
use crate::proto::hpack::Decoder;

/// A scenario file's text, merged with no overrides, then parsed as the command line.
pub fn scenario(text: &str) {
    if let Ok(scenario) = crate::scenario::parse(text, "fuzz.toml", &[]) {
        if let Ok(cli) = Cli::try_parse_from(&scenario.argv) {
            let _ = crate::plan::cells(&cli.load);
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
        let _ = crate::plan::cells(&cli.load);
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

/// A response header block, decoded twice in a row (the second sees the first's dynamic table).
pub fn hpack_block(bytes: &[u8]) {
    let mut decoder = Decoder::new(4096);
    let _ = decoder.decode(bytes);
    let _ = decoder.decode(bytes);
}
