//! SVG line charts of the scaling experiments (value against CPUs, one line per case), shared by
//! the SVG files of a run folder and its HTML report (html/): each point the median over the
//! repetitions of its boot with a min..max whisker, points measured with more CPUs than the
//! host has cores drawn hollow over a shaded band, exact (det/icount) series marked exact.
//!
//! Hand-written SVG rather than the plotters crate: a chart here is a few axes, ticks,
//! polylines and a legend, and writing that directly costs no dependency build on the
//! 2-core hosts this project is developed on (and needs no font handling: SVG text is
//! rendered by the viewer).

use crate::bench::{BenchRecord, Boot, Spread};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const WIDTH: f64 = 860.0;
const HEIGHT: f64 = 440.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 300.0;
const TOP: f64 = 44.0;
const BOTTOM: f64 = 60.0;
/// Pixels between a tick label and its axis (and the tick mark's length).
const TICK_GAP: f64 = 8.0;
/// Pixels between the largest x and the plot's right edge.
const X_PAD: f64 = 20.0;
/// Pixels between the series at one x when the chart has whiskers.
const DODGE: f64 = 5.0;
const COLORS: &[&str] = &[
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// One point of a series: the median over repetitions and their min..max.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub x: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Repetitions behind the point (a whisker needs two).
    pub n: usize,
}

impl Point {
    /// A point measured once (no whisker).
    pub fn single(x: f64, y: f64) -> Point {
        Point {
            x,
            median: y,
            min: y,
            max: y,
            n: 1,
        }
    }
}

/// One line of a chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    /// Points, drawn in order of x.
    pub points: Vec<Point>,
    /// Measured in a deterministic boot (det, icount): the value repeats exactly.
    pub exact: bool,
}

/// A chart: its identity in a page, its labels, its series, and the host's cores when its
/// points ran on host time (None: a deterministic boot, where oversubscription does not
/// exist: the vCPUs run one after another on one host thread).
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// The `<svg>` element's id.
    pub id: String,
    /// The `<svg>` element's class (`chart exp-` and the experiment's name).
    pub class: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    pub host_cpus: Option<usize>,
}

/// `s` escaped for SVG (XML) text and attribute values.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A round step giving about `n` ticks over `span`.
fn nice_step(span: f64, n: f64) -> f64 {
    let raw = (span / n).max(f64::MIN_POSITIVE);
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

/// `v` with at most `decimals` decimals, trailing zeros (and a bare point) dropped.
fn trimmed(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" {
        "0".into()
    } else {
        s
    }
}

/// A short tick label: `15M`, `1.2k`, `0.5`, `0.002` (SI suffixes k, M, G, T from a thousand).
pub fn tick_label(v: f64) -> String {
    let a = v.abs();
    for (scale, suffix) in [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")] {
        if a >= scale {
            return format!("{}{suffix}", trimmed(v / scale, 2));
        }
    }
    trimmed(v, 6)
}

/// Where the y axis runs: (lowest tick, highest tick, step), from 0 (or below it for negative
/// values) to a round value at or above the highest whisker.
fn y_range(series: &[Series]) -> (f64, f64, f64) {
    let pts = series.iter().flat_map(|s| &s.points);
    let hi = pts.clone().map(|p| p.max.max(p.median)).fold(0.0, f64::max);
    let lo = pts.map(|p| p.min.min(p.median)).fold(0.0, f64::min);
    let span = if hi - lo > 0.0 { hi - lo } else { 1.0 };
    let step = nice_step(span, 5.0);
    let bottom = (lo / step).floor() * step;
    let top = ((hi / step).ceil() * step).max(bottom + step);
    (bottom, top, step)
}

/// The x values that get a tick: every x that occurs, or round steps when there are many.
fn x_ticks(series: &[Series], x_max: f64) -> Vec<f64> {
    let mut xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.x))
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    if xs.len() <= 12 {
        return xs;
    }
    let step = nice_step(x_max, 8.0);
    (0..)
        .map(|i| i as f64 * step)
        .take_while(|x| *x <= x_max * 1.0001)
        .collect()
}

