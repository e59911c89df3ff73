//! No loop of imports between the files of `src/`: the layers keep the top-level modules in one
//! order, and this keeps the files inside each module in one too, so each file can be read after
//! the files it uses. An arrow runs from a file to the file of each module it names a path into
//! (the longest module of the path that has a file). A file's use of an ancestor module's own
//! file (`super::Session` in `h2/recv.rs`) is no arrow: a child module is part of its parent and
//! sees its private items by design, while the parent's use of a child (`recv::HeaderBlock` in
//! `h2/mod.rs`) is one, so a parent and two children still can make a loop.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::scan::{self, Crate};

#[test]
fn files_import_each_other_in_no_loop() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scanned = scan::scan(root).unwrap_or_else(|problem| panic!("{problem}"));
    let loops = loops(&scanned);
    assert!(
        loops.is_empty(),
        "{} loops of imports between files:\n{}",
        loops.len(),
        loops.join("\n")
    );
}

/// file → file it uses → the first reference that makes the arrow, as `file:line: path`.
type Arrows = BTreeMap<String, BTreeMap<String, String>>;

fn arrows(scanned: &Crate) -> Arrows {
    let module_of: BTreeMap<&str, &str> = scanned
        .files
        .iter()
        .map(|(module, file)| (file.as_str(), module.as_str()))
        .collect();
    // (file, name) → the path that file names it by: a file that re-exports or imports `X`
    // names it once (`pub(crate) use summary::Summary;`), and a path to `crate::report::Summary`
    // leads on through it to the file that defines it.
    let mut named: BTreeMap<(&str, &str), &str> = BTreeMap::new();
    for reference in &scanned.references {
        if let Some(name) = reference.path.rsplit("::").next() {
            named
                .entry((reference.file.as_str(), name))
                .or_insert(reference.path.as_str());
        }
    }
    let file_of = |path: &str| -> Option<(String, String)> {
        let segments: Vec<&str> = path.split("::").skip(1).collect();
        (1..=segments.len()).rev().find_map(|length| {
            let module = segments[..length].join("::");
            scanned
                .files
                .get(&module)
                .map(|file| (module, file.clone()))
        })
    };
    let resolve = |path: &str| -> Option<(String, String)> {
        let (mut module, mut file) = file_of(path)?;
        let mut path = path.to_string();
        for _ in 0..8 {
            let rest = path.len() - path.rfind("::").unwrap_or(0);
            let name = &path[path.len() - rest + 2..];
            let is_item = path == format!("crate::{module}::{name}");
            match named.get(&(file.as_str(), name)) {
                Some(&next) if is_item && next != path => match file_of(next) {
                    Some((next_module, next_file)) if next_file != file => {
                        (module, file, path) = (next_module, next_file, next.to_string());
                    }
                    _ => break,
                },
                _ => break,
            }
        }
        Some((module, file))
    };
    let mut arrows = Arrows::new();
    for reference in &scanned.references {
        let Some(&from_module) = module_of.get(reference.file.as_str()) else {
            continue;
        };
        let Some((to_module, to_file)) = resolve(&reference.path) else {
            continue; // an item of the crate root: a macro of lib.rs
        };
        let ancestor =
            from_module == to_module || from_module.starts_with(&format!("{to_module}::"));
        if ancestor || to_file == reference.file {
            continue;
        }
        arrows
            .entry(reference.file.clone())
            .or_default()
            .entry(to_file)
            .or_insert_with(|| {
                format!("{}:{}: {}", reference.file, reference.line, reference.path)
            });
    }
    arrows
}

/// Each loop (a strongly connected set of two or more files): its files, and every arrow inside
/// it with the reference that makes it.
fn loops(scanned: &Crate) -> Vec<String> {
    let arrows = arrows(scanned);
    let reachable = |from: &str| {
        let mut seen = BTreeSet::from([from.to_string()]);
        let mut pending = vec![from.to_string()];
        while let Some(file) = pending.pop() {
            for next in arrows.get(&file).into_iter().flat_map(BTreeMap::keys) {
                if seen.insert(next.clone()) {
                    pending.push(next.clone());
                }
            }
        }
        seen
    };
    let reach: BTreeMap<&String, BTreeSet<String>> =
        arrows.keys().map(|file| (file, reachable(file))).collect();
    let mut placed = BTreeSet::new();
    let mut found = Vec::new();
    for (&file, reaches) in &reach {
        if placed.contains(file) {
            continue;
        }
        let component: BTreeSet<&String> = reaches
            .iter()
            .filter(|other| reach.get(other).is_some_and(|back| back.contains(file)))
            .collect();
        placed.extend(component.iter().map(|file| file.to_string()));
        if component.len() < 2 {
            continue;
        }
        let inside: Vec<&str> = component
            .iter()
            .flat_map(|&from| arrows[from].iter())
            .filter(|(to, _)| component.contains(to))
            .map(|(_, reference)| reference.as_str())
            .collect();
        let files: Vec<&str> = component.iter().map(|file| file.as_str()).collect();
        found.push(format!(
            "{}\n    {}",
            files.join(", "),
            inside.join("\n    ")
        ));
    }
    found
}

