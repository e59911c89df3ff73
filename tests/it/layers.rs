//! The layer order declared once, in docs/internals.md (the fenced `layers` block), against every
//! path the production code of src/ names into another top-level module (see [`scan`]): a module
//! may use only the modules of the layers below its own, so no two top-level modules can depend
//! on each other, and a cycle between them fails too. There are no exceptions: a path that breaks
//! the order fails the test, with its file and line.

mod files;
mod scan;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use scan::Reference;

#[test]
fn imports_follow_the_declared_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let problems = check(root, &internals(root));
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

fn internals(root: &Path) -> String {
    let path = root.join("docs/internals.md");
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// Every problem of the crate at `root` against the order declared in `doc`, each with its file
/// and line.
fn check(root: &Path, doc: &str) -> Vec<String> {
    let layers = match declared_layers(doc) {
        Ok(layers) => layers,
        Err(problem) => return vec![problem],
    };
    let scanned = match scan::scan(root) {
        Ok(scanned) => scanned,
        Err(problem) => return vec![problem],
    };
    let mut problems = Vec::new();
    let declared: BTreeSet<&String> = layers.keys().collect();
    let actual: BTreeSet<&String> = scanned.top_modules.iter().collect();
    for missing in actual.difference(&declared) {
        problems.push(format!(
            "src/lib.rs: module `{missing}` is missing from the layers of docs/internals.md"
        ));
    }
    for extra in declared.difference(&actual) {
        problems.push(format!(
            "docs/internals.md: the layers name `{extra}`, which src/lib.rs does not declare"
        ));
    }
    // Module → module it uses → the first reference that makes the edge.
    let mut graph: BTreeMap<&str, BTreeMap<&str, &Reference>> = BTreeMap::new();
    for reference in &scanned.references {
        let (from, to) = (reference.from.as_str(), reference.to.as_str());
        let (Some(from_layer), Some(to_layer)) = (layers.get(from), layers.get(to)) else {
            continue; // a module missing from the layers, reported above
        };
        if from == to {
            continue;
        }
        if to_layer >= from_layer {
            let place = if to_layer == from_layer {
                "its own layer"
            } else {
                "a higher layer"
            };
            problems.push(format!(
                "{}:{}: {} (`{from}` uses `{to}`, {place})",
                reference.file, reference.line, reference.path
            ));
        }
        graph
            .entry(from)
            .or_default()
            .entry(to)
            .or_insert(reference);
    }
    for cycle in cycles(&graph, &layers) {
        problems.push(format!("cycle between top-level modules: {cycle}"));
    }
    problems
}

/// The fenced block of `doc` whose info string is `layers`: one layer a line, the highest first,
/// its modules separated by spaces, then `#` and what they hold. Returns each module's layer
/// (0 = the lowest).
fn declared_layers(doc: &str) -> Result<BTreeMap<String, usize>, String> {
    let block = doc
        .split_once("```layers\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .map(|(block, _)| block)
        .ok_or("docs/internals.md: no ```layers block")?;
    let lines: Vec<Vec<&str>> = block
        .lines()
        .map(|line| {
            line.split('#')
                .next()
                .unwrap_or_default()
                .split_whitespace()
                .collect()
        })
        .filter(|modules: &Vec<&str>| !modules.is_empty())
        .collect();
    let mut layers = BTreeMap::new();
    for (index, modules) in lines.iter().enumerate() {
        for name in modules {
            if layers
                .insert(name.to_string(), lines.len() - 1 - index)
                .is_some()
            {
                return Err(format!(
                    "docs/internals.md: `{name}` is in the layers twice"
                ));
            }
        }
    }
    Ok(layers)
}

/// Each cycle of `graph` (a strongly connected component of two or more modules): its modules,
/// and the references that go against `layers` inside it (removing those breaks the cycle).
fn cycles<'a>(
    graph: &BTreeMap<&'a str, BTreeMap<&'a str, &Reference>>,
    layers: &BTreeMap<String, usize>,
) -> Vec<String> {
    let reachable = |from: &'a str| {
        let mut seen = BTreeSet::from([from]);
        let mut pending = vec![from];
        while let Some(module) = pending.pop() {
            for &next in graph.get(module).into_iter().flat_map(BTreeMap::keys) {
                if seen.insert(next) {
                    pending.push(next);
                }
            }
        }
        seen
    };
    let reach: BTreeMap<&str, BTreeSet<&str>> = graph
        .keys()
        .map(|&module| (module, reachable(module)))
        .collect();
    let mut placed = BTreeSet::new();
    let mut found = Vec::new();
    for (&module, reaches) in &reach {
        if !placed.insert(module) {
            continue;
        }
        let component: BTreeSet<&str> = reaches
            .iter()
            .copied()
            .filter(|other| reach.get(other).is_some_and(|back| back.contains(module)))
            .collect();
        placed.extend(component.iter().copied());
        if component.len() < 2 {
            continue;
        }
        let against: Vec<String> = component
            .iter()
            .flat_map(|&from| {
                graph[from]
                    .iter()
                    .map(move |(&to, &reference)| (from, to, reference))
            })
            .filter(|(from, to, _)| component.contains(to) && layers[*to] >= layers[*from])
            .map(|(_, _, r)| format!("{}:{}: {}", r.file, r.line, r.path))
            .collect();
        let modules: Vec<&str> = component.into_iter().collect();
        found.push(format!(
            "{} (against the order: {})",
            modules.join(", "),
            against.join("; ")
        ));
    }
    found
}

