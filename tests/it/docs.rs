//! The documentation against the program, so they cannot drift apart: the flags named in
//! docs/reference.md are exactly the ones clap defines, and the JSON example in docs/json.md has
//! exactly the keys of a real report.

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
            let line = line.trim_start();
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

#[test]
fn the_reference_names_every_flag_and_no_other() {
    let mut defined = BTreeSet::new();
    for command in [&[][..], &["serve"], &["merge"], &["diff"]] {
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
        .filter(|flag| !defined.contains(*flag) && *flag != "--help" && *flag != "--version")
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
    let (mut documented, mut found) = (BTreeSet::new(), BTreeSet::new());
    key_paths(&example, "", &mut documented);
    key_paths(&real, "", &mut found);
    assert_eq!(
        documented, found,
        "docs/json.md's --find-max example and a real report differ in their keys"
    );
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
