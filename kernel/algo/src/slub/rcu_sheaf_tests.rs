//! Host tests of the rcu_free sheaf (rcu_sheaf.rs) on the fake machine, with a fake grace
//! period (the test runs `rcu_free_sheaf` when it decides the grace period ended): known
//! counts for a full sheaf, nothing reused before the grace period, the barn's bound, the
//! bypasses and failures, and every object and sheaf back after destroy.

use super::fake::FakeMachine;
use super::rcu_sheaf::{RcuSheafFree, MUTATION_BARN_UNBOUNDED};
use super::*;
use crate::topology::NodeId;
use std::boxed::Box;
use std::collections::HashSet;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Mutex;
use std::vec::Vec;

/// The mutation flag is global: tests that read barn bounds run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn setup(design: Design, pages: &[usize], cpus: &[u16]) -> &'static Cache<&'static FakeMachine> {
    let m: &'static FakeMachine = Box::leak(Box::new(FakeMachine::new(pages, cpus, None)));
    let t = Tunables {
        design,
        ..Tunables::default()
    };
    Box::leak(Box::new(
        Cache::new(m, "rcu", 64, 0, t, 0x1234_5678, None).unwrap(),
    ))
}

/// kfree_rcu of every object of `objs` on the running CPU; the sheaves that filled.
fn kfree_rcu_all(c: &Cache<&'static FakeMachine>, objs: &[usize]) -> Vec<usize> {
    let mut full = Vec::new();
    for &o in objs {
        match c.kfree_rcu_sheaf(o) {
            RcuSheafFree::Queued => {}
            RcuSheafFree::Full(s) => full.push(s),
            other => panic!("object {o:#x}: {other:?}"),
        }
    }
    full
}

#[test]
fn a_full_rcu_free_sheaf_waits_for_its_grace_period_then_serves_from_the_barn() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    FakeMachine::set_cpu(0);
    let c = setup(Design::Sheaves, &[512], &[0]);
    assert_eq!(c.sheaf_capacity(), 60);
    let objs: Vec<usize> = (0..60).map(|_| c.alloc().unwrap()).collect();
    let full = kfree_rcu_all(c, &objs[..59]);
    assert!(full.is_empty(), "59 of 60: the sheaf is not full yet");
    assert_eq!(c.rcu_free_pending(), 59);
    let full = kfree_rcu_all(c, &objs[59..]);
    assert_eq!(full.len(), 1, "the 60th object fills the sheaf");
    assert_eq!(
        super::rcu_sheaf::rcu_sheaf_owner(&c.plat, full[0]),
        c.id(),
        "the callback finds its cache"
    );
    assert_eq!(c.rcu_free_pending(), 0);
    let s = c.stats();
    assert_eq!(s.get(Stat::FreeRcuSheaf), 60);
    assert_eq!(s.get(Stat::FreeRcuSheafFail), 0);
    assert_eq!(
        s.live_objects(),
        0,
        "given to kfree_rcu counts as given back"
    );
    // Before the grace period none of them is handed out again.
    let waiting: HashSet<usize> = objs.iter().copied().collect();
    let during: Vec<usize> = (0..120).map(|_| c.alloc().unwrap()).collect();
    assert!(during.iter().all(|o| !waiting.contains(o)));
    for o in during {
        c.free(o);
    }
    let before = c.barn_sheaves(NodeId(0)).unwrap();
    // The grace period ends: the sheaf goes to the barn whole.
    c.rcu_free_sheaf(full[0]);
    let after = c.barn_sheaves(NodeId(0)).unwrap();
    assert_eq!(after.0, before.0 + 1, "one more full sheaf in the barn");
    assert_eq!(c.stats().get(Stat::BarnPut) - s.get(Stat::BarnPut), 1);
    assert_eq!(c.sheaf_capacity(), 60, "the capacity word came back");
    // The CPU drains its own sheaves (120 allocations' worth freed above), then takes the
    // rcu sheaf's objects from the barn: all 60 come back, no slab touched for them.
    let mut again = HashSet::new();
    for _ in 0..400 {
        let o = c.alloc().unwrap();
        again.insert(o);
    }
    assert!(waiting.iter().all(|o| again.contains(o)));
    for o in again {
        c.free(o);
    }
    c.destroy().unwrap();
}

