//! The per-experiment tables printed after a run: every metric, case, CPU count and boot with
//! the median of its repetitions, their min..max, and the ratio of medians against the
//! experiment's baseline case, marked when the ranges overlap (not significant); each row says
//! how it was measured and flags contention figures from an oversubscribed host.

use super::kind::MetricKind;
use super::record::{BenchRecord, Boot};
use numalab_algo::bench::catalog;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The baseline case for `case` of `bench`, given the cases present: the catalog's
/// (`Baseline`; a per-workload rule such as `numalab/*` is the case with the same workload
/// after the slash), or the first case for an experiment the catalog does not have.
pub fn baseline_for(bench: &str, case: &str, cases: &[String]) -> Option<String> {
    let want = match catalog::find(bench) {
        Some(e) => e.baseline.of(case)?,
        None => cases.first()?.clone(),
    };
    cases.contains(&want).then_some(want)
}

/// A number in a table: about 4 significant digits without exponent noise.
pub fn fmt_value(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 || a >= 1000.0 || (v.fract() == 0.0 && a < 1e15) {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 0.1 {
        format!("{v:.3}")
    } else {
        format!("{v:.5}")
    }
}

/// The values of one measurement over the repetitions of its boot.
#[derive(Clone, Debug, PartialEq)]
pub struct Spread {
    pub n: usize,
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// Median (mean of the two middle values for an even count), min and max of `values`;
    /// None when there are none.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Spread {
            n,
            median,
            min: v[0],
            max: v[n - 1],
        })
    }

    /// `min..max`, or `-` for a single value.
    pub fn range(&self) -> String {
        if self.n < 2 {
            "-".into()
        } else {
            format!("{}..{}", fmt_value(self.min), fmt_value(self.max))
        }
    }

    fn overlaps(&self, other: &Spread) -> bool {
        self.min <= other.max && other.min <= self.max
    }
}

/// The boots a case's baseline is looked for in: its own, then (a one-node comparison
/// case) the other host-time boot of the same machine size: tsc <-> uma.
pub fn baseline_boots(boot: Boot) -> impl Iterator<Item = Boot> {
    let other = match boot {
        Boot::Tsc => Some(Boot::Uma),
        Boot::Uma => Some(Boot::Tsc),
        Boot::Det | Boot::Icount => None,
    };
    std::iter::once(boot).chain(other)
}

/// A table's ratio column: `value / base` with its significance mark, `1.00x` for the
/// baseline itself (or 0 over 0), `-` without a baseline.
pub fn ratio_text(boot: Boot, value: &Spread, base: Option<&Spread>, is_base: bool) -> String {
    match base {
        Some(_) if is_base => "1.00x".into(),
        Some(b) if b.median != 0.0 => format!(
            "{:.2}x{}",
            value.median / b.median,
            significance(boot, value, b).mark()
        ),
        Some(_) if value.median == 0.0 => "1.00x".into(),
        _ => "-".into(),
    }
}

/// How far a ratio can be trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Significance {
    /// Both sides come from a deterministic boot (icount, det): the ratio is exact.
    Exact,
    /// Both sides have a spread and the ranges do not overlap.
    Significant,
    /// The min..max ranges overlap: the difference is within the run-to-run spread.
    NotSignificant,
    /// One side was measured once on host time: no spread to judge by.
    OneRep,
}

impl Significance {
    /// The mark printed after the ratio.
    pub fn mark(self) -> &'static str {
        match self {
            Significance::Exact | Significance::Significant => "",
            Significance::NotSignificant => " n.s.",
            Significance::OneRep => " 1rep",
        }
    }
}

/// How far `value / base` can be trusted, for values from `boot`.
pub fn significance(boot: Boot, value: &Spread, base: &Spread) -> Significance {
    if boot.deterministic() {
        Significance::Exact
    } else if value.n < 2 || base.n < 2 {
        Significance::OneRep
    } else if value.overlaps(base) {
        Significance::NotSignificant
    } else {
        Significance::Significant
    }
}

/// What the table says about a row beside its unit: how it was measured, and the
/// oversubscription flag on contention figures measured with more CPUs than the host has cores.
fn note(r: &BenchRecord, host_cpus: usize) -> String {
    let mut note = match (r.boot, r.kind()) {
        (Boot::Det, _) => "exact (det)".to_string(),
        (Boot::Icount, _) => "exact (icount)".to_string(),
        (_, MetricKind::Count) => "host-dependent count".to_string(),
        (_, _) => "host time".to_string(),
    };
    if r.is_contention() && r.cpus as usize > host_cpus {
        note.push_str(&format!(
            ", OVERSUBSCRIBED {} vCPUs > {host_cpus} host cores",
            r.cpus
        ));
    }
    if r.kvm {
        note.push_str(", real cores (KVM)");
    }
    note
}

