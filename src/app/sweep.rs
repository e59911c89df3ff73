//! A load test is a sweep: its cells (a protocol at a concurrency level) run one after another.
//! [`Sweep::prepare`] finds every usage error (plans, export paths, limits) before anything is
//! sent; [`Sweep::run`] runs the cells and rewrites every export after each one with all cells so
//! far, so a failure or a signal in cell 5 keeps cells 1 to 4.

use std::borrow::Cow;
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use anyhow::Result;

use crate::app::capacity;
use crate::app::target::BuiltIn;
use crate::cli::LoadArgs;
use crate::observe::live::Live;
use crate::observe::metrics::endpoint::Endpoint;
use crate::observe::metrics::{Board, Requested};
use crate::observe::progress;
use crate::observe::request_log::LogFile;
use crate::observe::trace::Tracer;
use crate::observe::watch::{self, Watch};
use crate::plan::rounds::Run;
use crate::plan::{self, CellSpec, Inputs, RunPlan};
use crate::report::export::outputs::{self, Outputs, StagedFile};
use crate::report::paint::{self, paint};
use crate::report::rounds::{RoundOf, RoundsInfo};
use crate::report::{self, CellContext, Document, Summary, SweepStop};
use crate::runner::{self, signals};

/// A load test ready to run: every cell planned, every destination checked.
pub(crate) struct Sweep<'a> {
    args: &'a LoadArgs,
    cells: Vec<(CellSpec, Arc<RunPlan>)>,
    built_in: Option<BuiltIn>,
    outputs: Outputs,
    log: Option<(StagedFile, LogFile)>,
    /// `--metrics-listen`: the endpoint, and the cells it shows.
    metrics: Option<(Endpoint, Arc<Board>)>,
}

/// What a sweep measured.
pub(crate) struct Finished {
    /// Every cell that ran, and their comparison.
    pub(crate) document: Document,
    /// Whether an export could not be written at the end (each failure is on stderr).
    pub(crate) exports_failed: bool,
}

