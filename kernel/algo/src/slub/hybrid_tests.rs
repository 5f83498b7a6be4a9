//! Host tests of the hybrid design (Linux 6.18) on the fake machine: an opted-in cache
//! refills its sheaves through the per-CPU slab and flushes them through the partial
//! design's free path (CPU partial lists included), a cache that does not opt in behaves
//! exactly as the partial design, conservation across CPUs and nodes, and an interrupt
//! nested at every word load of the fast paths.

use super::fake::FakeMachine;
use super::sheaves_tests::{interrupt_case_in, Irq};
use super::*;
use crate::rng::Rng;
use std::boxed::Box;
use std::vec::Vec;

fn machine(pages: &[usize], cpus: &[u16]) -> &'static FakeMachine {
    Box::leak(Box::new(FakeMachine::new(pages, cpus, None)))
}

fn hybrid(opt_in: bool) -> Tunables {
    Tunables {
        design: Design::Hybrid,
        sheaves_opt_in: opt_in,
        ..Tunables::default()
    }
}

fn cache(
    m: &'static FakeMachine,
    size: usize,
    t: Tunables,
) -> &'static Cache<&'static FakeMachine> {
    Box::leak(Box::new(
        Cache::new(m, "maple_node", size, 0, t, 0x1234_5678, None).unwrap(),
    ))
}

/// Everything back: no slab, no descriptor, no sheaf block, every page free.
fn assert_all_back(m: &FakeMachine, c: &Cache<&'static FakeMachine>, pages: usize) {
    c.destroy().unwrap();
    assert_eq!(m.free_pages_total(), pages);
    assert_eq!(m.descs_in_use(), 0);
    assert_eq!(m.blocks_in_use(), 0);
}

const SHEAF_EVENTS: [Stat; 6] = [
    Stat::AllocCpuSheaf,
    Stat::FreeCpuSheaf,
    Stat::SheafRefill,
    Stat::SheafAlloc,
    Stat::BarnGet,
    Stat::BarnPut,
];

#[test]
fn an_opted_in_cache_refills_its_sheaf_through_the_cpu_slab() {
    let m = machine(&[256], &[0, 0]);
    FakeMachine::set_cpu(0);
    let c = cache(m, 256, hybrid(true));
    assert_eq!(
        c.sheaf_capacity(),
        32,
        "6.18's maple_node: .sheaf_capacity = 32"
    );
    assert!(c.cpu_partial().0 > 0, "6.18 keeps the CPU partial lists");
    let a = c.alloc().unwrap();
    let s = c.stats();
    assert_eq!(s.get(Stat::AllocCpuSheaf), 1);
    assert_eq!(s.get(Stat::SheafRefill), 32);
    // __kmem_cache_alloc_bulk: the refill went through ___slab_alloc, which made the new
    // slab this CPU's slab; the objects are counted as sheaf_refill, not as allocations.
    assert!(s.get(Stat::AllocSlab) >= 1);
    assert_eq!(s.live_objects(), 1);
    let cpu_slabs = |c: &Cache<&'static FakeMachine>| -> usize {
        c.snapshot().nodes.iter().map(|n| n.cpu_slabs).sum()
    };
    assert_eq!(cpu_slabs(c), 1);
    c.free(a);
    assert_eq!(c.stats().get(Stat::FreeCpuSheaf), 1);
    assert_all_back(m, c, 256);
    // The sheaves design refills from the slabs directly (here the new slab's 16 objects):
    // no CPU slab.
    let m = machine(&[256], &[0, 0]);
    let sheaves = cache(
        m,
        256,
        Tunables {
            design: Design::Sheaves,
            ..Tunables::default()
        },
    );
    let a = sheaves.alloc().unwrap();
    assert_eq!(sheaves.stats().get(Stat::SheafRefill), 16);
    assert_eq!(cpu_slabs(sheaves), 0);
    sheaves.free(a);
    assert_all_back(m, sheaves, 256);
}

