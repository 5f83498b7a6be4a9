//! Benchmark `memoryless_sheaves` (the 7.0 regression behind "slab: support memoryless
//! nodes with sheaves"): on a machine whose CPUs sit on nodes without memory (preset
//! `8node-2mem`), every CPU churns a 64-byte cache in bursts of 256 objects, under three
//! cases: `partial` (the per-CPU partial design), `sheaves_as_shipped` (7.0: barns only on
//! nodes with memory, so a memoryless node's CPUs have none) and `sheaves_fixed` (a barn on
//! every node with CPUs).
//!
//! Metrics (tsc and det): `sheaf_fraction_memoryless_cpus` and `sheaf_fraction_memory_cpus`
//! (allocations served from a CPU sheaf, per CPU group), `slab_path_per_kop`
//! (alloc_slowpath + free_slowpath per 1000 operations) and `list_lock_acquisitions_per_kop`.
//! icount boot (one CPU, on a memoryless node in the preset): `instructions_per_pair` of the
//! burst workload less the harness, and its inverse `pairs_per_kinstruction` (higher is
//! better, like the thread's IOPS). Its burst256 loop of each case is a one-CPU trace region
//! (`memoryless_sheaves CASE cpus 1`, ops = its pairs), so `--trace mem` gives seed 006's
//! modelled row from this boot (`BurstRegion`).

use super::pairs::{record_pair, with_interrupts};
use super::slub_cache::BenchCache;
use super::workload;
use crate::ktest::{Ctx, TestError, TestResult};
use crate::mm::slub::{Object, PrivateCache};
use crate::peers::slub::Cache;
use crate::peers::{run, Empty, Mark, OutOfLine, Profiled, BURST as PEER_BURST, BURST_ROUNDS};
use alloc::format;
use alloc::vec::Vec;
use numalab_algo::knob::{self, CaseCounters};
use numalab_algo::slub::{Design, Stat, StatsSnapshot, Tunables};

const NAME: &str = super::catalog::MEMORYLESS_SHEAVES.name;
const OBJ_BYTES: usize = 64;
const BURST: usize = 256;

