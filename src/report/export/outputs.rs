//! Where the results go. Every path is checked before the run starts (a file's directory exists
//! and takes a new file, a device node or FIFO can be written, at most one export takes standard
//! output), so a typo costs nothing. A regular file is written whole under a temporary name
//! beside it and renamed into place, so a run that fails or is interrupted never leaves a
//! truncated file where a complete one was; a node or standard output is written through, once
//! (see [`Destination`]); and one export failing does not keep the others from being written.
//! The one place that writes the exports: each [`Exporter`] only renders its bytes.

use std::fs::File;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::{Exporter, Rendered};
use crate::destination::{self, directory_of, Destination, Temporary};
use crate::report::Document;
use crate::usage_bail;

/// Where each export goes, when asked for (`app` fills it from the export flags).
#[derive(Debug)]
pub(crate) struct ExportPaths {
    /// `--json`: the whole document.
    pub(crate) json: Option<PathBuf>,
    /// `--csv`: the comparison table.
    pub(crate) csv: Option<PathBuf>,
    /// `--markdown`: the comparison and verdicts.
    pub(crate) markdown: Option<PathBuf>,
    /// `--csv-timeline`: every cell's intervals.
    pub(crate) csv_timeline: Option<PathBuf>,
    /// `--csv-urls`: the per-URL rows.
    pub(crate) csv_urls: Option<PathBuf>,
    /// `--hdr-log`: the interval log.
    pub(crate) hdr_log: Option<PathBuf>,
    /// `--hgrm`: a directory of percentile distributions.
    pub(crate) hgrm: Option<PathBuf>,
    /// `--html`: the page.
    pub(crate) html: Option<PathBuf>,
}

/// The exports a run was asked for, each checked writable.
pub(crate) struct Outputs {
    exports: Vec<Export>,
    /// Whether an export (or the request log) writes to standard output, so the text report
    /// must go elsewhere.
    takes_stdout: bool,
}

/// One export and where it goes.
struct Export {
    path: PathBuf,
    /// What it is, for its errors ("the JSON report", "the --hgrm directory").
    what: &'static str,
    exporter: &'static dyn Exporter,
    /// Written after every cell (a file replaced whole, or `--hgrm`'s directory of them), or once
    /// at the end (a node or standard output, which would receive every copy).
    replaced: bool,
}

impl Outputs {
    /// The exports of `args`, and the request log at `log_file`; a usage error names the first
    /// that could not be written, or the two that both take standard output (`-`).
    pub(crate) fn check(paths: &ExportPaths, log_file: Option<&Path>) -> Result<Outputs> {
        type Asked<'a> = (
            &'static str,
            &'a Option<PathBuf>,
            &'static dyn Exporter,
            &'static str,
        );
        let asked: [Asked<'_>; 8] = [
            ("--json", &paths.json, &super::json::Json, "the JSON report"),
            ("--csv", &paths.csv, &super::csv::Csv, "the CSV report"),
            (
                "--csv-timeline",
                &paths.csv_timeline,
                &super::timeline_csv::TimelineCsv,
                "the timeline CSV",
            ),
            (
                "--csv-urls",
                &paths.csv_urls,
                &super::urls_csv::UrlsCsv,
                "the per-URL CSV",
            ),
            (
                "--hdr-log",
                &paths.hdr_log,
                &super::hdr_log::HdrLog,
                "the interval log",
            ),
            (
                "--markdown",
                &paths.markdown,
                &super::markdown::Markdown,
                "the Markdown report",
            ),
            (
                "--hgrm",
                &paths.hgrm,
                &super::hgrm::Hgrm,
                "the --hgrm files",
            ),
            ("--html", &paths.html, &super::html::Html, "the HTML report"),
        ];
        let mut exports = Vec::new();
        let mut on_stdout = Vec::new();
        for (flag, path, exporter, what) in asked {
            let Some(path) = path else { continue };
            let replaced = if flag == "--hgrm" {
                check_directory(path, flag)?;
                true
            } else {
                check_file(path, flag)?.is_replaced()
            };
            if path == Path::new("-") {
                on_stdout.push(flag);
            }
            exports.push(Export {
                path: path.clone(),
                what,
                exporter,
                replaced,
            });
        }
        if let Some(path) = log_file {
            check_file(path, "--log-file")?;
            if path == Path::new("-") {
                on_stdout.push("--log-file");
            }
        }
        if let [first, second, ..] = on_stdout[..] {
            usage_bail!(
                "{first} and {second} both write to standard output ('-'); give one of them a file"
            );
        }
        Ok(Outputs {
            exports,
            takes_stdout: !on_stdout.is_empty(),
        })
    }

    /// Whether an export or the request log was given `-`: the text report then goes to
    /// standard error, leaving standard output to that export alone.
    pub(crate) fn takes_stdout(&self) -> bool {
        self.takes_stdout
    }

    /// Writes the exports that are files replaced whole (after each cell of a sweep); returns
    /// the failures, the others having been written.
    pub(crate) fn write_files(&self, document: &Document) -> Vec<anyhow::Error> {
        self.write_where(document, |export| export.replaced)
    }

    /// Writes the exports that go to a node or standard output, which take one document: at the
    /// end of a sweep, with every cell that ran. Nothing when no cell ran.
    pub(crate) fn write_streams(&self, document: &Document) -> Vec<anyhow::Error> {
        if document.cells.is_empty() {
            return Vec::new();
        }
        self.write_where(document, |export| !export.replaced)
    }

    /// Writes every export of `document` once.
    pub(crate) fn write_all(&self, document: &Document) -> Vec<anyhow::Error> {
        self.write_where(document, |_| true)
    }

    fn write_where(&self, document: &Document, wanted: fn(&Export) -> bool) -> Vec<anyhow::Error> {
        self.exports
            .iter()
            .filter(|export| wanted(export))
            .filter_map(|export| export.write(document).err())
            .collect()
    }
}

