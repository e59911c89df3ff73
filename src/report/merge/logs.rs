//! Reports found in a log: what `kubectl logs` prints for the pods of a Job whose workers wrote
//! `--json -`, their stderr lines among them. A report is an object that opens on a line of its
//! own, `{`, and closes on a line `}` (pretty-printed, as `--json` writes it), or one whole line
//! `{...}`; the rest of the log is skipped.
//!
//! A container's stdout and stderr reach its log through two pipes, copied line by line by the
//! runtime, so a stderr line written while the report is being written can land inside it (seen
//! on a real cluster: a shard's report lost to its own summary line). Inside a pretty-printed
//! report every line but the last is indented; an unindented line there is such a stranger, and
//! is left out when the report does not parse as it stands.
//!
//! Each candidate is parsed within its own lines, and the reading goes on after them, so a log
//! is read in time linear in its size whatever it holds.

use crate::report::Document;

/// What a log holds: its reports, each with the line (from 1) it began on, and a sentence for
/// each object that looked like a report (it has `"cells"`) but could not be read as one.
pub(super) struct Found {
    pub(super) reports: Vec<(usize, Document)>,
    pub(super) unreadable: Vec<String>,
}

/// The reports in `bytes`, in order.
pub(super) fn reports_in(bytes: &[u8]) -> Found {
    let lines = Line::all(bytes);
    let text = |line: &Line| &bytes[line.start..line.end];
    let mut found = Found {
        reports: Vec::new(),
        unreadable: Vec::new(),
    };
    let mut index = 0;
    while index < lines.len() {
        let line = &lines[index];
        let number = index + 1;
        if text(line) == b"{" {
            let Some(close) = (index + 1..lines.len()).find(|&at| text(&lines[at]) == b"}") else {
                break;
            };
            let block = &lines[index..=close];
            let whole = &bytes[line.start..block[block.len() - 1].next];
            match parse(whole).or_else(|_| parse(&without_strangers(bytes, block))) {
                Ok(document) => found.reports.push((number, document)),
                Err(error) => found.unreadable.extend(unreadable(number, whole, &error)),
            }
            // Past the block, whatever it held: each line is read in one attempt at most.
            index = close + 1;
            continue;
        }
        if text(line).starts_with(b"{") {
            match parse(text(line)) {
                Ok(document) => found.reports.push((number, document)),
                Err(error) => found
                    .unreadable
                    .extend(unreadable(number, text(line), &error)),
            }
        }
        index += 1;
    }
    found
}

/// Where a line of the log lies: its text without the line end, and where the next one begins.
struct Line {
    start: usize,
    end: usize,
    next: usize,
}

impl Line {
    fn all(bytes: &[u8]) -> Vec<Line> {
        let mut lines = Vec::new();
        let mut start = 0;
        for line in bytes.split_inclusive(|&byte| byte == b'\n') {
            let next = start + line.len();
            let text = line.strip_suffix(b"\n").unwrap_or(line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            lines.push(Line {
                start,
                end: start + text.len(),
                next,
            });
            start = next;
        }
        lines
    }
}

fn parse(bytes: &[u8]) -> serde_json::Result<Document> {
    serde_json::from_slice(bytes)
}

/// The block's lines that a pretty-printed object can hold: its first and last, and the
/// indented ones between.
fn without_strangers(bytes: &[u8], block: &[Line]) -> Vec<u8> {
    let last = block.len() - 1;
    let mut kept = Vec::new();
    for (at, line) in block.iter().enumerate() {
        let text = &bytes[line.start..line.end];
        if at == 0 || at == last || text.starts_with(b" ") || text.starts_with(b"\t") {
            kept.extend_from_slice(text);
            kept.push(b'\n');
        }
    }
    kept
}

/// A sentence for an object that looked like a report and was not one.
fn unreadable(number: usize, text: &[u8], error: &serde_json::Error) -> Option<String> {
    let looks_like_a_report = text.windows(7).any(|window| window == b"\"cells\"");
    looks_like_a_report.then(|| format!("line {number}: a report that could not be read ({error})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> String {
        let mut document = Document::new(Vec::new());
        document.source = String::new();
        serde_json::to_string_pretty(&document).unwrap()
    }

    #[test]
    fn reports_among_other_lines_are_found_and_the_rest_skipped() {
        let log = format!(
            "waiting 1.2 s for --start-at\n{}\n{{not a report}}\nh2load-rs: note\n{}\n{}",
            report(),
            report(),
            serde_json::to_string(&Document::new(Vec::new())).unwrap()
        );
        let found = reports_in(log.as_bytes());
        let lines: Vec<usize> = found.reports.iter().map(|(line, _)| *line).collect();
        let second = 2 + report().lines().count() + 2;
        assert_eq!(lines, [2, second, second + report().lines().count()]);
        assert!(found.unreadable.is_empty(), "{:?}", found.unreadable);
        let found = reports_in(b"no report here\n{\"a\": 1}\n");
        assert!(found.reports.is_empty());
        assert!(found.unreadable.is_empty(), "not a report: no sentence");
    }

    #[test]
    fn a_stderr_line_that_landed_inside_a_report_is_left_out() {
        let pretty = report();
        let mut lines: Vec<&str> = pretty.lines().collect();
        let middle = lines.len() / 2;
        lines.insert(middle, "h2c c=3 m=1: 300 done, 300 succeeded, 0 failed");
        let log = format!("h2load-rs: warning\n{}\n", lines.join("\n"));
        let found = reports_in(log.as_bytes());
        assert_eq!(found.reports.len(), 1, "{:?}", found.unreadable);
        assert_eq!(found.reports[0].0, 2);
    }

    #[test]
    fn a_broken_report_is_named_and_the_reading_goes_on() {
        let pretty = report();
        let broken = pretty.replacen("\"cells\": []", "\"cells\": [}", 1);
        assert_ne!(broken, pretty);
        let log = format!("{broken}\n{pretty}\n{{\"cells\": 1}}\n");
        let found = reports_in(log.as_bytes());
        assert_eq!(found.reports.len(), 1);
        assert_eq!(found.reports[0].0, broken.lines().count() + 1);
        assert_eq!(found.unreadable.len(), 2, "{:?}", found.unreadable);
        assert!(found.unreadable[0].starts_with("line 1: a report that could not be read"));
    }

    #[test]
    fn many_open_braces_are_read_in_linear_time() {
        // Every line opens an object that never closes: each is tried within its own line.
        let log = "{\n".repeat(200_000);
        assert!(reports_in(log.as_bytes()).reports.is_empty());
        // Each opens a block that the first close ends: one attempt for all of them.
        let log = format!("{}{}", "{\n".repeat(100_000), "}\n".repeat(100_000));
        assert!(reports_in(log.as_bytes()).reports.is_empty());
    }
}
