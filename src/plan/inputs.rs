//! What the plan is made from ([`Inputs`]): the load test's settings once the flags are parsed,
//! in plain types and in a few parts, each read by the file of the plan that gives it meaning
//! (the gRPC part, `GrpcInputs`, is grpc.rs's), and the values a cell asks for: `--proto`'s
//! [`ProtoChoice`], `--io`'s [`IoChoice`], `-n`'s [`Requests`], `--arrival`'s [`Arrival`].
//! `app` makes them from the flags (`src/app/inputs.rs`), so the plan never sees a clap struct;
//! a value type keeps its own spellings (`--proto h1`) and parser, so clap's messages stay its.

use std::path::PathBuf;
use std::time::Duration;

use super::grpc::GrpcInputs;
use super::objective::Objective;
use super::shard::Shard;
use super::stages::Stage;

/// Everything one sweep's plans are built from.
#[derive(Debug, Clone)]
pub(crate) struct Inputs {
    /// Where the requests go.
    pub(crate) target: Target,
    /// How much load, how fast, for how long.
    pub(crate) load: Load,
    /// The protocol, its settings and the I/O backend.
    pub(crate) protocol: ProtocolInputs,
    /// How connections are made, kept and given up.
    pub(crate) connection: Connection,
    /// TLS settings of `https://` cells.
    pub(crate) tls: Tls,
    /// What each request holds and what its response must show.
    pub(crate) request: Request,
    /// The gRPC method and message, if any.
    pub(crate) grpc: GrpcInputs,
}

/// Where the requests go (`-i`, `--urls-random`, the built-in target's TLS).
#[derive(Debug, Clone, Default)]
pub(crate) struct Target {
    /// The URLs given on the command line.
    pub(crate) urls: Vec<String>,
    /// `-i`: the file more URLs come from (named in the report).
    pub(crate) input_file: Option<PathBuf>,
    /// Each request's URL picked at random, not in turn.
    pub(crate) urls_random: bool,
    /// The built-in target serves TLS (decides the default protocol when no URL is given).
    pub(crate) target_tls: bool,
}

/// A request count (`-n`): a total, or a multiple of each cell's concurrency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Requests {
    /// This many requests in total.
    Total(u64),
    /// This many per concurrent request (connections × streams) of each cell.
    PerConcurrency(u64),
}

/// The protocol a cell asks for (`--proto`), which negotiate.rs turns into its negotiation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ProtoChoice {
    /// HTTP/1.1 (keep-alive pool; pipelined when -m > 1).
    #[value(name = "h1", alias = "http/1.1")]
    H1,
    /// HTTP/2 over cleartext TCP by prior knowledge.
    H2c,
    /// HTTP/2 over TLS (ALPN h2); fails if the server selects anything else.
    H2,
    /// HTTP/1.1 request with `Upgrade: h2c`, HTTP/2 on the same connection after `101`.
    #[value(name = "h2c-upgrade")]
    H2cUpgrade,
    /// Over TLS: whatever ALPN selects (h2 or http/1.1).
    Auto,
    /// HTTP/3 over QUIC (UDP, the URL's port); https:// URLs only.
    H3,
}

/// Values of `--io`: how TCP and unix-socket connections do their I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum IoChoice {
    /// io_uring where the kernel allows it, else epoll (said once on stderr with the reason).
    Auto,
    /// io_uring, one ring per thread; the run fails (status 1) if the kernel refuses it.
    Uring,
    /// Readiness-based I/O on epoll.
    #[default]
    Epoll,
}

/// How `--rate`, `--stages` and `--find-max` space their send times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum Arrival {
    /// Evenly: one every 1/rate (h2load's and wrk2's schedule).
    #[default]
    Uniform,
    /// A Poisson process: exponential gaps of mean 1/rate, as independent users arrive; drawn
    /// from --seed, so a run with the same seed repeats its send times exactly.
    Poisson,
}

impl Arrival {
    /// Its name in the report and in `--arrival`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Arrival::Uniform => "uniform",
            Arrival::Poisson => "poisson",
        }
    }
}

