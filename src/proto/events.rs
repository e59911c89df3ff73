//! Event streams inside a response body: server-sent events (WHATWG HTML §9.2.6,
//! `text/event-stream`) and newline-delimited JSON (`application/x-ndjson`, `application/jsonl`:
//! one event per line). No I/O and no line kept: [`EventReader`] is fed body bytes as they
//! arrive, split anywhere, and counts the events they complete and their data bytes; a line or an
//! event's data longer than the plan's limit is an error, so a server that never ends a line
//! costs a counter, not memory. [`ResponseEvents`] is one response's reading, as the HTTP/1.1,
//! HTTP/2 and HTTP/3 readers keep it.

use std::fmt;

/// How an event stream frames its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventFormat {
    /// Server-sent events: `data:` lines, an empty line ends an event.
    Sse,
    /// One event per line (NDJSON, JSON Lines).
    Ndjson,
}

impl EventFormat {
    /// The format a `content-type` value names (its first bytes: see
    /// [`super::fields::MediaType::of`]), if any: media types are case-insensitive, and
    /// parameters (`; charset=utf-8`) are ignored.
    pub(crate) fn of_content_type(value: &[u8]) -> Option<EventFormat> {
        let essence = value.split(|&byte| byte == b';').next()?.trim_ascii();
        let is = |name: &str| essence.eq_ignore_ascii_case(name.as_bytes());
        if is("text/event-stream") {
            Some(EventFormat::Sse)
        } else if [
            "application/x-ndjson",
            "application/ndjson",
            "application/jsonl",
            "application/x-jsonlines",
        ]
        .into_iter()
        .any(is)
        {
            Some(EventFormat::Ndjson)
        } else {
            None
        }
    }
}

/// What a run reads as events (`--events`, `--max-event-size`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EventPlan {
    /// Every response read in this format (`--events sse|ndjson`); `None`: by its content-type.
    pub(crate) forced: Option<EventFormat>,
    /// The longest line, and the most data of one event, in bytes.
    pub(crate) limit: u64,
}

impl EventPlan {
    /// The format a final response is read in, given what its content-type names.
    pub(crate) fn format_for(&self, named: Option<EventFormat>) -> Option<EventFormat> {
        self.forced.or(named)
    }
}

/// Why an event stream could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventError {
    /// A line, or one event's data, went past the limit.
    TooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
}

impl fmt::Display for EventError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventError::TooLarge { limit } => write!(
                f,
                "an event line or event data longer than --max-event-size ({limit} bytes)"
            ),
        }
    }
}

/// What a stream's reading came to.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EventsRead {
    /// Events completed.
    pub(crate) events: u64,
    /// Their data bytes (SSE: the data buffer as dispatched, its lines joined by LF; NDJSON:
    /// the lines without their line endings).
    pub(crate) data_bytes: u64,
}

/// Where in a line an SSE reader is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sse {
    /// At a line's first byte.
    LineStart,
    /// In a comment (`:` first), ignored to its end.
    Comment,
    /// In a field's name: its first bytes (a name longer than `data` needs no more).
    Name { name: [u8; 5], len: u8 },
    /// In a field's value; `data` when the field is `data`; `space`: a leading space is still
    /// to be dropped.
    Value { data: bool, space: bool },
}

/// The sans-IO reader of one event stream.
#[derive(Debug)]
pub(crate) struct EventReader {
    format: EventFormat,
    limit: u64,
    /// Bytes of a leading BOM (EF BB BF) matched so far; 3 once past the stream's start.
    bom: u8,
    /// The last byte was CR: an LF right after it ends no second line.
    after_cr: bool,
    sse: Sse,
    /// Bytes of the current line so far.
    line: u64,
    /// SSE: the current event's data buffer length (each data line's value and an LF), and
    /// whether a data field was seen (an event without one is not dispatched). NDJSON: whether
    /// the line has a byte other than a space or tab.
    data: u64,
    has_data: bool,
    read: EventsRead,
}

const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

