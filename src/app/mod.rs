//! The program's flow: arguments → plan → sweep → exit status.
//!
//! Exit status, in order of precedence: 2 for a usage error (found before anything is sent);
//! 128 + the signal's number when SIGHUP, SIGINT or SIGTERM stopped the run (129, 130, 143);
//! 1 when something failed at run time (an error, a panic in any thread, an export or standard
//! output that could not be written); 3 when a threshold was breached (`--fail-if`, each breach on its own line,
//! or `diff --fail-if-regressed`); 1 when no request succeeded; 0 otherwise. A breach outranks
//! "no request succeeded" because a threshold such as `errors>1%` is how a CI job says that a
//! run of failures is what it fears.

mod capacity;
mod fault_cells;
pub(crate) mod inputs;
mod k8s;
pub(crate) mod sweep;
pub(crate) mod target;

use std::ffi::OsString;
use std::io::Write;
use std::panic::AssertUnwindSafe;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::error::{ContextKind, ContextValue, ErrorKind as ClapErrorKind};
use clap::{CommandFactory, Parser};

use crate::app::sweep::Sweep;
use crate::cli::scenario;
use crate::cli::{Cli, Command, DiffArgs, LoadArgs, MergeArgs, OutputArgs, RunArgs, ServeArgs};
use crate::plan::Inputs;
use crate::report::export::outputs::{self, ExportPaths, Outputs};
use crate::report::Document;
use crate::runner::{panics, signals};
use crate::tls;
use crate::{cli, diff, error, merge, report, server, units, usage_bail};

/// Something failed (runtime error, panic, export, no request succeeded).
const FAILURE: u8 = 1;

/// A threshold was breached (`--fail-if`, `diff --fail-if-regressed`).
const BREACHED: u8 = 3;

/// Runs h2load-rs with these arguments and returns the process exit status. Never panics: a panic
/// in any thread is reported and makes the status 1.
pub fn main(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    panics::install_hook();
    let status = std::panic::catch_unwind(AssertUnwindSafe(|| {
        panics::inject("main");
        run(args)
    }))
    .unwrap_or(FAILURE);
    let status = match panics::first() {
        Some(panic) if status == 0 => {
            errln!("h2load-rs: {panic}");
            FAILURE
        }
        _ => status,
    };
    ExitCode::from(with_stdout_checked(status))
}

/// `status`, made a failure when the text could not be written to standard output (said in one
/// line) unless it already says more: a usage error or a signal.
fn with_stdout_checked(status: u8) -> u8 {
    let Some(error) = crate::console::finish() else {
        return status;
    };
    errln!("h2load-rs: cannot write to standard output: {error}");
    match status {
        0 | BREACHED => FAILURE,
        _ => status,
    }
}

/// Parses the arguments and runs the command; returns the exit status.
fn run(args: impl IntoIterator<Item = OsString>) -> u8 {
    let args: Vec<OsString> = args.into_iter().collect();
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(error) => return clap_exit(&error, &args),
    };
    let result = match cli.command {
        Some(Command::Serve(args)) => serve(&args),
        Some(Command::Run(args)) => run_scenario(&args),
        Some(Command::Merge(args)) => merge(&args),
        Some(Command::Diff(args)) => diff(&args),
        Some(Command::K8sJob(args)) => k8s::render(&args),
        Some(Command::Completions { shell }) => completions(shell),
        Some(Command::Man) => manual(),
        None => load_test(cli.load),
    };
    match result {
        Ok(status) => status,
        Err(error) => {
            // A run's error may quote a server (a reflection service's own words, say).
            errln!("h2load-rs: {}", error::escaped_line(&format!("{error:#}")));
            failure_status(&error)
        }
    }
}

/// The status for an error that ended the program: usage errors first, then a signal that had
/// stopped the run, then failure.
fn failure_status(error: &anyhow::Error) -> u8 {
    if error::is_usage(error) {
        error::USAGE
    } else {
        signals::received().map_or(FAILURE, signals::Signal::exit_code)
    }
}

