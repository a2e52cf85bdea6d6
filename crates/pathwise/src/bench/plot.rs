//! Figures from benchmark measurements, written as SVG (`--plot FILE.svg`).
//!
//! A benchmark describes what it measured as [`Figure`]s — a title, two axes with units, and
//! named series of (x, y) points — and [`write_svg`] draws them one below the other in one
//! file. Drawing goes through `plotters` with only its SVG backend: text is written as SVG
//! `<text>` elements that the viewer lays out, so no font files are read (plotters' built-in
//! size estimate places labels). Reference series (a seed paper's printed numbers) are drawn
//! dashed with hollow markers and say so in the legend.

use plotters::coord::Shift;
use plotters::coord::combinators::IntoLogRange;
use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::prelude::*;
use std::fmt::Debug;
use std::ops::Range;
use std::path::Path;

/// Width of the drawing, pixels.
const WIDTH: u32 = 900;
/// Height of one figure (panel), pixels.
const PANEL_HEIGHT: u32 = 520;

/// Series colours (the "Tableau 10" set: tell apart on white, and in print).
const COLOURS: [RGBColor; 10] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
];

/// One axis.
#[derive(Debug, Clone, Default)]
pub struct Axis {
    /// Label with its unit, e.g. "sessions" or "CPU (% of one core)".
    pub label: String,
    /// Logarithmic scale (every value must then be positive).
    pub log: bool,
    /// Named positions instead of numbers (x only): point `x = i` sits at `categories[i]`.
    pub categories: Vec<String>,
}

impl Axis {
    /// A linear axis.
    pub fn linear(label: impl Into<String>) -> Axis {
        Axis {
            label: label.into(),
            ..Axis::default()
        }
    }

    /// A logarithmic axis.
    pub fn log(label: impl Into<String>) -> Axis {
        Axis {
            label: label.into(),
            log: true,
            ..Axis::default()
        }
    }

    /// An axis of named positions 0, 1, 2 ….
    pub fn categories(label: impl Into<String>, names: Vec<String>) -> Axis {
        Axis {
            label: label.into(),
            categories: names,
            ..Axis::default()
        }
    }
}

/// One named series of points.
#[derive(Debug, Clone)]
pub struct Series {
    /// Name in the legend.
    pub name: String,
    /// The points, in drawing order.
    pub points: Vec<(f64, f64)>,
    /// A reference from a paper, not our measurement: drawn dashed with hollow markers.
    pub reference: bool,
}

impl Series {
    /// A measured series.
    pub fn measured(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            reference: false,
        }
    }

    /// A reference series (the name should cite where the numbers come from).
    pub fn reference(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            reference: true,
        }
    }
}

/// Where the legend goes inside the plot area.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Legend {
    /// Upper left corner.
    #[default]
    UpperLeft,
    /// Upper right corner.
    UpperRight,
    /// Lower left corner.
    LowerLeft,
    /// Lower right corner.
    LowerRight,
}

/// One figure: a panel of the SVG.
#[derive(Debug, Clone)]
pub struct Figure {
    /// Title above the plot.
    pub title: String,
    /// Horizontal axis.
    pub x: Axis,
    /// Vertical axis.
    pub y: Axis,
    /// The series.
    pub series: Vec<Series>,
    /// Legend position.
    pub legend: Legend,
}

impl Figure {
    /// A figure with no series yet.
    pub fn new(title: impl Into<String>, x: Axis, y: Axis) -> Figure {
        Figure {
            title: title.into(),
            x,
            y,
            series: Vec::new(),
            legend: Legend::default(),
        }
    }

    /// Add a series.
    pub fn with(mut self, s: Series) -> Figure {
        self.series.push(s);
        self
    }

    /// Put the legend elsewhere.
    pub fn legend(mut self, at: Legend) -> Figure {
        self.legend = at;
        self
    }
}

