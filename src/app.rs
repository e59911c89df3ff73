//! The program's flow: arguments → plan → run → report, and the exit code.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::error::ErrorKind as ClapErrorKind;
use clap::{CommandFactory, Parser};

use crate::cli::{Cli, Command, LoadArgs, MergeArgs, OutputArgs, RunArgs, ServeArgs};
use crate::live::Live;
use crate::paint::paint;
use crate::report::{self, CellContext, Document, Exporter, Summary};
use crate::request_log::LogFile;
use crate::target::ChildTarget;
use crate::trace::Tracer;
use crate::watch::{self, Watch};
use crate::{error, plan, progress, runner, scenario, server, tls, usage_bail};

/// `print!` that survives a closed stdout (`h2load-rs … | head`): the run goes on and its exports
/// are still written, where `print!` would panic.
macro_rules! out {
    ($($arg:tt)*) => {{
        let _ = write!(std::io::stdout(), $($arg)*);
    }};
}

/// `println!` that survives a closed stdout, like [`out!`].
macro_rules! outln {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// Runs h2load-rs with these arguments and returns the process exit code.
pub fn main(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(error) => return clap_exit(&error),
    };
    let result = match cli.command {
        Some(Command::Serve(args)) => serve(&args),
        Some(Command::Run(args)) => run_scenario(&args),
        Some(Command::Merge(args)) => merge(&args),
        Some(Command::Completions { shell }) => completions(shell),
        Some(Command::Man) => manual(),
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

/// Prints the completion script for `shell`.
fn completions(shell: clap_complete::Shell) -> Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "h2load-rs", &mut script);
    out!("{}", String::from_utf8_lossy(&script));
    Ok(ExitCode::SUCCESS)
}

/// Prints the manual page, generated from the same definitions as `--help`.
fn manual() -> Result<ExitCode> {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut page)
        .context("cannot render the manual page")?;
    out!("{}", String::from_utf8_lossy(&page));
    Ok(ExitCode::SUCCESS)
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

/// Writes every format the user asked for.
fn export(document: &Document, outputs: &OutputArgs) -> Result<()> {
    let exports: [(&Option<PathBuf>, &dyn Exporter); 7] = [
        (&outputs.json, &report::json::Json),
        (&outputs.csv, &report::csv::Csv),
        (&outputs.csv_timeline, &report::timeline_csv::TimelineCsv),
        (&outputs.hdr_log, &report::hdr_log::HdrLog),
        (&outputs.markdown, &report::markdown::Markdown),
        (&outputs.hgrm, &report::hgrm::Hgrm),
        (&outputs.html, &report::html::Html),
    ];
    for (path, exporter) in exports {
        if let Some(path) = path {
            exporter.export(document, path)?;
        }
    }
    Ok(())
}

fn merge(args: &MergeArgs) -> Result<ExitCode> {
    let documents = args
        .results
        .iter()
        .map(|path| report::merge::load(path))
        .collect::<Result<Vec<_>>>()?;
    let document = report::merge::merge(documents)?;
    outln!("merged {} reports", args.results.len());
    for cell in &document.cells {
        if document.cells.len() > 1 {
            outln!("\n=== cell {}: {}", cell.cell.index, cell.cell.label);
        }
        out!("{}", report::text::render(cell));
    }
    if document.cells.len() > 1 {
        out!("{}", report::text::comparison(&document));
    }
    export(&document, &args.outputs)?;
    Ok(ExitCode::SUCCESS)
}

/// Waits for `--start-at`; `false` if the user interrupted the wait.
fn wait_for_start(at: std::time::SystemTime) -> bool {
    match at.duration_since(std::time::SystemTime::now()) {
        Ok(wait) => {
            eprintln!("waiting {:.1} s for --start-at", wait.as_secs_f64());
            !runner::pause(wait)
        }
        Err(_) => {
            eprintln!("h2load-rs: warning: --start-at is in the past; starting now");
            true
        }
    }
}

