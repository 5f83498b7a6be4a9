//! Host tests of the sheaves design on the fake machine: each path of the sheaf/barn
//! protocol reached and counted (main, spare swap, barn get/put, refill, flush, the
//! bypasses), memoryless nodes with and without their barns, exact conservation after
//! shrink and destroy, and an interrupt nested at every word load of the fast paths, with
//! the trylock mutation that the interrupt check must catch.

use super::fake::{FakeMachine, BASE};
use super::sheaves::MUTATION_NO_TRYLOCK;
use super::*;
use crate::rng::Rng;
use crate::topology::NodeId;
use std::boxed::Box;
use std::collections::HashSet;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Mutex;
use std::vec::Vec;

fn machine(pages: &[usize], cpus: &[u16]) -> &'static FakeMachine {
    Box::leak(Box::new(FakeMachine::new(pages, cpus, None)))
}

fn sheaves() -> Tunables {
    Tunables {
        design: Design::Sheaves,
        ..Tunables::default()
    }
}

fn cache(
    m: &'static FakeMachine,
    size: usize,
    t: Tunables,
) -> &'static Cache<&'static FakeMachine> {
    Box::leak(Box::new(
        Cache::new(m, "sheaves", size, 0, t, 0x1234_5678, None).unwrap(),
    ))
}

fn on_cpu(cpu: u16) {
    FakeMachine::set_cpu(cpu);
}

/// Everything back: no slab, no descriptor, no sheaf block, every page free.
fn assert_all_back(m: &FakeMachine, c: &Cache<&'static FakeMachine>, pages: usize) {
    c.destroy().unwrap();
    assert_eq!(m.free_pages_total(), pages);
    assert_eq!(m.descs_in_use(), 0);
    assert_eq!(m.blocks_in_use(), 0);
}

#[test]
fn first_allocation_refills_main_then_the_sheaf_serves() {
    let m = machine(&[256], &[0, 0]);
    on_cpu(0);
    let c = cache(m, 64, sheaves());
    assert_eq!(c.sheaf_capacity(), 60);
    assert_eq!(c.cpu_partial(), (0, 0), "no CPU partial slabs with sheaves");
    let a = c.alloc().unwrap();
    let s = c.stats();
    assert_eq!(s.get(Stat::SheafAlloc), 1);
    assert_eq!(s.get(Stat::BarnGetFail), 1);
    assert_eq!(s.get(Stat::SheafRefill), 60);
    assert_eq!(s.get(Stat::AllocCpuSheaf), 1);
    assert_eq!(s.get(Stat::AllocSlab), 1);
    let mut held = vec![a];
    for _ in 1..60 {
        held.push(c.alloc().unwrap());
    }
    assert_eq!(c.stats().get(Stat::AllocCpuSheaf), 60);
    assert_eq!(
        c.stats().get(Stat::SheafRefill),
        60,
        "one refill for 60 objects"
    );
    // Slabinfo: the 4 objects left of the 64-object slab are free, the sheaf holds none.
    assert_eq!(c.slabinfo(SlabinfoMode::Counters).active_objs, 60);
    assert_eq!(c.stats().live_objects(), 60);
    for o in held {
        c.free(o);
    }
    let s = c.stats();
    assert_eq!(s.get(Stat::FreeCpuSheaf), 60);
    assert_eq!(s.live_objects(), 0);
    // The sheaf holds 60 free objects that its slab counts as in use (as Linux's slabinfo).
    assert_eq!(s.sheaf_cached_objects(), 60);
    assert_eq!(c.slabinfo(SlabinfoMode::Counters).active_objs, 60);
    c.shrink();
    assert_eq!(c.stats().sheaf_cached_objects(), 0);
    assert_eq!(c.slabinfo(SlabinfoMode::Counters).active_objs, 0);
    assert_all_back(m, c, 256);
}

