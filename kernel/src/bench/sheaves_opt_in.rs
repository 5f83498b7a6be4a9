//! Benchmark `sheaves_opt_in` (seed 007): Hao Li's comparison on LKML (February 2026) of
//! Linux 6.19-rc5 with sheaves for maple nodes only, before sheaves, and with sheaves for
//! every cache, replayed on the maple tree's allocation pattern under mmap/munmap.
//!
//! Workload: each CPU keeps a tree of 64 live 256-byte nodes (`maple_node`, struct
//! maple_node's size) and does tree writes, each like one mmap or munmap: a burst of 6 node
//! allocations (mas_preallocate), 2 of them installed in place of 2 old nodes, which go to a
//! deferred list (kfree_rcu), the 4 unused freed at once (mas_destroy); every 256th write
//! the deferred list (512 nodes) is freed in one go (the end of an RCU grace period, whose callbacks run on
//! the CPU that queued them). Cases, each on a fresh cache of its own: `partial` (before
//! sheaves), `hybrid` (6.18/6.19: the maple_node cache opts in, by `slub.sheaves_caches`,
//! its sheaves over the per-CPU slab) and `sheaves` (7.0: sheaves for every cache).
//!
//! Metrics (tsc and det, every CPU): `ops_per_cpu` (writes per second per CPU, tsc),
//! list_lock and barn lock acquisitions and slabs allocated per 1000 writes, and
//! `slab_kib_live` (the cache's slab memory while every tree is live and the deferred lists
//! are freed: Christoph Lameter's fragmentation objection). icount (one CPU):
//! `instructions_per_op` (the loop included, the same in every case).
//!
//! Knob check: the cases' mechanism counters differ, and under `hybrid` a second cache that
//! `slub.sheaves_caches` does not name, driven the same way after the workload, shows no
//! sheaf event while the maple_node cache shows them (both show them under `sheaves`).

use super::slub_cache::{BenchCache, Obj};
use super::workload;
use crate::ktest::{Ctx, TestError, TestResult};
use crate::topology::CpuId;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use numalab_algo::knob::{self, CaseCounters};
use numalab_algo::rng::Rng;
use numalab_algo::slub::{Design, Stat, StatsSnapshot, Tunables};

const NAME: &str = super::catalog::SHEAVES_OPT_IN.name;
/// Linux's struct maple_node.
const NODE_BYTES: usize = 256;
/// Live nodes of each CPU's tree.
const TREE_NODES: usize = 64;
/// Nodes allocated per write (the preallocation burst).
const PREALLOC: usize = 6;
/// Of which the write installs (the old ones are freed through the deferred list).
const USED: usize = 2;
/// Writes per grace period (the deferred list is freed every this many writes): an RCU
/// grace period lasts milliseconds, a will-it-scale mmap1 iteration microseconds.
const GRACE_OPS: u64 = 256;
/// The workload's cache: the name `slub.sheaves_caches` opts in by default (Linux 6.18).
const MAPLE: &str = "maple_node";
/// The knob check's other cache (a name the default `slub.sheaves_caches` does not hold).
const PLAIN: &str = "sheaves_opt_in-plain";

/// The three cases; `name`'s boot defaults decide whether it opts in under `hybrid`.
fn tunables(name: &str, design: Design) -> Tunables {
    Tunables {
        design,
        ..BenchCache::default_tunables(name)
    }
}

const CASES: [(&str, Design); 3] = [
    ("partial", Design::Partial),
    ("hybrid", Design::Hybrid),
    ("sheaves", Design::Sheaves),
];

/// Sheaf events of a run: objects through CPU sheaves, refills and sheaves made.
fn sheaf_events(s: &StatsSnapshot) -> u64 {
    s.get(Stat::AllocCpuSheaf)
        + s.get(Stat::FreeCpuSheaf)
        + s.get(Stat::SheafRefill)
        + s.get(Stat::SheafAlloc)
}

/// The start line and the clock of a timed run: the writes start when every CPU has built
/// its tree; `start` is the first CPU's time then, `end` the latest CPU's end.
struct Timing {
    barrier: workload::Barrier,
    start: AtomicU64,
    end: AtomicU64,
}

