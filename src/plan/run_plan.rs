//! [`RunPlan`], everything a run needs once validated, and its parts: protocol and negotiation,
//! TLS, stop rule, destination, time limits, HTTP/2 settings, I/O backend, timeline interval.

use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use serde::Serialize;

use super::inputs::Arrival;
use super::request::RequestTemplate;
use super::route::Route;
use super::stages::Stages;
use crate::proto::check::Checks;

/// Everything a run needs, validated.
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// Where to connect.
    pub(crate) destination: Destination,
    /// What to send.
    pub(crate) request: RequestTemplate,
    /// How connections arrive at their protocol.
    pub(crate) negotiation: Negotiation,
    /// TLS settings, for https:// URLs.
    pub(crate) tls: Option<TlsPlan>,
    /// When to stop.
    pub(crate) stop: StopRule,
    /// Concurrent connections.
    pub(crate) clients: usize,
    /// OS threads.
    pub(crate) threads: usize,
    /// Requests in flight per connection (h2 streams or h1 pipeline depth).
    pub(crate) max_concurrent: usize,
    /// Time limits.
    pub(crate) timeouts: Timeouts,
    /// How often a request the server never processed is sent again (`None`: `--no-retry`).
    pub(crate) max_retries: Option<u8>,
    /// Requests a connection carries before it closes and its slot connects again
    /// (`--requests-per-connection`; 1 with `--no-keepalive`); `None`: as many as it can.
    pub(crate) requests_per_connection: Option<u64>,
    /// `--no-keepalive`: HTTP/1.1 requests carry `Connection: close`.
    pub(crate) no_keepalive: bool,
    /// HTTP/2 settings.
    pub(crate) h2: H2Settings,
    /// Total requests per second on a fixed schedule (`--rate`, or `--rps` × connections).
    pub(crate) rate: Option<f64>,
    /// `--stages`: a ramp of rates instead (`rate` is then `None`; `--rate` is the ramp's start).
    pub(crate) stages: Option<Stages>,
    /// `--arrival`: how the paced send times (`rate`, `stages`, or a steered run's) are spaced.
    pub(crate) arrival: Arrival,
    /// `--shard`: the part of the scenario this run is (its counts, connections and schedule
    /// are that part's already; the pacer places its send times by it).
    pub(crate) shard: Option<super::shard::Shard>,
    /// With `--shard`: the whole scenario's counts, which the report records for `merge`.
    pub(crate) whole: Option<super::shard::Whole>,
    /// `--until-stable`: stop once the p99's and the rate's 95% half-widths are within this
    /// share of their values.
    pub(crate) until_stable: Option<f64>,
    /// Length of the timeline's intervals.
    pub(crate) interval: TimelineInterval,
    /// Adjustments made to the options, printed before the run.
    pub(crate) notes: Vec<String>,
    /// Input that was ignored for safety, printed before the run even with `--quiet`.
    pub(crate) warnings: Vec<String>,
    /// The response checks (`--expect-*`), if any: without them nothing is compared or searched.
    pub(crate) checks: Option<Arc<Checks>>,
    /// `--seed`, or the one drawn for the run: what `--urls-random`, `{rand:N}` and `{uuid}`
    /// draw from.
    pub(crate) seed: u64,
    /// The I/O backend of TCP and unix-socket connections (`--io`), resolved: `auto` has become
    /// one of the two.
    pub(crate) io: IoBackend,
    /// `--grpc`: each request is a call of this method, judged by its `grpc-status`.
    pub(crate) grpc: Option<super::grpc::GrpcPlan>,
    /// How response bodies are read as event streams (`None`: not at all, `--events off` and
    /// gRPC cells, whose messages are read instead).
    pub(crate) events: Option<crate::proto::events::EventPlan>,
}

impl RunPlan {
    /// `h2c c=10 m=1`, with ` rate=500` when paced or ` stages=2s:200,2s:2000` on a ramp: the
    /// settings that tell the cells of a sweep apart, for headings, the progress bar, the charts
    /// and the exports.
    pub(crate) fn label(&self) -> String {
        let stages = self
            .stages
            .as_ref()
            .map_or_else(String::new, |stages| format!(" stages={stages}"));
        format!(
            "{} {}{stages}",
            self.protocol_label(),
            setting_label(self.clients, self.max_concurrent, self.rate)
        )
    }

    /// Whether requests follow a schedule (`--rate` or `--stages`): latency then counts from each
    /// request's intended start.
    pub(crate) fn paced(&self) -> bool {
        self.rate.is_some() || self.stages.is_some()
    }

