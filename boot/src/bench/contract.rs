//! The required measurements of the BENCH output contract: which bench/case/metric each
//! experiment must print in which boot whenever it ran and passed, and what is missing.

use super::record::{BenchRecord, Boot};
use numalab_algo::bench::catalog::{self, CATALOG};
use std::collections::BTreeSet;

/// A measurement the contract requires whenever its experiment ran (and passed) in `boot`.
#[derive(Clone, Copy, Debug)]
pub struct Required {
    pub bench: &'static str,
    /// `*`: any case.
    pub case: &'static str,
    pub metric: &'static str,
    pub boot: Boot,
    /// Only on a machine with more than one NUMA node.
    pub numa_only: bool,
}

/// Every required bench/case/metric, from the experiment catalog
/// (kernel/algo/src/bench/catalog; docs/benchmarks.md lists them with their meaning). The det
/// boot requires the counts (`MetricKind::Count`) of what the tsc boot requires, and keeps
/// nothing else.
pub fn required() -> Vec<Required> {
    let mut out = Vec::new();
    for e in CATALOG {
        for (case, metric, boot) in e.required_triples() {
            out.push(Required {
                bench: e.name,
                case,
                metric,
                boot,
                numa_only: e.numa_only,
            });
        }
    }
    out
}

/// One boot's results as the contract check needs them.
pub struct BootResult<'a> {
    pub boot: Boot,
    /// Names of the experiments whose KTest passed (not skipped) in this boot.
    pub ran: BTreeSet<String>,
    pub nodes: u32,
    pub records: &'a [BenchRecord],
}

/// Messages for every required measurement missing from a boot whose experiment ran.
pub fn missing_required(boots: &[BootResult]) -> Vec<String> {
    let mut out = Vec::new();
    for r in required() {
        for b in boots.iter().filter(|b| b.boot == r.boot) {
            if !b.ran.contains(r.bench) || (r.numa_only && b.nodes < 2) {
                continue;
            }
            let found = b.records.iter().any(|x| {
                x.bench == r.bench && x.metric == r.metric && (r.case == "*" || x.case == r.case)
            });
            if !found {
                out.push(format!(
                    "{} ran in the {} boot but printed no BENCH line for case '{}' metric '{}'",
                    r.bench,
                    r.boot.name(),
                    r.case,
                    r.metric
                ));
            }
        }
    }
    out
}

/// Messages for every catalog case missing from a boot whose experiment ran: each case the
/// catalog says the experiment always prints in that boot (`Case::always`, `Case::boots`),
/// on the machine it is meant for (a NUMA-only experiment on a NUMA machine). The contract
/// check of every run asks only for the required metrics; the smoke benchmark test
/// (tests/s09_bench.rs) asks for this too, so a case dropped from the kernel or from the
/// catalog fails a test.
pub fn missing_cases(boots: &[BootResult]) -> Vec<String> {
    let mut out = Vec::new();
    for b in boots {
        for e in CATALOG.iter().filter(|e| b.ran.contains(e.name)) {
            if e.numa_only && b.nodes < 2 {
                continue;
            }
            for c in e.cases_in(b.boot).filter(|c| c.always) {
                if !b
                    .records
                    .iter()
                    .any(|x| x.bench == e.name && x.case == c.name)
                {
                    out.push(format!(
                        "{} ran in the {} boot but printed no case '{}' (the catalog lists it)",
                        e.name,
                        b.boot.name(),
                        c.name
                    ));
                }
            }
        }
        for x in b.records {
            match catalog::find(&x.bench) {
                Some(e) if e.has_case(&x.case) => {}
                Some(_) => out.push(format!(
                    "{} boot: {} printed case '{}', which the catalog does not list",
                    b.boot.name(),
                    x.bench,
                    x.case
                )),
                None => out.push(format!(
                    "{} boot: experiment '{}' is not in the catalog",
                    b.boot.name(),
                    x.bench
                )),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::parse_log;
    use crate::bench::tests::line;

    #[test]
    fn det_requires_counts_the_tsc_boot_also_requires() {
        let all = required();
        let det: Vec<&Required> = all.iter().filter(|r| r.boot == Boot::Det).collect();
        assert!(det.len() >= 10, "{det:?}");
        for d in det {
            assert!(
                all.iter().any(|t| t.boot == Boot::Tsc
                    && (t.bench, t.case, t.metric) == (d.bench, d.case, d.metric)),
                "{d:?} is required in det but not in tsc"
            );
            assert!(
                !d.metric.ends_with("_share") && !d.metric.contains("per_sec"),
                "{d:?}: det keeps counts only"
            );
        }
    }

    #[test]
    fn required_measurements_missing_from_a_boot_that_ran() {
        let e = &catalog::SLABINFO_READER;
        let (first, second) = (e.cases[0].name, e.cases[1].name);
        let log = line(e.name, first, "max_list_lock_hold", "10", 7);
        let (records, _) = parse_log(&log, Boot::Tsc);
        let ran: BTreeSet<String> = [e.name.to_string()].into();
        let boots = [BootResult {
            boot: Boot::Tsc,
            ran,
            nodes: 4,
            records: &records,
        }];
        let missing = missing_required(&boots);
        let wanted = e
            .required_triples()
            .iter()
            .filter(|t| t.2 == Boot::Tsc)
            .count();
        assert_eq!(missing.len(), wanted - 1, "{missing:#?}");
        assert!(missing
            .iter()
            .any(|m| m.contains(&format!("case '{second}' metric 'active_objs_error'"))));
        // An experiment that did not run (skipped, or not in the tree) requires nothing.
        let none = [BootResult {
            boot: Boot::Tsc,
            ran: BTreeSet::new(),
            nodes: 4,
            records: &records,
        }];
        assert!(missing_required(&none).is_empty());
    }

    #[test]
    fn catalog_cases_missing_or_unknown() {
        let e = &catalog::NUMA_LOCALITY;
        let (first, second) = (e.cases[0].name, e.cases[1].name);
        let log = [
            line(e.name, first, "slab_kib", "10", 7),
            line(e.name, "no_such_case", "slab_kib", "10", 7),
            line("no_such_bench", "x", "y", "1", 1),
        ]
        .join("\n");
        let (records, _) = parse_log(&log, Boot::Tsc);
        let boot = |nodes| BootResult {
            boot: Boot::Tsc,
            ran: [e.name.to_string()].into(),
            nodes,
            records: &records,
        };
        let missing = missing_cases(&[boot(4)]);
        assert_eq!(missing.len(), 3, "{missing:#?}");
        assert!(missing[0].contains(&format!("printed no case '{second}'")));
        assert!(missing[1].contains("case 'no_such_case', which the catalog does not list"));
        assert!(missing[2].contains("'no_such_bench' is not in the catalog"));
        // A NUMA-only experiment on one node is not asked for its cases.
        assert_eq!(missing_cases(&[boot(1)]).len(), 2);
    }
}
