//! Turns command-line options into a validated [`RunPlan`]: what to send, where, how hard and for how long.

pub mod objective;
pub mod route;
pub mod template;
pub mod urls;

use std::borrow::Cow;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::{Method, Uri};
use rustls::pki_types::ServerName;
use serde::Serialize;

use crate::cli::input;
use crate::cli::limits::{MAX_BODY_FILE, MAX_CLIENTS, MAX_RATE, MAX_REQUESTS, MAX_STREAMS};
use crate::cli::{IoArg, LoadArgs, NoTlsProto, ProtoArg, Requests};
use crate::error::quoted;
use crate::proto::check::Checks;
use crate::proto::request::RequestParts;
use crate::tls;
use crate::units::{counted, MAX_DURATION};
use crate::usage_bail;

pub mod stages;

use route::Route;
use stages::Stages;
use template::Template;

/// Requests sent when neither `-n` nor `-D` is given.
pub const DEFAULT_REQUESTS: u64 = 10_000;

/// The protocol a connection speaks once established.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Protocol {
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
    pub const ALL: [Protocol; 4] = [Protocol::Http1, Protocol::H2c, Protocol::H2, Protocol::H3];

    /// The protocol's identifier, as h2load prints it.
    pub fn id(self) -> &'static str {
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
pub enum Negotiation {
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

/// `c=10 m=1`, with ` rate=500` when paced: a cell's concurrency and pacing, as labels show them.
pub(crate) fn setting_label(clients: usize, streams: usize, rate: Option<f64>) -> String {
    match rate {
        Some(rate) => format!("c={clients} m={streams} rate={rate}"),
        None => format!("c={clients} m={streams}"),
    }
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
    pub fn paced(&self) -> bool {
        self.rate.is_some() || self.stages.is_some()
    }

    /// The cell's protocol as the user names it: `h1`, `h2c`, `h2c-upgrade`, `h2`, `h1-tls` or `auto`.
    pub fn protocol_label(&self) -> &'static str {
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

/// TLS settings of an https:// run.
#[derive(Debug, Clone)]
pub struct TlsPlan {
    /// The client configuration (trust, client identity, ALPN list).
    pub config: Arc<rustls::ClientConfig>,
    /// The name sent as SNI and verified against the certificate.
    pub server_name: ServerName<'static>,
    /// `--tls-resume`: each thread keeps a session cache and resumes sessions from it.
    pub resume: bool,
    /// `--tls-early-data`: requests leave as TLS 1.3 early data on resumed connections.
    pub early_data: bool,
}

/// When the run stops sending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopRule {
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
pub struct Destination {
    /// The URLs given on the command line, for the report.
    pub urls: Vec<String>,
    /// How every connection reaches the server.
    pub route: Route,
    /// `-i`: the file more URLs came from, for the report.
    pub input_file: Option<String>,
    /// `host[:port]` as written in the first URL; the default Host / `:authority`.
    pub authority: String,
}

/// What each request looks like. Engines prebuild their wire form from this once per thread.
#[derive(Debug, Clone)]
pub struct RequestTemplate {
    /// Method, authority, headers and body: what the wire encoders read (`proto` knows no plan).
    /// Read as the template's own fields (`request.method`) through `Deref`.
    pub parts: RequestParts,
    /// Paths (with query) used in turn, or at random with `random_paths`.
    pub paths: Vec<String>,
    /// `--urls-random`: each request picks its path at random.
    pub random_paths: bool,
    /// The parts with placeholders, if any: engines then render each request.
    pub templated: Option<Arc<Templated>>,
    /// Whether requests take a number over the whole run (`{seq}`, and what random draws
    /// derive from): one shared counter, touched only then.
    pub numbered: bool,
}

impl std::ops::Deref for RequestTemplate {
    type Target = RequestParts;

    fn deref(&self) -> &RequestParts {
        &self.parts
    }
}

/// The parts of a request that hold placeholders (`None`: sent as they are).
#[derive(Debug)]
pub struct Templated {
    /// One per path of [`RequestTemplate::paths`].
    pub paths: Vec<Option<Template>>,
    /// One per header of [`RequestParts::headers`].
    pub headers: Vec<Option<Template>>,
    /// The body's.
    pub body: Option<Template>,
    /// Whether a part uses `{seq}`: the run then numbers its requests.
    pub seq: bool,
}

impl Templated {
    /// The templates of `request`, `None` when no part holds a placeholder.
    fn parse(
        request: &RequestTemplate,
        body_file: Option<&std::path::Path>,
    ) -> Result<Option<Templated>> {
        let paths = request
            .paths
            .iter()
            .map(|path| {
                Template::parse(path.as_bytes(), &format!("URL path '{}'", quoted(path)))
                    .map(|template| template.map(Template::in_uri))
            })
            .collect::<Result<Vec<_>>>()?;
        let headers = request
            .headers
            .iter()
            .map(|(name, value)| {
                Template::parse(
                    value.as_bytes(),
                    &format!(
                        "-H '{name}: {}'",
                        quoted(&String::from_utf8_lossy(value.as_bytes()))
                    ),
                )
            })
            .collect::<Result<Vec<_>>>()?;
        let body = match body_file {
            Some(file) => Template::parse(&request.body, &format!("-d file '{}'", file.display()))?,
            None => None,
        };
        let parts = || {
            paths
                .iter()
                .chain(&headers)
                .chain(std::iter::once(&body))
                .flatten()
        };
        if parts().next().is_none() {
            return Ok(None);
        }
        let seq = parts().any(Template::uses_seq);
        Ok(Some(Templated {
            seq,
            paths,
            headers,
            body,
        }))
    }

    /// Whether a part draws random numbers.
    pub fn uses_random(&self) -> bool {
        self.paths
            .iter()
            .chain(&self.headers)
            .chain(std::iter::once(&self.body))
            .flatten()
            .any(Template::uses_random)
    }
}

impl RequestTemplate {
    /// Whether requests draw random numbers (`--urls-random`, `{rand:N}`, `{uuid}`).
    pub fn draws_random(&self) -> bool {
        self.random_paths || self.templated.as_ref().is_some_and(|t| t.uses_random())
    }
}

/// Connection and request time limits; `None` means no limit.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Timeouts {
    /// Limit on TCP connect.
    pub connect: Option<Duration>,
    /// Limit on one request, from send to last byte.
    pub request: Option<Duration>,
    /// Limit on a connection's lifetime.
    pub connection_active: Option<Duration>,
    /// Limit on a connection's silence.
    pub connection_inactivity: Option<Duration>,
    /// HTTP/3: how long a QUIC connection may hear nothing (keep-alive PINGs included) before it
    /// is given up. Not a flag: [`QUIC_IDLE_TIMEOUT`], which tests shorten.
    pub quic_idle: Duration,
}

/// How long a QUIC connection may hear nothing before it is given up (RFC 9000 §10.1). The
/// client sends keep-alive PINGs at a third of it, so only a vanished server reaches it; a
/// response may take any time (`--request-timeout` bounds it).
pub const QUIC_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long connecting may take (TCP, TLS and the server's HTTP/2 SETTINGS) when
/// `--connect-timeout` is not given: a server that never completes a handshake ends the run.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// HTTP/2 settings the client announces.
#[derive(Debug, Clone, Copy, Serialize, serde::Deserialize)]
pub struct H2Settings {
    /// SETTINGS_INITIAL_WINDOW_SIZE.
    pub stream_window: u32,
    /// Connection-level receive window.
    pub connection_window: u32,
    /// SETTINGS_MAX_FRAME_SIZE.
    pub max_frame_size: u32,
    /// SETTINGS_HEADER_TABLE_SIZE.
    pub header_table_size: u32,
}

/// Everything a run needs, validated.
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// Where to connect.
    pub destination: Destination,
    /// What to send.
    pub request: RequestTemplate,
    /// How connections arrive at their protocol.
    pub negotiation: Negotiation,
    /// TLS settings, for https:// URLs.
    pub tls: Option<TlsPlan>,
    /// When to stop.
    pub stop: StopRule,
    /// Concurrent connections.
    pub clients: usize,
    /// OS threads.
    pub threads: usize,
    /// Requests in flight per connection (h2 streams or h1 pipeline depth).
    pub max_concurrent: usize,
    /// Time limits.
    pub timeouts: Timeouts,
    /// How often a request the server never processed is sent again (`None`: `--no-retry`).
    pub max_retries: Option<u8>,
    /// Requests a connection carries before it closes and its slot connects again
    /// (`--requests-per-connection`; 1 with `--no-keepalive`); `None`: as many as it can.
    pub requests_per_connection: Option<u64>,
    /// `--no-keepalive`: HTTP/1.1 requests carry `Connection: close`.
    pub no_keepalive: bool,
    /// HTTP/2 settings.
    pub h2: H2Settings,
    /// Total requests per second on a fixed schedule (`--rate`, or `--rps` × connections).
    pub rate: Option<f64>,
    /// `--stages`: a ramp of rates instead (`rate` is then `None`; `--rate` is the ramp's start).
    pub stages: Option<Stages>,
    /// Length of the timeline's intervals.
    pub interval: TimelineInterval,
    /// Adjustments made to the options, printed before the run.
    pub notes: Vec<String>,
    /// Input that was ignored for safety, printed before the run even with `--quiet`.
    pub warnings: Vec<String>,
    /// The response checks (`--expect-*`), if any: without them nothing is compared or searched.
    pub checks: Option<Arc<Checks>>,
    /// `--seed`, or the one drawn for the run: what `--urls-random`, `{rand:N}` and `{uuid}`
    /// draw from.
    pub seed: u64,
    /// The I/O backend of TCP and unix-socket connections (`--io`), resolved: `auto` has become
    /// one of the two.
    pub io: IoBackend,
}

/// How a runner thread does its connections' I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IoBackend {
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
    pub fn name(self) -> &'static str {
        match self {
            IoBackend::Epoll => "epoll",
            IoBackend::Uring { sqpoll: false } => "uring",
            IoBackend::Uring { sqpoll: true } => "uring+sqpoll",
        }
    }
}

