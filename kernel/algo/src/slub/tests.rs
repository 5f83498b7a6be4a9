//! Host tests of the SLUB core on the fake machine: every allocation and free path reached
//! and counted, memoryless nodes with and without the fix, prefer_local, exact slabinfo,
//! debug reports, conservation, and a multi-threaded stress run with owner tags.

use super::fake::{FakeMachine, BASE};
use super::*;
use crate::rng::XorShift64;
use crate::topology::NodeId;
use std::boxed::Box;
use std::collections::{HashMap, HashSet};
use std::vec::Vec;

fn uma(pages: usize, cpus: usize) -> &'static FakeMachine {
    Box::leak(Box::new(FakeMachine::new(&[pages], &vec![0; cpus], None)))
}

fn four_node() -> &'static FakeMachine {
    let d = vec![
        vec![10, 16, 32, 32],
        vec![16, 10, 32, 32],
        vec![32, 32, 10, 16],
        vec![32, 32, 16, 10],
    ];
    Box::leak(Box::new(FakeMachine::new(
        &[1024; 4],
        &[0, 0, 1, 1, 2, 2, 3, 3],
        Some(d),
    )))
}

fn memoryless() -> &'static FakeMachine {
    Box::leak(Box::new(FakeMachine::new(
        &[0, 4096],
        &[0, 0, 0, 0, 1, 1, 1, 1],
        Some(vec![vec![10, 40], vec![40, 10]]),
    )))
}