/// Prints the completion script for `shell`.
fn completions(shell: clap_complete::Shell) -> Result<u8> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "h2load-rs", &mut script);
    let mut script = String::from_utf8_lossy(&script).into_owned();
    if shell == clap_complete::Shell::Bash {
        // clap_complete names a subcommand's case `h2load__subcmd__rs__subcmd__serve` (it takes
        // the binary's hyphen for a subcommand separator) where its dispatch sets
        // `h2load__rs__subcmd__serve`, so nothing completed after a subcommand (clap-rs/clap#6421).
        script = script.replace("h2load__subcmd__rs__", "h2load__rs__");
    }
    out!("{script}");
    Ok(0)
}

/// Prints the manual page, generated from the same definitions as `--help`: its options under
/// the same headings, and its examples in an EXAMPLES section (clap_mangen would fill
/// `--help`'s examples into one paragraph).
fn manual() -> Result<u8> {
    let man = clap_mangen::Man::new(Cli::command());
    let mut page = Vec::new();
    let rendered: std::io::Result<()> = (|| {
        man.render_title(&mut page)?;
        man.render_name_section(&mut page)?;
        man.render_synopsis_section(&mut page)?;
        man.render_description_section(&mut page)?;
        man.render_options_section(&mut page)?;
        man.render_subcommands_section(&mut page)?;
        page.extend_from_slice(roff_examples().as_bytes());
        man.render_version_section(&mut page)
    })();
    rendered.context("cannot render the manual page")?;
    out!("{}", String::from_utf8_lossy(&page));
    Ok(0)
}

/// The manual page's EXAMPLES section: each example's words as a roman line, its command
/// unfilled in bold, its backslashes and hyphens escaped for roff.
fn roff_examples() -> String {
    let escape = |text: &str| text.replace('\\', "\\e").replace('-', "\\-");
    let mut section = String::from(".SH EXAMPLES\n");
    for (what, command) in cli::EXAMPLES {
        section.push_str(&format!(
            ".PP\n\\&{}\n.nf\n.RS 4\n\\fB{}\\fR\n.RE\n.fi\n",
            escape(what),
            escape(command)
        ));
    }
    section
}

/// Help and version go to stdout with status 0; any other parse error is one line and status 2:
/// another tool's flag (`-z`, `-R`) says what to write here instead.
fn clap_exit(error: &clap::Error, args: &[OsString]) -> u8 {
    if matches!(
        error.kind(),
        ClapErrorKind::DisplayHelp | ClapErrorKind::DisplayVersion
    ) {
        crate::console::note(error.print());
        return 0;
    }
    let foreign = match (error.kind(), error.get(ContextKind::InvalidArg)) {
        (ClapErrorKind::UnknownArgument, Some(ContextValue::String(flag))) => {
            cli::habits::for_unknown_flag(flag, args)
                .map(|suggestion| format!("unexpected argument '{flag}': {suggestion}"))
        }
        _ => None,
    };
    let message = foreign.unwrap_or_else(|| one_line(&error.render().to_string()));
    errln!("h2load-rs: {}", error::escaped_line(&message));
    error::USAGE
}

