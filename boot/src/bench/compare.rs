//! `qemu-run.sh bench --compare BASE NEW`: two runs compared the way Linux's 0-day robot (LKP)
//! compares two commits. Per kernel, bench, case, metric, cpus and boot: each side's median,
//! its spread (stddev as a percentage of the mean, and min..max) and the change of the median;
//! exact (det, icount) changes first, then host-time changes beyond the spread, largest first;
//! what is within the spread is folded; what one side lacks is listed. The two headers' facts,
//! and loudly where machines, kernels or options differ. Text: compare_text.rs; HTML:
//! compare_html.rs.

use super::record::{BenchRecord, Boot};
use super::table::{significance, Significance, Spread};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// One side of a comparison: where it was read from, its JSONL header (if any), its records.
#[derive(Clone, Debug)]
pub struct Run {
    pub label: String,
    pub header: Option<Value>,
    pub records: Vec<BenchRecord>,
}

/// One measurement's values on one side, over the repetitions of its boot.
#[derive(Clone, Debug, PartialEq)]
pub struct Stats {
    pub n: usize,
    pub median: f64,
    pub mean: f64,
    /// The sample standard deviation (n - 1) as a percentage of the mean, as 0-day prints it
    /// (`± N%`): None for a single value, or a spread around a mean of 0.
    pub stddev_pct: Option<f64>,
    pub min: f64,
    pub max: f64,
}

impl Stats {
    /// The statistics of `values`; None when there are none.
    pub fn of(values: &[f64]) -> Option<Stats> {
        let s = Spread::of(values)?;
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        let stddev_pct = (s.n >= 2).then(|| {
            let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (s.n - 1) as f64;
            let sd = var.sqrt();
            if sd == 0.0 {
                Some(0.0)
            } else if mean != 0.0 {
                Some(sd / mean.abs() * 100.0)
            } else {
                None
            }
        });
        Some(Stats {
            n: s.n,
            median: s.median,
            mean,
            stddev_pct: stddev_pct.flatten(),
            min: s.min,
            max: s.max,
        })
    }

    fn spread(&self) -> Spread {
        Spread {
            n: self.n,
            median: self.median,
            min: self.min,
            max: self.max,
        }
    }

    /// Whether the min..max ranges of two sides overlap.
    pub fn overlaps(&self, other: &Stats) -> bool {
        self.min <= other.max && other.min <= self.max
    }
}

/// What a row says about its measurement, in the order the rows are listed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// A det or icount figure (a function of the code) that changed.
    ExactChange,
    /// A host-time figure with a spread on both sides whose min..max ranges do not overlap.
    Change,
    /// A det or icount figure, the same on both sides.
    ExactSame,
    /// The min..max ranges overlap: the change is within the run-to-run noise.
    WithinSpread,
    /// A host-time figure measured once on a side: no spread to judge by.
    OneRep,
    /// Measured in the base run only.
    OnlyBase,
    /// Measured in the new run only.
    OnlyNew,
}

/// One measurement of both runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub kernel: String,
    pub bench: String,
    pub case: String,
    pub metric: String,
    pub cpus: u32,
    pub boot: Boot,
    pub unit: String,
    pub base: Option<Stats>,
    pub new: Option<Stats>,
    pub verdict: Verdict,
}

impl Row {
    /// The change of the median in percent (infinite from a base of 0); None when a side lacks
    /// the measurement.
    pub fn change_pct(&self) -> Option<f64> {
        let (a, b) = (self.base.as_ref()?.median, self.new.as_ref()?.median);
        Some(if a != 0.0 {
            (b - a) / a.abs() * 100.0
        } else if b == 0.0 {
            0.0
        } else {
            f64::INFINITY.copysign(b)
        })
    }

    /// The metric's name as 0-day writes one: `bench.case.metric`.
    pub fn name(&self) -> String {
        format!("{}.{}.{}", self.bench, self.case, self.metric)
    }

    /// Whether both sides have a min..max range and the two overlap.
    pub fn ranges_overlap(&self) -> bool {
        match (&self.base, &self.new) {
            (Some(a), Some(b)) => a.n >= 2 && b.n >= 2 && a.overlaps(b),
            _ => false,
        }
    }
}