#[test]
fn frees_of_any_local_object_stay_on_the_fast_path() {
    // The partial design's weakness: a free into a slab that is not the CPU's active one
    // goes down the slow path. A sheaf takes any local object.
    let m = machine(&[2048], &[0]);
    on_cpu(0);
    let run = |t: Tunables| {
        let c = cache(m, 64, t);
        let mut rng = Rng::new(7);
        let mut held: Vec<usize> = Vec::new();
        for _ in 0..2000 {
            held.push(c.alloc().unwrap());
        }
        let before = c.stats();
        for _ in 0..20_000 {
            let i = rng.below(held.len() as u64) as usize;
            c.free(held.swap_remove(i));
            held.push(c.alloc().unwrap());
        }
        let s = c.stats().since(&before);
        for o in held {
            c.free(o);
        }
        assert_all_back(m, c, 2048);
        (s.get(Stat::FreeSlowpath), s.get(Stat::AllocSlowpath))
    };
    let (partial_free_slow, _) = run(Tunables::default());
    let (sheaf_free_slow, sheaf_alloc_slow) = run(sheaves());
    assert!(
        partial_free_slow > 15_000,
        "partial: {partial_free_slow} slow frees"
    );
    assert_eq!((sheaf_free_slow, sheaf_alloc_slow), (0, 0));
}

#[test]
fn spare_swap_and_barn_exchange_between_cpus_of_one_node() {
    let m = machine(&[1024], &[0, 0]);
    let c = cache(m, 64, sheaves());
    on_cpu(0);
    let objs: Vec<usize> = (0..600).map(|_| c.alloc().unwrap()).collect();
    let s = c.stats();
    assert!(s.get(Stat::SheafSwap) == 0 && s.get(Stat::BarnGetFail) >= 10);
    for &o in &objs {
        c.free(o);
    }
    let s = c.stats();
    assert!(
        s.get(Stat::BarnPut) >= 1,
        "full sheaves went to the barn: {s:?}"
    );
    let (full, _) = c.barn_sheaves(NodeId(0)).unwrap();
    assert!((1..=10).contains(&full));
    // CPU 1 of the same node takes full sheaves from the barn instead of refilling.
    on_cpu(1);
    let before = c.stats();
    let again: Vec<usize> = (0..120).map(|_| c.alloc().unwrap()).collect();
    let d = c.stats().since(&before);
    assert!(d.get(Stat::BarnGet) >= 1, "{d:?}");
    assert_eq!(d.get(Stat::SheafRefill), 0);
    for o in again {
        c.free(o);
    }
    on_cpu(0);
    assert_all_back(m, c, 1024);
}

#[test]
fn a_full_barn_makes_the_free_path_flush_to_slabs() {
    let m = machine(&[4096], &[0]);
    on_cpu(0);
    let c = cache(m, 64, sheaves());
    let objs: Vec<usize> = (0..60 * 14).map(|_| c.alloc().unwrap()).collect();
    for &o in &objs {
        c.free(o);
    }
    let s = c.stats();
    assert_eq!(c.barn_sheaves(NodeId(0)).unwrap().0, 10, "barn bound");
    assert!(
        s.get(Stat::BarnPutFail) >= 1 && s.get(Stat::SheafFlush) >= 60,
        "{s:?}"
    );
    assert_all_back(m, c, 4096);
}

#[test]
fn remote_frees_and_node_requests_bypass_the_sheaves() {
    let m = machine(&[512, 512], &[0, 1]);
    let c = cache(m, 64, sheaves());
    on_cpu(0);
    let local = c.alloc().unwrap();
    on_cpu(1);
    let remote_obj = c.alloc().unwrap();
    assert_eq!(m.node_of_addr(remote_obj), 1);
    on_cpu(0);
    let before = c.stats();
    c.free(remote_obj);
    let d = c.stats().since(&before);
    assert_eq!(
        (d.get(Stat::FreeSlowpath), d.get(Stat::FreeCpuSheaf)),
        (1, 0)
    );
    let n1 = c.alloc_node(NodeId(1)).unwrap();
    assert_eq!(m.node_of_addr(n1), 1);
    let d = c.stats().since(&before);
    assert_eq!(d.get(Stat::AllocSlowpath), 1, "{d:?}");
    let n0 = c.alloc_node_strict(NodeId(0)).unwrap();
    assert_eq!(m.node_of_addr(n0), 0);
    c.free(local);
    c.free(n0);
    c.free(n1);
    assert_all_back(m, c, 1024);
}

/// CPUs 0-1 on memoryless node 0, CPUs 2-3 on node 1 (all the memory).
fn memoryless_machine() -> &'static FakeMachine {
    Box::leak(Box::new(FakeMachine::new(
        &[0, 4096],
        &[0, 0, 1, 1],
        Some(vec![vec![10, 40], vec![40, 10]]),
    )))
}

