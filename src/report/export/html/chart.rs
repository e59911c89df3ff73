//! One SVG line chart of the page: axes fitted to the data, a line (or a lone marker) per series
//! with its 95% error bars, dashed reference lines, and the legend as an HTML list under the plot,
//! where long names wrap instead of running off the picture.

use std::fmt::Write;

use super::escape;

const COLORS: [&str; 12] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#bcbd22", "#7f7f7f", "#393b79", "#e7969c",
];
/// The drawing's size; the page's CSS caps the legend's width at [`WIDTH`] too.
pub(super) const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 360.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
pub(super) const TOP: f64 = 20.0;
const BOTTOM: f64 = 45.0;

/// One line on a chart.
pub(super) struct Series {
    pub(crate) name: String,
    pub(crate) points: Vec<(f64, f64)>,
    /// 95% confidence intervals drawn as error bars: at x, from low to high (`None`: open,
    /// drawn to the top of the plot).
    pub(crate) bars: Vec<(f64, f64, Option<f64>)>,
    /// A reference to read the data against (the rate requested): dashed, a
    /// `<g class="reference">`, not one of the chart's series.
    pub(crate) reference: bool,
    /// Drawn in the colour of the chart's `n`-th line (a reference in its series' colour);
    /// `None`: its own.
    pub(crate) color_of: Option<usize>,
}

impl Series {
    /// A data series without error bars.
    pub(super) fn line(name: String, points: Vec<(f64, f64)>) -> Series {
        Series {
            name,
            points,
            bars: Vec::new(),
            reference: false,
            color_of: None,
        }
    }
}

/// How an axis maps values to pixels.
#[derive(Clone, Copy)]
pub(super) struct Axis {
    low: f64,
    high: f64,
    log: bool,
}

impl Axis {
    fn fit(values: impl Iterator<Item = f64>, log: bool) -> Axis {
        let (mut low, mut high) = (f64::INFINITY, f64::NEG_INFINITY);
        for value in values.filter(|v| v.is_finite() && (!log || *v > 0.0)) {
            low = low.min(value);
            high = high.max(value);
        }
        if !low.is_finite() {
            return Axis {
                low: if log { 1.0 } else { 0.0 },
                high: if log { 10.0 } else { 1.0 },
                log,
            };
        }
        if log {
            Axis {
                low: 10f64.powf(low.log10().floor()),
                high: 10f64
                    .powf(high.log10().ceil())
                    .max(10f64.powf(low.log10().floor() + 1.0)),
                log,
            }
        } else {
            Axis {
                low: 0.0,
                high: if high > 0.0 { high * 1.05 } else { 1.0 },
                log,
            }
        }
    }

    /// Position of `value` between 0 and 1.
    fn fraction(&self, value: f64) -> f64 {
        if self.log {
            (value.max(self.low).log10() - self.low.log10())
                / (self.high.log10() - self.low.log10())
        } else {
            (value - self.low) / (self.high - self.low)
        }
    }

    fn ticks(&self) -> Vec<f64> {
        if self.log {
            let (from, to) = (
                self.low.log10().round() as i32,
                self.high.log10().round() as i32,
            );
            (from..=to).map(|exponent| 10f64.powi(exponent)).collect()
        } else {
            let raw = self.high / 6.0;
            let magnitude = 10f64.powf(raw.log10().floor());
            let step = [1.0, 2.0, 5.0, 10.0]
                .iter()
                .map(|m| m * magnitude)
                .find(|step| *step >= raw)
                .unwrap_or(raw);
            (0..)
                .map(|i| i as f64 * step)
                .take_while(|tick| *tick <= self.high)
                .collect()
        }
    }
}

fn number(value: f64) -> String {
    if value >= 1e6 {
        format!("{}M", value / 1e6)
    } else if value >= 1e3 {
        format!("{}k", value / 1e3)
    } else if value >= 1.0 || value == 0.0 {
        format!("{value}")
    } else {
        // 0.2, not 0.200 or 0.20000000000000001; 0.0001 as it is.
        let fraction = format!("{value:.6}");
        fraction.trim_end_matches('0').to_owned()
    }
}