    /// The cell's protocol as the user names it: `h1`, `h2c`, `h2c-upgrade`, `h2`, `h1-tls` or `auto`.
    pub(crate) fn protocol_label(&self) -> &'static str {
        match self.negotiation {
            Negotiation::Direct(Protocol::Http1) => "h1",
            Negotiation::Direct(_) => "h2c",
            Negotiation::H2cUpgrade => "h2c-upgrade",
            Negotiation::Alpn {
                require: Some(Protocol::Http1),
            } => "h1-tls",
            Negotiation::Alpn { require: Some(_) } => "h2",
            Negotiation::Alpn { require: None } => "auto",
            Negotiation::Quic => "h3",
        }
    }
}

/// `c=10 m=1`, with ` rate=500` when paced: a cell's concurrency and pacing, as labels show them.
pub(crate) fn setting_label(clients: usize, streams: usize, rate: Option<f64>) -> String {
    match rate {
        Some(rate) => format!("c={clients} m={streams} rate={rate}"),
        None => format!("c={clients} m={streams}"),
    }
}

/// The protocol a connection speaks once established.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) enum Protocol {
    /// HTTP/1.1: a keep-alive pool, or a pipeline when more than one request may be in flight.
    #[serde(rename = "http/1.1")]
    Http1,
    /// HTTP/2 over cleartext TCP.
    #[serde(rename = "h2c")]
    H2c,
    /// HTTP/2 over TLS.
    #[serde(rename = "h2")]
    H2,
    /// HTTP/3 over QUIC.
    #[serde(rename = "h3")]
    H3,
}

impl Protocol {
    /// Every protocol, in report order.
    pub(crate) const ALL: [Protocol; 4] =
        [Protocol::Http1, Protocol::H2c, Protocol::H2, Protocol::H3];

    /// The protocol's identifier, as h2load prints it.
    pub(crate) fn id(self) -> &'static str {
        match self {
            Protocol::Http1 => "http/1.1",
            Protocol::H2c => "h2c",
            Protocol::H2 => "h2",
            Protocol::H3 => "h3",
        }
    }
}

/// How each connection arrives at its protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Negotiation {
    /// Cleartext, the protocol fixed by the options (HTTP/1.1 or h2c by prior knowledge).
    Direct(Protocol),
    /// Cleartext HTTP/1.1 first request with `Upgrade: h2c`; HTTP/2 after `101 Switching Protocols`.
    H2cUpgrade,
    /// TLS: ALPN decides; with `require`, any other outcome fails the connection.
    Alpn {
        /// The protocol the user insisted on, if any.
        require: Option<Protocol>,
    },
    /// QUIC (TLS 1.3 inside, ALPN `h3`): HTTP/3.
    Quic,
}

/// TLS settings of an https:// run.
#[derive(Debug, Clone)]
pub(crate) struct TlsPlan {
    /// The client configuration (trust, client identity, ALPN list).
    pub(crate) config: Arc<rustls::ClientConfig>,
    /// The name sent as SNI and verified against the certificate.
    pub(crate) server_name: ServerName<'static>,
    /// `--tls-resume`: each thread keeps a session cache and resumes sessions from it.
    pub(crate) resume: bool,
    /// `--tls-early-data`: requests leave as TLS 1.3 early data on resumed connections.
    pub(crate) early_data: bool,
}

/// When the run stops sending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopRule {
    /// After this many requests in total.
    Requests(u64),
    /// After a warm-up (not measured) and then a measured duration.
    Duration {
        /// Load sent before measuring starts.
        warm_up: Duration,
        /// Measured time.
        measure: Duration,
    },
}

/// Where connections go.
#[derive(Debug, Clone)]
pub(crate) struct Destination {
    /// The URLs given on the command line, for the report.
    pub(crate) urls: Vec<String>,
    /// How every connection reaches the server.
    pub(crate) route: Route,
    /// `-i`: the file more URLs came from, for the report.
    pub(crate) input_file: Option<String>,
    /// `host[:port]` as written in the first URL; the default Host / `:authority`.
    pub(crate) authority: String,
}

/// Connection and request time limits; `None` means no limit.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub(crate) struct Timeouts {
    /// Limit on TCP connect.
    pub(crate) connect: Option<Duration>,
    /// Limit on one request, from send to last byte.
    pub(crate) request: Option<Duration>,
    /// Limit on a connection's lifetime.
    pub(crate) connection_active: Option<Duration>,
    /// Limit on a connection's silence.
    pub(crate) connection_inactivity: Option<Duration>,
    /// HTTP/3: how long a QUIC connection may hear nothing (keep-alive PINGs included) before it
    /// is given up. Not a flag: [`QUIC_IDLE_TIMEOUT`], which tests shorten.
    pub(crate) quic_idle: Duration,
}