/// The scan and the check on small crates written for the purpose: each form of path is found,
/// and what is not production code is not.
mod fixtures {
    use super::*;

    const DOC: &str = "```layers\nhigh   # uses low\nlow\n```\n";

    /// A crate with `high` and `low` (each a folder), `files` added under `src/`.
    fn crate_with(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        let base = [
            ("lib.rs", "mod high;\nmod low;\n"),
            ("high/mod.rs", "use crate::low::Low;\n"),
            ("low/mod.rs", ""),
        ];
        for (path, text) in base.iter().chain(files) {
            let full = dir.path().join("src").join(path);
            std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
            std::fs::write(&full, text).expect("write");
        }
        dir
    }

    #[test]
    fn a_downward_path_passes() {
        assert_eq!(check(crate_with(&[]).path(), DOC), Vec::<String>::new());
    }

    #[test]
    fn every_form_of_upward_path_is_found_with_its_line() {
        let low = "//! crate::high::InADocComment\n\
                   use crate::{high::{A, b::C as D}, low::Own};\n\
                   use super::high::E;\n\
                   mod inner;\n\
                   fn f() { let _ = \"crate::high::InAString\"; let _ = r#\"crate::high::Raw\"#;\n\
                   let _ = '\"'; crate::high::g::<u8>(); matches!(x, crate::high::H); /* crate::high::I */ }\n";
        let dir = crate_with(&[
            ("low/mod.rs", low),
            ("low/inner.rs", "pub(crate) use super::super::high::J;\n"),
        ]);
        let found = check(dir.path(), DOC);
        let expected = [
            "src/low/inner.rs:1: crate::high::J (`low` uses `high`, a higher layer)",
            "src/low/mod.rs:2: crate::high::A (`low` uses `high`, a higher layer)",
            "src/low/mod.rs:2: crate::high::b::C (`low` uses `high`, a higher layer)",
            "src/low/mod.rs:3: crate::high::E (`low` uses `high`, a higher layer)",
            "src/low/mod.rs:6: crate::high::H (`low` uses `high`, a higher layer)",
            "src/low/mod.rs:6: crate::high::g (`low` uses `high`, a higher layer)",
        ];
        assert_eq!(found[..found.len() - 1], expected);
        assert!(
            found[found.len() - 1].starts_with("cycle between top-level modules: high, low"),
            "{found:?}"
        );
    }

