//! Messages inside a request's stream, whatever protocol frames them (gRPC today; server-sent
//! events and WebSocket are to use it too): a session reports a message sent, messages received
//! whole at a time `now` it passes in, and the stream's end, and the figures are computed here
//! once for every protocol: time to the first message, the round trip of message k when replies
//! pair with sends, the gaps between received messages, and messages and bytes each way.
//! Messages received are counted twice: as they arrive (each records a time to first message
//! or a gap, so a stream cut short keeps its count) and, with their bytes, when a stream ends.
//!
//! [`MessageStream`] is one stream's state, kept by the session beside its own framing;
//! [`MessageFigures`] is a thread's figures, part of the [`Recorder`](super::Recorder). The gaps
//! of an event stream are its event gaps; gRPC reports none.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::hdr::new_histogram;
use super::micros;

// The docs of the type and its fields are the JSON schema's (docs/report.schema.json), written
// for gRPC, the one protocol that reports them: for another, `prefix_bytes` is its framing's.
/// Messages and their bytes in one direction.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
pub(crate) struct MessageBytes {
    /// Complete messages.
    pub(crate) messages: u64,
    /// Their bytes, prefixes excluded (the protobuf bytes).
    pub(crate) message_bytes: u64,
    /// The bytes of their 5-byte prefixes (and of a prefix cut short).
    pub(crate) prefix_bytes: u64,
}

impl MessageBytes {
    /// Adds `other`.
    pub(crate) fn add(&mut self, other: MessageBytes) {
        self.messages += other.messages;
        self.message_bytes += other.message_bytes;
        self.prefix_bytes += other.prefix_bytes;
    }
}

/// The message figures of one received message, computed by [`MessageStream::received`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct MessageTimes {
    /// The stream's first message: how long after the stream opened it arrived.
    pub(crate) first: Option<Duration>,
    /// Replies pairing with sends: how long after the oldest unanswered message left this one,
    /// its reply, arrived.
    pub(crate) round_trip: Option<Duration>,
    /// A message after the first: how long after the one before it arrived.
    pub(crate) gap: Option<Duration>,
}

/// One stream's messages so far, kept by its session.
#[derive(Debug)]
pub(crate) struct MessageStream {
    opened: Instant,
    /// Whether each received message is the reply to the oldest message not answered yet.
    replies_pair: bool,
    received: u64,
    last_received: Option<Instant>,
    /// When each message not answered yet left (`replies_pair` only).
    unanswered: VecDeque<Instant>,
}

impl MessageStream {
    /// A stream opened at `opened` (its request's send); `replies_pair`: each message received
    /// answers the oldest sent and not answered yet (a bidirectional gRPC call).
    pub(crate) fn opened(opened: Instant, replies_pair: bool) -> Self {
        MessageStream {
            opened,
            replies_pair,
            received: 0,
            last_received: None,
            unanswered: VecDeque::new(),
        }
    }

    /// A message's last byte left at `now`: its reply's round trip counts from then.
    pub(crate) fn left(&mut self, now: Instant) {
        if self.replies_pair {
            self.unanswered.push_back(now);
        }
    }

    /// Messages that left and are not answered yet (0 unless replies pair with sends).
    pub(crate) fn unanswered(&self) -> usize {
        self.unanswered.len()
    }

    /// A message arrived whole at `now`: its figures.
    pub(crate) fn received(&mut self, now: Instant) -> MessageTimes {
        let times = MessageTimes {
            first: (self.received == 0).then(|| now.saturating_duration_since(self.opened)),
            round_trip: self
                .unanswered
                .pop_front()
                .map(|sent| now.saturating_duration_since(sent)),
            gap: self
                .last_received
                .map(|last| now.saturating_duration_since(last)),
        };
        self.received += 1;
        self.last_received = Some(now);
        times
    }
}

/// A thread's (or run's) message figures: zero and `None` in cells without message streams.
#[derive(Debug, Clone, Default)]
pub(crate) struct MessageFigures {
    /// Event streams begun: responses whose head had them read as events (gRPC calls are
    /// counted as requests instead).
    pub(crate) streams: u64,
    /// Messages sent, their bytes and their framing's.
    pub(crate) sent: MessageBytes,
    /// Messages received, their bytes and their framing's, counted when their stream ended.
    pub(crate) received: MessageBytes,
    /// From a stream's opening to its first message (created by the first).
    pub(crate) first_message: Option<Histogram<u64>>,
    /// Replies pairing with sends: from a message's send to its reply (created by the first).
    pub(crate) round_trip: Option<Histogram<u64>>,
    /// Between one received message and the next on a stream (created by the first).
    pub(crate) gaps: Option<Histogram<u64>>,
}