/// One row of a table: a measurement's identity and its values over repetitions.
type RowKey = (String, String, u32, Boot);

/// Per experiment: one row per metric/case/cpus/boot with the median over the repetitions of
/// its boot, their min..max, and the ratio of the medians against the baseline case (same
/// metric, CPUs and boot), marked `n.s.` when the two min..max ranges overlap and `1rep` when a
/// host-time side was measured once. `host_cpus` is the host's core count (for the
/// oversubscription flag). Records of a merged sweep get one table per experiment and variant
/// (its heading names the variant; repetitions and baselines stay within it); records without
/// a variant come first, under the plain heading.
pub fn tables(records: &[BenchRecord], host_cpus: usize) -> String {
    let mut by_bench: BTreeMap<(&str, Option<&str>), Vec<&BenchRecord>> = BTreeMap::new();
    for r in records {
        by_bench
            .entry((&r.bench, r.variant.as_deref()))
            .or_default()
            .push(r);
    }
    let mut out = String::new();
    for ((bench, variant), rows) in by_bench {
        let mut cases: Vec<String> = Vec::new();
        let mut metrics: Vec<&str> = Vec::new();
        let mut values: BTreeMap<RowKey, Vec<f64>> = BTreeMap::new();
        let mut first: BTreeMap<RowKey, &BenchRecord> = BTreeMap::new();
        for r in &rows {
            if !cases.contains(&r.case) {
                cases.push(r.case.clone());
            }
            if !metrics.contains(&r.metric.as_str()) {
                metrics.push(&r.metric);
            }
            let key = (r.metric.clone(), r.case.clone(), r.cpus, r.boot);
            values.entry(key.clone()).or_default().push(r.value);
            first.entry(key).or_insert(r);
        }
        let spread = |key: &RowKey| values.get(key).and_then(|v| Spread::of(v));
        let rule = catalog::find(bench).map_or("first case".into(), |e| e.baseline.rule());
        let title = match variant {
            None => bench.to_string(),
            Some(v) => format!("{bench}, variant {v}"),
        };
        let _ = writeln!(
            out,
            "\n== {title} (median over repetitions; ratio: median / median of baseline {rule}) =="
        );
        let _ = writeln!(
            out,
            "{:<34} {:<26} {:>4} {:>6} {:>4} {:>12} {:>21} {:>11}  unit, how measured",
            "metric", "case", "cpus", "boot", "reps", "median", "min..max", "ratio"
        );
        for metric in metrics {
            let mut keys: Vec<&RowKey> = values.keys().filter(|k| k.0 == metric).collect();
            keys.sort_by_key(|k| (cases.iter().position(|c| *c == k.1), k.2, k.3));
            for key in keys {
                let (Some(s), Some(r)) = (spread(key), first.get(key)) else {
                    continue;
                };
                let base = baseline_for(bench, &key.1, &cases).and_then(|b| {
                    baseline_boots(key.3)
                        .find_map(|boot| spread(&(key.0.clone(), b.clone(), key.2, boot)))
                });
                let is_base = baseline_for(bench, &key.1, &cases).as_deref() == Some(&key.1);
                let ratio = ratio_text(key.3, &s, base.as_ref(), is_base);
                let _ = writeln!(
                    out,
                    "{:<34} {:<26} {:>4} {:>6} {:>4} {:>12} {:>21} {:>11}  {}, {}",
                    metric,
                    key.1,
                    key.2,
                    key.3.name(),
                    s.n,
                    fmt_value(s.median),
                    s.range(),
                    ratio,
                    r.unit,
                    note(r, host_cpus)
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::catalog::{ALLOC_PEERS, MEMORYLESS_NODE, SLUB_LIST_LOCK};
    use crate::bench::tests::line;
    use crate::bench::{parse_log, Boot};

    #[test]
    fn table_ratios_use_the_baseline_at_the_same_cpus() {
        let log = [
            line(
                SLUB_LIST_LOCK.name,
                "linux_default",
                "ops_per_cpu",
                "100",
                2,
            ),
            line(SLUB_LIST_LOCK.name, "partial_64", "ops_per_cpu", "150", 2),
            line(SLUB_LIST_LOCK.name, "linux_default", "ops_per_cpu", "50", 8),
            line(SLUB_LIST_LOCK.name, "partial_64", "ops_per_cpu", "100", 8),
            line(
                ALLOC_PEERS.name,
                "talc/fast64",
                "instructions_per_pair",
                "120",
                1,
            ),
            line(
                ALLOC_PEERS.name,
                "numalab/fast64",
                "instructions_per_pair",
                "40",
                1,
            ),
        ]
        .join("\n");
        let (records, _) = parse_log(&log, Boot::Tsc);
        let t = tables(&records, 16);
        let row = |case: &str, cpus: &str| {
            t.lines()
                .find(|l| l.contains(case) && l.split_whitespace().nth(2) == Some(cpus))
                .unwrap_or_else(|| panic!("no row {case} {cpus} in\n{t}"))
                .to_string()
        };
        assert!(row("partial_64", "2").contains("1.50x 1rep"), "{t}");
        assert!(row("partial_64", "8").contains("2.00x"), "{t}");
        assert!(row("linux_default", "8").contains("1.00x"), "{t}");
        assert!(row("talc/fast64", "1").contains("3.00x"), "{t}");
        assert!(t.contains(&format!("== {}", ALLOC_PEERS.name)));
        assert!(t.contains(&format!("== {}", SLUB_LIST_LOCK.name)));
    }

    /// Records of `bench`/`case`/`metric` at `cpus` CPUs from `boot`, one per repetition.
    fn reps(
        bench: &str,
        case: &str,
        metric: &str,
        unit: &str,
        cpus: u32,
        boot: Boot,
        values: &[f64],
    ) -> Vec<BenchRecord> {
        values
            .iter()
            .enumerate()
            .map(|(i, &v)| BenchRecord {
                bench: bench.into(),
                case: case.into(),
                metric: metric.into(),
                value: v,
                unit: unit.into(),
                cpus,
                nodes: 4,
                kernel: "numalab".into(),
                clock: boot.clock(),
                boot,
                rep: i as u32,
                variant: None,
                kvm: false,
            })
            .collect()
    }

    fn row<'a>(t: &'a str, metric: &str, case: &str, boot: &str) -> Vec<&'a str> {
        t.lines()
            .find(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                w.len() > 4 && w[0] == metric && w[1] == case && w[3] == boot
            })
            .unwrap_or_else(|| panic!("no row {metric} {case} {boot} in\n{t}"))
            .split_whitespace()
            .collect()
    }

    #[test]
    fn median_spread_and_significance_columns() {
        let m = "ops_per_cpu";
        let mut rs = reps(
            SLUB_LIST_LOCK.name,
            "linux_default",
            m,
            "ops_per_sec",
            8,
            Boot::Tsc,
            &[100.0, 90.0, 120.0],
        );
        rs.extend(reps(
            SLUB_LIST_LOCK.name,
            "partial_64",
            m,
            "ops_per_sec",
            8,
            Boot::Tsc,
            &[200.0, 210.0, 190.0],
        ));
        rs.extend(reps(
            SLUB_LIST_LOCK.name,
            "order_4",
            m,
            "ops_per_sec",
            8,
            Boot::Tsc,
            &[115.0, 130.0, 125.0],
        ));
        let a = "list_lock_acquisitions_per_kop";
        rs.extend(reps(
            SLUB_LIST_LOCK.name,
            "linux_default",
            a,
            "acquisitions",
            8,
            Boot::Det,
            &[11.4],
        ));
        rs.extend(reps(
            SLUB_LIST_LOCK.name,
            "partial_64",
            a,
            "acquisitions",
            8,
            Boot::Det,
            &[12.1],
        ));
        rs.extend(reps(
            SLUB_LIST_LOCK.name,
            "partial_64",
            a,
            "acquisitions",
            8,
            Boot::Tsc,
            &[9.0, 10.0],
        ));
        let t = tables(&rs, 2);
        // Columns: metric case cpus boot reps median min..max ratio [mark] unit...
        let base = row(&t, m, "linux_default", "tsc");
        assert_eq!(
            &base[2..8],
            ["8", "tsc", "3", "100", "90..120", "1.00x"],
            "{t}"
        );
        let p64 = row(&t, m, "partial_64", "tsc");
        assert_eq!(&p64[4..8], ["3", "200", "190..210", "2.00x"], "{t}");
        assert_eq!(p64[8], "ops_per_sec,", "disjoint ranges carry no mark: {t}");
        let o4 = row(&t, m, "order_4", "tsc");
        assert_eq!(&o4[5..9], ["125", "115..130", "1.25x", "n.s."], "{t}");
        // Contention timings on more CPUs than host cores are flagged; exact det counts are not.
        assert!(
            o4.join(" ")
                .contains("OVERSUBSCRIBED 8 vCPUs > 2 host cores"),
            "{t}"
        );
        let det = row(&t, a, "partial_64", "det").join(" ");
        assert!(det.contains("1.06x") && det.contains("exact (det)"), "{t}");
        assert!(!det.contains("n.s.") && !det.contains("OVERSUB"), "{t}");
        // No det baseline row for the tsc count: no ratio, and it says it depends on the host.
        let tsc_count = row(&t, a, "partial_64", "tsc").join(" ");
        assert!(
            tsc_count.contains(" - ") || tsc_count.contains("9.50"),
            "{t}"
        );
        assert!(tsc_count.contains("host-dependent count"), "{t}");
        // The memoryless experiment's baseline single_node comes from the uma boot.
        let mut ml = reps(
            MEMORYLESS_NODE.name,
            "unfixed",
            "slab_kib",
            "kib",
            8,
            Boot::Tsc,
            &[600.0, 620.0],
        );
        ml.extend(reps(
            MEMORYLESS_NODE.name,
            "single_node",
            "slab_kib",
            "kib",
            8,
            Boot::Uma,
            &[100.0, 100.0],
        ));
        ml.extend(reps(
            MEMORYLESS_NODE.name,
            "unfixed",
            "slab_kib",
            "kib",
            8,
            Boot::Det,
            &[610.0],
        ));
        let t2 = tables(&ml, 2);
        assert!(
            row(&t2, "slab_kib", "unfixed", "tsc").contains(&"6.10x"),
            "{t2}"
        );
        assert!(
            row(&t2, "slab_kib", "unfixed", "det").contains(&"-"),
            "{t2}"
        );
        // Not flagged when the host has the cores.
        assert!(!tables(&rs, 8).contains("OVERSUBSCRIBED"));
    }

    #[test]
    fn variants_get_tables_of_their_own() {
        let mut rs = reps(
            SLUB_LIST_LOCK.name,
            "linux_default",
            "ops_per_cpu",
            "ops_per_sec",
            8,
            Boot::Tsc,
            &[100.0],
        );
        let plain = tables(&rs, 2);
        for (variant, v) in [("4node slub.design=partial", 10.0), ("2node", 30.0)] {
            rs.extend(
                reps(
                    SLUB_LIST_LOCK.name,
                    "linux_default",
                    "ops_per_cpu",
                    "ops_per_sec",
                    8,
                    Boot::Tsc,
                    &[v, v + 2.0],
                )
                .into_iter()
                .map(|r| BenchRecord {
                    variant: Some(variant.into()),
                    ..r
                }),
            );
        }
        let t = tables(&rs, 2);
        // The records without a variant print as before, first.
        assert!(t.starts_with(&plain), "{t}");
        let section = |heading: &str| {
            let start = t
                .find(heading)
                .unwrap_or_else(|| panic!("no {heading} in\n{t}"));
            let rest = &t[start..];
            rest[..rest[1..].find("\n==").map_or(rest.len(), |e| e + 1)].to_string()
        };
        let partial = section("== slub_list_lock, variant 4node slub.design=partial (");
        let two = section("== slub_list_lock, variant 2node (");
        // Each variant's values are its own repetitions, never pooled with another's.
        assert_eq!(
            &row(&partial, "ops_per_cpu", "linux_default", "tsc")[4..7],
            ["2", "11", "10..12"],
            "{t}"
        );
        assert_eq!(
            &row(&two, "ops_per_cpu", "linux_default", "tsc")[4..7],
            ["2", "31", "30..32"],
            "{t}"
        );
    }

    #[test]
    fn spread_of_values() {
        let s = Spread::of(&[3.0, 1.0, 2.0, 10.0]).unwrap();
        assert_eq!((s.n, s.median, s.min, s.max), (4, 2.5, 1.0, 10.0));
        assert_eq!(s.range(), "1..10");
        assert_eq!(Spread::of(&[7.0]).unwrap().range(), "-");
        assert!(Spread::of(&[]).is_none());
        let a = Spread::of(&[1.0, 2.0]).unwrap();
        let b = Spread::of(&[2.0, 3.0]).unwrap();
        let c = Spread::of(&[2.5, 3.0]).unwrap();
        assert_eq!(
            significance(Boot::Tsc, &a, &b),
            Significance::NotSignificant
        );
        assert_eq!(significance(Boot::Tsc, &a, &c), Significance::Significant);
        assert_eq!(significance(Boot::Det, &a, &b), Significance::Exact);
        let one = Spread::of(&[5.0]).unwrap();
        assert_eq!(significance(Boot::Uma, &one, &c), Significance::OneRep);
    }

    #[test]
    fn values_are_formatted_readably() {
        assert_eq!(fmt_value(123456.7), "123457");
        assert_eq!(fmt_value(38.46), "38.5");
        assert_eq!(fmt_value(0.5), "0.500");
        assert_eq!(fmt_value(0.0123), "0.01230");
        assert_eq!(fmt_value(0.0), "0");
        assert_eq!(fmt_value(8.0), "8");
    }
}