    #[test]
    fn a_cycle_fails_naming_its_modules_and_the_paths_against_the_order() {
        let dir = crate_with(&[
            ("lib.rs", "mod high;\nmod middle;\nmod low;\n"),
            ("high/mod.rs", "use crate::middle::M;\n"),
            ("middle/mod.rs", "use crate::low::L;\n"),
            ("low/mod.rs", "\nfn f() { crate::high::h(); }\n"),
        ]);
        assert_eq!(
            check(dir.path(), "```layers\nhigh\nmiddle\nlow\n```\n"),
            [
                "src/low/mod.rs:2: crate::high::h (`low` uses `high`, a higher layer)",
                "cycle between top-level modules: high, low, middle \
                 (against the order: src/low/mod.rs:2: crate::high::h)",
            ]
        );
    }

    #[test]
    fn test_code_is_left_out() {
        let low = "#[cfg(test)]\nmod tests;\n\
                   #[cfg(test)]\nmod inline { use crate::high::A; }\n\
                   #[cfg(test)]\n#[allow(unused)]\npub(crate) use crate::high::B;\n\
                   #[cfg(test)]\nconst C: S = S { a: crate::high::C };\n\
                   #[cfg(test)]\nfn f() { crate::high::D(); }\n\
                   fn g() { crate::high::E(); }\n";
        let dir = crate_with(&[
            ("low/mod.rs", low),
            ("low/tests.rs", "use crate::high::F;\n"),
        ]);
        let found = check(dir.path(), DOC);
        assert_eq!(
            found[0],
            "src/low/mod.rs:12: crate::high::E (`low` uses `high`, a higher layer)"
        );
        assert_eq!(found.len(), 2, "{found:?}"); // and the cycle
    }

    #[test]
    fn what_the_scan_cannot_follow_is_an_error() {
        let unplaced = "struct S {\n    #[cfg(test)]\n    a: u8,\n}\n";
        let moved = "\n#[path = \"elsewhere.rs\"]\nmod inner;\n";
        for low in [unplaced, moved] {
            let found = check(crate_with(&[("low/mod.rs", low)]).path(), DOC);
            assert_eq!(found.len(), 1, "{found:?}");
            assert!(
                found[0].starts_with("src/low/mod.rs:2: #[path], or #[cfg(test)]"),
                "{found:?}"
            );
        }
    }

    #[test]
    fn a_root_macro_counts_where_it_is_invoked_and_an_exported_one_where_it_is_defined() {
        let lib = "macro_rules! say { () => { $crate::high::say() } }\nmod high;\nmod low;\n";
        let low = "fn f() { say!(); crate::shout!(); }\n";
        let high = "use crate::low::Low;\n#[macro_export]\nmacro_rules! shout { () => {} }\n";
        let dir = crate_with(&[("lib.rs", lib), ("low/mod.rs", low), ("high/mod.rs", high)]);
        let found = check(dir.path(), DOC);
        assert_eq!(
            found[..2],
            [
                "src/low/mod.rs:1: crate::high::say (`low` uses `high`, a higher layer)",
                "src/low/mod.rs:1: crate::shout (`low` uses `high`, a higher layer)",
            ]
        );
    }

    #[test]
    fn same_layer_and_missing_modules_fail() {
        let dir = crate_with(&[]);
        assert_eq!(
            check(dir.path(), "```layers\nhigh low\n```\n"),
            ["src/high/mod.rs:1: crate::low::Low (`high` uses `low`, its own layer)"]
        );
        assert_eq!(
            check(dir.path(), "```layers\nhigh\nother\n```\n"),
            [
                "src/lib.rs: module `low` is missing from the layers of docs/internals.md",
                "docs/internals.md: the layers name `other`, which src/lib.rs does not declare",
            ]
        );
    }
}
