//! The event stream flags: which responses are read as events, and how long one may be.
//! `plan::build` turns them into the run's [`crate::proto::events::EventPlan`].

use clap::{Args, ValueEnum};

use crate::units::parse_size;

/// `--events`: how response bodies are read as event streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum EventsArg {
    /// By content-type: text/event-stream as server-sent events, application/x-ndjson,
    /// application/ndjson or application/jsonl as one event per line.
    Auto,
    /// Every response as server-sent events.
    Sse,
    /// Every response as one event per line.
    Ndjson,
    /// None.
    Off,
}

/// How responses that stream events are read and timed.
#[derive(Debug, Clone, Args)]
pub(crate) struct EventArgs {
    /// Read response bodies as event streams and time their events (time to the first, the
    /// gaps between them): auto (by content-type), sse, ndjson or off. gRPC cells read
    /// messages instead.
    #[arg(
        long = "events",
        value_name = "FORMAT",
        value_enum,
        default_value = "auto"
    )]
    pub(crate) events: EventsArg,

    /// The longest line of an event stream, and the most data of one event (binary multiples:
    /// 64K, 1M); a stream past it fails its request with error kind event_too_large, and no
    /// more of it is kept than a counter.
    #[arg(long = "max-event-size", value_name = "SIZE", default_value = "1M", value_parser = parse_size)]
    pub(crate) max_event_size: u64,
}
