//! The report: one step after the boots ran, for numalab alone and with the twin. Every
//! failed boot's report, the BENCH output contract (numalab's and the twin's), the result
//! files (results.rs), the tables (per experiment, then the seeds table, or with the twin the
//! side-by-side table), the summary line, and the exit status.

use super::args::BenchArgs;
use super::console;
use super::execute::Runs;
use super::results::{host_cpus, max_vcpus, write_results};
use super::twin;
use super::BootRun;
use crate::bench::{self, BenchRecord, Boot, BootResult};
use crate::cli::exit;
use crate::cli::Kernel;
use crate::qemu::Verdict;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What a report found: the exit status (0 when every boot passed and the contract holds),
/// the files written, what ran (for the verdict line) and how long it took.
pub struct Reported {
    pub status: i32,
    pub files: Vec<PathBuf>,
    pub what: String,
    pub passed: bool,
    pub took: Duration,
}

/// Reports `runs` of `args` (started at `start`), all but where the files went and the verdict
/// line ([`finish`]: the main job prints its soak between the two).
pub fn report(args: &BenchArgs, runs: &Runs, start: Instant) -> Reported {
    let twin = args.kernel != Kernel::Numalab;
    let mut status = exit::PASS;
    let labelled = runs
        .numalab
        .iter()
        .map(|r| ("numalab", r))
        .chain(runs.linux.iter().map(|r| {
            (
                r.config
                    .kernel
                    .linux
                    .as_ref()
                    .map_or("linux", |l| l.kernel.name()),
                r,
            )
        }));
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
        // Per Linux kernel: slub_list_lock's cases come from two boots of the same kernel.
        for &kernel in args.kernel.linuxes() {
            let mine: Vec<BootRun> = runs
                .linux
                .iter()
                .filter(|r| {
                    r.config
                        .kernel
                        .linux
                        .as_ref()
                        .is_some_and(|l| l.kernel == kernel)
                })
                .cloned()
                .collect();
            problems.extend(twin::contract_problems(&mine));
        }
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
    // latency_matrix under the trace: a cell off the cost model fails the run, naming it
    // (boot/src/trace/mlc_table.rs).
    for r in &runs.numalab {
        if let Some(m) = r.trace.as_ref().and_then(|t| t.mlc.as_ref()) {
            if !m.failures.is_empty() {
                eprintln!(
                    "numalab: bench: the {} boot's latency_matrix check failed:",
                    r.boot.name()
                );
                for f in &m.failures {
                    eprintln!("  {f}");
                }
                status = status.max(exit::FAIL);
            }
        }
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
    // The traced side by side (run/twin/traced.rs): its ratio records go into the JSONL.
    let traced = twin.then(|| twin::traced::of_runs(runs, &all, &args.base.kernel.options));
    let written: Vec<BenchRecord> = all
        .iter()
        .chain(traced.iter().flat_map(|t| &t.records))
        .cloned()
        .collect();
    let files = match write_results(args, runs, &written) {
        Ok(files) => files,
        Err(e) => {
            eprintln!("numalab: bench: {e}");
            status = status.max(exit::FAIL);
            Vec::new()
        }
    };
    let host = machine_line(host_cpus(), max_vcpus(&runs.numalab), args.reps);
    if args.main_job && !args.verbose {
        // The main job's console: machine, tests, seeds, one line per experiment;
        // `./qemu-run.sh --verbose` and `bench` print every table instead.
        println!();
        print!("{}", console::machine_and_tests(&runs.numalab, &host));
        print!("{}", bench::seeds_table_compact(&all));
    } else {
        if !twin {
            println!("{host}");
        }
        // The numalab tables (medians over repetitions) from numalab's records only; both
        // kernels meet in the side-by-side table.
        print!("{}", bench::tables(&numalab, host_cpus()));
        if twin {
            println!();
            print!("{}", twin::side_by_side(&all, &args.base.kernel.options));
            if let Some(t) = traced.as_ref().filter(|t| !t.console.is_empty()) {
                print!("\n{}", t.console);
            }
        } else {
            print!("{}", bench::seeds_table(&all));
        }
    }
    // The seeds table's modelled rows: which cost model gave their figures (docs/costs.md).
    // Each traced boot names its own model: the main job's det boot (4node) and seed 006's
    // icount boot (8node-2mem) are different machines, so their rows can have different models.
    let mut models: Vec<String> = Vec::new();
    for r in &runs.numalab {
        let Some(t) = r.trace.as_ref() else { continue };
        let m = format!(
            "{} boot on {}: {}",
            r.boot.name(),
            r.config.machine.topology.name,
            t.cost_model
        );
        if !models.contains(&m) {
            models.push(m);
        }
    }
    if !models.is_empty() && !twin {
        println!(
            "modelled rows: cost model {} (trace plugin; docs/costs.md)",
            models.join("; ")
        );
    }
    // The main job's console stays short: its c2c tables are in the run folder.
    let show_c2c = !args.main_job || args.verbose;
    for r in runs
        .numalab
        .iter()
        .chain(&runs.linux)
        .filter_map(|r| r.trace.as_ref())
    {
        if show_c2c && !r.console.is_empty() {
            println!("\n== perf c2c: the hottest lines of each experiment at its most CPUs (trace plugin, {}) ==", r.summary.trim_start_matches("numalab: trace "));
            print!("{}", r.console);
        }
        if let Some(m) = r.mlc.as_ref().filter(|_| show_c2c) {
            println!();
            print!("{}", m.text);
        }
    }
    println!("\n== experiments: the metric of record of each (catalog headline) ==");
    // The run's own design: the det boots under the other SLUB designs (their records have a
    // variant) have their own tables above.
    let plain: Vec<BenchRecord> = numalab
        .iter()
        .filter(|r| r.variant.is_none())
        .cloned()
        .collect();
    print!("{}", bench::headlines(&plain));
    let passed = status == exit::PASS;
    let what = if twin {
        format!(
            "{} measurements from {} boots ({} numalab, {} linux)",
            all.len(),
            runs.numalab.len() + runs.linux.len(),
            runs.numalab.len(),
            runs.linux.len(),
        )
    } else {
        let t = runs
            .numalab
            .iter()
            .find(|r| r.boot == Boot::Tsc)
            .map(|r| &r.outcome.boot_log.ktap);
        format!(
            "{} measurements from {} boots{}",
            all.len(),
            runs.numalab.len(),
            t.map(|k| format!(", {} tests passed in the multi-CPU boot", k.passed()))
                .unwrap_or_default(),
        )
    };
    Reported {
        status,
        files,
        what,
        passed,
        took: start.elapsed(),
    }
}

/// Prints where `r`'s files went and its verdict line; returns its status.
pub fn finish(r: &Reported) -> i32 {
    print!(
        "{}",
        console::where_lines(&r.files, &crate::build::image::repo_root())
    );
    println!("{}", console::verdict_line(r.passed, &r.what, r.took));
    r.status
}

/// The line printed above the tables: host cores, vCPUs, and whether the host is
/// oversubscribed (more vCPUs than cores: vCPUs take turns, contention figures are compressed).
pub fn machine_line(host_cpus: usize, vcpus: u32, reps: u32) -> String {
    let over = vcpus as usize > host_cpus;
    format!(
        "numalab: bench: host {host_cpus} cores, machine {vcpus} vCPUs{}; tsc boots repeated {reps}x (median, min..max; n.s. = ranges overlap)",
        if over {
            ": OVERSUBSCRIBED (vCPUs take turns on the cores: contention figures compressed)"
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
