//! `h2load-rs k8s-job`: the Indexed Job it renders, and its pods' commands run here as the Job
//! would run them (each with its `JOB_COMPLETION_INDEX`, all at once), their logs merged.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::common::{assert_usage_error, run_command, url};

const BIN: &str = env!("CARGO_BIN_EXE_h2load-rs");

#[test]
fn the_job_s_pods_run_the_load_once_between_them() {
    let target = url("/ping");
    let output = run_command(
        BIN,
        &[
            "k8s-job",
            "--workers",
            "3",
            "--image",
            "h2load-rs:test",
            "--pull",
            "Never",
            "--lead",
            "2s",
            "--host-network",
            "--",
            "-n",
            "300",
            "-c",
            "3",
            &target,
        ],
    );
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(
        output
            .stderr
            .contains("kubectl logs -l job-name=h2load-rs --tail=-1 | h2load-rs merge -"),
        "{}",
        output.stderr
    );
    let job: serde_json::Value = serde_json::from_str(&output.stdout).unwrap();
    let spec = &job["spec"];
    assert_eq!(job["kind"], "Job");
    assert_eq!(
        (
            &spec["completionMode"],
            &spec["completions"],
            &spec["parallelism"]
        ),
        (&"Indexed".into(), &3.into(), &3.into())
    );
    // A failed part is not run again, and does not stop the others (backoffLimit 0 would).
    assert_eq!(spec["backoffLimitPerIndex"], 0);
    assert!(spec["backoffLimit"].is_null());
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["hostNetwork"], true);
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(pod["automountServiceAccountToken"], false);
    let container = &pod["containers"][0];
    assert_eq!(
        (&container["image"], &container["imagePullPolicy"]),
        (&"h2load-rs:test".into(), &"Never".into())
    );
    let args: Vec<String> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|arg| arg.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(args[..4], ["-n", "300", "-c", "3"]);
    assert_eq!(args[5..8], ["-q", "--shard", "3"]);
    assert_eq!(args[10..], ["--json", "-"]);
    let start: jiff::Timestamp = args[9].parse().unwrap();
    let ahead = start.duration_since(jiff::Timestamp::now()).as_secs_f64();
    assert!((0.0..=3.0).contains(&ahead), "starts {ahead} s from now");
    // The pods, here: each with its index, all at once, their logs (stderr and stdout) one
    // after the other as `kubectl logs -l` prints them.
    let pods: Vec<_> = (0..3)
        .map(|index| {
            Command::new(BIN)
                .args(&args)
                .env("JOB_COMPLETION_INDEX", index.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut logs = Vec::new();
    for pod in pods {
        let output = pod.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        logs.extend(output.stderr);
        logs.extend(output.stdout);
    }
    let mut merge = Command::new(BIN)
        .args(["merge", "-", "--json", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    merge.stdin.take().unwrap().write_all(&logs).unwrap();
    let merged = merge.wait_with_output().unwrap();
    assert!(
        merged.status.success(),
        "{}",
        String::from_utf8_lossy(&merged.stderr)
    );
    let merged: serde_json::Value = serde_json::from_slice(&merged.stdout).unwrap();
    let cell = &merged["cells"][0];
    assert_eq!(cell["requests"]["total"], 300);
    assert_eq!(cell["requests"]["succeeded"], 300);
    assert_eq!(cell["connections"]["opened"], 3);
    let shards: Vec<u64> = cell["parts"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|part| part["shard"]["index"].as_u64().unwrap())
        .collect();
    assert_eq!(shards, [1, 2, 3]);
}

#[test]
fn a_job_that_could_not_run_is_refused_before_it_is_rendered() {
    let target = url("/ping");
    let job = |extra: &[&str], load: &[&str]| -> Vec<String> {
        let mut args = vec!["k8s-job", "--workers", "3", "--image", "i:1"];
        args.extend(extra);
        args.push("--");
        args.extend(load);
        args.into_iter().map(str::to_owned).collect()
    };
    for (args, says) in [
        (
            job(&[], &["-c", "2", &target]),
            "3 workers: -c 2 leaves shard 1/3 without a connection",
        ),
        (
            job(&[], &["-c", "3", "--find-max", &target]),
            "--shard cannot split --find-max",
        ),
        (
            job(&[], &["--shard", "1/3", &target]),
            "k8s-job sets --shard itself",
        ),
        (
            job(&[], &["--json=x.json", &target]),
            "k8s-job sets --json itself",
        ),
        (job(&[], &["-c", "3"]), "names no URL"),
        (
            job(&[], &["--no-such-flag", &target]),
            "the load after -- is not a run's",
        ),
        (
            job(&["--name", "Load_Test"], &[&target]),
            "--name 'Load_Test' is not a Job name",
        ),
        // Checked with the flags the Job adds: the pods' stdout is the log merge reads.
        (
            job(&[], &["-c", "3", "--html", "-", &target]),
            "writes --html to -: a pod's stdout is its log",
        ),
        (
            job(&[], &["-c", "3", "--csv=-", &target]),
            "writes --csv to -",
        ),
        (
            job(&[], &["-c", "3", "-H", "content-length: 5", &target]),
            "content-length is the run's to set",
        ),
        (
            job(
                &[],
                &["-c", "3", "-H", "transfer-encoding: chunked", &target],
            ),
            "transfer-encoding is the run's to set",
        ),
        (
            job(&[], &["-c", "3", &target, "--", "x"]),
            "holds a second --",
        ),
        // A flag left without its value, followed by the Job's own -q.
        (
            job(&[], &["-c", "3", &target, "-H"]),
            "a value is required for '--header",
        ),
        (
            job(&["--cpu", "lots"], &["-c", "3", &target]),
            "'lots' is not a Kubernetes quantity",
        ),
        (
            job(&["--memory", "1MiB"], &["-c", "3", &target]),
            "'1MiB' is not a Kubernetes quantity",
        ),
        (
            job(&["--memory", "0"], &["-c", "3", &target]),
            "'0' is zero",
        ),
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = assert_usage_error(&args, says);
        assert_eq!(output.stdout, "", "{args:?}: nothing printed");
    }
}

/// What the kubelet does to a container's args: `$(VAR)` becomes the variable's value (when it
/// is set), `$$` becomes `$`, any other `$` stays.
fn kubelet_expand(arg: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::new();
    let mut rest = arg;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if let Some(after) = rest.strip_prefix("$$") {
            out.push('$');
            rest = after;
        } else if let Some((name, after)) = rest
            .strip_prefix("$(")
            .and_then(|inner| inner.split_once(')'))
            .and_then(|(name, after)| {
                vars.iter()
                    .find(|(var, _)| *var == name)
                    .map(|(_, value)| (*value, after))
            })
        {
            out.push_str(name);
            rest = after;
        } else {
            out.push('$');
            rest = &rest[1..];
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn arguments_reach_the_pod_as_written_through_the_kubelet_s_expansion() {
    let target = url("/ping");
    let header = "x-idx: $(JOB_COMPLETION_INDEX) costs $5 $$";
    let output = run_command(
        BIN,
        &[
            "k8s-job",
            "--workers",
            "2",
            "--image",
            "i:1",
            "--cpu",
            "500m",
            "--memory",
            "1Gi",
            "--",
            "-c",
            "2",
            "-H",
            header,
            &target,
        ],
    );
    assert_eq!(output.code, 0, "{}", output.stderr);
    let job: serde_json::Value = serde_json::from_str(&output.stdout).unwrap();
    let container = &job["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["resources"]["requests"]["cpu"], "500m");
    assert_eq!(container["resources"]["limits"]["memory"], "1Gi");
    let args: Vec<&str> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|arg| arg.as_str().unwrap())
        .collect();
    assert_eq!(
        args[3], "x-idx: $$(JOB_COMPLETION_INDEX) costs $$5 $$$$",
        "{args:?}"
    );
    let vars = [("JOB_COMPLETION_INDEX", "1")];
    assert_eq!(kubelet_expand(args[3], &vars), header);
    // The expansion itself, as the kubelet does it, on the unescaped text.
    assert_eq!(
        kubelet_expand("$(JOB_COMPLETION_INDEX) $(NONE) $$", &vars),
        "1 $(NONE) $"
    );
}