/// One CPU's `ops` tree writes on `cache` (`first`: the CPU that prints progress and starts
/// the clock); its tree goes to `left` for the caller to free after measuring. None when out
/// of memory.
fn writes(
    cache: &BenchCache,
    seed: u64,
    ops: u64,
    case: &str,
    first: bool,
    timing: &Timing,
    left: &spin::Mutex<Vec<Obj>>,
) -> Option<()> {
    let mut rng = Rng::new(0x6d61_706c_6500 + seed);
    let mut tree: Vec<Obj> = Vec::with_capacity(TREE_NODES);
    let mut pre: Vec<Obj> = Vec::with_capacity(PREALLOC);
    let mut deferred: Vec<Obj> = Vec::with_capacity(USED * GRACE_OPS as usize);
    let mut failed = false;
    for _ in 0..TREE_NODES {
        match cache.alloc() {
            Some(o) => tree.push(o),
            None => failed = true,
        }
    }
    timing.barrier.wait();
    if first {
        timing.start.store(super::now(), Ordering::Release);
    }
    for op in 0..ops {
        if failed {
            break;
        }
        for _ in 0..PREALLOC {
            match cache.alloc() {
                Some(o) => pre.push(o),
                None => failed = true,
            }
        }
        for _ in 0..USED.min(pre.len()) {
            let i = rng.below(tree.len().max(1) as u64) as usize;
            if let (Some(new), Some(slot)) = (pre.pop(), tree.get_mut(i)) {
                deferred.push(core::mem::replace(slot, new));
            }
        }
        for o in pre.drain(..) {
            cache.free(o);
        }
        if op % GRACE_OPS == GRACE_OPS - 1 {
            for o in deferred.drain(..) {
                cache.free(o);
            }
        }
        if first && op % 256 == 0 {
            super::progress(NAME, case, (op * 100 / ops.max(1)) as u32);
        }
    }
    workload::store_max(&timing.end, super::now());
    for o in deferred.drain(..) {
        cache.free(o);
    }
    left.lock().append(&mut tree);
    (!failed).then_some(())
}

/// What one case measured on `cpus`.
struct Sample {
    ops: u64,
    ticks: u64,
    stats: StatsSnapshot,
    list_lock: u64,
    barn_lock: u64,
    slab_bytes_live: u64,
    plain_sheaf_events: u64,
}

fn run_case(case: &str, design: Design, cpus: &[CpuId], ops: u64) -> Result<Sample, String> {
    let cache = BenchCache::create(MAPLE, NODE_BYTES, tunables(MAPLE, design))?;
    let stats0 = cache.stats();
    cache.reset_list_lock_stats();
    cache.reset_barn_lock_stats();
    let left = spin::Mutex::new(Vec::new());
    let failed = AtomicU64::new(0);
    let timing = Timing {
        barrier: workload::Barrier::new(cpus.len()),
        start: AtomicU64::new(0),
        end: AtomicU64::new(0),
    };
    let region = super::region::run_on_cpus(NAME, case, cpus, &|cpu| {
        let first = cpu == cpus[0];
        if writes(&cache, cpu.0 as u64, ops, case, first, &timing, &left).is_none() {
            failed.fetch_add(1, Ordering::Relaxed);
        }
    });
    let ticks = timing
        .end
        .load(Ordering::Acquire)
        .wrapping_sub(timing.start.load(Ordering::Acquire))
        .max(1);
    let total_ops = ops * cpus.len() as u64;
    region.ops(total_ops);
    let stats = cache.stats().since(&stats0);
    let list_lock = cache.list_lock_stats().acquisitions;
    let barn_lock = cache.barn_lock_stats().acquisitions;
    let slab_bytes_live = cache.slab_bytes();
    let mut rest = core::mem::take(&mut *left.lock());
    cache.free_bulk(&mut rest);
    cache.finish()?;
    if failed.load(Ordering::Relaxed) > 0 {
        return Err(format!("{NAME}: {case}: out of memory"));
    }
    // The knob check's other cache: 64 writes on this CPU, after the region.
    let plain = BenchCache::create(PLAIN, NODE_BYTES, tunables(PLAIN, design))?;
    let p0 = plain.stats();
    let left = spin::Mutex::new(Vec::new());
    let timing = Timing {
        barrier: workload::Barrier::new(1),
        start: AtomicU64::new(0),
        end: AtomicU64::new(0),
    };
    if writes(&plain, 0, 64, case, false, &timing, &left).is_none() {
        return Err(format!("{NAME}: {case}: out of memory"));
    }
    let plain_sheaf_events = sheaf_events(&plain.stats().since(&p0));
    let mut rest = core::mem::take(&mut *left.lock());
    plain.free_bulk(&mut rest);
    plain.finish()?;
    Ok(Sample {
        ops: total_ops,
        ticks,
        stats,
        list_lock,
        barn_lock,
        slab_bytes_live,
        plain_sheaf_events,
    })
}

