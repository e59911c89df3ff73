//! A gRPC call answered as a client-streaming method answers it (`serve --grpc-reply last`):
//! nothing while the client sends, then, once it has half-closed, the last message it sent and
//! `grpc-status: 0`. The messages are kept as the chunks the echo read them in, each holding its
//! room in the echo budget, so what a call keeps (the message being read and the last one) is
//! bounded as an echo's bytes are. A message over [`MAX_MESSAGE`] ends the call at once with
//! `RESOURCE_EXHAUSTED`, a malformed prefix or a message cut short by the end with `INTERNAL`,
//! as a gRPC server's own framing does.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue};
use http_body::{Body, Frame};

use super::echo::Echo;
use crate::proto::grpc::{FramingError, MessageReader};

/// How the built-in target answers a gRPC call (`serve --grpc-reply`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum GrpcReply {
    /// Every message back as it arrives, then `grpc-status: 0`.
    #[default]
    Echo,
    /// Once the request has ended, its last message, then `grpc-status: 0`.
    Last,
}

/// The longest message a call may send: grpc-go's and grpc-java's default receive limit.
const MAX_MESSAGE: u32 = 4 << 20;

/// gRPC's status codes this body ends with.
const OK: &str = "0";
const RESOURCE_EXHAUSTED: &str = "8";
const INTERNAL: &str = "13";

/// The most slices the message being read may be in beyond one per KiB of it: a slice's own
/// bookkeeping (about 100 bytes with its chunk's) is outside the echo budget, so a client that
/// sends a message one byte a DATA frame is stopped before its slices outweigh its bytes.
const SPARE_PIECES: usize = 64;

/// What a call keeps of its messages: the one being read and the last complete one.
#[derive(Default)]
struct Kept {
    reader: MessageReader,
    /// The message being read, prefix included, as slices of the chunks read.
    current: Vec<Bytes>,
    /// Its bytes so far.
    current_len: usize,
    /// The last complete message, as `current` kept it; sent once the call has ended.
    last: VecDeque<Bytes>,
}

impl Kept {
    /// Splits `chunk` into the message being read and, where one completes, the last message;
    /// the trailers that end the call at once when its messages cannot be kept.
    fn read(&mut self, chunk: &Bytes) -> Result<(), HeaderMap> {
        let mut start = 0;
        let (current, current_len, last) =
            (&mut self.current, &mut self.current_len, &mut self.last);
        self.reader
            .feed(chunk, false, MAX_MESSAGE, |message| {
                current.push(chunk.slice(start..message.end));
                // The message before goes, and with it the room its chunks held.
                *last = std::mem::take(current).into();
                *current_len = 0;
                start = message.end;
            })
            .map_err(framing_trailers)?;
        if start < chunk.len() {
            self.current.push(chunk.slice(start..));
            self.current_len += chunk.len() - start;
            if self.current.len() > SPARE_PIECES + self.current_len / 1024 {
                let why =
                    format!("a message in more than {SPARE_PIECES} pieces and one per KiB of it");
                return Err(trailers(RESOURCE_EXHAUSTED, Some(why)));
            }
        }
        Ok(())
    }

    /// The last message to send once the call has ended, or the trailers when it ended inside
    /// one.
    fn finish(&mut self) -> Result<VecDeque<Bytes>, HeaderMap> {
        match self.reader.at_boundary() {
            true => Ok(std::mem::take(&mut self.last)),
            false => {
                let why = "the call ended inside a message".to_owned();
                Err(trailers(INTERNAL, Some(why)))
            }
        }
    }
}

/// The response body of one call answered with its last message.
pub(crate) struct LastMessage {
    echo: Echo,
    kept: Kept,
    state: State,
}

/// Where the answer is.
enum State {
    /// Reading the call's messages.
    Reading,
    /// Sending the last message.
    Sending(VecDeque<Bytes>),
    /// The trailers are due.
    Ending(HeaderMap),
    /// Everything was sent.
    Done,
}

impl LastMessage {
    pub(crate) fn new(echo: Echo) -> LastMessage {
        LastMessage {
            echo,
            kept: Kept::default(),
            state: State::Reading,
        }
    }
}

/// Trailers with `status` and, when it is not OK, a `grpc-message` saying why.
fn trailers(status: &'static str, why: Option<String>) -> HeaderMap {
    let mut fields = HeaderMap::new();
    fields.insert("grpc-status", HeaderValue::from_static(status));
    // The descriptions are printable ASCII without '%': valid as they are, percent-encoding
    // leaves them alone.
    if let Some(value) = why.and_then(|why| HeaderValue::try_from(why).ok()) {
        fields.insert("grpc-message", value);
    }
    fields
}