impl<'a> Sweep<'a> {
    /// Plans every cell and checks every destination; any problem is an error before anything is
    /// sent (a usage error for bad input).
    pub(crate) fn prepare(args: &'a LoadArgs, inputs: &Inputs) -> Result<Sweep<'a>> {
        let outputs = Outputs::check(
            &super::export_paths(&args.outputs),
            args.log_file.as_deref(),
        )?;
        if outputs.takes_stdout() {
            crate::console::text_to_stderr();
        }
        let target = &inputs.target;
        let file_urls = match &target.input_file {
            Some(path) => plan::urls::read_url_file(path, inputs.load.threads)?,
            None => Vec::new(),
        };
        let specs = plan::cells(inputs, file_urls.first().map(String::as_str));
        if target.urls.is_empty()
            && file_urls
                .first()
                .is_some_and(|first| first.starts_with('/'))
        {
            crate::usage_bail!(
                "no URL given and the first line of the -i file '{}' is a path: make it a full URL (http://HOST:PORT/…)",
                target.input_file.as_deref().unwrap_or_else(|| std::path::Path::new("")).display()
            );
        }
        let built_in = match target.urls.is_empty() && file_urls.is_empty() {
            true => Some(BuiltIn::start(args, inputs, &specs)?),
            false => None,
        };
        let mut cells = Vec::with_capacity(specs.len());
        for spec in specs {
            let urls = match &built_in {
                Some(built_in) => vec![format!("{}{}", built_in.base_url(&spec), args.target_path)],
                None => target.urls.clone(),
            };
            let plan = plan::build(
                inputs,
                &urls,
                &file_urls,
                &spec,
                built_in.is_some(),
                &crate::io::uring::probe::check,
            )?;
            cells.push((spec, Arc::new(plan)));
        }
        print_notes(args, &cells);
        let most_clients = cells.iter().map(|(_, plan)| plan.clients).max();
        runner::ensure_fd_limit(most_clients.unwrap_or(1), 1)?;
        let metrics = match args.metrics_listen {
            Some(addr) => {
                let board = Arc::new(Board::default());
                let endpoint = Endpoint::start(addr, board.clone())?;
                errln!("metrics: serving http://{}/metrics", endpoint.addr());
                Some((endpoint, board))
            }
            None => None,
        };
        // Created last: a usage error above leaves nothing behind.
        let log = match &args.log_file {
            Some(path) => {
                let (staged, file) = StagedFile::create(path)?;
                Some((staged, LogFile::new(file)))
            }
            None => None,
        };
        Ok(Sweep {
            args,
            cells,
            built_in,
            outputs,
            log,
            metrics,
        })
    }

    /// Runs the cells in order, writing the exports after each; stops early on a signal. The
    /// metrics endpoint then lingers, however the cells ended.
    pub(crate) fn run(mut self) -> Result<Finished> {
        let finished = self.run_cells();
        if let Some((endpoint, _)) = self.metrics.take() {
            endpoint.linger(self.args.metrics_linger, runner::pause);
        }
        finished
    }

    fn run_cells(&mut self) -> Result<Finished> {
        signals::install()?;
        let mut document = Document::new(Vec::new());
        let mut failures = Vec::new();
        if self.args.start_at.is_some_and(|at| !wait_for_start(at)) {
            return Ok(Finished {
                document,
                exports_failed: false,
            });
        }
        let rounds = self.rounds();
        let seed = self.cells.first().map_or(0, |(_, plan)| plan.seed);
        let runs = plan::rounds::runs(self.cells.len(), rounds, self.args.round_order, seed);
        if rounds > 1 {
            document.rounds = Some(RoundsInfo {
                count: rounds,
                order: self.args.round_order.name().to_owned(),
                seed,
            });
        }
        for (position, run) in runs.iter().enumerate() {
            // A signal between runs (while exports were written, or during --cooldown) ends the
            // sweep too; no cell is marked interrupted then, so this line says where it stopped.
            if signals::received().is_some() {
                let stop = SweepStop {
                    after_cell: position,
                    of: runs.len(),
                };
                errln!(
                    "interrupted: the sweep stopped after {} {} of {}",
                    if rounds > 1 { "run" } else { "cell" },
                    stop.after_cell,
                    stop.of
                );
                document.stopped_between_cells = Some(stop);
                if position > 0 {
                    // The files written after the last cell get the stop too.
                    failures = self.write_exports(&document);
                }
                break;
            }
            let summary = match self.run_cell(position, *run, &runs) {
                Ok(summary) => summary,
                Err(error) => {
                    // The files have the cells so far; the streams get them too.
                    outputs::report_failures(&self.outputs.write_streams(&document));
                    return Err(error);
                }
            };
            let interrupted = summary.interrupted;
            document.push(summary);
            failures = self.write_exports(&document);
            if interrupted {
                break;
            }
            if let Some(cooldown) = self.args.cooldown.filter(|_| position + 1 < runs.len()) {
                // A signal before or during the pause is seen at the top of the loop.
                runner::cool_down(cooldown);
            }
        }
        if document.cells.len() > 1 {
            // -q keeps the verdicts: the ratios with their intervals, in plain words.
            let comparison = match self.args.quiet {
                true => report::text::comparison_verdicts(&document),
                false => report::text::comparison(&document),
            };
            out!("{}", self.shown(&comparison));
        }
        for line in report::capacity::sweep::sweep_lines(&document.cells) {
            outln!("{line}");
        }
        failures.extend(self.outputs.write_streams(&document));
        outputs::report_failures(&failures);
        Ok(Finished {
            document,
            exports_failed: !failures.is_empty(),
        })
    }

    /// The rounds of the sweep: `--rounds`, but with `--find-max` one run a cell, whose search
    /// takes each of its steps `--rounds` times instead (`app::capacity`).
    fn rounds(&self) -> usize {
        match self.args.find_max {
            true => 1,
            false => self.args.rounds as usize,
        }
    }

    fn color(&self) -> bool {
        paint::enabled(self.args.color)
    }

    /// The text as the screen shows it: wrapped to fit a terminal, then painted.
    fn shown(&self, text: &str) -> String {
        paint(&report::layout::for_screen(text), self.color())
    }

    /// Runs `run` (the `position`-th of `runs`, 0-based) and prints its report.
    fn run_cell(&self, position: usize, run: Run, runs: &[Run]) -> Result<Summary> {
        let index = run.cell;
        let (spec, plan) = &self.cells[index];
        let args = self.args;
        if !args.quiet {
            self.print_heading(position, run, runs.len(), plan);
            print_intro(plan);
        }
        let watch = Watch::start(&self.watched_pids(spec));
        let started = Instant::now();
        let cpu_before = watch::cpu_time(None);
        if args.verbose > 0 {
            errln!("io: {}", io_line(plan));
        }
        if args.verbose > 0 && plan.request.draws_random() {
            errln!(
                "seed: {0} (--seed {0} with the same -n draws the same URLs and values again)",
                plan.seed
            );
        }
        let trace = (args.verbose > 0).then(|| Arc::new(Tracer::new(plan, args.verbose)));
        let search = capacity::Search::from_args(args);
        // The trace and the bar would share stderr: the trace wins; a search prints its steps.
        // Off a terminal, lines instead, which interleave with a trace's; -q silences both.
        let style = match std::io::stderr().is_terminal() {
            true => progress::Style::Bar,
            false => progress::Style::Lines(args.progress_interval.unwrap_or(progress::LINE_EVERY)),
        };
        let show_progress =
            !args.quiet && search.is_none() && (trace.is_none() || style != progress::Style::Bar);
        let metrics = self.metrics.as_ref().map(|(_, board)| board);
        // `--until-stable` reads the workers' totals as the progress bar does.
        let live = (show_progress || metrics.is_some() || plan.until_stable.is_some())
            .then(|| Arc::new(Live::new(plan.threads)));
        let requested = match (&search, &plan.stages, plan.rate) {
            (Some(_), _, _) => Requested::Steered,
            (None, Some(stages), _) => Requested::Ramp(stages.clone()),
            (None, None, Some(rate)) => Requested::Constant(rate),
            (None, None, None) => Requested::Nothing,
        };
        let series = metrics.zip(live.clone()).map(|(board, live)| {
            board.add_cell(plan.label(), plan.protocol_label(), requested, live)
        });
        let display = live
            .clone()
            .filter(|_| show_progress)
            .map(|live| progress::Display::start(live, plan.stop, self.cell_name(run), style));
        let log = self.log.as_ref().map(|(_, file)| runner::CellLog {
            file: file.clone(),
            cell: position + 1,
        });
        let sinks = runner::Sinks { log, live, trace };
        let measured = match &search {
            Some(search) => capacity::measure(search, plan.clone(), sinks).map(|searched| {
                (
                    Cow::Owned(searched.plan),
                    searched.outcome,
                    Some(searched.capacity),
                )
            }),
            None => runner::run(plan.clone(), sinks)
                .map(|outcome| (Cow::Borrowed(&**plan), outcome, None)),
        };
        if let Some(display) = display {
            display.finish();
        }
        let (reported, outcome, capacity) = measured?;
        let generator_cpu = cpu_before
            .zip(watch::cpu_time(None))
            .map_or(0.0, |(before, after)| {
                100.0 * (after - before).as_secs_f64() / started.elapsed().as_secs_f64()
            });
        let context = CellContext {
            index: position + 1,
            level: spec.level,
            round: (self.rounds() > 1).then_some(RoundOf {
                round: run.round,
                cell: index + 1,
            }),
            generator_cpu_percent: generator_cpu,
            watched: watch.finish(),
        };
        let mut summary = Summary::new(&reported, &outcome, context);
        // How late the first measured period began after --start-at: the runs of several
        // machines line up only as well as this.
        if let (0, Some(at)) = (position, args.start_at) {
            summary.start_late_ms = Some(match outcome.measure_start_wall.duration_since(at) {
                Ok(late) => late.as_secs_f64() * 1000.0,
                Err(early) => -early.duration().as_secs_f64() * 1000.0,
            });
        }
        if let Some((board, series)) = metrics.zip(series) {
            board.finish_cell(series, summary.requests_per_s);
        }
        summary.thresholds = report::thresholds::check(&summary, &args.fail_if);
        // A search changes the rate by design: a trend in its whole run says nothing.
        if capacity.is_some() {
            summary.steadiness = None;
        }
        summary.capacity = capacity;
        self.print_summary(&summary);
        Ok(summary)
    }

    /// The built-in target that serves this cell first (the comparison's "target" columns show
    /// it), then every `--watch-pid`.
    fn watched_pids(&self, spec: &CellSpec) -> Vec<u32> {
        let mut watched: Vec<u32> = self
            .built_in
            .iter()
            .map(|target| target.pid(spec))
            .collect();
        watched.extend(&self.args.watch_pid);
        watched
    }

    /// `cell 2/6 h2c c=10 m=1`, with `--rounds` `round 2/5 cell 1/2 h2c c=10 m=1`; the label
    /// alone for a sweep of one cell run once.
    fn cell_name(&self, run: Run) -> String {
        let label = self.cells[run.cell].1.label();
        let cell = match self.cells.len() {
            1 => String::new(),
            count => format!("cell {}/{count} ", run.cell + 1),
        };
        match self.rounds() {
            1 => format!("{cell}{label}"),
            rounds => format!("round {}/{rounds} {cell}{label}", run.round),
        }
    }

    /// `=== cell 2/6: …`, or with `--rounds` `=== round 2/5, cell 1/2 (run 4 of 10): …`.
    fn print_heading(&self, position: usize, run: Run, runs: usize, plan: &RunPlan) {
        let heading = if self.rounds() > 1 {
            format!(
                "\n=== round {}/{}, cell {}/{} (run {} of {runs}): {}\n",
                run.round,
                self.rounds(),
                run.cell + 1,
                self.cells.len(),
                position + 1,
                plan.label()
            )
        } else if self.cells.len() > 1 {
            format!(
                "\n=== cell {}/{}: {}\n",
                run.cell + 1,
                self.cells.len(),
                plan.label()
            )
        } else {
            return;
        };
        out!("{}", paint(&heading, self.color()));
    }

    fn print_summary(&self, summary: &Summary) {
        if self.args.quiet {
            outln!("{}", report::text::one_line(summary));
            for line in report::thresholds::verdicts(summary, &self.args.fail_if) {
                outln!("  {line}");
            }
        } else {
            out!("{}", self.shown(&report::text::render(summary)));
            if let Some(capacity) = &summary.capacity {
                out!(
                    "{}",
                    report::layout::for_screen(&report::capacity::render(capacity))
                );
            }
        }
        for warning in &summary.warnings {
            errln!("h2load-rs: warning: {warning}");
        }
        if let Some(problem) = &summary.first_error {
            errln!("h2load-rs: {problem}");
        }
    }

    /// Writes every export file with the cells so far, and puts the request log in place; returns
    /// the failures (each export is attempted whatever happened to the others).
    fn write_exports(&mut self, document: &Document) -> Vec<anyhow::Error> {
        let mut failures = self.outputs.write_files(document);
        if let Some((staged, _)) = &mut self.log {
            failures.extend(staged.place().err());
        }
        failures
    }
}

/// Prints the plans' notes (unless `--quiet`) and warnings, each once.
fn print_notes(args: &LoadArgs, cells: &[(CellSpec, Arc<RunPlan>)]) {
    let notes = each_once(cells.iter().flat_map(|(_, plan)| &plan.notes));
    if !args.quiet {
        for note in notes {
            errln!("note: {note}");
        }
    }
    let warnings = each_once(cells.iter().flat_map(|(_, plan)| &plan.warnings));
    for warning in warnings {
        errln!("h2load-rs: warning: {warning}");
    }
}

/// The lines in their first order, each once: the cells of a sweep share their options, so they
/// repeat each other's notes, and not always next to each other.
fn each_once<'a>(lines: impl Iterator<Item = &'a String>) -> Vec<&'a String> {
    let mut seen = std::collections::HashSet::new();
    lines.filter(|line| seen.insert(*line)).collect()
}

