//! The side-by-side table of `bench --kernel both|all`: one section per mirrored experiment,
//! up to four value columns (numalab partial, numalab sheaves, Linux 6.1, Linux 7.x) and the
//! ratios numalab/Linux of the same SLUB design (partial/6.1, sheaves/7), as text (terminal),
//! as JSON (the JSONL header's `side_by_side`) and as rows for the HTML report.

use super::{LinuxKernel, COUNTERPARTS};
use crate::bench::catalog::{self, Designs};
use crate::bench::{self, fmt_value, BenchRecord, Boot};
use numalab_algo::options::{slub::SLUB_DESIGN, Cmdline};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// Why a metric numalab prints has no Linux figure (the table says so instead of a blank).
/// Debian's 6.1 and 7.x configs both lack these (docs/linux-twin.md, "What is not mirrored").
const NO_SLUB_STATS: &str = "no CONFIG_SLUB_STATS in Debian's 6.1 and 7.x configs";
const NO_LOCK_STAT: &str = "no CONFIG_LOCK_STAT in Debian's 6.1 and 7.x configs";
/// kfree_rcu's call_rcu callbacks (one per batch or rcu_free sheaf) are internal to mm/.
const NO_KFREE_RCU_COUNT: &str =
    "kfree_rcu's batches and rcu_free sheaves are internal to Linux's mm/: no count to read";

/// The metrics of each mirrored experiment that Linux cannot print here, and why.
const NOT_ON_LINUX: &[(&str, &str, &str)] = &[
    (
        catalog::SHEAVES_VS_PARTIAL.name,
        "slab_path_per_kpair",
        NO_SLUB_STATS,
    ),
    (
        catalog::MEMORYLESS_SHEAVES.name,
        "sheaf_fraction_memoryless_cpus",
        NO_SLUB_STATS,
    ),
    (
        catalog::MEMORYLESS_SHEAVES.name,
        "sheaf_fraction_memory_cpus",
        NO_SLUB_STATS,
    ),
    (
        catalog::MEMORYLESS_SHEAVES.name,
        "slab_path_per_kop",
        NO_SLUB_STATS,
    ),
    (
        catalog::MEMORYLESS_SHEAVES.name,
        "list_lock_acquisitions_per_kop",
        NO_LOCK_STAT,
    ),
    (
        catalog::SLUB_LIST_LOCK.name,
        "list_lock_acquisitions_per_kop",
        NO_LOCK_STAT,
    ),
    (
        catalog::SLUB_LIST_LOCK.name,
        "list_lock_contended_per_kop",
        NO_LOCK_STAT,
    ),
    (
        catalog::NUMA_LOCALITY.name,
        "alloc_prefer_local",
        NO_SLUB_STATS,
    ),
    (
        catalog::NUMA_LOCALITY.name,
        "alloc_remote_partial",
        NO_SLUB_STATS,
    ),
    (catalog::NUMA_LOCALITY.name, "alloc_slab", NO_SLUB_STATS),
    (
        catalog::KFREE_RCU_SCALE.name,
        "callbacks_per_kop",
        NO_KFREE_RCU_COUNT,
    ),
    (
        catalog::KFREE_RCU_SCALE.name,
        "list_lock_acquisitions_per_kop",
        NO_LOCK_STAT,
    ),
    (
        catalog::KFREE_RCU_SCALE.name,
        "barn_lock_acquisitions_per_kop",
        NO_LOCK_STAT,
    ),
    (
        catalog::VMALLOC_SCALING.name,
        "global_lock_acquisitions_per_pair",
        NO_LOCK_STAT,
    ),
    (
        catalog::VMALLOC_SCALING.name,
        "contended_acquisitions_per_pair",
        NO_LOCK_STAT,
    ),
];

/// numalab's SLUB design in a run with these kernel options: the `slub.design` the kernel
/// reads (the one set, else the option's default).
pub fn numalab_design(options: &Cmdline) -> &'static str {
    options.options().get(&SLUB_DESIGN).name()
}