fn run_scenario(args: &RunArgs) -> Result<ExitCode> {
    let scenario = scenario::load(&args.scenario, &args.overrides)?;
    let cli = match Cli::try_parse_from(&scenario.argv) {
        Ok(cli) => cli,
        Err(error) => {
            let message = one_line(&error.render().to_string());
            usage_bail!(
                "{} (or the command line): {message}",
                args.scenario.display()
            );
        }
    };
    if cli.command.is_some() {
        usage_bail!(
            "{}: a scenario describes a load test, not a subcommand",
            args.scenario.display()
        );
    }
    if let Some(description) = &scenario.description {
        eprintln!("scenario {}: {description}", args.scenario.display());
    }
    load_test(&cli.load)
}

fn load_test(args: &LoadArgs) -> Result<ExitCode> {
    let cells = plan::cells(args);
    let log_file = args.log_file.as_deref().map(LogFile::create).transpose()?;
    let built_in = match args.urls.is_empty() {
        true => Some(BuiltIn::start(
            args,
            cells.iter().any(|cell| cell.needs_tls(args.target_tls)),
        )?),
        false => None,
    };
    // Every cell is planned before anything runs, so bad input stops the run before it starts.
    let mut plans = Vec::with_capacity(cells.len());
    for cell in &cells {
        let urls = match &built_in {
            Some(target) => vec![format!(
                "{}{}",
                target.base_url(cell.needs_tls(args.target_tls)),
                args.target_path
            )],
            None => args.urls.clone(),
        };
        plans.push(Arc::new(plan::build(
            args,
            &urls,
            cell,
            built_in.is_some(),
        )?));
    }
    let mut notes: Vec<&String> = plans.iter().flat_map(|plan| &plan.notes).collect();
    notes.dedup();
    for note in notes {
        if !args.quiet {
            eprintln!("note: {note}");
        }
    }
    let most_clients = plans.iter().map(|plan| plan.clients).max().unwrap_or(1);
    runner::ensure_fd_limit(most_clients, 1)?;

    if let Some(at) = args.start_at {
        if !wait_for_start(at) {
            return Ok(ExitCode::from(runner::INTERRUPTED_EXIT));
        }
    }
    let color = args.color.enabled();
    let mut summaries = Vec::with_capacity(plans.len());
    for (index, (cell, plan)) in cells.iter().zip(&plans).enumerate() {
        if plans.len() > 1 && !args.quiet {
            let heading = format!(
                "\n=== cell {}/{}: {} c={} m={}\n",
                index + 1,
                plans.len(),
                plan.protocol_label(),
                plan.clients,
                plan.max_concurrent
            );
            out!("{}", paint(&heading, color));
        }
        if !args.quiet {
            print_intro(plan);
        }
        // The target that serves this cell comes first: the comparison's "target" columns show it.
        let mut watched: Vec<u32> = built_in
            .iter()
            .map(|target| target.pid(cell.needs_tls(args.target_tls)))
            .collect();
        watched.extend(&args.watch_pid);
        let watch = Watch::start(&watched);
        let started = Instant::now();
        let cpu_before = watch::cpu_time(None);
        let log = log_file.clone().map(|file| runner::LogTarget {
            file,
            cell: index + 1,
        });
        let trace = (args.verbose > 0).then(|| Arc::new(Tracer::new(plan, args.verbose)));
        // The trace and the bar would share stderr: the trace wins.
        let show_progress = !args.quiet && trace.is_none() && std::io::stderr().is_terminal();
        let live = show_progress.then(|| Arc::new(Live::new(plan.threads)));
        let display = live.clone().map(|live| {
            let label = format!(
                "{} c={} m={}",
                plan.protocol_label(),
                plan.clients,
                plan.max_concurrent
            );
            progress::Display::start(live, plan.stop, label)
        });
        let outcome = runner::run(plan.clone(), runner::Sinks { log, live, trace });
        if let Some(display) = display {
            display.finish();
        }
        let outcome = outcome?;
        let generator_cpu = cpu_before
            .zip(watch::cpu_time(None))
            .map_or(0.0, |(before, after)| {
                100.0 * (after - before).as_secs_f64() / started.elapsed().as_secs_f64()
            });
        let context = CellContext {
            index: index + 1,
            level: cell.level,
            generator_cpu_percent: generator_cpu,
            watched: watch.finish(),
        };
        let summary = Summary::new(plan, &outcome, context);
        if args.quiet {
            outln!("{}", report::text::one_line(&summary));
        } else {
            out!("{}", paint(&report::text::render(&summary), color));
        }
        for warning in &summary.warnings {
            eprintln!("h2load-rs: warning: {warning}");
        }
        if let Some(problem) = &summary.first_error {
            eprintln!("h2load-rs: {problem}");
        }
        summaries.push(summary);
        let last = index + 1 == plans.len();
        if outcome.interrupted || (!last && args.cooldown.is_some_and(runner::pause)) {
            break;
        }
    }

    let document = Document::new(summaries);
    if document.cells.len() > 1 && !args.quiet {
        out!("{}", paint(&report::text::comparison(&document), color));
    }
    export(&document, &args.outputs)?;
    let interrupted =
        document.cells.len() < plans.len() || document.cells.iter().any(|cell| cell.interrupted);
    Ok(
        if document
            .cells
            .iter()
            .all(|cell| cell.connections.opened == 0)
        {
            ExitCode::from(1)
        } else if interrupted {
            ExitCode::from(runner::INTERRUPTED_EXIT)
        } else {
            ExitCode::SUCCESS
        },
    )
}