/// The check on small crates written for the purpose.
mod fixtures {
    use super::*;

    fn loops_of(files: &[(&str, &str)]) -> Vec<String> {
        let dir = tempfile::tempdir().expect("temp dir");
        for (path, text) in files {
            let full = dir.path().join("src").join(path);
            std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
            std::fs::write(&full, text).expect("write");
        }
        loops(&scan::scan(dir.path()).expect("scan"))
    }

    #[test]
    fn two_sibling_files_that_use_each_other_are_a_loop_named_with_both_arrows() {
        let found = loops_of(&[
            ("lib.rs", "mod a;\n"),
            ("a/mod.rs", "mod x;\nmod y;\n"),
            ("a/x.rs", "use super::y::Y;\npub(crate) struct X;\n"),
            (
                "a/y.rs",
                "\nfn f() { crate::a::x::X; }\npub(crate) struct Y;\n",
            ),
        ]);
        assert_eq!(
            found,
            ["src/a/x.rs, src/a/y.rs\n    \
              src/a/x.rs:1: crate::a::y::Y\n    \
              src/a/y.rs:2: crate::a::x::X"]
        );
    }

    #[test]
    fn a_child_using_its_parent_is_no_arrow_but_a_loop_through_the_parent_is_found() {
        // x uses its parent (no arrow); the parent uses x by a plain relative path.
        let parent_and_child = [
            ("lib.rs", "mod a;\n"),
            (
                "a/mod.rs",
                "mod x;\nfn f() { x::g(); }\npub(crate) struct P;\n",
            ),
            ("a/x.rs", "use super::P;\npub(crate) fn g() {}\n"),
        ];
        assert_eq!(loops_of(&parent_and_child), Vec::<String>::new());
        // The parent uses x, x uses its sibling y, y uses x: a loop of x and y only.
        let found = loops_of(&[
            ("lib.rs", "mod a;\n"),
            ("a/mod.rs", "mod x;\nmod y;\nuse x::X;\n"),
            ("a/x.rs", "use super::y::Y;\npub(crate) struct X;\n"),
            ("a/y.rs", "use super::x::X;\npub(crate) struct Y;\n"),
        ]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("src/a/x.rs, src/a/y.rs\n"),
            "{found:?}"
        );
    }

    #[test]
    fn a_path_through_a_re_export_leads_to_the_file_that_defines_the_item() {
        // y names `crate::a::X`, which a/mod.rs re-exports from x: the arrow is y → x.
        let found = loops_of(&[
            ("lib.rs", "mod a;\n"),
            ("a/mod.rs", "mod x;\nmod y;\npub(crate) use x::X;\n"),
            ("a/x.rs", "use super::y::Y;\npub(crate) struct X;\n"),
            ("a/y.rs", "use crate::a::X;\npub(crate) struct Y;\n"),
        ]);
        assert_eq!(
            found,
            ["src/a/x.rs, src/a/y.rs\n    \
              src/a/x.rs:1: crate::a::y::Y\n    \
              src/a/y.rs:1: crate::a::X"]
        );
    }

    #[test]
    fn a_loop_across_top_level_modules_and_three_files_is_one_loop() {
        let found = loops_of(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            ("a/mod.rs", "mod x;\n"),
            ("a/x.rs", "use crate::b::B;\n"),
            (
                "b/mod.rs",
                "mod z;\npub(crate) struct B;\nfn f() { z::h(); }\n",
            ),
            ("b/z.rs", "pub(crate) fn h() { crate::a::x::g(); }\n"),
        ]);
        assert_eq!(
            found,
            ["src/a/x.rs, src/b/mod.rs, src/b/z.rs\n    \
              src/a/x.rs:1: crate::b::B\n    \
              src/b/mod.rs:3: crate::b::z::h\n    \
              src/b/z.rs:1: crate::a::x::g"]
        );
    }
}
