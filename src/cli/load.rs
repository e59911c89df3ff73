//! The load test's flags ([`LoadArgs`], also what `run` and scenario files give) and the
//! parsers of their values that need more than a unit or a range.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::cli::output::{CheckArgs, OutputArgs};
use crate::cli::values::{count, NoTlsProto};
use crate::console::ColorChoice;
use crate::limits::{
    MAX_CLIENTS, MAX_RATE, MAX_REQUESTS, MAX_ROUNDS, MAX_SCALE, MAX_STEP, MAX_STREAMS, MAX_THREADS,
    MIN_INTERVAL, MIN_PROGRESS_INTERVAL, MIN_RATE, MIN_SCALE, MIN_STEP,
};
use crate::plan::objective::{self, Objective};
use crate::plan::rounds::RoundOrder;
use crate::plan::shard::Shard;
use crate::plan::stages::Stage;
use crate::plan::{Arrival, IoChoice, ProtoChoice, Requests};
use crate::server::Fault;
use crate::units::{
    parse_count, parse_duration, parse_percent, parse_positive_duration, parse_si_number,
    parse_size,
};

// The headings `--help` and the manual page group the options under, in this order (clap shows
// a heading where its first option is declared).
const REQUESTS: &str = "Requests";
const LOAD: &str = "Load shape";
const RATE: &str = "Rate";
const CONNECTION: &str = "Connections";
const TLS: &str = "TLS";
const PROTOCOL: &str = "Protocol";
const OUTPUT: &str = "Output";
const TARGET: &str = "Built-in target (when no URL is given)";

/// Options of a load test. Flag names and meanings follow h2load.
#[derive(Debug, Args)]
pub(crate) struct LoadArgs {
    /// Target URLs, used in turn by each client across its connections. Scheme, host and port
    /// come from the first.
    #[arg(value_name = "URL")]
    pub(crate) urls: Vec<String>,

    /// Read more URLs from FILE: one URL, or path starting with /, a line; blank lines and lines
    /// starting with # are skipped. They come after the URLs given here (h2load's -i replaces
    /// them); with none given, the file's first URL gives scheme, host and port.
    #[arg(help_heading = REQUESTS, short = 'i', long = "input-file", value_name = "FILE")]
    pub(crate) input_file: Option<PathBuf>,

    /// Pick each request's URL at random among them (seeded by --seed) instead of in turn.
    #[arg(help_heading = REQUESTS, long = "urls-random")]
    pub(crate) urls_random: bool,

    /// Seed of --urls-random, {rand:N}, {uuid} and --arrival poisson: the same seed, -c and -t draw the same numbers
    /// again [default: random; -v and the JSON report show it].
    #[arg(help_heading = REQUESTS, long = "seed", value_name = "N")]
    pub(crate) seed: Option<u64>,

    /// Number of requests across all connections, or `Kx`: K per concurrent request of each cell
    /// (connections × streams); at most 10^12 either way. Every count and rate takes SI suffixes:
    /// 10k, 1.5k, 2M (k or K 10^3, M 10^6, G 10^9) [default: 10000; none with --until-stable].
    #[arg(help_heading = LOAD, short = 'n', long = "requests", value_name = "N", conflicts_with = "duration", value_parser = parse_requests)]
    pub(crate) requests: Option<Requests>,

