//! Benchmark `vmalloc_scaling` (seed 002): 1-page vmalloc+vfree pairs on every CPU at once
//! under the global, cpu and numa designs, reporting global (free-space) lock acquisitions and
//! contended acquisitions per pair, throughput (trend only under TCG), the fraction of pages
//! taken from the allocating CPU's node; in the host's one-CPU `--icount` boot
//! (`bench.clock=icount`, ktest::bench) only instructions per pair.
//!
//! The all-CPU part runs on a fresh instance per design whose lazy threshold is
//! `vmalloc.bench_lazy_max_pages` (default 1024 pages instead of Linux's 32768 for 8 CPUs) so
//! that a short QEMU run spans many purge cycles: the global lock is taken on pool misses and
//! purges, so what it measures is the steady state, reached by a warm-up of one purge cycle's
//! worth of pairs per CPU (not measured).
//! The one-CPU instruction count uses the boot's designs (Linux's threshold).

use alloc::format;
use core::panic::Location;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

use numalab_algo::options::Options;
use numalab_algo::vmalloc::{Layout, Policy, Scope, PAGE_BYTES};

use crate::ktest::{Ctx, TestError, TestResult};
use crate::mm::vmalloc::{self, AreaKind, Vmalloc};
use crate::smp::on_each_cpu;

const BENCH: &str = "vmalloc_scaling";

fn pairs(v: &Vmalloc, n: u64) -> Result<(), &'static str> {
    let caller = Location::caller();
    for _ in 0..n {
        let a = v
            .alloc(PAGE_BYTES, PAGE_BYTES, None, false, caller)
            .map_err(|e| e.describe())?;
        v.free(a, AreaKind::Vmalloc).map_err(|b| b.reason())?;
    }
    Ok(())
}

fn emit(case: &str, metric: &str, value: f64, unit: &str, cpus: usize) {
    super::record(BENCH, case, metric, value, unit, cpus as u32);
}

fn all_cpus(opts: &Options, p: Policy) -> Result<(), TestError> {
    let topo = crate::topology::get();
    let cpus = crate::percpu::nr_cpus_online().max(1);
    let per_cpu = super::scaled(opts.get(&crate::options::VMALLOC_BENCH_PAIRS), 100);
    let layout = Layout::new(
        p,
        topo.nr_cpus(),
        topo.nr_nodes(),
        opts.get(&crate::options::VMALLOC_BENCH_LAZY_MAX_PAGES),
    );
    let v = vmalloc::scratch(layout, 4 << 30)
        .ok_or_else(|| TestError::Skip("vmalloc not initialized".into()))?;
    let failed = AtomicU64::new(0);
    // Warm-up to the steady state: each CPU does one whole purge cycle's worth of pairs
    // (lazy_max_pages / 2 pairs of 2 pages), so that each pool has grown to what its CPU can
    // use in one cycle even when it runs alone while others are descheduled.
    let warm = (layout.lazy_max_pages / 2).max(1);
    on_each_cpu(&|_| {
        if pairs(&v, warm).is_err() {
            failed.fetch_add(1, Relaxed);
        }
    });
    v.purge(Scope::All, false);
    let g0 = v.global_lock_stats();
    let (l0, r0) = (v.counters.local_pages.get(), v.counters.remote_pages.get());
    let ticks = AtomicU64::new(0);
    on_each_cpu(&|_| {
        let t0 = crate::arch::rdtsc();
        if pairs(&v, per_cpu).is_err() {
            failed.fetch_add(1, Relaxed);
        }
        ticks.fetch_max(crate::arch::rdtsc() - t0, Relaxed);
    });
    let g = v.global_lock_stats().since(&g0);
    let local = v.counters.local_pages.get() - l0;
    let remote = v.counters.remote_pages.get() - r0;
    let total = (per_cpu * cpus as u64).max(1) as f64;
    vmalloc::print_counters(&v);
    v.purge(Scope::All, true);
    if failed.load(Relaxed) > 0 {
        return Err(TestError::Fail(format!(
            "{}: a vmalloc/vfree pair failed",
            p.name()
        )));
    }
    let name = p.name();
    let acq = g.acquisitions as f64 / total;
    emit(
        name,
        "global_lock_acquisitions_per_pair",
        acq,
        "acquisitions",
        cpus,
    );
    let contended = g.contended as f64 / total;
    emit(
        name,
        "contended_acquisitions_per_pair",
        contended,
        "acquisitions",
        cpus,
    );
    let hz = super::ticks_per_sec();
    let secs = ticks.load(Relaxed) as f64 / hz as f64;
    emit(name, "ops_per_sec", total / secs.max(1e-9), "pairs/s", cpus);
    let fraction = local as f64 / (local + remote).max(1) as f64;
    emit(name, "local_page_fraction", fraction, "fraction", cpus);
    crate::println!(
        "# {}[{}]: {} pairs on {} CPUs, purges {}, shootdowns {}, pool allocations {}, global lock spins {}",
        BENCH,
        name,
        total as u64,
        cpus,
        v.counters.purges.get(),
        v.counters.shootdowns.get(),
        v.counters.pool_allocs.get(),
        g.spins
    );
    Ok(())
}

/// instructions_per_pair: only in the host's one-CPU `--icount` boot (`bench.clock=icount`).
fn one_cpu(opts: &Options, p: Policy) -> Result<(), TestError> {
    let v = vmalloc::design(p).ok_or_else(|| TestError::Skip("vmalloc not initialized".into()))?;
    let n = super::scaled(opts.get(&crate::options::VMALLOC_BENCH_ICOUNT_PAIRS), 1000);
    pairs(v, n / 4).map_err(|e| TestError::Fail(format!("{}: {}", p.name(), e)))?;
    let t0 = crate::arch::rdtsc();
    pairs(v, n).map_err(|e| TestError::Fail(format!("{}: {}", p.name(), e)))?;
    let per_pair = (crate::arch::rdtsc() - t0) as f64 / n.max(1) as f64;
    v.purge(Scope::All, true);
    emit(
        p.name(),
        "instructions_per_pair",
        per_pair,
        "instructions",
        1,
    );
    Ok(())
}

/// In the icount boot only the instruction count runs; in the others the all-CPU cases.
fn vmalloc_scaling(ctx: &Ctx) -> TestResult {
    let opts = ctx.opts;
    for p in super::rep_order(Policy::ALL) {
        if super::instruction_boot() {
            one_cpu(opts, p)?;
        } else {
            all_cpus(opts, p)?;
        }
    }
    Ok(())
}

crate::ktest!(super::BENCH_SUITE, Bench, vmalloc_scaling);
