//! `h2load-rs serve`: its flags ([`ServeArgs`], the help's bounds) and their defaults; their value
//! types ([`Fault`], [`GrpcReply`]) are the built-in target's, in `server`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::limits::{MAX_CLIENTS, MAX_THREADS};
use crate::server::{Fault, GrpcReply, DEFAULT_MAX_CONNECTIONS};
use crate::units::{parse_duration, parse_positive_duration};

/// What `serve --help` says one client can make the target hold (reference.md, "What the
/// built-in target holds").
pub(super) const SERVE_BOUNDS: &str = "Bounds: at most --max-connections connections (over the cap: closed at once, \
one stderr line a second); idle or stuck connections closed after --idle-timeout; per h2 connection \
at most 4 MiB (1 MiB a stream) of uploads not read yet, 64 KiB once 128 MiB of such windows are \
taken over the target, per HTTP/3 connection that and 10 MiB sent but unacknowledged; POST /echo \
holds at most 64 MiB over the whole target, 16 MiB per connection; /delay/MS at most \
30 days (else 400). A --host that is not loopback prints a warning: there is no authentication, \
and the built-in TLS key in certs/ is public.";

/// Options of `h2load-rs serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// TCP port to listen on (0 picks a free one; the address is printed).
    #[arg(long, default_value_t = 8080)]
    pub(crate) port: u16,
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    pub(crate) host: std::net::IpAddr,
    /// Listen on this unix socket instead of TCP (HTTP/1.1 and h2c, or with --tls h2 and
    /// http/1.1 by ALPN; no HTTP/3). A stale socket file there is replaced; the file is removed at exit.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["host", "port", "fault"])]
    pub(crate) unix: Option<PathBuf>,
    /// Worker threads of the server runtime, 1..=4096 (default: one per core).
    #[arg(long, value_parser = crate::cli::values::count::<u16>(1, MAX_THREADS))]
    pub(crate) threads: Option<u16>,
    /// Serve over TLS (h2 and http/1.1 by ALPN, and HTTP/3 on the UDP port of the same number) with
    /// the built-in test certificate, or --tls-cert/--tls-key.
    #[arg(long)]
    pub(crate) tls: bool,
    /// Server certificate chain (PEM) for --tls [default: the built-in test certificate for localhost].
    #[arg(long, value_name = "FILE", requires_all = ["tls", "tls_key"])]
    pub(crate) tls_cert: Option<PathBuf>,
    /// Server private key (PEM) for --tls.
    #[arg(long, value_name = "FILE", requires_all = ["tls", "tls_cert"])]
    pub(crate) tls_key: Option<PathBuf>,
    /// Delay every response by this long, to the µs (the x-delay-applied-us header says by how much).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub(crate) delay: Option<Duration>,
    /// Exit when standard input closes (a parent that started this target died or finished), and
    /// ignore SIGINT, SIGTERM and SIGHUP, which reach the parent's whole process group: the
    /// parent stops it after its report.
    #[arg(long, hide = true)]
    pub(crate) stop_with_parent: bool,
    /// Misbehave on purpose (a raw-socket server): close-after=N, drop-after=N, reset-mid-response,
    /// short-body, malformed, stall, never-read (HTTP/1.1); goaway-after=N, goaway-error-after=N,
    /// rst-stream-every=N (h2c); drop-every=N (over TCP: h1, h2, h2c; every N-th connection closed at once). A target with a
    /// fault serves no HTTP/3.
    #[arg(long, value_name = "MODE")]
    pub(crate) fault: Option<Fault>,
    /// Stall periodically: answer nothing for --stall-for at the end of every this long.
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration, requires = "stall_for")]
    pub(crate) stall_every: Option<Duration>,
    /// Length of each stall.
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration, requires = "stall_every")]
    pub(crate) stall_for: Option<Duration>,
    /// Slow down every other period of this length (the second, the fourth, …): each response
    /// then waits --slow-by longer, so the target's capacity alternates.
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration, requires = "slow_by")]
    pub(crate) slow_every: Option<Duration>,
    /// How much longer each response waits in a slow period of --slow-every.
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration, requires = "slow_every")]
    pub(crate) slow_by: Option<Duration>,
    /// SETTINGS_MAX_CONCURRENT_STREAMS announced to HTTP/2 clients, and the concurrent request
    /// streams allowed to each HTTP/3 connection.
    #[arg(long, default_value_t = 1000, value_parser = crate::cli::values::count::<u32>(1, u32::MAX.into()))]
    pub(crate) max_concurrent_streams: u32,
    /// Connections served at once over TCP, the unix socket and QUIC together, 1..=1000000; one
    /// more is closed at once (QUIC: refused), with one line on stderr a second at most. Lowered
    /// to fit the open-file limit.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CONNECTIONS,
          value_parser = crate::cli::values::count::<usize>(1, MAX_CLIENTS))]
    pub(crate) max_connections: usize,
    /// Close a connection after this long with no request in progress, or with no byte moving
    /// while no answer is delayed (a client that stopped reading or uploading); also the longest
    /// wait for an HTTP/1.1 request head or a TLS handshake.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_positive_duration)]
    pub(crate) idle_timeout: Duration,
    /// How a gRPC call (any POST with content-type application/grpc) is answered: `echo`, each
    /// message back as it arrives (unary and bidirectional methods); `last`, one message once
    /// the client has half-closed: the last it sent (a client-streaming method).
    #[arg(long, value_name = "HOW", default_value = "echo")]
    pub(crate) grpc_reply: GrpcReply,
}