/// A group of rows as the reports show it: listed, or folded into one summary line.
#[derive(Debug)]
pub struct Section<'a> {
    pub kernel: &'a str,
    pub title: String,
    pub rows: Vec<&'a Row>,
    /// The summary line that replaces the rows (None: the rows are listed).
    pub folded: Option<String>,
}

/// The facts of one run's header, in a fixed order: (name, value).
pub type Facts = Vec<(&'static str, String)>;

/// Everything a report prints.
#[derive(Debug)]
pub struct Comparison {
    pub base_label: String,
    pub new_label: String,
    pub base_facts: Facts,
    pub new_facts: Facts,
    /// One line per kind of difference between the headers (machines, kernels, options).
    pub warnings: Vec<String>,
    /// Kernels whose records only one side has: (side, kernel, records), not compared.
    pub lone_kernels: Vec<(&'static str, String, usize)>,
    /// Every row, in report order.
    pub rows: Vec<Row>,
}

/// Header facts: (name, where in the header, what kind of fact). Kinds: machine, kernel,
/// option, or run (expected to differ: revision, date).
const FACTS: &[(&str, &str, &str)] = &[
    ("git rev", "/git_rev", "run"),
    ("date", "/date", "run"),
    ("host", "/host", "machine"),
    ("host cores", "/host_cpus", "machine"),
    ("vCPUs", "/vcpus", "machine"),
    ("topology", "/topology", "machine"),
    ("qemu", "/qemu", "machine"),
    ("firmware", "/options/firmware", "machine"),
    ("qemu args", "/options/extra_qemu_args", "machine"),
    ("kernel", "/kernel", "kernel"),
    ("reps", "/reps", "option"),
    ("smoke", "/options/smoke", "option"),
    ("main job", "/options/main_job", "option"),
    ("sets", "/options/sets", "option"),
];

fn fact_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => {
            let words: Vec<String> = a.iter().map(fact_text).collect();
            if words.is_empty() {
                "-".into()
            } else {
                words.join(" ")
            }
        }
        other => other.to_string(),
    }
}

/// A run's facts: the header's, and the kernels its records name (a header without `kernel`
/// is numalab's alone).
pub fn facts(run: &Run) -> Facts {
    let kernels: BTreeSet<&str> = run.records.iter().map(|r| r.kernel.as_str()).collect();
    let mut out: Facts = FACTS
        .iter()
        .map(|(name, pointer, _)| {
            let v = run.header.as_ref().and_then(|h| h.pointer(pointer));
            let text = match (v, *name) {
                (Some(v), "qemu") => fact_text(v).replace("QEMU emulator version ", ""),
                (Some(v), _) => fact_text(v),
                (None, "kernel") if run.header.is_some() => "numalab".into(),
                (None, _) => "unknown".into(),
            };
            (*name, text)
        })
        .collect();
    out.push((
        "record kernels",
        kernels.into_iter().collect::<Vec<_>>().join(" "),
    ));
    // The guest's node counts its records give: a machine fact the header may not show (two
    // `--machine` replays both say "custom (QEMU arguments)").
    let nodes: BTreeSet<u32> = run.records.iter().map(|r| r.nodes).collect();
    let nodes: Vec<String> = nodes.iter().map(u32::to_string).collect();
    out.push(("nodes", nodes.join(" ")));
    out
}

/// One side's machine in a few words: topology, vCPUs, nodes, host.
fn machine_words(f: &Facts) -> String {
    let fact = |name: &str| {
        f.iter()
            .find(|x| x.0 == name)
            .map_or("unknown", |x| x.1.as_str())
    };
    format!(
        "{}, {} vCPUs, {} nodes, host {}",
        fact("topology"),
        fact("vCPUs"),
        fact("nodes"),
        fact("host")
    )
}

