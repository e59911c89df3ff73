//! The control stream: the opening of the client's (its SETTINGS), and the parser of the
//! server's unidirectional streams (its control stream's SETTINGS and GOAWAY; the others drained).

use super::varint::{read_varint, write_frame_head, write_varint, Varints};
use super::{
    reserved_http2_frame, H3Error, DATA, GOAWAY, H3_EXCESSIVE_LOAD, H3_FRAME_ERROR,
    H3_FRAME_UNEXPECTED, H3_ID_ERROR, H3_MISSING_SETTINGS, H3_SETTINGS_ERROR, HEADERS,
    MAX_HEADER_LIST, MAX_PUSH_ID, MAX_SETTINGS, PUSH_PROMISE, SETTINGS,
    SETTINGS_MAX_FIELD_SECTION_SIZE, SETTINGS_QPACK_BLOCKED_STREAMS,
    SETTINGS_QPACK_MAX_TABLE_CAPACITY, STREAM_CONTROL, STREAM_PUSH,
};

/// The opening of the client's control stream: its type and the SETTINGS frame (no dynamic
/// table, no blocked streams, field sections up to [`MAX_HEADER_LIST`]).
pub(crate) fn client_control_stream() -> Vec<u8> {
    let mut payload = Vec::new();
    for (id, value) in [
        (SETTINGS_QPACK_MAX_TABLE_CAPACITY, 0),
        (SETTINGS_QPACK_BLOCKED_STREAMS, 0),
        (SETTINGS_MAX_FIELD_SECTION_SIZE, MAX_HEADER_LIST),
    ] {
        write_varint(&mut payload, id);
        write_varint(&mut payload, value);
    }
    let mut out = Vec::new();
    write_varint(&mut out, STREAM_CONTROL);
    write_frame_head(&mut out, SETTINGS, payload.len() as u64);
    out.extend_from_slice(&payload);
    out
}

/// What the server's control stream said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ControlEvent {
    /// One setting of the server's SETTINGS.
    Setting {
        /// Its identifier.
        id: u64,
        /// Its value.
        value: u64,
    },
    /// The end of the server's SETTINGS.
    SettingsDone,
    /// GOAWAY: requests on streams with this id or above were not processed.
    Goaway(u64),
}

/// A unidirectional stream from the server (RFC 9114 §6.2): its type, then for the control
/// stream its frames. QPACK streams carry nothing the client needs (no dynamic table), and
/// unknown (reserved) types are read and ignored; both are drained. A push stream is an
/// error: the client allows no push.
#[derive(Debug, Default)]
pub(crate) struct UniStreamParser {
    kind: Option<u64>,
    head: Varints,
    frame: Option<(u64, u64)>,
    payload: Vec<u8>,
    settings_seen: bool,
    goaway: Option<u64>,
}

impl UniStreamParser {
    /// The stream's type, once read.
    pub(crate) fn kind(&self) -> Option<u64> {
        self.kind
    }

    /// Parses the next bytes of the stream, handing control events to `on`.
    pub(crate) fn feed(
        &mut self,
        mut input: &[u8],
        mut on: impl FnMut(ControlEvent),
    ) -> Result<(), H3Error> {
        if self.kind.is_none() {
            let (used, kind) = self.head.collect(input, 1);
            input = &input[used..];
            let Some([kind, _]) = kind else {
                return Ok(());
            };
            if kind == STREAM_PUSH {
                return Err(H3Error::new(
                    H3_ID_ERROR,
                    "a push stream, though the client allowed no push (no MAX_PUSH_ID)",
                ));
            }
            self.kind = Some(kind);
        }
        if self.kind != Some(STREAM_CONTROL) {
            return Ok(());
        }
        loop {
            match self.frame {
                None => {
                    if input.is_empty() {
                        return Ok(());
                    }
                    let (used, head) = self.head.collect(input, 2);
                    input = &input[used..];
                    if let Some([kind, length]) = head {
                        self.start_control_frame(kind, length)?;
                    }
                }
                Some((kind, left)) => {
                    let take = left.min(input.len() as u64) as usize;
                    if matches!(kind, SETTINGS | GOAWAY) {
                        self.payload.extend_from_slice(&input[..take]);
                    }
                    input = &input[take..];
                    if left > take as u64 {
                        self.frame = Some((kind, left - take as u64));
                        return Ok(());
                    }
                    self.frame = None;
                    match kind {
                        SETTINGS => self.on_settings(&mut on)?,
                        GOAWAY => self.on_goaway(&mut on)?,
                        _ => {}
                    }
                }
            }
        }
    }