/// Allocations and frees in bursts on two CPUs of two nodes, frees of the other CPU's
/// objects included; returns the cache's counters at the end, before giving everything back.
fn churn(t: Tunables, seed: u64) -> StatsSnapshot {
    let m = machine(&[1024, 1024], &[0, 1]);
    let c = cache(m, 256, t);
    let mut rng = Rng::new(seed);
    let mut held: Vec<usize> = Vec::new();
    for round in 0..200 {
        FakeMachine::set_cpu((round % 2) as u16);
        for _ in 0..rng.below(64) {
            held.push(c.alloc().unwrap());
        }
        for _ in 0..rng.below(64).min(held.len() as u64) {
            let i = rng.below(held.len() as u64) as usize;
            c.free(held.swap_remove(i));
        }
        c.validate().unwrap();
    }
    let s = c.stats();
    assert_eq!(s.live_objects(), held.len() as i64);
    for o in held {
        c.free(o);
    }
    c.flush_all();
    assert_all_back(m, c, 2048);
    s
}

#[test]
fn a_cache_that_does_not_opt_in_runs_the_partial_design() {
    let m = machine(&[256], &[0]);
    let c = cache(m, 256, hybrid(false));
    assert_eq!(c.sheaf_capacity(), 0);
    let attrs = sysfs::cache_attrs(&c.snapshot());
    assert!(!attrs.iter().any(|(k, _)| *k == "sheaf_capacity"));
    c.destroy().unwrap();
    for seed in 1..4 {
        let partial = churn(Tunables::default(), seed);
        let plain = churn(hybrid(false), seed);
        for (stat, name) in STAT_NAMES.iter() {
            assert_eq!(partial.get(*stat), plain.get(*stat), "seed {seed}: {name}");
        }
        for stat in SHEAF_EVENTS {
            assert_eq!(plain.get(stat), 0, "{stat:?}");
        }
    }
}

#[test]
fn opted_in_churn_conserves_objects_and_shows_sheaf_events() {
    for seed in 1..4 {
        let s = churn(hybrid(true), seed);
        assert!(s.get(Stat::AllocCpuSheaf) > 0 && s.get(Stat::FreeCpuSheaf) > 0);
        // Remote frees go through the partial design's free path, refills through its CPU
        // slab (a new CPU slab each time one runs dry).
        assert!(s.get(Stat::FreeSlowpath) > 0 && s.get(Stat::AllocSlab) > 0);
    }
}

#[test]
fn a_full_barn_flushes_through_the_slab_free_path_onto_cpu_partials() {
    let run = |t: Tunables| {
        let m = machine(&[2048], &[0]);
        FakeMachine::set_cpu(0);
        let c = cache(m, 256, t);
        let objs: Vec<usize> = (0..3000).map(|_| c.alloc().unwrap()).collect();
        for &o in &objs {
            c.free(o);
        }
        let s = c.stats();
        assert!(
            s.get(Stat::SheafFlush) > 0,
            "the barn filled up and main was flushed"
        );
        assert_all_back(m, c, 2048);
        s.get(Stat::CpuPartialFree)
    };
    assert!(
        run(hybrid(true)) > 0,
        "6.18: full slabs freeze onto the CPU partial list"
    );
    let sheaves = Tunables {
        design: Design::Sheaves,
        ..Tunables::default()
    };
    assert_eq!(run(sheaves), 0, "7.0 has no CPU partial lists");
}

#[test]
fn an_interrupt_at_any_load_is_served_by_the_cpu_slab() {
    for irq in [Irq::Alloc, Irq::Free, Irq::Both, Irq::Aba] {
        for load in 1..40 {
            interrupt_case_in(Design::Hybrid, load, irq, false).unwrap();
        }
    }
    for irq in [Irq::Alloc, Irq::Free] {
        let caught = (1..40)
            .filter(|&l| interrupt_case_in(Design::Hybrid, l, irq, true).is_err())
            .count();
        assert!(caught > 0, "{irq:?}: the trylock mutation went unnoticed");
    }
}
