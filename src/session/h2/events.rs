//! An HTTP/2 response's event stream: started by its final HEADERS when the plan reads it as
//! events, fed its DATA, ended with the stream. A stream past `--max-event-size` is cancelled
//! alone (RST_STREAM CANCEL), its request failed as `event_too_large`; the connection goes on.

use std::time::Instant;

use super::super::events::EventTiming;
use super::super::Ledger;
use super::H2Session;
use crate::proto::events::{EventFormat, EventPlan, ResponseEvents};
use crate::proto::h2 as frame;
use crate::recorder::{ErrorKind, RequestStart};

/// A stream's event reading and timing (boxed in its stream: a plain one pays one pointer).
#[derive(Debug)]
pub(super) struct StreamEvents {
    read: ResponseEvents,
    timing: EventTiming,
}

/// The final response's headers to request `start` arrived at `at`, its content-type naming
/// `named`: its stream's event reading, if `plan` has its body read as events.
pub(super) fn head(
    plan: Option<&EventPlan>,
    start: &RequestStart,
    named: Option<EventFormat>,
    at: Instant,
    ledger: &Ledger<'_>,
) -> Option<Box<StreamEvents>> {
    let plan = plan.filter(|plan| plan.format_for(named).is_some())?;
    let mut events = Box::new(StreamEvents {
        read: ResponseEvents::new(Some(*plan)),
        timing: EventTiming::default(),
    });
    events.read.head(named);
    // Counts the stream begun (no event has arrived, so nothing can fail).
    let _ = events.timing.arrived(&mut events.read, start, at, ledger);
    Some(events)
}

impl StreamEvents {
    /// The stream of request `start` ended at `at`, whole or cut short: its totals.
    pub(super) fn ended(&mut self, start: &RequestStart, at: Instant, ledger: &Ledger<'_>) {
        self.timing.ended(&mut self.read, start, at, ledger);
    }
}

impl H2Session<'_> {
    /// Body bytes of stream `id`'s response.
    pub(super) fn events_body(
        &mut self,
        id: u32,
        body: &[u8],
        at: Instant,
        ledger: &Ledger<'_>,
        out: &mut Vec<u8>,
    ) {
        let Some(stream) = self.streams.get_mut(&id) else {
            return;
        };
        let Some(events) = stream.events.as_deref_mut() else {
            return;
        };
        events.read.body(body);
        let Err(error) = events
            .timing
            .arrived(&mut events.read, &stream.start, at, ledger)
        else {
            return;
        };
        let Some(mut stream) = self.streams.remove(&id) else {
            return;
        };
        self.reset(id, frame::CANCEL, out);
        if let Some(events) = stream.events.as_deref_mut() {
            events.ended(&stream.start, at, ledger);
        }
        ledger.note_error(|| error.to_string());
        ledger.fail(stream.start, ErrorKind::EventTooLarge, at);
    }
}
