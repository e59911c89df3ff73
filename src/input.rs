//! Reading the files the user names (`-d`, scenarios, PEM files, reports to merge): regular files
//! (or standard input, where a command takes `-`) only, and never more than a cap. A device (`/dev/zero`), a FIFO or a directory is refused before
//! it is opened, so nothing blocks or fills memory; a file that grows while being read stops at the
//! cap. Every problem is a usage error (exit 2) naming the file.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use anyhow::Result;

use crate::units::format_bytes;
use crate::usage_bail;

/// Reads the whole of `path`, the `what` of the command line (e.g. "-d file"), if it is a regular
/// file of at most `cap` bytes.
pub(crate) fn read(path: &Path, what: &str, cap: u64) -> Result<Vec<u8>> {
    let shown = path.display();
    let metadata = match std::fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(error) => usage_bail!("cannot read the {what} '{shown}': {error}"),
    };
    if !metadata.is_file() {
        usage_bail!("the {what} '{shown}' is not a regular file (a directory, device or pipe cannot be read as one)");
    }
    if metadata.len() > cap {
        usage_bail!(
            "the {what} '{shown}' holds {} bytes, more than the limit of {}",
            metadata.len(),
            format_bytes(cap as f64)
        );
    }
    let file = match File::open(path) {
        Ok(file) => file,
        Err(error) => usage_bail!("cannot read the {what} '{shown}': {error}"),
    };
    // One byte past the cap tells a file that grew since its size was read from one that fits.
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    if let Err(error) = file.take(cap + 1).read_to_end(&mut bytes) {
        usage_bail!("cannot read the {what} '{shown}': {error}");
    }
    if bytes.len() as u64 > cap {
        usage_bail!(
            "the {what} '{shown}' grew past the limit of {} while being read",
            format_bytes(cap as f64)
        );
    }
    Ok(bytes)
}

/// Reads standard input to its end (`-` on the command line, e.g. `kubectl logs ... | h2load-rs
/// merge -`), at most `cap` bytes: a stream longer than that is refused, not held.
pub(crate) fn read_stdin(what: &str, cap: u64) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    if let Err(error) = std::io::stdin()
        .lock()
        .take(cap + 1)
        .read_to_end(&mut bytes)
    {
        usage_bail!("cannot read the {what} from standard input: {error}");
    }
    if bytes.len() as u64 > cap {
        usage_bail!(
            "the {what} on standard input is longer than the limit of {}",
            format_bytes(cap as f64)
        );
    }
    Ok(bytes)
}

/// [`read`] for text files.
pub(crate) fn read_text(path: &Path, what: &str, cap: u64) -> Result<String> {
    match String::from_utf8(read(path, what, cap)?) {
        Ok(text) => Ok(text),
        Err(_) => usage_bail!("the {what} '{}' is not UTF-8 text", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::UsageError;

    fn usage_message(path: &Path, cap: u64) -> String {
        let error = read(path, "-d file", cap).expect_err("the read must fail");
        assert!(error.downcast_ref::<UsageError>().is_some(), "{error:#}");
        error.to_string()
    }

    #[test]
    fn regular_files_within_the_cap_are_read() {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), b"12345").unwrap();
        assert_eq!(read(file.path(), "-d file", 5).unwrap(), b"12345");
        assert_eq!(read_text(file.path(), "scenario file", 5).unwrap(), "12345");
        assert!(
            usage_message(file.path(), 4).contains("holds 5 bytes, more than the limit of 4.00 B")
        );
    }

    #[test]
    fn devices_directories_and_missing_files_are_refused() {
        for path in ["/dev/zero", "/tmp"] {
            assert!(
                usage_message(Path::new(path), 1 << 30).contains("is not a regular file"),
                "{path}"
            );
        }
        assert!(usage_message(Path::new("/nonexistent/body"), 1)
            .contains("cannot read the -d file '/nonexistent/body': No such file"));
    }
}