/// Resolves `--io` and `--io-sqpoll` for a cell: `auto` becomes io_uring if the kernel allows it,
/// else epoll with a note saying why (`uring_verdict`, the caller's probe, is asked only for
/// `auto` and `uring`: it runs once per process, and the sweep prints each note once); `uring`
/// where the kernel refuses it is a runtime failure (status 1), not a usage error: the command
/// line is right, the machine says no. HTTP/3 runs on quinn's UDP socket,
/// which only the epoll reactor drives, so an h3 cell is epoll whatever `--io` says; so is a run
/// through `--proxy` or with `--tls-early-data`, whose connections stay on tokio's TCP stream
/// (the tunnel peeks at the proxy's answer; early data needs tokio-rustls' stream).
fn io_backend(
    args: &LoadArgs,
    negotiation: Negotiation,
    uring_verdict: &dyn Fn() -> Result<(), String>,
    notes: &mut Vec<String>,
) -> Result<IoBackend> {
    let uring = IoBackend::Uring {
        sqpoll: args.io_sqpoll,
    };
    match args.io {
        IoArg::Epoll if args.io_sqpoll => {
            usage_bail!("--io-sqpoll needs --io uring or --io auto (it polls an io_uring)")
        }
        IoArg::Epoll => Ok(IoBackend::Epoll),
        _ if negotiation == Negotiation::Quic || args.proxy.is_some() || args.tls_early_data => {
            Ok(IoBackend::Epoll)
        }
        IoArg::Uring => match uring_verdict() {
            Ok(()) => Ok(uring),
            Err(reason) => anyhow::bail!("--io uring: io_uring unavailable ({reason})"),
        },
        IoArg::Auto => match uring_verdict() {
            Ok(()) => Ok(uring),
            Err(reason) => {
                notes.push(format!(
                    "--io auto: io_uring unavailable ({reason}); using epoll"
                ));
                Ok(IoBackend::Epoll)
            }
        },
    }
}

/// One cell of a run: a protocol at a concurrency level. A sweep is a list of cells.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CellSpec {
    /// The protocol asked for (None: h2load's default for the URL's scheme).
    pub proto: Option<ProtoArg>,
    /// Connections.
    pub clients: u64,
    /// Requests in flight per connection.
    pub streams: u64,
    /// Total requests per second (`--rate`), if paced.
    pub rate: Option<f64>,
    /// Which concurrency level of the sweep this cell belongs to (cells of one level are compared).
    pub level: usize,
}

impl CellSpec {
    /// Whether this cell needs a TLS target (`https://`); `target_tls` asks it of HTTP/1.1 cells too.
    pub fn needs_tls(&self, target_tls: bool) -> bool {
        match self.proto {
            Some(ProtoArg::H2 | ProtoArg::Auto | ProtoArg::H3) => true,
            Some(ProtoArg::H1) | None => target_tls,
            Some(ProtoArg::H2c | ProtoArg::H2cUpgrade) => false,
        }
    }
}

/// Expands `-c`, `-m` and `--proto` lists into cells, in the order they run: for each connection
/// count, for each stream count, every protocol. `first_file_url` is the first URL of the `-i`
/// file, which the caller has read and checked (it decides h2c for `--h2-multiplex`).
pub fn cells(args: &LoadArgs, first_file_url: Option<&str>) -> Vec<CellSpec> {
    let protocols: Vec<Option<ProtoArg>> = if args.proto.is_empty() {
        vec![None]
    } else {
        args.proto.iter().copied().map(Some).collect()
    };
    let scale = args.scale.unwrap_or(1.0);
    let mut cells = Vec::new();
    let rates: Vec<Option<f64>> = if args.rate.is_empty() {
        vec![None]
    } else {
        args.rate.iter().copied().map(Some).collect()
    };
    let scaled_clients = scaled_levels(&args.clients, scale);
    for &clients in &scaled_clients {
        for (&streams, &rate) in args
            .max_concurrent_streams
            .iter()
            .flat_map(|m| rates.iter().map(move |r| (m, r)))
        {
            let level = cells.len() / protocols.len();
            for &proto in &protocols {
                let multiplexed = args.h2_multiplex && speaks_h2(args, proto, first_file_url);
                let (clients, streams) = if multiplexed {
                    (1, clients * streams)
                } else {
                    (clients, streams)
                };
                cells.push(CellSpec {
                    proto,
                    clients,
                    streams,
                    rate,
                    level,
                });
            }
        }
    }
    cells
}

/// Whether a cell of `proto` speaks HTTP/2 for sure: `h2`, `h2c`, `h2c-upgrade`, or no `--proto`
/// where the default is h2c (http://, h2load's default, unless `--h1` or `-p http/1.1`). `auto`
/// (https:// by default) may end up as HTTP/1.1, so it is never multiplexed.
fn speaks_h2(args: &LoadArgs, proto: Option<ProtoArg>, first_file_url: Option<&str>) -> bool {
    match proto {
        Some(ProtoArg::H2 | ProtoArg::H2c | ProtoArg::H2cUpgrade) => true,
        // HTTP/3 multiplexes too, but --h2-multiplex is h2load's HTTP/2 option.
        Some(ProtoArg::H1 | ProtoArg::Auto | ProtoArg::H3) => false,
        None => {
            let https = match args.urls.first().map(String::as_str).or(first_file_url) {
                Some(url) => url.starts_with("https://"),
                None => args.target_tls,
            };
            !https && !args.h1 && args.no_tls_proto != Some(NoTlsProto::Http11)
        }
    }
}

/// A count multiplied by `--scale`, never below 1.
fn scaled(count: u64, scale: f64) -> u64 {
    ((count as f64 * scale).round() as u64).max(1)
}

