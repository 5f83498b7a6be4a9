//! Benchmark `vmalloc_scaling` (seed 002): 1-page vmalloc+vfree pairs on every CPU at once
//! under the global, cpu and numa designs, reporting global (free-space) lock acquisitions and
//! contended acquisitions per pair, throughput (trend only under TCG), the fraction of pages
//! taken from the allocating CPU's node, and instructions per pair on one CPU under icount.
//!
//! The all-CPU part runs on a fresh instance per design whose lazy threshold is
//! `vmalloc.bench_lazy_max_pages` (default 1024 pages instead of Linux's 32768 for 8 CPUs) so
//! that a short QEMU run spans many purge cycles: the global lock is taken on pool misses and
//! purges, so what it measures is the steady state. A warm-up cycle fills the pools first.
//! The one-CPU instruction count uses the boot's designs (Linux's threshold).

use alloc::format;
use core::panic::Location;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

use numalab_algo::bench::{Clock, Record};
use numalab_algo::options::Options;
use numalab_algo::vmalloc::{Layout, Policy, Scope, PAGE_BYTES};

use super::backing;
use super::instance::{AreaKind, Vmalloc};
use crate::ktest::{KTest, Kind, TestError, TestResult};

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

fn emit(case: &str, metric: &str, value: f64, unit: &str, cpus: usize, clock: Clock) {
    let nodes = crate::topology::get().nr_nodes() as u32;
    let line = Record {
        bench: BENCH,
        case,
        metric,
        value,
        unit,
        cpus: cpus as u32,
        nodes,
        clock,
    }
    .line();
    crate::println!("{}", line);
}

fn all_cpus(opts: &Options, p: Policy) -> Result<(), TestError> {
    let topo = crate::topology::get();
    let cpus = backing::nr_cpus();
    let per_cpu = opts.u64("vmalloc.bench_pairs");
    let layout = Layout::new(
        p,
        topo.nr_cpus(),
        topo.nr_nodes(),
        opts.u64("vmalloc.bench_lazy_max_pages"),
    );
    let v = super::scratch(layout, 4 << 30)
        .ok_or_else(|| TestError::Skip("vmalloc not initialized".into()))?;
    let failed = AtomicU64::new(0);
    // Warm-up: one lazy cycle so the pools hold areas, as in a running system.
    let warm = (layout.lazy_max_pages / 2 / cpus as u64).max(1);
    backing::on_each_cpu(&|_| {
        if pairs(&v, warm).is_err() {
            failed.fetch_add(1, Relaxed);
        }
    });
    v.purge(Scope::All, false);
    let g0 = v.global_lock_stats();
    let (l0, r0) = (v.counters.local_pages.get(), v.counters.remote_pages.get());
    let ticks = AtomicU64::new(0);
    backing::on_each_cpu(&|_| {
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
    v.purge(Scope::All, true);
    if failed.load(Relaxed) > 0 {
        return Err(TestError::Fail(format!(
            "{}: a vmalloc/vfree pair failed",
            p.name()
        )));
    }
    let name = p.name();
    emit(
        name,
        "global_lock_acquisitions_per_pair",
        g.acquisitions as f64 / total,
        "acquisitions",
        cpus,
        Clock::Tsc,
    );
    emit(
        name,
        "contended_acquisitions_per_pair",
        g.contended as f64 / total,
        "acquisitions",
        cpus,
        Clock::Tsc,
    );
    if let Some(hz) = backing::tsc_hz() {
        let secs = ticks.load(Relaxed) as f64 / hz as f64;
        emit(
            name,
            "ops_per_sec",
            total / secs.max(1e-9),
            "pairs/s",
            cpus,
            Clock::Tsc,
        );
    } else {
        let per_mcycle = total * 1e6 / ticks.load(Relaxed).max(1) as f64;
        emit(
            name,
            "pairs_per_mcycle",
            per_mcycle,
            "pairs/Mcycle",
            cpus,
            Clock::Tsc,
        );
    }
    emit(
        name,
        "local_page_fraction",
        local as f64 / (local + remote).max(1) as f64,
        "fraction",
        cpus,
        Clock::Tsc,
    );
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

fn one_cpu(opts: &Options, p: Policy) -> Result<(), TestError> {
    let v = super::design(p).ok_or_else(|| TestError::Skip("vmalloc not initialized".into()))?;
    let n = opts.u64("vmalloc.bench_icount_pairs");
    pairs(v, n / 4).map_err(|e| TestError::Fail(format!("{}: {}", p.name(), e)))?;
    let t0 = crate::arch::rdtsc();
    pairs(v, n).map_err(|e| TestError::Fail(format!("{}: {}", p.name(), e)))?;
    let per_pair = (crate::arch::rdtsc() - t0) as f64 / n.max(1) as f64;
    v.purge(Scope::All, true);
    if backing::icount_mode() {
        emit(
            p.name(),
            "instructions_per_pair",
            per_pair,
            "instructions",
            1,
            Clock::Icount,
        );
    } else {
        emit(p.name(), "tsc_per_pair", per_pair, "cycles", 1, Clock::Tsc);
    }
    Ok(())
}

fn vmalloc_scaling(opts: &Options) -> TestResult {
    for p in Policy::ALL {
        if backing::nr_cpus() > 1 || !backing::icount_mode() {
            all_cpus(opts, p)?;
        }
        if backing::nr_cpus() == 1 {
            one_cpu(opts, p)?;
        }
    }
    Ok(())
}

pub const TESTS: &[KTest] = &[KTest {
    module: "vmalloc",
    name: "vmalloc_scaling",
    kind: Kind::Bench,
    func: vmalloc_scaling,
}];
