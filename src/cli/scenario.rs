//! Scenario files for `h2load-rs run FILE.toml [ARGS...]`: every key is a load-test option's long
//! name (`clients = [1, 10]`, `proto = ["h1", "h2c"]`, `duration = "30s"`, `h2-multiplex = true`),
//! plus `urls` and a free-text `description`. Options given on the command line replace the file's.

use std::ffi::OsString;
use std::path::Path;

use anyhow::Result;
use clap::parser::ValueSource;
use clap::CommandFactory;

use crate::cli::Cli;
use crate::input;
use crate::limits::MAX_SCENARIO_FILE;
use crate::usage_bail;

/// A scenario turned into command-line arguments.
#[derive(Debug)]
pub(crate) struct Scenario {
    /// The file's `description`, if any.
    pub(crate) description: Option<String>,
    /// Arguments for [`Cli`]: the program name, the file's options, then the command line's.
    pub(crate) argv: Vec<OsString>,
}

/// Reads `path` and merges it with `overrides` (the arguments after the file name).
pub(crate) fn load(path: &Path, overrides: &[OsString]) -> Result<Scenario> {
    let text = input::read_text(path, "scenario file", MAX_SCENARIO_FILE)?;
    parse(&text, &path.display().to_string(), overrides)
}

/// Merges scenario `text` (named `shown` in messages) with `overrides`.
pub(crate) fn parse(text: &str, shown: &str, overrides: &[OsString]) -> Result<Scenario> {
    let table: toml::Table = match text.parse() {
        Ok(table) => table,
        Err(error) => usage_bail!("{shown}: {}", error.message()),
    };
    let program = OsString::from("h2load-rs");
    let command = Cli::command();
    let from_user = match command
        .clone()
        .try_get_matches_from(std::iter::once(&program).chain(overrides))
    {
        Ok(matches) => matches,
        Err(error) => usage_bail!("{}", first_line(&error.render().to_string())),
    };
    let given = |id: &str| from_user.value_source(id) == Some(ValueSource::CommandLine);

    let mut argv = vec![program];
    let mut description = None;
    let mut urls = Vec::new();
    for (key, value) in &table {
        match key.as_str() {
            "description" => match value.as_str() {
                Some(text) => description = Some(text.to_owned()),
                None => usage_bail!("{shown}: 'description' must be a string"),
            },
            "urls" => match strings(value) {
                Some(list) if !given("urls") => urls = list,
                Some(_) => {}
                None => usage_bail!("{shown}: 'urls' must be a string or a list of strings"),
            },
            _ => {
                let Some(arg) = command
                    .get_arguments()
                    .find(|arg| arg.get_long() == Some(key.as_str()))
                else {
                    usage_bail!("{shown}: unknown key '{key}' (keys are the long option names, e.g. clients, proto, requests, duration)");
                };
                if given(arg.get_id().as_str()) {
                    continue;
                }
                let flag = format!("--{key}");
                let takes_values = arg.get_action().takes_values();
                match (value, takes_values) {
                    (toml::Value::Boolean(true), false) => argv.push(flag.into()),
                    (toml::Value::Boolean(false), false) => {}
                    (_, false) => usage_bail!("{shown}: '{key}' is a switch: write {key} = true"),
                    (toml::Value::Array(items), true) => {
                        let Some(items) = items.iter().map(scalar).collect::<Option<Vec<_>>>()
                        else {
                            usage_bail!("{shown}: '{key}' must list plain values");
                        };
                        if arg.get_value_delimiter().is_some() {
                            argv.push(format!("{flag}={}", items.join(",")).into());
                        } else {
                            argv.extend(
                                items
                                    .iter()
                                    .map(|item| OsString::from(format!("{flag}={item}"))),
                            );
                        }
                    }
                    (value, true) => match scalar(value) {
                        Some(text) => argv.push(format!("{flag}={text}").into()),
                        None => usage_bail!("{shown}: '{key}' must be a string, number or list"),
                    },
                }
            }
        }
    }
    argv.extend(urls.into_iter().map(OsString::from));
    argv.extend(overrides.iter().cloned());
    Ok(Scenario { description, argv })
}

fn scalar(value: &toml::Value) -> Option<String> {
    match value {
        toml::Value::String(text) => Some(text.clone()),
        toml::Value::Integer(number) => Some(number.to_string()),
        toml::Value::Float(number) => Some(number.to_string()),
        _ => None,
    }
}

fn strings(value: &toml::Value) -> Option<Vec<String>> {
    match value {
        toml::Value::String(text) => Some(vec![text.clone()]),
        toml::Value::Array(items) => items
            .iter()
            .map(|item| item.as_str().map(str::to_owned))
            .collect(),
        _ => None,
    }
}

