//! The twin's BENCH contract: malformed lines, records without a Linux `kernel` field, and the
//! records every mirrored experiment that ran and passed must print (slub_list_lock's over its
//! two boots; in a det boot, det.rs, the trace's `instructions_per_op` of a region).

use super::{REQUIRED, REQUIRED_MEMORYLESS, SLUB_LIST_LOCK_CASES};
use crate::bench::Boot;
use crate::qemu::Verdict;
use crate::run::BootRun;

/// Every breach of the twin's contract: malformed BENCH lines, records without a Linux
/// `kernel` field, and required records missing from an experiment that ran and passed.
pub fn contract_problems(runs: &[BootRun]) -> Vec<String> {
    let mut out = Vec::new();
    for r in runs {
        for v in &r.violations {
            out.push(format!("linux {} boot, {v}", r.boot.name()));
        }
        for rec in r.records.iter().filter(|x| !x.kernel.starts_with("linux-")) {
            out.push(format!(
                "linux {} boot: {}/{}/{} has kernel '{}', not linux-VERSION",
                r.boot.name(),
                rec.bench,
                rec.case,
                rec.metric,
                rec.kernel
            ));
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
        let said = format!("# slub_list_lock: {case}: not run: ");
        runs.iter().any(|r| r.outcome.log.contains(&said))
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
