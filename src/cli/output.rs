//! Where results go and what responses must show: [`OutputArgs`] and [`CheckArgs`] (flattened
//! into the load test's flags), and the flags of `merge` and `diff`, which write reports too.

use std::path::PathBuf;

use clap::Args;

use crate::units::parse_percent;

/// Where results are written (every format is optional).
#[derive(Debug, Args, Default)]
pub(crate) struct OutputArgs {
    /// Write every cell as JSON to FILE (- for standard output).
    #[arg(long = "json", value_name = "FILE")]
    pub(crate) json: Option<PathBuf>,

    /// Write the comparison table as CSV to FILE (- for standard output).
    #[arg(long = "csv", value_name = "FILE")]
    pub(crate) csv: Option<PathBuf>,

    /// Write the comparison table as Markdown to FILE (- for standard output).
    #[arg(long = "markdown", value_name = "FILE")]
    pub(crate) markdown: Option<PathBuf>,

    /// Write every cell's timeline (one row per interval) as CSV to FILE (- for standard output).
    #[arg(long = "csv-timeline", value_name = "FILE")]
    pub(crate) csv_timeline: Option<PathBuf>,

    /// Write every cell's per-URL figures (runs of two URLs or more) as CSV to FILE (- for
    /// standard output).
    #[arg(long = "csv-urls", value_name = "FILE")]
    pub(crate) csv_urls: Option<PathBuf>,

    /// Write an HdrHistogram interval log (Java-compatible) to FILE (- for standard output).
    #[arg(long = "hdr-log", value_name = "FILE")]
    pub(crate) hdr_log: Option<PathBuf>,

    /// Write HdrHistogram percentile distributions (.hgrm) of every cell into DIR.
    #[arg(long = "hgrm", value_name = "DIR")]
    pub(crate) hgrm: Option<PathBuf>,

    /// Write a self-contained HTML page with charts to FILE (- for standard output).
    #[arg(long = "html", value_name = "FILE")]
    pub(crate) html: Option<PathBuf>,
}

/// Response checks: a response that fails one counts as failed, with error kind `check`.
#[derive(Debug, Args, Default)]
pub(crate) struct CheckArgs {
    /// Statuses that count as success instead of 2xx/3xx: codes and classes, comma-separated
    /// (200,204 or 2xx); any other status fails the check (repeatable).
    #[arg(long = "expect-status", value_name = "CODE[,CODE...]")]
    pub(crate) expect_status: Vec<String>,

    /// A response header field that must be present: 'Name: value' (name case-insensitive, value
    /// exact once trimmed) or 'Name' for any value (repeatable, at most 64).
    #[arg(long = "expect-header", value_name = "HEADER")]
    pub(crate) expect_header: Vec<String>,

    /// A string the first 64 KiB of every response body must contain (case-sensitive).
    #[arg(long = "expect-body-contains", value_name = "STRING")]
    pub(crate) expect_body_contains: Option<String>,
}

/// Arguments of `h2load-rs merge`.
#[derive(Debug, Args)]
pub(crate) struct MergeArgs {
    /// `--json` reports of the same scenario, run on several machines.
    #[arg(value_name = "RESULT.json", required = true)]
    pub(crate) results: Vec<PathBuf>,
    /// Files to write the merged results to.
    #[command(flatten)]
    pub(crate) outputs: OutputArgs,
    /// Fail the merge (exit status 3) when this holds for a merged cell, read on the merged
    /// histograms and counts: a run's --fail-if, e.g. 'p99>50ms' (repeatable).
    #[arg(long = "fail-if", value_name = "EXPR", value_parser = crate::plan::objective::parse)]
    pub(crate) fail_if: Vec<crate::plan::objective::Objective>,
    /// Merge reports of different scenarios (another -c, -n, rate, URL, method, protocol or
    /// h2load-rs version) instead of refusing them; every output then says so in a warning.
    #[arg(long = "allow-mixed")]
    pub(crate) allow_mixed: bool,
}

/// Arguments of `h2load-rs diff`.
#[derive(Debug, Args)]
pub(crate) struct DiffArgs {
    /// The baseline `--json` report.
    #[arg(value_name = "BASE.json")]
    pub(crate) base: PathBuf,
    /// The `--json` report compared with it.
    #[arg(value_name = "NEW.json")]
    pub(crate) new: PathBuf,
    /// Exit with status 3 when a cell's throughput fell, or its p99 rose, by more than PCT
    /// percent (`10%` or `10`) and the change is significant (or the runs are too short to tell).
    #[arg(long = "fail-if-regressed", value_name = "PCT", value_parser = parse_percent)]
    pub(crate) fail_if_regressed: Option<f64>,
    /// Print a GitHub-flavoured Markdown table (one row per cell) instead of the text.
    #[arg(long = "markdown")]
    pub(crate) markdown: bool,
}
