//! Fitting the text report to a terminal: tables stacked into narrower ones (wherever the text
//! goes), and on a terminal every longer line wrapped at spaces, so the default report fits
//! [`WIDTH`] columns. Text piped or written to a file keeps one line per fact, as h2load's, for
//! the scripts and `grep`s that read it.

use std::borrow::Cow;
use std::io::IsTerminal;

/// The width the default text fits: a 100-column terminal.
pub(crate) const WIDTH: usize = 100;

/// A table as [`aligned`] text, as it is if it fits `width` columns, else
/// as several tables stacked, each of whole columns within `width` (unless one column is wider
/// by itself): the first two columns lead every table, the others go in the table of their
/// group in `groups` (by title; the last group takes the unnamed), and a group too wide for one
/// table continues in the next.
pub(crate) fn stacked(
    titles: &[&str],
    lines: &[Vec<String>],
    groups: &[&[&str]],
    width: usize,
) -> String {
    const KEYS: usize = 2;
    const GAP: usize = 2;
    let column_width = |column: usize| {
        lines
            .iter()
            .filter_map(|line| line.get(column))
            .map(|cell| cell.chars().count())
            .chain([titles[column].chars().count()])
            .max()
            .unwrap_or(0)
    };
    let keys_width: usize = (0..KEYS.min(titles.len())).map(column_width).sum::<usize>() + GAP;
    let group_of = |column: usize| {
        groups
            .iter()
            .position(|group| group.contains(&titles[column]))
            .unwrap_or(groups.len().saturating_sub(1))
    };
    let whole = (KEYS..titles.len())
        .map(|column| column_width(column) + GAP)
        .sum::<usize>();
    let fits = keys_width + whole <= width;
    let mut tables: Vec<Vec<usize>> = Vec::new();
    if fits {
        tables.push((KEYS..titles.len()).collect());
    }
    for group in (0..groups.len()).filter(|_| !fits) {
        let mut table: Vec<usize> = Vec::new();
        let mut used = keys_width;
        for column in (KEYS..titles.len()).filter(|&column| group_of(column) == group) {
            let needed = column_width(column) + GAP;
            if !table.is_empty() && used + needed > width {
                tables.push(std::mem::take(&mut table));
                used = keys_width;
            }
            table.push(column);
            used += needed;
        }
        if !table.is_empty() {
            tables.push(table);
        }
    }
    let tables: Vec<String> = tables
        .iter()
        .map(|columns| {
            let chosen: Vec<usize> = (0..KEYS.min(titles.len()))
                .chain(columns.iter().copied())
                .collect();
            let titles: Vec<&str> = chosen.iter().map(|&column| titles[column]).collect();
            let lines: Vec<Vec<String>> = lines
                .iter()
                .map(|line| chosen.iter().map(|&column| line[column].clone()).collect())
                .collect();
            aligned(&titles, &lines)
        })
        .collect();
    tables.join("\n")
}

/// `text` in lines of at most `width` characters, broken at spaces (a word longer than `width`
/// stays whole on its own line); each line a slice of `text`.
pub(crate) fn wrapped(text: &str, width: usize) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut rest = text;
    while let Some((limit, _)) = rest.char_indices().nth(width) {
        // The last space that leaves at most `width` characters before it.
        let at = match rest[limit..].starts_with(' ') {
            true => Some(limit),
            false => rest[..limit].rfind(' '),
        };
        let Some(at) = at.filter(|&at| at > 0).or_else(|| rest.find(' ')) else {
            break;
        };
        lines.push(&rest[..at]);
        rest = rest[at..].trim_start_matches(' ');
    }
    lines.push(rest);
    lines
}

/// `text` as the screen should show it: on a terminal, each line longer than [`WIDTH`] wrapped
/// (see [`fitted`]); elsewhere as it is.
pub(crate) fn for_screen(text: &str) -> Cow<'_, str> {
    match std::io::stdout().is_terminal() {
        true => Cow::Owned(fitted(text, WIDTH)),
        false => Cow::Borrowed(text),
    }
}

