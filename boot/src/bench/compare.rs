//! `qemu-run.sh bench --compare A B`: per bench/case/metric/cpus/boot the change of the median
//! (over repetitions) from one result file to another, then the measurements only one side has.

use super::record::{BenchRecord, Key};
use super::table::{fmt_value, Spread};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Per bench/case/metric/cpus/boot: the median over repetitions in `a`, in `b`, and the change
/// in percent; then the measurements only one side has.
pub fn compare(a: &[BenchRecord], b: &[BenchRecord]) -> String {
    let index = |rs: &[BenchRecord]| -> BTreeMap<Key, (f64, String)> {
        let mut values: BTreeMap<Key, (Vec<f64>, String)> = BTreeMap::new();
        for r in rs {
            let e = values
                .entry(r.key())
                .or_insert_with(|| (Vec::new(), r.unit.clone()));
            e.0.push(r.value);
        }
        values
            .into_iter()
            .filter_map(|(k, (v, unit))| Some((k, (Spread::of(&v)?.median, unit))))
            .collect()
    };
    let (ia, ib) = (index(a), index(b));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<18} {:<26} {:<34} {:>4} {:>6} {:>12} {:>12} {:>9}",
        "bench", "case", "metric", "cpus", "boot", "A", "B", "change"
    );
    for (key, (va, unit)) in &ia {
        let Some((vb, _)) = ib.get(key) else { continue };
        let change = if *va != 0.0 {
            format!("{:+.1}%", (vb - va) / va.abs() * 100.0)
        } else if *vb == 0.0 {
            "+0.0%".into()
        } else {
            "new>0".into()
        };
        let _ = writeln!(
            out,
            "{:<18} {:<26} {:<34} {:>4} {:>6} {:>12} {:>12} {:>9}  {}",
            key.0,
            key.1,
            key.2,
            key.3,
            key.4,
            fmt_value(*va),
            fmt_value(*vb),
            change,
            unit
        );
    }
    for (side, mine, other) in [("A", &ia, &ib), ("B", &ib, &ia)] {
        for key in mine.keys().filter(|k| !other.contains_key(*k)) {
            let _ = writeln!(
                out,
                "only in {side}: {} {} {} cpus={} boot={}",
                key.0, key.1, key.2, key.3, key.4
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::tests::line;
    use crate::bench::{parse_log, BenchRecord, Boot};

    #[test]
    fn compare_prints_changes_and_one_sided_keys() {
        let a = parse_log(
            &[
                line("b", "c", "m", "100", 1),
                line("b", "c", "gone", "1", 1),
            ]
            .join("\n"),
            Boot::Tsc,
        )
        .0;
        let b = parse_log(
            &[line("b", "c", "m", "80", 1), line("b", "d", "m", "1", 1)].join("\n"),
            Boot::Tsc,
        )
        .0;
        let out = compare(&a, &b);
        assert!(out.contains("-20.0%"), "{out}");
        assert!(out.contains("only in A: b c gone"), "{out}");
        assert!(out.contains("only in B: b d m"), "{out}");
        // Repetitions compare by their median; det and tsc records of one metric stay apart.
        let reps = |vals: &[f64], boot: Boot| -> Vec<BenchRecord> {
            vals.iter()
                .enumerate()
                .map(|(i, &v)| BenchRecord {
                    value: v,
                    rep: i as u32,
                    boot,
                    clock: boot.clock().into(),
                    ..a[0].clone()
                })
                .collect()
        };
        let mut ra = reps(&[100.0, 10.0, 90.0], Boot::Tsc);
        ra.extend(reps(&[7.0], Boot::Det));
        let mut rb = reps(&[120.0, 110.0, 500.0], Boot::Tsc);
        rb.extend(reps(&[7.0], Boot::Det));
        let out = compare(&ra, &rb);
        assert!(out.contains("+33.3%"), "median 90 -> 120: {out}");
        assert!(out.contains(" det ") && out.contains("+0.0%"), "{out}");
    }
}
