//! SVG line charts of the scaling experiments (value against CPUs, one line per case).
//!
//! Hand-written SVG rather than the plotters crate: a chart here is a few axes, ticks,
//! polylines and a legend, and writing that directly costs no dependency build on the
//! 2-core hosts this project is developed on (and needs no font handling: SVG text is
//! rendered by the viewer).

use crate::bench::{fmt_value, BenchRecord, Spread};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 440.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 190.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 60.0;
const COLORS: &[&str] = &[
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// One line of a chart.
pub struct Series {
    pub name: String,
    /// (x, y) points, drawn in order of x.
    pub points: Vec<(f64, f64)>,
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
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

/// A complete SVG document: a line chart with axes from 0, ticks, and a legend.
pub fn line_chart(title: &str, x_label: &str, y_label: &str, series: &[Series]) -> String {
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let ys = series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let x_max = xs.fold(1.0f64, f64::max);
    let y_max = ys.fold(0.0f64, f64::max);
    let y_step = nice_step(if y_max > 0.0 { y_max } else { 1.0 }, 5.0);
    let y_top = ((y_max / y_step).ceil() * y_step).max(y_step);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let px = |x: f64| LEFT + x / x_max * plot_w;
    let py = |y: f64| TOP + plot_h - y / y_top * plot_h;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         viewBox=\"0 0 {WIDTH} {HEIGHT}\" font-family=\"sans-serif\" font-size=\"12\">"
    );
    let _ = writeln!(svg, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>");
    let _ = writeln!(
        svg,
        "<text x=\"{}\" y=\"22\" font-size=\"15\" text-anchor=\"middle\">{}</text>",
        LEFT + plot_w / 2.0,
        escape(title)
    );
    // Y grid and ticks.
    let mut y = 0.0;
    while y <= y_top * 1.0001 {
        let _ = writeln!(
            svg,
            "<line x1=\"{LEFT}\" y1=\"{0:.1}\" x2=\"{1:.1}\" y2=\"{0:.1}\" stroke=\"#ddd\"/>\
             <text x=\"{2:.1}\" y=\"{3:.1}\" text-anchor=\"end\">{4}</text>",
            py(y),
            LEFT + plot_w,
            LEFT - 6.0,
            py(y) + 4.0,
            fmt_value(y)
        );
        y += y_step;
    }
    // X ticks at every x that occurs.
    let mut x_ticks: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    x_ticks.sort_by(f64::total_cmp);
    x_ticks.dedup();
    for x in &x_ticks {
        let _ = writeln!(
            svg,
            "<line x1=\"{0:.1}\" y1=\"{1:.1}\" x2=\"{0:.1}\" y2=\"{2:.1}\" stroke=\"#999\"/>\
             <text x=\"{0:.1}\" y=\"{3:.1}\" text-anchor=\"middle\">{4}</text>",
            px(*x),
            TOP + plot_h,
            TOP + plot_h + 5.0,
            TOP + plot_h + 18.0,
            fmt_value(*x)
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
        HEIGHT - 18.0,
        escape(x_label)
    );
    let _ = writeln!(
        svg,
        "<text transform=\"translate(18,{:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
        TOP + plot_h / 2.0,
        escape(y_label)
    );
    for (i, s) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let mut pts = s.points.clone();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let path: Vec<String> = pts
            .iter()
            .map(|(x, y)| format!("{:.1},{:.1}", px(*x), py(*y)))
            .collect();
        let _ = writeln!(
            svg,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>",
            path.join(" ")
        );
        for p in &path {
            let (x, y) = p.split_once(',').unwrap_or(("0", "0"));
            let _ = writeln!(
                svg,
                "<circle cx=\"{x}\" cy=\"{y}\" r=\"3\" fill=\"{color}\"/>"
            );
        }
        let ly = TOP + 10.0 + i as f64 * 18.0;
        let lx = LEFT + plot_w + 15.0;
        let _ = writeln!(
            svg,
            "<line x1=\"{lx}\" y1=\"{ly}\" x2=\"{0}\" y2=\"{ly}\" stroke=\"{color}\" stroke-width=\"2\"/>\
             <text x=\"{1}\" y=\"{2}\">{3}</text>",
            lx + 20.0,
            lx + 26.0,
            ly + 4.0,
            escape(&s.name)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// Draws one chart per bench/metric/boot measured at more than one CPU count into `dir`
/// (`BENCH-METRIC-BOOT.svg`; each point the median over the boot's repetitions) and returns
/// the files written.
pub fn scaling_charts(records: &[BenchRecord], dir: &Path) -> Result<Vec<PathBuf>, String> {
    type Group<'a> = BTreeMap<(&'a str, &'a str, &'static str), Vec<&'a BenchRecord>>;
    let mut groups: Group = BTreeMap::new();
    for r in records {
        groups
            .entry((&r.bench, &r.metric, r.boot.name()))
            .or_default()
            .push(r);
    }
    let mut written = Vec::new();
    for ((bench, metric, boot), rows) in groups {
        let mut cpus: Vec<u32> = rows.iter().map(|r| r.cpus).collect();
        cpus.sort_unstable();
        cpus.dedup();
        if cpus.len() < 2 {
            continue;
        }
        let mut values: BTreeMap<(usize, u32), Vec<f64>> = BTreeMap::new();
        let mut cases: Vec<&str> = Vec::new();
        for r in &rows {
            if !cases.contains(&r.case.as_str()) {
                cases.push(&r.case);
            }
            let i = cases.iter().position(|c| *c == r.case).unwrap_or(0);
            values.entry((i, r.cpus)).or_default().push(r.value);
        }
        let series: Vec<Series> = cases
            .iter()
            .enumerate()
            .map(|(i, case)| Series {
                name: case.to_string(),
                points: values
                    .iter()
                    .filter(|((c, _), _)| *c == i)
                    .filter_map(|((_, n), v)| Some((*n as f64, Spread::of(v)?.median)))
                    .collect(),
            })
            .collect();
        let unit = &rows[0].unit;
        let svg = line_chart(
            &format!("{bench}: {metric} ({boot} boot, median of repetitions)"),
            "CPUs taking part",
            &format!("{metric} [{unit}]"),
            &series,
        );
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let path = dir.join(format!("{bench}-{metric}-{boot}.svg"));
        std::fs::write(&path, svg).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_has_every_series_and_tick() {
        let svg = line_chart(
            "t <1>",
            "CPUs",
            "ops",
            &[
                Series {
                    name: "linux_default".into(),
                    points: vec![(2.0, 10.0), (8.0, 4.0), (4.0, 7.0)],
                },
                Series {
                    name: "partial_64".into(),
                    points: vec![(2.0, 12.0), (4.0, 11.0), (8.0, 9.0)],
                },
            ],
        );
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 6);
        assert!(svg.contains("t &lt;1&gt;"));
        assert!(svg.contains(">partial_64<") && svg.contains(">8<"));
    }

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(100.0, 5.0), 20.0);
        assert_eq!(nice_step(7.0, 5.0), 2.0);
        assert!((nice_step(0.9, 5.0) - 0.2).abs() < 1e-12);
    }
}