fn memoryless_run(barns: bool) -> (u64, u64) {
    let m = memoryless_machine();
    let c = cache(
        m,
        64,
        Tunables {
            memoryless_barns: barns,
            ..sheaves()
        },
    );
    on_cpu(0);
    let mut held: Vec<usize> = Vec::new();
    for round in 0..20 {
        for _ in 0..200 {
            held.push(c.alloc().unwrap());
        }
        for o in held.drain(..) {
            c.free(o);
        }
        let _ = round;
    }
    let s = c.stats();
    assert_eq!(c.barn_sheaves(NodeId(0)).is_some(), barns);
    assert_all_back(m, c, 4096);
    (s.get(Stat::AllocCpuSheaf), s.get(Stat::AllocSlowpath))
}

#[test]
fn memoryless_cpus_fall_to_the_slabs_without_a_barn_as_in_7_0() {
    let (from_sheaves, slow) = memoryless_run(false);
    let (fixed_sheaves, fixed_slow) = memoryless_run(true);
    // 7.0: after its first sheaves, a memoryless CPU's allocations take the slab path.
    assert!(
        slow > 2000,
        "7.0: {slow} slow of 4000 ({from_sheaves} from sheaves)"
    );
    // The fix: a barn on the memoryless node, so the sheaves serve nearly everything.
    assert!(
        fixed_slow == 0 && fixed_sheaves == 4000,
        "{fixed_sheaves} / {fixed_slow}"
    );
}

#[test]
fn debug_caches_have_no_sheaves() {
    let m = machine(&[256], &[0]);
    on_cpu(0);
    let t = Tunables {
        debug: DebugFlags::parse("FZ").unwrap(),
        ..sheaves()
    };
    let c = cache(m, 64, t);
    assert_eq!(c.sheaf_capacity(), 0);
    let a = c.alloc().unwrap();
    c.free(a);
    c.free(a);
    assert_eq!(c.error_count(ErrorKind::DoubleFree), 1);
    assert_eq!(c.stats().get(Stat::AllocCpuSheaf), 0);
    assert_all_back(m, c, 256);
}

#[test]
fn misuse_is_reported_not_cached() {
    let m = machine(&[256], &[0]);
    on_cpu(0);
    let c = cache(m, 64, sheaves());
    let other = cache(m, 128, sheaves());
    let a = c.alloc().unwrap();
    let b = other.alloc().unwrap();
    c.free(a);
    c.free(a);
    c.free(a + 8);
    c.free(b);
    c.free(BASE + 255 * 4096);
    assert_eq!(c.error_count(ErrorKind::DoubleFree), 1);
    assert_eq!(c.error_count(ErrorKind::NotObjectStart), 1);
    assert_eq!(c.error_count(ErrorKind::WrongCache), 1);
    assert_eq!(c.error_count(ErrorKind::NotSlab), 1);
    other.free(b);
    assert_eq!(c.stats().live_objects(), 0);
    c.destroy().unwrap();
    assert_all_back(m, other, 256);
}

#[test]
fn pages_the_short_owner_lookup_misses_take_the_slab_path() {
    // The kernel's vmemmap does not map a 2 MiB section shared by two nodes;
    // frees there must reach the slabs through the full lookup, lose nothing and still
    // report misuse.
    let m = machine(&[512], &[0]);
    on_cpu(0);
    let c = cache(m, 64, sheaves());
    let held: Vec<usize> = (0..200).map(|_| c.alloc().unwrap()).collect();
    m.owner_fast_misses.store(true, SeqCst);
    let before = c.stats();
    for &o in &held[..100] {
        c.free(o);
    }
    // An immediate double free (the slab path finds those; every one only with debugging).
    c.free(held[99]);
    c.free(held[101] + 8);
    let s = c.stats().since(&before);
    assert_eq!(s.get(Stat::FreeCpuSheaf), 0, "no free reached a sheaf");
    // The 100 frees; the two misuses are refused, not counted as frees.
    assert_eq!(s.get(Stat::FreeSlowpath), 100);
    assert_eq!(c.error_count(ErrorKind::DoubleFree), 1);
    assert_eq!(c.error_count(ErrorKind::NotObjectStart), 1);
    m.owner_fast_misses.store(false, SeqCst);
    let before = c.stats();
    for &o in &held[100..] {
        c.free(o);
    }
    assert_eq!(c.stats().since(&before).get(Stat::FreeCpuSheaf), 100);
    assert_eq!(c.stats().live_objects(), 0);
    assert_all_back(m, c, 512);
}