/// `text` with each line longer than `width` wrapped at spaces, continued two columns further in
/// than it starts (a plain-words bullet, `  - `, under its words).
fn fitted(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.split_inclusive('\n') {
        let (content, end) = match line.strip_suffix('\n') {
            Some(content) => (content, "\n"),
            None => (line, ""),
        };
        if content.chars().count() <= width {
            out.push_str(line);
            continue;
        }
        let indent = content.len() - content.trim_start().len();
        let hanging = indent + 2;
        let (head, mut rest) = content.split_at(indent);
        out.push_str(head);
        let mut room = width - indent;
        loop {
            let line = wrapped(rest, room)[0];
            out.push_str(line);
            rest = rest[line.len()..].trim_start_matches(' ');
            if rest.is_empty() {
                break;
            }
            out.push('\n');
            out.push_str(&" ".repeat(hanging));
            room = width - hanging;
        }
        out.push_str(end);
    }
    out
}

/// A table as text: the titles, then one line per row, every column right-aligned to its widest
/// cell, two spaces apart, no trailing spaces.
pub(crate) fn aligned(titles: &[&str], lines: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = titles.iter().map(|title| title.chars().count()).collect();
    for line in lines {
        for (width, cell) in widths.iter_mut().zip(line) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let row = |cells: &mut dyn Iterator<Item = &str>| {
        let padded: Vec<String> = cells
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:>width$}"))
            .collect();
        padded.join("  ").trim_end().to_owned()
    };
    let mut out = row(&mut titles.iter().copied());
    out.push('\n');
    for line in lines {
        out.push_str(&row(&mut line.iter().map(String::as_str)));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_wrap_at_spaces_within_the_width() {
        assert_eq!(wrapped("one two three", 7), ["one two", "three"]);
        assert_eq!(wrapped("one two three", 8), ["one two", "three"]);
        assert_eq!(wrapped("one two three", 13), ["one two three"]);
        assert_eq!(wrapped("a abcdefghij b", 4), ["a", "abcdefghij", "b"]);
        assert_eq!(wrapped("à é î ö ü", 3), ["à é", "î ö", "ü"]);
    }

    #[test]
    fn long_lines_wrap_under_their_start() {
        let text = "short\n  - one two three four five\nsix seven eight nine\n";
        assert_eq!(
            fitted(text, 12),
            "short\n  - one two\n    three\n    four\n    five\nsix seven\n  eight nine\n"
        );
        assert_eq!(
            fitted("no newline at the end", 100),
            "no newline at the end"
        );
        let long = fitted(&"word ".repeat(100), 100);
        assert!(
            long.lines().all(|line| line.chars().count() <= 100),
            "{long}"
        );
    }

    #[test]
    fn a_wide_table_stacks_by_group_each_led_by_the_keys() {
        let titles = ["#", "name", "a", "b", "x", "y"];
        let lines = vec![
            ["1", "h1", "aaaa", "bbbb", "xxxx", "yyyy"]
                .map(String::from)
                .to_vec(),
            ["2", "h2c", "a", "b", "x", "y"].map(String::from).to_vec(),
        ];
        let groups: [&[&str]; 2] = [&["a", "b"], &[]];
        // The keys take 1 + 2 + 4 = 7 columns; each other column 2 + 4.
        assert_eq!(
            stacked(&titles, &lines, &groups, 21),
            "#  name     a     b\n1    h1  aaaa  bbbb\n2   h2c     a     b\n\n\
             #  name     x     y\n1    h1  xxxx  yyyy\n2   h2c     x     y\n"
        );
        // Too narrow for two columns: one each.
        let narrow = stacked(&titles, &lines, &groups, 16);
        assert_eq!(narrow.matches("#  name").count(), 4, "{narrow}");
        assert!(
            narrow.lines().all(|line| line.chars().count() <= 16),
            "{narrow}"
        );
        // Wide enough for all (7 + 4 × 6): one table, as it was.
        assert_eq!(
            stacked(&titles, &lines, &groups, 31),
            "#  name     a     b     x     y\n1    h1  aaaa  bbbb  xxxx  yyyy\n2   h2c     a     b     x     y\n"
        );
    }
}
