//! Reports found in a log: what `kubectl logs` prints for the pods of a Job whose workers wrote
//! `--json -`, their stderr lines among them. Each line that opens a JSON object is tried as the
//! start of a report; what parses as one is kept, the rest skipped.

use serde_json::Deserializer;

use crate::report::Document;

/// The reports in `bytes`, in order, each with the line (from 1) it began on.
pub(super) fn reports_in(bytes: &[u8]) -> Vec<(usize, Document)> {
    let mut found = Vec::new();
    let (mut at, mut line) = (0, 1);
    while at < bytes.len() {
        let end = bytes[at..]
            .iter()
            .position(|&byte| byte == b'\n')
            .map_or(bytes.len(), |newline| at + newline + 1);
        if bytes[at..end].trim_ascii_start().starts_with(b"{") {
            let mut stream = Deserializer::from_slice(&bytes[at..]).into_iter::<Document>();
            if let Some(Ok(document)) = stream.next() {
                let consumed = at + stream.byte_offset();
                found.push((line, document));
                line += bytes[at..consumed]
                    .iter()
                    .filter(|&&byte| byte == b'\n')
                    .count();
                at = consumed;
                continue;
            }
        }
        line += 1;
        at = end;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_among_other_lines_are_found_and_the_rest_skipped() {
        let report = |source: &str| {
            let mut document = Document::new(Vec::new());
            document.source = source.to_owned();
            serde_json::to_string_pretty(&document).unwrap()
        };
        let log = format!(
            "waiting 1.2 s for --start-at\n{}\n{{not a report}}\nh2load-rs: note\n{}",
            report(""),
            report("")
        );
        let found = reports_in(log.as_bytes());
        let lines: Vec<usize> = found.iter().map(|(line, _)| *line).collect();
        let second = 2 + report("").lines().count() + 2;
        assert_eq!(lines, [2, second]);
        assert!(reports_in(b"no report here\n{\"a\": 1}\n").is_empty());
    }
}