#[test]
fn free_in_slab_takes_the_owner_the_caller_found() {
    // kfree reads the owner word once and passes it on: the sheaf path must not look it
    // up again (the fast lookup is switched off here, so a second lookup would miss and
    // send the free to the slabs), and it still checks boundary and double free.
    let m = machine(&[256], &[0]);
    on_cpu(0);
    let c = cache(m, 64, sheaves());
    let a = c.alloc().unwrap();
    let b = c.alloc().unwrap();
    let desc = |o: usize| m.owner(o);
    m.owner_fast_misses.store(true, SeqCst);
    let before = c.stats();
    c.free_in_slab(a, desc(a));
    c.free_in_slab(a, desc(a));
    c.free_in_slab(b + 8, desc(b));
    assert_eq!(c.stats().since(&before).get(Stat::FreeCpuSheaf), 1);
    assert_eq!(c.error_count(ErrorKind::DoubleFree), 1);
    assert_eq!(c.error_count(ErrorKind::NotObjectStart), 1);
    c.free_in_slab(b, desc(b));
    assert_eq!(c.stats().since(&before).get(Stat::FreeCpuSheaf), 2);
    m.owner_fast_misses.store(false, SeqCst);
    assert_eq!(c.stats().live_objects(), 0);
    assert_all_back(m, c, 256);
}

#[test]
fn out_of_memory_returns_none_and_loses_nothing() {
    let m = machine(&[4], &[0]);
    on_cpu(0);
    let c = cache(m, 1024, sheaves());
    let mut held = Vec::new();
    while let Some(o) = c.alloc() {
        held.push(o);
    }
    assert_eq!(held.len(), 16, "four pages of four 1 KiB objects");
    for o in held {
        c.free(o);
    }
    assert_all_back(m, c, 4);
}

/// What the test's interrupt does, on the same CPU, nested inside the word load that armed it.
#[derive(Clone, Copy, Debug)]
pub(super) enum Irq {
    Alloc,
    Free,
    Both,
    /// Allocates two objects and frees the first: the head the owner read is the head
    /// again, with another next (the ABA that SLUB's tid exists for).
    Aba,
}

fn interrupt_case(load: usize, irq: Irq, mutated: bool) -> Result<(), std::string::String> {
    interrupt_case_in(Design::Sheaves, load, irq, mutated)
}

