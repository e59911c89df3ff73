//! `--grpc-proto`: the `.proto` files and every file they import, read and compiled within
//! bounds. Every file, imports included, is read as a top-level input is (`input`: a regular
//! file or refused, never a FIFO wait or a device, at most [`MAX_PROTO_BYTES`]), before protox sees
//! it; the import graph is walked here without recursion, so an import chain deeper than
//! [`MAX_IMPORT_DEPTH`] is refused naming the chain instead of overflowing protox's recursive
//! walk; brackets nested deeper than [`MAX_NESTING`] (messages, option values) are refused before
//! the recursive parsers see them. Source locations are dropped after parsing: kept, they cost
//! about 200 times a file's size in memory and make prost-reflect's checking quadratic in the
//! number of errors (each error searches every location), while the one line printed names the
//! file and the first error alone.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};

use anyhow::Result;
use prost_reflect::DescriptorPool;
use protox::file::{File, FileResolver, GoogleFileResolver, IncludeFileResolver};

use crate::input;
use crate::units::format_bytes;
use crate::usage_bail;

/// The most the `.proto` files of a run may hold, each and all together (a schema, not data):
/// compiling holds about 140 times their size (2 MiB of messages peaked at 290 MB).
pub(crate) const MAX_PROTO_BYTES: u64 = 2 << 20;
/// Files read, the named ones and their imports.
pub(crate) const MAX_PROTO_FILES: usize = 1000;
/// The longest chain of imports (a imports b imports c ...).
pub(crate) const MAX_IMPORT_DEPTH: usize = 64;
/// The deepest nesting of brackets (`{`, `[`, `(`, `<`) in one file: nested messages and option
/// values are parsed and checked by recursion.
pub(crate) const MAX_NESTING: usize = 64;

/// Compiles the `.proto` files, each found in the import paths (default: the files' own
/// directories).
pub(crate) fn compile(files: &[PathBuf], import_paths: &[PathBuf]) -> Result<DescriptorPool> {
    let mut includes: Vec<PathBuf> = import_paths.to_vec();
    if includes.is_empty() {
        for file in files {
            let parent = file
                .parent()
                .filter(|parent| !parent.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            if !includes.iter().any(|known| known == parent) {
                includes.push(parent.to_path_buf());
            }
        }
    }
    let mut loaded = Loaded::new(includes);
    let mut names = Vec::with_capacity(files.len());
    for file in files {
        let Some(name) = loaded.name_of(file) else {
            usage_bail!(
                "--grpc-proto: '{}' is not under an import path (--grpc-import-path)",
                file.display()
            );
        };
        if !loaded.files.contains_key(&name) {
            let text = loaded.read(file, "--grpc-proto file")?;
            loaded.admit(&name, &text)?;
        }
        names.push(name);
    }
    loaded.compile(&names)
}

/// Compiles one file's text, named `name`, with no import path (only the well-known imports):
/// the checks and compilation [`compile`] runs, for the fuzz target.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn compile_text(name: &str, text: &str) -> Result<DescriptorPool> {
    if text.len() as u64 > MAX_PROTO_BYTES {
        usage_bail!("--grpc-proto: {name} is longer than the limit of {MAX_PROTO_BYTES} bytes");
    }
    let mut loaded = Loaded::new(Vec::new());
    loaded.admit(name, text)?;
    loaded.compile(&[name.to_owned()])
}

/// The files read so far, by their import name, and where others are looked for.
struct Loaded {
    includes: Vec<PathBuf>,
    files: HashMap<String, File>,
    bytes: u64,
}

impl Loaded {
    fn new(includes: Vec<PathBuf>) -> Loaded {
        Loaded {
            includes,
            files: HashMap::new(),
            bytes: 0,
        }
    }

    /// The import name of a file given on the command line, as protox names it: its path under
    /// the first import path holding it, else the path itself when it is relative and plain.
    fn name_of(&self, path: &Path) -> Option<String> {
        self.includes
            .iter()
            .find_map(|include| IncludeFileResolver::new(include.clone()).resolve_path(path))
            .or_else(|| plain_name(path))
    }