/// The lines that say where two runs' facts differ (empty: same machine, kernels, options).
fn warnings(base: &Run, new: &Run, fb: &Facts, fnew: &Facts) -> Vec<String> {
    let mut out = Vec::new();
    for (side, run) in [("base", base), ("new", new)] {
        if run.header.is_none() {
            out.push(format!(
                "WARNING: the {side} run has no header line: its machine and options are unknown"
            ));
        }
    }
    let kind_of = |name: &str| match name {
        "nodes" => "machine",
        _ => FACTS.iter().find(|f| f.0 == name).map_or("kernel", |f| f.2),
    };
    for (kind, loud) in [
        ("machine", "MACHINES DIFFER"),
        ("kernel", "KERNELS DIFFER"),
        ("option", "OPTIONS DIFFER"),
    ] {
        let diffs: Vec<String> = fb
            .iter()
            .zip(fnew)
            .filter(|((name, a), (_, b))| kind_of(name) == kind && a != b)
            .map(|((name, a), (_, b))| format!("{name}: {a} -> {b}"))
            .collect();
        if diffs.is_empty() {
            continue;
        }
        let mut line = format!("WARNING: {loud}: {}", diffs.join("; "));
        if kind == "machine" {
            // Both machines named, not only the facts that differ.
            line.push_str(&format!(
                " (base: {}; new: {})",
                machine_words(fb),
                machine_words(fnew)
            ));
        }
        out.push(line);
    }
    out
}

/// The line that says, on top, which measurements only one side has (runs
/// of different experiment sets), grouped by experiment; None when both have the same.
fn experiments_differ(rows: &[Row]) -> Option<String> {
    let mut parts = Vec::new();
    for (side, v) in [("base", Verdict::OnlyBase), ("new", Verdict::OnlyNew)] {
        let mut by_bench: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for r in rows {
            let e = by_bench.entry(r.bench.as_str()).or_insert((0, 0));
            e.1 += 1;
            if r.verdict == v {
                e.0 += 1;
            }
        }
        let words: Vec<String> = by_bench
            .iter()
            .filter(|(_, (only, _))| *only > 0)
            .map(|(bench, (only, all))| {
                if only == all {
                    format!("{bench} (the whole experiment, {only} metrics)")
                } else {
                    format!("{bench} ({only} of its {all} metrics)")
                }
            })
            .collect();
        if !words.is_empty() {
            parts.push(format!("only in {side}: {}", words.join(", ")));
        }
    }
    (!parts.is_empty()).then(|| {
        format!(
            "WARNING: EXPERIMENTS DIFFER: {}; those are listed at the end, not compared",
            parts.join("; ")
        )
    })
}

type RowKey = (String, String, String, String, u32, Boot);

fn index(records: &[BenchRecord]) -> BTreeMap<RowKey, (Vec<f64>, String)> {
    let mut out: BTreeMap<RowKey, (Vec<f64>, String)> = BTreeMap::new();
    for r in records {
        let key = (
            r.kernel.clone(),
            r.bench.clone(),
            r.case.clone(),
            r.metric.clone(),
            r.cpus,
            r.boot,
        );
        out.entry(key)
            .or_insert_with(|| (Vec::new(), r.unit.clone()))
            .0
            .push(r.value);
    }
    out
}

fn verdict(boot: Boot, base: &Option<Stats>, new: &Option<Stats>) -> Verdict {
    match (base, new) {
        (Some(a), Some(b)) => match significance(boot, &b.spread(), &a.spread()) {
            Significance::Exact if a.median == b.median && a.min == b.min && a.max == b.max => {
                Verdict::ExactSame
            }
            Significance::Exact => Verdict::ExactChange,
            Significance::Significant => Verdict::Change,
            Significance::NotSignificant => Verdict::WithinSpread,
            Significance::OneRep => Verdict::OneRep,
        },
        (Some(_), None) => Verdict::OnlyBase,
        _ => Verdict::OnlyNew,
    }
}