/// Sweep levels multiplied by `--scale`, kept apart: each distinct level is scaled, then raised
/// just above the next smaller one if scaling made them meet, so `-c 1,10,100 --scale 0.01` is
/// `1,2,3`, not `1,1,1`, and levels keep their order (equal levels stay equal).
fn scaled_levels(levels: &[u64], scale: f64) -> Vec<u64> {
    let mut distinct = levels.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    let mut previous = 0;
    let mapped: Vec<(u64, u64)> = distinct
        .into_iter()
        .map(|level| {
            previous = scaled(level, scale).max(previous + 1);
            (level, previous)
        })
        .collect();
    levels
        .iter()
        .map(|level| {
            mapped
                .iter()
                .find(|(original, _)| original == level)
                .map_or(*level, |(_, scaled)| *scaled)
        })
        .collect()
}

/// A `-D` that `--scale` shrinks stays at least this long (or as long as given, if shorter), so a
/// scaled cell on a busy machine still measures more than its connection setup.
const MIN_SCALED_DURATION: Duration = Duration::from_secs(1);

/// The seed of a run without `--seed`: drawn once per process, so every cell of a sweep shares it.
fn run_seed(given: Option<u64>) -> u64 {
    static DRAWN: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    given.unwrap_or_else(|| {
        *DRAWN.get_or_init(|| {
            use std::hash::{BuildHasher, Hasher};
            std::collections::hash_map::RandomState::new()
                .build_hasher()
                .finish()
        })
    })
}

/// Builds the plan of one cell. `urls` replaces `args.urls` (the app may fill in the built-in
/// target, whose CA `trust_test_ca` adds to the trusted roots); `file_urls` (`-i`) come after them.
/// `uring_verdict` says whether io_uring is usable (the engine's probe, which the caller passes:
/// the plan sits below the engine); it is asked only for `--io uring` or `--io auto`.
pub fn build(
    args: &LoadArgs,
    urls: &[String],
    file_urls: &[String],
    cell: &CellSpec,
    trust_test_ca: bool,
    uring_verdict: &dyn Fn() -> Result<(), String>,
) -> Result<RunPlan> {
    objective::check_slo(&args.slo)?;
    let parsed = parse_target(urls, file_urls)?;
    let negotiation = choose_negotiation(args, cell.proto, parsed.scheme)?;
    check_cell_limits(cell)?;
    // With --connect-to, --unix-socket or --proxy the URL's host only names the server (Host,
    // SNI; the proxy resolves it): it need not resolve here.
    let route = route::route(args, &parsed.host, parsed.port, resolve, resolve_connect_to)?;
    if negotiation == Negotiation::Quic && !matches!(route, Route::Direct(_)) {
        usage_bail!("--proto h3 runs over UDP: it cannot go through --unix-socket or --proxy (CONNECT-UDP is not supported)");
    }
    let tls = match parsed.scheme {
        Scheme::Https => Some(tls_plan(args, negotiation, &parsed.host, trust_test_ca)?),
        Scheme::Http => None,
    };
    let mut notes = Vec::new();
    let stop = stop_rule(args, cell)?;
    let mut clients = to_usize(cell.clients, "-c")?;
    if let StopRule::Requests(n) = stop {
        if n < cell.clients {
            notes.push(format!(
                "-n {n} is less than -c {clients}: only {} can carry a request, so only {} opened",
                counted(n, "connection"),
                if n == 1 { "it is" } else { "they are" }
            ));
            clients = n as usize;
        }
    }
    let mut threads = to_usize(args.threads, "-t")?;
    if threads > clients {
        notes.push(format!(
            "-t {threads} is more than the {}: using {}",
            counted(clients as u64, "connection"),
            counted(clients as u64, "thread")
        ));
        threads = clients;
    }

    let max_frame_size = u32::try_from(args.max_frame_size)
        .ok()
        .filter(|size| (16_384..=16_777_215).contains(size));
    let Some(max_frame_size) = max_frame_size else {
        usage_bail!("-f/--max-frame-size must be between 16K and 16M-1 (16384..16777215)");
    };
    let Ok(header_table_size) = u32::try_from(args.header_table_size) else {
        usage_bail!("--header-table-size must be below 4G");
    };
    let stages = stages_plan(args, cell)?;
    let rate = match (cell.rate, args.rps) {
        (Some(_), _) if stages.is_some() => None,
        (Some(rate), _) => Some(rate),
        (None, Some(per_client)) => Some(per_client_rate(per_client, clients)?),
        (None, None) => None,
    };
    let destination = Destination {
        urls: parsed.urls,
        route,
        input_file: args
            .input_file
            .as_ref()
            .map(|path| path.display().to_string()),
        authority: parsed.authority,
    };

    let request = request_template(args, parsed.paths, &destination.authority)?;
    check_tls_reuse(args, negotiation, &request)?;
    let checks = checks(args)?;
    // Last: every usage error outranks a kernel that refuses io_uring.
    let io = io_backend(args, negotiation, uring_verdict, &mut notes)?;
    Ok(RunPlan {
        request,
        destination,
        negotiation,
        tls,
        stop,
        clients,
        threads,
        max_concurrent: to_usize(cell.streams, "-m")?,
        timeouts: Timeouts {
            connect: Some(args.connect_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT)),
            request: args.request_timeout,
            connection_active: args.connection_active_timeout,
            connection_inactivity: args.connection_inactivity_timeout,
            quic_idle: QUIC_IDLE_TIMEOUT,
        },
        max_retries: (!args.no_retry).then_some(args.max_retries),
        requests_per_connection: args
            .requests_per_connection
            .or(args.no_keepalive.then_some(1)),
        no_keepalive: args.no_keepalive,
        h2: H2Settings {
            stream_window: (1u32 << args.window_bits) - 1,
            connection_window: (1u32 << args.connection_window_bits) - 1,
            max_frame_size,
            header_table_size,
        },
        rate,
        stages,
        interval: TimelineInterval::choose(args.interval, &stop),
        notes,
        warnings: parsed.warnings,
        checks,
        seed: run_seed(args.seed),
        io,
    })
}

/// The response checks the `--expect-*` flags ask for.
fn checks(args: &LoadArgs) -> Result<Option<Arc<Checks>>> {
    let given = &args.checks;
    match Checks::parse(
        &given.expect_status,
        &given.expect_header,
        given.expect_body_contains.as_deref(),
    ) {
        Ok(checks) => Ok(checks.map(Arc::new)),
        Err(problem) => usage_bail!("{problem}"),
    }
}

/// The flags' limits still hold for the cell once `--scale` and `--h2-multiplex` have been applied.
fn check_cell_limits(cell: &CellSpec) -> Result<()> {
    if cell.clients > MAX_CLIENTS {
        usage_bail!(
            "--scale makes -c {} connections, more than the limit of {MAX_CLIENTS}",
            cell.clients
        );
    }
    if cell.streams > MAX_STREAMS {
        usage_bail!(
            "--h2-multiplex puts -c × -m = {} streams on one connection, more than the limit of {MAX_STREAMS}",
            cell.streams
        );
    }
    Ok(())
}

/// The length of a cell's timeline intervals, and whether it was chosen automatically.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimelineInterval {
    /// The length recording starts with.
    pub length: Duration,
    /// No `--interval` was given: the report picks the final length from the cell's length.
    pub auto: bool,
}

