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
//! Each candidate is parsed within its own lines, each line in two attempts at most, so a log is
//! read in time linear in its size whatever it holds.

use crate::report::Document;

/// The most objects that could not be read a log names one by one; the rest are counted. A log
/// of a million broken report-like lines must not print a million warnings (nor copy them into
/// every merged cell).
const NAMED_UNREADABLE: usize = 3;

/// What a log holds: its reports, each with the line (from 1) it began on, and a sentence for
/// each of the first [`NAMED_UNREADABLE`] objects that looked like a report (it has `"cells"`)
/// but could not be read as one, and how many more there were.
pub(super) struct Found {
    pub(super) reports: Vec<(usize, Document)>,
    pub(super) unreadable: Vec<String>,
    pub(super) more_unreadable: usize,
}

impl Found {
    fn note(&mut self, sentence: Option<String>) {
        let Some(sentence) = sentence else { return };
        if self.unreadable.len() < NAMED_UNREADABLE {
            self.unreadable.push(sentence);
        } else {
            self.more_unreadable += 1;
        }
    }
}

/// The reports in `bytes`, in order.
pub(super) fn reports_in(bytes: &[u8]) -> Found {
    let mut found = Found {
        reports: Vec::new(),
        unreadable: Vec::new(),
        more_unreadable: 0,
    };
    let mut lines = Lines::new(bytes);
    // Whether a line `}` lies ahead: once none does, no block can close.
    let mut closes_ahead = true;
    while let Some(line) = lines.next() {
        let text = &bytes[line.start..line.end];
        if text == b"{" && closes_ahead {
            // The block up to the first close, and the last opening inside it: a report cut
            // short (its pod killed while writing) followed by a whole one reads as one block.
            let mut ahead = lines.clone();
            let mut last_open = None;
            let close = loop {
                let before = ahead.clone();
                let Some(next) = ahead.next() else {
                    break None;
                };
                match &bytes[next.start..next.end] {
                    b"}" => break Some(next),
                    b"{" => last_open = Some(before),
                    _ => {}
                }
            };
            let Some(close) = close else {
                closes_ahead = false;
                continue;
            };
            let whole = &bytes[line.start..close.next];
            match parse(whole).or_else(|_| parse(&without_strangers(whole))) {
                Ok(document) => found.reports.push((line.number, document)),
                Err(error) => {
                    found.note(unreadable(line.number, whole, &error));
                    // Again from the last opening: that block holds no other, so each line is
                    // read in two attempts at most.
                    if let Some(open) = last_open {
                        lines = open;
                        continue;
                    }
                }
            }
            // Past the block, whatever it held.
            lines = ahead;
        } else if text.starts_with(b"{") {
            match parse(text) {
                Ok(document) => found.reports.push((line.number, document)),
                Err(error) => found.note(unreadable(line.number, text, &error)),
            }
        }
    }
    found
}

/// Where a line of the log lies: its text without the line end, where the next one begins, and
/// its number (from 1).
struct Line {
    start: usize,
    end: usize,
    next: usize,
    number: usize,
}

/// The lines of a log, one at a time (a log of empty lines must not become a vector of them).
#[derive(Clone)]
struct Lines<'a> {
    bytes: &'a [u8],
    at: usize,
    number: usize,
}

impl<'a> Lines<'a> {
    fn new(bytes: &'a [u8]) -> Lines<'a> {
        Lines {
            bytes,
            at: 0,
            number: 0,
        }
    }
}

impl Iterator for Lines<'_> {
    type Item = Line;

    fn next(&mut self) -> Option<Line> {
        if self.at >= self.bytes.len() {
            return None;
        }
        let start = self.at;
        let rest = &self.bytes[start..];
        let (end, next) = match rest.iter().position(|&byte| byte == b'\n') {
            Some(newline) => (start + newline, start + newline + 1),
            None => (self.bytes.len(), self.bytes.len()),
        };
        let end = if end > start && self.bytes[end - 1] == b'\r' {
            end - 1
        } else {
            end
        };
        self.at = next;
        self.number += 1;
        Some(Line {
            start,
            end,
            next,
            number: self.number,
        })
    }
}

/// A block read as a report, made inert first as a whole file is (see [`super::inert`]).
fn parse(bytes: &[u8]) -> serde_json::Result<Document> {
    serde_json::from_slice(&super::inert::inert(bytes))
}

/// The block's lines that a pretty-printed object can hold: its first and last, and the
/// indented ones between.
fn without_strangers(block: &[u8]) -> Vec<u8> {
    let mut kept = Vec::with_capacity(block.len());
    let mut lines = Lines::new(block).peekable();
    let mut first = true;
    while let Some(line) = lines.next() {
        let text = &block[line.start..line.end];
        let last = lines.peek().is_none();
        if first || last || text.starts_with(b" ") || text.starts_with(b"\t") {
            kept.extend_from_slice(text);
            kept.push(b'\n');
        }
        first = false;
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
    fn a_log_of_broken_reports_names_a_few_and_counts_the_rest() {
        let log = "{\"cells\": 1}\n".repeat(10_000);
        let found = reports_in(log.as_bytes());
        assert_eq!(found.unreadable.len(), NAMED_UNREADABLE);
        assert!(
            found.unreadable[2].starts_with("line 3: "),
            "{:?}",
            found.unreadable
        );
        assert_eq!(found.more_unreadable, 10_000 - NAMED_UNREADABLE);
    }

    #[test]
    fn a_report_cut_short_does_not_take_the_next_one_with_it() {
        let pretty = report();
        let lines: Vec<&str> = pretty.lines().collect();
        let cut = lines[..lines.len() / 2].join("\n");
        let log = format!("{cut}\n{pretty}\n");
        let found = reports_in(log.as_bytes());
        assert_eq!(found.reports.len(), 1, "{:?}", found.unreadable);
        assert_eq!(found.reports[0].0, lines.len() / 2 + 1);
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
