//! The side-by-side table of `bench --kernel both`: per mirrored measurement numalab's value,
//! Linux's and their ratio.

use super::COUNTERPARTS;
use crate::bench::{self, fmt_value, BenchRecord, Boot};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// The side-by-side table: per mirrored measurement, numalab's value (the median over its
/// boot's repetitions), Linux's and numalab/linux (below 1: numalab executes fewer instructions or holds less memory). Rows
/// with neither value are left out; a missing side prints `-`.
pub fn side_by_side(records: &[BenchRecord]) -> String {
    let matching = |linux: bool, bench: &str, case: &str, metric: &str, boot: Boot| {
        records
            .iter()
            .filter(|r| {
                r.kernel.starts_with("linux-") == linux
                    && r.bench == bench
                    && r.case == case
                    && r.metric == metric
                    && r.boot == boot
            })
            .collect::<Vec<_>>()
    };
    let mut rows = Vec::new();
    let mut linux_name = BTreeSet::new();
    for &(bench, ncase, lcase, metric, boot) in COUNTERPARTS.iter() {
        let ns = matching(false, bench, ncase, metric, boot);
        let ls = matching(true, bench, lcase, metric, boot);
        let cpus: BTreeSet<u32> = ns.iter().chain(&ls).map(|r| r.cpus).collect();
        for cpus in cpus {
            // The median over the repetitions of the boot (numalab's tsc boot runs --reps
            // times), as numalab's own tables show it.
            let at = |v: &[&BenchRecord]| {
                let at_cpus: Vec<&&BenchRecord> = v.iter().filter(|r| r.cpus == cpus).collect();
                let values: Vec<f64> = at_cpus.iter().map(|r| r.value).collect();
                let kernel = at_cpus.first().map(|r| r.kernel.clone())?;
                Some((bench::Spread::of(&values)?.median, kernel))
            };
            push_row(
                &mut rows,
                &mut linux_name,
                [bench, ncase, lcase, metric],
                boot,
                cpus,
                at(&ns),
                at(&ls),
            );
        }
    }
    render(rows, linux_name)
}

type Cell = Option<(f64, String)>;

/// One row of the side-by-side table.
fn push_row(
    rows: &mut Vec<[String; 8]>,
    linux_name: &mut BTreeSet<String>,
    [bench, ncase, lcase, metric]: [&str; 4],
    boot: Boot,
    cpus: u32,
    n: Cell,
    l: Cell,
) {
    {
        if let Some((_, k)) = &l {
            linux_name.insert(k.clone());
        }
        let ratio = match (&n, &l) {
            (Some((a, _)), Some((b, _))) if *b != 0.0 => format!("{:.3}", a / b),
            _ => "-".into(),
        };
        let show =
            |v: &Option<(f64, String)>| v.as_ref().map_or("-".into(), |(x, _)| fmt_value(*x));
        rows.push([
            bench.to_string(),
            format!("{ncase} | {lcase}"),
            metric.to_string(),
            boot.name().to_string(),
            cpus.to_string(),
            show(&n),
            show(&l),
            ratio,
        ]);
    }
}

/// The table text of `rows` (empty without rows).
fn render(rows: Vec<[String; 8]>, linux_name: BTreeSet<String>) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let linux = linux_name.into_iter().collect::<Vec<_>>().join(",");
    let head = [
        "bench".to_string(),
        "case (numalab | linux)".into(),
        "metric".into(),
        "boot".into(),
        "cpus".into(),
        "numalab".into(),
        if linux.is_empty() {
            "linux".into()
        } else {
            linux.clone()
        },
        "numalab/linux".into(),
    ];
    let mut widths = head.clone().map(|h| h.len());
    for row in &rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.len());
        }
    }
    let mut out = String::from(
        "== linux_twin: the same workload on numalab and on Linux, same QEMU machine (numalab/linux below 1: numalab uses less) ==\n",
    );
    for row in std::iter::once(&head).chain(&rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| {
                if i < 5 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
    }
    out
}
