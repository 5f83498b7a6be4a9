//! In-kernel kfree_rcu tests (suite `kfree_rcu`): each of the three ways frees, on every CPU,
//! rcuscale's kfree_obj (8 bytes and an rcu_head: kmalloc-32) with the two-argument
//! kvfree_rcu and a few with the one-argument form; after `kvfree_rcu_barrier` every object
//! is back in kmalloc-32 (its live objects as before), and each way shows its mechanism: one
//! callback per object under `call_rcu`, a few batches under `batched`, rcu_free sheaves
//! (`free_rcu_sheaf`) only under `sheaf`.

use super::{counts, kvfree_rcu, kvfree_rcu_barrier, kvfree_rcu_mightsleep, set_way, way};
use crate::ktest::{Ctx, TestResult};
use crate::mm::slub::kmalloc::{cache_for, kmalloc};
use crate::smp::{online_cpus, run_on_cpus};
use crate::{kassert, kassert_eq, ktest};
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use numalab_algo::options::kfree_rcu::KfreeRcuWay;
use numalab_algo::slub::Stat;

use crate::ktest::suites::KFREE_RCU as SUITE;

/// rcuscale's struct kfree_obj: 8 bytes, then the rcu_head.
const OBJ_BYTES: usize = 24;
const HEAD_OFFSET: usize = 8;
/// Two-argument frees per CPU, and one-argument ones.
const PER_CPU: u64 = 300;
const HEADLESS: u64 = 4;

fn three_ways_free_everything_and_show_their_mechanism(_ctx: &Ctx) -> TestResult {
    let cache = cache_for(OBJ_BYTES).expect("kmalloc-32").core();
    let saved = way();
    let cpus = online_cpus();
    for w in [
        KfreeRcuWay::CallRcu,
        KfreeRcuWay::Batched,
        KfreeRcuWay::Sheaf,
    ] {
        set_way(w);
        let before = cache.stats();
        let cb_before: u64 = cpus.iter().map(|c| counts(*c).callbacks).sum();
        let failed = AtomicU64::new(0);
        run_on_cpus(cpus, &|_| {
            for i in 0..PER_CPU + HEADLESS {
                let Some(p) = kmalloc(OBJ_BYTES) else {
                    failed.fetch_add(1, Relaxed);
                    return;
                };
                // SAFETY: a fresh kmalloc-32 object, given up here, with room for an
                // rcu_head at 8.
                unsafe {
                    if i < PER_CPU {
                        kvfree_rcu::<HEAD_OFFSET>(p)
                    } else {
                        kvfree_rcu_mightsleep(p)
                    }
                }
                if i % 64 == 63 {
                    crate::rcu::quiescent_point();
                }
            }
        });
        kassert_eq!(failed.load(Relaxed), 0);
        kvfree_rcu_barrier();
        let d = cache.stats().since(&before);
        let callbacks: u64 = cpus.iter().map(|c| counts(*c).callbacks).sum::<u64>() - cb_before;
        let objects = PER_CPU * cpus.len() as u64;
        crate::println!(
            "# kfree_rcu: {}: {} objects on {} CPUs, {} callbacks, free_rcu_sheaf {} free_rcu_sheaf_fail {} barn_put {}",
            w.name(),
            objects,
            cpus.len(),
            callbacks,
            d.get(Stat::FreeRcuSheaf),
            d.get(Stat::FreeRcuSheafFail),
            d.get(Stat::BarnPut)
        );
        kassert_eq!(d.live_objects(), 0, "{}: objects not freed", w.name());
        for c in cpus {
            kassert_eq!(
                counts(*c).waiting,
                0,
                "{}: CPU {} still holds objects",
                w.name(),
                c.0
            );
        }
        match w {
            KfreeRcuWay::CallRcu => kassert_eq!(callbacks, objects),
            KfreeRcuWay::Batched => kassert!(callbacks < objects / 10, "{callbacks}"),
            // A cache without sheaves (a debug cache, as in Linux, or one the hybrid design
            // leaves out) has no rcu_free sheaf: the sheaf way falls back to batching.
            KfreeRcuWay::Sheaf if cache.sheaf_capacity() == 0 => {
                kassert_eq!(d.get(Stat::FreeRcuSheaf), 0);
                kassert!(callbacks < objects / 10, "{callbacks}");
            }
            KfreeRcuWay::Sheaf => kassert!(d.get(Stat::FreeRcuSheaf) > 0),
        }
        if w != KfreeRcuWay::Sheaf {
            kassert_eq!(d.get(Stat::FreeRcuSheaf), 0);
        }
    }
    set_way(saved);
    Ok(())
}

ktest!(
    SUITE,
    Test,
    three_ways_free_everything_and_show_their_mechanism
);
