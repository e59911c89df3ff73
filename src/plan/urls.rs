//! `-i FILE`: URLs read from a file, one a line, checked line by line so a mistake is reported
//! as `FILE:LINE`.

use std::path::Path;

use anyhow::Result;

use crate::cli::input;
use crate::cli::limits::MAX_URL_FILE;
use crate::error::quoted;
use crate::usage_bail;

/// The URLs and paths of `path`, in order: blank lines and `#` comments skipped, each line
/// trimmed. A line must be an http:// or https:// URL or a path starting with `/`, with no space
/// or control character in it (a fragment, `#…`, is dropped later, as from any URL).
pub fn read_url_file(path: &Path) -> Result<Vec<String>> {
    let text = input::read_text(path, "-i file", MAX_URL_FILE)?;
    url_lines(&text, &path.display())
}

/// The URLs and paths of an -i file's `text`, as [`read_url_file`] reads them; `shown` names
/// the file in errors.
pub(crate) fn url_lines(text: &str, shown: &dyn std::fmt::Display) -> Result<Vec<String>> {
    let mut urls = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let number = index + 1;
        if !line.starts_with('/') && !line.contains("://") {
            usage_bail!(
                "{shown}:{number}: '{}' is neither a URL (http://…) nor a path starting with /",
                quoted(line)
            );
        }
        if line.bytes().any(|byte| byte <= b' ' || byte == 0x7f) {
            usage_bail!(
                "{shown}:{number}: '{}' has a space or control character (write it as %20 …)",
                quoted(line)
            );
        }
        let valid = if line.starts_with('/') {
            super::bare_path(line).map(drop)
        } else {
            super::parse_absolute_url(line).map(drop)
        };
        if let Err(error) = valid {
            usage_bail!("{shown}:{number}: {error}");
        }
        urls.push(line.to_owned());
    }
    if urls.is_empty() {
        usage_bail!("the -i file '{shown}' holds no URL");
    }
    Ok(urls)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<String>> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("urls.txt");
        std::fs::write(&path, text).unwrap();
        read_url_file(&path).map_err(|error| {
            anyhow::anyhow!(
                "{}",
                error.to_string().replace(&path.display().to_string(), "F")
            )
        })
    }

    #[test]
    fn lines_are_urls_or_paths_and_comments_are_skipped() {
        let urls = read("# list\nhttp://127.0.0.1:1/a\n\n  /b?x=1  \r\n#/c\n/d\n").unwrap();
        assert_eq!(urls, ["http://127.0.0.1:1/a", "/b?x=1", "/d"]);
    }

    #[test]
    fn bad_lines_name_the_file_and_line() {
        let message = read("/a\n\nfoo/bar\n").unwrap_err().to_string();
        assert!(
            message.starts_with("F:3: 'foo/bar' is neither"),
            "{message}"
        );
        let message = read("/a b\n").unwrap_err().to_string();
        assert!(message.starts_with("F:1:"), "{message}");
        let message = read("/a\nftp://h/x\n").unwrap_err().to_string();
        assert!(
            message.starts_with("F:2: URL 'ftp://h/x': unsupported scheme 'ftp'"),
            "{message}"
        );
        let message = read("/a\n/b<c\n").unwrap_err().to_string();
        assert!(
            message.starts_with("F:2: path '/b<c' is not valid"),
            "{message}"
        );
        assert!(read("# nothing\n\n")
            .unwrap_err()
            .to_string()
            .contains("holds no URL"));
    }

    #[test]
    fn a_hundred_thousand_lines_load_in_one_go() {
        let text: String = (0..100_000).map(|i| format!("/item/{i}\n")).collect();
        let urls = read(&text).unwrap();
        assert_eq!(urls.len(), 100_000);
        assert_eq!(urls[99_999], "/item/99999");
    }
}
