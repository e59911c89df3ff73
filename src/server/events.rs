//! The target's event streams: `/sse/N/GAP_MS[/SIZE]` (server-sent events) and
//! `/ndjson/N/GAP_MS[/SIZE]` (one JSON string per line) send N events, the k-th k × GAP_MS after
//! the response head, each of SIZE data bytes (default 16), on a schedule that does not drift:
//! the truth the client's time to first event, gaps and event counts are tested against.
//! Bounded as the other routes are: at most [`MAX_EVENTS`] events of at most [`MAX_SIZE`]
//! bytes, gaps of at most a minute.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::HeaderValue;

use crate::time::sleep_until_precisely;

/// The most events one stream sends.
pub(super) const MAX_EVENTS: u64 = 1_000_000;
/// The most data bytes of one event.
pub(super) const MAX_SIZE: usize = 64 * 1024;
/// The longest gap between events.
const MAX_GAP: Duration = Duration::from_secs(60);
/// Data bytes of an event when the path does not say.
const DEFAULT_SIZE: usize = 16;

/// How the stream frames its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Framing {
    /// `data: xxx` and an empty line.
    Sse,
    /// `"xxx"` and a newline: a JSON string of SIZE bytes, quotes included.
    Ndjson,
}

/// An event stream to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct EventStream {
    framing: Framing,
    count: u64,
    gap: Duration,
    size: usize,
}

impl EventStream {
    /// The stream `N/GAP_MS[/SIZE]` asks for, or why it is refused.
    pub(super) fn parse(framing: Framing, rest: &str) -> Result<EventStream, &'static str> {
        let mut parts = rest.split('/');
        let count = parts.next().and_then(|count| count.parse::<u64>().ok());
        let gap = parts
            .next()
            .and_then(|millis| millis.parse::<f64>().ok())
            .and_then(|millis| Duration::try_from_secs_f64(millis / 1000.0).ok());
        let size = match parts.next() {
            None => Some(DEFAULT_SIZE),
            Some(size) => size.parse::<usize>().ok(),
        };
        let least = match framing {
            Framing::Sse => 0,
            Framing::Ndjson => 2,
        };
        match (count, gap, size, parts.next()) {
            (Some(count), Some(gap), Some(size), None)
                if count <= MAX_EVENTS && gap <= MAX_GAP && (least..=MAX_SIZE).contains(&size) =>
            {
                Ok(EventStream {
                    framing,
                    count,
                    gap,
                    size,
                })
            }
            _ => Err(match framing {
                Framing::Sse => "/sse/N/GAP_MS[/SIZE]: at most 1000000 events, a gap of at most 60000 ms, at most 65536 data bytes each",
                Framing::Ndjson => "/ndjson/N/GAP_MS[/SIZE]: at most 1000000 events, a gap of at most 60000 ms, 2 to 65536 bytes each",
            }),
        }
    }

    /// The response's content-type.
    pub(super) fn content_type(&self) -> HeaderValue {
        HeaderValue::from_static(match self.framing {
            Framing::Sse => "text/event-stream",
            Framing::Ndjson => "application/x-ndjson",
        })
    }

    /// The bytes of one event (every event is the same).
    fn event(&self) -> Bytes {
        let mut event = Vec::with_capacity(self.size + 8);
        match self.framing {
            Framing::Sse => {
                event.extend_from_slice(b"data: ");
                event.resize(6 + self.size, b'x');
                event.extend_from_slice(b"\n\n");
            }
            Framing::Ndjson => {
                event.push(b'"');
                event.resize(self.size - 1, b'x');
                event.extend_from_slice(b"\"\n");
            }
        }
        Bytes::from(event)
    }

    /// The events, each when its time comes, counted from `head` (the response head's send).
    pub(super) fn schedule(&self, head: Instant) -> Schedule {
        Schedule {
            event: self.event(),
            sent: 0,
            count: self.count,
            gap: self.gap,
            head,
            wait: None,
        }
    }
}

/// A stream's events in time: [`Schedule::next`] for the HTTP/3 front end, [`Schedule::poll_next`]
/// for hyper's body.
pub(super) struct Schedule {
    event: Bytes,
    sent: u64,
    count: u64,
    gap: Duration,
    head: Instant,
    wait: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl Schedule {
    /// Events still to send.
    pub(super) fn left(&self) -> u64 {
        self.count - self.sent
    }

    /// The next event once its time has come (`None`: the stream is over).
    pub(super) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        if self.sent == self.count {
            return Poll::Ready(None);
        }
        let due = self.head + self.gap * u32::try_from(self.sent + 1).unwrap_or(u32::MAX);
        let wait = self
            .wait
            .get_or_insert_with(|| Box::pin(sleep_until_precisely(due)));
        std::task::ready!(wait.as_mut().poll(cx));
        self.wait = None;
        self.sent += 1;
        Poll::Ready(Some(self.event.clone()))
    }

    /// The next event once its time has come (`None`: the stream is over).
    pub(super) async fn next(&mut self) -> Option<Bytes> {
        std::future::poll_fn(|cx| self.poll_next(cx)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_streams_within_the_bounds() {
        let sse = EventStream::parse(Framing::Sse, "3/2.5").unwrap();
        assert_eq!(
            (sse.count, sse.gap, sse.size),
            (3, Duration::from_micros(2500), 16)
        );
        assert_eq!(&sse.event()[..], b"data: xxxxxxxxxxxxxxxx\n\n");
        let ndjson = EventStream::parse(Framing::Ndjson, "1/0/4").unwrap();
        assert_eq!(&ndjson.event()[..], b"\"xx\"\n");
        for rest in [
            "",
            "3",
            "x/1",
            "3/-1",
            "3/60001",
            "1000001/1",
            "3/1/65537",
            "3/1/4/5",
        ] {
            assert!(EventStream::parse(Framing::Sse, rest).is_err(), "{rest}");
        }
        assert!(EventStream::parse(Framing::Ndjson, "3/1/1").is_err());
    }
}