/// Why a figure could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// Nothing to draw.
    #[error("no figures to draw")]
    NoFigures,
    /// A figure without series.
    #[error("figure {figure:?} has no series")]
    NoSeries {
        /// Title.
        figure: String,
    },
    /// A series without points.
    #[error("series {series:?} of figure {figure:?} has no points")]
    EmptySeries {
        /// Title.
        figure: String,
        /// Series name.
        series: String,
    },
    /// NaN or infinite coordinates.
    #[error("series {series:?} of figure {figure:?} has a point that is not finite: ({x}, {y})")]
    NotFinite {
        /// Title.
        figure: String,
        /// Series name.
        series: String,
        /// x.
        x: f64,
        /// y.
        y: f64,
    },
    /// A value that a logarithmic axis cannot show.
    #[error("series {series:?} of figure {figure:?}: {value} on a logarithmic axis")]
    NotPositiveOnLogAxis {
        /// Title.
        figure: String,
        /// Series name.
        series: String,
        /// The value.
        value: f64,
    },
    /// A point off the named positions of a category axis.
    #[error("series {series:?} of figure {figure:?}: x = {x} is not one of the {n} categories")]
    NotACategory {
        /// Title.
        figure: String,
        /// Series name.
        series: String,
        /// x.
        x: f64,
        /// Categories.
        n: usize,
    },
    /// plotters failed.
    #[error("drawing failed: {0}")]
    Drawing(String),
    /// Writing the file failed.
    #[error("writing {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
}

fn drawing<E: Debug>(e: E) -> PlotError {
    PlotError::Drawing(format!("{e:?}"))
}

/// Pixel rectangle of one figure's plot area, as drawn.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PlotArea {
    /// Horizontal pixel range.
    pub x: Range<i32>,
    /// Vertical pixel range.
    pub y: Range<i32>,
}

/// Check a figure before drawing it.
fn validate(f: &Figure) -> Result<(), PlotError> {
    if f.series.is_empty() {
        return Err(PlotError::NoSeries {
            figure: f.title.clone(),
        });
    }
    for s in &f.series {
        let err = |value| PlotError::NotPositiveOnLogAxis {
            figure: f.title.clone(),
            series: s.name.clone(),
            value,
        };
        if s.points.is_empty() {
            return Err(PlotError::EmptySeries {
                figure: f.title.clone(),
                series: s.name.clone(),
            });
        }
        for &(x, y) in &s.points {
            if !x.is_finite() || !y.is_finite() {
                return Err(PlotError::NotFinite {
                    figure: f.title.clone(),
                    series: s.name.clone(),
                    x,
                    y,
                });
            }
            if f.x.log && x <= 0.0 {
                return Err(err(x));
            }
            if f.y.log && y <= 0.0 {
                return Err(err(y));
            }
            let n = f.x.categories.len();
            if n > 0 && (x.fract() != 0.0 || x < 0.0 || x >= n as f64) {
                return Err(PlotError::NotACategory {
                    figure: f.title.clone(),
                    series: s.name.clone(),
                    x,
                    n,
                });
            }
        }
    }
    Ok(())
}

/// The range an axis shows for these values: a margin around them, from zero on a linear
/// axis whose values are all positive (so curves are read against the origin, as in the
/// seeds' figures), a factor of margin on a log axis.
pub(crate) fn axis_range(values: impl Iterator<Item = f64> + Clone, log: bool) -> Range<f64> {
    let lo = values.clone().fold(f64::INFINITY, f64::min);
    let hi = values.fold(f64::NEG_INFINITY, f64::max);
    if log {
        let (lo, hi) = if lo == hi {
            (lo / 2.0, hi * 2.0)
        } else {
            (lo, hi)
        };
        let margin = (hi / lo).powf(0.05);
        return lo / margin..hi * margin;
    }
    let lo = if lo >= 0.0 { 0.0 } else { lo };
    let span = if hi > lo { hi - lo } else { hi.abs().max(1.0) };
    lo - if lo < 0.0 { span * 0.05 } else { 0.0 }..hi + span * 0.08
}

