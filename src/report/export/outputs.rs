//! Where the results go. Every path is checked before the run starts (its directory exists and
//! takes a new file), so a typo costs nothing; every file is written whole under a temporary name
//! beside its destination and renamed into place, so a run that fails or is interrupted never
//! leaves a truncated file where a complete one was; and one export failing does not keep the
//! others from being written.

use std::fs::{File, Permissions};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use tempfile::NamedTempFile;

use crate::cli::OutputArgs;
use crate::report::{Document, Exporter};
use crate::usage_bail;

/// The exports a run was asked for, each checked writable.
pub struct Outputs {
    exports: Vec<(PathBuf, &'static dyn Exporter)>,
}

impl Outputs {
    /// The exports of `args`; a usage error names the first that could not be written.
    pub fn check(args: &OutputArgs) -> Result<Outputs> {
        let asked: [(&str, &Option<PathBuf>, &'static dyn Exporter); 8] = [
            ("--json", &args.json, &super::json::Json),
            ("--csv", &args.csv, &super::csv::Csv),
            (
                "--csv-timeline",
                &args.csv_timeline,
                &super::timeline_csv::TimelineCsv,
            ),
            ("--csv-urls", &args.csv_urls, &super::urls_csv::UrlsCsv),
            ("--hdr-log", &args.hdr_log, &super::hdr_log::HdrLog),
            ("--markdown", &args.markdown, &super::markdown::Markdown),
            ("--hgrm", &args.hgrm, &super::hgrm::Hgrm),
            ("--html", &args.html, &super::html::Html),
        ];
        let mut exports = Vec::new();
        for (flag, path, exporter) in asked {
            let Some(path) = path else { continue };
            if flag == "--hgrm" {
                check_directory(path, flag)?;
            } else {
                check_file(path, flag)?;
            }
            exports.push((path.clone(), exporter));
        }
        Ok(Outputs { exports })
    }

    /// Writes every export of `document`; returns the failures, the others having been written.
    pub fn write(&self, document: &Document) -> Vec<anyhow::Error> {
        self.exports
            .iter()
            .filter_map(|(path, exporter)| exporter.export(document, path).err())
            .collect()
    }
}

/// Reports each failure in one line on stderr.
pub fn report_failures(failures: &[anyhow::Error]) {
    for failure in failures {
        errln!("h2load-rs: {failure:#}");
    }
}

/// Checks that the file `path` given to `flag` can be created (or replaced).
pub fn check_file(path: &Path, flag: &str) -> Result<()> {
    if path.is_dir() {
        usage_bail!("{flag} '{}' is a directory; name a file", path.display());
    }
    check_can_create_in(directory_of(path), path, flag)
}

/// Checks that the directory `path` given to `flag` exists and takes new files, or can be created
/// in a directory that does.
fn check_directory(path: &Path, flag: &str) -> Result<()> {
    match path.metadata() {
        Ok(metadata) if metadata.is_dir() => check_can_create_in(path, path, flag),
        Ok(_) => usage_bail!("{flag} '{}' is not a directory", path.display()),
        Err(_) => check_can_create_in(directory_of(path), path, flag),
    }
}

/// The directory a path's file lives in (`.` for a bare name).
fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
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

/// An empty temporary file beside `path`, with the permissions a new file gets (0666 less the
/// umask) rather than tempfile's private 0600, since it becomes `path`.
fn temporary_beside(path: &Path) -> std::io::Result<NamedTempFile> {
    let name = path
        .file_name()
        .map_or_else(String::new, |name| name.to_string_lossy().into_owned());
    tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(Permissions::from_mode(0o666))
        .tempfile_in(directory_of(path))
}

/// Replaces `path` with `bytes` in one rename: readers see the old file or the new one, whole.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = temporary_beside(path).context("cannot create a temporary file beside it")?;
    file.write_all(bytes)?;
    file.persist(path).map_err(|error| error.error)?;
    Ok(())
}

/// A file written while the run goes (`--log-file`) under a temporary name beside `path`, and
/// renamed into place by [`StagedFile::place`] once it holds something worth keeping.
pub struct StagedFile {
    pending: Option<NamedTempFile>,
    path: PathBuf,
}

impl StagedFile {
    /// Creates the temporary file; returns it and a handle to write into it (which stays valid
    /// after the rename).
    pub fn create(path: &Path) -> Result<(StagedFile, File)> {
        let temporary = temporary_beside(path)
            .with_context(|| format!("cannot create a file beside '{}'", path.display()))?;
        let file = temporary.as_file().try_clone()?;
        let staged = StagedFile {
            pending: Some(temporary),
            path: path.to_owned(),
        };
        Ok((staged, file))
    }

    /// Renames the file into place (the first time; later calls have nothing to do).
    pub fn place(&mut self) -> Result<()> {
        if let Some(temporary) = self.pending.take() {
            temporary
                .persist(&self.path)
                .map_err(|error| error.error)
                .with_context(|| format!("cannot write '{}'", self.path.display()))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage_message(result: Result<()>) -> String {
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
        write_atomically(&path, b"new").unwrap();
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