/// The design of numalab's `case` of `bench` in a run of `design`, or None for an experiment
/// without slab caches (its figure belongs to both design columns).
fn case_design(bench: &str, case: &str, design: &'static str) -> Option<&'static str> {
    match catalog::find(bench).map(|e| e.designs) {
        Some(Designs::Partial) => Some("partial"),
        Some(Designs::Both) => Some(if case.starts_with("partial") {
            "partial"
        } else {
            "sheaves"
        }),
        Some(Designs::NoSlab) | None => None,
        Some(Designs::Boot) => Some(design),
    }
}

/// One row: a numalab case against the Linux case, one metric, boot and CPU count.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub bench: &'static str,
    pub case: String,
    pub metric: &'static str,
    pub boot: Boot,
    pub cpus: u32,
    /// numalab partial, numalab sheaves, Linux 6.1, Linux 7.x (medians; None: not printed).
    pub values: [Option<f64>; 4],
}

impl Row {
    /// numalab partial / Linux 6.1 and numalab sheaves / Linux 7.x.
    pub fn ratios(&self) -> [Option<f64>; 2] {
        let r = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b != 0.0 => Some(a / b),
            _ => None,
        };
        [
            r(self.values[0], self.values[2]),
            r(self.values[1], self.values[3]),
        ]
    }
}

/// The whole table: its rows, the Linux kernels' record names (`linux-6.1.192`, ...), which
/// kernels printed anything, and the "no Linux figure" notes per experiment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub rows: Vec<Row>,
    pub linux61: Option<String>,
    pub linux7: Option<String>,
    pub numalab: bool,
    pub design: &'static str,
    /// (bench, metric, why): metrics numalab printed that Linux cannot.
    pub notes: Vec<(&'static str, &'static str, &'static str)>,
}

impl Table {
    /// Column headers: (title, index into `values` or 4+ratio) of the columns this run has.
    pub fn columns(&self) -> Vec<(String, usize)> {
        let mut out = Vec::new();
        if self.numalab {
            out.push(("numalab partial".to_string(), 0));
            out.push(("numalab sheaves".to_string(), 1));
        }
        if let Some(k) = &self.linux61 {
            out.push((k.clone(), 2));
        }
        if let Some(k) = &self.linux7 {
            out.push((k.clone(), 3));
        }
        if self.numalab && self.linux61.is_some() {
            out.push(("partial/6.1".to_string(), 4));
        }
        if self.numalab && self.linux7.is_some() {
            out.push(("sheaves/7".to_string(), 5));
        }
        out
    }

    /// The text of `row`'s column `col` (an index of [`Table::columns`]).
    pub fn cell(row: &Row, col: usize) -> String {
        if col < 4 {
            row.values[col].map_or("-".into(), fmt_value)
        } else {
            row.ratios()[col - 4].map_or("-".into(), |r| format!("{r:.3}"))
        }
    }

    /// The benches of the rows, in order.
    pub fn benches(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = Vec::new();
        for r in &self.rows {
            if !out.contains(&r.bench) {
                out.push(r.bench);
            }
        }
        out
    }
}

/// The table of `records` (numalab's run with kernel options `options`).
pub fn table(records: &[BenchRecord], options: &Cmdline) -> Table {
    let design = numalab_design(options);
    let mut t = Table {
        design,
        ..Table::default()
    };
    let names = |k: LinuxKernel| -> BTreeSet<String> {
        records
            .iter()
            .filter(|r| k.owns(&r.kernel))
            .map(|r| r.kernel.clone())
            .collect()
    };
    let join =
        |s: BTreeSet<String>| (!s.is_empty()).then(|| s.into_iter().collect::<Vec<_>>().join(","));
    t.linux61 = join(names(LinuxKernel::V6_1));
    t.linux7 = join(names(LinuxKernel::V7));
    t.numalab = records.iter().any(|r| r.kernel == "numalab");
    let of = |kernel: Option<LinuxKernel>, bench: &str, case: &str, metric: &str, boot: Boot| {
        records
            .iter()
            .filter(move |r| {
                kernel.map_or(r.kernel == "numalab", |k| k.owns(&r.kernel))
                    && r.bench == bench
                    && r.case == case
                    && r.metric == metric
                    && r.boot == boot
            })
            .collect::<Vec<_>>()
    };
    for &(bench, ncase, lcase, metric, boot) in COUNTERPARTS.iter() {
        let n = of(None, bench, ncase, metric, boot);
        let l61 = of(Some(LinuxKernel::V6_1), bench, lcase, metric, boot);
        let l7 = of(Some(LinuxKernel::V7), bench, lcase, metric, boot);
        let cpus: BTreeSet<u32> = n.iter().chain(&l61).chain(&l7).map(|r| r.cpus).collect();
        for cpus in cpus {
            // The median over the boot's repetitions (numalab's tsc boot runs --reps times).
            let at = |v: &[&BenchRecord]| {
                let values: Vec<f64> = v
                    .iter()
                    .filter(|r| r.cpus == cpus)
                    .map(|r| r.value)
                    .collect();
                bench::Spread::of(&values).map(|s| s.median)
            };
            let nv = at(&n);
            let mut values = [None, None, at(&l61), at(&l7)];
            match case_design(bench, ncase, design) {
                Some("partial") => values[0] = nv,
                Some(_) => values[1] = nv,
                None => {
                    values[0] = nv;
                    values[1] = nv;
                }
            }
            t.rows.push(Row {
                bench,
                case: format!("{ncase} | {lcase}"),
                metric,
                boot,
                cpus,
                values,
            });
        }
    }
    let benches = t.benches();
    for &(bench, metric, why) in NOT_ON_LINUX {
        let printed = records
            .iter()
            .any(|r| r.kernel == "numalab" && r.bench == bench && r.metric == metric);
        if benches.contains(&bench) && printed {
            t.notes.push((bench, metric, why));
        }
    }
    t
}

