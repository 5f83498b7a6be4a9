//! Benchmark `sheaves_vs_partial`: the two SLUB designs side by side in one boot, on caches
//! of their own (`slub.design` only picks the kmalloc caches').
//!
//! - icount boot (one CPU): the pairs harness's three workloads (fast64, random sizes 8..4096 with
//!   1000 live objects, burst256) on a kmalloc-like set of 13 size-class caches per design,
//!   measured as every pairs experiment is (out-of-line entry points, interrupts on, one held
//!   object, the empty-loop harness subtracted): `instructions_per_pair`, and
//!   `slab_path_per_kpair` (allocations and frees that reached the slabs, alloc_slowpath +
//!   free_slowpath, per 1000 pairs: the partial design's slow paths, the sheaves design's
//!   bypasses and refills by single object).
//! - tsc and det boots: the list_lock workload (bulk batches, half freed by the next CPU)
//!   at 25/50/100% of the CPUs: `ops_per_cpu` (tsc: a trend), node list_lock and barn lock
//!   acquisitions per 1000 operations, slabs allocated and freed per 1000 operations, the
//!   slab memory the cache still holds once every object is freed (`slab_kib_after`: the
//!   fragmentation concern raised against sheaves) and the share of frees that bypassed the
//!   sheaves (`free_bypass_fraction`: free_slowpath / all frees).
//!
//! A knob check fails the experiment when the two designs show the same mechanism counters.

use super::list_churn::run_case;
use super::pairs::{
    record_pair, with_interrupts, BURST, BURST_ROUNDS, FAST_PAIRS, RANDOM_STEPS, WORKLOADS,
};
use super::slub_cache::BenchCache;
use super::workload;
use crate::ktest::{Ctx, TestError, TestResult};
use crate::mm::slub::PrivateCache;
use crate::peers::slub::Classes;
use crate::peers::{run, Empty, Mark, OutOfLine, Profiled};
use alloc::format;
use alloc::vec::Vec;
use numalab_algo::bench::plan::cpu_counts;
use numalab_algo::knob::{self, CaseCounters};
use numalab_algo::slub::geometry::{KMALLOC_NAMES, KMALLOC_SIZES};
use numalab_algo::slub::{Design, Stat, StatsSnapshot, Tunables};

const NAME: &str = super::catalog::SHEAVES_VS_PARTIAL.name;
const CPU_PERCENTS: &[u32] = &[25, 50, 100];

fn tunables(name: &str, design: Design) -> Tunables {
    Tunables {
        design,
        ..BenchCache::default_tunables(name)
    }
}

const DESIGNS: [(&str, Design); 2] = [("partial", Design::Partial), ("sheaves", Design::Sheaves)];

/// A kmalloc of private caches, one per kmalloc class, all of one design (measured through
/// `peers::slub::Classes`, a free naming its class by the block's layout).
fn create_classes(design: &str, d: Design) -> Result<Vec<PrivateCache>, TestError> {
    let mut caches = Vec::new();
    for (size, name) in KMALLOC_SIZES.iter().zip(KMALLOC_NAMES) {
        let n = format!("svp-{design}-{name}");
        let c = PrivateCache::create(&n, *size, 0, tunables(&n, d))
            .map_err(|e| TestError::Fail(format!("{n}: {e:?}")))?;
        caches.push(c);
    }
    Ok(caches)
}

fn stats(caches: &[PrivateCache]) -> StatsSnapshot {
    let mut sum = StatsSnapshot::default();
    for c in caches {
        for (a, b) in sum.counts.iter_mut().zip(c.stats().counts) {
            *a = a.wrapping_add(b);
        }
    }
    sum
}

fn destroy(caches: Vec<PrivateCache>) -> TestResult {
    for c in caches {
        let name = alloc::string::String::from(c.name());
        c.destroy().map_err(|n| format!("{}: {} live", name, n))?;
    }
    Ok(())
}

/// The profile of a class set: alloc_slowpath + free_slowpath per 1000 pairs, per workload.
struct SlabPath {
    start: StatsSnapshot,
    per_kpair: [f64; 3],
}

impl Mark<Classes<'_>> for SlabPath {
    fn mark(&mut self, peer: &Classes<'_>, workload: &str, end: bool) {
        let mut now = StatsSnapshot::default();
        for c in peer.caches() {
            for (a, b) in now.counts.iter_mut().zip(c.stats().counts) {
                *a = a.wrapping_add(b);
            }
        }
        if !end {
            self.start = now;
            return;
        }
        let d = now.since(&self.start);
        let (w, pairs) = match workload {
            "fast64" => (0, FAST_PAIRS),
            "random" => (1, RANDOM_STEPS),
            _ => (2, BURST_ROUNDS * BURST as u64),
        };
        self.per_kpair[w] =
            (d.get(Stat::AllocSlowpath) + d.get(Stat::FreeSlowpath)) as f64 * 1000.0 / pairs as f64;
    }
}

