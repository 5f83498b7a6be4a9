//! Benchmark `vmalloc_scaling` (seed 002): 1-page vmalloc+vfree pairs under the global, cpu
//! and numa designs.
//!
//! All CPUs (tsc and det boots): every CPU starts at a barrier and runs its pairs on a fresh
//! instance per design whose lazy threshold is `vmalloc.bench_lazy_max_pages` (default 1024
//! pages instead of Linux's 32768 for 8 CPUs) so that a short QEMU run spans many purge
//! cycles: the global lock is taken on pool misses and purges, so what it measures is the
//! steady state, reached by a warm-up of one purge cycle's worth of pairs per CPU (not
//! measured). Metrics: `global_lock_acquisitions_per_pair`, `contended_acquisitions_per_pair`
//! (the global free-space lock), `node_lock_acquisitions_per_pair` and
//! `node_lock_contended_per_pair` (the vmap-node locks seed 002 shards), `purges_per_kpair`,
//! `pool_hits_per_pair` (allocations a vmap node's pool served without the global lock: the
//! pool hit rate; 0 under global, which has no pools), and `ops_per_sec`: all pairs / (the last CPU's finish - the common start), guest time
//! (tsc: a trend only). That every page came from the allocating CPU's node is checked (the
//! experiment fails otherwise), not printed: it is always 1 here.
//!
//! One CPU (the host's `--icount` boot): `instructions_per_pair` over whole purge cycles,
//! the purges included (Linux's 3634 includes its purges too), on a fresh instance per design
//! with the same threshold for all: Linux's lazy_max_pages for the machine's CPU count, and
//! for numa the same threshold per node (its layout splits the total between nodes, and one
//! CPU fills only its own node's list). A warm-up runs to the first purge and then measures
//! one cycle's length in pairs; the timed run is `cycles` such cycles (at least one, as many
//! as `vmalloc.bench_icount_pairs` covers) and fails if the purge count does not match.
//! `purges` is printed beside it.
//!
//! Knob check: per design the mechanism counters (vmap nodes, global and node lock
//! acquisitions, pool allocations) are compared; two designs with identical counters fail the
//! experiment (numalab_algo::knob).

use alloc::format;
use core::panic::Location;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

use numalab_algo::knob::{self, CaseCounters};
use numalab_algo::options::Options;
use numalab_algo::vmalloc::layout::linux_lazy_max_pages;
use numalab_algo::vmalloc::{Layout, Policy, Scope, PAGE_SIZE};

use super::region::on_each_cpu;
use super::workload::Barrier;
use crate::ktest::{Ctx, TestError, TestResult};
use crate::mm::vmalloc::{self, AreaKind, Vmalloc};

const BENCH: &str = super::catalog::VMALLOC_SCALING.name;

fn pairs(v: &Vmalloc, n: u64) -> Result<(), &'static str> {
    let caller = Location::caller();
    for _ in 0..n {
        let a = v
            .alloc(PAGE_SIZE, PAGE_SIZE, None, false, caller)
            .map_err(|e| e.describe())?;
        v.free(a, AreaKind::Vmalloc).map_err(|b| b.reason())?;
    }
    Ok(())
}

fn emit(case: &str, metric: &str, value: f64, unit: &str, cpus: usize) {
    super::record(BENCH, case, metric, value, unit, cpus as u32);
}

/// The mechanism counters of one design's run.
fn knob_counters(v: &Vmalloc, case: &str, global: u64, node: u64, pool: u64) -> CaseCounters {
    let mut c = CaseCounters::new(case);
    c.add("vmap_nodes", v.layout.nr_nodes as u64);
    c.add("global_lock_acquisitions", global);
    c.add("node_lock_acquisitions", node);
    c.add("pool_allocs", pool);
    c
}