/// The side-by-side table as text: one section per experiment (empty without rows).
pub fn side_by_side(records: &[BenchRecord], options: &Cmdline) -> String {
    render(&table(records, options))
}

/// The text of `t`.
pub fn render(t: &Table) -> String {
    if t.rows.is_empty() {
        return String::new();
    }
    let cols = t.columns();
    let mut head = vec![
        "bench".to_string(),
        "case (numalab | linux)".into(),
        "metric".into(),
        "boot".into(),
        "cpus".into(),
    ];
    head.extend(cols.iter().map(|(h, _)| h.clone()));
    let mut out = format!(
        "== linux_twin: the same workload on numalab and on Linux, same QEMU machine; numalab ran \
         slub.design={} (a case of the other design: its own row; page and vmalloc rows: one \
         value, no slab); ratios numalab/Linux of the same design: Linux 6.1 is the partial \
         design, 7.x sheaves (below 1: numalab uses less) ==\n",
        t.design
    );
    for bench in t.benches() {
        let rows: Vec<Vec<String>> = t
            .rows
            .iter()
            .filter(|r| r.bench == bench)
            .map(|r| {
                let mut cells = vec![
                    r.bench.to_string(),
                    r.case.clone(),
                    r.metric.to_string(),
                    r.boot.name().to_string(),
                    r.cpus.to_string(),
                ];
                cells.extend(cols.iter().map(|(_, c)| Table::cell(r, *c)));
                cells
            })
            .collect();
        let mut widths: Vec<usize> = head.iter().map(|h| h.len()).collect();
        for row in &rows {
            for (w, c) in widths.iter_mut().zip(row) {
                *w = (*w).max(c.len());
            }
        }
        let _ = writeln!(out, "-- {bench}");
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
        for (_, metric, why) in t.notes.iter().filter(|(b, _, _)| *b == bench) {
            let _ = writeln!(out, "   no Linux figure for {metric}: {why}");
        }
    }
    out
}

/// `t` as the JSONL header's `side_by_side`: the column titles, one object per row (values
/// as the columns name them, `null` where not printed) and the notes.
pub fn to_json(t: &Table) -> Value {
    let cols = t.columns();
    let rows: Vec<Value> = t
        .rows
        .iter()
        .map(|r| {
            let ratios = r.ratios();
            let mut o = json!({
                "bench": r.bench, "case": r.case, "metric": r.metric,
                "boot": r.boot.name(), "cpus": r.cpus,
            });
            for (title, c) in &cols {
                o[title] = json!(if *c < 4 { r.values[*c] } else { ratios[*c - 4] });
            }
            o
        })
        .collect();
    let notes: Vec<Value> = t
        .notes
        .iter()
        .map(|(b, m, w)| json!({"bench": b, "metric": m, "why": w}))
        .collect();
    json!({
        "numalab_design": t.design,
        "columns": cols.iter().map(|(h, _)| h.clone()).collect::<Vec<_>>(),
        "rows": rows,
        "no_linux_figure": notes,
    })
}
