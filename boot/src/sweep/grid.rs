//! The test_vmalloc grid of a merged run: for every variant (one point of the grid, such as
//! `4node test_vmalloc.nr_threads=4`), boot and repetition, each test's `Summary:` line as
//! Linux's lib/test_vmalloc.c prints it, rebuilt from the `test_vmalloc` experiment's records
//! (passed and failed summed over the workers, avg the workers' mean run), then the run's
//! counts. docs/sweeps.md, docs/vmalloc.md.

use crate::bench::{catalog, BenchRecord, Boot};
use numalab_algo::vmalloc::test_grid::{summary_line, TESTS};
use std::collections::BTreeMap;

const BENCH: &str = catalog::TEST_VMALLOC.name;

/// What each boot's avg is: its metric, Summary's unit and how to read it; None for the det
/// boot, which keeps counts only (bench::det_keeps), so it prints the counts alone.
fn avg_of(boot: Boot) -> Option<(&'static str, &'static str, &'static str)> {
    match boot {
        Boot::Tsc | Boot::Uma => Some(("avg_usec", "usec", "avg: TCG wall time, a trend only")),
        Boot::Icount => Some((
            "avg_instructions",
            "instructions",
            "avg: instructions, exact",
        )),
        Boot::Det => None,
    }
}

/// The median of `v` (not empty).
fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The grid's text, empty when `records` hold no test_vmalloc record: per variant and boot,
/// the median over the repetitions of each figure.
pub fn grid(records: &[BenchRecord]) -> String {
    // (variant order, boot) -> case -> metric -> values over the repetitions.
    type Point = BTreeMap<String, BTreeMap<String, Vec<f64>>>;
    let mut variants: Vec<String> = Vec::new();
    let mut points: BTreeMap<(usize, Boot), (Point, Vec<u32>)> = BTreeMap::new();
    for r in records.iter().filter(|r| r.bench == BENCH) {
        let v = r.variant.clone().unwrap_or_default();
        let i = variants.iter().position(|x| *x == v).unwrap_or_else(|| {
            variants.push(v);
            variants.len() - 1
        });
        let (point, reps) = points.entry((i, r.boot)).or_default();
        if !reps.contains(&r.rep) {
            reps.push(r.rep);
        }
        point
            .entry(r.case.clone())
            .or_default()
            .entry(r.metric.clone())
            .or_default()
            .push(r.value);
    }
    if points.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\n== test_vmalloc grid (Linux's Summary lines; passed and failed summed over the workers, avg their mean run; medians over repetitions) ==\n",
    );
    for ((i, boot), (cases, reps)) in &points {
        let name = if variants[*i].is_empty() {
            String::from("(single run)")
        } else {
            variants[*i].clone()
        };
        let what = avg_of(*boot).map_or("counts only: the det boot keeps no times", |a| a.2);
        out.push_str(&format!(
            "-- {name}, {} boot, {} rep(s) ({what}) --\n",
            boot.name(),
            reps.len()
        ));
        let get =
            |m: &BTreeMap<String, Vec<f64>>, k: &str| m.get(k).map_or(f64::NAN, |v| median(v));
        if let Some((metric, unit, _)) = avg_of(*boot) {
            for test in TESTS {
                let Some(m) = cases.get(test) else {
                    continue;
                };
                let line = summary_line(
                    test,
                    get(m, "passed") as u64,
                    get(m, "failed") as u64,
                    get(m, "repeat") as u64,
                    get(m, "loops") as u64,
                    get(m, metric).round() as u64,
                    unit,
                );
                out.push_str(&format!("test_vmalloc: {line}\n"));
            }
        }
        if let Some(all) = cases.get(catalog::ALL_TESTS) {
            let words: Vec<String> = all
                .iter()
                .map(|(k, v)| format!("{k} {}", median(v)))
                .collect();
            out.push_str(&format!(
                "test_vmalloc: {}: {}\n",
                catalog::ALL_TESTS,
                words.join(" ")
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(case: &str, metric: &str, boot: Boot, value: f64, variant: &str) -> BenchRecord {
        BenchRecord {
            variant: Some(variant.into()),
            ..BenchRecord::for_test([BENCH, case, metric, "x"], 8, boot, 0, value)
        }
    }

    #[test]
    fn each_variant_and_boot_prints_linuxs_summary_lines() {
        let mut r = Vec::new();
        for (variant, threads) in [
            ("4node test_vmalloc.nr_threads=1", 1.0),
            ("4node test_vmalloc.nr_threads=4", 4.0),
        ] {
            for (metric, v) in [
                ("passed", threads),
                ("failed", 0.0),
                ("repeat", 1.0),
                ("loops", 100.0),
                ("avg_usec", 73.6),
            ] {
                r.push(rec("fix_size_alloc_test", metric, Boot::Tsc, v, variant));
            }
            for (metric, v) in [
                ("passed", 0.0),
                ("failed", threads),
                ("repeat", 1.0),
                ("loops", 100.0),
                ("avg_instructions", 1092926.0),
            ] {
                r.push(rec(
                    "align_shift_alloc_test",
                    metric,
                    Boot::Icount,
                    v,
                    variant,
                ));
            }
            r.push(rec("all_tests", "workers", Boot::Icount, threads, variant));
        }
        // Two more tsc repetitions of one variant: the median is printed.
        let four = "4node test_vmalloc.nr_threads=4";
        for (rep, v) in [(1, 10.0), (2, 500.0)] {
            let x = rec("fix_size_alloc_test", "avg_usec", Boot::Tsc, v, four);
            r.push(BenchRecord { rep, ..x });
        }
        // The det boot keeps counts only: no Summary line.
        r.push(rec("all_tests", "pool_allocs", Boot::Det, 2.0, four));
        r.push(BenchRecord::for_test(
            ["vmalloc_scaling", "cpu", "purges", "x"],
            1,
            Boot::Icount,
            0,
            3.0,
        ));
        let text = grid(&r);
        assert!(text.contains(
            "-- 4node test_vmalloc.nr_threads=4, tsc boot, 3 rep(s) (avg: TCG wall time, a trend only) --\n\
             test_vmalloc: Summary: fix_size_alloc_test passed: 4 failed: 0 repeat: 1 loops: 100 avg: 74 usec\n"
        ), "{text}");
        assert!(text.contains(
            "-- 4node test_vmalloc.nr_threads=1, icount boot, 1 rep(s) (avg: instructions, exact) --\n\
             test_vmalloc: Summary: align_shift_alloc_test passed: 0 failed: 1 repeat: 1 loops: 100 avg: 1092926 instructions\n\
             test_vmalloc: all_tests: workers 1\n"
        ), "{text}");
        assert!(text.contains(
            "-- 4node test_vmalloc.nr_threads=4, det boot, 1 rep(s) (counts only: the det boot keeps no times) --\n\
             test_vmalloc: all_tests: pool_allocs 2\n"
        ), "{text}");
        assert_eq!(text.matches("Summary:").count(), 4, "{text}");
        assert!(
            !text.contains("purges"),
            "another experiment's record: {text}"
        );
        assert_eq!(grid(&r[r.len() - 1..]), "");
    }
}