/// Fails unless the hybrid case's caches show sheaf events exactly where the knob says.
fn knob_holds(case: &str, s: &Sample) -> TestResult {
    let maple = sheaf_events(&s.stats);
    let (maple_wanted, plain_wanted) = match case {
        "partial" => (false, false),
        "hybrid" => (
            BenchCache::default_tunables(MAPLE).sheaves_opt_in,
            BenchCache::default_tunables(PLAIN).sheaves_opt_in,
        ),
        _ => (true, true),
    };
    if (maple > 0, s.plain_sheaf_events > 0) != (maple_wanted, plain_wanted) {
        return Err(TestError::Fail(format!(
            "{NAME}: {case}: sheaf events {maple} on {MAPLE} and {} on {PLAIN}, expected {} and {}",
            s.plain_sheaf_events,
            if maple_wanted { "some" } else { "none" },
            if plain_wanted { "some" } else { "none" },
        )));
    }
    Ok(())
}

fn counters(case: &str, s: &Sample) -> CaseCounters {
    let mut c = CaseCounters::new(case);
    c.add("sheaf_events", sheaf_events(&s.stats));
    c.add("plain_sheaf_events", s.plain_sheaf_events);
    c.add("list_lock_acquisitions", s.list_lock);
    c.add("barn_lock_acquisitions", s.barn_lock);
    c.add("alloc_slab", s.stats.get(Stat::AllocSlab));
    c.add("cpu_partial_alloc", s.stats.get(Stat::CpuPartialAlloc));
    c
}

fn sheaves_opt_in(ctx: &Ctx) -> TestResult {
    let one_cpu = super::instruction_boot() && ctx.cpus_online == 1;
    let cpus = if one_cpu {
        workload::first_cpus(1)
    } else {
        super::needs_cpus(ctx, NAME, 2)?;
        workload::online()
    };
    let ops = super::pick(if one_cpu { 4_000 } else { 20_000 }, 400);
    let k = cpus.len() as u32;
    let hz = workload::ticks_per_sec();
    let mut knobs = Vec::new();
    for (case, design) in super::rep_order(CASES) {
        let s = run_case(case, design, &cpus, ops)?;
        knob_holds(case, &s)?;
        let kops = s.ops as f64 / 1000.0;
        if one_cpu {
            let per_op = s.ticks as f64 / s.ops as f64;
            super::record(NAME, case, "instructions_per_op", per_op, "instructions", 1);
        } else {
            let secs = s.ticks as f64 / hz;
            let rows: [(&str, f64, &str); 5] = [
                ("ops_per_cpu", s.ops as f64 / k as f64 / secs, "ops_per_sec"),
                (
                    "list_lock_acquisitions_per_kop",
                    s.list_lock as f64 / kops,
                    "acquisitions",
                ),
                (
                    "barn_lock_acquisitions_per_kop",
                    s.barn_lock as f64 / kops,
                    "acquisitions",
                ),
                (
                    "slabs_allocated_per_kop",
                    s.stats.get(Stat::AllocSlab) as f64 / kops,
                    "slabs",
                ),
                ("slab_kib_live", s.slab_bytes_live as f64 / 1024.0, "KiB"),
            ];
            for (metric, value, unit) in rows {
                super::record(NAME, case, metric, value, unit, k);
            }
        }
        let c = counters(case, &s);
        crate::println!("# {NAME}: knob counters {case}: {}", c.describe());
        knobs.push(c);
    }
    knob::check(NAME, &knobs).map_err(TestError::Fail)
}

crate::ktest!(super::BENCH_SUITE, Bench, NAME, sheaves_opt_in);