impl TimelineInterval {
    /// A cell's timeline aims at no fewer intervals than this when the length is automatic.
    pub(crate) const MIN_INTERVALS: u32 = 10;
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

/// When the cell stops: `-D` (with its warm-up) or `-n`, scaled, within the limits.
fn stop_rule(args: &LoadArgs, cell: &CellSpec) -> Result<StopRule> {
    if args.find_max {
        // The search's steps end the run; the report gives the search's real length.
        return Ok(StopRule::Duration {
            warm_up: Duration::ZERO,
            measure: args.step_duration,
        });
    }
    let scale = args.scale.unwrap_or(1.0);
    if !args.stages.is_empty() {
        // The stages are the measured period; a ramp from 0 is its own warm-up.
        let measure = scaled_stages(args).iter().map(|stage| stage.duration).sum();
        return Ok(StopRule::Duration {
            warm_up: Duration::ZERO,
            measure,
        });
    }
    if let Some(measure) = args.duration {
        let warm_up = args.warm_up_time.unwrap_or_default().mul_f64(scale);
        let floor = if scale < 1.0 {
            measure.min(MIN_SCALED_DURATION)
        } else {
            Duration::ZERO
        };
        let measure = measure
            .mul_f64(scale)
            .max(floor)
            .max(Duration::from_millis(100));
        if measure.max(warm_up) > MAX_DURATION {
            usage_bail!("--scale {scale} makes -D or --warm-up-time longer than 30 days, the longest duration accepted");
        }
        return Ok(StopRule::Duration { warm_up, measure });
    }
    // A scaled-down count still gives every connection and stream of the cell a request, so the
    // level's concurrency is not cut back to the count (levels stay apart).
    let concurrency = cell.clients.saturating_mul(cell.streams);
    let scaled_count = |n: u64| {
        let floor = if scale < 1.0 { n.min(concurrency) } else { 0 };
        scaled(n, scale).max(floor)
    };
    let requests = match args.requests {
        None => Some(scaled_count(DEFAULT_REQUESTS)),
        Some(Requests::Total(n)) => Some(scaled_count(n)),
        Some(Requests::PerConcurrency(k)) => k
            .checked_mul(cell.clients)
            .and_then(|n| n.checked_mul(cell.streams)),
    };
    match requests.filter(|&n| n <= MAX_REQUESTS) {
        Some(n) => Ok(StopRule::Requests(n)),
        None => usage_bail!(
            "-n comes to more than {MAX_REQUESTS} (10^12) requests for the cell with -c {} -m {}",
            cell.clients,
            cell.streams
        ),
    }
}

/// The cell's ramp, if `--stages` is given: from `--rate` (a single one) or 0.
fn stages_plan(args: &LoadArgs, cell: &CellSpec) -> Result<Option<Stages>> {
    if args.stages.is_empty() {
        return Ok(None);
    }
    if args.rate.len() > 1 {
        usage_bail!("--rate with --stages is the ramp's starting rate: give one rate, not a list");
    }
    match Stages::new(cell.rate.unwrap_or(0.0), scaled_stages(args)) {
        Ok(stages) => Ok(Some(stages)),
        Err(problem) => usage_bail!("{problem}"),
    }
}

/// `--stages` with each stage's length multiplied by `--scale` (the rates stay: a scaled-down
/// ramp is a shorter one, not a gentler one).
fn scaled_stages(args: &LoadArgs) -> Vec<stages::Stage> {
    let scale = args.scale.unwrap_or(1.0);
    args.stages
        .iter()
        .map(|stage| stages::Stage {
            duration: stage.duration.mul_f64(scale),
            ..*stage
        })
        .collect()
}

/// `--rps` × connections, within the rate limit.
fn per_client_rate(per_client: f64, clients: usize) -> Result<f64> {
    let rate = per_client * clients as f64;
    if rate > MAX_RATE {
        usage_bail!("--rps {per_client} × {clients} connections is more than the limit of {MAX_RATE} requests/s");
    }
    Ok(rate)
}

fn to_usize(value: u64, flag: &str) -> Result<usize> {
    match usize::try_from(value) {
        Ok(value) => Ok(value),
        Err(_) => usage_bail!("{flag} {value} is too large"),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Scheme {
    Http,
    Https,
}

/// What the URLs say: where to connect, what to ask for, and how to name the server.
struct ParsedUrls {
    /// The URLs, without any user name and password.
    urls: Vec<String>,
    /// The first URL's scheme.
    scheme: Scheme,
    /// The first URL's host, without brackets.
    host: String,
    /// The first URL's port, or the scheme's.
    port: u16,
    /// `host[:port]` as written in the first URL.
    authority: String,
    /// Every URL's path and query.
    paths: Vec<String>,
    /// What was dropped from the URLs.
    warnings: Vec<String>,
}

/// Parses the URLs, `given` then `file_urls` (`-i`): the first gives scheme, host and port; every
/// URL gives a path (h2load's rule). The host is not resolved here (`--connect-to` may make that
/// unnecessary). Only the paths of the file's URLs are kept: a long list is held once.
fn parse_target(given: &[String], file_urls: &[String]) -> Result<ParsedUrls> {
    let mut warnings = Vec::new();
    let mut clean = |url: &String| match without_userinfo(url) {
        Some(clean) => {
            warnings.push(format!(
                "URL '{}': the user name and password in it are neither sent nor logged; \
                 to authenticate, use -H 'Authorization: Basic …'",
                quoted(&clean)
            ));
            clean
        }
        None => url.clone(),
    };
    let urls: Vec<String> = given.iter().map(&mut clean).collect();
    let file_first = match (urls.is_empty(), file_urls.first()) {
        (false, _) => None,
        (true, Some(first)) => Some(clean(first)),
        (true, None) => usage_bail!("no URL given"),
    };
    let first = file_first.as_ref().unwrap_or_else(|| &urls[0]);
    let uri = parse_absolute_url(first)?;
    let scheme = match uri.scheme_str() {
        Some("https") => Scheme::Https,
        _ => Scheme::Http,
    };
    let Some(authority) = uri.authority() else {
        usage_bail!("URL '{}' has no host", quoted(first));
    };
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    if host.is_empty() {
        usage_bail!("URL '{}' has no host", quoted(first));
    }
    let port = match (authority.port_u16(), authority.as_str().rsplit_once(':')) {
        (Some(0), _) => usage_bail!("URL '{}': port 0 cannot be connected to", quoted(first)),
        (Some(port), _) => port,
        (None, Some((_, after))) if !after.ends_with(']') => {
            usage_bail!(
                "URL '{}': '{}' is not a port number",
                quoted(first),
                quoted(after)
            )
        }
        (None, _) if scheme == Scheme::Https => 443,
        (None, _) => 80,
    };
    let mut paths = Vec::with_capacity(given.len() + file_urls.len());
    paths.push(path_of(&uri));
    let rest = if file_first.is_some() {
        &file_urls[1..]
    } else {
        file_urls
    };
    for url in urls.iter().skip(1).chain(rest) {
        if url.starts_with('/') {
            paths.push(bare_path(url)?);
        } else {
            paths.push(path_of(&parse_absolute_url(&clean(url))?));
        }
    }
    Ok(ParsedUrls {
        scheme,
        host: host.to_owned(),
        port,
        authority: authority.as_str().to_owned(),
        paths,
        warnings,
        urls,
    })
}

/// The URL without the `user:password@` of its authority, if it had one (a URL without its
/// scheme too). Credentials never reach the Host header, `:authority`, the report or a log.
fn without_userinfo(url: &str) -> Option<String> {
    let authority_start = url.find("://").map_or(0, |scheme_end| scheme_end + 3);
    let rest = &url[authority_start..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let at = rest[..authority_end].rfind('@')?;
    Some(format!("{}{}", &url[..authority_start], &rest[at + 1..]))
}

/// `url` as a message may show it: without the user name and password in it.
pub(crate) fn shown(url: &str) -> Cow<'_, str> {
    without_userinfo(url).map_or(Cow::Borrowed(url), Cow::Owned)
}

fn resolve_connect_to(connect_to: &str) -> Result<SocketAddr> {
    let (host, port) = route::parse_connect_to(connect_to)?;
    resolve(&host, port)
}

/// Resolves `host` once for the whole run. When it has several addresses (`localhost`: ::1 and
/// 127.0.0.1), the first that accepts a connection is used, as curl and h2load would find it.
fn resolve(host: &str, port: u16) -> Result<SocketAddr> {
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve host '{host}'"))?
        .collect();
    let Some(&first) = addrs.first() else {
        anyhow::bail!("host '{host}' has no address");
    };
    if addrs.len() == 1 {
        return Ok(first);
    }
    let probe_limit = Duration::from_secs(1);
    Ok(addrs
        .iter()
        .copied()
        .find(|addr| std::net::TcpStream::connect_timeout(addr, probe_limit).is_ok())
        .unwrap_or(first))
}

/// An http:// or https:// URL (its fragment, if any, dropped as `Uri` does).
pub(crate) fn parse_absolute_url(url: &str) -> Result<Uri> {
    let shown = shown(url);
    let quoted_url = quoted(&shown);
    if !url.contains("://") {
        usage_bail!("URL '{}' has no scheme (write http://…)", quoted_url);
    }
    match url.parse::<Uri>() {
        Ok(uri) => match uri.scheme_str() {
            Some("http" | "https") => Ok(uri),
            Some(other) => {
                usage_bail!(
                    "URL '{}': unsupported scheme '{}' (use http:// or https://)",
                    quoted_url,
                    quoted(other)
                )
            }
            None => usage_bail!("URL '{}' has no scheme (write http://…)", quoted_url),
        },
        Err(error) => usage_bail!("URL '{}' is not valid: {error}", quoted_url),
    }
}

/// A path given without scheme and host (`/…`), normalised like a URL's: its fragment dropped
/// (never sent), and refused where a URL's path would be.
pub(crate) fn bare_path(path: &str) -> Result<String> {
    match path.parse::<http::uri::PathAndQuery>() {
        Ok(valid) => Ok(valid.as_str().to_owned()),
        Err(error) => usage_bail!("path '{}' is not valid: {error}", quoted(path)),
    }
}

fn path_of(uri: &Uri) -> String {
    uri.path_and_query()
        .map(|pq| pq.as_str())
        .filter(|pq| !pq.is_empty())
        .unwrap_or("/")
        .to_owned()
}

fn choose_negotiation(
    args: &LoadArgs,
    proto: Option<ProtoArg>,
    scheme: Scheme,
) -> Result<Negotiation> {
    let requested = match (proto, args.h1, args.no_tls_proto) {
        (Some(proto), _, _) => Some(proto),
        (None, true, _) => Some(ProtoArg::H1),
        // h2load's -p applies to http:// URLs only.
        (None, false, Some(_)) if scheme == Scheme::Https => None,
        (None, false, Some(NoTlsProto::Http11)) => Some(ProtoArg::H1),
        (None, false, Some(NoTlsProto::H2c)) => Some(ProtoArg::H2c),
        (None, false, None) => None,
    };
    Ok(match (scheme, requested) {
        (Scheme::Http, None | Some(ProtoArg::H2c)) => Negotiation::Direct(Protocol::H2c),
        (Scheme::Http, Some(ProtoArg::H1)) => Negotiation::Direct(Protocol::Http1),
        (Scheme::Http, Some(ProtoArg::H2cUpgrade)) => Negotiation::H2cUpgrade,
        (Scheme::Http, Some(ProtoArg::H2)) => usage_bail!(
            "--proto h2 is HTTP/2 over TLS and needs an https:// URL; use --proto h2c for cleartext HTTP/2"
        ),
        (Scheme::Http, Some(ProtoArg::H3)) => {
            usage_bail!("--proto h3 is HTTP/3 over QUIC, always encrypted, and needs an https:// URL")
        }
        (Scheme::Https, Some(ProtoArg::H3)) => Negotiation::Quic,
        (Scheme::Http, Some(ProtoArg::Auto)) => usage_bail!(
            "--proto auto lets TLS ALPN choose and needs an https:// URL; for http:// use h1, h2c or h2c-upgrade"
        ),
        (Scheme::Https, None | Some(ProtoArg::Auto)) => Negotiation::Alpn { require: None },
        (Scheme::Https, Some(ProtoArg::H2)) => Negotiation::Alpn {
            require: Some(Protocol::H2),
        },
        (Scheme::Https, Some(ProtoArg::H1)) => Negotiation::Alpn {
            require: Some(Protocol::Http1),
        },
        (Scheme::Https, Some(ProtoArg::H2c | ProtoArg::H2cUpgrade)) => {
            usage_bail!("h2c is cleartext HTTP/2 and needs an http:// URL; use --proto h2 for https://")
        }
    })
}

/// `--tls-resume` and `--tls-early-data` need TLS over TCP; early data also needs a protocol known
/// before the handshake ends (the requests leave before ALPN answers) and a method that is safe
/// to replay (RFC 8470 §3: a server or an attacker may replay early data).
fn check_tls_reuse(
    args: &LoadArgs,
    negotiation: Negotiation,
    request: &RequestTemplate,
) -> Result<()> {
    let flag = match (args.tls_early_data, args.tls_resume) {
        (true, _) => "--tls-early-data",
        (false, true) => "--tls-resume",
        (false, false) => return Ok(()),
    };
    match negotiation {
        Negotiation::Direct(_) | Negotiation::H2cUpgrade => {
            usage_bail!("{flag} resumes TLS sessions and needs an https:// URL")
        }
        Negotiation::Quic => usage_bail!(
            "{flag} is not supported with --proto h3: quinn does not tell whether a QUIC handshake resumed"
        ),
        Negotiation::Alpn { require: None } if args.tls_early_data => usage_bail!(
            "--tls-early-data needs --proto h1 or --proto h2: requests leave before ALPN settles the protocol"
        ),
        Negotiation::Alpn { .. } => {}
    }
    if args.tls_early_data && ![Method::GET, Method::HEAD].contains(&request.method) {
        usage_bail!(
            "--tls-early-data sends only GET or HEAD requests early (a server may replay early data), not {}",
            request.method
        );
    }
    if args.tls_early_data && args.unix_socket.is_some() {
        usage_bail!("--tls-early-data is not supported with --unix-socket (TLS over TCP only)");
    }
    Ok(())
}

fn tls_plan(
    args: &LoadArgs,
    negotiation: Negotiation,
    host: &str,
    trust_test_ca: bool,
) -> Result<TlsPlan> {
    let alpn = match (&args.alpn_list, negotiation) {
        (Some(list), _) => tls::parse_alpn_list(list)?,
        (
            None,
            Negotiation::Alpn {
                require: Some(Protocol::Http1),
            },
        ) => vec![b"http/1.1".to_vec()],
        (None, Negotiation::Quic) => vec![b"h3".to_vec()],
        // Early data goes out before ALPN answers: offer only the protocol it is written in.
        (
            None,
            Negotiation::Alpn {
                require: Some(Protocol::H2),
            },
        ) if args.tls_early_data => vec![b"h2".to_vec()],
        (None, _) => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
    };
    if negotiation == Negotiation::Quic && !alpn.iter().any(|id| id == b"h3") {
        usage_bail!("--proto h3 needs h3 in --alpn-list");
    }
    if negotiation
        == (Negotiation::Alpn {
            require: Some(Protocol::H2),
        })
        && !alpn.iter().any(|id| id == b"h2")
    {
        usage_bail!("--proto h2 needs h2 in --alpn-list");
    }
    let config = tls::client_config(&tls::ClientTlsOptions {
        alpn,
        insecure: args.insecure,
        ca_file: args.cacert.as_deref(),
        trust_test_ca,
        client_identity: args.cert.as_deref().zip(args.key.as_deref()),
        // QUIC carries TLS 1.3 only (RFC 9001 §4.2).
        tls13_only: negotiation == Negotiation::Quic,
    })?;
    Ok(TlsPlan {
        config,
        server_name: tls::server_name(args.sni.as_deref().unwrap_or(host))?,
        resume: args.tls_resume || args.tls_early_data,
        early_data: args.tls_early_data,
    })
}

/// Headers every request carries unless `-H` replaces them.
fn default_headers() -> Vec<(HeaderName, HeaderValue)> {
    vec![
        (
            http::header::USER_AGENT,
            HeaderValue::from_static(concat!("h2load-rs/", env!("CARGO_PKG_VERSION"))),
        ),
        (http::header::ACCEPT, HeaderValue::from_static("*/*")),
    ]
}

fn request_template(
    args: &LoadArgs,
    paths: Vec<String>,
    authority: &str,
) -> Result<RequestTemplate> {
    let mut headers = default_headers();
    let mut authority = authority.to_owned();
    for raw in &args.headers {
        let (name, text) = parse_header(raw)?;
        // Host / :authority too: a CR or LF there would smuggle a header into every request.
        let Ok(value) = HeaderValue::from_str(&text) else {
            usage_bail!(
                "-H '{}': the value has characters not allowed in a header",
                quoted(raw)
            );
        };
        if name == "host" || name == ":authority" {
            // Connections are made for one authority (and TLS for one name): it is not rendered.
            if Template::parse(text.as_bytes(), "-H")?.is_some() {
                usage_bail!(
                    "-H '{}': placeholders are not rendered in the authority (Host, :authority)",
                    raw.escape_debug()
                );
            }
            authority = text;
            continue;
        }
        refuse_framing(&name, &text, raw)?;
        let Ok(name) = HeaderName::from_bytes(name.as_bytes()) else {
            usage_bail!(
                "-H '{}': '{}' is not a valid header name",
                quoted(raw),
                quoted(&name)
            );
        };
        headers.retain(|(existing, _)| *existing != name);
        headers.push((name, value));
    }
    let body = match &args.data {
        Some(path) => Bytes::from(input::read(path, "-d file", MAX_BODY_FILE)?),
        None => Bytes::new(),
    };
    let method = match &args.method {
        Some(method) => match Method::from_bytes(method.as_bytes()) {
            Ok(method) => method,
            Err(_) => usage_bail!("--method '{}' is not a valid HTTP method", quoted(method)),
        },
        None if args.data.is_some() => Method::POST,
        None => Method::GET,
    };
    let mut request = RequestTemplate {
        parts: RequestParts {
            method,
            authority,
            headers,
            body,
        },
        paths,
        random_paths: args.urls_random,
        templated: None,
        numbered: false,
    };
    request.templated = Templated::parse(&request, args.data.as_deref())?.map(Arc::new);
    request.numbered = request.draws_random()
        || request
            .templated
            .as_ref()
            .is_some_and(|templated| templated.seq);
    Ok(request)
}

/// Header fields a request's framing or connection depends on: the run writes them itself
/// (Content-Length from the body, `connection: close` for `--no-keepalive`, the h2c upgrade's),
/// and HTTP/2 and HTTP/3 forbid the connection-specific ones (RFC 9113 §8.2.2, RFC 9114
/// §4.2). Given twice, or beside the computed value, they would desynchronise the connection.
const FRAMING_HEADERS: [&str; 8] = [
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "upgrade",
    "http2-settings",
    "te",
];

/// Refuses `-H` `raw` (`name: value`) when it sets a framing or connection-specific field; `te:
/// trailers`, the one value HTTP/2 and HTTP/3 allow, passes.
fn refuse_framing(name: &str, value: &str, raw: &str) -> Result<()> {
    if !FRAMING_HEADERS.contains(&name) || (name == "te" && value.eq_ignore_ascii_case("trailers"))
    {
        return Ok(());
    }
    usage_bail!(
        "-H '{}': {name} is the run's to set (the body's length comes from -d, the connection's \
         handling from --no-keepalive and --proto); it cannot be given as a header",
        quoted(raw)
    )
}

/// Splits `Name: value`; a leading `:` belongs to the name (`:authority: x`).
fn parse_header(raw: &str) -> Result<(String, String)> {
    // Shown escaped: a CR or LF in the flag must not break the error message's one line.
    let shown = quoted(raw);
    let search_from = usize::from(raw.starts_with(':'));
    let Some(colon) = raw[search_from..].find(':').map(|at| at + search_from) else {
        usage_bail!("-H '{shown}': expected 'Name: value'");
    };
    let name = raw[..colon].trim().to_ascii_lowercase();
    let value = raw[colon + 1..].trim().to_owned();
    if name.is_empty() || name == ":" {
        usage_bail!("-H '{shown}': the header name is empty");
    }
    if name.starts_with(':') && name != ":authority" {
        usage_bail!(
            "-H '{shown}': only the :authority pseudo-header can be set (use --method for :method)"
        );
    }
    Ok((name, value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::uring::probe::check;
    use clap::Parser;

    fn plan(argv: &[&str]) -> Result<RunPlan> {
        let cli = crate::cli::Cli::try_parse_from(
            std::iter::once("h2load-rs").chain(argv.iter().copied()),
        )
        .expect("arguments parse");
        let cells = cells(&cli.load, None);
        build(&cli.load, &cli.load.urls, &[], &cells[0], false, &check)
    }

    fn usage_message(argv: &[&str]) -> String {
        let error = plan(argv).expect_err("plan must fail");
        assert!(
            error.downcast_ref::<crate::error::UsageError>().is_some(),
            "{error:#}"
        );
        error.to_string()
    }

    #[test]
    fn first_url_gives_the_target_and_every_url_a_path() {
        let plan = plan(&[
            "http://127.0.0.1:8080/ping?x=1#top",
            "http://other/b#f",
            "/c",
            "/d?q#frag",
        ])
        .unwrap();
        assert!(
            matches!(plan.destination.route, Route::Direct(addr) if addr == "127.0.0.1:8080".parse().unwrap())
        );
        assert_eq!(plan.request.authority, "127.0.0.1:8080");
        // Fragments are never sent, whether the URL is full or a bare path.
        assert_eq!(plan.request.paths, ["/ping?x=1", "/b", "/c", "/d?q"]);
        assert_eq!(plan.negotiation, Negotiation::Direct(Protocol::H2c));
        assert!(plan.tls.is_none());
        assert_eq!(plan.stop, StopRule::Requests(DEFAULT_REQUESTS));
    }

    #[test]
    fn file_urls_follow_the_command_line_and_templates_are_found() {
        let cli = crate::cli::Cli::try_parse_from([
            "h2load-rs",
            "--urls-random",
            "--seed",
            "9",
            "-H",
            "x-id: {uuid}",
            "http://127.0.0.1:1/a",
        ])
        .unwrap();
        let file = ["/b/{seq}".to_owned(), "http://other:2/c".to_owned()];
        let built = build(
            &cli.load,
            &cli.load.urls,
            &file,
            &cells(&cli.load, None)[0],
            false,
            &check,
        )
        .unwrap();
        assert_eq!(built.request.paths, ["/a", "/b/{seq}", "/c"]);
        assert_eq!(
            built.destination.urls,
            ["http://127.0.0.1:1/a"],
            "the file's stay out"
        );
        assert!(
            matches!(built.destination.route, Route::Direct(addr) if addr == "127.0.0.1:1".parse().unwrap())
        );
        assert_eq!(built.seed, 9);
        assert!(built.request.random_paths && built.request.numbered);
        let templated = built.request.templated.as_ref().unwrap();
        let templated_paths: Vec<bool> = templated.paths.iter().map(Option::is_some).collect();
        assert_eq!(templated_paths, [false, true, false]);
        assert!(templated.seq && templated.uses_random());
        let plain = plan(&["http://127.0.0.1:1/a", "/b"]).unwrap();
        assert!(plain.request.templated.is_none() && !plain.request.numbered);
    }

    #[test]
    fn h1_spellings_agree() {
        for argv in [["--h1"], ["--proto=h1"], ["-phttp/1.1"]] {
            let plan = plan(&[argv[0], "http://127.0.0.1:1/"]).unwrap();
            assert_eq!(
                plan.negotiation,
                Negotiation::Direct(Protocol::Http1),
                "{argv:?}"
            );
        }
    }

    #[test]
    fn fewer_requests_than_clients_opens_fewer_connections() {
        let plan = plan(&["-n", "3", "-c", "10", "-t", "4", "http://127.0.0.1:1/"]).unwrap();
        assert_eq!((plan.clients, plan.threads), (3, 3));
        assert_eq!(plan.notes.len(), 2);
    }

    #[test]
    fn headers_replace_defaults_and_host_sets_authority() {
        let plan = plan(&[
            "-H",
            "User-Agent: x",
            "-H",
            "Host: example",
            "-H",
            "x-a:  b ",
            "http://127.0.0.1:1/",
        ])
        .unwrap();
        let names: Vec<_> = plan
            .request
            .headers
            .iter()
            .map(|(n, v)| format!("{n}={}", v.to_str().unwrap()))
            .collect();
        assert_eq!(names, ["accept=*/*", "user-agent=x", "x-a=b"]);
        assert_eq!(plan.request.authority, "example");
    }

    #[test]
    fn bad_input_is_a_usage_error_naming_the_problem() {
        assert!(usage_message(&["ftp://127.0.0.1/"]).contains("unsupported scheme 'ftp'"));
        assert!(usage_message(&["127.0.0.1:8080/ping"]).contains("has no scheme"));
        assert!(usage_message(&["http://127.0.0.1:0/"]).contains("port 0"));
        assert!(usage_message(&["-H", "novalue", "http://127.0.0.1:1/"])
            .contains("expected 'Name: value'"));
        assert!(usage_message(&["-H", "bad name: v", "http://127.0.0.1:1/"])
            .contains("not a valid header name"));
        assert!(
            usage_message(&["-H", ":path: /x", "http://127.0.0.1:1/"]).contains("pseudo-header")
        );
        assert!(usage_message(&["--proto", "h2", "http://127.0.0.1:1/"])
            .contains("needs an https:// URL"));
        assert!(usage_message(&["-f", "1K", "http://127.0.0.1:1/"]).contains("max-frame-size"));
        assert!(usage_message(&["--method", "GE T", "http://127.0.0.1:1/"])
            .contains("not a valid HTTP method"));
    }

    #[test]
    fn lists_expand_into_cells_in_order() {
        let cli = crate::cli::Cli::try_parse_from([
            "h2load-rs",
            "-c",
            "1,10",
            "--proto",
            "h1,h2c",
            "--h2-multiplex",
            "-n",
            "2x",
            "http://127.0.0.1:1/",
        ])
        .unwrap();
        let cells = cells(&cli.load, None);
        let shape: Vec<_> = cells
            .iter()
            .map(|c| (c.proto, c.clients, c.streams, c.level))
            .collect();
        assert_eq!(
            shape,
            [
                (Some(ProtoArg::H1), 1, 1, 0),
                (Some(ProtoArg::H2c), 1, 1, 0),
                (Some(ProtoArg::H1), 10, 1, 1),
                (Some(ProtoArg::H2c), 1, 10, 1),
            ]
        );
        let plan = build(&cli.load, &cli.load.urls, &[], &cells[3], false, &check).unwrap();
        assert_eq!(
            plan.stop,
            StopRule::Requests(20),
            "2x of 1 connection × 10 streams"
        );
        assert_eq!(plan.protocol_label(), "h2c");
    }

    #[test]
    fn scaled_levels_stay_distinct_and_ordered() {
        assert_eq!(scaled_levels(&[1, 10, 100], 0.01), [1, 2, 3]);
        assert_eq!(scaled_levels(&[4, 16, 64], 0.01), [1, 2, 3]);
        assert_eq!(scaled_levels(&[100, 10, 1000], 0.1), [10, 1, 100]);
        assert_eq!(scaled_levels(&[10, 10, 20], 0.01), [1, 1, 2]);
        assert_eq!(scaled_levels(&[16000], 0.01), [160]);
        assert_eq!(scaled_levels(&[1, 2], 10.0), [10, 20]);
    }

    #[test]
    fn scale_shrinks_counts_levels_and_durations() {
        let cli = crate::cli::Cli::try_parse_from([
            "h2load-rs",
            "-c",
            "16000",
            "-n",
            "100000",
            "--scale",
            "0.01",
            "http://127.0.0.1:1/",
        ])
        .unwrap();
        let cells = cells(&cli.load, None);
        assert_eq!(cells[0].clients, 160);
        let plan = build(&cli.load, &cli.load.urls, &[], &cells[0], false, &check).unwrap();
        assert_eq!(plan.stop, StopRule::Requests(1000));
        let timed = crate::cli::Cli::try_parse_from([
            "h2load-rs",
            "-D",
            "30s",
            "--scale",
            "0.1",
            "http://127.0.0.1:1/",
        ])
        .unwrap();
        let timed_cells = super::cells(&timed.load, None);
        let plan = build(
            &timed.load,
            &timed.load.urls,
            &[],
            &timed_cells[0],
            false,
            &check,
        )
        .unwrap();
        assert_eq!(
            plan.stop,
            StopRule::Duration {
                warm_up: Duration::ZERO,
                measure: Duration::from_secs(3)
            }
        );
        let floored = crate::cli::Cli::try_parse_from([
            "h2load-rs",
            "-D",
            "30s",
            "--scale",
            "0.01",
            "http://127.0.0.1:1/",
        ])
        .unwrap();
        let plan = build(
            &floored.load,
            &floored.load.urls,
            &[],
            &super::cells(&floored.load, None)[0],
            false,
            &check,
        )
        .unwrap();
        assert_eq!(
            plan.stop,
            StopRule::Duration {
                warm_up: Duration::ZERO,
                measure: MIN_SCALED_DURATION
            },
            "0.3 s is raised to the floor"
        );
    }

    #[test]
    fn unreadable_body_files_are_usage_errors() {
        assert!(
            usage_message(&["-d", "/nonexistent/body", "http://127.0.0.1:1/"])
                .contains("cannot read the -d file '/nonexistent/body'")
        );
        assert!(usage_message(&["-d", "/dev/zero", "http://127.0.0.1:1/"])
            .contains("the -d file '/dev/zero' is not a regular file"));
    }

    #[test]
    fn credentials_in_the_url_are_dropped_with_a_warning() {
        let plan = plan(&["http://user:secret@127.0.0.1:8080/p?q", "/b"]).unwrap();
        assert_eq!(plan.request.authority, "127.0.0.1:8080");
        assert_eq!(plan.destination.urls, ["http://127.0.0.1:8080/p?q", "/b"]);
        assert_eq!(plan.warnings.len(), 1);
        assert!(!plan.warnings[0].contains("secret"), "{}", plan.warnings[0]);
        assert!(plan.warnings[0].contains("-H 'Authorization: Basic"));
        assert_eq!(
            without_userinfo("http://a@b.example/x@y"),
            Some("http://b.example/x@y".to_owned())
        );
        assert_eq!(without_userinfo("http://b.example/x@y"), None);
    }

    #[test]
    fn host_is_checked_like_every_header() {
        for header in ["Host: a\r\nEvil: b", ":authority: a\nb", "Host: a\0b"] {
            let message = usage_message(&["-H", header, "http://127.0.0.1:1/"]);
            assert!(message.contains("not allowed in a header"), "{message}");
            assert!(
                !message.contains('\n') && !message.contains('\r'),
                "{message}"
            );
        }
    }

    #[test]
    fn connect_to_needs_no_resolvable_host() {
        let plan = plan(&[
            "--connect-to",
            "127.0.0.1:9",
            "http://no-such-host.invalid/",
        ])
        .unwrap();
        assert!(
            matches!(plan.destination.route, Route::Direct(addr) if addr == "127.0.0.1:9".parse().unwrap())
        );
        assert_eq!(plan.request.authority, "no-such-host.invalid");
    }

    #[test]
    fn unix_sockets_and_proxies_leave_the_host_unresolved() {
        let built = plan(&[
            "--unix-socket",
            "/run/app.sock",
            "https://no-such-host.invalid/",
        ])
        .unwrap();
        assert!(
            matches!(&built.destination.route, Route::Unix(path) if path.to_str() == Some("/run/app.sock"))
        );
        assert_eq!(built.request.authority, "no-such-host.invalid");
        let built = plan(&[
            "--proxy",
            "http://u:p@127.0.0.1:3128",
            "http://no-such-host.invalid:8080/",
        ])
        .unwrap();
        let Route::Proxy(proxy) = &built.destination.route else {
            panic!("{:?}", built.destination.route);
        };
        assert_eq!(proxy.addr, "127.0.0.1:3128".parse().unwrap());
        assert_eq!(proxy.target, "no-such-host.invalid:8080");
        assert_eq!(
            proxy.request,
            b"CONNECT no-such-host.invalid:8080 HTTP/1.1\r\nHost: no-such-host.invalid:8080\r\n\
              Proxy-Authorization: Basic dTpw\r\n\r\n"
        );
        let built = plan(&[
            "--proxy",
            "http://127.0.0.1:3128",
            "--connect-to",
            "10.0.0.1:443",
            "https://[::1]/",
        ])
        .unwrap();
        assert_eq!(
            built.destination.route.to_string(),
            "10.0.0.1:443 through proxy 127.0.0.1:3128"
        );
    }

    #[test]
    fn a_proxy_tunnel_target_from_connect_to_is_checked_like_without_a_proxy() {
        fn proxied(connect_to: &str) -> [&str; 5] {
            let url = "http://127.0.0.1:19180/ping";
            [
                "--proxy",
                "http://127.0.0.1:3128",
                "--connect-to",
                connect_to,
                url,
            ]
        }
        // What reached the request line unchecked: a header injection, then a missing port.
        for (connect_to, says) in [
            ("127.0.0.1:1\r\nX-Injected: yes", "is not a port number"),
            (
                "127.0.0.1\r\nX-Injected: yes:1",
                "with a DNS name or an IP address as HOST",
            ),
            ("not a host", "expected HOST:PORT"),
            ("not a host:1", "with a DNS name or an IP address as HOST"),
            ("127.0.0.1:0", "is not a port number"),
        ] {
            let message = usage_message(&proxied(connect_to));
            assert!(message.contains(says), "{connect_to:?}: {message}");
            let direct = usage_message(&["--connect-to", connect_to, "http://127.0.0.1/"]);
            assert_eq!(direct, message);
        }
        // Without --connect-to the URL's host is the target: what a URL allows in a host but
        // a CONNECT target has no use for is refused too.
        let message = usage_message(&["--proxy", "http://127.0.0.1:3128", "http://a!b'c/"]);
        assert!(message.contains("cannot be a CONNECT target"), "{message}");
        // The target is rebuilt from its parts: IPv6 in brackets, given with or without.
        for connect_to in ["[::1]:8443", "::1:8443"] {
            let built = plan(&proxied(connect_to)).unwrap();
            let Route::Proxy(proxy) = &built.destination.route else {
                panic!("{:?}", built.destination.route);
            };
            assert_eq!(
                proxy.request,
                b"CONNECT [::1]:8443 HTTP/1.1\r\nHost: [::1]:8443\r\n\r\n"
            );
        }
    }

    #[test]
    fn unix_sockets_and_proxies_refuse_h3_and_each_other() {
        for (argv, says) in [
            (
                &[
                    "--unix-socket",
                    "/s",
                    "--proto",
                    "h2",
                    "--tls-early-data",
                    "https://localhost/",
                ][..],
                "not supported with --unix-socket",
            ),
            (
                &["--unix-socket", "/s", "--proto", "h3", "https://localhost/"][..],
                "--proto h3 runs over UDP",
            ),
            (
                &[
                    "--proxy",
                    "http://127.0.0.1:1",
                    "--proto",
                    "h3",
                    "https://localhost/",
                ],
                "CONNECT-UDP is not supported",
            ),
            (
                &[
                    "--unix-socket",
                    "/s",
                    "--connect-to",
                    "127.0.0.1:1",
                    "http://localhost/",
                ],
                "--unix-socket cannot be combined",
            ),
            (
                &[
                    "--unix-socket",
                    "/s",
                    "--proxy",
                    "http://127.0.0.1:1",
                    "http://localhost/",
                ],
                "--unix-socket cannot be combined",
            ),
        ] {
            let message = usage_message(argv);
            assert!(message.contains(says), "{argv:?}: {message}");
        }
    }

    #[test]
    fn h2_multiplex_applies_to_the_default_protocol_of_http_urls() {
        let shape = |argv: &[&str]| {
            let cli = crate::cli::Cli::try_parse_from(
                ["h2load-rs", "-c", "4", "-m", "2", "--h2-multiplex"]
                    .iter()
                    .chain(argv),
            )
            .unwrap();
            let cell = cells(&cli.load, None)[0];
            (cell.clients, cell.streams)
        };
        assert_eq!(shape(&["http://127.0.0.1:1/"]), (1, 8));
        assert_eq!(shape(&[]), (1, 8), "the built-in target, cleartext");
        assert_eq!(shape(&["--h1", "http://127.0.0.1:1/"]), (4, 2));
        assert_eq!(shape(&["-p", "http/1.1", "http://127.0.0.1:1/"]), (4, 2));
        assert_eq!(
            shape(&["https://127.0.0.1:1/"]),
            (4, 2),
            "auto may be HTTP/1.1"
        );
    }

    #[test]
    fn limits_hold_after_scale_and_multiplexing() {
        let url = "http://127.0.0.1:1/";
        assert!(usage_message(&["-c", "1000000", "--scale", "2", url])
            .contains("-c 2000000 connections, more than the limit of 1000000"));
        assert!(
            usage_message(&["-c", "1000", "-m", "1001", "--h2-multiplex", url])
                .contains("1001000 streams on one connection")
        );
        assert!(usage_message(&["-n", "1000000000000x", "-c", "2", url])
            .contains("more than 1000000000000 (10^12) requests"));
        assert!(usage_message(&["-n", "1000000000000", "--scale", "10", url]).contains("10^12"));
        assert!(usage_message(&["--rps", "100000000", "-c", "2", url])
            .contains("more than the limit of 100000000 requests/s"));
        assert!(usage_message(&["-D", "720h", "--scale", "2", url]).contains("30 days"));
        let largest = plan(&["-n", "1000000x", "-c", "1000", "-m", "1000", url]).unwrap();
        assert_eq!(largest.stop, StopRule::Requests(1_000_000_000_000));
    }

    #[test]
    fn io_resolves_by_flag_kernel_and_protocol() {
        let url = "http://127.0.0.1:1/";
        let io = |argv: &[&str]| plan(&[&["-n", "10"], argv, &[url]].concat());
        assert_eq!(io(&["--io", "epoll"]).unwrap().io, IoBackend::Epoll);
        assert!(usage_message(&["--io", "epoll", "--io-sqpoll", url])
            .contains("--io-sqpoll needs --io uring or --io auto"));
        let h3 = plan(&["--io", "uring", "--proto", "h3", "https://127.0.0.1:1/"]).unwrap();
        assert_eq!(h3.io, IoBackend::Epoll, "QUIC stays on its UDP socket");
        assert!(h3.notes.is_empty(), "{:?}", h3.notes);
        let proxied = io(&["--io", "uring", "--proxy", "http://127.0.0.1:2"]).unwrap();
        assert_eq!(
            proxied.io,
            IoBackend::Epoll,
            "a proxy's tunnel stays on epoll"
        );
        let early = plan(&[
            "--io",
            "auto",
            "--tls-early-data",
            "--proto",
            "h1",
            "https://127.0.0.1:1/",
        ])
        .unwrap();
        assert_eq!(early.io, IoBackend::Epoll, "early data stays on epoll");
        assert!(early.notes.is_empty(), "{:?}", early.notes);
        match crate::engine::uring::probe::check() {
            Ok(()) => {
                let auto = io(&["--io", "auto", "--io-sqpoll"]).unwrap();
                assert_eq!(auto.io, IoBackend::Uring { sqpoll: true });
                assert!(auto.notes.is_empty(), "{:?}", auto.notes);
                assert_eq!(
                    io(&["--io", "uring"]).unwrap().io,
                    IoBackend::Uring { sqpoll: false }
                );
            }
            Err(reason) => {
                let auto = io(&["--io", "auto", "--io-sqpoll"]).unwrap();
                assert_eq!(auto.io, IoBackend::Epoll);
                assert_eq!(
                    auto.notes,
                    [format!(
                        "--io auto: io_uring unavailable ({reason}); using epoll"
                    )]
                );
                let refused = io(&["--io", "uring"]).unwrap_err();
                assert!(!crate::error::is_usage(&refused), "the kernel said no");
                assert_eq!(
                    refused.to_string(),
                    format!("--io uring: io_uring unavailable ({reason})")
                );
            }
        }
    }

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