fn first_line(rendered: &str) -> String {
    rendered
        .lines()
        .next()
        .unwrap_or("")
        .trim_start_matches("error: ")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn scenario(toml: &str, overrides: &[&str]) -> Result<Scenario> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        std::fs::write(&path, toml).unwrap();
        let overrides: Vec<OsString> = overrides.iter().map(OsString::from).collect();
        load(&path, &overrides)
    }

    #[test]
    fn keys_become_options_and_the_command_line_wins() {
        let loaded = scenario(
            "description = \"seed\"\nclients = [1, 10]\nproto = [\"h1\", \"h2c\"]\nrequests = 500\nh2-multiplex = true\nheader = [\"a: 1\", \"b: 2\"]\nurls = \"http://127.0.0.1:1/x\"\n",
            &["-c", "5"],
        )
        .unwrap();
        assert_eq!(loaded.description.as_deref(), Some("seed"));
        let cli = Cli::try_parse_from(&loaded.argv).unwrap();
        assert_eq!(
            cli.load.clients,
            [5],
            "the command line replaced the file's list"
        );
        assert_eq!(cli.load.proto.len(), 2);
        assert!(cli.load.h2_multiplex);
        assert_eq!(cli.load.headers, ["a: 1", "b: 2"]);
        assert_eq!(cli.load.urls, ["http://127.0.0.1:1/x"]);
        let replaced = scenario(
            "urls = \"http://127.0.0.1:1/x\"\n",
            &["http://127.0.0.1:2/y"],
        )
        .unwrap();
        assert_eq!(
            Cli::try_parse_from(&replaced.argv).unwrap().load.urls,
            ["http://127.0.0.1:2/y"]
        );
    }

    #[test]
    fn stages_in_a_file_make_the_plan_the_flag_makes() {
        let loaded = scenario(
            "stages = [\"30s:1000\", \"1m:5000\"]\nclients = 8\nh1 = true\n",
            &["http://127.0.0.1:1/"],
        )
        .unwrap();
        let from_file = Cli::try_parse_from(&loaded.argv).unwrap().load;
        let from_flag = Cli::try_parse_from([
            "h2load-rs",
            "--h1",
            "-c",
            "8",
            "--stages",
            "30s:1000,1m:5000",
            "http://127.0.0.1:1/",
        ])
        .unwrap()
        .load;
        let plan = |args: &crate::cli::LoadArgs| {
            let inputs = crate::app::inputs::from_flags(args);
            let cells = crate::plan::cells(&inputs, None);
            assert_eq!(cells.len(), 1, "a ramp is one cell");
            crate::plan::build(
                &inputs,
                &args.urls,
                &[],
                &cells[0],
                false,
                &crate::io::uring::probe::check,
            )
            .unwrap()
        };
        let (file_plan, flag_plan) = (plan(&from_file), plan(&from_flag));
        assert_eq!(file_plan.stages, flag_plan.stages);
        assert_eq!(file_plan.stop, flag_plan.stop);
        assert_eq!(file_plan.label(), "h1 c=8 m=1 stages=30s:1000,1m:5000");
        assert_eq!(
            file_plan.stop,
            crate::plan::StopRule::Duration {
                warm_up: std::time::Duration::ZERO,
                measure: std::time::Duration::from_secs(90)
            }
        );
        assert_eq!(file_plan.stages.unwrap().total(), 15_000.0 + 180_000.0);
    }

    #[test]
    fn bad_files_name_the_problem() {
        let message = |toml: &str| format!("{:#}", scenario(toml, &[]).unwrap_err());
        assert!(message("clientz = 3").contains("unknown key 'clientz'"));
        assert!(message("h2-multiplex = 3").contains("'h2-multiplex' is a switch"));
        assert!(
            message("clients = { a = 1 }").contains("'clients' must be a string, number or list")
        );
        assert!(message("clients = [").contains("s.toml"));
        let wrong_type = scenario("clients = \"many\"", &[]).unwrap();
        let error = Cli::try_parse_from(&wrong_type.argv)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("'many'") && error.contains("--clients"),
            "{error}"
        );
    }

    #[test]
    fn si_suffixes_count_the_same_in_flags_and_files() {
        let flags = Cli::try_parse_from([
            "h2load-rs",
            "-n",
            "10k",
            "-c",
            "1,1k",
            "-m",
            "2",
            "--rate",
            "1.5k,2M",
            "--max-retries",
            "0.01k",
            "http://127.0.0.1:1/",
        ])
        .unwrap()
        .load;
        assert_eq!(flags.requests, Some(crate::plan::Requests::Total(10_000)));
        assert_eq!(flags.clients, [1, 1_000]);
        assert_eq!(flags.rate, [1_500.0, 2_000_000.0]);
        let ramp = Cli::try_parse_from(["h2load-rs", "--stages", "1s:0.5k", "--fail-if", "rps<2k"])
            .unwrap()
            .load;
        assert_eq!(ramp.stages[0].rate, 500.0);
        assert_eq!(ramp.fail_if[0].bound, 2_000.0);
        assert_eq!(flags.max_retries, 10);
        let loaded = scenario(
            "requests = \"2.5kx\"\nclients = [\"1\", \"1k\"]\nrate = \"1.5k\"\n",
            &["http://127.0.0.1:1/"],
        )
        .unwrap();
        let file = Cli::try_parse_from(&loaded.argv).unwrap().load;
        assert_eq!(
            file.requests,
            Some(crate::plan::Requests::PerConcurrency(2_500))
        );
        assert_eq!(file.clients, [1, 1_000]);
        assert_eq!(file.rate, [1_500.0]);
        for (args, says) in [
            (&["-n", "1.5"][..], "'1.5' is not a whole number"),
            (&["-c", "2M"], "'2M' (2000000) is not in 1..=1000000"),
            (&["-n", "2000G"], "more than 1000000000000 (10^12)"),
            (&["-n", "99999999999G"], "too large a count"),
            (&["-t", "10m"], "m is SI's milli"),
        ] {
            let error = Cli::try_parse_from(["h2load-rs"].iter().chain(args))
                .unwrap_err()
                .to_string();
            assert!(error.contains(says), "{args:?}: {error}");
        }
    }
}
