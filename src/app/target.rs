//! The built-in target as a child process, for runs without a URL: one cleartext instance (HTTP/1.1,
//! h2c) and, when a cell needs TLS, one TLS instance. A separate process keeps the generator's CPU
//! figures its own and gives each side its own open-file limit (seed 002 opens 16,000 connections).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use anyhow::{bail, Context, Result};

use crate::cli::LoadArgs;
use crate::plan::grpc::CallShape;
use crate::plan::{CellSpec, Inputs};
use crate::usage_bail;

/// The built-in target's `--idle-timeout` when a run starts it: the longest duration accepted.
const PRIVATE_IDLE_TIMEOUT: &str = "720h";

/// A running `h2load-rs serve`, stopped when dropped.
pub(crate) struct ChildTarget {
    child: Child,
    /// Its base URL, e.g. `http://127.0.0.1:40123`.
    pub(crate) base_url: String,
}

impl ChildTarget {
    /// Starts `h2load-rs serve` on a free loopback port, with extra `serve` flags (delays, stalls).
    pub(crate) fn start(tls: bool, flags: &[String]) -> Result<ChildTarget> {
        let executable = std::env::current_exe().context("cannot find the h2load-rs executable")?;
        let mut command = Command::new(executable);
        // The target exits when its stdin closes: even if this process is killed, it never lingers.
        // It ignores the signals that stop a run (a terminal's Ctrl-C reaches it too): the requests
        // in flight are served until this process drops it, after the report.
        command.args([
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--stop-with-parent",
            // The run is the target's only client: closing its keep-alive connections after
            // `serve`'s default 30 s (a slow --rate over many connections, a starved client)
            // would put retries and resets in the run's figures that no server caused.
            "--idle-timeout",
            PRIVATE_IDLE_TIMEOUT,
        ]);
        if tls {
            command.arg("--tls");
        }
        command.args(flags);
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("cannot start the built-in target")?;
        let mut line = String::new();
        let stdout = child.stdout.take().expect("stdout is piped");
        BufReader::new(stdout)
            .read_line(&mut line)
            .context("cannot read the built-in target's address")?;
        let Some(base_url) = line
            .split_whitespace()
            .find(|word| word.starts_with("http"))
        else {
            let _ = child.kill();
            bail!("the built-in target did not start: {line}");
        };
        Ok(ChildTarget {
            base_url: base_url.to_owned(),
            child,
        })
    }

    /// The process id, for watching.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for ChildTarget {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The built-in target for runs without a URL: cleartext, and TLS when a cell needs it.
pub(crate) struct BuiltIn {
    cleartext: ChildTarget,
    tls: Option<ChildTarget>,
    /// Whether HTTP/1.1 cells use the TLS instance: with `--target-tls`, or when another cell of
    /// the sweep runs over TLS (h2, h3) and no `--target-fault` is set, so a comparison does not
    /// set cleartext against TLS.
    h1_tls: bool,
}

impl BuiltIn {
    /// Starts the target(s) with the `--target-*` options of `args`, for the sweep's `cells` (of
    /// `inputs`).
    pub(crate) fn start(args: &LoadArgs, inputs: &Inputs, cells: &[CellSpec]) -> Result<BuiltIn> {
        super::fault_cells::check(args.target_fault, inputs)?;
        if let Some(path) = &inputs.connection.unix_socket {
            // The URL gives the scheme, Host and SNI of whatever listens there.
            usage_bail!(
                "--unix-socket needs a URL naming the server, e.g. h2load-rs --unix-socket {} http://localhost/",
                path.display()
            );
        }
        // A fault's raw-socket server speaks its mode's protocol, so faults keep h1 as asked.
        let h1_tls = args.target_tls
            || (args.target_fault.is_none() && cells.iter().any(|cell| cell.needs_tls(false)));
        let flags = serve_flags(args, inputs);
        let cleartext = ChildTarget::start(false, &flags)?;
        let tls = if cells.iter().any(|cell| cell.needs_tls(h1_tls)) {
            Some(ChildTarget::start(true, &flags)?)
        } else {
            None
        };
        let mut bases = vec![cleartext.base_url.as_str()];
        bases.extend(tls.iter().map(|target| target.base_url.as_str()));
        if !args.quiet {
            errln!(
                "no URL given: measuring the built-in target at {} (path {})",
                bases.join(" and "),
                args.target_path
            );
        }
        Ok(BuiltIn {
            cleartext,
            tls,
            h1_tls,
        })
    }

    /// The instance serving `cell`: the TLS one when the cell needs TLS.
    fn serving(&self, cell: &CellSpec) -> &ChildTarget {
        match &self.tls {
            Some(tls) if cell.needs_tls(self.h1_tls) => tls,
            _ => &self.cleartext,
        }
    }

    /// The base URL (`http://127.0.0.1:PORT` or `https://…`) of the instance serving `cell`.
    pub(crate) fn base_url(&self, cell: &CellSpec) -> &str {
        &self.serving(cell).base_url
    }

    /// The process id of the instance serving `cell`, for watching.
    pub(crate) fn pid(&self, cell: &CellSpec) -> u32 {
        self.serving(cell).pid()
    }
}

/// The `serve` flags that give the built-in target the behaviour `--target-*` asks for.
fn serve_flags(args: &LoadArgs, inputs: &Inputs) -> Vec<String> {
    let mut flags = Vec::new();
    if let Some(delay) = args.target_delay {
        flags.push(format!("--delay={}us", delay.as_micros()));
    }
    if let Some(fault) = &args.target_fault {
        flags.push(format!("--fault={}", fault.name()));
    }
    if let Some((every, length)) = args.target_stall_every.zip(args.target_stall_for) {
        flags.push(format!("--stall-every={}us", every.as_micros()));
        flags.push(format!("--stall-for={}us", length.as_micros()));
    }
    if let Some((every, by)) = args.target_slow_every.zip(args.target_slow_by) {
        flags.push(format!("--slow-every={}us", every.as_micros()));
        flags.push(format!("--slow-by={}us", by.as_micros()));
    }
    // A client-streaming call takes one answer; the echo would send one a message.
    if inputs.grpc.method.is_some() && inputs.grpc.shape == Some(CallShape::ClientStream) {
        flags.push("--grpc-reply=last".to_owned());
    }
    flags
}
