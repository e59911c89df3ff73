//! `--color`: highlights the key lines of the text report on a terminal. The report renderers
//! produce plain text; painting is a last step applied to what goes to the screen.

use std::io::IsTerminal;

use crate::console::ColorChoice;

/// Whether stdout should be colored.
pub(crate) fn enabled(choice: ColorChoice) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty())
                && std::io::stdout().is_terminal()
        }
    }
}

const BOLD: &str = "\x1b[1m";
const RED: &str = "\x1b[1;31m";
const YELLOW: &str = "\x1b[33m";
const CYAN: &str = "\x1b[1;36m";
const RESET: &str = "\x1b[0m";

/// `report` with its headline, error and summary lines highlighted when `enabled`.
pub(crate) fn paint(report: &str, enabled: bool) -> String {
    if !enabled {
        return report.to_owned();
    }
    let mut painted = String::with_capacity(report.len() + 256);
    for line in report.split_inclusive('\n') {
        let style = if line.starts_with("errors:") || line.starts_with("check failed:") {
            Some(RED)
        } else if line.starts_with("interrupted:") {
            Some(YELLOW)
        } else if line.starts_with("=== cell") {
            Some(CYAN)
        } else if ["finished in", "in plain words:", "comparison of"]
            .iter()
            .any(|start| line.starts_with(start))
        {
            Some(BOLD)
        } else {
            None
        };
        match style {
            Some(style) => {
                let text = line.trim_end_matches('\n');
                painted.push_str(style);
                painted.push_str(text);
                painted.push_str(RESET);
                painted.push_str(&line[text.len()..]);
            }
            None => painted.push_str(line),
        }
    }
    painted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paints_only_the_key_lines_and_keeps_the_text() {
        let report = "\nfinished in 1s\nrequests: 1 total\nerrors: 1 reset\n";
        assert_eq!(paint(report, false), report);
        let painted = paint(report, true);
        assert_eq!(
            painted,
            "\n\x1b[1mfinished in 1s\x1b[0m\nrequests: 1 total\n\x1b[1;31merrors: 1 reset\x1b[0m\n"
        );
    }
}