impl EventReader {
    /// A reader of a stream in `format` whose lines and event data are at most `limit` bytes.
    pub(crate) fn new(format: EventFormat, limit: u64) -> Self {
        EventReader {
            format,
            limit,
            bom: 0,
            after_cr: false,
            sse: Sse::LineStart,
            line: 0,
            data: 0,
            has_data: false,
            read: EventsRead::default(),
        }
    }

    /// Reads the next body bytes: how many events they completed.
    pub(crate) fn feed(&mut self, mut bytes: &[u8]) -> Result<u64, EventError> {
        let before = self.read.events;
        while self.bom < 3 {
            let Some((&first, rest)) = bytes.split_first() else {
                return Ok(0);
            };
            if first != BOM[usize::from(self.bom)] {
                // Not a BOM after all: the bytes matched so far are the line's.
                self.line += u64::from(self.bom);
                if self.bom > 0 {
                    self.sse = Sse::Name {
                        name: [0; 5],
                        len: 5,
                    };
                }
                self.bom = 3;
                break;
            }
            self.bom += 1;
            bytes = rest;
        }
        while !bytes.is_empty() {
            if std::mem::take(&mut self.after_cr) && bytes[0] == b'\n' {
                bytes = &bytes[1..];
                continue;
            }
            let end = memchr::memchr2(b'\n', b'\r', bytes);
            let segment = &bytes[..end.unwrap_or(bytes.len())];
            self.line += segment.len() as u64;
            match self.format {
                EventFormat::Sse => self.sse_segment(segment),
                EventFormat::Ndjson => {
                    self.has_data |= segment.iter().any(|&byte| byte != b' ' && byte != b'\t');
                }
            }
            if self.line > self.limit || self.data > self.limit {
                return Err(EventError::TooLarge { limit: self.limit });
            }
            let Some(end) = end else {
                break;
            };
            self.after_cr = bytes[end] == b'\r';
            self.end_line();
            bytes = &bytes[end + 1..];
        }
        Ok(self.read.events - before)
    }

    /// A part of an SSE line, no line ending in it.
    fn sse_segment(&mut self, mut segment: &[u8]) {
        while let Some(&first) = segment.first() {
            match &mut self.sse {
                Sse::LineStart if first == b':' => {
                    self.sse = Sse::Comment;
                    return;
                }
                Sse::LineStart => {
                    self.sse = Sse::Name {
                        name: [0; 5],
                        len: 0,
                    }
                }
                Sse::Comment => return,
                Sse::Name { name, len } => {
                    let colon = memchr::memchr(b':', segment);
                    let part = &segment[..colon.unwrap_or(segment.len())];
                    for &byte in part {
                        if usize::from(*len) < name.len() {
                            name[usize::from(*len)] = byte;
                        }
                        *len = len.saturating_add(1);
                    }
                    let Some(colon) = colon else {
                        return;
                    };
                    let data = &name[..usize::from(*len).min(5)] == b"data" && *len == 4;
                    self.has_data |= data;
                    self.sse = Sse::Value { data, space: true };
                    segment = &segment[colon + 1..];
                }
                Sse::Value { data, space } => {
                    if std::mem::take(space) && first == b' ' {
                        segment = &segment[1..];
                        continue;
                    }
                    if *data {
                        self.data += segment.len() as u64;
                    }
                    return;
                }
            }
        }
    }

    /// A line ended.
    fn end_line(&mut self) {
        match self.format {
            EventFormat::Sse => {
                match self.sse {
                    Sse::LineStart => {
                        if std::mem::take(&mut self.has_data) {
                            self.read.events += 1;
                            // The buffer's last LF is removed at dispatch.
                            self.read.data_bytes += self.data.saturating_sub(1);
                        }
                        self.data = 0;
                    }
                    Sse::Name { name, len } => {
                        // A line of a name alone: the field, with an empty value.
                        if len == 4 && &name[..4] == b"data" {
                            self.has_data = true;
                            self.data += 1;
                        }
                    }
                    Sse::Value { data: true, .. } => self.data += 1,
                    Sse::Value { .. } | Sse::Comment => {}
                }
                self.sse = Sse::LineStart;
            }
            EventFormat::Ndjson => self.end_ndjson_line(),
        }
        self.line = 0;
    }

