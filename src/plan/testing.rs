//! Test helpers of the plan's files: a cell's plan built from a command line (its inputs made as
//! `app` makes them), and the usage error a command line fails with.

use anyhow::Result;
use clap::Parser;

use super::build::build;
use super::cells::cells;
use super::run_plan::RunPlan;
use crate::io::uring::probe::check;

/// The plan of the first cell of the command line `argv` (without the program name).
pub(super) fn plan(argv: &[&str]) -> Result<RunPlan> {
    let cli =
        crate::cli::Cli::try_parse_from(std::iter::once("h2load-rs").chain(argv.iter().copied()))
            .expect("arguments parse");
    let inputs = crate::app::inputs::from_flags(&cli.load);
    let cells = cells(&inputs, None);
    build(&inputs, &inputs.target.urls, &[], &cells[0], false, &check)
}

/// The message of the usage error `argv` must fail with.
pub(super) fn usage_message(argv: &[&str]) -> String {
    let error = plan(argv).expect_err("plan must fail");
    assert!(
        error.downcast_ref::<crate::error::UsageError>().is_some(),
        "{error:#}"
    );
    error.to_string()
}