/// Compares `base` with `new`: like with like (the same kernel), every measurement of either.
pub fn compare(base: &Run, new: &Run) -> Comparison {
    let (ia, ib) = (index(&base.records), index(&new.records));
    let kernels = |i: &BTreeMap<RowKey, (Vec<f64>, String)>| -> BTreeMap<String, usize> {
        let mut k = BTreeMap::new();
        for (key, (v, _)) in i {
            *k.entry(key.0.clone()).or_insert(0) += v.len();
        }
        k
    };
    let (ka, kb) = (kernels(&ia), kernels(&ib));
    let mut lone_kernels = Vec::new();
    for (side, mine, other) in [("base", &ka, &kb), ("new", &kb, &ka)] {
        for (k, n) in mine.iter().filter(|(k, _)| !other.contains_key(*k)) {
            lone_kernels.push((side, k.clone(), *n));
        }
    }
    let keys: BTreeSet<&RowKey> = ia
        .keys()
        .chain(ib.keys())
        .filter(|k| ka.contains_key(&k.0) && kb.contains_key(&k.0))
        .collect();
    let mut rows: Vec<Row> = keys
        .into_iter()
        .map(|key| {
            let a = ia.get(key);
            let b = ib.get(key);
            let base_stats = a.and_then(|(v, _)| Stats::of(v));
            let new_stats = b.and_then(|(v, _)| Stats::of(v));
            let unit = a.or(b).map(|(_, u)| u.clone()).unwrap_or_default();
            Row {
                kernel: key.0.clone(),
                bench: key.1.clone(),
                case: key.2.clone(),
                metric: key.3.clone(),
                cpus: key.4,
                boot: key.5,
                unit,
                verdict: verdict(key.5, &base_stats, &new_stats),
                base: base_stats,
                new: new_stats,
            }
        })
        .collect();
    // Kernel, then verdict group, then the largest change first (stable: key order on ties).
    rows.sort_by(|x, y| {
        let mag = |r: &Row| r.change_pct().map_or(0.0, f64::abs);
        (x.kernel.as_str(), x.verdict)
            .cmp(&(y.kernel.as_str(), y.verdict))
            .then_with(|| mag(y).total_cmp(&mag(x)))
    });
    let (fb, fnew) = (facts(base), facts(new));
    let mut warnings = warnings(base, new, &fb, &fnew);
    warnings.extend(experiments_differ(&rows));
    Comparison {
        base_label: base.label.clone(),
        new_label: new.label.clone(),
        warnings,
        base_facts: fb,
        new_facts: fnew,
        lone_kernels,
        rows,
    }
}

impl Comparison {
    /// The rows grouped as the reports show them, kernel by kernel: exact changes, host-time
    /// changes beyond the spread, then (folded into one line each unless `all`) exact figures
    /// unchanged, changes within the spread and figures measured once on a side, then the
    /// measurements only one side has (always listed).
    pub fn sections(&self, all: bool) -> Vec<Section<'_>> {
        let mut out = Vec::new();
        let kernels: BTreeSet<&str> = self.rows.iter().map(|r| r.kernel.as_str()).collect();
        for kernel in kernels {
            let of = |v: Verdict| -> Vec<&Row> {
                self.rows
                    .iter()
                    .filter(|r| r.kernel == kernel && r.verdict == v)
                    .collect()
            };
            for (v, title) in [
                (Verdict::ExactChange, "exact (det, icount): changed"),
                (Verdict::Change, "host time: changed beyond the spread"),
                (Verdict::ExactSame, "exact (det, icount): unchanged"),
                (
                    Verdict::WithinSpread,
                    "within the spread (min..max ranges overlap)",
                ),
                (Verdict::OneRep, "host time measured once on a side"),
                (Verdict::OnlyBase, "only in base"),
                (Verdict::OnlyNew, "only in new"),
            ] {
                let rows = of(v);
                if rows.is_empty() {
                    continue;
                }
                let n = rows.len();
                let folded = match v {
                    _ if all => None,
                    Verdict::ExactSame => Some(format!("{n} exact metrics unchanged")),
                    Verdict::WithinSpread => Some(format!("{n} metrics within spread")),
                    Verdict::OneRep => {
                        let (lo, hi) = rows
                            .iter()
                            .filter_map(|r| r.change_pct())
                            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), c| {
                                (lo.min(c), hi.max(c))
                            });
                        Some(format!(
                            "{n} metrics of a host-time boot measured once on a side: no \
                             spread to judge by (changes {lo:+.1}%..{hi:+.1}%; --reps 3 gives one)"
                        ))
                    }
                    _ => None,
                };
                out.push(Section {
                    kernel,
                    title: title.to_string(),
                    rows,
                    folded,
                });
            }
        }
        out
    }
}

/// The change as 0-day prints it: `+12.3%`, `-0.4%`, `+1.2e5%` beyond 10^4 %, `+inf%` from 0.
pub fn fmt_change(pct: f64) -> String {
    if pct.is_infinite() {
        if pct > 0.0 { "+inf%" } else { "-inf%" }.into()
    } else if pct.abs() >= 1e4 {
        format!("{pct:+.1e}%")
    } else {
        format!("{pct:+.1}%")
    }
}
