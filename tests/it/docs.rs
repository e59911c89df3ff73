//! The documentation against the program, so they cannot drift apart: the flags named in
//! docs/reference.md are exactly the ones clap defines, the JSON example in docs/json.md has
//! exactly the keys of a real report, every file docs/internals.md names exists, and the README's
//! "How to read it" names every row a real run prints.

use std::collections::BTreeSet;

use crate::common::{h2load_rs, run_command};

/// Reads a file of the repository.
fn repository_file(path: &str) -> String {
    let full = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&full).unwrap_or_else(|error| panic!("cannot read {full}: {error}"))
}

/// The long flags `h2load-rs ARGS --help` defines (its option lines, not its prose).
fn defined_flags(args: &[&str]) -> BTreeSet<String> {
    let mut full = args.to_vec();
    full.push("--help");
    let help = run_command(env!("CARGO_BIN_EXE_h2load-rs"), &full);
    assert_eq!(help.code, 0, "{full:?}: {}", help.stderr);
    help.stdout
        .lines()
        .filter_map(|line| {
            // The flag's part, before its description (which may name flags: "-c, -n").
            let line = line.trim_start().split("  ").next().unwrap_or_default();
            let line = line.strip_prefix('-').and_then(|rest| {
                // "-n, --requests <N>" or "--rate <R>"
                rest.split_once(", -")
                    .map_or(Some(rest), |(_, long)| Some(long))
            })?;
            let name: String = line
                .strip_prefix('-')?
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            Some(format!("--{name}"))
        })
        .filter(|flag| flag != "--help" && flag != "--version")
        .collect()
}

/// Every `--flag` named in `text`.
fn named_flags(text: &str) -> BTreeSet<String> {
    text.match_indices("--")
        .filter(|(at, _)| {
            // "--flag", not the middle of "---" or of a word.
            text[..*at]
                .chars()
                .last()
                .is_none_or(|c| !c.is_ascii_alphanumeric() && c != '-')
        })
        .filter_map(|(at, _)| {
            let name: String = text[at + 2..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            (!name.is_empty() && name.starts_with(|c: char| c.is_ascii_lowercase()))
                .then(|| format!("--{name}"))
        })
        .collect()
}

/// Flags the reference names that are not h2load-rs's: clap's own, and kubectl's where it shows
/// how to wait for a Job's pods and collect their reports (`--for`, `--tail`), ghz's where gRPC
/// flags are compared with it (`--binary-file`).
const OTHER_TOOLS: [&str; 5] = ["--help", "--version", "--tail", "--for", "--binary-file"];

#[test]
fn the_reference_names_every_flag_and_no_other() {
    let mut defined = BTreeSet::new();
    for command in [&[][..], &["serve"], &["merge"], &["diff"], &["k8s-job"]] {
        defined.extend(defined_flags(command));
    }
    assert!(
        defined.len() > 60,
        "the --help parser found only {defined:?}"
    );
    let reference = repository_file("docs/reference.md");
    let named = named_flags(&reference);
    let missing: Vec<_> = defined.difference(&named).collect();
    assert!(
        missing.is_empty(),
        "docs/reference.md does not describe {missing:?}"
    );
    let unknown: Vec<_> = named
        .iter()
        .filter(|flag| !defined.contains(*flag) && !OTHER_TOOLS.contains(&flag.as_str()))
        .collect();
    assert!(
        unknown.is_empty(),
        "docs/reference.md names flags that do not exist: {unknown:?}"
    );
}

/// Every key path of a JSON value: objects by key, array elements as `[]`.
pub(crate) fn key_paths(value: &serde_json::Value, prefix: &str, paths: &mut BTreeSet<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, child) in map {
                let path = format!("{prefix}/{key}");
                paths.insert(path.clone());
                key_paths(child, &path, paths);
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                key_paths(item, &format!("{prefix}/[]"), paths);
            }
        }
        _ => {}
    }
}

/// The first ```json block of docs/json.md after `heading` (the start of the file: "").
pub(crate) fn json_example(heading: &str) -> serde_json::Value {
    let doc = repository_file("docs/json.md");
    let section = doc
        .split_once(heading)
        .unwrap_or_else(|| panic!("docs/json.md has '{heading}'"))
        .1;
    let example = section
        .split_once("```json\n")
        .and_then(|(_, rest)| rest.split_once("\n```"))
        .map(|(json, _)| json)
        .expect("docs/json.md has a ```json block");
    serde_json::from_str(example).expect("the example in docs/json.md parses")
}