#[test]
fn the_barn_keeps_at_most_ten_full_sheaves_the_eleventh_is_flushed() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for mutated in [false, true] {
        MUTATION_BARN_UNBOUNDED.store(mutated, SeqCst);
        let r = std::panic::catch_unwind(barn_bound_case);
        MUTATION_BARN_UNBOUNDED.store(false, SeqCst);
        assert_eq!(r.is_ok(), !mutated, "mutated={mutated}");
    }
}

fn barn_bound_case() {
    FakeMachine::set_cpu(0);
    let c = setup(Design::Sheaves, &[2048], &[0]);
    let objs: Vec<usize> = (0..660).map(|_| c.alloc().unwrap()).collect();
    let full = kfree_rcu_all(c, &objs);
    assert_eq!(full.len(), 11);
    let base = c.stats();
    let full_before = c.barn_sheaves(NodeId(0)).unwrap().0;
    for s in &full {
        c.rcu_free_sheaf(*s);
    }
    let d = c.stats().since(&base);
    let room = 10 - full_before;
    assert_eq!(d.get(Stat::BarnPut), room as u64);
    assert_eq!(d.get(Stat::BarnPutFail), 11 - room as u64);
    assert_eq!(d.get(Stat::SheafFlush), 60 * (11 - room as u64));
    assert_eq!(c.barn_sheaves(NodeId(0)).unwrap().0, 10);
    c.destroy().unwrap();
}

#[test]
fn remote_objects_bypass_uncounted_and_the_partial_design_fails_counted() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    FakeMachine::set_cpu(0);
    let c = setup(Design::Sheaves, &[256, 256], &[0, 1]);
    let remote = c.alloc_node(NodeId(1)).unwrap();
    assert_eq!(c.kfree_rcu_sheaf(remote), RcuSheafFree::Bypass);
    assert_eq!(
        c.kfree_rcu_sheaf(0x10),
        RcuSheafFree::Bypass,
        "not a slab object"
    );
    let s = c.stats();
    assert_eq!(s.get(Stat::FreeRcuSheaf) + s.get(Stat::FreeRcuSheafFail), 0);
    c.free(remote);
    c.destroy().unwrap();

    let c = setup(Design::Partial, &[256], &[0]);
    let o = c.alloc().unwrap();
    assert_eq!(c.kfree_rcu_sheaf(o), RcuSheafFree::Fail);
    assert_eq!(c.stats().get(Stat::FreeRcuSheafFail), 1);
    assert_eq!(c.stats().get(Stat::FreeRcuSheaf), 0);
    c.free(o);
    c.destroy().unwrap();
}

#[test]
fn a_partly_filled_sheaf_is_taken_at_barrier_time_and_everything_comes_back() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for design in [Design::Sheaves, Design::Hybrid] {
        FakeMachine::set_cpu(0);
        let m: &'static FakeMachine = Box::leak(Box::new(FakeMachine::new(&[512], &[0], None)));
        let t = Tunables {
            design,
            sheaves_opt_in: true,
            ..Tunables::default()
        };
        let c = Cache::new(m, "rcu", 64, 0, t, 7, None).unwrap();
        let cap = c.sheaf_capacity();
        assert!(cap > 0, "{design:?}");
        let objs: Vec<usize> = (0..cap + 5).map(|_| c.alloc().unwrap()).collect();
        let mut queued: Vec<usize> = Vec::new();
        for &o in &objs {
            if let RcuSheafFree::Full(s) = c.kfree_rcu_sheaf(o) {
                queued.push(s);
            }
        }
        assert_eq!(queued.len(), 1, "{design:?}");
        assert_eq!(c.rcu_free_pending(), 5);
        queued.extend(c.take_rcu_free());
        assert_eq!(c.take_rcu_free(), None, "taken once");
        for s in queued {
            c.rcu_free_sheaf(s);
        }
        assert_eq!(c.stats().live_objects(), 0, "{design:?}");
        c.destroy().unwrap();
        assert_eq!(m.descs_in_use(), 0, "{design:?}");
        assert_eq!(m.blocks_in_use(), 0, "{design:?}: every sheaf block freed");
        assert_eq!(m.free_pages_total(), 512, "{design:?}");
    }
}
