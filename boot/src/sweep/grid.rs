//! The test_vmalloc grid of a merged run: for every variant (one point of the grid, such as
//! `4node test_vmalloc.nr_threads=4`), boot and repetition, each test's `Summary:` line as
//! Linux's lib/test_vmalloc.c prints it, rebuilt from the `test_vmalloc` experiment's records
//! (passed and failed summed over the workers, avg the workers' mean run), then the run's
//! counts. docs/sweeps.md, docs/vmalloc.md.

use crate::bench::{catalog, BenchRecord, Boot};
use numalab_algo::vmalloc::test_grid::{summary_line, TESTS};
use std::collections::BTreeMap;

const BENCH: &str = catalog::TEST_VMALLOC.name;

/// What each boot's avg is.
fn avg_of(boot: Boot) -> (&'static str, &'static str, &'static str) {
    match boot {
        Boot::Tsc | Boot::Uma => ("avg_usec", "usec", "avg: TCG wall time, a trend only"),
        Boot::Det => (
            "avg_instructions",
            "instructions",
            "avg: instructions of every vCPU while the worker ran, exact",
        ),
        Boot::Icount => (
            "avg_instructions",
            "instructions",
            "avg: instructions, exact",
        ),
    }
}

/// The grid's text, empty when `records` hold no test_vmalloc record.
pub fn grid(records: &[BenchRecord]) -> String {
    // (variant order, boot, rep) -> case -> metric -> value.
    type Point = BTreeMap<String, BTreeMap<String, f64>>;
    let mut variants: Vec<String> = Vec::new();
    let mut points: BTreeMap<(usize, Boot, u32), Point> = BTreeMap::new();
    for r in records.iter().filter(|r| r.bench == BENCH) {
        let v = r.variant.clone().unwrap_or_default();
        let i = variants.iter().position(|x| *x == v).unwrap_or_else(|| {
            variants.push(v);
            variants.len() - 1
        });
        points
            .entry((i, r.boot, r.rep))
            .or_default()
            .entry(r.case.clone())
            .or_default()
            .insert(r.metric.clone(), r.value);
    }
    if points.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\n== test_vmalloc grid (Linux's Summary lines; passed and failed summed over the workers, avg their mean run) ==\n",
    );
    for ((i, boot, rep), cases) in &points {
        let (metric, unit, what) = avg_of(*boot);
        let name = if variants[*i].is_empty() {
            String::from("(single run)")
        } else {
            variants[*i].clone()
        };
        out.push_str(&format!(
            "-- {name}, {} boot, rep {rep} ({what}) --\n",
            boot.name()
        ));
        for test in TESTS {
            let Some(m) = cases.get(test) else {
                continue;
            };
            let get = |k: &str| m.get(k).copied().unwrap_or(f64::NAN);
            let line = summary_line(
                test,
                get("passed") as u64,
                get("failed") as u64,
                get("repeat") as u64,
                get("loops") as u64,
                get(metric).round() as u64,
                unit,
            );
            out.push_str(&format!("test_vmalloc: {line}\n"));
        }
        if let Some(all) = cases.get(catalog::ALL_TESTS) {
            let words: Vec<String> = all.iter().map(|(k, v)| format!("{k} {v}")).collect();
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
        r.push(BenchRecord::for_test(
            ["vmalloc_scaling", "cpu", "purges", "x"],
            1,
            Boot::Icount,
            0,
            3.0,
        ));
        let text = grid(&r);
        assert!(text.contains(
            "-- 4node test_vmalloc.nr_threads=4, tsc boot, rep 0 (avg: TCG wall time, a trend only) --\n\
             test_vmalloc: Summary: fix_size_alloc_test passed: 4 failed: 0 repeat: 1 loops: 100 avg: 74 usec\n"
        ), "{text}");
        assert!(text.contains(
            "-- 4node test_vmalloc.nr_threads=1, icount boot, rep 0 (avg: instructions, exact) --\n\
             test_vmalloc: Summary: align_shift_alloc_test passed: 0 failed: 1 repeat: 1 loops: 100 avg: 1092926 instructions\n\
             test_vmalloc: all_tests: workers 1\n"
        ), "{text}");
        assert_eq!(text.matches("Summary:").count(), 4, "{text}");
        assert!(
            !text.contains("purges"),
            "another experiment's record: {text}"
        );
        assert_eq!(grid(&r[r.len() - 1..]), "");
    }
}
