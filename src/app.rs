//! The program's flow: arguments → plan → run → report, and the exit code.

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::error::ErrorKind as ClapErrorKind;
use clap::Parser;

use crate::cli::{Cli, Command, LoadArgs, ServeArgs};
use crate::report::{self, Summary};
use crate::{error, plan, runner, server, tls};

/// Path the built-in target is measured at when no URL is given.
const BUILT_IN_PATH: &str = "/ping";

/// Runs h2load-rs with these arguments and returns the process exit code.
pub fn main(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(error) => return clap_exit(&error),
    };
    let result = match cli.command {
        Some(Command::Serve(args)) => serve(&args),
        None => load_test(&cli.load),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("h2load-rs: {error:#}");
            ExitCode::from(error::exit_code_for(&error))
        }
    }
}

/// Help and version go to stdout with status 0; any other parse error is one line and status 2.
fn clap_exit(error: &clap::Error) -> ExitCode {
    if matches!(
        error.kind(),
        ClapErrorKind::DisplayHelp | ClapErrorKind::DisplayVersion
    ) {
        let _ = error.print();
        return ExitCode::SUCCESS;
    }
    eprintln!("h2load-rs: {}", one_line(&error.render().to_string()));
    ExitCode::from(2)
}

/// Folds clap's message (which may list items on following lines) into one line, without the
/// usage and help hints that follow it.
fn one_line(rendered: &str) -> String {
    rendered
        .lines()
        .take_while(|line| !line.is_empty() && !line.starts_with("Usage:"))
        .map(|line| line.trim().trim_start_matches("error: "))
        .collect::<Vec<_>>()
        .join(" ")
}

fn load_test(args: &LoadArgs) -> Result<ExitCode> {
    let built_in = args.urls.is_empty();
    let urls = if built_in {
        let workers = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .saturating_sub(args.threads as usize);
        let addr = server::spawn_background(workers.max(1), server::ServeOptions::default())?;
        let url = format!("http://{addr}{BUILT_IN_PATH}");
        eprintln!("no URL given: measuring the built-in target at {url}");
        vec![url]
    } else {
        args.urls.clone()
    };
    let plan = plan::build(args, &urls)?;
    for note in &plan.notes {
        eprintln!("note: {note}");
    }
    // The in-process target holds the other end of every connection.
    runner::ensure_fd_limit(plan.clients, if built_in { 2 } else { 1 })?;
    print_intro(&plan);
    let plan = Arc::new(plan);
    let outcome = runner::run(plan.clone())?;
    let summary = Summary::new(&plan, &outcome);
    print!("{}", report::text::render(&summary));
    if let Some(path) = &args.json {
        report::json::write(&summary, path)?;
    }
    for warning in &summary.warnings {
        eprintln!("h2load-rs: warning: {warning}");
    }
    if let Some(problem) = &summary.first_error {
        eprintln!("h2load-rs: {problem}");
    }
    Ok(if summary.connections.opened == 0 {
        ExitCode::from(1)
    } else if summary.interrupted {
        ExitCode::from(runner::INTERRUPTED_EXIT)
    } else {
        ExitCode::SUCCESS
    })
}

fn print_intro(plan: &plan::RunPlan) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "starting benchmark...");
    for thread in 0..plan.threads {
        let clients =
            plan.clients / plan.threads + usize::from(thread < plan.clients % plan.threads);
        let _ = writeln!(out, "spawning thread #{thread}: {clients} total client(s).");
    }
    let _ = out.flush();
}

fn serve(args: &ServeArgs) -> Result<ExitCode> {
    let tls = match (args.tls, &args.tls_cert, &args.tls_key) {
        (false, _, _) => None,
        (true, Some(cert), Some(key)) => {
            let read = |path: &std::path::Path| {
                std::fs::read(path).with_context(|| format!("cannot read '{}'", path.display()))
            };
            Some(tls::server_config(&read(cert)?, &read(key)?)?)
        }
        (true, _, _) => Some(tls::server_config(
            tls::test_pki::SERVER_CERT.as_bytes(),
            tls::test_pki::SERVER_KEY.as_bytes(),
        )?),
    };
    // A target is measured with thousands of connections: take every descriptor allowed.
    rlimit::increase_nofile_limit(u64::MAX).context("cannot raise the open-file limit")?;
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = args.threads {
        runtime.worker_threads(usize::from(threads));
    }
    let runtime = runtime
        .enable_all()
        .build()
        .context("cannot start the server runtime")?;
    runtime.block_on(async {
        let listener = server::listen(std::net::SocketAddr::new(args.host, args.port))
            .with_context(|| format!("cannot listen on {}:{}", args.host, args.port))?;
        let addr = listener.local_addr()?;
        if tls.is_some() {
            println!("h2load-rs target listening on https://{addr} (h2 and http/1.1 by ALPN)");
        } else {
            println!("h2load-rs target listening on http://{addr} (HTTP/1.1, h2c by prior knowledge and by Upgrade)");
        }
        let _ = std::io::stdout().flush();
        let options = server::ServeOptions {
            max_concurrent_streams: args.max_concurrent_streams,
            tls,
        };
        tokio::select! {
            result = server::serve(listener, options) => result.context("the server stopped"),
            _ = tokio::signal::ctrl_c() => Ok(()),
        }
    })?;
    Ok(ExitCode::SUCCESS)
}
