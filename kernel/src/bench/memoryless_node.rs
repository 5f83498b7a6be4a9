//! `memoryless_node` (seed 003, Bharata B Rao's "Increased mem consumption on cpu,mem-less
//! node"): a boot-like load (every CPU makes many small allocations from eight caches of 16 to
//! 1024 bytes, `slub.bench_alloc_node_percent` of them (default 68, spread evenly) asking for
//! the CPU's own node as kmalloc_node(numa_node_id()) does, and frees one in four), then the
//! memory held in slab pages. The default share is the thread's: in the cache that grew most,
//! kmalloc-1k, 1952 of 2869 objects came from alloc_fair_sched_group, which allocates per CPU
//! on cpu_to_node.
//!
//! Cases: on a machine with a memoryless node that has CPUs (`--topology memoryless`),
//! `fixed` (caches with memoryless_fix: a request for a memoryless node is served as one for
//! its nearest memory node) and `unfixed` (memoryless_fix off, as `slub.memoryless_fix=0`:
//! such requests never find that node's partial slabs). On a one-node machine the same load is
//! `single_node`: `qemu-run.sh bench` boots the `uma` preset with the same CPUs and memory for
//! it and merges the result. Other machines skip. Both cases use private caches with the same
//! sizes (kmalloc's caches are shared by the whole kernel, so they cannot be switched per case).
//! The thread is of the partial era, so these cases run `slub.design=partial`; the same three
//! run again under the sheaves design as `sheaves_fixed`, `sheaves_unfixed` and
//! `sheaves_single_node` (Linux 7: does the memoryless-node growth come back without the fix
//! when every allocation is served from sheaves?).
//!
//! Metric: `slab_kib`, KiB in slab pages of the eight caches while the objects are live.
//! Goal: `fixed` within 1.1x of `single_node` (the thread saw 442560 kB vs 195904 kB).
//! Mechanism counters (SLUB stat names, summed over the eight caches): `alloc_node_mismatch`
//! (CPU slabs dropped because they were not on the requested node: the unfixed path drops
//! them for every request naming the memoryless node), `alloc_slab` (new slabs) and
//! `alloc_node_fallback` (requests served by a slab standing in for an exhausted node). A knob
//! check fails the experiment when `fixed` and `unfixed` print the same counters.
//!
//! Lock order: each CPU's pool lock (spin::Mutex, interrupts on) is taken only by that CPU
//! during the load, around its allocator calls.

use super::slub_cache::{BenchCache, Obj};
use super::workload::{self, Barrier};
use crate::ktest::{Ctx, TestError, TestResult};
use crate::topology::NodeId;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use numalab_algo::knob::{self, CaseCounters};
use numalab_algo::slub::{Design, Stat};
use spin::Mutex;

const NAME: &str = super::catalog::MEMORYLESS_NODE.name;
const SIZES_BYTES: [usize; 8] = [16, 32, 64, 128, 192, 256, 512, 1024];

/// The SLUB counters memoryless_fix changes (and, under sheaves, the allocations the CPU's
/// sheaves served).
const MECHANISM: [Stat; 4] = [
    Stat::AllocNodeMismatch,
    Stat::AllocSlab,
    Stat::AllocNodeFallback,
    Stat::AllocCpuSheaf,
];

/// The SLUB design of a case: the name prefix and the design.
const DESIGNS: [(&str, Design); 2] = [("", Design::Partial), ("sheaves_", Design::Sheaves)];

