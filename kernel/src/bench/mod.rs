//! Experiments: every benchmark numalab runs, one file each, registered with `ktest!` in the
//! `bench` suite. Nothing imports this module; it imports the subsystems it measures.
//!
//! The BENCH writer (clock, record, progress, smoke scaling, `bench=` selection) is
//! `ktest::bench`, re-exported here, with the experiment catalog (`catalog`,
//! kernel/algo/src/bench/catalog): each experiment takes its name from its catalog entry, and
//! `record` refuses a case the entry does not list. `bench.plan` runs first whenever
//! benchmarks run: it lists the registered experiments and fails when `bench=` names one that
//! does not exist, or when the registered experiments and the catalog differ.
//!
//! One file per experiment, named after it (`clock_overhead` lives here); what each prints,
//! in which boots, and the seed thread it replays are in its catalog entry.

#![deny(unsafe_code)]

mod alloc_peers;
mod kfree_rcu_scale;
mod latency_matrix;
mod list_churn;
pub mod lock_stat;
mod memoryless_node;
mod memoryless_sheaves;
mod numa_locality;
mod page_alloc;
mod pairs;
pub mod region;
mod region_tests;
mod sheaves_opt_in;
mod sheaves_vs_partial;
mod slabinfo_reader;
mod slub_cache;
mod slub_list_lock;
mod smp_calls;
mod test_vmalloc;
mod vmalloc_page_order;
mod vmalloc_scaling;
mod workload;

pub use crate::ktest::bench::*;
use crate::ktest::{self, Ctx, Kind, TestError, TestResult};
use numalab_algo::wire::bench as wire;

pub use crate::ktest::suites::BENCH as BENCH_SUITE;

/// `bench.plan`: lists the registered experiments and this boot's settings, and fails when
/// `bench=` names an experiment that does not exist (the message lists the valid names) or
/// when an experiment is registered without a catalog entry, or the other way round.
fn plan(ctx: &Ctx) -> TestResult {
    let mut names: alloc::vec::Vec<&str> = ktest::registered()
        .iter()
        .filter(|t| t.kind == Kind::Bench)
        .map(|t| t.name)
        .collect();
    names.sort_unstable();
    crate::println!("{}", wire::registered_line(names.iter().copied()));
    crate::println!(
        "{}",
        wire::header_line(
            clock().name(),
            smoke(),
            ctx.cpus_online,
            ctx.nr_nodes,
            &if selection().is_all() {
                alloc::string::String::from("all")
            } else {
                selection().names().join(",")
            }
        )
    );
    let mut errors = selection().unknown(names.iter().copied());
    for n in names.iter().filter(|n| catalog::find(n).is_none()) {
        errors.push(alloc::format!(
            "bench: experiment '{n}' is registered but has no catalog entry \
             (kernel/algo/src/bench/catalog)"
        ));
    }
    for n in catalog::names().filter(|n| !names.contains(n)) {
        errors.push(alloc::format!(
            "bench: the catalog lists '{n}' but no experiment of that name is registered"
        ));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(TestError::Fail(errors.join("; ")))
    }
}

/// `clock_overhead`: ticks between two back-to-back `now()` reads, the floor of every short
/// measurement in this boot (about 1-2 instructions under icount; host time under tsc).
const CLOCK_OVERHEAD: &str = catalog::CLOCK_OVERHEAD.name;

fn clock_overhead(_ctx: &Ctx) -> TestResult {
    let reads = scaled(1_000_000, 10_000);
    let mut min_ticks = u64::MAX;
    let mut sum_ticks = 0u64;
    for i in 0..reads {
        let t0 = now();
        let t1 = now();
        let d = t1.wrapping_sub(t0);
        min_ticks = min_ticks.min(d);
        sum_ticks = sum_ticks.wrapping_add(d);
        if i % 4096 == 0 {
            progress(CLOCK_OVERHEAD, "rdtsc", (i * 100 / reads) as u32);
        }
    }
    let unit = if instruction_boot() {
        "instructions"
    } else {
        "tsc_ticks"
    };
    record(
        CLOCK_OVERHEAD,
        "rdtsc",
        "min_ticks_per_read",
        min_ticks as f64,
        unit,
        1,
    );
    record(
        CLOCK_OVERHEAD,
        "rdtsc",
        "mean_ticks_per_read",
        sum_ticks as f64 / reads as f64,
        unit,
        1,
    );
    Ok(())
}

crate::ktest!(BENCH_SUITE, BenchPlan, plan);
crate::ktest!(BENCH_SUITE, Bench, CLOCK_OVERHEAD, clock_overhead);

/// `bench.sysfs`: after every experiment, every cache's /sys/kernel/slab files and
/// /proc/slabinfo from one snapshot (the `# sysfs:` block; the runner writes them under the
/// run folder, docs/slub.md#sysfs-and-procslabinfo-of-a-run).
fn sysfs(_ctx: &Ctx) -> TestResult {
    crate::mm::slub::info::print_sysfs_block();
    Ok(())
}

crate::ktest!(BENCH_SUITE, BenchEnd, sysfs);