/// The trailers that end a call whose messages could not be read.
fn framing_trailers(error: FramingError) -> HeaderMap {
    let status = match error {
        FramingError::TooLarge(_) => RESOURCE_EXHAUSTED,
        FramingError::BadFlag(_) | FramingError::CompressedWithoutEncoding => INTERNAL,
    };
    trailers(status, Some(error.describe(MAX_MESSAGE)))
}

impl Body for LastMessage {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = &mut *self;
        loop {
            match &mut this.state {
                State::Reading => match ready!(Pin::new(&mut this.echo).poll_frame(cx)) {
                    Some(Ok(frame)) => {
                        // A request's trailers (gRPC sends none) are not part of the answer.
                        if let Ok(chunk) = frame.into_data() {
                            if let Err(fields) = this.kept.read(&chunk) {
                                // What was kept goes now, and its room with it.
                                this.kept = Kept::default();
                                this.state = State::Ending(fields);
                            }
                        }
                    }
                    Some(Err(error)) => return Poll::Ready(Some(Err(error))),
                    None => {
                        this.state = match this.kept.finish() {
                            Ok(last) => State::Sending(last),
                            Err(fields) => State::Ending(fields),
                        };
                        this.kept = Kept::default();
                    }
                },
                State::Sending(last) => match last.pop_front() {
                    Some(chunk) => return Poll::Ready(Some(Ok(Frame::data(chunk)))),
                    None => this.state = State::Ending(trailers(OK, None)),
                },
                State::Ending(fields) => {
                    let fields = std::mem::take(fields);
                    this.state = State::Done;
                    return Poll::Ready(Some(Ok(Frame::trailers(fields))));
                }
                State::Done => return Poll::Ready(None),
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.state, State::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A framed message of `len` bytes of `byte`.
    fn framed(len: usize, byte: u8) -> Vec<u8> {
        let mut out = Vec::new();
        crate::proto::grpc::write_prefix(&mut out, len);
        out.resize(out.len() + len, byte);
        out
    }

    fn status(fields: &HeaderMap) -> (&str, &str) {
        let text = |name: &str| fields.get(name).map_or("", |v| v.to_str().unwrap_or("?"));
        (text("grpc-status"), text("grpc-message"))
    }

    #[test]
    fn the_last_message_is_kept_whatever_the_pieces() {
        let body = [framed(3, 1), framed(300, 2), framed(5, 3)].concat();
        // In pieces of 5 bytes or more: the 305-byte message stays within 64 pieces.
        for piece in [5, 7, 64, body.len()] {
            let mut kept = Kept::default();
            for chunk in body.chunks(piece) {
                kept.read(&Bytes::copy_from_slice(chunk)).unwrap();
            }
            let last: Vec<u8> = kept.finish().unwrap().into_iter().flatten().collect();
            assert_eq!(last, framed(5, 3), "pieces of {piece}");
        }
    }

    #[test]
    fn a_call_that_cannot_be_kept_ends_with_its_status() {
        // Cut inside a message.
        let mut kept = Kept::default();
        kept.read(&Bytes::from(framed(10, 1)[..8].to_vec()))
            .unwrap();
        assert_eq!(
            status(&kept.finish().unwrap_err()),
            ("13", "the call ended inside a message")
        );
        // Longer than a server takes.
        let mut kept = Kept::default();
        let prefix = Bytes::from(
            framed(0, 0)[..1]
                .iter()
                .chain(&(5u32 << 20).to_be_bytes())
                .copied()
                .collect::<Vec<u8>>(),
        );
        let fields = kept.read(&prefix).unwrap_err();
        assert_eq!(status(&fields).0, "8");
        // One byte a piece: stopped at 64 pieces and one per KiB, well before its 100,000 bytes.
        let body = framed(100_000, 7);
        let mut kept = Kept::default();
        let stopped = body
            .chunks(1)
            .position(|byte| kept.read(&Bytes::copy_from_slice(byte)).is_err())
            .unwrap();
        // The 65th piece (index 64) is one too many.
        assert_eq!(stopped, SPARE_PIECES, "stopped at byte {stopped}");
        // In 16 KiB pieces, as clients send it, the same message is kept whole.
        let mut kept = Kept::default();
        for chunk in body.chunks(16 << 10) {
            kept.read(&Bytes::copy_from_slice(chunk)).unwrap();
        }
        assert_eq!(kept.finish().unwrap().len(), body.len().div_ceil(16 << 10));
    }
}