/// Runs the load against fresh caches of `design` with `memoryless_fix`; returns KiB in slab
/// pages and the mechanism counters summed over the caches.
fn run_case(
    case: &str,
    design: Design,
    memoryless_fix: bool,
    per_cpu: usize,
    node_percent: usize,
) -> Result<(u64, CaseCounters), String> {
    let online = workload::online();
    let mut caches = Vec::new();
    for size in SIZES_BYTES {
        let name = format!("bench_ml_{size}");
        let mut t = BenchCache::partial_tunables(&name);
        t.design = design;
        t.memoryless_fix = memoryless_fix;
        caches.push(BenchCache::create(&name, size, t)?);
    }
    let pools: Vec<Mutex<Vec<Vec<Obj>>>> = online
        .iter()
        .map(|_| {
            Mutex::new(
                (0..caches.len())
                    .map(|_| Vec::with_capacity(per_cpu))
                    .collect(),
            )
        })
        .collect();
    let barrier = Barrier::new(online.len());
    let short = AtomicU64::new(0);
    super::region::run_on_cpus(NAME, case, &online, &|cpu| {
        let me = online.iter().position(|&c| c == cpu).unwrap_or(0);
        let node: NodeId = crate::percpu::node_id();
        let mut pool = pools[me].lock();
        barrier.wait();
        for i in 0..per_cpu {
            for (c, cache) in caches.iter().enumerate() {
                // Request i names the node when it crosses the next percent step: exactly
                // node_percent in 100, spread evenly.
                let names_node = (i + 1) * node_percent / 100 > i * node_percent / 100;
                let obj = if names_node {
                    cache.alloc_node(node)
                } else {
                    cache.alloc()
                };
                match obj {
                    Some(o) if i % 4 == 3 => cache.free(o),
                    Some(o) => pool[c].push(o),
                    None => {
                        short.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            if me == 0 && i % 256 == 0 {
                super::progress(NAME, case, (i * 100 / per_cpu) as u32);
            }
        }
    });
    let slab_bytes: u64 = caches.iter().map(|c| c.slab_bytes()).sum();
    let mut counters = CaseCounters::new(case);
    for c in &caches {
        let stats = c.stats();
        for stat in MECHANISM {
            counters.add(stat.name(), stats.get(stat));
        }
    }
    for p in &pools {
        let mut p = p.lock();
        for (c, objs) in p.iter_mut().enumerate() {
            caches[c].free_bulk(objs);
        }
    }
    for c in caches {
        c.finish()?;
    }
    if short.load(Ordering::Relaxed) > 0 {
        return Err(format!(
            "{NAME}: {case}: {} allocations failed",
            short.load(Ordering::Relaxed)
        ));
    }
    Ok((slab_bytes / 1024, counters))
}

/// Prints a case's mechanism counters as BENCH records and in the log.
fn record_counters(counters: &CaseCounters, cpus: u32) {
    for stat in MECHANISM {
        let unit = if stat == Stat::AllocSlab {
            "slabs"
        } else {
            "allocations"
        };
        super::record(
            NAME,
            &counters.case,
            stat.name(),
            counters.get(stat.name()) as f64,
            unit,
            cpus,
        );
    }
    crate::println!(
        "# {NAME}: knob counters {}: {}",
        counters.case,
        counters.describe()
    );
}

fn memoryless_node(_ctx: &Ctx) -> TestResult {
    if super::instruction_boot() {
        return Err(TestError::Skip(format!(
            "{NAME}: memory experiment, runs in the multi-CPU (tsc) boot"
        )));
    }
    let topo = crate::topology::get();
    let memoryless_with_cpus = (0..topo.nr_nodes())
        .map(|n| NodeId(n as u16))
        .any(|n| topo.is_memoryless(n) && !topo.is_cpuless(n));
    let per_cpu = super::pick(4000, 400) as usize;
    let node_percent =
        crate::options::load().get(&crate::options::SLUB_BENCH_ALLOC_NODE_PERCENT) as usize;
    crate::println!("# {NAME}: {node_percent}% of requests name the CPU's node");
    let cpus = workload::online().len() as u32;
    if memoryless_with_cpus {
        for (prefix, design) in DESIGNS {
            let mut knobs = Vec::new();
            let cases = [
                (format!("{prefix}fixed"), true),
                (format!("{prefix}unfixed"), false),
            ];
            for (case, fix) in super::rep_order(cases) {
                let (kib, counters) = run_case(&case, design, fix, per_cpu, node_percent)?;
                super::record(NAME, &case, "slab_kib", kib as f64, "kib", cpus);
                record_counters(&counters, cpus);
                knobs.push(counters);
            }
            knob::check(NAME, &knobs).map_err(TestError::Fail)?;
        }
        Ok(())
    } else if topo.nr_nodes() == 1 {
        // One case per design, no knob to check: only the memory (the host merges it as
        // the baseline).
        for (prefix, design) in DESIGNS {
            let case = format!("{prefix}single_node");
            let (kib, _) = run_case(&case, design, true, per_cpu, node_percent)?;
            super::record(NAME, &case, "slab_kib", kib as f64, "kib", cpus);
        }
        Ok(())
    } else {
        Err(TestError::Skip(format!(
            "{NAME}: needs a memoryless node with CPUs (--topology memoryless) or one node"
        )))
    }
}

crate::ktest!(super::BENCH_SUITE, Bench, NAME, memoryless_node);