fn cases() -> [(&'static str, Tunables); 3] {
    let base = BenchCache::default_tunables(NAME);
    [
        (
            "partial",
            Tunables {
                design: Design::Partial,
                ..base
            },
        ),
        (
            "sheaves_as_shipped",
            Tunables {
                design: Design::Sheaves,
                memoryless_barns: false,
                ..base
            },
        ),
        (
            "sheaves_fixed",
            Tunables {
                design: Design::Sheaves,
                memoryless_barns: true,
                ..base
            },
        ),
    ]
}

fn create(case: &str, t: Tunables) -> Result<PrivateCache, TestError> {
    let n = format!("{NAME}-{case}");
    PrivateCache::create(&n, OBJ_BYTES, 0, t).map_err(|e| TestError::Fail(format!("{n}: {e:?}")))
}

/// Destroys the cache (the CPUs that used it have returned).
fn destroy(c: PrivateCache) -> TestResult {
    let name = alloc::string::String::from(c.name());
    c.destroy()
        .map_err(|n| TestError::Fail(format!("{name}: {n} live")))
}

/// Allocations served from a sheaf over all allocations.
fn sheaf_share(s: &StatsSnapshot) -> f64 {
    let all = s.get(Stat::AllocCpuSheaf) + s.get(Stat::AllocFastpath) + s.get(Stat::AllocSlowpath);
    s.get(Stat::AllocCpuSheaf) as f64 / all.max(1) as f64
}

/// The burst256 workload of `peers::run` as a one-CPU trace region (docs/trace.md): the
/// CPU marks itself in right before the timed loop and out right after it, outside the
/// timed window, so the figures of record are the same with and without the plugin.
struct BurstRegion {
    region: super::region::Solo,
}

impl<P> Mark<P> for BurstRegion {
    fn mark(&mut self, _peer: &P, workload: &str, end: bool) {
        if workload != "burst256" {
            return;
        }
        if end {
            self.region.leave();
            self.region.key().ops(BURST_ROUNDS * PEER_BURST as u64);
        } else {
            self.region.enter();
        }
    }
}

/// The one-CPU icount boot: instructions per pair of the burst on the boot CPU.
fn pairs(clock: numalab_algo::bench::Clock) -> TestResult {
    let knobs = with_interrupts(|| -> Result<Vec<CaseCounters>, TestError> {
        let harness = run(&mut OutOfLine(Empty::new()))[2];
        let mut knobs = Vec::new();
        for (case, t) in super::rep_order(cases()) {
            let c = create(case, t)?;
            let before = c.stats();
            let v = run(&mut OutOfLine(Profiled {
                peer: Cache(&c),
                profile: BurstRegion {
                    region: super::region::Solo::open(NAME, case),
                },
            }))[2];
            let s = c.stats().since(&before);
            let mut counters = CaseCounters::new(case);
            for stat in [
                Stat::AllocCpuSheaf,
                Stat::AllocSlowpath,
                Stat::AllocFastpath,
            ] {
                counters.add(stat.name(), s.get(stat));
            }
            knobs.push(counters);
            let per_pair = record_pair(NAME, case, v, harness, clock);
            super::record(
                NAME,
                case,
                "pairs_per_kinstruction",
                1000.0 / per_pair,
                "pairs",
                1,
            );
            destroy(c)?;
        }
        Ok(knobs)
    })?;
    knob::check(NAME, &knobs).map_err(TestError::Fail)
}

fn memoryless_sheaves(ctx: &Ctx) -> TestResult {
    let topo = crate::topology::get();
    let on_memoryless =
        |cpu: numalab_algo::topology::CpuId| topo.is_memoryless(topo.node_of_cpu(cpu));
    let online = workload::online();
    if !online.iter().any(|&c| on_memoryless(c)) {
        return Err(TestError::Skip(format!(
            "{NAME}: no online CPU on a memoryless node (try --topology 8node-2mem)"
        )));
    }
    if super::instruction_boot() && ctx.cpus_online == 1 {
        return pairs(super::clock());
    }
    let rounds = super::pick(400, 20);
    let mut knobs = Vec::new();
    for (case, t) in super::rep_order(cases()) {
        let c = create(case, t)?;
        let before: Vec<StatsSnapshot> =
            online.iter().map(|&cpu| c.core().cpu_stats(cpu)).collect();
        c.reset_list_lock_stats();
        super::region::run_on_cpus(NAME, case, &online, &|_cpu| {
            let mut objs: Vec<Object> = Vec::with_capacity(BURST);
            for _ in 0..rounds {
                while objs.len() < BURST {
                    match c.alloc_object() {
                        Some(o) => objs.push(o),
                        None => break,
                    }
                }
                // Freed in allocation order, as owned objects (dropped).
                for o in objs.drain(..) {
                    drop(o);
                }
            }
        });
        let lock = c.list_lock_stats();
        let (mut less, mut more) = (StatsSnapshot::default(), StatsSnapshot::default());
        for (i, &cpu) in online.iter().enumerate() {
            let d = c.core().cpu_stats(cpu).since(&before[i]);
            let group = if on_memoryless(cpu) {
                &mut less
            } else {
                &mut more
            };
            for (a, b) in group.counts.iter_mut().zip(d.counts) {
                *a = a.wrapping_add(b);
            }
        }
        let mut all = less;
        for (a, b) in all.counts.iter_mut().zip(more.counts) {
            *a = a.wrapping_add(b);
        }
        let kops = (2 * rounds * BURST as u64 * online.len() as u64) as f64 / 1000.0;
        let k32 = online.len() as u32;
        let slab_path = all.get(Stat::AllocSlowpath) + all.get(Stat::FreeSlowpath);
        super::record(
            NAME,
            case,
            "sheaf_fraction_memoryless_cpus",
            sheaf_share(&less),
            "fraction",
            k32,
        );
        super::record(
            NAME,
            case,
            "sheaf_fraction_memory_cpus",
            sheaf_share(&more),
            "fraction",
            k32,
        );
        super::record(
            NAME,
            case,
            "slab_path_per_kop",
            slab_path as f64 / kops,
            "events",
            k32,
        );
        super::record(
            NAME,
            case,
            "list_lock_acquisitions_per_kop",
            lock.acquisitions as f64 / kops,
            "acquisitions",
            k32,
        );
        let mut counters = CaseCounters::new(case);
        counters.add("slab_path", slab_path);
        counters.add("alloc_cpu_sheaf", all.get(Stat::AllocCpuSheaf));
        counters.add("list_lock_acquisitions", lock.acquisitions);
        crate::println!("# {NAME}: knob counters {case}: {}", counters.describe());
        knobs.push(counters);
        c.shrink();
        destroy(c)?;
    }
    knob::check(NAME, &knobs).map_err(TestError::Fail)
}

crate::ktest!(super::BENCH_SUITE, Bench, NAME, memoryless_sheaves);