    /// The checked read of one file, counted against [`MAX_PROTO_FILES`] and
    /// [`MAX_PROTO_BYTES`].
    fn read(&mut self, path: &Path, what: &str) -> Result<String> {
        if self.files.len() >= MAX_PROTO_FILES {
            usage_bail!("--grpc-proto: more than {MAX_PROTO_FILES} files with their imports");
        }
        let text = input::read_text(path, what, MAX_PROTO_BYTES)?;
        self.bytes += text.len() as u64;
        if self.bytes > MAX_PROTO_BYTES {
            usage_bail!(
                "--grpc-proto: the files and their imports hold more than the limit of {} together (at '{}')",
                format_bytes(MAX_PROTO_BYTES as f64),
                path.display()
            );
        }
        Ok(text)
    }

    /// Parses `text` as the file `name` (after the nesting check), keeping no source locations.
    fn admit(&mut self, name: &str, text: &str) -> Result<()> {
        check_nesting(name, text)?;
        let parsed = File::from_source(name, text).or_else(protox_error)?;
        let mut descriptor = parsed.file_descriptor_proto().clone();
        descriptor.source_code_info = None;
        self.files.insert(
            name.to_owned(),
            File::from_file_descriptor_proto(descriptor),
        );
        Ok(())
    }

    /// Reads every file `names` import, depth first as protox walks them, without recursion.
    fn load_imports(&mut self, names: &[String]) -> Result<()> {
        let mut done: HashSet<String> = HashSet::new();
        for name in names {
            // The chain from `name` to the file being walked, and the next import of each.
            let mut chain: Vec<(String, usize)> = vec![(name.clone(), 0)];
            while let Some((current, next)) = chain.last_mut() {
                let import = self
                    .files
                    .get(current.as_str())
                    .and_then(|file| file.file_descriptor_proto().dependency.get(*next))
                    .cloned();
                *next += 1;
                let Some(import) = import else {
                    done.insert(current.clone());
                    chain.pop();
                    continue;
                };
                // A cycle is left to protox, which names it.
                if done.contains(&import) || chain.iter().any(|(on, _)| *on == import) {
                    continue;
                }
                if chain.len() >= MAX_IMPORT_DEPTH {
                    let mut names: Vec<&str> = chain.iter().map(|(on, _)| on.as_str()).collect();
                    names.push(&import);
                    usage_bail!(
                        "--grpc-proto: imports nested deeper than the limit of {MAX_IMPORT_DEPTH} files: {}",
                        shortened_chain(&names)
                    );
                }
                if !self.files.contains_key(&import) {
                    let Some(path) = self.find(&import) else {
                        // Not on disk: a well-known file, or missing (protox says so).
                        done.insert(import);
                        continue;
                    };
                    let text = self.read(&path, "--grpc-proto import")?;
                    self.admit(&import, &text)?;
                }
                chain.push((import, 0));
            }
        }
        Ok(())
    }

    /// Where the file imported as `name` is: in the first import path holding it.
    fn find(&self, name: &str) -> Option<PathBuf> {
        plain_name(Path::new(name))?;
        self.includes
            .iter()
            .map(|include| include.join(name))
            .find(|path| std::fs::symlink_metadata(path).is_ok())
    }

    fn compile(mut self, names: &[String]) -> Result<DescriptorPool> {
        self.load_imports(names)?;
        let includes = std::mem::take(&mut self.includes);
        let resolver = Resolver {
            includes: includes.into_iter().map(IncludeFileResolver::new).collect(),
            files: RefCell::new(self.files),
            google: GoogleFileResolver::new(),
        };
        let mut compiler = protox::Compiler::with_file_resolver(resolver);
        compiler
            .include_imports(true)
            .open_files(names)
            .or_else(protox_error)?;
        Ok(compiler.descriptor_pool())
    }
}

/// protox's error as a usage error of one line, naming the file (its first error alone: the
/// others are not printed).
fn protox_error<T>(error: protox::Error) -> Result<T> {
    let message = one_line(&error.to_string());
    match error.file() {
        Some(file) => usage_bail!("--grpc-proto: {file}: {message}"),
        None => usage_bail!("--grpc-proto: {message}"),
    }
}

/// protox's view of the files already read: it opens nothing itself, and takes each file once
/// (it keeps the files it compiled), so no copy of one is held.
struct Resolver {
    includes: Vec<IncludeFileResolver>,
    files: RefCell<HashMap<String, File>>,
    google: GoogleFileResolver,
}