/// The built-in target for runs without a URL: cleartext, and TLS when a cell needs it.
struct BuiltIn {
    cleartext: ChildTarget,
    tls: Option<ChildTarget>,
}

impl BuiltIn {
    fn start(args: &LoadArgs, with_tls: bool) -> Result<BuiltIn> {
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
        let cleartext = ChildTarget::start(false, &flags)?;
        let tls = if with_tls {
            Some(ChildTarget::start(true, &flags)?)
        } else {
            None
        };
        let mut bases = vec![cleartext.base_url.as_str()];
        bases.extend(tls.iter().map(|target| target.base_url.as_str()));
        if !args.quiet {
            eprintln!(
                "no URL given: measuring the built-in target at {} (path {})",
                bases.join(" and "),
                args.target_path
            );
        }
        Ok(BuiltIn { cleartext, tls })
    }

    fn base_url(&self, tls: bool) -> &str {
        match (&self.tls, tls) {
            (Some(tls), true) => &tls.base_url,
            _ => &self.cleartext.base_url,
        }
    }

    fn pid(&self, tls: bool) -> u32 {
        match (&self.tls, tls) {
            (Some(target), true) => target.pid(),
            _ => self.cleartext.pid(),
        }
    }
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
    if args.stop_with_parent {
        std::thread::spawn(|| {
            // Reads until EOF: the parent holds the other end of this pipe for as long as it lives.
            let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
            std::process::exit(0);
        });
    }
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
            outln!("h2load-rs target listening on https://{addr} (h2 and http/1.1 by ALPN)");
        } else {
            outln!("h2load-rs target listening on http://{addr} (HTTP/1.1, h2c by prior knowledge and by Upgrade)");
        }
        let _ = std::io::stdout().flush();
        let options = server::ServeOptions {
            max_concurrent_streams: args.max_concurrent_streams,
            tls,
            fault: args.fault,
            behaviour: server::Behaviour {
                delay: args.delay,
                stall: args.stall_every.zip(args.stall_for).map(|(every, length)| server::Stall {
                    every,
                    length,
                    epoch: std::time::Instant::now(),
                }),
            },
        };
        tokio::select! {
            result = server::serve(listener, options) => result.context("the server stopped"),
            _ = tokio::signal::ctrl_c() => Ok(()),
        }
    })?;
    Ok(ExitCode::SUCCESS)
}
