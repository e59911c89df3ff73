//! The built-in target as a child process, for runs without a URL: one cleartext instance (HTTP/1.1,
//! h2c) and, when a cell needs TLS, one TLS instance. A separate process keeps the generator's CPU
//! figures its own and gives each side its own open-file limit (seed 002 opens 16,000 connections).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use anyhow::{bail, Context, Result};

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