fn all_cpus(opts: &Options, p: Policy) -> Result<CaseCounters, TestError> {
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
    for (lock, label) in v.lock_objects() {
        super::region::name(lock, format_args!("{label}"));
    }
    let failed = AtomicU64::new(0);
    // Warm-up to the steady state: each CPU does one whole purge cycle's worth of pairs
    // (lazy_max_pages / 2 pairs of 2 pages), so that each pool has grown to what its CPU can
    // use in one cycle even when it runs alone while others are descheduled.
    let warm = (layout.lazy_max_pages / 2).max(1);
    crate::smp::on_each_cpu(&|_| {
        if pairs(&v, warm).is_err() {
            failed.fetch_add(1, Relaxed);
        }
    });
    v.purge(Scope::All, false);
    let (g0, n0) = (v.global_lock_stats(), v.node_lock_stats());
    let (l0, r0) = (v.counters.local_pages.get(), v.counters.remote_pages.get());
    let (purges0, pool0) = (v.counters.purges.get(), v.counters.pool_allocs.get());
    let waits0 = v.counters.purge_waits.get();
    let barrier = Barrier::new(cpus);
    let (start, end) = (AtomicU64::new(u64::MAX), AtomicU64::new(0));
    let region = on_each_cpu(BENCH, p.name(), &|_| {
        barrier.wait();
        start.fetch_min(crate::arch::rdtsc(), Relaxed);
        if pairs(&v, per_cpu).is_err() {
            failed.fetch_add(1, Relaxed);
        }
        end.fetch_max(crate::arch::rdtsc(), Relaxed);
    });
    region.ops(per_cpu * cpus as u64);
    let g = v.global_lock_stats().since(&g0);
    let n = v.node_lock_stats().since(&n0);
    let remote = v.counters.remote_pages.get() - r0;
    let local = v.counters.local_pages.get() - l0;
    let purges = v.counters.purges.get() - purges0;
    let pool_allocs = v.counters.pool_allocs.get() - pool0;
    let purge_waits = v.counters.purge_waits.get() - waits0;
    let total = (per_cpu * cpus as u64).max(1) as f64;
    vmalloc::print_counters(&v);
    v.purge(Scope::All, true);
    let name = p.name();
    if failed.load(Relaxed) > 0 {
        return Err(TestError::Fail(format!(
            "{name}: a vmalloc/vfree pair failed"
        )));
    }
    if remote > 0 {
        return Err(TestError::Fail(format!(
            "{name}: {remote} of {} pages came from another node than the allocating CPU's",
            local + remote
        )));
    }
    let per_pair = |v: u64| v as f64 / total;
    emit(
        name,
        "global_lock_acquisitions_per_pair",
        per_pair(g.acquisitions),
        "acquisitions",
        cpus,
    );
    emit(
        name,
        "contended_acquisitions_per_pair",
        per_pair(g.contended),
        "acquisitions",
        cpus,
    );
    emit(
        name,
        "node_lock_acquisitions_per_pair",
        per_pair(n.acquisitions),
        "acquisitions",
        cpus,
    );
    emit(
        name,
        "node_lock_contended_per_pair",
        per_pair(n.contended),
        "acquisitions",
        cpus,
    );
    emit(
        name,
        "purges_per_kpair",
        purges as f64 * 1000.0 / total,
        "purges",
        cpus,
    );
    emit(
        name,
        "pool_hits_per_pair",
        per_pair(pool_allocs),
        "hits",
        cpus,
    );
    let hz = super::ticks_per_sec();
    let elapsed = end.load(Relaxed).saturating_sub(start.load(Relaxed)).max(1);
    let secs = elapsed as f64 / hz as f64;
    emit(name, "ops_per_sec", total / secs, "pairs/s", cpus);
    crate::println!(
        "# {}[{}]: {} pairs on {} CPUs, purges {} (waited for another's {}), shootdowns {}, pool allocations {}, global lock spins {} wait {} ticks, node locks wait {} ticks",
        BENCH,
        name,
        total as u64,
        cpus,
        purges,
        purge_waits,
        v.counters.shootdowns.get(),
        pool_allocs,
        g.spins,
        g.wait_ticks,
        n.wait_ticks
    );
    Ok(knob_counters(
        &v,
        name,
        g.acquisitions,
        n.acquisitions,
        pool_allocs,
    ))
}

