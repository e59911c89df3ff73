//! The built-in target as a child process, for runs without a URL: one cleartext instance (HTTP/1.1,
//! h2c) and, when a cell needs TLS, one TLS instance. A separate process keeps the generator's CPU
//! figures its own and gives each side its own open-file limit (seed 002 opens 16,000 connections).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use anyhow::{bail, Context, Result};

use crate::cli::{LoadArgs, ProtoArg};
use crate::usage_bail;

/// A running `h2load-rs serve`, stopped when dropped.
pub struct ChildTarget {
    child: Child,
    /// Its base URL, e.g. `http://127.0.0.1:40123`.
    pub base_url: String,
}

impl ChildTarget {
    /// Starts `h2load-rs serve` on a free loopback port, with extra `serve` flags (delays, stalls).
    pub fn start(tls: bool, flags: &[String]) -> Result<ChildTarget> {
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
    pub fn pid(&self) -> u32 {
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
pub struct BuiltIn {
    cleartext: ChildTarget,
    tls: Option<ChildTarget>,
}

impl BuiltIn {
    /// Starts the target(s) with the `--target-*` options of `args`.
    pub fn start(args: &LoadArgs, with_tls: bool) -> Result<BuiltIn> {
        if args.target_fault.is_some() && args.proto.contains(&ProtoArg::H3) {
            // A faulty target is a raw TCP server: h3 cells would only time out connecting.
            usage_bail!("--target-fault makes the built-in target misbehave over TCP, where h3 is not spoken; drop h3 from --proto");
        }
        if let Some(path) = &args.unix_socket {
            // The URL gives the scheme, Host and SNI of whatever listens there.
            usage_bail!(
                "--unix-socket needs a URL naming the server, e.g. h2load-rs --unix-socket {} http://localhost/",
                path.display()
            );
        }
        let flags = serve_flags(args);
        let cleartext = ChildTarget::start(false, &flags)?;
        let tls = if with_tls {
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
        Ok(BuiltIn { cleartext, tls })
    }

    /// The base URL (`http://127.0.0.1:PORT`) of the cleartext or the TLS target.
    pub fn base_url(&self, tls: bool) -> &str {
        match (&self.tls, tls) {
            (Some(tls), true) => &tls.base_url,
            _ => &self.cleartext.base_url,
        }
    }

    /// The process id of the cleartext or the TLS target, for watching.
    pub fn pid(&self, tls: bool) -> u32 {
        match (&self.tls, tls) {
            (Some(target), true) => target.pid(),
            _ => self.cleartext.pid(),
        }
    }
}

/// The `serve` flags that give the built-in target the behaviour `--target-*` asks for.
fn serve_flags(args: &LoadArgs) -> Vec<String> {
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
    flags
}
