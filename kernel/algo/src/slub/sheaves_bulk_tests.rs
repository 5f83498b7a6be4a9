//! Host tests of the sheaves design's bulk paths against Linux 7.3.4's kmem_cache_alloc_bulk
//! and kmem_cache_free_bulk (sheaves_bulk.rs): known answers per path (whole batches from
//! the sheaves, the slabs once they are empty with no sheaf refilled, the barn's full and
//! empty sheaves, no new sheaf and no flush on a bulk free, other nodes' objects to their
//! slabs, the hybrid's per-CPU slab), misuse reported, and everything back at destroy.

use super::fake::{FakeMachine, BASE};
use super::*;
use crate::topology::NodeId;
use std::boxed::Box;
use std::vec::Vec;

fn machine(pages: &[usize], cpus: &[u16]) -> &'static FakeMachine {
    Box::leak(Box::new(FakeMachine::new(pages, cpus, None)))
}

fn tunables(design: Design) -> Tunables {
    Tunables {
        design,
        sheaves_opt_in: true,
        ..Tunables::default()
    }
}

fn cache(
    m: &'static FakeMachine,
    size: usize,
    t: Tunables,
) -> &'static Cache<&'static FakeMachine> {
    Box::leak(Box::new(
        Cache::new(m, "bulk", size, 0, t, 0x1234_5678, None).unwrap(),
    ))
}

fn assert_all_back(m: &FakeMachine, c: &Cache<&'static FakeMachine>, pages: usize) {
    c.destroy().unwrap();
    assert_eq!(m.free_pages_total(), pages);
    assert_eq!(m.descs_in_use(), 0);
    assert_eq!(m.blocks_in_use(), 0);
}

fn bulk(c: &Cache<&'static FakeMachine>, n: usize) -> Vec<usize> {
    let mut out = vec![0; n];
    let got = c.alloc_bulk(&mut out);
    assert_eq!(got, n, "the fake machine has the memory");
    out
}

/// The figures of `keys` in the statistics since `before`.
fn delta(c: &Cache<&'static FakeMachine>, before: &StatsSnapshot, keys: &[Stat]) -> Vec<u64> {
    let d = c.stats().since(before);
    keys.iter().map(|&k| d.get(k)).collect()
}

#[test]
fn bulk_allocation_goes_to_the_slabs_once_the_sheaves_are_empty() {
    // 64-byte objects: 64 per slab, sheaves of 60.
    let m = machine(&[256], &[0]);
    FakeMachine::set_cpu(0);
    let c = cache(m, 64, tunables(Design::Sheaves));
    assert_eq!(c.sheaf_capacity(), 60);
    let keys = [
        Stat::AllocCpuSheaf,
        Stat::AllocSlowpath,
        Stat::SheafRefill,
        Stat::BarnGetFail,
        Stat::AllocSlab,
    ];
    let s0 = c.stats();
    // alloc_from_pcs_bulk finds main empty, no spare, no full sheaf in the barn: all 32 from
    // a new slab (refill_objects), no sheaf refilled.
    let a = bulk(c, 32);
    assert_eq!(delta(c, &s0, &keys), [0, 32, 0, 1, 1]);
    assert_eq!(
        c.nr_partial(NodeId(0)),
        1,
        "the new slab's other 32 wait on the list"
    );
    // free_to_pcs_bulk: all 32 into main.
    let s1 = c.stats();
    c.free_bulk(&a);
    assert_eq!(
        delta(
            c,
            &s1,
            &[Stat::FreeCpuSheaf, Stat::FreeSlowpath, Stat::FreeBulk]
        ),
        [32, 0, 32]
    );
    // 40: the 32 in main as one batch, then 8 from the partial slab.
    let s2 = c.stats();
    let b = bulk(c, 40);
    assert_eq!(delta(c, &s2, &keys), [32, 8, 0, 1, 0]);
    assert_eq!(c.stats().get(Stat::AllocBulk), 72);
    assert_eq!(c.stats().live_objects(), 40);
    c.free_bulk(&b);
    assert_eq!(c.stats().live_objects(), 0);
    assert_all_back(m, c, 256);
}

#[test]
fn bulk_allocation_takes_new_slabs_until_it_has_them_all() {
    // refill_objects loops over new_slab: 150 objects of 64 per slab are three slabs.
    let m = machine(&[256], &[0]);
    FakeMachine::set_cpu(0);
    let c = cache(m, 64, tunables(Design::Sheaves));
    let a = bulk(c, 150);
    let s = c.stats();
    assert_eq!(
        (s.get(Stat::AllocSlab), s.get(Stat::AllocSlowpath)),
        (3, 150)
    );
    c.free_bulk(&a);
    assert_all_back(m, c, 256);
}

#[test]
fn bulk_free_makes_no_sheaf_and_flushes_none() {
    // 130 objects into an empty main of 60: the first 60 fit; with no spare and no empty
    // sheaf in the barn __free_to_pcs_batch finds no room, and the other 70 go to their
    // slabs. (A single free would make a new sheaf and keep all 130.)
    let m = machine(&[256], &[0]);
    FakeMachine::set_cpu(0);
    let c = cache(m, 64, tunables(Design::Sheaves));
    let a = bulk(c, 130);
    let s0 = c.stats();
    c.free_bulk(&a);
    let keys = [
        Stat::FreeCpuSheaf,
        Stat::FreeSlowpath,
        Stat::SheafAlloc,
        Stat::SheafFlush,
        Stat::BarnPut,
    ];
    assert_eq!(delta(c, &s0, &keys), [60, 70, 0, 0, 0]);
    assert_eq!(c.stats().sheaf_cached_objects(), 60);
    assert_all_back(m, c, 256);
}