/// How long a QUIC connection may hear nothing before it is given up (RFC 9000 §10.1). The
/// client sends keep-alive PINGs at a third of it, so only a vanished server reaches it; a
/// response may take any time (`--request-timeout` bounds it).
pub(super) const QUIC_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long connecting may take (TCP, TLS and the server's HTTP/2 SETTINGS) when
/// `--connect-timeout` is not given: a server that never completes a handshake ends the run.
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// HTTP/2 settings the client announces.
#[derive(Debug, Clone, Copy, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct H2Settings {
    /// SETTINGS_INITIAL_WINDOW_SIZE.
    pub(crate) stream_window: u32,
    /// Connection-level receive window.
    pub(crate) connection_window: u32,
    /// SETTINGS_MAX_FRAME_SIZE.
    pub(crate) max_frame_size: u32,
    /// SETTINGS_HEADER_TABLE_SIZE.
    pub(crate) header_table_size: u32,
}

/// How a runner thread does its connections' I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum IoBackend {
    /// Readiness-based: tokio's epoll reactor.
    #[default]
    Epoll,
    /// Completion-based: one io_uring per runner thread (`sqpoll`: with a kernel thread polling
    /// its submission queue, `--io-sqpoll`).
    Uring {
        /// `--io-sqpoll`.
        sqpoll: bool,
    },
}

impl IoBackend {
    /// The name the JSON report (`settings.io`), `-v` and the text report give it: `epoll`,
    /// `uring` or `uring+sqpoll`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            IoBackend::Epoll => "epoll",
            IoBackend::Uring { sqpoll: false } => "uring",
            IoBackend::Uring { sqpoll: true } => "uring+sqpoll",
        }
    }
}

/// The length of a cell's timeline intervals, and whether it was chosen automatically.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TimelineInterval {
    /// The length recording starts with.
    pub(crate) length: Duration,
    /// No `--interval` was given: the report picks the final length from the cell's length.
    pub(crate) auto: bool,
}

impl TimelineInterval {
    /// A cell's timeline aims at no fewer intervals than this when the length is automatic:
    /// enough for a readable timeline, and for the batch means of the confidence intervals
    /// (`report/confidence.rs`), whose Student's t at 19 degrees of freedom is 2.09 (at 9, 2.26:
    /// a p99 of 1,000 samples left unbounded in a third of the runs).
    pub(crate) const MIN_INTERVALS: u32 = 20;
    /// The recording length of automatic `-n` runs, whose length is unknown in advance; the
    /// report merges neighbours up to the length that keeps [`Self::MIN_INTERVALS`].
    pub(crate) const AUTO_BASE: Duration = Duration::from_millis(10);

    /// The round lengths an automatic interval takes, longest first.
    pub(crate) const ROUND: [Duration; 7] = [
        Duration::from_millis(1000),
        Duration::from_millis(500),
        Duration::from_millis(200),
        Duration::from_millis(100),
        Duration::from_millis(50),
        Duration::from_millis(20),
        Duration::from_millis(10),
    ];

    /// `--interval` when given; otherwise, for a timed run, the longest [`Self::ROUND`] length
    /// that gives at least [`Self::MIN_INTERVALS`] intervals, and for `-n` runs
    /// [`Self::AUTO_BASE`].
    pub(crate) fn choose(given: Option<Duration>, stop: &StopRule) -> TimelineInterval {
        if let Some(length) = given {
            return TimelineInterval {
                length,
                auto: false,
            };
        }
        let length = match stop {
            StopRule::Duration { measure, .. } => Self::longest_round(*measure, Self::AUTO_BASE),
            StopRule::Requests(_) => Self::AUTO_BASE,
        };
        TimelineInterval { length, auto: true }
    }

    /// The longest [`Self::ROUND`] length, a multiple of `recorded`, that cuts `period` into at
    /// least [`Self::MIN_INTERVALS`] intervals; `recorded` itself when none does.
    pub(crate) fn longest_round(period: Duration, recorded: Duration) -> Duration {
        Self::ROUND
            .into_iter()
            .find(|length| {
                length.as_nanos() % recorded.as_nanos().max(1) == 0
                    && *length * Self::MIN_INTERVALS <= period
            })
            .unwrap_or(recorded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_backends_have_the_reports_names() {
        let names = [
            IoBackend::Epoll,
            IoBackend::Uring { sqpoll: false },
            IoBackend::Uring { sqpoll: true },
        ]
        .map(IoBackend::name);
        assert_eq!(names, ["epoll", "uring", "uring+sqpoll"]);
    }
}