impl Export {
    /// Renders `document` and writes it where this export goes.
    fn write(&self, document: &Document) -> Result<()> {
        let path = &self.path;
        match self.exporter.render(document)? {
            Rendered::File(bytes) => write_to(path, &bytes)
                .with_context(|| format!("cannot write {} to '{}'", self.what, path.display())),
            Rendered::Files(files) => {
                std::fs::create_dir_all(path)
                    .with_context(|| format!("cannot create {} '{}'", self.what, path.display()))?;
                for (name, bytes) in files {
                    let file = path.join(name);
                    write_to(&file, &bytes)
                        .with_context(|| format!("cannot write '{}'", file.display()))?;
                }
                Ok(())
            }
        }
    }
}

/// Reports each failure in one line on stderr.
pub(crate) fn report_failures(failures: &[anyhow::Error]) {
    for failure in failures {
        errln!("h2load-rs: {failure:#}");
    }
}

/// Checks that the file `path` given to `flag` can be written: a regular file created (or
/// replaced) in its directory, a node written to. Returns where its bytes will go.
fn check_file(path: &Path, flag: &str) -> Result<Destination> {
    let destination = match Destination::of(path) {
        Ok(destination) => destination,
        Err(error) if error.kind() == std::io::ErrorKind::IsADirectory => {
            usage_bail!("{flag} '{}' is a directory; name a file", path.display())
        }
        Err(error) => usage_bail!("{flag} '{}': {error}", path.display()),
    };
    match &destination {
        Destination::Stdout => {}
        Destination::Node(node) => {
            // Opening would take a FIFO's reader's only writer and end its input: ask instead.
            if let Err(error) = rustix::fs::access(node, rustix::fs::Access::WRITE_OK) {
                usage_bail!(
                    "{flag} '{}': cannot write to it: {}",
                    path.display(),
                    std::io::Error::from(error)
                );
            }
        }
        Destination::File(file) => check_can_create_in(directory_of(file), path, flag)?,
    }
    Ok(destination)
}

/// Checks that the directory `path` given to `flag` exists and takes new files, or can be created
/// in a directory that does.
fn check_directory(path: &Path, flag: &str) -> Result<()> {
    if path == Path::new("-") {
        usage_bail!("{flag} '-': names a directory of files, not standard output");
    }
    match path.metadata() {
        Ok(metadata) if metadata.is_dir() => check_can_create_in(path, path, flag),
        Ok(_) => usage_bail!("{flag} '{}' is not a directory", path.display()),
        Err(_) => check_can_create_in(directory_of(path), path, flag),
    }
}