fn cache(m: &'static FakeMachine, size: usize, t: Tunables) -> Box<Cache<&'static FakeMachine>> {
    Box::new(Cache::new(m, "test", size, 0, t, 0x1234_5678, None).unwrap())
}

fn on_cpu(cpu: u16) {
    FakeMachine::set_cpu(cpu);
}

#[test]
fn fast_paths_and_exact_counts() {
    let m = uma(256, 4);
    on_cpu(0);
    let c = cache(m, 64, Tunables::default());
    assert_eq!(c.order_objects().objects, 64);
    let a = c.alloc().unwrap();
    let s = c.stats();
    assert_eq!((s.get(Stat::AllocSlowpath), s.get(Stat::AllocSlab)), (1, 1));
    let b = c.alloc().unwrap();
    assert_eq!(b, a + 64);
    assert_eq!(c.stats().get(Stat::AllocFastpath), 1);
    c.free(b);
    c.free(a);
    assert_eq!(c.stats().get(Stat::FreeFastpath), 2);
    // LIFO: the last freed comes back first.
    assert_eq!(c.alloc().unwrap(), a);
    assert_eq!(c.slabinfo(SlabinfoMode::Counters).active_objs, 1);
    c.free(a);
    assert_eq!(c.stats().live_objects(), 0);
    c.destroy().unwrap();
    assert_eq!(m.free_pages_total(), 256);
    assert_eq!(m.descs_in_use(), 0);
}

#[test]
fn every_alloc_path_is_reached() {
    let m = four_node();
    on_cpu(0);
    let t = Tunables {
        min_partial: Some(0),
        ..Tunables::default()
    };
    let c = cache(m, 256, t);
    let per = c.order_objects().objects;
    // 8 CPUs: min_objects 4 * (fls(8) + 1) = 20, so order 1.
    assert_eq!(per, 32);
    // Fill one slab on CPU 0 and one more object (second slab).
    let mut objs: Vec<usize> = (0..per + 1).map(|_| c.alloc().unwrap()).collect();
    // Remote frees (CPU 1) into CPU 0's active slab: free_frozen; CPU 0 then refills.
    on_cpu(1);
    let last = objs.pop().unwrap();
    // Exhaust CPU 0's second slab's private list first.
    on_cpu(0);
    let mut second: Vec<usize> = (0..per - 1).map(|_| c.alloc().unwrap()).collect();
    on_cpu(1);
    c.free(last);
    c.free(second.pop().unwrap());
    assert_eq!(c.stats().get(Stat::FreeFrozen), 2);
    on_cpu(0);
    let r1 = c.alloc().unwrap();
    assert_eq!(c.stats().get(Stat::AllocRefill), 1);
    second.push(r1);
    second.push(c.alloc().unwrap());
    // The first slab is full and unfrozen; a free from CPU 1 freezes it onto CPU 1's
    // partial list (cpu_partial_free); CPU 1 then allocates from it (cpu_partial_alloc).
    on_cpu(1);
    c.free(objs.pop().unwrap());
    assert_eq!(c.stats().get(Stat::CpuPartialFree), 1);
    let x = c.alloc().unwrap();
    assert_eq!(c.stats().get(Stat::CpuPartialAlloc), 1);
    objs.push(x);
    // Flush: CPU slabs go to the node lists; CPU 2 (node 1) takes node 0's partials only
    // remotely; CPU 0 takes them from its local list.
    c.free(objs.pop().unwrap());
    c.flush_all();
    assert!(c.nr_partial(NodeId(0)) >= 1, "{}", c.nr_partial(NodeId(0)));
    on_cpu(0);
    objs.push(c.alloc().unwrap());
    assert!(c.stats().get(Stat::AllocFromPartial) >= 1);
    // A remote partial: node 1 has no partials; node 0 has more than min_partial (0).
    c.free(objs.pop().unwrap());
    c.flush_all();
    on_cpu(2);
    objs.push(c.alloc().unwrap());
    assert_eq!(c.stats().get(Stat::AllocRemotePartial), 1);
    // alloc_node for another node: node mismatch, a new slab there.
    let y = c.alloc_node(NodeId(3)).unwrap();
    assert_eq!(m.node_of_addr(y), 3);
    assert_eq!(c.stats().get(Stat::AllocNodeMismatch), 1);
    objs.push(y);
    // Order fallback.
    m.max_order_ok.store(0, std::sync::atomic::Ordering::SeqCst);
    let big = cache(m, 1024, Tunables::default());
    assert!(big.order_objects().order > 0);
    let z = big.alloc().unwrap();
    assert_eq!(big.stats().get(Stat::OrderFallback), 1);
    big.free(z);
    m.max_order_ok
        .store(usize::MAX, std::sync::atomic::Ordering::SeqCst);
    big.destroy().unwrap();
    objs.extend(second);
    for o in objs {
        c.free(o);
    }
    c.validate().unwrap();
    assert_eq!(c.stats().live_objects(), 0);
    c.destroy().unwrap();
    assert_eq!(m.free_pages_total(), 4096);
    assert_eq!(m.descs_in_use(), 0);
}

#[test]
fn free_paths_without_cpu_partial_and_discard() {
    let m = uma(512, 2);
    on_cpu(0);
    let t = Tunables {
        cpu_partial: Some(0),
        min_partial: Some(1),
        ..Tunables::default()
    };
    let c = cache(m, 512, t);
    let per = c.order_objects().objects;
    let objs: Vec<usize> = (0..per * 3).map(|_| c.alloc().unwrap()).collect();
    // Slabs 0 and 1 are full and unfrozen; CPU 1 frees into them.
    on_cpu(1);
    c.free(objs[0]);
    assert_eq!(c.stats().get(Stat::FreeAddPartial), 1);
    c.free(objs[per]);
    assert_eq!(c.nr_partial(NodeId(0)), 2);
    // Emptying slab 0: the node has 2 partials >= min_partial 1, so it is discarded.
    for &o in &objs[1..per] {
        c.free(o);
    }
    assert_eq!(c.stats().get(Stat::FreeRemovePartial), 1);
    assert_eq!(c.stats().get(Stat::FreeSlab), 1);
    // Emptying slab 1: now only 1 partial (itself) >= 1: also discarded.
    for &o in &objs[per + 1..2 * per] {
        c.free(o);
    }
    assert_eq!(c.stats().get(Stat::FreeSlab), 2);
    on_cpu(0);
    for &o in &objs[2 * per..] {
        c.free(o);
    }
    c.validate().unwrap();
    c.destroy().unwrap();
    assert_eq!(m.free_pages_total(), 512);
}

#[test]
fn cpu_partial_drain_and_deactivate_counters() {
    let m = uma(1024, 2);
    on_cpu(0);
    let c = cache(
        m,
        1024,
        Tunables {
            cpu_partial: Some(8),
            ..Tunables::default()
        },
    );
    let (objs_bound, slabs_bound) = c.cpu_partial();
    assert_eq!(objs_bound, 8);
    let per = c.order_objects().objects;
    assert_eq!(slabs_bound, 16usize.div_ceil(per));
    let nslabs = slabs_bound + 3;
    let objs: Vec<usize> = (0..per * nslabs).map(|_| c.alloc().unwrap()).collect();
    on_cpu(1);
    for s in 0..nslabs - 1 {
        c.free(objs[s * per]);
    }
    assert!(c.stats().get(Stat::CpuPartialDrain) >= 1);
    on_cpu(0);
    c.flush_all();
    let s = c.stats();
    assert!(
        s.get(Stat::DeactivateFull) + s.get(Stat::DeactivateToHead) + s.get(Stat::DeactivateToTail)
            >= 1
    );
    for (i, &o) in objs.iter().enumerate() {
        if i % per != 0 || i / per == nslabs - 1 {
            c.free(o);
        }
    }
    c.validate().unwrap();
    c.destroy().unwrap();
    assert_eq!(m.free_pages_total(), 1024);
}

/// Seed 003: CPUs on memoryless node 0 asking for node 0. Without the fix every request
/// misses node 0's (always empty) lists, mismatches the CPU slab and takes a new slab;
/// with the fix node 0 means node 1 and slabs are reused.
#[test]
fn memoryless_node_with_and_without_fix() {
    let run = |fix: bool| -> (usize, u64) {
        let m = memoryless();
        on_cpu(0);
        let t = Tunables {
            memoryless_fix: fix,
            ..Tunables::default()
        };
        let c = cache(m, 64, t);
        let mut objs = Vec::new();
        for _ in 0..2000 {
            objs.push(c.alloc_node(NodeId(0)).unwrap());
            // Interleave local allocations like a kernel does.
            objs.push(c.alloc().unwrap());
        }
        let slabs = c.nr_slabs(NodeId(1));
        let mismatches = c.stats().get(Stat::AllocNodeMismatch);
        for o in objs {
            c.free(o);
        }
        c.destroy().unwrap();
        assert_eq!(m.free_pages_total(), 4096);
        (slabs, mismatches)
    };
    let (fixed_slabs, fixed_mm) = run(true);
    let (broken_slabs, broken_mm) = run(false);
    assert_eq!(fixed_mm, 0);
    assert_eq!(fixed_slabs, 4000usize.div_ceil(64));
    assert!(broken_mm >= 1999, "mismatches {broken_mm}");
    assert!(
        broken_slabs > 3 * fixed_slabs,
        "broken {broken_slabs} fixed {fixed_slabs}"
    );
}

fn two_node() -> &'static FakeMachine {
    Box::leak(Box::new(FakeMachine::new(
        &[1024, 1024],
        &[0, 0, 1, 1],
        Some(vec![vec![10, 20], vec![20, 10]]),
    )))
}