/// Folds clap's message into one line: the error (which may list items on following lines), its
/// tips (`a similar argument exists: '--rate'`) and the pointer to `--help`, without the usage
/// block between them.
fn one_line(rendered: &str) -> String {
    rendered
        .split("\n\n")
        .filter(|block| !block.starts_with("Usage:"))
        .map(|block| {
            block
                .lines()
                .map(|line| line.trim().trim_start_matches("error: "))
                .filter(|line| !line.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|block| !block.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

fn merge(args: &MergeArgs) -> Result<u8> {
    let outputs = Outputs::check(&export_paths(&args.outputs), None)?;
    if outputs.takes_stdout() {
        crate::console::text_to_stderr();
    }
    let mut documents = Vec::new();
    let mut unreadable = Vec::new();
    for path in &args.results {
        let (found, broken) = merge::load_all(path)?;
        documents.extend(found);
        unreadable.extend(broken);
    }
    if documents.is_empty() {
        usage_bail!("no report could be read: {}", unreadable.join("; "));
    }
    let document_count = documents.len();
    let merge::Merged {
        mut document,
        missing: missing_shards,
        mixed,
    } = merge::merge(documents, args.allow_mixed)?;
    for cell in &mut document.cells {
        cell.thresholds = report::thresholds::check(cell, &args.fail_if);
        cell.warnings.extend(unreadable.iter().cloned());
    }
    outln!("merged {}", units::counted(document_count as u64, "report"));
    if let Some(mixed) = &mixed {
        outln!("warning: {mixed}");
    }
    if let Some(parts) = document.cells.first().and_then(|cell| cell.parts.as_ref()) {
        for line in parts.lines() {
            outln!("{line}");
        }
    }
    for cell in &document.cells {
        if document.cells.len() > 1 {
            outln!("\n=== cell {}: {}", cell.cell.index, cell.cell.label);
        }
        out!(
            "{}",
            report::layout::for_screen(&report::text::render(cell))
        );
    }
    if document.cells.len() > 1 {
        out!(
            "{}",
            report::layout::for_screen(&report::text::comparison(&document))
        );
    }
    let failures = outputs.write_all(&document);
    outputs::report_failures(&failures);
    let (verdicts, breached) = report::thresholds::stderr_lines(&document, &args.fail_if);
    for line in &verdicts {
        errln!("{line}");
    }
    // An incomplete sharded run (a part missing or interrupted) is written and shown, and
    // fails: its totals are not the scenario's, so a threshold read on them says nothing (1
    // before 3).
    if let Some(missing) = &missing_shards {
        errln!("h2load-rs: merge: {missing}");
    }
    if let Some(mixed) = &mixed {
        errln!("h2load-rs: merge: {mixed}");
    }
    // What was measured and could not be read is lost from these totals: said, and a failure.
    for sentence in &unreadable {
        errln!("h2load-rs: merge: {sentence}");
    }
    Ok(
        if !failures.is_empty() || missing_shards.is_some() || !unreadable.is_empty() {
            FAILURE
        } else if breached {
            BREACHED
        } else {
            0
        },
    )
}

/// `h2load-rs diff`: 3 when `--fail-if-regressed` finds a regression, 0 otherwise.
fn diff(args: &DiffArgs) -> Result<u8> {
    let base = merge::load(&args.base, "base report")?;
    let new = merge::load(&args.new, "new report")?;
    let diff = diff::compare(&base, &new)?;
    let (base, new) = (
        args.base.display().to_string(),
        args.new.display().to_string(),
    );
    let context = diff::render::Context {
        base: &base,
        new: &new,
        threshold_pct: args.fail_if_regressed,
    };
    if args.markdown {
        out!("{}", diff::render::markdown(&diff, &context));
    } else {
        out!("{}", diff::render::text(&diff, &context));
    }
    let regressed = args
        .fail_if_regressed
        .is_some_and(|threshold| !diff.regressions(threshold).is_empty());
    Ok(if regressed { BREACHED } else { 0 })
}

fn run_scenario(args: &RunArgs) -> Result<u8> {
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
        errln!("scenario {}: {description}", args.scenario.display());
    }
    load_test(cli.load)
}

fn load_test(args: LoadArgs) -> Result<u8> {
    let args = &args;
    cli::habits::check(args)?;
    let mut inputs = inputs::from_flags(args);
    if inputs.grpc.reflect {
        inputs.grpc.reflected = Some(reflect_schema(&inputs)?);
    }
    let finished = Sweep::prepare(args, &inputs)?.run()?;
    let document = &finished.document;
    Ok(if let Some(signal) = signals::received() {
        signal.exit_code()
    } else if finished.exports_failed {
        FAILURE
    } else if breached(document, args) {
        BREACHED
    } else if total(document, |cell| cell.requests.counters.succeeded) == 0 {
        if let Some(reason) = no_success_reason(document) {
            errln!("h2load-rs: {reason}");
        }
        FAILURE
    } else {
        0
    })
}

/// `--grpc-reflect`: the method's schema, asked of the server the first cell connects to.
fn reflect_schema(inputs: &Inputs) -> Result<prost_reflect::DescriptorPool> {
    let urls = &inputs.target.urls;
    if urls.is_empty() {
        usage_bail!(
            "--grpc-reflect asks the server of the URL for its schema: give one (the built-in target has no reflection service)"
        );
    }
    let specs = crate::plan::cells(inputs, None);
    let Some(spec) = specs.first() else {
        usage_bail!("--grpc-reflect: no cell to connect with");
    };
    let plan = crate::plan::build(
        inputs,
        urls,
        &[],
        spec,
        false,
        &crate::io::uring::probe::check,
    )?;
    let path = plan.grpc.as_ref().map_or("", |grpc| grpc.path.as_str());
    let service = path
        .trim_start_matches('/')
        .split_once('/')
        .map_or("", |(service, _)| service);
    crate::runner::reflect::fetch(&plan, service)
}

/// Prints every breached `--fail-if` threshold, one line each, then those not judged (a
/// percentile not estimable); whether one was breached.
fn breached(document: &Document, args: &LoadArgs) -> bool {
    let (verdicts, breached) = report::thresholds::stderr_lines(document, &args.fail_if);
    for line in &verdicts {
        errln!("{line}");
    }
    breached
}

/// A count summed over every cell of the run.
fn total(document: &Document, count: fn(&report::Summary) -> u64) -> u64 {
    document.cells.iter().map(count).sum()
}

/// Why no request succeeded (got a 2xx or 3xx), in one line; `None` when no connection could be
/// made, which the first error's line has already said.
fn no_success_reason(document: &Document) -> Option<String> {
    if total(document, |cell| cell.connections.opened) == 0 {
        return None;
    }
    let never_sent = total(document, |cell| cell.requests.never_sent);
    fn checks_failed(cell: &report::Summary) -> u64 {
        cell.checks.as_ref().map_or(0, |checks| checks.failed)
    }
    let outcomes = [
        (
            // Complete responses that failed, less those a check failed: 4xx/5xx statuses.
            total(document, |cell| {
                let counters = &cell.requests.counters;
                counters.failed - counters.errored - checks_failed(cell)
            }),
            if document.cells.iter().any(|cell| cell.grpc.is_some()) {
                "got a 4xx/5xx status or a grpc-status other than OK"
            } else {
                "got a 4xx/5xx status"
            },
        ),
        (total(document, checks_failed), "failed a response check"),
        (
            total(document, |cell| cell.requests.counters.errored) - never_sent,
            "got no complete response",
        ),
        (never_sent, "were never sent"),
        (
            total(document, |cell| cell.requests.in_flight_at_stop),
            "were still in flight when the run stopped",
        ),
    ];
    let said: Vec<String> = outcomes
        .iter()
        .filter(|(count, _)| *count > 0)
        .map(|(count, what)| format!("{count} {what}"))
        .collect();
    Some(match said.is_empty() {
        true => "no request succeeded: none was sent".to_owned(),
        false => format!("no request succeeded: {}", said.join(", ")),
    })
}

/// Runs `serving` until it fails, or until SIGINT or SIGTERM asks the target to stop, unless it is
/// a built-in target (`child`): its parent stops it, after the report (see [`signals::ignore`]).
async fn until_signal(
    serving: impl std::future::Future<Output = std::io::Result<()>>,
    child: bool,
) -> Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    if child {
        return serving.await.context("the server stopped");
    }
    let mut terminate = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
    tokio::select! {
        result = serving => result.context("the server stopped"),
        _ = tokio::signal::ctrl_c() => Ok(()),
        _ = terminate.recv() => Ok(()),
    }
}

fn serve(args: &ServeArgs) -> Result<u8> {
    if args.stop_with_parent {
        signals::ignore()?;
        std::thread::spawn(|| {
            // Reads until EOF: the parent holds the other end of this pipe for as long as it lives.
            let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
            std::process::exit(0);
        });
    }
    let tls = match (args.tls, &args.tls_cert, &args.tls_key) {
        (false, _, _) => None,
        (true, Some(cert), Some(key)) => Some(tls::server_config(
            &tls::read_pem(cert, "--tls-cert")?,
            &tls::read_pem(key, "--tls-key")?,
        )?),
        (true, _, _) => Some(tls::server_config(
            tls::test_pki::SERVER_CERT.as_bytes(),
            tls::test_pki::SERVER_KEY.as_bytes(),
        )?),
    };
    if args.unix.is_none() {
        let anyone = "anyone who can reach it can use the target, with no authentication (and the built-in TLS key in certs/ is public)";
        if let Some(line) = crate::exposure::warning("--host", args.host, anyone) {
            errln!("{line}");
        }
    }
    // A target is measured with thousands of connections: take every descriptor allowed.
    let descriptors =
        rlimit::increase_nofile_limit(u64::MAX).context("cannot raise the open-file limit")?;
    // Under the cap, accepting never runs out of descriptors: connections over it are accepted and
    // closed at once, which needs one, and listeners, timers and the runtime need some.
    let fits = usize::try_from(descriptors.saturating_sub(server::RESERVED_DESCRIPTORS))
        .unwrap_or(usize::MAX)
        .max(1);
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = args.threads {
        runtime.worker_threads(usize::from(threads));
    }
    let runtime = runtime
        .enable_all()
        .build()
        .context("cannot start the server runtime")?;
    let options = server::ServeOptions {
        max_connections: args.max_connections.min(fits),
        idle_timeout: args.idle_timeout,
        max_concurrent_streams: args.max_concurrent_streams,
        // HTTP/3 needs TLS and UDP; the faults are TCP misbehaviour, so a faulty target has none.
        h3: tls.is_some() && args.fault.is_none() && args.unix.is_none(),
        tls,
        fault: args.fault,
        sent: None,
        behaviour: server::Behaviour {
            delay: args.delay,
            stall: args
                .stall_every
                .zip(args.stall_for)
                .map(|(every, length)| server::Stall {
                    every,
                    length,
                    epoch: std::time::Instant::now(),
                }),
            slow: args
                .slow_every
                .zip(args.slow_by)
                .map(|(every, by)| server::Slow {
                    every,
                    by,
                    epoch: std::time::Instant::now(),
                }),
            applied: None,
            grpc_reply: args.grpc_reply,
        },
    };
    runtime.block_on(async {
        let secure = options.tls.is_some();
        if let Some(path) = &args.unix {
            // The socket file goes when this block ends: at a signal, or when serving fails.
            let (listener, _file) = server::listen_unix(path)
                .with_context(|| format!("cannot listen on unix socket {}", path.display()))?;
            let path = path.display();
            match secure {
                true => outln!("h2load-rs target listening on unix socket {path} (TLS: h2 and http/1.1 by ALPN)"),
                false => outln!("h2load-rs target listening on unix socket {path} (HTTP/1.1, h2c by prior knowledge and by Upgrade)"),
            }
            let _ = std::io::stdout().flush();
            return until_signal(server::serve_unix(listener, options), args.stop_with_parent).await;
        }
        let sockets = server::bind(std::net::SocketAddr::new(args.host, args.port), options.h3)
            .with_context(|| format!("cannot listen on {}:{}", args.host, args.port))?;
        let addr = sockets.local_addr()?;
        match (secure, sockets.h3_port()) {
            (true, Some(port)) => outln!(
                "h2load-rs target listening on https://{addr} (h2 and http/1.1 by ALPN; HTTP/3 on UDP port {port})"
            ),
            (true, None) => {
                outln!("h2load-rs target listening on https://{addr} (h2 and http/1.1 by ALPN)")
            }
            (false, _) => outln!(
                "h2load-rs target listening on http://{addr} (HTTP/1.1, h2c by prior knowledge and by Upgrade)"
            ),
        }
        let _ = std::io::stdout().flush();
        until_signal(server::serve(sockets, options), args.stop_with_parent).await
    })?;
    Ok(0)
}

/// The export flags as the report's paths.
fn export_paths(args: &OutputArgs) -> ExportPaths {
    ExportPaths {
        json: args.json.clone(),
        csv: args.csv.clone(),
        markdown: args.markdown.clone(),
        csv_timeline: args.csv_timeline.clone(),
        csv_urls: args.csv_urls.clone(),
        hdr_log: args.hdr_log.clone(),
        hgrm: args.hgrm.clone(),
        html: args.html.clone(),
    }
}
