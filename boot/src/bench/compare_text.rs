//! The text form of a comparison (compare.rs), laid out as Linux's 0-day robot prints one: the
//! runs' facts, a `base  new` header, `%stddev %change %stddev` columns and the `\ | \` line,
//! then one `median ± N%  +X.Y%  median ± N%  bench.case.metric` row per measurement, followed
//! by its CPUs, boot, unit, the two min..max ranges and a mark.

use super::compare::{fmt_change, Comparison, Row, Stats, Verdict};
use super::kind::{metric_kind, MetricKind};
use super::table::fmt_value;
use std::fmt::Write as _;

/// `± N%` as 0-day prints it (6 characters), blank for a single value.
fn stddev(s: Option<&Stats>) -> String {
    match s.and_then(|s| s.stddev_pct) {
        Some(p) => format!(" ±{:>3.0}%", p),
        None => String::new(),
    }
}

fn median(s: Option<&Stats>) -> String {
    s.map_or(String::new(), |s| fmt_value(s.median))
}

/// `min..max` of a side: the value alone for one repetition, `-` for a missing side.
pub fn range(s: Option<&Stats>) -> String {
    match s {
        None => "-".into(),
        Some(s) if s.n < 2 => fmt_value(s.median),
        Some(s) => format!("{}..{}", fmt_value(s.min), fmt_value(s.max)),
    }
}

/// The mark after a row's ranges; a count from a host-time boot also says that it depends on
/// how the host scheduled the vCPUs (docs/benchmarks.md: read counts from det).
pub fn mark(r: &Row) -> String {
    let host_count =
        !r.boot.deterministic() && metric_kind(&r.metric, &r.unit) == MetricKind::Count;
    let verdict = match r.verdict {
        Verdict::ExactChange | Verdict::ExactSame => "exact",
        Verdict::Change => "beyond spread",
        Verdict::WithinSpread => "overlap: within noise",
        Verdict::OneRep => "1rep: no spread",
        Verdict::OnlyBase => "only in base",
        Verdict::OnlyNew => "only in new",
    };
    if host_count {
        format!("{verdict}, host-dependent count")
    } else {
        verdict.to_string()
    }
}

/// One row in 0-day's columns, then what 0-day does not print.
fn row(r: &Row) -> String {
    let change = r.change_pct().map_or(String::new(), fmt_change);
    format!(
        "{:>10}{:<6}{:>11}{:>11}{:<6}  {}  ({} cpus, {}, {})  {} | {}  {}",
        median(r.base.as_ref()),
        stddev(r.base.as_ref()),
        change,
        median(r.new.as_ref()),
        stddev(r.new.as_ref()),
        r.name(),
        r.cpus,
        r.boot.name(),
        r.unit,
        range(r.base.as_ref()),
        range(r.new.as_ref()),
        mark(r)
    )
}

/// The comparison as text; `all` lists the rows the default folds into summary lines.
pub fn render_text(c: &Comparison, all: bool) -> String {
    let mut out = String::new();
    let rule = "=".repeat(89);
    let _ = writeln!(out, "{rule}");
    // 0-day's parameter block (`a/b/c:` then each side's values), without revision and date,
    // which the commit block gives.
    let params = |f: &[(&'static str, String)]| -> Vec<String> {
        f.iter()
            .filter(|(name, _)| !matches!(*name, "git rev" | "date"))
            .map(|(_, v)| v.clone())
            .collect()
    };
    let names: Vec<&str> = c
        .base_facts
        .iter()
        .map(|f| f.0)
        .filter(|n| !matches!(*n, "git rev" | "date"))
        .collect();
    let _ = writeln!(out, "{}:", names.join("/"));
    for facts in [&c.base_facts, &c.new_facts] {
        let _ = writeln!(out, "  {}", params(facts).join("/"));
    }
    let _ = writeln!(out, "\ncommit:");
    for (side, facts, label) in [
        ("base", &c.base_facts, &c.base_label),
        ("new", &c.new_facts, &c.new_label),
    ] {
        let fact = |name: &str| {
            facts
                .iter()
                .find(|f| f.0 == name)
                .map_or("unknown", |f| f.1.as_str())
        };
        let _ = writeln!(
            out,
            "  {side:<4} {}  {}  {label}",
            fact("git rev"),
            fact("date")
        );
    }
    for w in &c.warnings {
        let _ = writeln!(out, "{w}");
    }
    for (side, kernel, n) in &c.lone_kernels {
        let _ = writeln!(
            out,
            "WARNING: kernel {kernel} only in {side} ({n} records): not compared"
        );
    }
    let _ = writeln!(out);
    let rev = |f: &[(&str, String)]| f.first().map_or(String::new(), |f| f.1.clone());
    let revs = format!(
        "{:<16} {:<27}",
        format!("base {}", rev(&c.base_facts)),
        format!("new {}", rev(&c.new_facts))
    );
    let _ = writeln!(out, "{}", revs.trim_end());
    let _ = writeln!(out, "{} {}", "-".repeat(16), "-".repeat(27));
    let _ = writeln!(out, "         %stddev     %change         %stddev");
    let _ = writeln!(out, "             \\          |                \\");
    let sections = c.sections(all);
    if sections.is_empty() {
        let _ = writeln!(out, "(no measurement to compare)");
    }
    for s in sections {
        if let Some(line) = &s.folded {
            let _ = writeln!(out, "    {}: {line}", s.kernel);
            continue;
        }
        let _ = writeln!(out, "    {}: {} ({})", s.kernel, s.title, s.rows.len());
        for r in s.rows {
            let _ = writeln!(out, "{}", row(r));
        }
    }
    out
}