/// What a chart shows: its id and caption, the axes' titles and whether each is logarithmic.
pub(super) struct Frame<'a> {
    pub(crate) id: &'a str,
    pub(crate) title: &'a str,
    pub(crate) x_title: &'a str,
    pub(crate) y_title: &'a str,
    pub(crate) log: (bool, bool),
}

/// An SVG line chart in a `<figure>`; each series is a `<g class="series">` holding a
/// `<path class="line">` through its points, or a `<circle class="marker">` when it has only
/// one; the legend, a `<ul class="legend">` after the drawing, names every series and reference.
pub(super) fn chart(frame: &Frame<'_>, series: &[Series]) -> String {
    let Frame {
        id,
        title,
        x_title,
        y_title,
        log: (x_log, y_log),
    } = *frame;
    let drawn = |point: &&(f64, f64)| point.0.is_finite() && point.1.is_finite();
    if !series.iter().any(|s| s.points.iter().any(|p| drawn(&p))) {
        // A run that measured nothing (a failed one) gets a sentence, not empty axes.
        return format!(
            "<p class=\"empty-chart\">{}: nothing to draw, no response was measured.</p>\n",
            escape(title)
        );
    }
    let x = Axis::fit(
        series.iter().flat_map(|s| s.points.iter().map(|p| p.0)),
        x_log,
    );
    let y = Axis::fit(
        series.iter().flat_map(|s| {
            s.points.iter().map(|p| p.1).chain(
                s.bars
                    .iter()
                    .flat_map(|&(_, low, high)| std::iter::once(low).chain(high)),
            )
        }),
        y_log,
    );
    let (plot_width, plot_height) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let px = |value: f64| LEFT + x.fraction(value) * plot_width;
    let py = |value: f64| TOP + (1.0 - y.fraction(value)) * plot_height;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<figure><figcaption>{}</figcaption><svg id="{id}" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}">"#,
        escape(title)
    );
    let _ = write!(
        svg,
        r#"<rect x="{LEFT}" y="{TOP}" width="{plot_width}" height="{plot_height}" class="plot"/>"#
    );
    for tick in x.ticks() {
        let at = px(tick);
        let _ = write!(
            svg,
            r#"<line x1="{at:.1}" y1="{TOP}" x2="{at:.1}" y2="{:.1}" class="grid"/><text x="{at:.1}" y="{:.1}" class="tick" text-anchor="middle">{}</text>"#,
            TOP + plot_height,
            TOP + plot_height + 16.0,
            number(tick)
        );
    }
    for tick in y.ticks() {
        let at = py(tick);
        let _ = write!(
            svg,
            r#"<line x1="{LEFT}" y1="{at:.1}" x2="{:.1}" y2="{at:.1}" class="grid"/><text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{}</text>"#,
            LEFT + plot_width,
            LEFT - 6.0,
            at + 4.0,
            number(tick)
        );
    }
    let _ = write!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" class="axis" text-anchor="middle">{x_title}</text><text transform="translate(16 {:.1}) rotate(-90)" class="axis" text-anchor="middle">{y_title}</text>"#,
        LEFT + plot_width / 2.0,
        HEIGHT - 8.0,
        TOP + plot_height / 2.0
    );
    let mut legend = String::from(r#"<ul class="legend">"#);
    for (index, line) in series.iter().enumerate() {
        let color = COLORS[line.color_of.unwrap_or(index) % COLORS.len()];
        let points: Vec<(f64, f64)> = line
            .points
            .iter()
            .filter(drawn)
            .map(|(vx, vy)| (px(*vx), py(*vy)))
            .collect();
        let name = escape(&line.name);
        let (class, dash) = match line.reference {
            true => ("reference", r#" stroke-dasharray="6 4""#),
            false => ("series", ""),
        };
        let _ = write!(
            svg,
            r#"<g class="{class}" data-series="{name}" data-points="{}">"#,
            points.len()
        );
        if let [(cx, cy)] = points[..] {
            // A path through one point draws nothing: a lone point is a marker.
            let _ = write!(
                svg,
                r#"<circle class="marker" cx="{cx:.1}" cy="{cy:.1}" r="4" fill="{color}"/>"#
            );
        } else {
            let mut path = String::new();
            for (at, (x_px, y_px)) in points.iter().enumerate() {
                let _ = write!(
                    path,
                    "{}{x_px:.1} {y_px:.1} ",
                    if at == 0 { "M" } else { "L" }
                );
            }
            let _ = write!(
                svg,
                r#"<path class="line" d="{}" stroke="{color}"{dash}/>"#,
                path.trim_end()
            );
        }
        for &(at, low, high) in &line.bars {
            let (x_px, low_px) = (px(at), py(low));
            let high_px = high.map_or(TOP, py);
            if !(x_px.is_finite() && low_px.is_finite() && high_px.is_finite()) {
                continue;
            }
            let _ = write!(
                svg,
                r#"<path class="ci" d="M{:.1} {low_px:.1} H{:.1} M{x_px:.1} {low_px:.1} V{high_px:.1} M{:.1} {high_px:.1} H{:.1}" stroke="{color}"/>"#,
                x_px - 3.0,
                x_px + 3.0,
                x_px - 3.0,
                x_px + 3.0
            );
        }
        svg.push_str("</g>");
        let style = match line.reference {
            true => "dashed",
            false => "solid",
        };
        let _ = write!(
            legend,
            r#"<li><span class="swatch" style="border-top: 3px {style} {color}"></span>{name}</li>"#
        );
    }
    legend.push_str("</ul>");
    svg.push_str("</svg>");
    svg.push_str(&legend);
    svg.push_str("</figure>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_fit_and_tick() {
        let log = Axis::fit([3.0, 2000.0].into_iter(), true);
        assert_eq!((log.low, log.high), (1.0, 10_000.0));
        assert_eq!(log.ticks(), [1.0, 10.0, 100.0, 1000.0, 10_000.0]);
        let linear = Axis::fit([0.0, 97.0].into_iter(), false);
        assert_eq!(linear.ticks(), [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert!((linear.fraction(50.0) - 50.0 / 101.85).abs() < 1e-9);
        let labels: Vec<String> = [0.0, 0.2, 0.1 * 3.0, 0.0001, 1.5, 2500.0]
            .into_iter()
            .map(number)
            .collect();
        assert_eq!(labels, ["0", "0.2", "0.3", "0.0001", "1.5", "2.5k"]);
    }

    #[test]
    fn chart_has_one_path_per_series_and_a_legend_entry_for_each() {
        let series = [
            Series {
                name: "h1".into(),
                points: vec![(1.0, 10.0), (10.0, 90.0)],
                bars: vec![(1.0, 8.0, Some(12.0)), (10.0, 80.0, None)],
                reference: false,
                color_of: None,
            },
            Series::line("h2c <fast>".into(), vec![(1.0, 20.0), (10.0, 150.0)]),
            Series {
                reference: true,
                color_of: Some(0),
                ..Series::line("requested".into(), vec![(1.0, 100.0), (10.0, 100.0)])
            },
        ];
        let frame = Frame {
            id: "x",
            title: "t",
            x_title: "x",
            y_title: "y",
            log: (true, false),
        };
        let svg = chart(&frame, &series);
        assert_eq!(svg.matches(r#"class="series""#).count(), 2);
        assert_eq!(svg.matches(r#"class="reference""#).count(), 1);
        assert!(svg.contains(r##"stroke="#1f77b4" stroke-dasharray="6 4""##));
        assert!(svg.contains("h2c &lt;fast&gt;"));
        // One error bar per interval, an open one drawn to the top of the plot.
        assert_eq!(svg.matches(r#"class="ci""#).count(), 2);
        assert!(svg.contains(&format!(" V{TOP:.1} ")), "{svg}");
        // The legend is HTML after the drawing: an entry per line, none inside the SVG.
        let legend = &svg[svg.find("</svg>").unwrap()..];
        assert_eq!(legend.matches("<li>").count(), 3, "{legend}");
        assert!(legend.contains("dashed"));
        assert!(!svg[..svg.find("</svg>").unwrap()].contains("legend"));
        // Nothing measured: a sentence, not empty axes.
        let empty = chart(&frame, &[Series::line("h1".into(), Vec::new())]);
        assert!(!empty.contains("<svg"), "{empty}");
        assert!(empty.contains("t: nothing to draw"), "{empty}");
    }
}