    /// Concurrent connections (clients), 1..=1000000; a list (1,10,100) runs one cell per value.
    #[arg(help_heading = LOAD, short = 'c', long = "clients", value_name = "N[,N...]", default_value = "1", value_delimiter = ',',
          value_parser = count::<u64>(1, MAX_CLIENTS))]
    pub(crate) clients: Vec<u64>,

    /// Number of OS threads, each with its own event loop and share of the connections (1..=4096).
    #[arg(help_heading = LOAD, short = 't', long = "threads", value_name = "N", default_value_t = 1,
          value_parser = count::<u64>(1, MAX_THREADS))]
    pub(crate) threads: u64,

    /// Concurrent requests per connection: h2 streams, or HTTP/1.1 pipeline depth (1..=1000000); a
    /// list runs one cell per value.
    #[arg(help_heading = LOAD, short = 'm', long = "max-concurrent-streams", value_name = "N[,N...]", default_value = "1",
          value_delimiter = ',', value_parser = count::<u64>(1, MAX_STREAMS))]
    pub(crate) max_concurrent_streams: Vec<u64>,

    /// Send at this many requests per second in total, on a fixed schedule (latency counts from each
    /// request's scheduled time: coordinated omission corrected), 0.001..=100000000; a list runs one
    /// cell per rate.
    #[arg(help_heading = RATE, long = "rate", value_name = "R[,R...]", value_delimiter = ',', value_parser = parse_rate, conflicts_with = "rps")]
    pub(crate) rate: Vec<f64>,

    /// Ramp the rate (k6's stages): each DURATION:RATE moves it linearly from the previous stage's
    /// rate (0 at the start, or a single --rate) to RATE over DURATION (0s: a step), on the same
    /// connections, as one cell measured over the stages' total length (-c/-m stay the concurrency
    /// cap; latency counts from each request's scheduled time). Not with -n, -D or --warm-up-time.
    #[arg(help_heading = RATE, long = "stages", value_name = "D:R[,D:R...]", value_delimiter = ',', value_parser = parse_stage,
          conflicts_with_all = ["requests", "duration", "warm_up_time", "rps"])]
    pub(crate) stages: Vec<Stage>,

    /// How paced send times are spaced (--rate, --rps, --stages, --find-max): uniform (one every
    /// 1/rate) or poisson (exponential gaps of mean 1/rate, as independent users arrive; drawn from
    /// --seed, so the same seed repeats the same send times).
    #[arg(help_heading = RATE, long = "arrival", value_name = "KIND", value_enum, default_value_t = Arrival::Uniform)]
    pub(crate) arrival: Arrival,

    /// Measure each cell until the 95% confidence intervals of its p99 and of its request rate are
    /// each within PCT of their value (0.1%..50%; looked at once a second), -n or -D staying the
    /// cap (without them, 10 minutes): the report, -q's line too, says which came first.
    #[arg(help_heading = LOAD, long = "until-stable", value_name = "PCT", value_parser = parse_precision,
          conflicts_with = "find_max")]
    pub(crate) until_stable: Option<f64>,

    /// h2load's per-client rate: each connection's share of --rate is this many requests per second
    /// (0.001 or more; times the connections, at most 100000000).
    #[arg(help_heading = RATE, long = "rps", value_name = "N", value_parser = parse_rate)]
    pub(crate) rps: Option<f64>,

    /// Run for this long instead of a request count (e.g. 10s, 1m). Every duration flag takes at most
    /// 30 days (720h), also after --scale.
    #[arg(help_heading = LOAD, short = 'D', long = "duration", value_name = "DURATION", value_parser = parse_positive_duration)]
    pub(crate) duration: Option<Duration>,

    /// Send load for this long before measuring (with -D).
    #[arg(help_heading = LOAD, long = "warm-up-time", value_name = "DURATION", value_parser = parse_duration, requires = "duration")]
    pub(crate) warm_up_time: Option<Duration>,

    /// Extra request header "Name: value" (repeatable; replaces a default of the same name).
    #[arg(help_heading = REQUESTS, short = 'H', long = "header", value_name = "HEADER")]
    pub(crate) headers: Vec<String>,

    /// Send this file as the request body (h2load's -d; curl's -d @FILE is the same), the method
    /// becoming POST unless --method is given.
    #[arg(help_heading = REQUESTS, short = 'd', long = "data", value_name = "FILE")]
    pub(crate) data: Option<PathBuf>,

    /// Send TEXT as the request body (curl's and oha's -d '…'), the method becoming POST unless
    /// --method is given; placeholders as in a -d file.
    #[arg(help_heading = REQUESTS, long = "body", value_name = "TEXT", conflicts_with = "data")]
    pub(crate) body: Option<String>,

    /// Request method [default: GET, or POST with -d].
    #[arg(help_heading = REQUESTS, long = "method", value_name = "METHOD")]
    pub(crate) method: Option<String>,

    /// Close a connection after it has been open this long, whatever it is doing.
    #[arg(help_heading = CONNECTION, short = 'T', long = "connection-active-timeout", value_name = "DURATION",
          value_parser = parse_positive_duration)]
    pub(crate) connection_active_timeout: Option<Duration>,

    /// Close a connection after it has received nothing for this long.
    #[arg(help_heading = CONNECTION, short = 'N', long = "connection-inactivity-timeout", value_name = "DURATION",
          value_parser = parse_positive_duration)]
    pub(crate) connection_inactivity_timeout: Option<Duration>,

    /// Count a request as timed out when its response has not completed after this long.
    #[arg(help_heading = CONNECTION, long = "request-timeout", value_name = "DURATION", value_parser = parse_positive_duration)]
    pub(crate) request_timeout: Option<Duration>,

    /// Send a request again, at most this many times (0..=100), when the server provably never
    /// processed it: an HTTP/2 stream above a GOAWAY's last stream id or refused (REFUSED_STREAM),
    /// an idempotent HTTP/1.1 request left unanswered when the server closed the connection. It
    /// counts once, as what finally happened, timed from its first scheduled send. A re-send
    /// after a GOAWAY or close of a connection that had completed requests is not counted
    /// against N: the server is rotating connections, not refusing work.
    #[arg(help_heading = REQUESTS, long = "max-retries", value_name = "N", default_value_t = 3,
          value_parser = count::<u8>(0, 100))]
    pub(crate) max_retries: u8,

    /// Never send a request again: what the server left unprocessed fails (h2load's accounting).
    #[arg(help_heading = REQUESTS, long = "no-retry", conflicts_with = "max_retries")]
    pub(crate) no_retry: bool,

    /// Close each connection after N requests (their answers in) and connect again: connection
    /// churn (gcannon's -r). The last connection of a counted run may carry fewer.
    #[arg(help_heading = LOAD, long = "requests-per-connection", value_name = "N",
          value_parser = count::<u64>(1, u64::MAX))]
    pub(crate) requests_per_connection: Option<u64>,

    /// One request per connection (--requests-per-connection 1); HTTP/1.1 requests also carry
    /// `Connection: close`, so the server closes. With h2 and h3: one request per connection only.
    #[arg(help_heading = LOAD, long = "no-keepalive", conflicts_with = "requests_per_connection")]
    pub(crate) no_keepalive: bool,

    /// Resume TLS sessions (tickets, TLS 1.2 session ids) on new connections, each thread keeping
    /// its own cache; the report counts resumed and full handshakes. Not with --proto h3.
    #[arg(help_heading = TLS, long = "tls-resume")]
    pub(crate) tls_resume: bool,

    /// Send requests as TLS 1.3 early data (0-RTT) on resumed connections (implies --tls-resume);
    /// GET and HEAD only, with --proto h1 or h2. The report counts accepted and rejected early data.
    #[arg(help_heading = TLS, long = "tls-early-data")]
    pub(crate) tls_early_data: bool,

    /// Give up connecting after this long: TCP, TLS and, for HTTP/2, the server's SETTINGS
    /// [default: 10s].
    #[arg(help_heading = CONNECTION, long = "connect-timeout", value_name = "DURATION", value_parser = parse_positive_duration)]
    pub(crate) connect_timeout: Option<Duration>,

    /// Protocol to speak; a list (h1,h2c) runs one cell per protocol
    /// [default: h2c for http:// URLs as in h2load, auto for https://].
    #[arg(help_heading = PROTOCOL, long = "proto", value_name = "PROTO[,PROTO...]", value_delimiter = ',',
          conflicts_with_all = ["h1", "no_tls_proto"])]
    pub(crate) proto: Vec<ProtoChoice>,

    /// For HTTP/2 cells, carry the concurrency on streams of one connection (-c 1 -m N×M, at most
    /// 1000000) instead of N connections, as browsers and Go's client do (seeds 001 and 004). Applies
    /// to h2, h2c, h2c-upgrade and the default protocol of http:// URLs (h2c), not to auto.
    #[arg(help_heading = PROTOCOL, long = "h2-multiplex")]
    pub(crate) h2_multiplex: bool,

    /// I/O backend of TCP and unix-socket connections: epoll, uring (io_uring, one ring per
    /// thread; fails with status 1 where the kernel refuses it) or auto (io_uring if the kernel
    /// allows it, else epoll). Connections through --proxy and with --tls-early-data stay on
    /// epoll, and --proto h3 always runs on its UDP socket over epoll.
    #[arg(
        help_heading = PROTOCOL,
        long = "io",
        value_name = "BACKEND",
        value_enum,
        default_value_t,
        env = "H2LOAD_RS_IO"
    )]
    pub(crate) io: IoChoice,

    /// With --io uring or auto: a kernel thread polls each ring's submission queue (SQPOLL), so
    /// sending needs no system call; it costs that thread's CPU.
    #[arg(help_heading = PROTOCOL, long = "io-sqpoll")]
    pub(crate) io_sqpoll: bool,

    /// Use HTTP/1.1 (same as --proto h1).
    #[arg(help_heading = PROTOCOL, long = "h1", conflicts_with = "no_tls_proto")]
    pub(crate) h1: bool,

    /// Protocol for http:// URLs, h2load's spelling: h2c or http/1.1.
    #[arg(help_heading = PROTOCOL, short = 'p', long = "no-tls-proto", value_name = "PROTOID")]
    pub(crate) no_tls_proto: Option<NoTlsProto>,

    /// HTTP/2 stream window: 2^N-1 bytes (0..=30).
    #[arg(help_heading = PROTOCOL, short = 'w', long = "window-bits", value_name = "N", default_value_t = 30,
          value_parser = clap::value_parser!(u8).range(0..=30))]
    pub(crate) window_bits: u8,

    /// HTTP/2 connection window: 2^N-1 bytes (0..=30).
    #[arg(help_heading = PROTOCOL, short = 'W', long = "connection-window-bits", value_name = "N", default_value_t = 30,
          value_parser = clap::value_parser!(u8).range(0..=30))]
    pub(crate) connection_window_bits: u8,

    /// Largest HTTP/2 frame the server may send us (16K..16M-1).
    #[arg(help_heading = PROTOCOL, short = 'f', long = "max-frame-size", value_name = "SIZE", default_value = "16K",
          value_parser = parse_size)]
    pub(crate) max_frame_size: u64,

    /// HPACK decoder table size announced to the server (below 4G).
    #[arg(help_heading = PROTOCOL, long = "header-table-size", value_name = "SIZE", default_value = "4K", value_parser = parse_size)]
    pub(crate) header_table_size: u64,

    /// ALPN protocols offered over TLS, comma-separated [default: http/1.1 with --proto h1, else h2,http/1.1].
    #[arg(help_heading = TLS, long = "alpn-list", value_name = "LIST")]
    pub(crate) alpn_list: Option<String>,

    /// Do not verify the server's certificate (self-signed test servers).
    #[arg(help_heading = TLS, short = 'k', long = "insecure")]
    pub(crate) insecure: bool,

    /// Also trust the CA certificates in this PEM file.
    #[arg(help_heading = TLS, long = "cacert", value_name = "FILE")]
    pub(crate) cacert: Option<PathBuf>,

    /// Client certificate chain (PEM) to present; needs --key.
    #[arg(help_heading = TLS, long = "cert", value_name = "FILE", requires = "key")]
    pub(crate) cert: Option<PathBuf>,

    /// Private key (PEM) of --cert.
    #[arg(help_heading = TLS, long = "key", value_name = "FILE", requires = "cert")]
    pub(crate) key: Option<PathBuf>,

    /// TLS server name to send and verify [default: the URL's host].
    #[arg(help_heading = TLS, long = "sni", value_name = "NAME")]
    pub(crate) sni: Option<String>,

    /// Connect to HOST:PORT instead of the URL's host and port (Host, SNI and certificate checks keep the URL's).
    #[arg(help_heading = CONNECTION, long = "connect-to", value_name = "HOST:PORT")]
    pub(crate) connect_to: Option<String>,

    /// Connect every connection to this unix socket instead of TCP: HTTP/1.1, h2c and h2 over TLS
    /// (the URL still gives Host / :authority and the TLS server name). Needs a URL.
    #[arg(help_heading = CONNECTION, long = "unix-socket", value_name = "PATH")]
    pub(crate) unix_socket: Option<PathBuf>,

    /// Tunnel every connection through this HTTP proxy with CONNECT: http://[USER:PASS@]HOST:PORT
    /// (credentials go as Proxy-Authorization Basic). Not for h3.
    #[arg(help_heading = CONNECTION, long = "proxy", value_name = "URL")]
    pub(crate) proxy: Option<String>,

    /// Trace the protocol of the first connections on stderr, like `nghttp -v`: handshake, HTTP/1.1
    /// heads, HTTP/2 SETTINGS, WINDOW_UPDATE, RST_STREAM, GOAWAY and the first header blocks;
    /// `-vv` adds DATA and every header block.
    #[arg(help_heading = OUTPUT, short = 'v', long = "verbose", action = clap::ArgAction::Count, conflicts_with = "quiet")]
    pub(crate) verbose: u8,

    /// Color the report: auto (when stdout is a terminal and NO_COLOR is unset), always, never.
    #[arg(help_heading = OUTPUT, long = "color", value_name = "WHEN", value_enum, default_value_t)]
    pub(crate) color: ColorChoice,

    /// Print only errors and the one-line summary of each cell (no progress bar, no details).
    #[arg(help_heading = OUTPUT, short = 'q', long = "quiet")]
    pub(crate) quiet: bool,

    /// Where stderr is not a terminal (CI, kubectl logs), a progress line this often (100ms or
    /// more; default 10s).
    #[arg(help_heading = OUTPUT, long = "progress-interval", value_name = "DURATION", value_parser = parse_progress_interval)]
    pub(crate) progress_interval: Option<Duration>,

    /// Length of the timeline's intervals (requests, errors, p50/p99/max per interval), 1ms..=30 days.
    /// Default: chosen per cell for at least 20 intervals, at most 1s.
    #[arg(help_heading = OUTPUT, long = "interval", value_name = "DURATION", value_parser = parse_interval)]
    pub(crate) interval: Option<Duration>,

    /// Write one tab-separated line per request to FILE: start (µs since the epoch), status (-1 if
    /// it failed), duration (µs), time to first byte (µs), connection id, stream id, protocol, cell
    /// (- for standard output).
    #[arg(help_heading = OUTPUT, long = "log-file", value_name = "FILE")]
    pub(crate) log_file: Option<PathBuf>,

    /// Pause between cells of a sweep.
    #[arg(help_heading = LOAD, long = "cooldown", value_name = "DURATION", value_parser = parse_duration)]
    pub(crate) cooldown: Option<Duration>,

    /// Run the whole sweep N times (1..=100), interleaved: round 1 of every cell, then round 2 in
    /// another order (--round-order), each on fresh connections with its own warm-up. Each cell's
    /// figures and ratios then carry intervals across the rounds, which include the run-to-run
    /// variation that one run's intervals cannot see. With --find-max, each step of the search
    /// is taken N times in a row instead, each round on fresh connections.
    #[arg(help_heading = LOAD, long = "rounds", value_name = "N", default_value_t = 1,
          value_parser = count::<u64>(1, MAX_ROUNDS))]
    pub(crate) rounds: u64,

    /// The order of the cells in each round after the first: alternate (the reverse of the round
    /// before) or shuffle (drawn from --seed).
    #[arg(
        help_heading = LOAD,
        long = "round-order",
        value_name = "ORDER",
        value_enum,
        default_value_t
    )]
    pub(crate) round_order: RoundOrder,

    /// Serve live metrics for Prometheus at http://ADDR/metrics during the whole run (every cell);
    /// port 0 picks a free port, printed on stderr.
    #[arg(help_heading = OUTPUT, long = "metrics-listen", value_name = "ADDR")]
    pub(crate) metrics_listen: Option<std::net::SocketAddr>,

    /// Keep serving --metrics-listen this long after the run, so a last scrape sees the final
    /// values (Ctrl-C ends it at once).
    #[arg(help_heading = OUTPUT, long = "metrics-linger", value_name = "DURATION", value_parser = parse_duration,
          default_value = "5s", requires = "metrics_listen")]
    pub(crate) metrics_linger: Duration,

    /// Sample this process's CPU and memory during each cell (repeatable; the built-in target is
    /// always watched).
    #[arg(help_heading = OUTPUT, long = "watch-pid", value_name = "PID")]
    pub(crate) watch_pid: Vec<u32>,

    /// Multiply request counts, concurrency levels and durations by this factor (to run a scenario
    /// small), 0.000001..=1000; the results must stay within each flag's limit. Scaled down, levels
    /// stay distinct and in order (-c 1,10,100 at 0.01 is 1,2,3), -n keeps one request per
    /// connection and stream, and -D stays at least 1s.
    #[arg(help_heading = LOAD, long = "scale", value_name = "FACTOR", value_parser = parse_scale)]
    pub(crate) scale: Option<f64>,

    /// Path requested from the built-in target when no URL is given.
    #[arg(help_heading = TARGET, long = "target-path", value_name = "PATH", default_value = "/ping")]
    pub(crate) target_path: String,

    /// Serve the built-in target over TLS for every cell (HTTP/1.1 over TLS for h1, as when h2 or h3 cells are in the sweep; h2 cells always use TLS).
    #[arg(help_heading = TARGET, long = "target-tls")]
    pub(crate) target_tls: bool,

    /// Delay every response of the built-in target by this long (a slow handler, or a far server).
    #[arg(help_heading = TARGET, long = "target-delay", value_name = "DURATION", value_parser = parse_duration)]
    pub(crate) target_delay: Option<Duration>,

    /// Make the built-in target misbehave (see `serve --fault`).
    #[arg(help_heading = TARGET, long = "target-fault", value_name = "MODE")]
    pub(crate) target_fault: Option<Fault>,

    /// Make the built-in target stall at the end of every this long (see --target-stall-for).
    #[arg(help_heading = TARGET, long = "target-stall-every", value_name = "DURATION", value_parser = parse_positive_duration,
          requires = "target_stall_for")]
    pub(crate) target_stall_every: Option<Duration>,

    /// Length of the built-in target's stalls: it answers nothing meanwhile.
    #[arg(help_heading = TARGET, long = "target-stall-for", value_name = "DURATION", value_parser = parse_positive_duration,
          requires = "target_stall_every")]
    pub(crate) target_stall_for: Option<Duration>,

    /// Slow the built-in target down every other period of this long (see --target-slow-by): a
    /// server whose capacity changes over time.
    #[arg(long = "target-slow-every", value_name = "DURATION", value_parser = parse_positive_duration,
          requires = "target_slow_by")]
    pub(crate) target_slow_every: Option<Duration>,

    /// How much longer each response of the built-in target waits in its slow periods.
    #[arg(long = "target-slow-by", value_name = "DURATION", value_parser = parse_positive_duration,
          requires = "target_slow_every")]
    pub(crate) target_slow_by: Option<Duration>,

    /// Fail the run (exit status 3) when this holds for a cell, e.g. 'p99>50ms', 'errors>1%',
    /// 'rps<5000' (repeatable): METRIC OP VALUE with p50, p90, p99, p99.9, max (durations in us,
    /// ms, s), errors (a percentage of the finished requests) or rps; OP is <, >, <= or >=.
    #[arg(help_heading = OUTPUT, long = "fail-if", value_name = "EXPR", value_parser = objective::parse)]
    pub(crate) fail_if: Vec<Objective>,

    /// Search each cell for the highest constant rate that keeps every --slo, on warm
    /// connections (a coarse ramp, then a bisection); -c and -m cap the concurrency.
    #[arg(help_heading = RATE, long = "find-max", conflicts_with_all = ["requests", "duration", "rate", "rps", "stages"])]
    pub(crate) find_max: bool,

    /// An objective --find-max must keep, in the --fail-if grammar with < or <= (repeatable)
    /// [default: p99<100ms and errors<1%].
    #[arg(help_heading = RATE, long = "slo", value_name = "EXPR", requires = "find_max",
          value_parser = objective::parse)]
    pub(crate) slo: Vec<Objective>,

    /// Length of each full step of --find-max; the shorter ramp steps take a third of it, and
    /// every step settles for a third of its length before it measures.
    #[arg(help_heading = RATE, long = "step-duration", value_name = "DURATION", default_value = "3s",
          value_parser = parse_step_duration, requires = "find_max")]
    pub(crate) step_duration: Duration,

    /// --find-max stops when the passing and failing rates are this close: (fail - pass) / pass,
    /// in percent, 0.1%..=50%.
    #[arg(help_heading = RATE, long = "precision", value_name = "PCT", default_value = "5%",
          value_parser = parse_precision, requires = "find_max")]
    pub(crate) precision: f64,

    /// Files to write the results to.
    #[command(flatten, next_help_heading = OUTPUT)]
    pub(crate) outputs: OutputArgs,

    /// What every response must show to count as a success.
    #[command(flatten, next_help_heading = "Response checks")]
    pub(crate) checks: CheckArgs,

    /// gRPC: the method to call and its message.
    #[command(flatten, next_help_heading = "gRPC")]
    pub(crate) grpc: crate::cli::GrpcArgs,

    /// Event streams: which responses are read as events.
    #[command(flatten, next_help_heading = "Event streams")]
    pub(crate) events: crate::cli::EventArgs,

    /// Start measuring at this wall-clock time (RFC 3339, e.g. 2026-11-21T10:00:00Z), so runs on
    /// several machines begin together.
    #[arg(help_heading = LOAD, long = "start-at", value_name = "TIME", value_parser = crate::units::parse_rfc3339)]
    pub(crate) start_at: Option<std::time::SystemTime>,

    /// Run part I of N of the scenario, so that N machines run it once between them (N alone: I
    /// from JOB_COMPLETION_INDEX + 1, as an Indexed Job's pods have it): -n and -c are split
    /// exactly (the remainders to the first parts), --rate and --stages too (each part takes
    /// every N-th send time of the whole schedule), so `merge` of the N reports has one machine's
    /// totals. Not with --find-max or --until-stable, which need one decider.
    #[arg(help_heading = LOAD, long = "shard", value_name = "I/N", value_parser = Shard::parse)]
    pub(crate) shard: Option<Shard>,
}