/// The `-v` line that says how the cell's connections do their I/O.
fn io_line(plan: &RunPlan) -> String {
    let how = match plan.io {
        plan::IoBackend::Epoll if plan.negotiation == plan::Negotiation::Quic => {
            "QUIC's UDP socket on the epoll reactor, whatever --io says"
        }
        plan::IoBackend::Epoll => "readiness-based, on the epoll reactor",
        plan::IoBackend::Uring { sqpoll: false } => "one io_uring per thread",
        plan::IoBackend::Uring { sqpoll: true } => {
            "one io_uring per thread, its submission queue polled by a kernel thread"
        }
    };
    format!("{} ({how})", plan.io.name())
}

fn print_intro(plan: &RunPlan) {
    outln!("starting benchmark...");
    for thread in 0..plan.threads {
        let clients =
            plan.clients / plan.threads + usize::from(thread < plan.clients % plan.threads);
        outln!("spawning thread #{thread}: {clients} total client(s).");
    }
}

/// Waits for `--start-at`; `false` if a signal interrupted the wait.
fn wait_for_start(at: SystemTime) -> bool {
    match at.duration_since(SystemTime::now()) {
        Ok(wait) => {
            errln!("waiting {:.1} s for --start-at", wait.as_secs_f64());
            !runner::pause(wait)
        }
        Err(_) => {
            errln!("h2load-rs: warning: --start-at is in the past; starting now");
            true
        }
    }
}
