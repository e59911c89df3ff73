//! Command-line definitions, the top layer under `app`: only shapes and value syntax live here.
//! A value with a meaning has its type (and parser) in the layer that reads it (`plan`, `server`,
//! `console`), and `app` turns the parsed flags into the plan's inputs; nothing below imports
//! this module. This file holds the top-level [`Cli`] and its subcommands; each command's flags
//! have a file (`load.rs`, `serve.rs`, `output.rs`, `grpc.rs`, `k8s.rs`), the syntax-only values
//! theirs (`values.rs`).

mod events;
mod grpc;
pub(crate) mod habits;
mod k8s;
mod load;
mod output;
pub(crate) mod scenario;
pub(crate) mod serve;
pub(crate) mod values;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub(crate) use events::{EventArgs, EventsArg};
pub(crate) use grpc::{GrpcArgs, GrpcShapeArg};
pub(crate) use k8s::K8sJobArgs;
pub(crate) use load::LoadArgs;
pub(crate) use output::{DiffArgs, MergeArgs, OutputArgs};
pub(crate) use serve::ServeArgs;
use serve::SERVE_BOUNDS;
pub(crate) use values::NoTlsProto;

/// The version `--version` prints: the package version and the commit it was built from.
pub(crate) const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("H2LOAD_RS_COMMIT"),
    ")"
);

/// The examples `--help` ends with and the manual page's EXAMPLES: what each does, and the
/// command (tested to parse).
pub(crate) const EXAMPLES: [(&str, &str); 9] = [
    (
        "10000 requests to the built-in target, on 10 connections",
        "h2load-rs -n 10k -c 10",
    ),
    (
        "30 s on 100 connections, 10 requests in flight on each",
        "h2load-rs -c 100 -m 10 -D 30s http://127.0.0.1:8080/",
    ),
    (
        "HTTP/1.1 against h2c at three concurrency levels: six cells and their comparison",
        "h2load-rs --proto h1,h2c -c 1,10,100 -D 10s http://127.0.0.1:8080/ping",
    ),
    (
        "a fixed rate of 2000 requests/s for a minute; exit 3 if the p99 passes 50 ms",
        "h2load-rs --rate 2k -D 1m --fail-if 'p99>50ms' http://127.0.0.1:8080/",
    ),
    (
        "the highest rate that keeps the p99 under 5 ms",
        "h2load-rs --find-max --slo 'p99<5ms' -c 32 http://127.0.0.1:8080/",
    ),
    (
        "measure until the p99 and the rate are known within ±5%",
        "h2load-rs --until-stable 5% -c 10 http://127.0.0.1:8080/",
    ),
    (
        "POST a JSON body given inline (-d FILE or -d @FILE reads it from a file)",
        "h2load-rs --body '{\"name\": \"x\"}' -H 'content-type: application/json' http://127.0.0.1:8080/api",
    ),
    (
        "a gRPC method, its schema asked of the server's reflection service",
        "h2load-rs --grpc /hi.Greeter/Say --grpc-reflect --grpc-data '{\"name\":\"x\"}' http://127.0.0.1:50051",
    ),
    (
        "a scenario file, with its clients replaced by 10",
        "h2load-rs run scenario.toml -c 10",
    ),
];

/// [`EXAMPLES`] as `--help` ends with them.
fn examples_help() -> String {
    let mut text = String::from("Examples:");
    for (what, command) in EXAMPLES {
        text.push_str(&format!("\n  # {what}\n  {command}"));
    }
    text
}

/// HTTP/1.1, HTTP/2 and HTTP/3 load generator in the spirit of h2load, wrk2 and oha.
///
/// With no URL, h2load-rs starts its built-in target on a loopback port and measures that.
#[derive(Debug, Parser)]
#[command(
    name = "h2load-rs",
    version = VERSION,
    args_conflicts_with_subcommands = true,
    after_help = examples_help()
)]
pub(crate) struct Cli {
    /// A subcommand; without one, h2load-rs runs a load test.
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
    /// Load-test options (used when no subcommand is given).
    #[command(flatten)]
    pub(crate) load: LoadArgs,
}

/// Subcommands besides the load test itself.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
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
pub(crate) struct RunArgs {
    /// The scenario file.
    #[arg(value_name = "FILE")]
    pub(crate) scenario: PathBuf,
    /// URLs and options that override the file's.
    #[arg(
        value_name = "ARGS",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub(crate) overrides: Vec<std::ffi::OsString>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words of an example as a shell would pass them (single quotes only).
    fn words(command: &str) -> Vec<String> {
        let (mut words, mut word, mut quoted) = (Vec::new(), String::new(), false);
        for c in command.chars() {
            match c {
                '\'' => quoted = !quoted,
                ' ' if !quoted => {
                    words.extend((!word.is_empty()).then(|| std::mem::take(&mut word)))
                }
                c => word.push(c),
            }
        }
        words.extend((!word.is_empty()).then_some(word));
        words
    }

    #[test]
    fn every_example_parses_and_fits_100_columns() {
        for (what, command) in EXAMPLES {
            let parsed = Cli::try_parse_from(words(command));
            assert!(parsed.is_ok(), "{command}: {}", parsed.unwrap_err());
            assert!(command.len() + 2 <= 100, "{command}");
            assert!(what.len() + 4 <= 100, "{what}");
        }
    }
}
