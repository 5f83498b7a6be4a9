//! The per-experiment tables printed after a run: every metric, case and CPU count with its
//! value and its ratio against the experiment's baseline case.

use super::record::BenchRecord;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The case an experiment's ratios are taken against. `numalab/*` means the case with the
/// same workload after the slash.
fn baseline_rule(bench: &str) -> Option<&'static str> {
    Some(match bench {
        "slub_list_lock" => "linux_default",
        "slabinfo_reader" => "scan",
        "memoryless_node" => "single_node",
        "numa_locality" => "default",
        "vmalloc_scaling" => "global",
        "page_alloc" => "numalab",
        "alloc_peers" => "numalab/*",
        _ => return None,
    })
}

/// The baseline case for `case` of `bench`, given the cases present.
pub fn baseline_for(bench: &str, case: &str, cases: &[String]) -> Option<String> {
    let want = match baseline_rule(bench) {
        Some(rule) => match rule.strip_suffix("/*") {
            Some(prefix) => {
                let workload = case.split_once('/').map(|(_, w)| w)?;
                format!("{prefix}/{workload}")
            }
            None => rule.to_string(),
        },
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

/// Per experiment: one row per metric/case/cpus with its value and its ratio against the
/// baseline case (same metric, CPUs and clock).
pub fn tables(records: &[BenchRecord]) -> String {
    let mut by_bench: BTreeMap<&str, Vec<&BenchRecord>> = BTreeMap::new();
    for r in records {
        by_bench.entry(&r.bench).or_default().push(r);
    }
    let mut out = String::new();
    for (bench, rows) in by_bench {
        let mut cases: Vec<String> = Vec::new();
        for r in &rows {
            if !cases.contains(&r.case) {
                cases.push(r.case.clone());
            }
        }
        let rule = baseline_rule(bench).unwrap_or("first case");
        let _ = writeln!(out, "\n== {bench} (ratio: value / baseline {rule}) ==");
        let _ = writeln!(
            out,
            "{:<34} {:<28} {:>4} {:>6} {:>14} {:>8}  unit",
            "metric", "case", "cpus", "clock", "value", "ratio"
        );
        let mut metrics: Vec<&str> = Vec::new();
        for r in &rows {
            if !metrics.contains(&r.metric.as_str()) {
                metrics.push(&r.metric);
            }
        }
        for metric in metrics {
            let mut mrows: Vec<&&BenchRecord> =
                rows.iter().filter(|r| r.metric == metric).collect();
            mrows.sort_by_key(|r| {
                (
                    cases.iter().position(|c| *c == r.case),
                    r.cpus,
                    r.clock.clone(),
                )
            });
            for r in mrows {
                let base = baseline_for(bench, &r.case, &cases).and_then(|b| {
                    rows.iter().find(|x| {
                        x.case == b
                            && x.metric == r.metric
                            && x.cpus == r.cpus
                            && x.clock == r.clock
                    })
                });
                let ratio = match base {
                    Some(b) if b.value != 0.0 => format!("{:.2}x", r.value / b.value),
                    Some(_) if r.value == 0.0 => "1.00x".into(),
                    _ => "-".into(),
                };
                let _ = writeln!(
                    out,
                    "{:<34} {:<28} {:>4} {:>6} {:>14} {:>8}  {}",
                    metric,
                    r.case,
                    r.cpus,
                    r.clock,
                    fmt_value(r.value),
                    ratio,
                    r.unit
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::tests::line;
    use crate::bench::{parse_log, Boot};

    #[test]
    fn table_ratios_use_the_baseline_at_the_same_cpus() {
        let log = [
            line("slub_list_lock", "linux_default", "ops_per_cpu", "100", 2),
            line("slub_list_lock", "partial_64", "ops_per_cpu", "150", 2),
            line("slub_list_lock", "linux_default", "ops_per_cpu", "50", 8),
            line("slub_list_lock", "partial_64", "ops_per_cpu", "100", 8),
            line(
                "alloc_peers",
                "talc/fast64",
                "instructions_per_pair",
                "120",
                1,
            ),
            line(
                "alloc_peers",
                "numalab/fast64",
                "instructions_per_pair",
                "40",
                1,
            ),
        ]
        .join("\n");
        let (records, _) = parse_log(&log, Boot::Tsc);
        let t = tables(&records);
        let row = |case: &str, cpus: &str| {
            t.lines()
                .find(|l| l.contains(case) && l.split_whitespace().nth(2) == Some(cpus))
                .unwrap_or_else(|| panic!("no row {case} {cpus} in\n{t}"))
                .to_string()
        };
        assert!(row("partial_64", "2").contains("1.50x"), "{t}");
        assert!(row("partial_64", "8").contains("2.00x"), "{t}");
        assert!(row("linux_default", "8").contains("1.00x"), "{t}");
        assert!(row("talc/fast64", "1").contains("3.00x"), "{t}");
        assert!(t.contains("== alloc_peers") && t.contains("== slub_list_lock"));
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