impl MessageFigures {
    /// Messages received, counted as they arrived: each records a time to first message or a
    /// gap, never both.
    pub(crate) fn arrived(&self) -> u64 {
        [&self.first_message, &self.gaps]
            .into_iter()
            .flatten()
            .map(Histogram::len)
            .sum()
    }

    /// Records a received message's figures.
    pub(crate) fn record(&mut self, times: MessageTimes) {
        for (histogram, time) in [
            (&mut self.first_message, times.first),
            (&mut self.round_trip, times.round_trip),
            (&mut self.gaps, times.gap),
        ] {
            if let Some(time) = time {
                histogram
                    .get_or_insert_with(new_histogram)
                    .saturating_record(micros(time));
            }
        }
    }

    /// Adds another thread's figures (a histogram moves where this side has none: no third
    /// ~180 KB histogram for a sum of one).
    pub(crate) fn merge(&mut self, other: MessageFigures) {
        self.streams += other.streams;
        self.sent.add(other.sent);
        self.received.add(other.received);
        for (mine, theirs) in [
            (&mut self.first_message, other.first_message),
            (&mut self.round_trip, other.round_trip),
            (&mut self.gaps, other.gaps),
        ] {
            match (mine.as_mut(), theirs) {
                (Some(mine), Some(theirs)) => mine.add(&theirs).expect("histograms share bounds"),
                (None, theirs) => *mine = theirs,
                (Some(_), None) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn replies_pair_with_the_oldest_unanswered_send() {
        let t0 = Instant::now();
        let mut stream = MessageStream::opened(t0, true);
        stream.left(t0 + MS);
        stream.left(t0 + 2 * MS);
        assert_eq!(stream.unanswered(), 2);
        assert_eq!(
            stream.received(t0 + 5 * MS),
            MessageTimes {
                first: Some(5 * MS),
                round_trip: Some(4 * MS),
                gap: None,
            }
        );
        assert_eq!(
            stream.received(t0 + 9 * MS),
            MessageTimes {
                first: None,
                round_trip: Some(7 * MS),
                gap: Some(4 * MS),
            }
        );
        // A message with no send left to answer has no round trip.
        assert_eq!(
            stream.received(t0 + 10 * MS),
            MessageTimes {
                first: None,
                round_trip: None,
                gap: Some(MS),
            }
        );
        assert_eq!(stream.unanswered(), 0);
    }

    #[test]
    fn streams_whose_replies_do_not_pair_time_no_round_trips() {
        let t0 = Instant::now();
        let mut stream = MessageStream::opened(t0, false);
        stream.left(t0 + MS);
        assert_eq!(stream.unanswered(), 0);
        let first = stream.received(t0 + 3 * MS);
        assert_eq!((first.first, first.round_trip), (Some(3 * MS), None));
    }

    #[test]
    fn figures_record_each_time_and_merge() {
        let t0 = Instant::now();
        let mut stream = MessageStream::opened(t0, true);
        stream.left(t0);
        let mut mine = MessageFigures::default();
        mine.record(stream.received(t0 + 2 * MS));
        mine.record(stream.received(t0 + 5 * MS));
        let mut theirs = MessageFigures::default();
        theirs.sent.add(MessageBytes {
            messages: 2,
            message_bytes: 600,
            prefix_bytes: 10,
        });
        theirs.record(MessageTimes {
            first: None,
            round_trip: None,
            gap: Some(7 * MS),
        });
        mine.merge(theirs);
        let count = |histogram: &Option<Histogram<u64>>| histogram.as_ref().map(|h| h.len());
        assert_eq!(count(&mine.first_message), Some(1));
        assert_eq!(count(&mine.round_trip), Some(1));
        assert_eq!(count(&mine.gaps), Some(2));
        let gaps = mine.gaps.as_ref().unwrap();
        assert!(gaps.equivalent(gaps.min(), 3000) && gaps.equivalent(gaps.max(), 7000));
        let round_trip = mine.round_trip.as_ref().unwrap();
        assert!(round_trip.equivalent(round_trip.max(), 2000));
        assert_eq!((mine.sent.messages, mine.sent.message_bytes), (2, 600));
    }
}
