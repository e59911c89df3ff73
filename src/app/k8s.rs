//! `h2load-rs k8s-job`: renders the Kubernetes Indexed Job whose pods run one load once between
//! them, each pod a `--shard` of it (its index from `JOB_COMPLETION_INDEX`), all starting at one
//! time a lead ahead of now, each writing its report to its log for `merge -` to collect. The
//! load is checked here, before anything reaches the cluster: the same flags a run takes, and the
//! same rules for what can be split.

use std::time::SystemTime;

use anyhow::Result;
use clap::Parser;

use crate::cli::{Cli, K8sJobArgs};
use crate::plan::shard::Shard;
use crate::plan::Requests;
use crate::usage_bail;

/// The longest Job name: Kubernetes adds the index and a suffix to make its pods' names.
const MAX_NAME: usize = 52;

/// Prints the Job (JSON, which `kubectl apply -f -` takes), and on stderr when it starts and how
/// to collect the reports.
pub(super) fn render(args: &K8sJobArgs) -> Result<u8> {
    check_name(&args.name)?;
    let start = SystemTime::now() + args.lead;
    let start = match jiff::Timestamp::try_from(start) {
        Ok(timestamp) => timestamp.round(jiff::Unit::Second)?.to_string(),
        Err(error) => usage_bail!("--lead {:?} reaches past the calendar: {error}", args.lead),
    };
    let mut container_args = Vec::with_capacity(args.load.len() + 7);
    for arg in &args.load {
        let Some(arg) = arg.to_str() else {
            usage_bail!(
                "the load after -- holds an argument that is not UTF-8 ('{}'): a Job's args are JSON strings",
                arg.to_string_lossy().escape_debug()
            );
        };
        container_args.push(arg.to_owned());
    }
    // A pod's stdout and stderr reach its log through two pipes and can interleave line by
    // line: -q keeps stderr to unindented lines (warnings, the one-line summary), which the
    // merge can tell from the report's own lines.
    if !container_args
        .iter()
        .any(|arg| arg == "-q" || arg == "--quiet")
    {
        container_args.push("-q".to_owned());
    }
    // Checked as pod 0 runs it: here no JOB_COMPLETION_INDEX gives `--shard N` its index.
    let as_pod_zero: Vec<String> = (container_args.iter().cloned())
        .chain(job_flags(format!("1/{}", args.workers), &start))
        .collect();
    check_load(args, &as_pod_zero)?;
    container_args.extend(job_flags(args.workers.to_string(), &start));
    // The kubelet expands `$(VAR)` in a container's args and reads `$$` as `$`: every `$`
    // doubled, each argument reaches the pod as written (`-H 'x-idx: $(JOB_COMPLETION_INDEX)'`
    // is a header a template renders, not the pod's index).
    let container_args: Vec<String> = container_args
        .iter()
        .map(|arg| arg.replace('$', "$$"))
        .collect();
    let job = serde_json::json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": { "name": args.name, "labels": { "app.kubernetes.io/name": "h2load-rs" } },
        "spec": {
            "completionMode": "Indexed",
            "completions": args.workers,
            "parallelism": args.workers,
            // A part that fails is not run again (its load would land late and alone), and the
            // others run on: with `backoffLimit: 0` the first failure would stop every pod.
            "backoffLimitPerIndex": 0,
            "template": {
                "metadata": { "labels": { "app.kubernetes.io/name": "h2load-rs" } },
                "spec": {
                    "restartPolicy": "Never",
                    "hostNetwork": args.host_network,
                    // A load generator has no business with the cluster's API.
                    "automountServiceAccountToken": false,
                    "securityContext": {
                        "runAsNonRoot": true,
                        "runAsUser": 65532,
                        "runAsGroup": 65532
                    },
                    "containers": [{
                        "name": "h2load-rs",
                        "image": args.image,
                        "imagePullPolicy": args.pull,
                        "args": container_args,
                        "resources": {
                            "requests": { "cpu": args.cpu, "memory": args.memory },
                            "limits": { "memory": args.memory }
                        },
                        "securityContext": {
                            "allowPrivilegeEscalation": false,
                            "readOnlyRootFilesystem": true,
                            "capabilities": { "drop": ["ALL"] }
                        }
                    }]
                }
            }
        }
    });
    outln!("{}", serde_json::to_string_pretty(&job)?);
    errln!(
        "the {} pods start at {start}: apply the Job before then (kubectl apply -f -); then, once every pod has ended (kubectl wait pod -l job-name={name} --for=jsonpath='{{.status.containerStatuses[0].state.terminated}}' --timeout=-1s), collect: kubectl logs -l job-name={name} --tail=-1 | h2load-rs merge -",
        args.workers,
        name = args.name
    );
    Ok(0)
}

