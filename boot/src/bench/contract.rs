//! The required measurements of the BENCH output contract: which bench/case/metric each
//! experiment must print in which boot whenever it ran and passed, and what is missing.

use super::record::{BenchRecord, Boot};
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

/// A measurement required on every machine.
const fn req(
    bench: &'static str,
    case: &'static str,
    metric: &'static str,
    boot: Boot,
) -> Required {
    Required {
        bench,
        case,
        metric,
        boot,
        numa_only: false,
    }
}

/// [`req`], required only on a machine with more than one NUMA node.
const fn req_numa(
    bench: &'static str,
    case: &'static str,
    metric: &'static str,
    boot: Boot,
) -> Required {
    Required {
        numa_only: true,
        ..req(bench, case, metric, boot)
    }
}

/// Every required bench/case/metric (docs/benchmarks.md lists them with their meaning). The
/// det boot requires the counts (`MetricKind::Count`) of what the tsc boot requires, and keeps
/// nothing else.
pub fn required() -> Vec<Required> {
    use Boot::*;
    let mut out = vec![
        req("clock_overhead", "rdtsc", "min_ticks_per_read", Icount),
        req("clock_overhead", "rdtsc", "mean_ticks_per_read", Tsc),
        req("page_alloc", "numalab", "instructions_per_pair", Icount),
        req(
            "page_alloc",
            "buddy_system_allocator",
            "instructions_per_pair",
            Icount,
        ),
        req("vmalloc_scaling", "*", "instructions_per_pair", Icount),
        req("vmalloc_scaling", "*", "purges", Icount),
        req("memoryless_node", "fixed", "slab_kib", Tsc),
        req("memoryless_node", "unfixed", "slab_kib", Tsc),
        req("memoryless_node", "fixed", "slab_kib", Det),
        req("memoryless_node", "unfixed", "slab_kib", Det),
        req("memoryless_node", "fixed", "alloc_node_mismatch", Tsc),
        req("memoryless_node", "unfixed", "alloc_node_mismatch", Tsc),
        req("memoryless_node", "single_node", "slab_kib", Uma),
    ];
    for w in ["fast64", "random", "burst256"] {
        let case: &'static str = match w {
            "fast64" => "numalab/fast64",
            "random" => "numalab/random",
            _ => "numalab/burst256",
        };
        out.push(req("alloc_peers", case, "instructions_per_pair", Icount));
    }
    for case in ["linux_default", "partial_64", "order_4", "cpu_partial_x2"] {
        for metric in [
            "ops_per_cpu",
            "list_lock_acquisitions_per_kop",
            "list_lock_contended_per_kop",
            "list_lock_wait_per_kop",
            "list_lock_wait_share",
        ] {
            out.push(req("slub_list_lock", case, metric, Tsc));
        }
        for metric in [
            "list_lock_acquisitions_per_kop",
            "list_lock_contended_per_kop",
        ] {
            out.push(req("slub_list_lock", case, metric, Det));
        }
    }
    for case in ["scan", "counters"] {
        for metric in [
            "max_list_lock_hold",
            "mean_list_lock_hold",
            "active_objs_error",
            "worker_max_alloc_latency",
            "worker_list_lock_wait_per_kop",
            "partial_slabs_walked_per_read",
        ] {
            out.push(req("slabinfo_reader", case, metric, Tsc));
        }
        out.push(req("slabinfo_reader", case, "active_objs_error", Det));
    }
    for case in ["prefer_local", "default"] {
        for metric in [
            "local_object_fraction",
            "growth_local_object_fraction",
            "slab_kib",
            "allocations_per_sec",
            "alloc_prefer_local",
            "alloc_remote_partial",
        ] {
            out.push(req_numa("numa_locality", case, metric, Tsc));
        }
        for metric in ["local_object_fraction", "slab_kib"] {
            out.push(req_numa("numa_locality", case, metric, Det));
        }
    }
    for case in ["global", "cpu", "numa"] {
        for metric in [
            "global_lock_acquisitions_per_pair",
            "contended_acquisitions_per_pair",
            "node_lock_acquisitions_per_pair",
            "node_lock_contended_per_pair",
            "purges_per_kpair",
            "ops_per_sec",
        ] {
            out.push(req("vmalloc_scaling", case, metric, Tsc));
        }
        for metric in [
            "global_lock_acquisitions_per_pair",
            "contended_acquisitions_per_pair",
            "node_lock_acquisitions_per_pair",
            "purges_per_kpair",
        ] {
            out.push(req("vmalloc_scaling", case, metric, Det));
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
        let log = line("slabinfo_reader", "scan", "max_list_lock_hold", "10", 7);
        let (records, _) = parse_log(&log, Boot::Tsc);
        let ran: BTreeSet<String> = ["slabinfo_reader".to_string()].into();
        let boots = [BootResult {
            boot: Boot::Tsc,
            ran,
            nodes: 4,
            records: &records,
        }];
        let missing = missing_required(&boots);
        assert_eq!(missing.len(), 11, "{missing:#?}");
        assert!(missing
            .iter()
            .any(|m| m.contains("case 'counters' metric 'active_objs_error'")));
        // An experiment that did not run (skipped, or not in the tree) requires nothing.
        let none = [BootResult {
            boot: Boot::Tsc,
            ran: BTreeSet::new(),
            nodes: 4,
            records: &records,
        }];
        assert!(missing_required(&none).is_empty());
    }
}