/// `alloc_node(n)` on a node that is out of pages. The objects come from a
/// fallback node; before the fix every call rejected the fallback CPU slab (node mismatch)
/// and built a new one (100 calls: 100 slabs). Now the fallback slab keeps serving requests
/// for the exhausted node until it is full: one slab per slab's worth of objects.
#[test]
fn alloc_node_on_exhausted_node_reuses_the_fallback_slab() {
    let m = two_node();
    on_cpu(0);
    let c = cache(m, 64, Tunables::default());
    let per = c.order_objects().objects;
    assert!(per >= 50, "{per} objects per slab");
    let taken = m.exhaust_node(1);
    let mut objs = Vec::new();
    for i in 0..100 {
        let o = c.alloc_node(NodeId(1)).unwrap();
        assert_eq!(m.node_of_addr(o), 0, "call {i}: the fallback node");
        objs.push(o);
        // Local allocations in between, as a kernel makes them.
        if i % 10 == 0 {
            objs.push(c.alloc().unwrap());
        }
    }
    let s = c.stats();
    let slabs = s.get(Stat::AllocSlab);
    assert!(
        slabs <= 110usize.div_ceil(per) as u64,
        "100 alloc_node calls on an exhausted node built {slabs} slabs ({} mismatches)",
        s.get(Stat::AllocNodeMismatch)
    );
    assert_eq!(c.nr_slabs(NodeId(1)), 0);
    assert!(s.get(Stat::AllocNodeFallback) >= 1);
    // The strict form (__GFP_THISNODE) fails cleanly: no object, no slab, no report, and the
    // CPU slab is left alone.
    let mismatches = s.get(Stat::AllocNodeMismatch);
    for _ in 0..10 {
        assert_eq!(c.alloc_node_strict(NodeId(1)), None);
    }
    let s = c.stats();
    assert_eq!(s.get(Stat::AllocSlab), slabs);
    assert_eq!(s.get(Stat::AllocNodeMismatch), mismatches + 1);
    assert!(m.take_reports().is_empty());
    // With pages back, the strict form gets node 1's memory, and so does alloc_node.
    m.release(&taken);
    let o = c.alloc_node_strict(NodeId(1)).unwrap();
    assert_eq!(m.node_of_addr(o), 1);
    objs.push(o);
    let o = c.alloc_node(NodeId(1)).unwrap();
    assert_eq!(m.node_of_addr(o), 1);
    objs.push(o);
    // A strict request is not served by a stand-in slab.
    let taken = m.exhaust_node(1);
    on_cpu(1);
    objs.push(c.alloc_node(NodeId(1)).unwrap());
    assert_eq!(c.alloc_node_strict(NodeId(1)), None);
    m.release(&taken);
    on_cpu(0);
    for o in objs {
        c.free(o);
    }
    c.validate().unwrap();
    c.destroy().unwrap();
    assert_eq!(m.free_pages_total(), 2048);
    assert_eq!(m.descs_in_use(), 0);
}