/// How much load, how fast and for how long; the lists are the sweep's levels.
#[derive(Debug, Clone)]
pub(crate) struct Load {
    /// `-n`.
    pub(crate) requests: Option<Requests>,
    /// `-c`: connections, one cell per level.
    pub(crate) clients: Vec<u64>,
    /// `-t`.
    pub(crate) threads: u64,
    /// `-m`: requests in flight per connection, one cell per level.
    pub(crate) max_concurrent_streams: Vec<u64>,
    /// `--rate`: total requests per second, one cell per rate.
    pub(crate) rate: Vec<f64>,
    /// `--rps`: each connection's rate.
    pub(crate) rps: Option<f64>,
    /// `--stages`: the ramp.
    pub(crate) stages: Vec<Stage>,
    /// How paced send times are spaced.
    pub(crate) arrival: Arrival,
    /// `--until-stable`: the precision the p99 and the rate must reach, as a fraction.
    pub(crate) until_stable: Option<f64>,
    /// `-D`.
    pub(crate) duration: Option<Duration>,
    /// `--warm-up-time`.
    pub(crate) warm_up_time: Option<Duration>,
    /// `--find-max`: the run is a search for the highest rate that keeps [`Load::slo`].
    pub(crate) find_max: bool,
    /// `--slo`: the objectives of the search.
    pub(crate) slo: Vec<Objective>,
    /// `--step-duration`: the length of a full step of the search.
    pub(crate) step_duration: Duration,
    /// `--scale`: the factor of counts, levels and durations.
    pub(crate) scale: Option<f64>,
    /// `--shard`: the part of the load this process runs.
    pub(crate) shard: Option<Shard>,
    /// `--seed` (without one, a seed drawn once per process).
    pub(crate) seed: Option<u64>,
    /// `--interval`: the timeline's intervals.
    pub(crate) interval: Option<Duration>,
}

/// The protocol asked for, its HTTP/2 settings and the I/O backend.
#[derive(Debug, Clone)]
pub(crate) struct ProtocolInputs {
    /// `--proto`: one cell per protocol (empty: the scheme's default).
    pub(crate) proto: Vec<ProtoChoice>,
    /// The protocol of every cell without `--proto`, whatever the scheme (`--h1`).
    pub(crate) default_proto: Option<ProtoChoice>,
    /// The protocol of `http://` cells without `--proto` (h2load's `-p`).
    pub(crate) cleartext_proto: Option<ProtoChoice>,
    /// `--h2-multiplex`: HTTP/2 cells carry their concurrency on one connection.
    pub(crate) h2_multiplex: bool,
    /// `--io`.
    pub(crate) io: IoChoice,
    /// `--io-sqpoll`.
    pub(crate) io_sqpoll: bool,
    /// `-w`: the stream window is 2^N-1.
    pub(crate) window_bits: u8,
    /// `-W`: the connection window is 2^N-1.
    pub(crate) connection_window_bits: u8,
    /// `-f`, unchecked.
    pub(crate) max_frame_size: u64,
    /// `--header-table-size`, unchecked.
    pub(crate) header_table_size: u64,
}

/// How connections reach the server, and when they and their requests are given up.
#[derive(Debug, Clone, Default)]
pub(crate) struct Connection {
    /// `--connect-to HOST:PORT`, unparsed.
    pub(crate) connect_to: Option<String>,
    /// `--unix-socket`.
    pub(crate) unix_socket: Option<PathBuf>,
    /// `--proxy`, unparsed.
    pub(crate) proxy: Option<String>,
    /// `--connect-timeout`.
    pub(crate) connect_timeout: Option<Duration>,
    /// `--request-timeout`.
    pub(crate) request_timeout: Option<Duration>,
    /// `-T`.
    pub(crate) active_timeout: Option<Duration>,
    /// `-N`.
    pub(crate) inactivity_timeout: Option<Duration>,
    /// How many times a request the server never processed is sent again (`None`: never).
    pub(crate) max_retries: Option<u8>,
    /// `--requests-per-connection`.
    pub(crate) requests_per_connection: Option<u64>,
    /// `--no-keepalive`.
    pub(crate) no_keepalive: bool,
}

/// The TLS settings of `https://` cells.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tls {
    /// `--tls-resume`.
    pub(crate) resume: bool,
    /// `--tls-early-data`.
    pub(crate) early_data: bool,
    /// `--alpn-list`, unparsed.
    pub(crate) alpn_list: Option<String>,
    /// `-k`.
    pub(crate) insecure: bool,
    /// `--cacert`.
    pub(crate) cacert: Option<PathBuf>,
    /// `--cert`.
    pub(crate) cert: Option<PathBuf>,
    /// `--key`.
    pub(crate) key: Option<PathBuf>,
    /// `--sni`.
    pub(crate) sni: Option<String>,
}

/// What each request holds and what its response must show.
#[derive(Debug, Clone, Default)]
pub(crate) struct Request {
    /// `-H`, unparsed.
    pub(crate) headers: Vec<String>,
    /// The file of the body (`-d`).
    pub(crate) data: Option<PathBuf>,
    /// The body itself (`--body`).
    pub(crate) body: Option<String>,
    /// `--method`.
    pub(crate) method: Option<String>,
    /// `--expect-status`, unparsed.
    pub(crate) expect_status: Vec<String>,
    /// `--expect-header`, unparsed.
    pub(crate) expect_header: Vec<String>,
    /// `--expect-body-contains`.
    pub(crate) expect_body_contains: Option<String>,
    /// `--events`: `None` for off, else the format every response is read in (`Some(None)`:
    /// by its content-type).
    pub(crate) events: Option<Option<crate::proto::events::EventFormat>>,
    /// `--max-event-size`, bytes.
    pub(crate) max_event_size: u64,
}