impl FileResolver for Resolver {
    fn resolve_path(&self, path: &Path) -> Option<String> {
        self.includes
            .iter()
            .find_map(|include| include.resolve_path(path))
    }

    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        match self.files.borrow_mut().remove(name) {
            Some(file) => Ok(file),
            None => self.google.open_file(name),
        }
    }
}

/// A relative path of plain components, as an import name (`a/b.proto`).
fn plain_name(path: &Path) -> Option<String> {
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str()?),
            _ => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// `a -> b -> ... -> z`, at most the first and last few files of a long chain.
fn shortened_chain(names: &[&str]) -> String {
    const SHOWN: usize = 3;
    if names.len() <= 2 * SHOWN + 1 {
        return names.join(" -> ");
    }
    format!(
        "{} -> ... ({} more) -> {}",
        names[..SHOWN].join(" -> "),
        names.len() - 2 * SHOWN,
        names[names.len() - SHOWN..].join(" -> ")
    )
}

/// Refuses brackets nested deeper than [`MAX_NESTING`], naming the line where the limit is
/// passed. Comments and string literals are skipped as protobuf's lexer skips them.
fn check_nesting(name: &str, text: &str) -> Result<()> {
    let bytes = text.as_bytes();
    let (mut depth, mut line, mut at) = (0usize, 1usize, 0usize);
    while at < bytes.len() {
        match bytes[at] {
            b'\n' => line += 1,
            b'/' if bytes.get(at + 1) == Some(&b'/') => {
                while at + 1 < bytes.len() && bytes[at + 1] != b'\n' {
                    at += 1;
                }
            }
            b'/' if bytes.get(at + 1) == Some(&b'*') => {
                at += 2;
                while at < bytes.len() && !(bytes[at] == b'*' && bytes.get(at + 1) == Some(&b'/')) {
                    line += usize::from(bytes[at] == b'\n');
                    at += 1;
                }
                at += 1;
            }
            quote @ (b'"' | b'\'') => {
                at += 1;
                while at < bytes.len() && bytes[at] != quote && bytes[at] != b'\n' {
                    at += if bytes[at] == b'\\' { 2 } else { 1 };
                }
            }
            b'{' | b'[' | b'(' | b'<' => {
                depth += 1;
                if depth > MAX_NESTING {
                    usage_bail!(
                        "--grpc-proto: {name}:{line}: brackets nested deeper than the limit of {MAX_NESTING} (messages or option values)"
                    );
                }
            }
            b'}' | b']' | b')' | b'>' => depth = depth.saturating_sub(1),
            _ => {}
        }
        at += 1;
    }
    Ok(())
}

/// A message of several lines (protox's) as one.
pub(super) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_is_counted_outside_comments_and_strings() {
        let deep = format!("{}{}", "{".repeat(MAX_NESTING), "}".repeat(MAX_NESTING));
        assert!(check_nesting("a.proto", &deep).is_ok());
        let hidden = format!(
            "// {{{{\n/* {} */ \"{}\" '{{' {}",
            "{".repeat(99),
            "[".repeat(99),
            deep
        );
        assert!(check_nesting("a.proto", &hidden).is_ok());
        let too_deep = format!("\n\n{}", "<".repeat(MAX_NESTING + 1));
        assert_eq!(
            check_nesting("a.proto", &too_deep).unwrap_err().to_string(),
            format!("--grpc-proto: a.proto:3: brackets nested deeper than the limit of {MAX_NESTING} (messages or option values)")
        );
    }

    #[test]
    fn long_chains_are_shortened() {
        let names: Vec<String> = (0..10).map(|i| format!("f{i}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        assert_eq!(shortened_chain(&names[..3]), "f0 -> f1 -> f2");
        assert_eq!(
            shortened_chain(&names),
            "f0 -> f1 -> f2 -> ... (4 more) -> f7 -> f8 -> f9"
        );
    }

    #[test]
    fn a_text_compiles_with_well_known_imports() {
        let pool = compile_text(
            "t.proto",
            "syntax = \"proto3\"; import \"google/protobuf/empty.proto\"; package t;\n\
             service S { rpc Do(google.protobuf.Empty) returns (google.protobuf.Empty); }",
        )
        .unwrap();
        assert!(pool.get_service_by_name("t.S").is_some());
        let error = compile_text("t.proto", "syntax = \"proto3\"; message M { Nope f = 1; }")
            .unwrap_err()
            .to_string();
        assert_eq!(error, "--grpc-proto: t.proto: name 'Nope' is not defined");
    }
}