#[test]
fn prefer_local_takes_new_local_slab() {
    let run = |prefer: bool| -> (u64, u64, usize) {
        let m = four_node();
        let t = Tunables {
            prefer_local: prefer,
            min_partial: Some(0),
            ..Tunables::default()
        };
        let c = cache(m, 128, t);
        on_cpu(0);
        let objs: Vec<usize> = (0..32 * 8).map(|_| c.alloc().unwrap()).collect();
        // Leave node 0 with many partial slabs.
        for (i, &o) in objs.iter().enumerate() {
            if i % 2 == 0 {
                c.free(o);
            }
        }
        c.flush_all();
        on_cpu(4); // node 2
        let o = c.alloc().unwrap();
        let s = c.stats();
        let node = m.node_of_addr(o);
        c.free(o);
        for (i, &o) in objs.iter().enumerate() {
            if i % 2 == 1 {
                c.free(o);
            }
        }
        c.destroy().unwrap();
        (
            s.get(Stat::AllocRemotePartial),
            s.get(Stat::AllocPreferLocal),
            node,
        )
    };
    assert_eq!(run(false), (1, 0, 0));
    assert_eq!(run(true), (0, 1, 2));
}

/// numa_locality in miniature on the fake four-node machine: node 0's CPU fills slabs and
/// frees three objects in four (node 0 keeps many partial slabs, more than min_partial);
/// then a node-2 CPU fills 16 slabs' worth. Returns the case's knob counters.
fn numa_locality_case(case: &str, prefer_local: bool) -> crate::knob::CaseCounters {
    let m = four_node();
    let t = Tunables {
        prefer_local,
        ..Tunables::default()
    };
    let c = cache(m, 128, t);
    on_cpu(0);
    let objs: Vec<usize> = (0..32 * 24).map(|_| c.alloc().unwrap()).collect();
    for (i, &o) in objs.iter().enumerate() {
        if i % 4 != 0 {
            c.free(o);
        }
    }
    c.flush_all();
    on_cpu(4); // node 2
    let grown: Vec<usize> = (0..32 * 16).map(|_| c.alloc().unwrap()).collect();
    let s = c.stats();
    for o in grown {
        c.free(o);
    }
    for (i, &o) in objs.iter().enumerate() {
        if i % 4 == 0 {
            c.free(o);
        }
    }
    c.destroy().unwrap();
    let mut k = crate::knob::CaseCounters::new(case);
    for stat in [Stat::AllocPreferLocal, Stat::AllocRemotePartial] {
        k.add(stat.name(), s.get(stat));
    }
    k
}

#[test]
fn knob_check_passes_prefer_local_and_fails_a_deliberately_identical_pair() {
    let prefer = numa_locality_case("prefer_local", true);
    let default = numa_locality_case("default", false);
    assert!(prefer.get("alloc_prefer_local") > 0, "{prefer:?}");
    assert_eq!(prefer.get("alloc_remote_partial"), 0, "{prefer:?}");
    assert!(default.get("alloc_remote_partial") > 0, "{default:?}");
    assert_eq!(default.get("alloc_prefer_local"), 0, "{default:?}");
    crate::knob::check("numa_locality", &[prefer, default.clone()]).unwrap();
    // The same configuration under two names: the knob did not turn, the check says so.
    let again = numa_locality_case("default_again", false);
    let err = crate::knob::check("numa_locality", &[default, again]).unwrap_err();
    assert!(err.contains("default and default_again"), "{err}");
}