/// instructions_per_pair over whole purge cycles: only in the host's one-CPU `--icount` boot.
fn one_cpu(opts: &Options, p: Policy) -> Result<CaseCounters, TestError> {
    let topo = crate::topology::get();
    let name = p.name();
    let fail = |e: &str| TestError::Fail(format!("{name}: {e}"));
    // The same threshold for every design: Linux's for this machine, per node under numa.
    let lazy = linux_lazy_max_pages(topo.nr_cpus());
    let total_lazy = match p {
        Policy::Numa => lazy * topo.nr_nodes().max(1) as u64,
        _ => lazy,
    };
    let layout = Layout::new(p, topo.nr_cpus(), topo.nr_nodes(), total_lazy);
    let v = vmalloc::scratch(layout, 4 << 30)
        .ok_or_else(|| TestError::Skip("vmalloc not initialized".into()))?;
    // Warm-up to the first purge, then one cycle's length in pairs.
    let bound = lazy + 16;
    let purges = || v.counters.purges.get();
    let mut n = 0;
    while purges() == 0 && n < bound {
        pairs(&v, 1).map_err(fail)?;
        n += 1;
    }
    let p1 = purges();
    let mut cycle = 0u64;
    while purges() == p1 && cycle < bound {
        pairs(&v, 1).map_err(fail)?;
        cycle += 1;
    }
    if p1 == 0 || purges() != p1 + 1 {
        return Err(fail("no purge cycle within lazy_max_pages pairs"));
    }
    let wanted = super::scaled(opts.get(&crate::options::VMALLOC_BENCH_ICOUNT_PAIRS), 1000);
    let cycles = (wanted / cycle).max(1);
    let n = cycles * cycle;
    let (g0, n0, pool0) = (
        v.global_lock_stats(),
        v.node_lock_stats(),
        v.counters.pool_allocs.get(),
    );
    let p0 = purges();
    let t0 = crate::arch::rdtsc();
    pairs(&v, n).map_err(fail)?;
    let ticks = crate::arch::rdtsc() - t0;
    let purged = purges() - p0;
    let g = v.global_lock_stats().since(&g0);
    let nl = v.node_lock_stats().since(&n0);
    let pool_allocs = v.counters.pool_allocs.get() - pool0;
    v.purge(Scope::All, true);
    if purged != cycles {
        return Err(fail(&format!(
            "{n} pairs ({cycles} cycles of {cycle}) made {purged} purges"
        )));
    }
    emit(
        name,
        "instructions_per_pair",
        ticks as f64 / n as f64,
        "instructions",
        1,
    );
    emit(name, "purges", purged as f64, "purges", 1);
    crate::println!(
        "# {BENCH}[{name}]: icount: lazy_max_pages {lazy} per list, {cycles} purge cycles of {cycle} pairs, {purged} purges, {pool_allocs} pool allocations"
    );
    Ok(knob_counters(
        &v,
        name,
        g.acquisitions,
        nl.acquisitions,
        pool_allocs,
    ))
}

/// In the icount boot only the instruction count runs; in the others the all-CPU cases.
fn vmalloc_scaling(ctx: &Ctx) -> TestResult {
    let opts = ctx.opts;
    let mut knobs = alloc::vec::Vec::new();
    for p in super::rep_order(Policy::ALL) {
        let c = if super::instruction_boot() {
            one_cpu(opts, p)?
        } else {
            all_cpus(opts, p)?
        };
        crate::println!("# {BENCH}: knob counters {}: {}", c.case, c.describe());
        knobs.push(c);
    }
    knob::check(BENCH, &knobs).map_err(TestError::Fail)
}

crate::ktest!(super::BENCH_SUITE, Bench, BENCH, vmalloc_scaling);