#[test]
fn bulk_paths_trade_sheaves_with_the_barn() {
    let m = machine(&[1024], &[0, 0]);
    let c = cache(m, 64, tunables(Design::Sheaves));
    FakeMachine::set_cpu(0);
    // Single frees fill the barn with full sheaves (the single-object path makes sheaves).
    let objs: Vec<usize> = (0..300).map(|_| c.alloc().unwrap()).collect();
    for &o in &objs {
        c.free(o);
    }
    let (full, empty) = c.barn_sheaves(NodeId(0)).unwrap();
    assert!(full >= 2, "barn: {full} full, {empty} empty");
    // CPU 1 of the same node: whole full sheaves from the barn for its empty main
    // (barn_replace_empty_sheaf), 60 objects a batch, no slab touched.
    FakeMachine::set_cpu(1);
    let s0 = c.stats();
    let a = bulk(c, 120);
    let keys = [
        Stat::AllocCpuSheaf,
        Stat::AllocSlowpath,
        Stat::BarnGet,
        Stat::SheafRefill,
    ];
    assert_eq!(delta(c, &s0, &keys), [120, 0, 2, 0]);
    assert_eq!(c.barn_sheaves(NodeId(0)).unwrap(), (full - 2, empty + 2));
    // Freed back: main (the second barn sheaf, now empty) takes 60, then with no spare an
    // empty sheaf of the barn becomes main and the full one the spare.
    let s1 = c.stats();
    c.free_bulk(&a);
    assert_eq!(
        delta(c, &s1, &[Stat::FreeCpuSheaf, Stat::FreeSlowpath]),
        [120, 0]
    );
    assert_eq!(c.barn_sheaves(NodeId(0)).unwrap(), (full - 2, empty + 1));
    // 60 more: main is full; the spare swap, then a full main goes to the barn for an
    // empty one (barn_replace_full_sheaf).
    let b = bulk(c, 120);
    let s2 = c.stats();
    c.free_bulk(&b);
    let d = delta(
        c,
        &s2,
        &[Stat::FreeCpuSheaf, Stat::SheafSwap, Stat::BarnPut],
    );
    assert_eq!(d[0], 120, "{d:?}");
    FakeMachine::set_cpu(0);
    assert_all_back(m, c, 1024);
}

#[test]
fn other_nodes_objects_go_to_their_slabs() {
    let m = machine(&[512, 512], &[0, 1]);
    let c = cache(m, 64, tunables(Design::Sheaves));
    FakeMachine::set_cpu(1);
    let remote = bulk(c, 10);
    assert!(remote.iter().all(|&o| m.node_of_addr(o) == 1));
    FakeMachine::set_cpu(0);
    let local = bulk(c, 10);
    // Interleaved: the 10 local ones into main, the 10 of node 1 to their slabs (last).
    let mixed: Vec<usize> = local
        .iter()
        .zip(&remote)
        .flat_map(|(&a, &b)| [a, b])
        .collect();
    let s0 = c.stats();
    c.free_bulk(&mixed);
    assert_eq!(
        delta(c, &s0, &[Stat::FreeCpuSheaf, Stat::FreeSlowpath]),
        [10, 10]
    );
    assert_eq!(c.stats().live_objects(), 0);
    assert_all_back(m, c, 1024);
}

#[test]
fn bulk_free_reports_misuse_and_caches_none_of_it() {
    let m = machine(&[256], &[0]);
    FakeMachine::set_cpu(0);
    let c = cache(m, 64, tunables(Design::Sheaves));
    let other = cache(m, 128, tunables(Design::Sheaves));
    let a = bulk(c, 2);
    let b = bulk(other, 1);
    c.free_bulk(&[a[0], a[0], a[1] + 8, b[0], BASE + 255 * 4096, a[1]]);
    assert_eq!(c.error_count(ErrorKind::DoubleFree), 1);
    assert_eq!(c.error_count(ErrorKind::NotObjectStart), 1);
    assert_eq!(c.error_count(ErrorKind::WrongCache), 1);
    assert_eq!(c.error_count(ErrorKind::NotSlab), 1);
    assert_eq!(c.stats().get(Stat::FreeCpuSheaf), 2);
    assert_eq!(c.stats().live_objects(), 0);
    other.free_bulk(&b);
    c.destroy().unwrap();
    assert_all_back(m, other, 256);
}

#[test]
fn a_hybrid_cache_takes_the_rest_from_its_cpu_slab() {
    // 6.18: alloc_from_pcs_bulk, then __kmem_cache_alloc_bulk through the per-CPU slab.
    let m = machine(&[256], &[0]);
    FakeMachine::set_cpu(0);
    let c = cache(m, 256, tunables(Design::Hybrid));
    assert!(c.sheaf_capacity() != 0 && c.cpu_partial().0 > 0);
    let s0 = c.stats();
    let a = bulk(c, 20);
    let keys = [
        Stat::AllocCpuSheaf,
        Stat::AllocFastpath,
        Stat::AllocSlowpath,
        Stat::SheafRefill,
    ];
    let d = delta(c, &s0, &keys);
    assert_eq!((d[0], d[1] + d[2], d[3]), (0, 20, 0), "{d:?}");
    c.free_bulk(&a);
    let s1 = c.stats();
    let b = bulk(c, 20);
    assert_eq!(
        delta(c, &s1, &keys)[0],
        20,
        "the freed 20 came back from main"
    );
    c.free_bulk(&b);
    assert_eq!(c.stats().live_objects(), 0);
    assert_all_back(m, c, 256);
}