fn parse_requests(text: &str) -> Result<Requests, String> {
    let (digits, per) = match text.strip_suffix('x') {
        Some(digits) => (digits, true),
        None => (text, false),
    };
    let count = parse_count(digits).map_err(|error| {
        format!(
            "{error}; -n takes a request count (10000, 10k, or 2x for two per concurrent request)"
        )
    })?;
    if count == 0 {
        return Err("the request count must be at least 1".to_owned());
    }
    if count > MAX_REQUESTS {
        return Err(format!(
            "'{text}' is more than {MAX_REQUESTS} (10^12) requests"
        ));
    }
    Ok(if per {
        Requests::PerConcurrency(count)
    } else {
        Requests::Total(count)
    })
}

/// `value`, read from `text`, if it is a number within `low..=high`; `what` names it in the
/// error.
fn within(
    text: &str,
    value: Option<f64>,
    (low, high): (f64, f64),
    what: &str,
) -> Result<f64, String> {
    match value {
        Some(value) if (low..=high).contains(&value) => Ok(value),
        _ => Err(format!("'{text}' is not {what} between {low} and {high}")),
    }
}

/// A rate, SI suffixes allowed (`--rate 1.5k` is 1500/s).
fn parse_rate(text: &str) -> Result<f64, String> {
    within(
        text,
        parse_si_number(text).ok(),
        (MIN_RATE, MAX_RATE),
        "a rate in requests per second",
    )
}

