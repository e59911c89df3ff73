//! A [`Diff`] as text (columns aligned like the other reports) or as a GitHub-flavoured Markdown
//! table to paste into a pull request. Numbers are formatted as the text report does.

use std::fmt::Write;

use super::{
    CellDiff, Diff, Figure, Kind, SampleKind, Verdict, ALPHA, MIN_INTERVALS, NOISE_FLOOR_PCT,
};
use crate::report::comparison::{not_estimable_legend, NOT_ESTIMABLE};
use crate::report::export::markdown;
use crate::report::layout;
use crate::units::{counted, format_micros};

/// Which files were compared, and the `--fail-if-regressed` threshold if one was given.
pub(crate) struct Context<'a> {
    /// The base report's path as given.
    pub(crate) base: &'a str,
    /// The new report's path as given.
    pub(crate) new: &'a str,
    /// `--fail-if-regressed`, in percent.
    pub(crate) threshold_pct: Option<f64>,
}

/// The comparison as text: one table per cell, then the cells without a match, what
/// "significant" means and the regressions.
pub(crate) fn text(diff: &Diff, context: &Context) -> String {
    let mut out = format!(
        "comparing {} → {}: {} in common\n",
        context.base,
        context.new,
        counted(diff.cells.len() as u64, "cell")
    );
    for cell in &diff.cells {
        let _ = writeln!(
            out,
            "\n{}: {} in base, {} in new; Kolmogorov–Smirnov distance of the latencies {:.2}",
            cell.label,
            counted(cell.base_intervals as u64, cell.samples.noun()),
            cell.new_intervals,
            cell.ks_distance
        );
        if cell.too_short() {
            let _ = writeln!(out, "{}", too_short(cell));
        }
        let lines: Vec<Vec<String>> = cell
            .figures
            .iter()
            .map(|figure| {
                vec![
                    figure.name.to_owned(),
                    with_interval(figure, 0),
                    with_interval(figure, 1),
                    change(figure),
                    figure
                        .test
                        .map_or_else(|| "-".to_owned(), |test| p_value(test.p)),
                    match figure.verdict() {
                        Verdict::Worse => "worse",
                        Verdict::Better => "better",
                        Verdict::Same | Verdict::Untested => "",
                    }
                    .to_owned(),
                ]
            })
            .collect();
        out.push_str(&layout::aligned(
            &["", "base", "new", "change", "p", ""],
            &lines,
        ));
    }
    out.push('\n');
    for line in footer(diff, context) {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// The comparison as Markdown: a table with one row per cell in common, then the same notes as
/// the text.
pub(crate) fn markdown(diff: &Diff, context: &Context) -> String {
    let mut out = format!(
        "`h2load-rs diff` of `{}` (base) → `{}` (new)\n\n",
        context.base, context.new
    );
    let mut titles = vec!["cell"];
    if let Some(cell) = diff.cells.first() {
        titles.extend(cell.figures.iter().map(|figure| figure.name));
    }
    titles.push("KS distance");
    let lines: Vec<Vec<String>> = diff
        .cells
        .iter()
        .map(|cell| {
            let mut line = vec![if cell.too_short() {
                format!("{} (too short to tell)", cell.label)
            } else {
                cell.label.clone()
            }];
            line.extend(cell.figures.iter().map(|figure| {
                let shift = format!(
                    "{} → {}",
                    value(figure, figure.base),
                    value(figure, figure.new)
                );
                match figure.verdict() {
                    Verdict::Worse => format!("{shift} (**{}, worse**)", change(figure)),
                    Verdict::Better => format!("{shift} (**{}, better**)", change(figure)),
                    Verdict::Same | Verdict::Untested => format!("{shift} ({})", change(figure)),
                }
            }));
            line.push(format!("{:.2}", cell.ks_distance));
            line
        })
        .collect();
    out.push_str(&markdown::table(&titles, &lines));
    out.push('\n');
    for cell in diff.cells.iter().filter(|cell| cell.too_short()) {
        let _ = writeln!(out, "- {}", too_short(cell));
    }
    for line in footer(diff, context) {
        let _ = writeln!(out, "- {line}");
    }
    out
}

/// Why a cell's changes are not tested.
fn too_short(cell: &CellDiff) -> String {
    format!(
        "{}: too short to tell ({} in base, {} in new; {MIN_INTERVALS} each needed): \
         its changes are not tested, --fail-if-regressed decides on its threshold alone",
        cell.label,
        match cell.samples {
            SampleKind::Intervals => format!(
                "{} with completions",
                counted(cell.base_intervals as u64, "interval")
            ),
            SampleKind::Rounds => counted(cell.base_intervals as u64, "round"),
        },
        cell.new_intervals
    )
}

/// The lines after the tables: unmatched cells, the meaning of "significant", the verdict of
/// `--fail-if-regressed`.
fn footer(diff: &Diff, context: &Context) -> Vec<String> {
    let mut lines = Vec::new();
    if !diff.only_in_base.is_empty() {
        lines.push(format!("only in base: {}", diff.only_in_base.join(", ")));
    }
    if !diff.only_in_new.is_empty() {
        lines.push(format!("only in new: {}", diff.only_in_new.join(", ")));
    }
    let by_rounds = diff
        .cells
        .iter()
        .any(|cell| cell.samples == SampleKind::Rounds);
    lines.push(if by_rounds {
        format!(
            "significant (worse/better): p < {ALPHA} in a two-sided Mann–Whitney U test of the rounds \
             (each round's request rate, or its percentile), and a change of at least {NOISE_FLOOR_PCT}%"
        )
    } else {
        format!(
            "significant (worse/better): p < {ALPHA} in a two-sided Mann–Whitney U test of the intervals \
             (their request rates; their shares of responses slower than either run's percentile), \
             and a change of at least {NOISE_FLOOR_PCT}%"
        )
    });
    let marked = diff.cells.iter().flat_map(|cell| &cell.figures);
    if marked
        .into_iter()
        .any(|figure| figure.not_estimable.contains(&true))
    {
        lines.push(not_estimable_legend());
    }
    if let Some(threshold) = context.threshold_pct {
        let regressions = diff.regressions(threshold);
        if regressions.is_empty() {
            lines.push(format!(
                "no regression beyond {threshold}% (req/s down or p99 up)"
            ));
        }
        for regression in regressions {
            let figure = regression.figure;
            lines.push(format!(
                "regression: {} {} {} beyond {threshold}% ({})",
                regression.cell,
                figure.name,
                change(figure),
                if figure.test.is_some() {
                    "significant"
                } else {
                    "too short to test: decided on the threshold alone"
                }
            ));
        }
    }
    lines
}

/// A figure's value as the text report shows it: req/s with two decimals, latencies in us/ms/s.
/// A run's (0: base, 1: new) value of a figure with its 95% interval, `1.23ms (1.10–1.40)` in
/// the value's unit; `1.23ms (n/e)` for a percentile not estimable; the value alone when the
/// report has no interval.
fn with_interval(figure: &Figure, run: usize) -> String {
    let shown = value(figure, [figure.base, figure.new][run]);
    if figure.not_estimable[run] {
        return format!("{shown} ({NOT_ESTIMABLE})");
    }
    let Some(bounds) = figure.intervals[run] else {
        return shown;
    };
    let number = |x: f64| match figure.kind {
        Kind::Throughput => format!("{x:.0}"),
        Kind::Latency => format_micros(x),
    };
    let high = bounds.ci_high.map_or("?".to_owned(), number);
    format!("{shown} ({}–{high})", number(bounds.ci_low))
}

fn value(figure: &Figure, value: f64) -> String {
    match figure.kind {
        Kind::Throughput => format!("{value:.2}"),
        Kind::Latency => format_micros(value),
    }
}

/// `+12.3%`, or `n/a` when the base is 0.
fn change(figure: &Figure) -> String {
    figure
        .change_pct()
        .map_or_else(|| "n/a".to_owned(), |change| format!("{change:+.1}%"))
}

/// A p-value with four decimals, `<0.0001` below.
fn p_value(p: f64) -> String {
    if p < 1e-4 {
        "<0.0001".to_owned()
    } else {
        format!("{p:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cell whose base had no throughput, tested latency that got worse, and an untested p99.
    fn diff() -> Diff {
        use super::super::tests::figure;
        Diff {
            cells: vec![CellDiff {
                label: "h2c c=2 m=4".to_owned(),
                samples: SampleKind::Intervals,
                base_intervals: 10,
                new_intervals: 3,
                ks_distance: 0.4567,
                figures: vec![
                    figure("req/s", Kind::Throughput, 0.0, 1234.5678, Some(0.5)),
                    figure("p50", Kind::Latency, 1000.0, 1500.0, Some(0.00001)),
                    figure("p99", Kind::Latency, 2000.0, 1000.0, None),
                ],
            }],
            only_in_base: vec![],
            only_in_new: vec!["h1 c=2 m=4".to_owned()],
        }
    }

    const CONTEXT: Context = Context {
        base: "a.json",
        new: "b.json",
        threshold_pct: Some(10.0),
    };

    #[test]
    fn a_percentile_not_estimable_is_marked_with_its_legend() {
        let mut marked = diff();
        marked.cells[0].figures[2].not_estimable = [false, true];
        let text = text(&marked, &CONTEXT);
        assert!(
            text.contains("  p99  2.00ms  1.00ms (n/e)  -50.0%"),
            "{text}"
        );
        assert!(text.contains(&not_estimable_legend()), "{text}");
        assert!(!super::text(&diff(), &CONTEXT).contains("n/e"));
    }

    #[test]
    fn text_is_aligned_and_says_what_it_could_not_test() {
        let text = text(&diff(), &CONTEXT);
        let expected = "\
comparing a.json → b.json: 1 cell in common

h2c c=2 m=4: 10 intervals in base, 3 in new; Kolmogorov–Smirnov distance of the latencies 0.46
h2c c=2 m=4: too short to tell (10 intervals with completions in base, 3 in new; 5 each needed): \
its changes are not tested, --fail-if-regressed decides on its threshold alone
         base      new  change        p
req/s    0.00  1234.57     n/a   0.5000
  p50  1.00ms   1.50ms  +50.0%  <0.0001  worse
  p99  2.00ms   1.00ms  -50.0%        -

only in new: h1 c=2 m=4
significant (worse/better): p < 0.05 in a two-sided Mann–Whitney U test of the intervals \
(their request rates; their shares of responses slower than either run's percentile), and a \
change of at least 5%
no regression beyond 10% (req/s down or p99 up)
";
        assert_eq!(text, expected);
    }

    #[test]
    fn markdown_is_one_row_per_cell_with_significant_changes_in_bold() {
        let markdown = markdown(&diff(), &CONTEXT);
        let rows: Vec<&str> = markdown
            .lines()
            .filter(|line| line.starts_with('|'))
            .collect();
        assert_eq!(
            rows,
            [
                "| cell | req/s | p50 | p99 | KS distance |",
                "|---|---|---|---|---|",
                "| h2c c=2 m=4 (too short to tell) | 0.00 → 1234.57 (n/a) | \
                 1.00ms → 1.50ms (**+50.0%, worse**) | 2.00ms → 1.00ms (-50.0%) | 0.46 |",
            ]
        );
        assert!(markdown.contains("\n- only in new: h1 c=2 m=4\n"));
    }
}
