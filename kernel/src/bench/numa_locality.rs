//! `numa_locality` (seed 004, Hyeonggon Yoo / Jay Patel, "improve SLUB on NUMA"): what a CPU
//! whose local partial list is empty does when another node holds more than min_partial
//! partial slabs. Linux (`default`) takes a remote partial slab (get_any_partial, counted as
//! `alloc_remote_partial`); `prefer_local` (the series' patch 2) makes a new local slab while
//! the local node has free memory (counted as `alloc_prefer_local` when remote partials were
//! there to take).
//!
//! The workload gives every node one of two roles, by its rank among the nodes with CPUs, and
//! runs in rounds of two phases separated by barriers:
//! - message nodes (even ranks), phase 1: hackbench-like exchange inside the node. Each CPU
//!   allocates a burst of `BURST` 128-byte messages (hackbench's 100-byte messages land in
//!   kmalloc-128) and sends them to the next CPU of its own node, which frees three in four at
//!   once and keeps one in four in a reservoir of long-lived objects (a random old one is freed
//!   when it is full). Objects are freed on their home node, and the long-lived ones leave
//!   its slabs partially used: the node's partial list grows beyond min_partial (through the
//!   receivers' CPU partial lists draining).
//! - growth nodes (odd ranks), phase 2: each CPU fills a cache of `HOLD` objects and drops it
//!   all (a dentry-like cache filled by a scan and shrunk). The fill runs through the CPU and
//!   local partial lists and then needs slabs: remote partial slabs of the message nodes
//!   (default) or new local ones (prefer_local).
//!
//! The phases are sequential so that the growth CPUs meet the message nodes' partial lists
//! as the bursts left them: in a concurrent run the message CPUs take their own node's
//! partial slabs back (up to half the cpu_partial bound at a time) as fast as the receivers
//! drain them, and the lists seldom exceed min_partial (measured: 1 prefer_local decision and
//! 2 remote takes in a smoke run on 4node).
//!
//! Roles and locality go by the CPU's memory node (its nearest node with memory when its own
//! is memoryless); a machine whose CPUs all allocate from one memory node skips.
//!
//! Metrics per case: `local_object_fraction` (allocations whose memory is on the allocating
//! CPU's memory node, all CPUs), `growth_local_object_fraction` (growth-node CPUs only: the CPUs the
//! knob is about), `slab_kib` (the most memory the cache held in slab pages during the run,
//! sampled), `allocations_per_sec` (all CPUs together, guest time; tsc clock: a trend), and
//! the mechanism counters (SLUB stat names, per case): `alloc_prefer_local`,
//! `alloc_remote_partial`, `alloc_slab` (new slabs from the page allocator). A knob check
//! fails the experiment when both cases show the same alloc_prefer_local and
//! alloc_remote_partial (numalab_algo::knob): prefer_local never met a remote partial list
//! above min_partial, so the two cases ran the same code.
//!
//! Lock order: mailbox locks are leaves, never held across allocator calls.

use super::slub_cache::{BenchCache, Obj};
use super::workload::{self, Mailboxes, PhaseBarrier};
use crate::ktest::{Ctx, TestError, TestResult};
use crate::topology::{CpuId, NodeId};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use numalab_algo::knob::{self, CaseCounters};
use numalab_algo::rng::Rng;
use numalab_algo::slub::{Stat, StatsSnapshot};

const NAME: &str = super::catalog::NUMA_LOCALITY.name;
const MSG_BYTES: usize = 128;
/// Messages a message-node CPU sends per round.
const BURST: usize = 512;
/// A receiver keeps one message in this many in its reservoir.
const KEEP_ONE_IN: u64 = 4;
/// Long-lived objects a receiver keeps at most.
const RESERVOIR: usize = 1024;
/// Objects a growth CPU holds before it drops them all.
const HOLD: usize = 1024;

/// What a CPU does in the workload.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Role {
    /// Sends messages to `to` (an index in the CPU list, on the same node).
    Message {
        to: usize,
    },
    Grow,
}

/// The memory node a CPU allocates from (its own, or the nearest one with memory when its
/// node is memoryless).
fn mem_node_of(cpu: CpuId) -> NodeId {
    crate::topology::get().mem_node(workload::node_of(cpu))
}