    fn start_control_frame(&mut self, kind: u64, length: u64) -> Result<(), H3Error> {
        let unexpected = |reason| Err(H3Error::new(H3_FRAME_UNEXPECTED, reason));
        if !self.settings_seen && kind != SETTINGS {
            return Err(H3Error::new(
                H3_MISSING_SETTINGS,
                "the server's control stream did not start with SETTINGS",
            ));
        }
        match kind {
            SETTINGS if self.settings_seen => return unexpected("a second SETTINGS frame"),
            SETTINGS if length > MAX_SETTINGS => {
                return Err(H3Error::new(
                    H3_EXCESSIVE_LOAD,
                    "a SETTINGS frame larger than 16 KiB",
                ))
            }
            SETTINGS => self.settings_seen = true,
            GOAWAY if length > 8 => {
                return Err(H3Error::new(H3_FRAME_ERROR, "a GOAWAY frame over 8 bytes"))
            }
            DATA | HEADERS | PUSH_PROMISE | MAX_PUSH_ID => {
                return unexpected("a request or client frame on the control stream")
            }
            kind if reserved_http2_frame(kind) => {
                return unexpected("a frame type reserved since HTTP/2")
            }
            _ => {}
        }
        self.payload.clear();
        self.frame = Some((kind, length));
        Ok(())
    }

    fn on_settings(&mut self, on: &mut impl FnMut(ControlEvent)) -> Result<(), H3Error> {
        let malformed = H3Error::new(H3_FRAME_ERROR, "a SETTINGS frame cut inside a setting");
        let mut ids = Vec::new();
        let mut rest = &self.payload[..];
        while !rest.is_empty() {
            let (id, used) = read_varint(rest).ok_or(malformed)?;
            rest = &rest[used..];
            let (value, used) = read_varint(rest).ok_or(malformed)?;
            rest = &rest[used..];
            if (0x02..=0x05).contains(&id) {
                return Err(H3Error::new(
                    H3_SETTINGS_ERROR,
                    "a setting reserved since HTTP/2",
                ));
            }
            ids.push(id);
            on(ControlEvent::Setting { id, value });
        }
        ids.sort_unstable();
        if ids.windows(2).any(|pair| pair[0] == pair[1]) {
            return Err(H3Error::new(H3_SETTINGS_ERROR, "a setting given twice"));
        }
        on(ControlEvent::SettingsDone);
        Ok(())
    }