fn parse_stage(text: &str) -> Result<Stage, String> {
    Stage::parse(text)
}

fn parse_scale(text: &str) -> Result<f64, String> {
    within(
        text,
        text.parse().ok(),
        (MIN_SCALE, MAX_SCALE),
        "a factor (example: 0.01)",
    )
}

/// A `--step-duration`: long enough to measure something, short enough for a search to end.
fn parse_step_duration(text: &str) -> Result<Duration, String> {
    let step = parse_duration(text)?;
    if !(MIN_STEP..=MAX_STEP).contains(&step) {
        return Err(format!(
            "'{text}' is not a step length between 300ms and 10m"
        ));
    }
    Ok(step)
}

/// A `--precision` in percent (`5%` or `5`), as a fraction.
fn parse_precision(text: &str) -> Result<f64, String> {
    match parse_percent(text) {
        Ok(percent) if (0.1..=50.0).contains(&percent) => Ok(percent / 100.0),
        _ => Err(format!("'{text}' is not a precision between 0.1% and 50%")),
    }
}

fn parse_progress_interval(text: &str) -> Result<Duration, String> {
    parse_at_least(
        text,
        MIN_PROGRESS_INTERVAL,
        "100ms shortest progress interval",
    )
}

fn parse_interval(text: &str) -> Result<Duration, String> {
    parse_at_least(text, MIN_INTERVAL, "1ms shortest interval")
}

/// A duration of `shortest` or more; `what` names the bound in the error.
fn parse_at_least(text: &str, shortest: Duration, what: &str) -> Result<Duration, String> {
    let interval = parse_duration(text)?;
    if interval < shortest {
        return Err(format!("'{text}' is shorter than the {what}"));
    }
    Ok(interval)
}