    fn end_ndjson_line(&mut self) {
        if std::mem::take(&mut self.has_data) {
            self.read.events += 1;
            self.read.data_bytes += self.line;
        }
    }

    /// The stream ended: what it read, and how many events its end completed (an NDJSON line
    /// without its newline is one; an SSE event without its empty line is not, as in a browser).
    pub(crate) fn finish(mut self) -> (u64, EventsRead) {
        let before = self.read.events;
        if self.format == EventFormat::Ndjson {
            self.end_ndjson_line();
        }
        (self.read.events - before, self.read)
    }
}

/// One response's event reading, kept by a protocol's response reader: started by a final
/// response's head, fed its body, ended with it.
#[derive(Debug, Default)]
pub(crate) struct ResponseEvents {
    /// How bodies are read as events (`None`: never).
    plan: Option<EventPlan>,
    reader: Option<EventReader>,
    /// A reading began and was not yet taken.
    opened: bool,
    /// Events completed and not yet taken.
    arrived: u64,
    error: Option<EventError>,
}

impl ResponseEvents {
    /// Responses read as `plan` says.
    pub(crate) fn new(plan: Option<EventPlan>) -> Self {
        ResponseEvents {
            plan,
            ..ResponseEvents::default()
        }
    }

    /// A final response's head arrived, its content-type naming `named`: read its body as
    /// events if the plan says so.
    pub(crate) fn head(&mut self, named: Option<EventFormat>) {
        self.reader = self.plan.and_then(|plan| {
            plan.format_for(named)
                .map(|format| EventReader::new(format, plan.limit))
        });
        self.opened = self.reader.is_some();
        self.arrived = 0;
        self.error = None;
    }

    /// Body bytes of the response.
    pub(crate) fn body(&mut self, bytes: &[u8]) {
        if self.error.is_some() {
            return;
        }
        if let Some(reader) = &mut self.reader {
            match reader.feed(bytes) {
                Ok(events) => self.arrived += events,
                Err(error) => self.error = Some(error),
            }
        }
    }

    /// Whether a reading began since the last call.
    pub(crate) fn take_opened(&mut self) -> bool {
        std::mem::take(&mut self.opened)
    }

    /// Events completed since the last call.
    pub(crate) fn take_arrived(&mut self) -> u64 {
        std::mem::take(&mut self.arrived)
    }

    /// Why the stream cannot be read on, once it cannot.
    pub(crate) fn error(&self) -> Option<EventError> {
        self.error
    }