    fn on_goaway(&mut self, on: &mut impl FnMut(ControlEvent)) -> Result<(), H3Error> {
        let id = match read_varint(&self.payload) {
            Some((id, used)) if used == self.payload.len() => id,
            _ => return Err(H3Error::new(H3_FRAME_ERROR, "a malformed GOAWAY frame")),
        };
        if id % 4 != 0 {
            return Err(H3Error::new(
                H3_ID_ERROR,
                "GOAWAY naming a stream that is not a client request stream",
            ));
        }
        if self.goaway.is_some_and(|previous| id > previous) {
            return Err(H3Error::new(
                H3_ID_ERROR,
                "a GOAWAY raising the id of an earlier one",
            ));
        }
        self.goaway = Some(id);
        on(ControlEvent::Goaway(id));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{frame, varint};
    use super::super::{error_code_name, CANCEL_PUSH, STREAM_QPACK_DECODER, STREAM_QPACK_ENCODER};
    use super::*;

    fn control(frames: &[Vec<u8>]) -> Vec<u8> {
        [varint(STREAM_CONTROL), frames.concat()].concat()
    }

    fn settings(pairs: &[(u64, u64)]) -> Vec<u8> {
        let payload: Vec<u8> = pairs
            .iter()
            .flat_map(|(id, value)| [varint(*id), varint(*value)].concat())
            .collect();
        frame(SETTINGS, &payload)
    }

    fn control_events(stream: &[u8], cut: usize) -> Result<Vec<ControlEvent>, H3Error> {
        let mut parser = UniStreamParser::default();
        let mut events = Vec::new();
        parser.feed(&stream[..cut], |event| events.push(event))?;
        parser.feed(&stream[cut..], |event| events.push(event))?;
        Ok(events)
    }

    #[test]
    fn the_control_stream_parses_split_anywhere() {
        let stream = control(&[
            settings(&[
                (SETTINGS_QPACK_MAX_TABLE_CAPACITY, 4096),
                (0x1f * 3 + 0x21, 7),
            ]),
            frame(0x21, b"ignored"),
            frame(CANCEL_PUSH, &[0]),
            frame(GOAWAY, &varint(400)),
            frame(GOAWAY, &varint(8)),
        ]);
        let expected = vec![
            ControlEvent::Setting {
                id: SETTINGS_QPACK_MAX_TABLE_CAPACITY,
                value: 4096,
            },
            ControlEvent::Setting {
                id: 0x1f * 3 + 0x21,
                value: 7,
            },
            ControlEvent::SettingsDone,
            ControlEvent::Goaway(400),
            ControlEvent::Goaway(8),
        ];
        for cut in 0..=stream.len() {
            assert_eq!(
                control_events(&stream, cut).unwrap(),
                expected,
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn the_clients_control_stream_says_no_dynamic_table() {
        let events = control_events(&client_control_stream(), 0).unwrap();
        assert_eq!(
            events,
            [
                ControlEvent::Setting {
                    id: SETTINGS_QPACK_MAX_TABLE_CAPACITY,
                    value: 0
                },
                ControlEvent::Setting {
                    id: SETTINGS_QPACK_BLOCKED_STREAMS,
                    value: 0
                },
                ControlEvent::Setting {
                    id: SETTINGS_MAX_FIELD_SECTION_SIZE,
                    value: MAX_HEADER_LIST
                },
                ControlEvent::SettingsDone,
            ]
        );
    }

    #[test]
    fn control_stream_violations_are_named() {
        let cases = [
            (control(&[frame(GOAWAY, &[0])]), H3_MISSING_SETTINGS),
            (
                control(&[settings(&[]), settings(&[])]),
                H3_FRAME_UNEXPECTED,
            ),
            (control(&[settings(&[(0x02, 1)])]), H3_SETTINGS_ERROR),
            (
                control(&[settings(&[(0x06, 1), (0x06, 2)])]),
                H3_SETTINGS_ERROR,
            ),
            (control(&[frame(SETTINGS, &[0x06])]), H3_FRAME_ERROR),
            (
                control(&[settings(&[]), frame(DATA, b"")]),
                H3_FRAME_UNEXPECTED,
            ),
            (
                control(&[settings(&[]), frame(0x08, b"")]),
                H3_FRAME_UNEXPECTED,
            ),
            (
                control(&[settings(&[]), frame(GOAWAY, &varint(5))]),
                H3_ID_ERROR,
            ),
            (
                control(&[
                    settings(&[]),
                    frame(GOAWAY, &varint(4)),
                    frame(GOAWAY, &varint(8)),
                ]),
                H3_ID_ERROR,
            ),
            (
                control(&[settings(&[]), frame(GOAWAY, &[0, 0])]),
                H3_FRAME_ERROR,
            ),
            (varint(STREAM_PUSH), H3_ID_ERROR),
        ];
        for (stream, code) in cases {
            let error = control_events(&stream, 0).unwrap_err();
            assert_eq!(
                error_code_name(error.code),
                error_code_name(code),
                "{stream:02x?}"
            );
        }
    }

    #[test]
    fn other_streams_are_drained() {
        for kind in [STREAM_QPACK_ENCODER, STREAM_QPACK_DECODER, 0x21] {
            let mut parser = UniStreamParser::default();
            let stream = [varint(kind), vec![0x3f, 0xe1, 0x1f, 0x00]].concat();
            let mut events = 0;
            parser.feed(&stream, |_| events += 1).unwrap();
            assert_eq!((parser.kind(), events), (Some(kind), 0));
        }
    }
}
