//! The value enums of the flags (`--proto`, `--io`, `-p`, `--color`): their spellings and help
//! texts; what each value means is given by their readers (plan, report).

use clap::ValueEnum;

/// The protocol spoken to the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProtoArg {
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum IoArg {
    /// io_uring where the kernel allows it, else epoll (said once on stderr with the reason).
    Auto,
    /// io_uring, one ring per thread; the run fails (status 1) if the kernel refuses it.
    Uring,
    /// Readiness-based I/O on epoll.
    #[default]
    Epoll,
}

/// How `--rate`, `--stages` and `--find-max` space their send times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum Arrival {
    /// Evenly: one every 1/rate (h2load's and wrk2's schedule).
    #[default]
    Uniform,
    /// A Poisson process: exponential gaps of mean 1/rate, as independent users arrive; drawn
    /// from --seed, so a run with the same seed repeats its send times exactly.
    Poisson,
}

impl Arrival {
    /// Its name in the report and in `--arrival`.
    pub fn name(self) -> &'static str {
        match self {
            Arrival::Uniform => "uniform",
            Arrival::Poisson => "poisson",
        }
    }
}

/// Values of h2load's `-p/--no-tls-proto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NoTlsProto {
    /// HTTP/2 by prior knowledge.
    H2c,
    /// HTTP/1.1.
    #[value(name = "http/1.1", alias = "h1")]
    Http11,
}

/// When to color the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ColorChoice {
    /// When stdout is a terminal and `NO_COLOR` is not set.
    #[default]
    Auto,
    /// Always, even into a pipe.
    Always,
    /// Never.
    Never,
}

/// Values of `--round-order`: how the cells of a round after the first are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum RoundOrder {
    /// The reverse of the round before: a drift over the run hits every cell alike.
    #[default]
    Alternate,
    /// A new order each round, drawn from --seed.
    Shuffle,
}

impl RoundOrder {
    /// Its name in the report and in `--round-order`.
    pub fn name(self) -> &'static str {
        match self {
            RoundOrder::Alternate => "alternate",
            RoundOrder::Shuffle => "shuffle",
        }
    }
}
