//! `--log-file`: one tab-separated line per measured request, h2load's three columns first so
//! scripts written for h2load's log keep working, then what h2load does not log.
//!
//! Columns: request start (µs since the Unix epoch), status (`-1` when no complete response came),
//! duration (µs, send to last byte or to the failure), time to first byte (µs, `-1` without a
//! response), connection id, stream id (HTTP/2) or the request's number on its connection
//! (HTTP/1.1), protocol, the cell number of a sweep, and the request's scheduled start (µs since
//! the Unix epoch: with `--rate`/`--stages`/`--find-max` its send time on the schedule, column 1
//! minus the pacing delay; column 1 itself unpaced).
//!
//! Each runner thread formats into its own buffer and writes whole lines in large blocks, so the hot
//! path neither locks nor allocates once the buffer has grown.

use std::fs::File;
use std::io::{self, Write};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::plan::Protocol;
use crate::recorder::RequestStart;

/// Bytes a thread gathers before writing them out.
const BLOCK: usize = 64 * 1024;

/// The file every thread of a run appends to.
#[derive(Debug, Clone)]
pub(crate) struct LogFile(Arc<File>);

impl LogFile {
    /// The log in `file` (the sweep creates it beside its destination and moves it into place).
    pub(crate) fn new(file: File) -> Self {
        LogFile(Arc::new(file))
    }
}

/// How one request ended, as the log needs it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    /// When the request was scheduled and sent.
    pub(crate) start: RequestStart,
    /// The response's first byte and status, if a complete response came.
    pub(crate) response: Option<(Instant, u16)>,
    /// When the response completed or the request failed.
    pub(crate) end: Instant,
    /// The connection it was sent on.
    pub(crate) connection: u64,
    /// The protocol of that connection, once known.
    pub(crate) protocol: Option<Protocol>,
}

/// One runner thread's share of the log.
#[derive(Debug)]
pub(crate) struct RequestLog {
    file: LogFile,
    buffer: Vec<u8>,
    anchor: Instant,
    anchor_epoch_us: i128,
    cell: usize,
    error: Option<io::Error>,
}

impl RequestLog {
    /// A thread's writer for the log of cell number `cell`.
    pub(crate) fn new(file: LogFile, cell: usize) -> Self {
        let anchor = Instant::now();
        let since_epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        RequestLog {
            file,
            buffer: Vec::with_capacity(BLOCK + 256),
            anchor,
            anchor_epoch_us: since_epoch.as_micros() as i128,
            cell,
            error: None,
        }
    }

    /// Appends one request's line, writing the buffer out when it is full.
    pub(crate) fn record(&mut self, entry: Entry) {
        let sent = entry.start.actual;
        let start_us = self.anchor_epoch_us + signed_micros(self.anchor, sent);
        let scheduled_us = self.anchor_epoch_us + signed_micros(self.anchor, entry.start.intended);
        let (status, ttfb) = match entry.response {
            Some((first_byte, status)) => (
                i64::from(status),
                first_byte.saturating_duration_since(sent).as_micros() as i64,
            ),
            None => (-1, -1),
        };
        let stream = match entry.protocol {
            // Streams open in request order, client stream ids being the odd numbers.
            Some(Protocol::H2 | Protocol::H2c) => 2 * u64::from(entry.start.sequence) - 1,
            _ => u64::from(entry.start.sequence),
        };
        // Writing into a Vec cannot fail.
        let _ = writeln!(
            self.buffer,
            "{start_us}\t{status}\t{}\t{ttfb}\t{}\t{stream}\t{}\t{}\t{scheduled_us}",
            entry.end.saturating_duration_since(sent).as_micros(),
            entry.connection,
            entry.protocol.map_or("-", Protocol::id),
            self.cell,
        );
        if self.buffer.len() >= BLOCK {
            self.write_out();
        }
    }

    /// Writes what is buffered; the first write error is kept for [`RequestLog::finish`].
    fn write_out(&mut self) {
        if self.error.is_none() {
            // One write per block of whole lines keeps threads' lines from interleaving.
            if let Err(error) = (&*self.file.0).write_all(&self.buffer) {
                self.error = Some(error);
            }
        }
        self.buffer.clear();
    }

    /// Writes the rest of the buffer; `Err` describes the first write that failed.
    pub(crate) fn finish(mut self) -> Result<(), String> {
        self.write_out();
        match self.error {
            Some(error) => Err(format!("cannot write --log-file: {error}")),
            None => Ok(()),
        }
    }
}

/// `time - anchor` in µs, negative when `time` came first.
fn signed_micros(anchor: Instant, time: Instant) -> i128 {
    match time.checked_duration_since(anchor) {
        Some(after) => after.as_micros() as i128,
        None => -((anchor - time).as_micros() as i128),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn read_lines(path: &std::path::Path) -> Vec<Vec<String>> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|line| line.split('\t').map(str::to_owned).collect())
            .collect()
    }

    #[test]
    fn writes_h2load_columns_then_ours() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.tsv");
        let mut log = RequestLog::new(LogFile::new(File::create(&path).unwrap()), 2);
        let sent = Instant::now();
        let scheduled = sent - Duration::from_micros(250);
        let start = |sequence| RequestStart::first(scheduled, sent, sequence);
        log.record(Entry {
            start: start(3),
            response: Some((sent + Duration::from_micros(700), 204)),
            end: sent + Duration::from_micros(1500),
            connection: 9,
            protocol: Some(Protocol::H2c),
        });
        log.record(Entry {
            start: start(2),
            response: None,
            end: sent + Duration::from_micros(40),
            connection: 4,
            protocol: Some(Protocol::Http1),
        });
        log.finish().unwrap();
        let lines = read_lines(&path);
        let epoch_us = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_micros() as i64;
        let logged_start: i64 = lines[0][0].parse().unwrap();
        assert!((epoch_us - logged_start).abs() < 60_000_000);
        assert_eq!(lines[0][1..8], ["204", "1500", "700", "9", "5", "h2c", "2"]);
        assert_eq!(
            lines[1][1..8],
            ["-1", "40", "-1", "4", "2", "http/1.1", "2"]
        );
        // The scheduled start: 250 µs before the actual one.
        for line in &lines {
            let delay = line[0].parse::<i64>().unwrap() - line[8].parse::<i64>().unwrap();
            assert!((249..=251).contains(&delay), "{line:?}");
        }
    }
}