/// A tick label: no trailing zeros; millions as "M" and tens of thousands as "k" when that
/// says the value exactly.
pub(crate) fn tick(v: f64) -> String {
    let a = v.abs();
    let scaled = |unit: f64, suffix: &str| {
        let s = v / unit;
        ((s * 100.0).fract() == 0.0).then(|| trim(format!("{s:.2}")) + suffix)
    };
    if a == 0.0 {
        "0".into()
    } else if let Some(s) = (a >= 1e6).then(|| scaled(1e6, "M")).flatten() {
        s
    } else if let Some(s) = (a >= 1e4).then(|| scaled(1e3, "k")).flatten() {
        s
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        trim(format!("{v:.2}"))
    } else {
        trim(format!("{v:.3}"))
    }
}

fn trim(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Draw the figures, one below the other; the SVG text and each figure's plot area.
pub(crate) fn render(figures: &[Figure]) -> Result<(String, Vec<PlotArea>), PlotError> {
    if figures.is_empty() {
        return Err(PlotError::NoFigures);
    }
    for f in figures {
        validate(f)?;
    }
    let mut svg = String::new();
    let mut areas = Vec::new();
    {
        let height = PANEL_HEIGHT * figures.len() as u32;
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(drawing)?;
        let panels = root.split_evenly((figures.len(), 1));
        for (f, panel) in figures.iter().zip(&panels) {
            areas.push(panel_dispatch(panel, f)?);
        }
        root.present().map_err(drawing)?;
    }
    Ok((svg, areas))
}

/// Draw the figures into `path` as one SVG.
pub fn write_svg(path: &Path, figures: &[Figure]) -> Result<(), PlotError> {
    let (svg, _) = render(figures)?;
    std::fs::write(path, svg).map_err(|source| PlotError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// Pick the coordinate types for the figure's axes and draw it.
fn panel_dispatch(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    f: &Figure,
) -> Result<PlotArea, PlotError> {
    let xs = f.series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let ys = f.series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let yr = axis_range(ys, f.y.log);
    if !f.x.categories.is_empty() {
        let n = f.x.categories.len();
        // Tick marks at whole numbers only: `x_labels(n)` below allows no finer step.
        let xr = -0.5..n as f64 - 0.5;
        return if f.y.log {
            panel(area, f, xr, yr.log_scale())
        } else {
            panel(area, f, xr, yr)
        };
    }
    let xr = axis_range(xs, f.x.log);
    match (f.x.log, f.y.log) {
        (false, false) => panel(area, f, xr, yr),
        (true, false) => panel(area, f, xr.log_scale(), yr),
        (false, true) => panel(area, f, xr, yr.log_scale()),
        (true, true) => panel(area, f, xr.log_scale(), yr.log_scale()),
    }
}

/// Draw one figure into its panel, whatever the axes' scales.
fn panel<X, Y>(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    f: &Figure,
    x: X,
    y: Y,
) -> Result<PlotArea, PlotError>
where
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let mut chart = ChartBuilder::on(area)
        .caption(&f.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(x, y)
        .map_err(drawing)?;
    let names = &f.x.categories;
    // Counts (workers, sessions) get no fractional ticks.
    let x_whole = f
        .series
        .iter()
        .all(|s| s.points.iter().all(|p| p.0.fract() == 0.0));
    // Tick positions are computed in steps (0.2 × 10 is not exactly 2): round first.
    let near_whole = |v: f64| (v - v.round()).abs() < 1e-9;
    let x_fmt = |v: &f64| {
        if names.is_empty() {
            match (x_whole, near_whole(*v)) {
                (true, false) => String::new(),
                (true, true) => tick(v.round()),
                _ => tick(*v),
            }
        } else {
            let name = (near_whole(*v) && *v >= -0.5).then(|| names.get(v.round() as usize));
            name.flatten().cloned().unwrap_or_default()
        }
    };
    let y_fmt = |v: &f64| tick(*v);
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(f.x.label.as_str())
        .y_desc(f.y.label.as_str())
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 15))
        .light_line_style(RGBColor(235, 235, 235));
    if !names.is_empty() {
        mesh.x_labels(names.len()).disable_x_mesh();
    }
    mesh.draw().map_err(drawing)?;

    let line_between = names.is_empty();
    for (i, s) in f.series.iter().enumerate() {
        let color = COLOURS[i % COLOURS.len()].to_rgba();
        let pts = s.points.iter().copied();
        if s.reference {
            if line_between {
                chart
                    .draw_series(DashedLineSeries::new(
                        pts.clone(),
                        6,
                        4,
                        color.stroke_width(2),
                    ))
                    .map_err(drawing)?;
            }
            chart
                .draw_series(pts.map(|p| Circle::new(p, 4, color.stroke_width(2))))
                .map_err(drawing)?
                .label(s.name.as_str())
                .legend(move |(x, y)| Circle::new((x + 10, y), 4, color.stroke_width(2)));
        } else {
            if line_between {
                chart
                    .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                    .map_err(drawing)?;
            }
            chart
                .draw_series(pts.map(|p| Circle::new(p, 4, color.filled())))
                .map_err(drawing)?
                .label(s.name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(3))
                });
        }
    }
    let position = match f.legend {
        Legend::UpperLeft => SeriesLabelPosition::UpperLeft,
        Legend::UpperRight => SeriesLabelPosition::UpperRight,
        Legend::LowerLeft => SeriesLabelPosition::LowerLeft,
        Legend::LowerRight => SeriesLabelPosition::LowerRight,
    };
    chart
        .configure_series_labels()
        .position(position)
        .label_font(("sans-serif", 13))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(drawing)?;
    let (x, y) = chart.plotting_area().get_pixel_range();
    Ok(PlotArea { x, y })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Minimal well-formedness: one root `<svg …>` element, every element closed in order.
    pub(crate) fn assert_well_formed(svg: &str) {
        let body = svg.trim_start();
        let body = body
            .strip_prefix("<?xml")
            .map(|r| &r[r.find("?>").expect("xml declaration closed") + 2..])
            .unwrap_or(body)
            .trim_start();
        assert!(
            body.starts_with("<svg"),
            "starts with <svg: {}",
            &body[..40]
        );
        let mut stack: Vec<&str> = Vec::new();
        let mut rest = body;
        while let Some(open) = rest.find('<') {
            let close = rest[open..].find('>').expect("tag closed") + open;
            let tag = &rest[open + 1..close];
            rest = &rest[close + 1..];
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(stack.pop(), Some(name.trim()), "closing </{name}>");
            } else if !tag.ends_with('/') && !tag.starts_with('!') && !tag.starts_with('?') {
                let name = tag.split_whitespace().next().expect("tag name");
                stack.push(name);
            }
            if stack.is_empty() {
                assert!(rest.trim().is_empty(), "content after </svg>");
                return;
            }
        }
        panic!("unclosed elements: {stack:?}");
    }

    /// The contents of the `<text>` elements, trimmed.
    pub(crate) fn texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .map(|t| {
                let body = &t[t.find('>').expect("closed") + 1..];
                body[..body.find("</text>").expect("text closed")]
                    .trim()
                    .to_string()
            })
            .collect()
    }

    /// The centres of the point markers (`<circle cx cy>`).
    fn circles(svg: &str) -> Vec<(f64, f64)> {
        let attr = |tag: &str, name: &str| -> f64 {
            let at = tag.find(&format!(" {name}=\"")).expect("attribute") + name.len() + 3;
            let end = tag[at..].find('"').expect("quoted") + at;
            tag[at..end].parse().expect("number")
        };
        svg.split("<circle")
            .skip(1)
            .map(|t| {
                let t = &t[..t.find('>').expect("closed")];
                (attr(t, "cx"), attr(t, "cy"))
            })
            .collect()
    }

    fn two_series() -> Figure {
        Figure::new(
            "cost against sessions",
            Axis::linear("sessions"),
            Axis::linear("ns per message"),
        )
        .with(Series::measured(
            "Path new",
            vec![(1000.0, 900.0), (10_000.0, 1100.0), (100_000.0, 1600.0)],
        ))
        .with(Series::reference(
            "KOM (seed 001 Table II)",
            vec![(2500.0, 4.39), (50_000.0, 67.99)],
        ))
    }

    #[test]
    fn svg_is_well_formed_and_names_axes_and_series() {
        let (svg, areas) = render(&[two_series()]).unwrap();
        assert_well_formed(&svg);
        let t = texts(&svg);
        for text in [
            "cost against sessions",
            "sessions",
            "ns per message",
            "Path new",
            "KOM (seed 001 Table II)",
            "100k",
        ] {
            assert!(t.iter().any(|s| s == text), "{text} missing from {t:?}");
        }
        assert_eq!(areas.len(), 1);
        // The reference is dashed: more line pieces than points.
        assert!(svg.matches("<polyline").count() >= 3);
    }

    #[test]
    fn every_point_is_drawn_inside_its_plot_area() {
        let second = Figure::new("second", Axis::log("IPs"), Axis::log("replies/s")).with(
            Series::measured("1 worker", vec![(10.0, 9e4), (363.0, 3e3)]),
        );
        let (svg, areas) = render(&[two_series(), second]).unwrap();
        let c = circles(&svg);
        // 3 + 2 markers and the reference's legend marker (drawn last, inside the plot
        // area), then the second panel's 2.
        assert_eq!(c.len(), 8, "{c:?}");
        assert_eq!(areas.len(), 2);
        assert!(areas[0].y.end <= areas[1].y.start, "panels stacked");
        for (i, &(x, y)) in c.iter().enumerate() {
            let a = if i < 6 { &areas[0] } else { &areas[1] };
            assert!(
                (a.x.start as f64..=a.x.end as f64).contains(&x)
                    && (a.y.start as f64..=a.y.end as f64).contains(&y),
                "point {i} at ({x}, {y}) outside {a:?}"
            );
        }
        // Larger y is drawn higher (smaller pixel y).
        assert!(c[2].1 < c[0].1);
    }

    #[test]
    fn log_axis_spaces_decades_evenly() {
        let f = Figure::new("log", Axis::log("x"), Axis::linear("y")).with(Series::measured(
            "s",
            vec![(10.0, 1.0), (100.0, 1.0), (1000.0, 1.0), (10_000.0, 1.0)],
        ));
        let c = circles(&render(&[f]).unwrap().0);
        assert_eq!(c.len(), 4);
        let gaps: Vec<f64> = c.windows(2).map(|w| w[1].0 - w[0].0).collect();
        for g in &gaps {
            assert!((g - gaps[0]).abs() <= 1.0, "uneven decades {gaps:?}");
            assert!(*g > 100.0);
        }
        // The same points on a linear axis are not evenly spaced.
        let f = Figure::new("lin", Axis::linear("x"), Axis::linear("y")).with(Series::measured(
            "s",
            vec![(10.0, 1.0), (100.0, 1.0), (1000.0, 1.0), (10_000.0, 1.0)],
        ));
        let c = circles(&render(&[f]).unwrap().0);
        assert!(c[3].0 - c[2].0 > 5.0 * (c[2].0 - c[1].0));
    }

    #[test]
    fn log_axis_refuses_zero() {
        let f = Figure::new("log", Axis::linear("x"), Axis::log("y"))
            .with(Series::measured("s", vec![(1.0, 0.0)]));
        assert!(matches!(
            render(&[f]),
            Err(PlotError::NotPositiveOnLogAxis { value, .. }) if value == 0.0
        ));
    }

    #[test]
    fn empty_inputs_are_errors() {
        assert!(matches!(render(&[]), Err(PlotError::NoFigures)));
        let f = Figure::new("t", Axis::linear("x"), Axis::linear("y"));
        assert!(matches!(
            render(std::slice::from_ref(&f)),
            Err(PlotError::NoSeries { .. })
        ));
        let f = f.with(Series::measured("nothing", vec![]));
        assert!(matches!(
            render(&[f]),
            Err(PlotError::EmptySeries { series, .. }) if series == "nothing"
        ));
        let f = Figure::new("t", Axis::linear("x"), Axis::linear("y"))
            .with(Series::measured("nan", vec![(1.0, f64::NAN)]));
        assert!(matches!(render(&[f]), Err(PlotError::NotFinite { .. })));
    }

    #[test]
    fn categories_label_the_x_axis() {
        let names = vec!["direct".to_string(), "null".into(), "lz4".into()];
        let f = Figure::new(
            "throughput",
            Axis::categories("setup", names),
            Axis::linear("Mbit/s"),
        )
        .with(Series::measured(
            "text",
            vec![(0.0, 9.5), (1.0, 9.4), (2.0, 20.0)],
        ));
        let (svg, _) = render(std::slice::from_ref(&f)).unwrap();
        let t = texts(&svg);
        for n in ["direct", "null", "lz4"] {
            assert!(t.iter().any(|s| s == n), "{n} missing from {t:?}");
        }
        // No tick between two categories.
        assert!(
            !t.iter()
                .any(|s| s.parse::<f64>().is_ok_and(|v| v.fract() != 0.0))
        );
        let c = circles(&svg);
        assert!(c[0].0 < c[1].0 && c[1].0 < c[2].0);
        let bad = f.with(Series::measured("off", vec![(3.0, 1.0)]));
        assert!(matches!(
            render(&[bad]),
            Err(PlotError::NotACategory { .. })
        ));
    }

    #[test]
    fn whole_number_axes_label_every_whole_tick() {
        let f = Figure::new("w", Axis::linear("worker threads"), Axis::linear("y"))
            .with(Series::measured("s", vec![(1.0, 100.0), (2.0, 200.0)]));
        let t = texts(&render(&[f]).unwrap().0);
        for want in ["0", "1", "2"] {
            assert!(t.iter().any(|s| s == want), "{want} missing from {t:?}");
        }
        assert!(
            !t.iter().any(|s| s.contains('.')),
            "fractional tick in {t:?}"
        );
    }

    #[test]
    fn ticks_read_well() {
        assert_eq!(tick(0.0), "0");
        assert_eq!(tick(50_000.0), "50k");
        assert_eq!(tick(12_345.0), "12345");
        assert_eq!(tick(1_200_000.0), "1.2M");
        assert_eq!(tick(12_500.0), "12.5k");
        assert_eq!(tick(2.5), "2.5");
        assert_eq!(tick(0.125), "0.125");
        assert_eq!(tick(2_000_000.0), "2M");
        let r = axis_range([1.0, 5.0].into_iter(), false);
        assert_eq!(r.start, 0.0);
        assert!(r.end > 5.0);
        let r = axis_range([10.0, 1000.0].into_iter(), true);
        assert!(r.start < 10.0 && r.start > 0.0 && r.end > 1000.0);
    }

    #[test]
    fn text_is_escaped() {
        let f = Figure::new("a < b & c", Axis::linear("µs"), Axis::linear("y"))
            .with(Series::measured("x<y", vec![(1.0, 1.0)]));
        let (svg, _) = render(&[f]).unwrap();
        assert_well_formed(&svg);
        assert!(svg.contains("a &lt; b &amp; c"));
        assert!(svg.contains("µs"));
    }

    #[test]
    fn writes_the_file() {
        let dir = std::env::temp_dir().join(format!("pathwise-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f.svg");
        write_svg(&path, &[two_series()]).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert_well_formed(&svg);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(matches!(
            write_svg(&dir.join("missing/f.svg"), &[two_series()]),
            Err(PlotError::Io { .. })
        ));
    }
}
