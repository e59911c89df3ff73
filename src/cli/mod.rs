//! Command-line definitions. Only shapes and value syntax live here; meaning is given in `plan`.
//! This file holds the top-level [`Cli`] and its subcommands; each command's flags have a file
//! (`load.rs`, `serve.rs`, `output.rs`), as do the flags' value types (`values.rs`, ...).

pub mod exposure;
mod grpc;
pub(crate) mod habits;
pub mod input;
mod k8s;
pub mod limits;
mod load;
pub(crate) mod objective;
mod output;
pub mod scenario;
pub(crate) mod serve;
pub mod shard;
pub(crate) mod stages;
pub(crate) mod values;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub use grpc::{GrpcArgs, GrpcShapeArg};
pub use k8s::K8sJobArgs;
pub use load::{LoadArgs, Requests};
pub use output::{CheckArgs, DiffArgs, MergeArgs, OutputArgs};
pub use serve::ServeArgs;
use serve::SERVE_BOUNDS;
pub use values::{IoArg, NoTlsProto, ProtoArg};

/// The version `--version` prints: the package version and the commit it was built from.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("H2LOAD_RS_COMMIT"),
    ")"
);

/// HTTP/1.1, HTTP/2 and HTTP/3 load generator in the spirit of h2load, wrk2 and oha.
///
/// With no URL, h2load-rs starts its built-in target on a loopback port and measures that.
#[derive(Debug, Parser)]
#[command(
    name = "h2load-rs",
    version = VERSION,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    /// A subcommand; without one, h2load-rs runs a load test.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Load-test options (used when no subcommand is given).
    #[command(flatten)]
    pub load: LoadArgs,
}

/// Subcommands besides the load test itself.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a scenario file (TOML: keys are the long option names); options given here override it.
    Run(RunArgs),
    /// Combine the JSON reports of runs made on several machines into one report.
    Merge(MergeArgs),
    /// Compare two JSON reports cell by cell: the changes in throughput and latency, and whether
    /// they stand out from the noise.
    Diff(DiffArgs),
    /// Serve the built-in target (HTTP/1.1 and h2c on one port; with --tls h2, http/1.1 and HTTP/3)
    /// until interrupted.
    #[command(after_help = SERVE_BOUNDS)]
    Serve(ServeArgs),
    /// Print a Kubernetes Indexed Job (JSON, for `kubectl apply -f -`) whose pods run the load
    /// given after `--` once between them: each pod one `--shard` of it, all starting together
    /// `--lead` from now, each writing its report to its log (`--json -`); then
    /// `kubectl logs -l job-name=NAME --tail=-1 | h2load-rs merge -` merges them.
    K8sJob(K8sJobArgs),
    /// Print a shell completion script (e.g. `h2load-rs completions bash > /etc/bash_completion.d/h2load-rs`).
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page in roff (e.g. `h2load-rs man > h2load-rs.1; man ./h2load-rs.1`).
    Man,
}

/// Arguments of `h2load-rs run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The scenario file.
    #[arg(value_name = "FILE")]
    pub scenario: PathBuf,
    /// URLs and options that override the file's.
    #[arg(
        value_name = "ARGS",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub overrides: Vec<std::ffi::OsString>,
}