/// The flags the Job adds after the load: each pod's part (`shard`), the common start, and the
/// report on stdout.
fn job_flags(shard: String, start: &str) -> [String; 6] {
    [
        "--shard".to_owned(),
        shard,
        "--start-at".to_owned(),
        start.to_owned(),
        "--json".to_owned(),
        "-".to_owned(),
    ]
}

/// A Job name Kubernetes takes: a DNS label, short enough for its pods' names.
fn check_name(name: &str) -> Result<()> {
    let valid = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if !valid {
        usage_bail!("--name '{name}' is not a Job name: lowercase letters, digits and '-', at most {MAX_NAME}, not starting or ending with '-'");
    }
    Ok(())
}

/// The pods' command line (`container_args`: the load and the flags the Job adds) parses as a
/// run's flags with a URL, leaves the Job's own flags to it, writes nothing else to stdout (the
/// log `merge -` reads), sends headers a run takes, and can be split between the workers.
fn check_load(args: &K8sJobArgs, container_args: &[String]) -> Result<()> {
    for arg in &args.load {
        let arg = arg.to_string_lossy();
        if arg == "--" {
            usage_bail!("the load after -- holds a second --: the flags the Job adds after the load (--shard, --start-at, --json) would be read as URLs");
        }
        if let Some(own) = ["--shard", "--start-at", "--json"]
            .into_iter()
            .find(|own| arg == *own || arg.starts_with(&format!("{own}=")))
        {
            usage_bail!("k8s-job sets {own} itself: leave it out of the load");
        }
    }
    let command_line =
        std::iter::once("h2load-rs").chain(container_args.iter().map(String::as_str));
    let cli = match Cli::try_parse_from(command_line) {
        Ok(cli) => cli,
        Err(error) => usage_bail!(
            "the load after -- is not a run's: {}",
            error
                .render()
                .to_string()
                .lines()
                .next()
                .unwrap_or_default()
        ),
    };
    if cli.command.is_some() {
        usage_bail!("the load after -- must be a run's options and URL, not a command");
    }
    let load = &cli.load;
    if load.urls.is_empty() && load.input_file.is_none() {
        usage_bail!("the load after -- names no URL: the pods need a target they can reach");
    }
    let outputs = &load.outputs;
    for (flag, path) in [
        ("--csv", &outputs.csv),
        ("--markdown", &outputs.markdown),
        ("--csv-timeline", &outputs.csv_timeline),
        ("--csv-urls", &outputs.csv_urls),
        ("--hdr-log", &outputs.hdr_log),
        ("--hgrm", &outputs.hgrm),
        ("--html", &outputs.html),
    ] {
        if path.as_deref() == Some(std::path::Path::new("-")) {
            usage_bail!("the load after -- writes {flag} to -: a pod's stdout is its log, which carries the Job's --json report for merge alone");
        }
    }
    for header in &load.headers {
        crate::plan::header_flag(header)?;
    }
    let shard = Shard {
        index: 1,
        count: args.workers,
    };
    let fewest = load.clients.iter().copied().min().unwrap_or(1);
    let requests = match load.requests {
        Some(Requests::Total(n)) => Some(n),
        Some(Requests::PerConcurrency(_)) | None => None,
    };
    let until_stable = load.until_stable.is_some();
    if let Some(refusal) = shard.refusal(load.find_max, until_stable, fewest, requests) {
        usage_bail!("{} workers: {refusal}", args.workers);
    }
    Ok(())
}