#[test]
fn slabinfo_counters_are_exact_scan_is_not() {
    let m = uma(1024, 4);
    let c = cache(m, 192, Tunables::default());
    let mut live = Vec::new();
    let mut expected = 0usize;
    for cpu in 0..4u16 {
        on_cpu(cpu);
        for i in 0..300 {
            live.push(c.alloc().unwrap());
            expected += 1;
            if i % 3 == 0 {
                c.free(live.pop().unwrap());
                expected -= 1;
            }
        }
    }
    let counters = c.slabinfo(SlabinfoMode::Counters);
    let scan = c.slabinfo(SlabinfoMode::Scan);
    assert_eq!(counters.active_objs, expected);
    assert_eq!(counters.num_objs, scan.num_objs);
    // The scan counts free objects in CPU slabs as active.
    assert!(scan.active_objs > expected);
    assert_eq!(scan.lock_acquisitions, 1);
    let line = slabinfo_line("test", &counters);
    assert!(line.starts_with("test              "), "{line}");
    assert!(
        line.contains(": tunables    0    0    0 : slabdata"),
        "{line}"
    );
    assert_eq!(counters.partial_slabs_walked, 0);
    // After flushing every CPU the scan agrees, having walked every partial slab once.
    c.flush_all();
    let flushed = c.slabinfo(SlabinfoMode::Scan);
    assert_eq!(flushed.active_objs, expected);
    let partial = c.nr_partial(crate::topology::NodeId(0)) as u64;
    assert!(partial > 0);
    assert_eq!(flushed.partial_slabs_walked, partial);
    for o in live {
        c.free(o);
    }
    c.destroy().unwrap();
}

#[test]
fn destroy_with_live_objects_fails_and_shrink_returns_empties() {
    let m = uma(256, 2);
    on_cpu(0);
    let c = cache(m, 32, Tunables::default());
    let objs: Vec<usize> = (0..1000).map(|_| c.alloc().unwrap()).collect();
    assert_eq!(c.destroy(), Err(1000));
    for &o in &objs[..999] {
        c.free(o);
    }
    c.shrink();
    assert_eq!(c.nr_slabs(NodeId(0)), 1);
    c.free(objs[999]);
    c.destroy().unwrap();
    assert!(c.is_dead());
    assert_eq!(m.free_pages_total(), 256);
}

#[test]
fn bad_frees_are_reported_counted_and_dropped() {
    let m = uma(256, 2);
    on_cpu(0);
    let c = cache(m, 64, Tunables::default());
    let other = cache(m, 64, Tunables::default());
    let a = c.alloc().unwrap();
    let b = c.alloc().unwrap();
    let o = other.alloc().unwrap();
    c.free(a);
    c.free(a); // immediate double free (fast path head check)
    c.free(o); // wrong cache
    c.free(b + 8); // inside the CPU slab, not an object start
    c.free(BASE - 4096); // not a slab page
    let kinds: Vec<ErrorKind> = m.take_reports().into_iter().map(|r| r.2).collect();
    assert_eq!(
        kinds,
        vec![
            ErrorKind::DoubleFree,
            ErrorKind::WrongCache,
            ErrorKind::NotObjectStart,
            ErrorKind::NotSlab
        ]
    );
    assert_eq!(c.error_count(ErrorKind::DoubleFree), 1);
    other.free(o);
    // From another CPU the misaligned pointer takes the slow path and is caught.
    on_cpu(1);
    c.free(b + 8);
    assert_eq!(m.take_reports()[0].2, ErrorKind::NotObjectStart);
    on_cpu(0);
    c.free(b);
    // The bad frees did not disturb the cache.
    assert_eq!(c.stats().live_objects(), 0);
    let x = c.alloc().unwrap();
    let y = c.alloc().unwrap();
    assert_ne!(x, y);
    c.free(x);
    c.free(y);
    c.destroy().unwrap();
    other.destroy().unwrap();
}

