//! The twin's BENCH contract: malformed lines, records without a Linux `kernel` field, and the
//! records every mirrored experiment that ran and passed must print (slub_list_lock's over its
//! two boots; in a det boot, det.rs, the trace's `instructions_per_op` of a region).

use super::{REQUIRED, REQUIRED_MEMORYLESS, SLUB_LIST_LOCK_CASES};
use crate::bench::Boot;
use crate::qemu::Verdict;
use crate::run::BootRun;
use crate::wire::BootLog;

/// The caches whose objects Linux found still allocated when the module destroyed them
/// (`BUG CACHE (...): Objects remaining on __kmem_cache_shutdown()`,
/// numalab_algo::wire::twin), as one line: memory lost, which fails the run as numalab's own
/// lost-memory warnings do. None when there were none.
pub fn lost_objects(log: &BootLog) -> Option<String> {
    let mut caches: Vec<(String, usize)> = Vec::new();
    for name in &log.objects_remaining {
        match caches.iter_mut().find(|(n, _)| n == name) {
            Some(c) => c.1 += 1,
            None => caches.push((name.clone(), 1)),
        }
    }
    if caches.is_empty() {
        return None;
    }
    let list: Vec<String> = caches
        .iter()
        .map(|(n, k)| format!("{n} ({k} slabs)"))
        .collect();
    Some(format!(
        "the kernel found objects still allocated when the module destroyed its caches \
         (\"Objects remaining on __kmem_cache_shutdown()\"): {}; memory lost \
         (docs/linux-twin.md, \"The verdict at 140e37e\")",
        list.join(", ")
    ))
}

/// Every breach of the twin's contract: malformed BENCH lines, records without a Linux
/// `kernel` field, and required records missing from an experiment that ran and passed.
pub fn contract_problems(runs: &[BootRun]) -> Vec<String> {
    let mut out = Vec::new();
    for r in runs {
        for v in &r.violations {
            out.push(format!("linux {} boot, {v}", r.boot.name()));
        }
        for rec in r
            .records
            .iter()
            .filter(|x| !crate::build::linux_kernel::LinuxKernel::is_linux(&x.kernel))
        {
            out.push(format!(
                "linux {} boot: {}/{}/{} has kernel '{}', not linux-VERSION",
                r.boot.name(),
                rec.bench,
                rec.case,
                rec.metric,
                rec.kernel
            ));
        }
        if let Some(lost) = lost_objects(&r.outcome.boot_log) {
            out.push(format!("linux {} boot: {lost}", r.boot.name()));
        }
        if r.outcome.verdict != Verdict::Pass {
            continue;
        }
        let ran = r.ran();
        if r.boot == Boot::Det {
            // The det boot keeps counts only, and Debian's Linux counts nothing itself (no
            // SLUB_STATS, no lock_stat): what it must give is its traced regions.
            for bench in super::det::DET_EXPERIMENTS
                .iter()
                .filter(|b| ran.contains(**b))
            {
                let traced = r.records.iter().any(|x| {
                    x.bench == *bench && x.metric == "instructions_per_op" && x.boot == Boot::Det
                });
                if !traced {
                    out.push(format!(
                        "linux det boot: {bench} ran but no traced region of it counted its operations (no instructions_per_op: the module printed no `# trace region`/`# trace ops` lines, or the trace was off)"
                    ));
                }
            }
            continue;
        }
        let memoryless = REQUIRED_MEMORYLESS
            .iter()
            .filter(|(b, _)| *b == r.boot)
            .map(|(_, case)| ("memoryless_node", *case, "slab_kib"));
        let wanted = REQUIRED.iter().copied().chain(memoryless);
        for (bench, case, metric) in wanted.filter(|(b, _, _)| ran.contains(*b)) {
            let present = r
                .records
                .iter()
                .any(|x| x.bench == *bench && x.case == *case && x.metric == *metric);
            if !present {
                out.push(format!(
                    "linux {} boot: {bench} ran but printed no {case} {metric}",
                    r.boot.name()
                ));
            }
        }
    }
    // slub_list_lock's four cases come from two boots: every case from one of them.
    let list_lock_ran = runs.iter().any(|r| {
        r.boot != Boot::Det
            && r.outcome.verdict == Verdict::Pass
            && r.ran().contains("slub_list_lock")
    });
    // A tuning the kernel does not have (7.x: no per-CPU partial slabs, so no cpu_partial
    // to double) is exempt when the module said so in its log ("CASE: not run: ...").
    let not_run = |case: &str| {
        runs.iter().any(|r| {
            r.outcome
                .boot_log
                .diagnostics_of("slub_list_lock")
                .filter_map(|t| t.split_once(": not run: "))
                .any(|(c, _)| c == case)
        })
    };
    for (_, case) in SLUB_LIST_LOCK_CASES
        .iter()
        .filter(|_| list_lock_ran)
        .filter(|(_, c)| !not_run(c))
    {
        let present = runs
            .iter()
            .flat_map(|r| &r.records)
            .any(|x| x.bench == "slub_list_lock" && x.case == *case && x.metric == "ops_per_cpu");
        if !present {
            out.push(format!(
                "linux tsc boots: slub_list_lock ran but printed no {case} ops_per_cpu"
            ));
        }
    }
    out
}
