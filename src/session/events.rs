//! A response's event stream as every session keeps it: what the protocol's reader made of the
//! body ([`ResponseEvents`], in `proto`) and the timing of its events ([`EventTiming`]), recorded
//! through the [`Ledger`] with the message layer's figures: time to the first event from the
//! request's send, the gaps between events, events and data bytes per stream.

use std::time::Instant;

use super::Ledger;
use crate::proto::events::{EventError, ResponseEvents};
use crate::recorder::messages::{MessageBytes, MessageStream};
use crate::recorder::RequestStart;

/// The timing of one response's events (created by its first).
#[derive(Debug, Default)]
pub(crate) struct EventTiming(Option<MessageStream>);

impl EventTiming {
    /// Records the stream's beginning and the events `events` completed, at `at`: `Err` once
    /// the stream cannot be read on.
    pub(crate) fn arrived(
        &mut self,
        events: &mut ResponseEvents,
        start: &RequestStart,
        at: Instant,
        ledger: &Ledger<'_>,
    ) -> Result<(), EventError> {
        if events.take_opened() {
            ledger.event_stream_opened(start);
        }
        let count = events.take_arrived();
        if count > 0 {
            let stream = self
                .0
                .get_or_insert_with(|| MessageStream::opened(start.actual, false));
            ledger.messages_received(start, stream, count, at);
        }
        events.error().map_or(Ok(()), Err)
    }

    /// The response ended at `at` (whole, or cut short): the events its end completed, and the
    /// stream's totals. Ready for the next response.
    pub(crate) fn ended(
        &mut self,
        events: &mut ResponseEvents,
        start: &RequestStart,
        at: Instant,
        ledger: &Ledger<'_>,
    ) {
        if let Some(read) = events.end() {
            // The error, if any, was reported as the stream's failure already.
            let _ = self.arrived(events, start, at, ledger);
            ledger.message_stream_ended(
                start,
                MessageBytes {
                    messages: read.events,
                    message_bytes: read.data_bytes,
                    prefix_bytes: 0,
                },
            );
        }
        self.0 = None;
    }
}