#[test]
fn debug_checks_catch_each_misuse() {
    let m = uma(256, 2);
    on_cpu(0);
    let t = Tunables {
        debug: DebugFlags::ALL,
        ..Tunables::default()
    };
    let c = cache(m, 40, t);
    assert_eq!(c.layout().red_offset, Some(40));
    let a = c.alloc().unwrap();
    let b = c.alloc().unwrap();
    c.free(a);
    c.free(b);
    c.free(a); // double free, not at the head any more
    assert_eq!(m.take_reports()[0].2, ErrorKind::DoubleFree);
    let a = c.alloc().unwrap();
    let p = c.platform();
    // Overflow into the red zone.
    p.store(a + 40, 0x4141_4141);
    c.free(a);
    assert_eq!(m.take_reports()[0].2, ErrorKind::RedZone);
    // Use after free: write into a freed object, found at its next allocation.
    let d = c.alloc().unwrap();
    c.free(d);
    p.store(d + 8, 0xdead);
    // Frees of a debug cache go to the slab's own freelist: allocate until d comes back.
    let mut others = Vec::new();
    let again = loop {
        let x = c.alloc().unwrap();
        if x == d {
            break x;
        }
        others.push(x);
        assert!(others.len() < 1000, "freed object never came back");
    };
    for x in others {
        c.free(x);
    }
    let r = m.take_reports();
    assert_eq!((r[0].1, r[0].2), (d + 8, ErrorKind::Poison));
    c.free(again + 8);
    assert_eq!(m.take_reports()[0].2, ErrorKind::NotObjectStart);
    c.free(again);
    assert_eq!(c.error_count(ErrorKind::Poison), 1);
    assert_eq!(c.error_count(ErrorKind::RedZone), 1);
    c.destroy().unwrap();
    assert_eq!(m.free_pages_total(), 256);
}

/// Debug check F (sanity) catches a corrupt free pointer that stays inside the slab but points
/// between two objects (it used to check the range only, and the next allocation
/// handed out a misaligned "object" overlapping two real ones).
#[test]
fn sanity_check_catches_a_misaligned_free_pointer() {
    let m = uma(256, 1);
    on_cpu(0);
    let t = Tunables {
        debug: DebugFlags {
            sanity: true,
            ..DebugFlags::default()
        },
        ..Tunables::default()
    };
    let c = cache(m, 64, t);
    let a = c.alloc().unwrap();
    // The next free object is a + stride; its free pointer is corrupted (a use after free in
    // a real kernel) to point 8 bytes into the object after it: in range, not a boundary.
    let stride = c.layout().size;
    let b = a + stride;
    let fp = b + c.layout().fp_offset;
    c.platform()
        .store(fp, super::freelist::encode(b + stride + 8, c.random, fp));
    assert_eq!(c.alloc(), Some(b));
    let r = m.take_reports();
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(
        (r[0].1, r[0].2),
        (b + stride + 8, ErrorKind::FreelistCorrupt)
    );
    // The corrupt list was dropped: the next allocation is a real object (its free is
    // accepted as one, with no report), not the misaligned address.
    let next = c.alloc().unwrap();
    assert_ne!(next, b + stride + 8);
    for x in [a, b, next] {
        c.free(x);
    }
    assert!(m.take_reports().is_empty());
}

/// A long random single-threaded run across CPUs and nodes, every object tagged with its
/// owner: a duplicate hand-out or a lost object fails.
#[test]
fn random_workload_across_cpus_keeps_invariants() {
    let m = four_node();
    let caches: Vec<Box<Cache<&FakeMachine>>> = [8usize, 96, 192, 700, 4096]
        .iter()
        .map(|&s| {
            cache(
                m,
                s,
                Tunables {
                    min_partial: Some(2),
                    ..Tunables::default()
                },
            )
        })
        .collect();
    let mut live: Vec<(usize, usize, u64)> = Vec::new();
    let mut seen: HashSet<usize> = HashSet::new();
    let mut tags: HashMap<usize, u64> = HashMap::new();
    let mut rng = XorShift64::new(0x9e37_79b9_7f4a_7c15u64);
    let mut rnd = || rng.next_u64();
    for step in 0..40_000u64 {
        let cpu = (rnd() % 8) as u16;
        on_cpu(cpu);
        if live.len() < 2000 && (rnd() % 3 != 0 || live.is_empty()) {
            let ci = (rnd() % caches.len() as u64) as usize;
            let obj = if rnd() % 4 == 0 {
                caches[ci].alloc_node(NodeId((rnd() % 4) as u16)).unwrap()
            } else {
                caches[ci].alloc().unwrap()
            };
            assert!(seen.insert(obj), "object {obj:#x} handed out twice");
            m.store_tag(obj, step);
            tags.insert(obj, step);
            live.push((ci, obj, step));
        } else {
            let i = (rnd() % live.len() as u64) as usize;
            let (ci, obj, tag) = live.swap_remove(i);
            assert_eq!(m.load_tag(obj), tag, "object {obj:#x} overwritten");
            seen.remove(&obj);
            caches[ci].free(obj);
        }
        if step % 5000 == 0 {
            for c in &caches {
                c.validate().unwrap();
            }
        }
    }
    for (ci, c) in caches.iter().enumerate() {
        let n = live.iter().filter(|l| l.0 == ci).count();
        assert_eq!(c.slabinfo(SlabinfoMode::Counters).active_objs, n);
    }
    for (ci, obj, _) in live.drain(..) {
        caches[ci].free(obj);
    }
    for c in &caches {
        c.destroy().unwrap();
    }
    assert_eq!(m.free_pages_total(), 4096);
    assert_eq!(m.descs_in_use(), 0);
    assert!(m.take_reports().is_empty());
}