/// The role of every CPU (by index in `cpus`): the memory nodes of the CPUs in node order,
/// even ranks are message nodes, odd ranks growth nodes; a message CPU sends to the next CPU
/// of its memory node (itself when it is alone there).
fn roles(cpus: &[CpuId]) -> Vec<Role> {
    let mut nodes: Vec<NodeId> = cpus.iter().map(|&c| mem_node_of(c)).collect();
    nodes.sort_unstable();
    nodes.dedup();
    (0..cpus.len())
        .map(|i| {
            let node = mem_node_of(cpus[i]);
            let rank = nodes.iter().position(|&n| n == node).unwrap_or(0);
            if rank % 2 == 1 {
                return Role::Grow;
            }
            let same: Vec<usize> = (0..cpus.len())
                .filter(|&j| mem_node_of(cpus[j]) == node)
                .collect();
            let at = same.iter().position(|&j| j == i).unwrap_or(0);
            Role::Message {
                to: same[(at + 1) % same.len()],
            }
        })
        .collect()
}

struct Sample {
    local: u64,
    total: u64,
    grow_local: u64,
    grow_total: u64,
    peak_slab_bytes: u64,
    elapsed_ticks: u64,
    stats: StatsSnapshot,
}

fn run_case(case: &str, prefer_local: bool, rounds: usize) -> Result<Sample, String> {
    let cpus = workload::online();
    let role = roles(&cpus);
    let mut t = BenchCache::partial_tunables(NAME);
    t.prefer_local = prefer_local;
    let cache = BenchCache::create(NAME, MSG_BYTES, t)?;
    let (order, objects, min_partial, _) = cache.shape();
    crate::println!(
        "# {NAME}: case {case}: slab order {order}, {objects} objects/slab, min_partial {min_partial}, cpu_partial {} slabs; {} message CPUs, {} growth CPUs, {rounds} rounds",
        cache.cpu_partial_slabs(),
        role.iter().filter(|r| **r != Role::Grow).count(),
        role.iter().filter(|r| **r == Role::Grow).count(),
    );
    let stats0 = cache.stats();
    let mail = Mailboxes::new(cpus.len(), BURST);
    mail.name_for_trace(NAME);
    let phases = PhaseBarrier::new(cpus.len());
    let (local, total) = (AtomicU64::new(0), AtomicU64::new(0));
    let (grow_local, grow_total) = (AtomicU64::new(0), AtomicU64::new(0));
    let (start, end, peak) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let short = AtomicU64::new(0);
    let region = super::region::run_on_cpus(NAME, case, &cpus, &|cpu| {
        let me = cpus.iter().position(|&c| c == cpu).unwrap_or(0);
        let my_node = mem_node_of(cpu);
        let mut rng = Rng::new(0x5eed_0004 + me as u64);
        let (mut my_local, mut done, mut checksum) = (0u64, 0u64, 0u64);
        let alloc_one = |my_local: &mut u64| -> Option<Obj> {
            let Some(obj) = cache.alloc() else {
                short.fetch_add(1, Ordering::Relaxed);
                return None;
            };
            if workload::node_of_addr(obj.addr()) == Some(my_node) {
                *my_local += 1;
            }
            Some(obj)
        };
        let mut out: Vec<Obj> = Vec::with_capacity(BURST);
        let mut inbox: Vec<Obj> = Vec::with_capacity(BURST);
        let mut kept: Vec<Obj> = Vec::with_capacity(RESERVOIR);
        let mut held: Vec<Obj> = Vec::with_capacity(HOLD);
        phases.wait(0);
        if me == 0 {
            start.store(super::now(), Ordering::Release);
        }
        let mut phase = 1;
        for round in 0..rounds {
            // Phase 1: message nodes send a burst inside the node; the receiver frees three
            // in four messages and keeps one in four (an old one leaves when the reservoir
            // is full).
            if let Role::Message { to } = role[me] {
                for _ in 0..BURST {
                    let Some(mut msg) = alloc_one(&mut my_local) else {
                        break;
                    };
                    msg.write_word(done);
                    out.push(msg);
                    done += 1;
                }
                mail.send(to, &mut out);
            }
            phases.wait(phase);
            phase += 1;
            mail.take(me, &mut inbox);
            for msg in inbox.drain(..) {
                checksum = checksum.wrapping_add(msg.read_word());
                if rng.below(KEEP_ONE_IN) != 0 {
                    cache.free(msg);
                } else if kept.len() < RESERVOIR {
                    kept.push(msg);
                } else {
                    let slot = rng.below(RESERVOIR as u64) as usize;
                    cache.free(core::mem::replace(&mut kept[slot], msg));
                }
            }
            workload::store_max(&peak, cache.slab_bytes());
            phases.wait(phase);
            phase += 1;
            // Phase 2: growth nodes fill their cache and drop it.
            if role[me] == Role::Grow {
                while held.len() < HOLD {
                    let Some(mut obj) = alloc_one(&mut my_local) else {
                        break;
                    };
                    obj.write_word(done);
                    held.push(obj);
                    done += 1;
                }
                workload::store_max(&peak, cache.slab_bytes());
                for obj in held.drain(..) {
                    checksum = checksum.wrapping_add(obj.read_word());
                    cache.free(obj);
                }
            }
            phases.wait(phase);
            phase += 1;
            if me == 0 {
                super::progress(NAME, case, (round * 100 / rounds) as u32);
            }
        }
        workload::store_max(&end, super::now());
        for obj in kept.drain(..) {
            cache.free(obj);
        }
        if role[me] == Role::Grow {
            grow_local.fetch_add(my_local, Ordering::Relaxed);
            grow_total.fetch_add(done, Ordering::Relaxed);
        }
        local.fetch_add(my_local, Ordering::Relaxed);
        total.fetch_add(done, Ordering::Relaxed);
        core::hint::black_box(checksum);
    });
    region.ops(total.load(Ordering::Relaxed) + grow_total.load(Ordering::Relaxed));
    let stats = cache.stats().since(&stats0);
    cache.finish()?;
    if short.load(Ordering::Relaxed) > 0 {
        return Err(format!(
            "{NAME}: {case}: allocations failed (out of memory?)"
        ));
    }
    Ok(Sample {
        local: local.load(Ordering::Relaxed),
        total: total.load(Ordering::Relaxed).max(1),
        grow_local: grow_local.load(Ordering::Relaxed),
        grow_total: grow_total.load(Ordering::Relaxed).max(1),
        peak_slab_bytes: peak.load(Ordering::Relaxed),
        elapsed_ticks: end
            .load(Ordering::Acquire)
            .saturating_sub(start.load(Ordering::Acquire))
            .max(1),
        stats,
    })
}

