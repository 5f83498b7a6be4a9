//! The HTML form of a comparison (compare.rs): one self-contained page (inline CSS, no script,
//! nothing fetched) with the runs' facts, the warnings and the same rows and summary lines as
//! the text form; every text from the files is escaped.

use crate::bench::compare::{fmt_change, Comparison, Row, Stats};
use crate::bench::compare_text::{mark, range};
use crate::bench::table::fmt_value;
use std::fmt::Write as _;

/// HTML escaping, shared with the run report.
pub use crate::report::escape::escape;

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em}\
table{border-collapse:collapse;margin:.5em 0}\
td,th{border:1px solid #ccc;padding:2px 6px;font-size:90%}\
td.n{text-align:right;font-family:monospace}\
tr.up td.c{color:#a00}tr.down td.c{color:#060}\
p.warn{color:#a00;font-weight:bold}p.fold{color:#555}";

fn stddev(s: Option<&Stats>) -> String {
    s.and_then(|s| s.stddev_pct)
        .map_or(String::new(), |p| format!("± {p:.0}%"))
}

fn row(out: &mut String, r: &Row) {
    let change = r.change_pct();
    let class = match change {
        Some(c) if c > 0.0 => "up",
        Some(c) if c < 0.0 => "down",
        _ => "same",
    };
    let cells = [
        (
            "n",
            r.base
                .as_ref()
                .map_or(String::new(), |s| fmt_value(s.median)),
        ),
        ("n", stddev(r.base.as_ref())),
        ("n c", change.map_or(String::new(), fmt_change)),
        (
            "n",
            r.new
                .as_ref()
                .map_or(String::new(), |s| fmt_value(s.median)),
        ),
        ("n", stddev(r.new.as_ref())),
        ("", r.name()),
        ("n", r.cpus.to_string()),
        ("", r.boot.name().to_string()),
        ("", r.unit.clone()),
        ("n", range(r.base.as_ref())),
        ("n", range(r.new.as_ref())),
        ("", mark(r)),
    ];
    let _ = write!(out, "<tr class=\"{class}\">");
    for (cls, text) in cells {
        let text = escape(&text);
        if cls.is_empty() {
            let _ = write!(out, "<td>{text}</td>");
        } else {
            let _ = write!(out, "<td class=\"{cls}\">{text}</td>");
        }
    }
    let _ = writeln!(out, "</tr>");
}

/// The comparison as a self-contained HTML page; `all` lists the rows the default folds.
pub fn render_html(c: &Comparison, all: bool) -> String {
    let mut out = String::new();
    let rev = |i: usize| -> String {
        let f = if i == 0 { &c.base_facts } else { &c.new_facts };
        f.first().map_or(String::new(), |f| f.1.clone())
    };
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>numalab compare {} vs {}</title><style>{STYLE}</style></head><body>",
        escape(&rev(0)),
        escape(&rev(1))
    );
    let _ = writeln!(out, "<h1>numalab bench compare: base vs new</h1>");
    let _ = writeln!(
        out,
        "<table><tr><th>fact</th><th>base</th><th>new</th></tr>"
    );
    let _ = writeln!(
        out,
        "<tr><td>file</td><td>{}</td><td>{}</td></tr>",
        escape(&c.base_label),
        escape(&c.new_label)
    );
    for ((name, a), (_, b)) in c.base_facts.iter().zip(&c.new_facts) {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(name),
            escape(a),
            escape(b)
        );
    }
    let _ = writeln!(out, "</table>");
    for w in &c.warnings {
        let _ = writeln!(out, "<p class=\"warn\">{}</p>", escape(w));
    }
    for (side, kernel, n) in &c.lone_kernels {
        let _ = writeln!(
            out,
            "<p class=\"warn\">WARNING: kernel {} only in {side} ({n} records): not compared</p>",
            escape(kernel)
        );
    }
    let sections = c.sections(all);
    if sections.is_empty() {
        let _ = writeln!(out, "<p>(no measurement to compare)</p>");
    }
    for s in sections {
        if let Some(line) = &s.folded {
            let _ = writeln!(
                out,
                "<p class=\"fold\">{}: {}</p>",
                escape(s.kernel),
                escape(line)
            );
            continue;
        }
        let _ = writeln!(
            out,
            "<h2>{}: {} ({})</h2>\n<table><tr><th>base</th><th>%stddev</th><th>%change</th>\
             <th>new</th><th>%stddev</th><th>metric</th><th>cpus</th><th>boot</th><th>unit</th>\
             <th>base min..max</th><th>new min..max</th><th>mark</th></tr>",
            escape(s.kernel),
            escape(&s.title),
            s.rows.len()
        );
        for r in s.rows {
            row(&mut out, r);
        }
        let _ = writeln!(out, "</table>");
    }
    let _ = writeln!(out, "</body></html>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::compare::compare;
    use crate::bench::compare_tests::{rec, reps, run};
    use crate::bench::Boot;

    #[test]
    fn html_page_is_self_contained_and_escaped() {
        let mut a = run("<a&b>", reps("ops_per_cpu", &[100.0, 101.0, 102.0]));
        a.records.push(rec("x_kib", "kib", Boot::Det, 0, 1.0));
        let b = run("B", reps("ops_per_cpu", &[150.0, 151.0, 152.0]));
        let c = compare(&a, &b);
        let page = render_html(&c, false);
        assert!(page.starts_with("<!DOCTYPE html>"), "{page}");
        assert!(page.contains("<style>") && page.ends_with("</body></html>\n"));
        assert!(
            page.contains("&lt;a&amp;b&gt;") && !page.contains("<a&b>"),
            "{page}"
        );
        assert!(
            !page.contains("http") && !page.contains("<script"),
            "{page}"
        );
        assert!(page.contains("+49.5%"), "{page}");
        assert!(page.contains("only in base"), "{page}");
        assert_eq!(escape("'\"<>&"), "&#39;&quot;&lt;&gt;&amp;");
        // Opening and closing tags pair up.
        for tag in ["table", "tr", "td", "h2", "p"] {
            let open = page.matches(&format!("<{tag}>")).count()
                + page.matches(&format!("<{tag} ")).count();
            let close = page.matches(&format!("</{tag}>")).count();
            assert_eq!(open, close, "<{tag}>: {page}");
        }
    }
}