/// Real concurrency: one thread per fake CPU, producers hand objects to consumers on other
/// CPUs (remote frees), owner tags catch a double hand-out.
#[test]
fn threads_as_cpus_with_cross_cpu_frees() {
    let m = four_node();
    let c: &'static Cache<&'static FakeMachine> = Box::leak(cache(
        m,
        128,
        Tunables {
            min_partial: Some(1),
            cpu_partial: Some(30),
            ..Tunables::default()
        },
    ));
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..8)
        .map(|_| std::sync::mpsc::channel::<(usize, u64)>())
        .unzip();
    let mut handles = Vec::new();
    for (cpu, rx) in rxs.into_iter().enumerate() {
        let txs = txs.clone();
        handles.push(std::thread::spawn(move || {
            FakeMachine::set_cpu(cpu as u16);
            let mut mine = Vec::new();
            for i in 0..20_000u64 {
                let tag = (cpu as u64) << 32 | i;
                let obj = c.alloc().unwrap();
                assert_eq!(m.cas_tag(obj, tag), 0, "object handed out twice");
                if i % 3 == 0 {
                    txs[(cpu + 1 + (i as usize % 7)) % 8]
                        .send((obj, tag))
                        .unwrap();
                } else {
                    mine.push((obj, tag));
                }
                if mine.len() > 50 {
                    let (o, t) = mine.remove((i as usize * 7) % mine.len());
                    assert_eq!(m.cas_tag(o, 0), t);
                    c.free(o);
                }
                while let Ok((o, t)) = rx.try_recv() {
                    assert_eq!(m.cas_tag(o, 0), t);
                    c.free(o);
                }
            }
            for (o, t) in mine {
                assert_eq!(m.cas_tag(o, 0), t);
                c.free(o);
            }
            rx
        }));
    }
    drop(txs);
    let rxs: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    FakeMachine::set_cpu(0);
    for rx in rxs {
        while let Ok((o, t)) = rx.try_recv() {
            assert_eq!(m.cas_tag(o, 0), t);
            c.free(o);
        }
    }
    assert_eq!(c.stats().live_objects(), 0);
    c.validate().unwrap();
    assert!(c.stats().get(Stat::FreeFrozen) + c.stats().get(Stat::CpuPartialFree) > 0);
    c.destroy().unwrap();
    assert_eq!(m.free_pages_total(), 4096);
    assert_eq!(m.descs_in_use(), 0);
}

#[test]
fn object_boundary_test_without_division() {
    let m = uma(64, 1);
    for size in [8usize, 24, 40, 96, 192, 700, 1000, 4096, 8192] {
        let c = cache(m, size, Tunables::default());
        let stride = c.size();
        for off in 0..(stride * 40) {
            let i = c.object_index(off);
            assert_eq!(
                i <= usize::MAX / stride,
                off % stride == 0,
                "size {size} off {off}"
            );
            if off % stride == 0 {
                assert_eq!(i, off / stride);
            }
        }
        // Offsets below the slab base wrap around to huge numbers: never an index.
        assert!(c.object_index(0usize.wrapping_sub(stride)) > 1 << 20);
    }
}