/// The SLUB counters of the decision prefer_local changes (the knob check compares them):
/// remote partial slabs declined for a new local slab, and remote partial slabs taken.
const MECHANISM: [Stat; 2] = [Stat::AllocPreferLocal, Stat::AllocRemotePartial];

fn numa_locality(ctx: &Ctx) -> TestResult {
    super::needs_cpus(ctx, NAME, 2)?;
    let cpus = workload::online();
    let grow = roles(&cpus).iter().filter(|r| **r == Role::Grow).count();
    if grow == 0 {
        return Err(TestError::Skip(format!(
            "{NAME}: needs CPUs that allocate from two or more memory nodes (a remote partial \
             list to take or decline)"
        )));
    }
    let rounds = super::pick(24, 4) as usize;
    let n = cpus.len() as u32;
    let hz = workload::ticks_per_sec();
    let mut knobs = Vec::new();
    for (case, prefer_local) in super::rep_order([("prefer_local", true), ("default", false)]) {
        let s = run_case(case, prefer_local, rounds)?;
        let rec = |metric: &str, value: f64, unit: &str| {
            super::record(NAME, case, metric, value, unit, n)
        };
        rec(
            "local_object_fraction",
            s.local as f64 / s.total as f64,
            "fraction",
        );
        rec(
            "growth_local_object_fraction",
            s.grow_local as f64 / s.grow_total as f64,
            "fraction",
        );
        rec("slab_kib", (s.peak_slab_bytes / 1024) as f64, "kib");
        rec(
            "allocations_per_sec",
            s.total as f64 / (s.elapsed_ticks as f64 / hz),
            "allocations_per_sec",
        );
        let mut counters = CaseCounters::new(case);
        for stat in [
            Stat::AllocPreferLocal,
            Stat::AllocRemotePartial,
            Stat::AllocSlab,
        ] {
            rec(stat.name(), s.stats.get(stat) as f64, "slabs");
        }
        for stat in MECHANISM {
            counters.add(stat.name(), s.stats.get(stat));
        }
        crate::println!("# {NAME}: knob counters {case}: {}", counters.describe());
        knobs.push(counters);
    }
    knob::check(NAME, &knobs).map_err(TestError::Fail)
}

crate::ktest!(super::BENCH_SUITE, Bench, NAME, numa_locality);
