//! Benchmark `kfree_rcu_scale`: rcuscale's kfree_rcu_test (Linux
//! kernel/rcu/rcuscale.c, `kfree_scale_thread`) on every CPU: each CPU allocates
//! `struct kfree_obj` (8 bytes and an rcu_head: `kfree_mult` 1, kmalloc-32's size) and frees it
//! with kfree_rcu, `kfree_loops` x `kfree_alloc_num` times (10 x 8000; a fortieth under
//! smoke), calling `quiescent_point` every 64 (Linux's cond_resched), then
//! kvfree_rcu_barrier. Cases: the three `rcu.kfree` ways, each on a fresh 24-byte cache of
//! the boot's SLUB design (`kfree_by_call_rcu` is the `call_rcu` case).
//!
//! Metrics: icount (one CPU): `instructions_per_op` (one allocation and one kfree_rcu, the
//! barrier not included). det and tsc (every CPU): grace periods and call_rcu callbacks per
//! 1000 frees, the most objects waiting on one CPU (`peak_waiting_objects`: queued, not yet
//! freed), list_lock and barn lock acquisitions per 1000 frees.
//!
//! The loops run as one bench region per case (`region::run_on_cpus`): in det boots the quantum
//! interleaves the vCPUs, so grace periods end while the loops run (without it a vCPU ran its
//! whole loop in one turn and every object waited for the barrier), and `--trace mem` counts
//! the region per free.
//!
//! Knob check: the cases' mechanism counters (callbacks, `free_rcu_sheaf`, objects on the
//! batched rcu_head list) differ.

use super::slub_cache::BenchCache;
use super::workload;
use crate::kfree_rcu::{counts, kvfree_rcu, kvfree_rcu_barrier, reset_peak, set_way, way};
use crate::ktest::{Ctx, TestError, TestResult};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use numalab_algo::knob::{self, CaseCounters};
use numalab_algo::options::kfree_rcu::KfreeRcuWay;
use numalab_algo::slub::Stat;

const NAME: &str = super::catalog::KFREE_RCU_SCALE.name;
/// rcuscale's struct kfree_obj: `char kfree_obj[8]`, then `struct rcu_head rh`.
const OBJ_BYTES: usize = 24;
const HEAD_OFFSET: usize = 8;
/// rcuscale's kfree_loops x kfree_alloc_num.
const FULL_OPS: u64 = 10 * 8000;
const SMOKE_OPS: u64 = 2000;

const CASES: [(&str, KfreeRcuWay); 3] = [
    ("call_rcu", KfreeRcuWay::CallRcu),
    ("batched", KfreeRcuWay::Batched),
    ("sheaf", KfreeRcuWay::Sheaf),
];

/// One CPU's loop; false when out of memory.
fn frees(cache: &BenchCache, ops: u64) -> bool {
    for i in 0..ops {
        let Some(o) = cache.alloc() else {
            return false;
        };
        // SAFETY: a fresh 24-byte object given up here, with room for an rcu_head at 8.
        #[allow(unsafe_code)]
        unsafe {
            kvfree_rcu::<HEAD_OFFSET>(o.into_raw())
        };
        if i % 64 == 63 {
            crate::rcu::quiescent_point();
        }
    }
    true
}

fn kfree_rcu_scale(ctx: &Ctx) -> TestResult {
    let saved = way();
    let ops = super::pick(FULL_OPS, SMOKE_OPS);
    let one_cpu = super::instruction_boot() && ctx.cpus_online == 1;
    let cpus = workload::online();
    let mut knobs = Vec::new();
    for (case, w) in super::rep_order(CASES) {
        set_way(w);
        let cache = BenchCache::create(NAME, OBJ_BYTES, BenchCache::default_tunables(NAME))
            .map_err(TestError::Fail)?;
        if one_cpu {
            let t0 = super::now();
            let ok = frees(&cache, ops);
            let t1 = super::now();
            kvfree_rcu_barrier();
            if !ok {
                return Err(TestError::Fail(alloc::format!(
                    "{NAME}: {case}: out of memory"
                )));
            }
            let per_op = (t1 - t0) as f64 / ops as f64;
            super::record(NAME, case, "instructions_per_op", per_op, "instructions", 1);
            cache.finish().map_err(TestError::Fail)?;
            continue;
        }
        let sum = |f: fn(crate::kfree_rcu::Counts) -> u64| -> u64 {
            cpus.iter().map(|c| f(counts(*c))).sum()
        };
        let cb0 = sum(|c| c.callbacks);
        let list0 = sum(|c| c.in_list);
        let gp0 = crate::rcu::stats().grace_periods;
        let s0 = cache.stats();
        cache.reset_list_lock_stats();
        cache.reset_barn_lock_stats();
        crate::smp::on_each_cpu(&|_| reset_peak());
        let failed = AtomicU64::new(0);
        let region = super::region::run_on_cpus(NAME, case, &cpus, &|_| {
            if !frees(&cache, ops) {
                failed.fetch_add(1, Relaxed);
            }
        });
        kvfree_rcu_barrier();
        if failed.load(Relaxed) != 0 {
            return Err(TestError::Fail(alloc::format!(
                "{NAME}: {case}: out of memory"
            )));
        }
        let total = ops * cpus.len() as u64;
        region.ops(total);
        let kops = total as f64 / 1000.0;
        let d = cache.stats().since(&s0);
        let callbacks = sum(|c| c.callbacks) - cb0;
        let in_list = sum(|c| c.in_list) - list0;
        let gps = crate::rcu::stats().grace_periods - gp0;
        let peak = cpus
            .iter()
            .map(|c| counts(*c).peak_waiting)
            .max()
            .unwrap_or(0);
        let k = cpus.len() as u32;
        let rows: [(&str, f64, &str); 5] = [
            ("grace_periods_per_kop", gps as f64 / kops, "grace_periods"),
            ("callbacks_per_kop", callbacks as f64 / kops, "callbacks"),
            ("peak_waiting_objects", peak as f64, "objects"),
            (
                "list_lock_acquisitions_per_kop",
                cache.list_lock_stats().acquisitions as f64 / kops,
                "acquisitions",
            ),
            (
                "barn_lock_acquisitions_per_kop",
                cache.barn_lock_stats().acquisitions as f64 / kops,
                "acquisitions",
            ),
        ];
        for (metric, value, unit) in rows {
            super::record(NAME, case, metric, value, unit, k);
        }
        let mut counters = CaseCounters::new(case);
        counters.add("callbacks", callbacks);
        counters.add("free_rcu_sheaf", d.get(Stat::FreeRcuSheaf));
        counters.add("rcu_head_list", in_list);
        crate::println!("# {NAME}: knob counters {case}: {}", counters.describe());
        knobs.push(counters);
        cache.finish().map_err(TestError::Fail)?;
    }
    set_way(saved);
    knob::check(NAME, &knobs).map_err(TestError::Fail)
}

crate::ktest!(super::BENCH_SUITE, Bench, NAME, kfree_rcu_scale);