/// A complete SVG document: a line chart with axes, ticks, whiskers and a legend.
pub fn line_chart(chart: &Chart) -> String {
    let series = &chart.series;
    let x_max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.x))
        .fold(1.0f64, f64::max);
    let (y_bottom, y_top, y_step) = y_range(series);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    // The last x sits X_PAD inside the plot's right edge: room for dodged points and whiskers.
    let px = |x: f64| LEFT + x / x_max * (plot_w - X_PAD);
    let py = |y: f64| TOP + plot_h - (y - y_bottom) / (y_top - y_bottom) * plot_h;
    // Oversubscribed: points at more CPUs than the host has cores (host-time boots only).
    let over_x: Vec<f64> = match chart.host_cpus {
        Some(h) => {
            let mut xs: Vec<f64> = series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.x))
                .filter(|x| *x > h as f64)
                .collect();
            xs.sort_by(f64::total_cmp);
            xs
        }
        None => Vec::new(),
    };
    let hollow = |x: f64| chart.host_cpus.is_some_and(|h| x > h as f64);
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"{}\" class=\"{}\" width=\"{WIDTH}\" \
         height=\"{HEIGHT}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" font-family=\"sans-serif\" \
         font-size=\"14\" role=\"img\" aria-label=\"{}\">",
        escape(&chart.id),
        escape(&chart.class),
        escape(&chart.title)
    );
    let _ = writeln!(svg, "<title>{}</title>", escape(&chart.title));
    let _ = writeln!(svg, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>");
    let _ = writeln!(
        svg,
        "<text x=\"{:.1}\" y=\"24\" font-size=\"16\" text-anchor=\"middle\">{}</text>",
        WIDTH / 2.0,
        escape(&chart.title)
    );
    // The oversubscribed band: from halfway between the host's core count and the first x
    // above it to the right edge of the plot.
    if let (Some(h), Some(first)) = (chart.host_cpus, over_x.first()) {
        let start = px((h as f64 + first) / 2.0).max(LEFT);
        let _ = writeln!(
            svg,
            "<rect class=\"oversubscribed\" x=\"{start:.1}\" y=\"{TOP}\" width=\"{:.1}\" \
             height=\"{plot_h:.1}\" fill=\"#f2dede\" fill-opacity=\"0.6\"/>",
            LEFT + plot_w - start
        );
    }
    // Y grid and ticks, labels right-aligned TICK_GAP away from the axis.
    let mut i = 0;
    loop {
        let y = y_bottom + i as f64 * y_step;
        if y > y_top + y_step * 1e-6 {
            break;
        }
        let _ = writeln!(
            svg,
            "<line x1=\"{LEFT}\" y1=\"{0:.1}\" x2=\"{1:.1}\" y2=\"{0:.1}\" stroke=\"#ddd\"/>\
             <line x1=\"{2:.1}\" y1=\"{0:.1}\" x2=\"{LEFT}\" y2=\"{0:.1}\" stroke=\"black\"/>\
             <text class=\"ytick\" x=\"{3:.1}\" y=\"{4:.1}\" text-anchor=\"end\">{5}</text>",
            py(y),
            LEFT + plot_w,
            LEFT - TICK_GAP / 2.0,
            LEFT - TICK_GAP,
            py(y) + 5.0,
            tick_label(y)
        );
        i += 1;
    }
    for x in x_ticks(series, x_max) {
        let _ = writeln!(
            svg,
            "<line x1=\"{0:.1}\" y1=\"{1:.1}\" x2=\"{0:.1}\" y2=\"{2:.1}\" stroke=\"black\"/>\
             <text class=\"xtick\" x=\"{0:.1}\" y=\"{3:.1}\" text-anchor=\"middle\">{4}</text>",
            px(x),
            TOP + plot_h,
            TOP + plot_h + TICK_GAP / 2.0,
            TOP + plot_h + TICK_GAP + 14.0,
            tick_label(x)
        );
    }
    let _ = writeln!(
        svg,
        "<line x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{0:.1}\" stroke=\"black\"/>\
         <line x1=\"{LEFT}\" y1=\"{0:.1}\" x2=\"{1:.1}\" y2=\"{0:.1}\" stroke=\"black\"/>",
        TOP + plot_h,
        LEFT + plot_w
    );
    let _ = writeln!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
        LEFT + plot_w / 2.0,
        HEIGHT - 16.0,
        escape(&chart.x_label)
    );
    let _ = writeln!(
        svg,
        "<text transform=\"translate(16,{:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
        TOP + plot_h / 2.0,
        escape(&chart.y_label)
    );
    // With whiskers, each series is shifted a few pixels sideways (dodged), so that whiskers of
    // different cases at one CPU count do not hide each other.
    let has_whiskers = series
        .iter()
        .flat_map(|s| &s.points)
        .any(|p| p.n >= 2 && p.max > p.min);
    let dodge = |i: usize| {
        if has_whiskers {
            (i as f64 - (series.len() as f64 - 1.0) / 2.0) * DODGE
        } else {
            0.0
        }
    };
    let lx = LEFT + plot_w + 16.0;
    let mut ly = TOP + 8.0;
    let mut whiskers = 0;
    for (i, s) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let mut pts = s.points.clone();
        pts.sort_by(|a, b| a.x.total_cmp(&b.x));
        let path: Vec<String> = pts
            .iter()
            .map(|p| format!("{:.1},{:.1}", px(p.x) + dodge(i), py(p.median)))
            .collect();
        let _ = writeln!(
            svg,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>",
            path.join(" ")
        );
        for p in &pts {
            let (x, y) = (px(p.x) + dodge(i), py(p.median));
            if p.n >= 2 && p.max > p.min {
                whiskers += 1;
                let (y0, y1) = (py(p.min), py(p.max));
                let _ = writeln!(
                    svg,
                    "<path class=\"whisker\" d=\"M{x:.1},{y0:.1}V{y1:.1}M{0:.1},{y0:.1}H{1:.1}\
                     M{0:.1},{y1:.1}H{1:.1}\" stroke=\"{color}\" stroke-width=\"1.2\"/>",
                    x - 4.0,
                    x + 4.0
                );
            }
            if hollow(p.x) {
                let _ = writeln!(
                    svg,
                    "<circle class=\"hollow\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"4\" fill=\"white\" \
                     stroke=\"{color}\" stroke-width=\"2\"/>"
                );
            } else {
                let _ = writeln!(
                    svg,
                    "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3.5\" fill=\"{color}\"/>"
                );
            }
        }
        let _ = writeln!(
            svg,
            "<line x1=\"{lx}\" y1=\"{ly}\" x2=\"{0}\" y2=\"{ly}\" stroke=\"{color}\" stroke-width=\"2\"/>\
             <circle cx=\"{1}\" cy=\"{ly}\" r=\"3.5\" fill=\"{color}\"/>\
             <text class=\"legend\" x=\"{2}\" y=\"{3}\">{4}{5}</text>",
            lx + 22.0,
            lx + 11.0,
            lx + 28.0,
            ly + 4.0,
            escape(&s.name),
            if s.exact { " (exact)" } else { "" }
        );
        ly += 20.0;
    }
    ly += 6.0;
    if series.iter().any(|s| s.exact) {
        let _ = writeln!(
            svg,
            "<text class=\"legend exact\" x=\"{lx}\" y=\"{}\">exact: repeats run to \
             run</text>",
            ly + 4.0
        );
        ly += 20.0;
    }
    if whiskers > 0 {
        let _ = writeln!(
            svg,
            "<path d=\"M{0},{1}V{2}M{3},{1}H{4}M{3},{2}H{4}\" stroke=\"#444\" stroke-width=\"1.2\"/>\
             <text class=\"legend\" x=\"{5}\" y=\"{6}\">min..max over repetitions</text>",
            lx + 11.0,
            ly - 5.0,
            ly + 7.0,
            lx + 7.0,
            lx + 15.0,
            lx + 28.0,
            ly + 4.0
        );
        ly += 20.0;
    }
    if let (Some(h), Some(most)) = (chart.host_cpus, over_x.last()) {
        let _ = writeln!(
            svg,
            "<rect x=\"{lx}\" y=\"{0}\" width=\"22\" height=\"14\" fill=\"#f2dede\"/>\
             <circle cx=\"{1}\" cy=\"{ly}\" r=\"4\" fill=\"white\" stroke=\"#444\" stroke-width=\"2\"/>\
             <text class=\"legend oversubscribed\" x=\"{2}\" y=\"{3}\" font-size=\"12.5\">\
             oversubscribed: {most} vCPUs &gt; {h} host cores</text>",
            ly - 7.0,
            lx + 11.0,
            lx + 28.0,
            ly + 4.0
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// A chart of one bench/metric/boot, and the file name it is written under.
pub struct ScalingChart {
    pub bench: String,
    pub metric: String,
    pub boot: Boot,
    /// `BENCH-METRIC-BOOT.svg`.
    pub file: String,
    pub chart: Chart,
}

/// One chart per bench/metric/boot measured at more than one CPU count: one series per case
/// (and kernel, with the Linux twin), each point the median over the boot's repetitions with
/// their min..max; `host_cpus` (the host's cores) marks the oversubscribed points of host-time
/// boots.
pub fn scaling(records: &[BenchRecord], host_cpus: usize) -> Vec<ScalingChart> {
    type Group<'a> = BTreeMap<(&'a str, &'a str, Boot), Vec<&'a BenchRecord>>;
    let mut groups: Group = BTreeMap::new();
    for r in records {
        groups
            .entry((&r.bench, &r.metric, r.boot))
            .or_default()
            .push(r);
    }
    let mut out = Vec::new();
    for ((bench, metric, boot), rows) in groups {
        let mut cpus: Vec<u32> = rows.iter().map(|r| r.cpus).collect();
        cpus.sort_unstable();
        cpus.dedup();
        if cpus.len() < 2 {
            continue;
        }
        let kernels: Vec<&str> = {
            let mut k: Vec<&str> = rows.iter().map(|r| r.kernel.as_str()).collect();
            k.sort_unstable();
            k.dedup();
            k
        };
        let mut values: BTreeMap<(usize, u32), Vec<f64>> = BTreeMap::new();
        let mut lines: Vec<(&str, &str)> = Vec::new();
        for r in &rows {
            let line = (r.kernel.as_str(), r.case.as_str());
            if !lines.contains(&line) {
                lines.push(line);
            }
            let i = lines.iter().position(|l| *l == line).unwrap_or(0);
            values.entry((i, r.cpus)).or_default().push(r.value);
        }
        let series: Vec<Series> = lines
            .iter()
            .enumerate()
            .map(|(i, (kernel, case))| Series {
                name: if kernels.len() > 1 || *kernel != "numalab" {
                    format!("{case} ({kernel})")
                } else {
                    case.to_string()
                },
                points: values
                    .iter()
                    .filter(|((c, _), _)| *c == i)
                    .filter_map(|((_, n), v)| {
                        let s = Spread::of(v)?;
                        Some(Point {
                            x: f64::from(*n),
                            median: s.median,
                            min: s.min,
                            max: s.max,
                            n: s.n,
                        })
                    })
                    .collect(),
                exact: boot.deterministic(),
            })
            .collect();
        let unit = &rows[0].unit;
        let boot_name = boot.name();
        out.push(ScalingChart {
            bench: bench.to_string(),
            metric: metric.to_string(),
            boot,
            file: format!("{bench}-{metric}-{boot_name}.svg"),
            chart: Chart {
                id: format!("chart-{bench}-{metric}-{boot_name}"),
                class: format!("chart exp-{bench}"),
                title: if boot.deterministic() {
                    format!("{bench}: {metric} ({boot_name} boot, exact)")
                } else {
                    format!("{bench}: {metric} ({boot_name} boot, median of repetitions)")
                },
                x_label: "CPUs taking part".into(),
                y_label: format!("{metric} [{unit}]"),
                series,
                host_cpus: (!boot.deterministic()).then_some(host_cpus),
            },
        });
    }
    out
}

/// Writes the charts of `scaling(records, host_cpus)` into `dir` (`BENCH-METRIC-BOOT.svg`) and
/// returns the files written.
pub fn scaling_charts(
    records: &[BenchRecord],
    dir: &Path,
    host_cpus: usize,
) -> Result<Vec<PathBuf>, String> {
    let mut written = Vec::new();
    for c in scaling(records, host_cpus) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let path = dir.join(&c.file);
        std::fs::write(&path, line_chart(&c.chart))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests;