#[test]
fn the_json_example_is_a_real_report() {
    let example = json_example("");
    // The command docs/json.md says produced it.
    let run = h2load_rs(&["-c", "2", "-m", "2", "-n", "20000", "-q"]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let (mut documented, mut real) = (BTreeSet::new(), BTreeSet::new());
    key_paths(&example, "", &mut documented);
    key_paths(&run.json, "", &mut real);
    assert_eq!(
        documented, real,
        "docs/json.md's example and a real report differ in their keys"
    );
    assert_eq!(example["schema_version"], run.json["schema_version"]);
    assert_eq!(run.int("requests/succeeded"), 20000);
}

#[test]
fn the_find_max_example_is_a_real_report() {
    let example = json_example("## With `--find-max` and `--fail-if`");
    // The command docs/json.md says produced it.
    let run = h2load_rs(&[
        "--h1",
        "-c",
        "2",
        "--find-max",
        "--step-duration",
        "300ms",
        "--slo",
        "p99<10ms",
        "--fail-if",
        "errors>1%",
        "-q",
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let cell = run.cell();
    let real = serde_json::json!({
        "thresholds": cell["thresholds"],
        "capacity": cell["capacity"],
    });
    assert_documented(&example, &real, "--find-max");
}

#[test]
fn the_rounds_example_is_a_real_report() {
    let example = json_example("## With `--rounds`");
    // The command docs/json.md says produced it.
    let run = h2load_rs(&[
        "--proto", "h1,h2c", "-c", "2", "-n", "2000", "--rounds", "3", "-q",
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let real = serde_json::json!({
        "rounds": run.json["rounds"],
        "cells": [{ "cell": run.json["cells"][1]["cell"] }],
        "comparison": [run.json["comparison"][1]],
    });
    assert_documented(&example, &real, "--rounds");
}

/// Every key of `real` is in `example`, and every key of `example` that `real` lacks lies under a
/// part `real` has empty or null this time (a search on a busy machine may pass no step: no
/// load points, no intervals).
fn assert_documented(example: &serde_json::Value, real: &serde_json::Value, what: &str) {
    let (mut documented, mut found) = (BTreeSet::new(), BTreeSet::new());
    key_paths(example, "", &mut documented);
    key_paths(real, "", &mut found);
    let undocumented: Vec<&String> = found.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "docs/json.md's {what} example lacks keys of a real report: {undocumented:?}"
    );
    for path in documented.difference(&found) {
        let segments: Vec<&str> = path.split('/').skip(1).collect();
        let emptied = (1..segments.len()).any(|length| empty_at(real, &segments[..length]));
        assert!(
            emptied,
            "docs/json.md's {what} example has {path}, which a real report lacks"
        );
    }
}

/// Whether what `segments` (`[]`: every element) lead to in `value` is empty or null throughout.
fn empty_at(value: &serde_json::Value, segments: &[&str]) -> bool {
    let Some((first, rest)) = segments.split_first() else {
        return match value {
            serde_json::Value::Null => true,
            serde_json::Value::Array(items) => items.is_empty(),
            serde_json::Value::Object(fields) => fields.is_empty(),
            _ => false,
        };
    };
    match (*first, value) {
        ("[]", serde_json::Value::Array(items)) => items.iter().all(|item| empty_at(item, rest)),
        (key, serde_json::Value::Object(fields)) => {
            fields.get(key).is_some_and(|field| empty_at(field, rest))
        }
        _ => false,
    }
}

#[test]
fn the_events_example_is_a_real_report() {
    let example = json_example("## With event streams");
    // The command docs/json.md says produced it, on the test binary's target.
    let run = h2load_rs(&[
        "-c",
        "2",
        "-n",
        "16",
        "-q",
        &crate::common::url("/sse/10/1/8"),
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let real = serde_json::json!({ "events": run.cell()["events"] });
    let (mut documented, mut found) = (BTreeSet::new(), BTreeSet::new());
    key_paths(&example, "", &mut documented);
    key_paths(&real, "", &mut found);
    assert_eq!(
        documented, found,
        "docs/json.md's event-stream example and a real report differ in their keys"
    );
    for count in ["streams", "events", "data_bytes"] {
        assert_eq!(
            example["events"][count], real["events"][count],
            "events.{count}: the counts are exact"
        );
    }
}

#[test]
fn the_several_urls_example_is_a_real_report() {
    let example = json_example("## With several URLs (`-i`, `--urls-random`)");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("urls.txt");
    let lines = format!("{}\n/bytes/100000\n", crate::common::url("/bytes/10"));
    std::fs::write(&file, lines).unwrap();
    let run = h2load_rs(&[
        "-i",
        file.to_str().unwrap(),
        "--urls-random",
        "--seed",
        "7",
        "-H",
        "x-request-id: {uuid}",
        "-c",
        "2",
        "-n",
        "1000",
        "-q",
    ]);
    assert_eq!(run.output.code, 0, "{}", run.output.stderr);
    let cell = run.cell();
    let settings = &cell["settings"];
    let real = serde_json::json!({
        "settings": {
            "input_file": settings["input_file"],
            "urls_random": settings["urls_random"],
            "seed": settings["seed"],
        },
        "urls": cell["urls"],
    });
    let (mut documented, mut found) = (BTreeSet::new(), BTreeSet::new());
    key_paths(&example, "", &mut documented);
    key_paths(&real, "", &mut found);
    assert_eq!(
        documented, found,
        "docs/json.md's several-URLs example and a real report differ in their keys"
    );
    assert!(
        settings.as_object().unwrap().keys().all(|key| {
            example["settings"].get(key).is_some()
                || json_example("")["cells"][0]["settings"].get(key).is_some()
        }),
        "every settings key is documented in one of the examples"
    );
}

/// GitHub's anchor for a heading: lower case, punctuation other than `-` and `_` dropped, spaces
/// made hyphens.
fn anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings (a repeated heading's gets `-1`, `-2`, ...).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        }
        let Some(heading) = line.strip_prefix('#').filter(|_| !fenced) else {
            continue;
        };
        let base = anchor(heading.trim_start_matches('#').trim());
        let mut name = base.clone();
        for repeat in 1.. {
            if found.insert(name.clone()) {
                break;
            }
            name = format!("{base}-{repeat}");
        }
    }
    found
}

/// Every link to a heading (`[…](guide.md#scenario-files)`, `[…](#flags)`) between the README and
/// docs/ leads to one: the reference linked to a guide section that had no heading.
#[test]
fn every_link_to_a_heading_has_one() {
    let files = [
        "README.md",
        "docs/guide.md",
        "docs/reference.md",
        "docs/json.md",
        "docs/internals.md",
    ];
    let mut broken = Vec::new();
    for file in files {
        let text = repository_file(file);
        for (at, _) in text.match_indices("](") {
            let link = &text[at + 2..];
            let link = &link[..link.find(')').unwrap_or(link.len())];
            let Some((target, wanted)) = link.split_once('#') else {
                continue;
            };
            if target.contains("://") {
                continue;
            }
            let target_file = match target {
                "" => file.to_owned(),
                name if file.starts_with("docs/") => format!("docs/{name}"),
                name => name.to_owned(),
            };
            let target_file = target_file.replace("docs/../", "");
            if !anchors(&repository_file(&target_file)).contains(wanted) {
                broken.push(format!("{file}: {link}"));
            }
        }
    }
    assert!(broken.is_empty(), "links to no heading: {broken:#?}");
}

/// README's count of the tests `tests/run.sh` runs again on io_uring is the count of the test
/// filters its `uring_suites` names (it said 177 where they held 183).
#[test]
fn the_readme_counts_the_io_uring_tests() {
    let script = repository_file("tests/run.sh");
    let suites = &script[script
        .find("H2LOAD_RS_IO=uring cargo test")
        .expect("uring_suites")..];
    let suites = &suites[..suites.find("\n}").expect("the function's end")];
    let filters: Vec<&str> = suites
        .split_whitespace()
        .filter(|word| word.ends_with("::"))
        .collect();
    assert!(filters.len() > 5, "{suites}");
    // This binary is the `it` the script runs: list what the filters select.
    let listed = std::process::Command::new(std::env::current_exe().unwrap())
        .args(&filters)
        .arg("--list")
        .output()
        .unwrap();
    let count = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter(|line| line.ends_with(": test"))
        .count();
    let readme = repository_file("README.md");
    let said = format!("(`H2LOAD_RS_IO=uring`: {count} tests,");
    assert!(
        readme.contains(&said),
        "README.md should say {said:?}: tests/run.sh runs {count} tests on io_uring"
    );
}

/// The lines of Markdown `text` outside its fenced blocks.
fn prose(text: &str) -> String {
    let mut fenced = false;
    text.lines()
        .filter(|line| {
            if line.starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The files and folders of the repository that `text` names in backquotes (`src/session/h2/`,
/// `tests/it/docs.rs:12`: the line left out), outside fenced blocks.
fn repository_paths(text: &str) -> BTreeSet<String> {
    const FOLDERS: [&str; 8] = [
        "src/", "tests/", "docs/", "benches/", "fuzz/", "configs/", "certs/", ".ci/",
    ];
    prose(text)
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|quoted| FOLDERS.iter().any(|folder| quoted.starts_with(folder)))
        .filter(|quoted| !quoted.contains(|c: char| c.is_whitespace() || "*{}<>".contains(c)))
        .map(|quoted| quoted.split(':').next().unwrap_or(quoted).to_owned())
        .collect()
}

/// docs/internals.md's map (the path of one request, where a change goes) and the rest of it name
/// only files that exist, so a move that forgets the map fails here.
#[test]
fn internals_names_only_files_that_exist() {
    let named = repository_paths(&repository_file("docs/internals.md"));
    assert!(named.len() > 60, "the path finder found only {named:?}");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let missing: Vec<&String> = named
        .iter()
        .filter(|path| !root.join(path).exists())
        .collect();
    assert!(
        missing.is_empty(),
        "docs/internals.md names files that do not exist: {missing:?}"
    );
    // The finder itself: a line number is left out, a fenced block and prose are not paths.
    assert_eq!(
        repository_paths("`src/a.rs:3` and `b.rs`\n```\n`src/fenced.rs`\n```\n`src/c/` `src/*.rs`"),
        BTreeSet::from(["src/a.rs".to_owned(), "src/c/".to_owned()])
    );
}

/// Text that was once true and no longer is.
#[test]
fn stale_statements_are_gone() {
    let guide = repository_file("docs/guide.md");
    assert!(
        !guide.contains("TLS handshakes are always full"),
        "--tls-resume resumes them"
    );
    // The protocol trace's example: the command's port and the trace's are the same.
    let trace = &guide[guide.find("## Protocol trace").unwrap()..];
    let trace = &trace[..trace[3..].find("\n## ").unwrap()];
    let ports: BTreeSet<&str> = trace
        .match_indices("localhost:")
        .map(|(at, _)| {
            let rest = &trace[at + "localhost:".len()..];
            &rest[..rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len())]
        })
        .collect();
    assert_eq!(ports.len(), 1, "the trace example's ports: {ports:?}");
    // HTTP/3 is one of the protocols everywhere the tool says what it is.
    let help = run_command(env!("CARGO_BIN_EXE_h2load-rs"), &["--help"]);
    let manual = run_command(env!("CARGO_BIN_EXE_h2load-rs"), &["man"]);
    let crate_doc = repository_file("src/lib.rs");
    for (what, text) in [
        ("--help", help.stdout.lines().next().unwrap_or("")),
        ("man", &manual.stdout),
        ("src/lib.rs", crate_doc.lines().next().unwrap_or("")),
    ] {
        assert!(text.contains("HTTP/3"), "{what}: {text}");
    }
}

/// The README's "How to read it" section, its prose only (fenced blocks left out: an excerpt
/// shows a row, it does not explain it).
fn how_to_read_it() -> String {
    let readme = repository_file("README.md");
    let section = readme
        .split_once("\n## How to read it\n")
        .expect("README.md has a '## How to read it' section")
        .1;
    prose(section.split("\n## ").next().unwrap_or(section))
}

/// A word that is a figure, not a name: `2000`, `934.28ms,`, `#0`, `1/4`, `1,804`; not an
/// ordinal (`time to 1st byte`).
fn is_figure(word: &str) -> bool {
    let ordinal = ["st", "nd", "rd", "th"].iter().any(|suffix| {
        word.strip_suffix(suffix)
            .is_some_and(|digits| !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()))
    });
    word.starts_with(|c: char| c.is_ascii_digit() || c == '#') && !ordinal
}

/// The labels of a text report's rows: the words before a line's colon (`kernel to client`,
/// `95% interval`, `capacity search`) or, without one, its first words (`finished in`,
/// `latency at`), up to the first figure or bracket; the column titles of its tables (`vs
/// first`, `gen-bound`, `r1 req/s`). Left out: a table's rows (figures under its header), the plain
/// words' bullets, a cell's own label (`h2c c=4 m=1: 2000 done`, under `-q`), and wrapped prose
/// (more than four words and no colon).
fn row_labels(report: &str) -> BTreeSet<String> {
    let mut labels = BTreeSet::new();
    // Under a table's header, until a line that does not start with a figure: its rows.
    let mut in_table = false;
    for line in report.lines() {
        let trimmed = line.trim();
        let first_is_figure = trimmed.split_whitespace().next().is_some_and(is_figure);
        in_table &= first_is_figure;
        if in_table {
            continue;
        }
        let table_header = ["#  protocol", "step  phase", "min  ", "p50  "]
            .iter()
            .any(|start| trimmed.starts_with(start));
        if table_header {
            in_table = true;
            labels.extend(
                trimmed
                    .split("  ")
                    .map(str::trim)
                    .filter(|title| !title.is_empty() && *title != "#")
                    .map(str::to_owned),
            );
            continue;
        }
        if trimmed.is_empty() || trimmed.starts_with("- ") {
            continue;
        }
        let (head, colon) = match trimmed.split_once(':') {
            Some((head, _)) => (head, true),
            None => (trimmed, false),
        };
        let head = head.split('(').next().unwrap_or(head);
        let words: Vec<&str> = head
            .split_whitespace()
            .map(|word| word.trim_end_matches([',', ';', '.']))
            .filter(|word| !word.is_empty())
            .collect();
        // A cell's label: `h2c c=1 m=1`.
        let cell_label = words.iter().any(|word| {
            word.split_once('=').is_some_and(|(name, value)| {
                !name.is_empty() && value.starts_with(|c: char| c.is_ascii_digit())
            })
        });
        if cell_label {
            continue;
        }
        // `100 never sent`: the figure first; `95% interval` is a name.
        let skip = words
            .iter()
            .take_while(|word| is_figure(word) && !word.ends_with('%'))
            .count();
        let label: Vec<&str> = words[skip..]
            .iter()
            .enumerate()
            .take_while(|(at, word)| *at == 0 || !is_figure(word))
            .map(|(_, word)| *word)
            .collect();
        if label.is_empty() || (!colon && label.len() > 4) {
            continue;
        }
        labels.insert(label.join(" "));
    }
    labels
}

/// Whether the prose names `label` as a term: in backquotes or bold (`` `kernel to client` ``,
/// `**finished in**`, `` `capacity: X req/s` ``), not merely somewhere in a sentence.
fn names_term(prose: &str, label: &str) -> bool {
    ["`", "**"].iter().any(|mark| {
        let term = format!("{mark}{label}");
        prose.match_indices(&term).any(|(at, _)| {
            // Not the start of a longer name: `p99` is not named by `p99.9`.
            let mut rest = prose[at + term.len()..].chars();
            match (rest.next(), rest.next()) {
                (Some(next), _) if next.is_alphanumeric() => false,
                (Some('.'), Some(digit)) => !digit.is_ascii_digit(),
                _ => true,
            }
        })
    })
}

/// Issue 36: the README's "How to read it" explains every row a run prints. The rows are read
/// from real runs of each kind a user meets (one run, a sweep, rounds, a rate, a capacity search,
/// a failed run, `-q`, and the progress lines off a terminal), so a row added to the report
/// without a word in the README fails here.
#[test]
fn the_readme_explains_every_row_a_run_prints() {
    let refused = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        listener.local_addr().expect("its address")
    };
    let refused = format!("http://{refused}/");
    let events = crate::common::url("/sse/4/1/8");
    let runs: [&[&str]; 9] = [
        &["-n", "20", &events],
        // epoll, whatever H2LOAD_RS_IO says: io_uring gives no receive stamps (no `kernel to client`).
        &["-n", "600", "--io", "epoll"],
        &["--proto", "h1,h2c", "-c", "1,2", "-n", "600"],
        &["--proto", "h1,h2c", "-c", "2", "-n", "600", "--rounds", "3"],
        &["--rate", "300", "-D", "1s", "--progress-interval", "300ms"],
        &[
            "--find-max",
            "--slo",
            "p99<20ms",
            "--target-delay",
            "2ms",
            "-c",
            "8",
            "--step-duration",
            "300ms",
        ],
        &["-n", "100", &refused],
        &["--proto", "h1,h2c", "-c", "2", "-n", "600", "-q"],
        &[
            "--proto", "h1,h2c", "-c", "2", "-n", "600", "--rounds", "2", "-q",
        ],
    ];
    let mut labels = BTreeSet::new();
    for args in runs {
        let run = crate::common::run_command_within(
            env!("CARGO_BIN_EXE_h2load-rs"),
            args,
            std::time::Duration::from_secs(120),
        );
        assert!(run.code <= 1, "{args:?}: {}", run.stderr);
        labels.extend(row_labels(&run.stdout));
        let progress: String = run
            .stderr
            .lines()
            .filter(|line| line.starts_with("progress: "))
            .collect::<Vec<_>>()
            .join("\n");
        labels.extend(row_labels(&progress));
    }
    // The reader saw these runs' rows: the extraction found the rows that matter.
    for expected in [
        "finished in",
        "kernel to client",
        "time to 1st byte",
        "95% interval",
        "95% intervals",
        "n/e",
        "failed",
        "vs first",
        "gen-bound",
        "ratio by round",
        "capacity search",
        "capacity",
        "result",
        "response time",
        "rate",
        "progress",
        "in plain words",
        "events",
        "1st event",
        "event gap",
    ] {
        assert!(
            labels.contains(expected),
            "{expected:?} not among {labels:?}"
        );
    }
    let prose = how_to_read_it();
    let unexplained: Vec<&String> = labels
        .iter()
        .filter(|label| !names_term(&prose, label))
        .collect();
    assert!(
        unexplained.is_empty(),
        "README.md's 'How to read it' does not name these rows of the report: {unexplained:?}"
    );
}

/// The label finder on lines of each shape.
#[test]
fn row_labels_skip_figures_cells_and_prose() {
    let report = "\
=== round 1/3, cell 2/2 (run 2 of 6): h2c c=4 m=1
spawning thread #0: 1 total client(s).
finished in 934.28ms, 2140.68 req/s, 480.38 kbit/s (60.05 kB/s)
          100 never sent (no connection could carry them), 0 in flight when the run stopped
  95% interval  :   320–332   344–404
time to 1st byte:      49us      50us
latency at 50% (902 req/s) p50 2.78ms p99 4.31ms
h2c c=1 m=1: 2000 done, 2000 succeeded
  - at c=1 m=1 (h2c/h1 = 0.64), h2c served 36% fewer
  connection, as a user arriving on schedule would wait (coordinated omission corrected); service
rounds (spread: highest minus lowest, over the mean):
#  protocol  c  m  r1 req/s  spread  ratio by round
1        h1  4  1    4779.3   25.2%
  step  phase       offered
     1  ceiling     unpaced
";
    let expected = [
        "=== round",
        "spawning thread",
        "finished in",
        "never sent",
        "95% interval",
        "time to 1st byte",
        "latency at",
        "rounds",
        "protocol",
        "c",
        "m",
        "r1 req/s",
        "spread",
        "ratio by round",
        "step",
        "phase",
        "offered",
    ];
    assert_eq!(
        row_labels(report),
        expected.iter().map(|label| label.to_string()).collect()
    );
    assert!(names_term("the `kernel to client` row", "kernel to client"));
    assert!(names_term("**finished in**: the period", "finished in"));
    assert!(!names_term("the `p99.9` column", "p99"));
    assert!(!names_term(
        "time for request, unmarked",
        "time for request"
    ));
}
