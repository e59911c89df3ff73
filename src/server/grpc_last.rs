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

/// The longest message a call may send: grpc-go's and grpc-java's default receive limit.
const MAX_MESSAGE: u32 = 4 << 20;

/// gRPC's status codes this body ends with.
const OK: &str = "0";
const RESOURCE_EXHAUSTED: &str = "8";
const INTERNAL: &str = "13";

/// The response body of one call answered with its last message.
pub(crate) struct LastMessage {
    echo: Echo,
    reader: MessageReader,
    /// The message being read, prefix included, as slices of the chunks read.
    current: Vec<Bytes>,
    /// The last complete message, as `current` kept it; sent once the call has ended.
    last: VecDeque<Bytes>,
    state: State,
}

/// Where the answer is.
enum State {
    /// Reading the call's messages.
    Reading,
    /// Sending the last message.
    Sending,
    /// The trailers are due.
    Ending(HeaderMap),
    /// Everything was sent.
    Done,
}

impl LastMessage {
    pub(crate) fn new(echo: Echo) -> LastMessage {
        LastMessage {
            echo,
            reader: MessageReader::default(),
            current: Vec::new(),
            last: VecDeque::new(),
            state: State::Reading,
        }
    }

    /// Splits `chunk` into the message being read and, where one completes, the last message.
    fn read(&mut self, chunk: &Bytes) -> Result<(), FramingError> {
        let mut start = 0;
        let (current, last) = (&mut self.current, &mut self.last);
        self.reader.feed(chunk, false, MAX_MESSAGE, |message| {
            current.push(chunk.slice(start..message.end));
            // The message before goes, and with it the room its chunks held.
            *last = std::mem::take(current).into();
            start = message.end;
        })?;
        if start < chunk.len() {
            self.current.push(chunk.slice(start..));
        }
        Ok(())
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
                            if let Err(error) = this.read(&chunk) {
                                this.current.clear();
                                this.last.clear();
                                this.state = State::Ending(framing_trailers(error));
                            }
                        }
                    }
                    Some(Err(error)) => return Poll::Ready(Some(Err(error))),
                    None if this.reader.at_boundary() => this.state = State::Sending,
                    None => {
                        this.current.clear();
                        this.last.clear();
                        let why = "the call ended inside a message".to_owned();
                        this.state = State::Ending(trailers(INTERNAL, Some(why)));
                    }
                },
                State::Sending => match this.last.pop_front() {
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