/// The one-CPU icount boot: instructions per pair of each design.
fn pairs(clock: numalab_algo::bench::Clock) -> TestResult {
    let knobs = with_interrupts(|| -> Result<Vec<CaseCounters>, TestError> {
        let harness = run(&mut OutOfLine(Empty::new()));
        let mut knobs = Vec::new();
        for (design, d) in super::rep_order(DESIGNS) {
            let caches = create_classes(design, d)?;
            let profile = SlabPath {
                start: StatsSnapshot::default(),
                per_kpair: [f64::NAN; 3],
            };
            let mut peer = OutOfLine(Profiled {
                peer: Classes::new(&caches),
                profile,
            });
            let r = run(&mut peer);
            let profile = peer.0.profile;
            let mut counters = CaseCounters::new(design);
            let s = stats(&caches);
            for stat in [
                Stat::AllocCpuSheaf,
                Stat::AllocFastpath,
                Stat::CpuPartialAlloc,
            ] {
                counters.add(stat.name(), s.get(stat));
            }
            knobs.push(counters);
            for (w, workload) in WORKLOADS.iter().enumerate() {
                let case = format!("{design}/{workload}");
                record_pair(NAME, &case, r[w], harness[w], clock);
                let slab_path = profile.per_kpair[w];
                super::record(NAME, &case, "slab_path_per_kpair", slab_path, "events", 1);
            }
            destroy(caches)?;
        }
        Ok(knobs)
    })?;
    knob::check(NAME, &knobs).map_err(TestError::Fail)
}

fn sheaves_vs_partial(ctx: &Ctx) -> TestResult {
    if super::instruction_boot() && ctx.cpus_online == 1 {
        return pairs(super::clock());
    }
    super::needs_cpus(ctx, NAME, 2)?;
    let online = workload::online();
    let counts = cpu_counts(online.len(), CPU_PERCENTS);
    let rounds = super::pick(5_000, 150);
    let hz = workload::ticks_per_sec();
    let mut knobs = Vec::new();
    for (case, design) in super::rep_order(DESIGNS) {
        let t = tunables(NAME, design);
        let mut counters = CaseCounters::new(case);
        for &k in &counts {
            let cpus = workload::first_cpus(k);
            let s = run_case(NAME, case, t, &cpus, rounds)?;
            let kops = s.ops as f64 / 1000.0;
            let k32 = k as u32;
            let per_kop = |v: u64| v as f64 / kops;
            let frees = s.stats.get(Stat::FreeFastpath)
                + s.stats.get(Stat::FreeSlowpath)
                + s.stats.get(Stat::FreeCpuSheaf);
            let secs = s.elapsed_ticks as f64 / hz;
            let rows: [(&str, f64, &str); 7] = [
                ("ops_per_cpu", s.ops as f64 / k as f64 / secs, "ops_per_sec"),
                (
                    "list_lock_acquisitions_per_kop",
                    per_kop(s.acquisitions),
                    "acquisitions",
                ),
                (
                    "barn_lock_acquisitions_per_kop",
                    per_kop(s.barn_acquisitions),
                    "acquisitions",
                ),
                (
                    "slabs_allocated_per_kop",
                    per_kop(s.stats.get(Stat::AllocSlab)),
                    "slabs",
                ),
                (
                    "slabs_freed_per_kop",
                    per_kop(s.stats.get(Stat::FreeSlab)),
                    "slabs",
                ),
                ("slab_kib_after", s.slab_bytes_after as f64 / 1024.0, "KiB"),
                (
                    "free_bypass_fraction",
                    s.stats.get(Stat::FreeSlowpath) as f64 / frees.max(1) as f64,
                    "fraction",
                ),
            ];
            for (metric, value, unit) in rows {
                super::record(NAME, case, metric, value, unit, k32);
            }
            counters.add("list_lock_acquisitions", s.acquisitions);
            counters.add("barn_lock_acquisitions", s.barn_acquisitions);
            for stat in [Stat::AllocSlab, Stat::AllocCpuSheaf, Stat::CpuPartialAlloc] {
                counters.add(stat.name(), s.stats.get(stat));
            }
        }
        crate::println!("# {NAME}: knob counters {case}: {}", counters.describe());
        knobs.push(counters);
    }
    knob::check(NAME, &knobs).map_err(TestError::Fail)
}

crate::ktest!(super::BENCH_SUITE, Bench, NAME, sheaves_vs_partial);
