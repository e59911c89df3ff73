//! `-i FILE`: URLs read from a file, one a line, checked line by line so a mistake is reported
//! as `FILE:LINE`.

use std::path::Path;

use anyhow::Result;

use crate::error::quoted;
use crate::input;
use crate::limits::{MAX_URL_FILE, MAX_URL_LIST_MEMORY, URL_COST, URL_COST_PER_THREAD};
use crate::units::format_bytes;
use crate::usage_bail;

/// The URLs and paths of `path`, in order: blank lines and `#` comments skipped, each line
/// trimmed. A line must be an http:// or https:// URL or a path starting with `/`, with no space
/// or control character in it (a fragment, `#…`, is dropped later, as from any URL). A list that
/// would cost more memory than [`MAX_URL_LIST_MEMORY`] with `threads` threads is refused first.
pub(crate) fn read_url_file(path: &Path, threads: u64) -> Result<Vec<String>> {
    let text = input::read_text(path, "-i file", MAX_URL_FILE)?;
    check_cost(&text, threads, &path.display())?;
    url_lines(&text, &path.display())
}

/// The lines [`url_lines`] would keep: neither blank nor a comment.
fn kept_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
}

/// Refuses `text` when its URLs would cost more than [`MAX_URL_LIST_MEMORY`], counted without
/// allocating anything per line: many short lines cost more than their bytes say.
fn check_cost(text: &str, threads: u64, shown: &dyn std::fmt::Display) -> Result<()> {
    let per_url = URL_COST.saturating_add(URL_COST_PER_THREAD.saturating_mul(threads));
    // Bytes rather than `kept_lines`: 33 million lines are counted in a second even unoptimised.
    let (mut count, mut cost) = (0u64, 0u64);
    for line in text.as_bytes().split(|&byte| byte == b'\n') {
        let line = line.trim_ascii();
        if !line.is_empty() && line[0] != b'#' {
            count += 1;
            cost = cost.saturating_add(per_url + 2 * line.len() as u64);
        }
    }
    if cost > MAX_URL_LIST_MEMORY {
        usage_bail!(
            "the -i file '{shown}' holds {count} URLs, which would take about {} of memory with {threads} thread(s), more than the limit of {} (split the list, or use fewer threads)",
            format_bytes(cost as f64),
            format_bytes(MAX_URL_LIST_MEMORY as f64)
        );
    }
    Ok(())
}

/// The URLs and paths of an -i file's `text`, as [`read_url_file`] reads them; `shown` names
/// the file in errors.
pub(crate) fn url_lines(text: &str, shown: &dyn std::fmt::Display) -> Result<Vec<String>> {
    let mut urls = Vec::with_capacity(kept_lines(text).count());
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let number = index + 1;
        if !line.starts_with('/') && !line.contains("://") {
            usage_bail!(
                "{shown}:{number}: '{}' is neither a URL (http://…) nor a path starting with /",
                quoted(&super::target::shown(line))
            );
        }
        if line.bytes().any(|byte| byte <= b' ' || byte == 0x7f) {
            usage_bail!(
                "{shown}:{number}: '{}' has a space or control character (write it as %20 …)",
                quoted(&super::target::shown(line))
            );
        }
        let valid = if line.starts_with('/') {
            super::target::bare_path(line).map(drop)
        } else {
            super::target::parse_absolute_url(line).map(drop)
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
        read_url_file(&path, 1).map_err(|error| {
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
    fn lists_that_would_cost_too_much_memory_are_refused_before_they_are_built() {
        // 5 million one-character lines: 10 MB of file, 1.08e9 bytes as URLs at -t 4.
        let lines = "/\n".repeat(5_000_000);
        assert!(check_cost(&lines, 1, &"F").is_ok());
        let message = check_cost(&lines, 4, &"F").unwrap_err().to_string();
        assert_eq!(
            message,
            "the -i file 'F' holds 5000000 URLs, which would take about 1.08 GB of memory with 4 \
             thread(s), more than the limit of 1.07 GB (split the list, or use fewer threads)"
        );
        // Comments and blank lines cost nothing; long lines cost their bytes.
        assert!(check_cost(&"#\n\n".repeat(10_000_000), 4096, &"F").is_ok());
        let long = format!("/{}\n", "x".repeat(1 << 20)).repeat(600);
        assert!(check_cost(&long, 1, &"F").is_err());
    }

    #[test]
    fn a_hundred_thousand_lines_load_in_one_go() {
        let text: String = (0..100_000).map(|i| format!("/item/{i}\n")).collect();
        let urls = read(&text).unwrap();
        assert_eq!(urls.len(), 100_000);
        assert_eq!(urls[99_999], "/item/99999");
    }
}
