//! The report: one step after the boots ran, for numalab alone and with the twin. Every
//! failed boot's report, the BENCH output contract (numalab's and the twin's), the result
//! files (results.rs), the tables (per experiment, then the seeds table, or with the twin the
//! side-by-side table), the summary line, and the exit status.

use super::args::BenchArgs;
use super::execute::Runs;
use super::results::{host_cpus, max_vcpus, write_results};
use super::twin;
use super::BootRun;
use crate::bench::{self, BenchRecord, Boot, BootResult};
use crate::cli::Kernel;
use crate::exit;
use crate::qemu::Verdict;
use std::time::Instant;

/// Reports `runs` of `args` (started at `start`) and returns the exit status: 0 when every
/// boot passed and the contract holds.
pub fn report(args: &BenchArgs, runs: &Runs, start: Instant) -> i32 {
    let twin = args.kernel != Kernel::Numalab;
    let mut status = exit::PASS;
    let labelled = runs
        .numalab
        .iter()
        .map(|r| ("numalab", r))
        .chain(runs.linux.iter().map(|r| ("linux", r)));
    for (kernel, r) in labelled {
        if r.outcome.verdict != Verdict::Pass {
            eprint!("{}", r.outcome.failure_report());
            if twin {
                eprintln!("numalab: bench: the {kernel} {} boot failed", r.boot.name());
            } else {
                eprintln!("numalab: bench: the {} boot failed", r.boot.name());
            }
            status = exit::of(&r.outcome.verdict);
        }
    }
    let mut problems = contract_problems(&runs.numalab);
    if twin {
        problems.extend(twin::contract_problems(&runs.linux));
        if runs.linux.is_empty() {
            problems.push(
                "--kernel linux: none of the selected experiments has a Linux counterpart".into(),
            );
        }
    }
    if !problems.is_empty() {
        eprintln!("numalab: bench: BENCH output contract violated:");
        for p in &problems {
            eprintln!("  {p}");
        }
        status = status.max(exit::FAIL);
    }
    let numalab: Vec<BenchRecord> = runs
        .numalab
        .iter()
        .flat_map(|r| r.records.clone())
        .collect();
    let all: Vec<BenchRecord> = runs
        .numalab
        .iter()
        .chain(&runs.linux)
        .flat_map(|r| r.records.clone())
        .collect();
    match write_results(args, runs, &all) {
        Ok(files) => {
            if !twin {
                println!(
                    "{}",
                    machine_line(host_cpus(), max_vcpus(&runs.numalab), args.reps)
                );
            }
            // The numalab tables (medians over repetitions) from numalab's records only; both
            // kernels meet in the side-by-side table.
            print!("{}", bench::tables(&numalab, host_cpus()));
            if twin {
                println!();
                print!("{}", twin::side_by_side(&all));
            } else {
                print!("{}", bench::seeds_table(&all));
            }
            println!();
            for f in files {
                println!("numalab: bench: wrote {}", f.display());
            }
        }
        Err(e) => {
            eprintln!("numalab: bench: {e}");
            status = status.max(exit::FAIL);
        }
    }
    let verdict = if status == exit::PASS { "PASS" } else { "FAIL" };
    let seconds = start.elapsed().as_secs_f64();
    if twin {
        println!(
            "numalab: {verdict}: {} measurements from {} boots ({} numalab, {} linux) ({seconds:.1} s)",
            all.len(),
            runs.numalab.len() + runs.linux.len(),
            runs.numalab.len(),
            runs.linux.len(),
        );
    } else {
        let t = runs
            .numalab
            .iter()
            .find(|r| r.boot == Boot::Tsc)
            .map(|r| &r.outcome.ktap);
        println!(
            "numalab: {verdict}: {} measurements from {} boots{} ({seconds:.1} s)",
            all.len(),
            runs.numalab.len(),
            t.map(|k| format!(", {} tests passed in the multi-CPU boot", k.passed()))
                .unwrap_or_default(),
        );
    }
    status
}

/// The line printed above the tables: host cores, vCPUs, and whether the host is
/// oversubscribed (more vCPUs than cores: vCPUs take turns, contention figures are compressed).
pub fn machine_line(host_cpus: usize, vcpus: u32, reps: u32) -> String {
    let over = vcpus as usize > host_cpus;
    format!(
        "numalab: bench: host {host_cpus} cores, machine {vcpus} vCPUs{}; tsc boots repeated {reps}x (median, min..max; n.s. = ranges overlap)",
        if over {
            ": OVERSUBSCRIBED (vCPUs take turns on the host cores; contention figures flagged below are compressed)"
        } else {
            ""
        }
    )
}

/// Every breach of the contract in numalab's `runs`: malformed BENCH lines (with boot and line
/// number), and required measurements missing from a boot whose experiment ran and passed.
pub fn contract_problems(runs: &[BootRun]) -> Vec<String> {
    let mut out: Vec<String> = runs
        .iter()
        .flat_map(|r| {
            r.violations
                .iter()
                .map(move |v| format!("{} boot, {v}", r.boot.name()))
        })
        .collect();
    out.extend(bench::missing_required(&passed_results(runs)));
    out
}

/// The results of the boots of `runs` that passed, as the contract checks read them.
fn passed_results(runs: &[BootRun]) -> Vec<BootResult<'_>> {
    runs.iter()
        .filter(|r| r.outcome.verdict == Verdict::Pass)
        .map(|r| BootResult {
            boot: r.boot,
            ran: r.ran(),
            nodes: r.nodes(),
            records: &r.records,
        })
        .collect()
}

/// The catalog against what the kernel printed in `runs` (passed boots only): every case the
/// catalog says an experiment that ran always prints in that boot, and no case or experiment
/// the catalog lacks (`bench::missing_cases`). The smoke benchmark test asks for this; a run
/// on another machine may legitimately lack a case, so the contract does not.
pub fn catalog_problems(runs: &[BootRun]) -> Vec<String> {
    bench::missing_cases(&passed_results(runs))
}