    /// The response ended: what its stream read (`None` unless it was read as events); the
    /// events its end completed are then to take (none after an error: the stream was cut).
    pub(crate) fn end(&mut self) -> Option<EventsRead> {
        let reader = self.reader.take()?;
        if self.error.is_some() {
            return Some(reader.read);
        }
        let (last, read) = reader.finish();
        self.arrived += last;
        Some(read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `wire` in pieces of `piece` bytes: the events each piece completed, the totals.
    fn read(format: EventFormat, wire: &[u8], piece: usize) -> (Vec<u64>, EventsRead) {
        let mut reader = EventReader::new(format, 1 << 20);
        let mut completed: Vec<u64> = wire
            .chunks(piece)
            .map(|chunk| reader.feed(chunk).expect("within the limit"))
            .collect();
        let (last, read) = reader.finish();
        completed.push(last);
        (completed, read)
    }

    #[test]
    fn server_sent_events_follow_the_whatwg_parsing_split_anywhere() {
        // A BOM; CRLF, CR and LF endings; comments; an event with two data lines (joined by LF:
        // "a" + LF + "bc" = 4 bytes); a leading space dropped once; `event:`/`id:`/`retry:`
        // without data (not dispatched); `data` alone (an empty data line: 0 bytes); a field
        // named `datax` (ignored); and an unfinished event at the end (not dispatched).
        let wire = b"\xEF\xBB\xBF: hello\r\ndata: a\r\ndata:bc\r\n\r\nevent: x\nid: 1\nretry: 18446744073709551616\n\n\
data\n\ndatax: no\n\rdata:  two spaces\r\rdata: cut";
        for piece in 1..=wire.len() {
            let (completed, read) = read(EventFormat::Sse, wire, piece);
            assert_eq!(completed.iter().sum::<u64>(), 3, "piece {piece}");
            assert_eq!(*completed.last().unwrap(), 0, "piece {piece}");
            assert_eq!(
                read,
                EventsRead {
                    events: 3,
                    data_bytes: 4 + " two spaces".len() as u64
                },
                "piece {piece}"
            );
        }
    }

    #[test]
    fn an_event_completes_at_its_empty_line_not_before() {
        let mut reader = EventReader::new(EventFormat::Sse, 64);
        assert_eq!(reader.feed(b"data: 1\n").unwrap(), 0);
        assert_eq!(reader.feed(b"\n").unwrap(), 1);
        assert_eq!(reader.feed(b"data: 2\n\ndata: 3\n\n").unwrap(), 2);
    }

    #[test]
    fn ndjson_is_one_event_per_non_blank_line_and_a_last_line_without_newline_counts() {
        let wire = b"{\"a\":1}\r\n\n  \n{\"b\":22}\n{\"c\":3}";
        for piece in 1..=wire.len() {
            let (completed, read) = read(EventFormat::Ndjson, wire, piece);
            assert_eq!(*completed.last().unwrap(), 1, "piece {piece}");
            assert_eq!(
                read,
                EventsRead {
                    events: 3,
                    data_bytes: 7 + 8 + 7
                },
                "piece {piece}"
            );
        }
    }

    #[test]
    fn a_line_or_data_past_the_limit_is_an_error_without_keeping_it() {
        // A line that never ends, fed 1 MiB at a time: refused once past the limit.
        let mut endless = EventReader::new(EventFormat::Sse, 4096);
        let chunk = vec![b'x'; 1 << 20];
        assert_eq!(
            endless.feed(&chunk),
            Err(EventError::TooLarge { limit: 4096 })
        );
        // Data lines each within the limit, whose event's data is not.
        let mut joined = EventReader::new(EventFormat::Sse, 12);
        assert_eq!(joined.feed(b"data: 123456\n").unwrap(), 0);
        assert!(joined.feed(b"data: 123456\n").is_err());
        // NDJSON: a line at the limit is fine, one byte more is not.
        let mut lines = EventReader::new(EventFormat::Ndjson, 4);
        assert_eq!(lines.feed(b"1234\n").unwrap(), 1);
        assert!(lines.feed(b"12345").is_err());
    }

    #[test]
    fn content_types_name_formats_case_insensitively_with_parameters() {
        for (value, format) in [
            (&b"text/event-stream"[..], Some(EventFormat::Sse)),
            (b"Text/Event-Stream; charset=utf-8", Some(EventFormat::Sse)),
            (b"application/x-ndjson", Some(EventFormat::Ndjson)),
            (b"application/jsonl", Some(EventFormat::Ndjson)),
            (b"application/json", None),
            (b"text/event-streams", None),
            (b"", None),
        ] {
            assert_eq!(
                EventFormat::of_content_type(value),
                format,
                "{}",
                value.escape_ascii()
            );
        }
    }

    #[test]
    fn a_response_reads_events_only_as_its_plan_and_content_type_say() {
        let plan = EventPlan {
            forced: None,
            limit: 64,
        };
        let mut events = ResponseEvents::new(Some(plan));
        events.head(None);
        events.body(b"data: 1\n\n");
        assert_eq!((events.take_arrived(), events.end()), (0, None));
        events.head(Some(EventFormat::Ndjson));
        events.body(b"{}\n{}");
        assert_eq!(events.take_arrived(), 1);
        assert_eq!(events.end().map(|read| read.events), Some(2));
        assert_eq!(events.take_arrived(), 1, "the last line, at the end");
        let mut off = ResponseEvents::new(None);
        off.head(Some(EventFormat::Sse));
        off.body(b"data: 1\n\n");
        assert_eq!(off.end(), None, "--events off");
        let forced = EventPlan {
            forced: Some(EventFormat::Sse),
            limit: 4,
        };
        let mut events = ResponseEvents::new(Some(forced));
        events.head(None);
        events.body(b"data: 12345\n");
        assert_eq!(events.error(), Some(EventError::TooLarge { limit: 4 }));
    }
}