/// Creates and removes a file in `directory`: the only test of writability that holds for every
/// file system, access control list and user (root included).
fn check_can_create_in(directory: &Path, path: &Path, flag: &str) -> Result<()> {
    if !directory.is_dir() {
        usage_bail!(
            "{flag} '{}': the directory '{}' does not exist",
            path.display(),
            directory.display()
        );
    }
    if let Err(error) = tempfile::Builder::new()
        .prefix(".h2load-rs-check")
        .tempfile_in(directory)
    {
        usage_bail!(
            "{flag} '{}': cannot create a file in '{}': {}",
            path.display(),
            directory.display(),
            error
        );
    }
    Ok(())
}

/// Writes `bytes` where `path` leads (see [`Destination`]).
fn write_to(path: &Path, bytes: &[u8]) -> Result<()> {
    Destination::of(path)?.write(bytes)?;
    Ok(())
}

/// A file written while the run goes (`--log-file`). A regular file is written under a temporary
/// name beside it and renamed into place by [`StagedFile::place`] once it holds something worth
/// keeping; a node or standard output is written through from the start.
pub(crate) struct StagedFile {
    pending: Option<(Temporary, PathBuf)>,
}

impl StagedFile {
    /// Opens where `path` leads (a FIFO's open waits for its reader); returns it and a handle to
    /// write into it (which stays valid after the rename).
    pub(crate) fn create(path: &Path) -> Result<(StagedFile, File)> {
        let cannot = || format!("cannot open '{}'", path.display());
        let (pending, file) = match Destination::of(path).with_context(cannot)? {
            Destination::Stdout => {
                let stdout = std::io::stdout().as_fd().try_clone_to_owned();
                (None, File::from(stdout.with_context(cannot)?))
            }
            Destination::Node(node) => {
                (None, destination::open_through(&node).with_context(cannot)?)
            }
            Destination::File(target) => {
                let temporary = Temporary::beside(&target).with_context(|| {
                    format!("cannot create a file beside '{}'", target.display())
                })?;
                let file = temporary.as_file().try_clone()?;
                (Some((temporary, target)), file)
            }
        };
        Ok((StagedFile { pending }, file))
    }

    /// Renames the file into place (the first time; later calls have nothing to do).
    pub(crate) fn place(&mut self) -> Result<()> {
        if let Some((temporary, path)) = self.pending.take() {
            temporary
                .persist(&path)
                .with_context(|| format!("cannot write '{}'", path.display()))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn usage_message<T: std::fmt::Debug>(result: Result<T>) -> String {
        let error = result.expect_err("the check must fail");
        assert!(
            error.downcast_ref::<crate::error::UsageError>().is_some(),
            "{error:#}"
        );
        error.to_string()
    }

    #[test]
    fn destinations_are_checked_before_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("report.json");
        check_file(&file, "--json").unwrap();
        check_directory(&dir.path().join("hgrm"), "--hgrm").unwrap();
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "no probe is left"
        );
        assert!(
            usage_message(check_file(Path::new("/nonexistent/r.json"), "--json")).contains(
                "--json '/nonexistent/r.json': the directory '/nonexistent' does not exist"
            )
        );
        assert!(usage_message(check_file(dir.path(), "--csv")).contains("is a directory"));
        std::fs::write(&file, "{}").unwrap();
        assert!(usage_message(check_directory(&file, "--hgrm")).contains("is not a directory"));
    }

    #[test]
    fn files_are_replaced_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.csv");
        std::fs::write(&path, "old").unwrap();
        let earlier = dir.path().join("earlier.csv");
        std::fs::hard_link(&path, &earlier).unwrap();
        write_to(&path, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        // A write in place would have changed the linked file too: the rename left it alone.
        assert_eq!(std::fs::read_to_string(&earlier).unwrap(), "old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);

        let log = dir.path().join("requests.tsv");
        let (mut staged, mut file) = StagedFile::create(&log).unwrap();
        file.write_all(b"line 1\n").unwrap();
        assert!(
            !log.exists(),
            "nothing is in place before the first cell ends"
        );
        staged.place().unwrap();
        file.write_all(b"line 2\n").unwrap();
        staged.place().unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "line 1\nline 2\n");
    }
}