/// `interrupt_case` for either design; `mutated`: the sheaves' trylock is ignored, or the
/// partial design's compare ignores the tid.
pub(super) fn interrupt_case_in(
    design: Design,
    load: usize,
    irq: Irq,
    mutated: bool,
) -> Result<(), std::string::String> {
    let m = machine(&[256], &[0]);
    on_cpu(0);
    let c = cache(
        m,
        64,
        Tunables {
            design,
            sheaves_opt_in: true,
            ..Tunables::default()
        },
    );
    let held: &'static Mutex<Vec<usize>> = Box::leak(Box::new(Mutex::new(Vec::new())));
    // Warm up: main partly full, so the owner's next operations are fast-path ones.
    for _ in 0..3 {
        let o = c.alloc().unwrap();
        held.lock().unwrap().push(o);
    }
    let irq_objs: &'static Mutex<Vec<usize>> = Box::leak(Box::new(Mutex::new(Vec::new())));
    *m.irq.lock().unwrap() = Some(Box::new(move || {
        if let Irq::Aba = irq {
            let first = c.alloc().unwrap();
            let second = c.alloc().unwrap();
            m.store_tag(second, 0x1111);
            irq_objs.lock().unwrap().push(second);
            c.free(first);
            return;
        }
        if !matches!(irq, Irq::Free) {
            let o = c.alloc().unwrap();
            m.store_tag(o, 0x1111);
            irq_objs.lock().unwrap().push(o);
        }
        if !matches!(irq, Irq::Alloc) {
            let give = held.lock().unwrap().remove(0);
            c.free(give);
        }
    }));
    m.irq_after_loads.store(load, SeqCst);
    match design {
        Design::Sheaves | Design::Hybrid => MUTATION_NO_TRYLOCK.store(mutated, SeqCst),
        Design::Partial => m.cas_ignores_tid.store(mutated, SeqCst),
    }
    // The owner: one allocation and one free, the interrupt lands at word load `load`.
    let a = c.alloc().unwrap();
    m.store_tag(a, 0x2222);
    let last = held.lock().unwrap().pop();
    if let Some(l) = last {
        c.free(l);
    }
    MUTATION_NO_TRYLOCK.store(false, SeqCst);
    m.cas_ignores_tid.store(false, SeqCst);
    m.irq_after_loads.store(0, SeqCst);
    let fired = m.irq.lock().unwrap().is_none();
    let mut all: Vec<usize> = held.lock().unwrap().clone();
    all.push(a);
    all.extend(irq_objs.lock().unwrap().iter());
    // A few more allocations: a freelist or sheaf left pointing at a live object hands it
    // out again here.
    for _ in 0..4 {
        match c.alloc() {
            Some(o) => all.push(o),
            None => return Err(format!("load {load}, {irq:?}: out of memory")),
        }
    }
    let distinct: HashSet<usize> = all.iter().copied().collect();
    let result = if distinct.len() != all.len() {
        Err(format!(
            "load {load}: an object was handed out twice: {all:x?}"
        ))
    } else if fired && irq_objs.lock().unwrap().contains(&a) {
        Err(format!("load {load}: interrupt and owner share {a:#x}"))
    } else if c.stats().live_objects() != all.len() as i64 {
        Err(format!(
            "load {load}: {} live by the counters, {} held",
            c.stats().live_objects(),
            all.len()
        ))
    } else {
        Ok(())
    };
    // On an error the allocator's lists may be corrupt (that is what was caught): leave the
    // fake machine as it is rather than walk them.
    result.as_ref()?;
    for o in all {
        c.free(o);
    }
    c.shrink();
    // After a shrink every slab is empty and gone: a slab left means an object was lost.
    if result.is_ok() && (c.stats().live_objects() != 0 || c.slab_bytes() != 0) {
        return Err(format!("load {load}, {irq:?}: an object was lost"));
    }
    result
}

#[test]
fn an_interrupt_at_any_load_of_the_fast_paths_is_served_by_the_slabs() {
    // Each case arms the interrupt at one more word load of the owner's allocation and
    // free, until the owner's two operations no longer reach it.
    for irq in [Irq::Alloc, Irq::Free, Irq::Both, Irq::Aba] {
        for load in 1..40 {
            interrupt_case(load, irq, false).unwrap();
        }
    }
}

#[test]
fn without_the_trylock_an_interrupt_corrupts_the_sheaf() {
    for irq in [Irq::Alloc, Irq::Free] {
        let caught = (1..40)
            .filter(|&l| interrupt_case(l, irq, true).is_err())
            .count();
        assert!(
            caught > 0,
            "{irq:?}: the mutation went unnoticed at every load"
        );
    }
}

#[test]
fn the_per_cpu_slot_is_eight_lines() {
    // docs/slub.md: nr_cpus * 512 bytes per cache (the partial design's hot line, the
    // sheaves' line, the slow path's words and the counters).
    assert_eq!(CPU_SLAB_BYTES, 512);
}

#[test]
fn the_partial_fast_path_survives_an_interrupt_at_any_load() {
    // The same nested interrupt over the tid + cmpxchg16b fast path.
    for irq in [Irq::Alloc, Irq::Free, Irq::Both, Irq::Aba] {
        for load in 1..40 {
            interrupt_case_in(Design::Partial, load, irq, false).unwrap();
        }
    }
}

#[test]
fn without_the_tid_an_interrupt_corrupts_the_cpu_freelist() {
    // An interrupt that allocates and frees (the head comes back: ABA) is caught by the tid
    // alone; a compare of the freelist head without it must let the corruption through.
    let caught = (1..40)
        .filter(|&l| interrupt_case_in(Design::Partial, l, Irq::Aba, true).is_err())
        .count();
    assert!(caught > 0, "the tid mutation went unnoticed at every load");
}
