//! Habits from other tools: SI suffixes on counts and rates, another tool's flags answered with
//! the flag meant here, an inline body beside h2load's `-d FILE`, `--until-stable` without a
//! count, and a `--help` grouped under headings that ends with examples.

use std::time::Duration;

use crate::common::{assert_usage_error, h2load_rs, h2load_rs_within, run_command, url};

const BIN: &str = env!("CARGO_BIN_EXE_h2load-rs");

/// `-n 1.2k` is exactly 1200 requests in every cell of `-c 1,0.002k`, and a count that is not
/// whole, or does not fit, is one line and status 2.
#[test]
fn si_suffixes_count_exactly() {
    let run = h2load_rs(&["--h1", "-n", "1.2k", "-c", "1,0.002k", &url("/ping")]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let cells = run.json["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    for (cell, clients) in cells.iter().zip([1, 2]) {
        assert_eq!(cell["settings"]["clients"], clients);
        assert_eq!(cell["requests"]["succeeded"], 1200, "{cell}");
    }
    let good = url("/ping");
    assert_usage_error(
        &["-n", "1.5", &good],
        "'1.5' is not a whole number: a count has no fraction",
    );
    assert_usage_error(&["-n", "99999999999G", &good], "too large a count");
    assert_usage_error(&["-c", "1.5", &good], "--clients");
    assert_usage_error(&["--rate", "10m", &good], "not a rate");
}

/// `--rate 1.5k` paces 1500 requests a second: 300 in the 200 ms a `-n 300` run then takes, so
/// the achieved rate is the requested one (a 1.5 request/s rate would need 200 s).
#[test]
fn a_rate_with_a_suffix_is_that_many_per_second() {
    let run = h2load_rs(&[
        "--h1",
        "-c",
        "4",
        "-n",
        "300",
        "--rate",
        "1.5k",
        &url("/ping"),
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    assert_eq!(run.num("rate/requested_per_s"), 1500.0);
    assert_eq!(run.int("requests/succeeded"), 300);
}

/// Another tool's flag, or its meaning of one of ours, is one line naming what to write here.
#[test]
fn another_tools_flags_are_answered_with_the_flag_meant() {
    let good = url("/ping");
    for (args, says) in [
        (
            &["-z", "5s", &good][..],
            "unexpected argument '-z': oha's and hey's -z (run this long) is -D here: write -D 5s",
        ),
        (
            &["-c", "2", "-R", "2000", &good],
            "wrk2's -R (requests per second) is --rate here: write --rate 2000",
        ),
        (
            &["-q", "1000", &good],
            "for oha's -q 1000 (requests per second) write --rate 1000",
        ),
        (
            &["-d", "10s", &good],
            "no file '10s': for a run of 10s (wrk's -d) write -D 10s",
        ),
        (
            &["-d", "{\"name\": \"x\"}", &good],
            "write --body '{\"name\": \"x\"}'",
        ),
        (&["-d", "a=1", &good], "write --body 'a=1'"),
        (
            &["127.0.0.1:8080/ping"],
            "has no scheme: write http://127.0.0.1:8080/ping",
        ),
        (
            &["--grpc", "/t.S/Do", "127.0.0.1:50051"],
            "(ghz's host:port): write http://127.0.0.1:50051 for h2c",
        ),
    ] {
        assert_usage_error(args, says);
    }
}

/// `--body TEXT` sends TEXT, `-d @FILE` (curl's) and `-d FILE` (h2load's) the file: the
/// built-in target's `/echo` returns what it got, which every response must contain.
#[test]
fn the_body_comes_inline_or_from_a_file_either_way() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("body.json");
    std::fs::write(&file, "{\"from\": \"file\"}").unwrap();
    let at_file = format!("@{}", file.display());
    let echo = url("/echo");
    for (source, text) in [
        (["--body", "{\"inline\": 1}"], "{\"inline\": 1}"),
        (["-d", &at_file], "{\"from\": \"file\"}"),
        (["-d", file.to_str().unwrap()], "{\"from\": \"file\"}"),
    ] {
        let mut args = vec!["--h1", "-n", "5", "--expect-body-contains", text, &echo];
        args.extend(source);
        let run = h2load_rs(&args);
        assert_eq!(run.output.code, 0, "{source:?}: {}", run.output.stderr);
        assert_eq!(run.int("requests/succeeded"), 5, "{source:?}");
        assert_eq!(run.cell()["settings"]["method"], "POST", "{source:?}");
        assert_eq!(
            run.int("settings/body_bytes"),
            text.len() as u64,
            "{source:?}"
        );
    }
    assert_usage_error(
        &["--body", "x", "-d", file.to_str().unwrap(), &echo],
        "cannot be used with",
    );
}

/// Without `-n` or `-D`, `--until-stable` measures until the answer is stable (the default
/// 10000 requests no longer end it), and the JSON, the text and the `-q` line say it was
/// reached. The truth is steady: the built-in target's `/delay/2` answers after 2 ms, so four
/// connections make about 2000 requests a second, bound by the server's sleep rather than the
/// CPU the other tests share; ±50% then settles at the fifth look. The run may take longer on
/// a loaded machine (up to the 10-minute cap, which the 300 s limit here would catch).
#[test]
fn until_stable_runs_until_stable_and_every_output_says_so() {
    let target = url("/delay/2");
    let limit = Duration::from_secs(300);
    let args = ["--h1", "-c", "4", "--until-stable", "50%", &target];
    let run = h2load_rs_within(&[], &args, limit);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let stable = &run.cell()["until_stable"];
    assert_eq!(stable["reached"], true, "{stable}");
    let after = stable["stopped_after_s"].as_f64().unwrap();
    assert!((4.0..300.0).contains(&after), "{after}");
    assert!(run.cell()["settings"]["requests"].is_null());
    assert!(
        run.output
            .stdout
            .contains("until stable (±50.0%): reached after"),
        "{}",
        run.output.stdout
    );
    let mut quiet_args = args.to_vec();
    quiet_args.push("-q");
    let quiet = h2load_rs_within(&[], &quiet_args, limit);
    assert_eq!(quiet.output.code, 0, "{}", quiet.output.stderr);
    assert_eq!(
        quiet.output.stdout.lines().count(),
        1,
        "{}",
        quiet.output.stdout
    );
    assert!(
        quiet
            .output
            .stdout
            .contains(", until stable (±50.0%): reached after "),
        "{}",
        quiet.output.stdout
    );
    // A cap that comes first: said as not reached, in the -q line too.
    let capped = h2load_rs(&[
        "--h1",
        "-q",
        "-n",
        "20",
        "--until-stable",
        "1%",
        &url("/ping"),
    ]);
    assert!(
        capped
            .output
            .stdout
            .contains("until stable (±1.0%): not reached"),
        "{}",
        capped.output.stdout
    );
    assert_eq!(capped.cell()["until_stable"]["reached"], false);
}

/// The headings of `--help`, in their order, with a flag each holds.
const HEADINGS: [(&str, &str); 11] = [
    ("Requests:", "--body <TEXT>"),
    ("Load shape:", "--requests <N>"),
    ("Rate:", "--rate <R[,R...]>"),
    ("Connections:", "--connect-timeout <DURATION>"),
    ("TLS:", "--insecure"),
    ("Protocol:", "--proto <PROTO[,PROTO...]>"),
    ("Output:", "--json <FILE>"),
    (
        "Built-in target (when no URL is given):",
        "--target-delay <DURATION>",
    ),
    ("Response checks:", "--expect-status <CODE[,CODE...]>"),
    ("gRPC:", "--grpc <METHOD>"),
    ("Event streams:", "--events <FORMAT>"),
];

/// `--help` groups the load test's options under headings, each flag under its own, and ends
/// with examples; the manual page has the same headings as sections, then EXAMPLES.
#[test]
fn help_and_manual_group_the_options_and_end_with_examples() {
    for flag in ["-h", "--help"] {
        let help = run_command(BIN, &[flag]);
        assert_eq!(help.code, 0, "{}", help.stderr);
        let at = |line: &str| {
            help.stdout
                .lines()
                .position(|candidate| candidate == line)
                .unwrap_or_else(|| panic!("{flag}: no line '{line}' in\n{}", help.stdout))
        };
        let starts: Vec<usize> = HEADINGS.iter().map(|(heading, _)| at(heading)).collect();
        assert!(
            starts.windows(2).all(|pair| pair[0] < pair[1]),
            "{starts:?}"
        );
        let examples = at("Examples:");
        assert!(starts.iter().all(|start| *start < examples));
        for (index, (heading, option)) in HEADINGS.iter().enumerate() {
            let end = starts.get(index + 1).copied().unwrap_or(examples);
            let holds = help.stdout.lines().enumerate().any(|(line_at, line)| {
                (starts[index]..end).contains(&line_at) && line.contains(option)
            });
            assert!(holds, "{flag}: {option} is not under {heading}");
        }
        let tail: Vec<&str> = help.stdout.lines().skip(examples + 1).collect();
        assert_eq!(tail.len(), 18, "{flag}: {tail:?}");
        assert!(tail.iter().step_by(2).all(|line| line.starts_with("  # ")));
        assert!(tail
            .iter()
            .skip(1)
            .step_by(2)
            .all(|line| line.starts_with("  h2load-rs ")));
    }
    let manual = run_command(BIN, &["man"]);
    assert_eq!(manual.code, 0, "{}", manual.stderr);
    let sections: Vec<&str> = manual
        .stdout
        .lines()
        .filter_map(|line| line.strip_prefix(".SH "))
        .collect();
    let mut expected = vec!["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS"];
    let upper: Vec<String> = HEADINGS
        .iter()
        .map(|(heading, _)| heading.trim_end_matches(':').to_uppercase())
        .collect();
    expected.extend(upper.iter().map(String::as_str));
    expected.extend(["SUBCOMMANDS", "EXAMPLES", "VERSION"]);
    let sections: Vec<String> = sections
        .iter()
        .map(|s| s.trim_matches('"').to_owned())
        .collect();
    assert_eq!(sections, expected);
    assert!(
        manual
            .stdout
            .contains("\\fBh2load\\-rs \\-n 10k \\-c 10\\fR"),
        "{}",
        manual.stdout
    );
}
