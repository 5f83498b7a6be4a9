//! Host tests of the three kfree_rcu ways under a fake grace period (the test decides when
//! it ends): the batched kfree_rcu's known counts (blocks, batches, kfree_bulk calls, the
//! monitor's delays, the two-argument list fallback, the kept blocks), and the three ways on
//! one SLUB cache of the fake machine: callbacks queued per object freed, nothing reused
//! before the grace period, everything back after it. Mutations must fail them.

use super::batched::{
    Env, KfreeRcuCpu, Queued, BLOCK_BYTES, KVFREE_BULK_MAX_ENTR, RCU_MIN_CACHED_OBJS,
};
use crate::slub::fake::FakeMachine;
use crate::slub::rcu_sheaf::RcuSheafFree;
use crate::slub::{Cache, Design, Platform, Stat, Tunables};
use core::sync::atomic::AtomicBool;
use std::boxed::Box;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Mutex;
use std::vec::Vec;

/// Test-only mutation: the monitor ignores the rcu_head list (channel 3 never drains).
pub(crate) static MUTATION_IGNORE_LIST: AtomicBool = AtomicBool::new(false);
static SERIAL: Mutex<()> = Mutex::new(());

const HZ: u64 = 1000;
const VMALLOC_BASE: usize = 0x4000_0000;

/// Words in a map; blocks are numbered pages; frees are recorded.
#[derive(Default)]
struct MapEnv {
    mem: HashMap<usize, usize>,
    next_block: usize,
    blocks_live: HashSet<usize>,
    no_memory: bool,
    freed: Vec<usize>,
    bulk_calls: Vec<usize>,
}

impl Env for MapEnv {
    fn alloc_block(&mut self) -> Option<usize> {
        if self.no_memory {
            return None;
        }
        self.next_block += 1;
        let b = 0x1000_0000 + self.next_block * BLOCK_BYTES;
        self.blocks_live.insert(b);
        Some(b)
    }
    fn free_block(&mut self, block: usize) {
        assert!(
            self.blocks_live.remove(&block),
            "block {block:#x} freed twice"
        );
    }
    fn load(&self, addr: usize) -> usize {
        *self.mem.get(&addr).unwrap_or(&0)
    }
    fn store(&mut self, addr: usize, value: usize) {
        self.mem.insert(addr, value);
    }
    fn is_vmalloc(&self, ptr: usize) -> bool {
        ptr >= VMALLOC_BASE
    }
    fn kfree_bulk(&mut self, block: usize, nr: usize) {
        self.bulk_calls.push(nr);
        for i in 0..nr {
            let p = self.load(block + 16 + i * 8);
            self.freed.push(p);
        }
    }
    fn kvfree(&mut self, ptr: usize) {
        self.freed.push(ptr);
    }
}

/// The monitor at `now` and, for every slot it queued, the grace period and the work.
fn monitor_and_gp(k: &mut KfreeRcuCpu, env: &mut MapEnv, now: u64) -> usize {
    let q = k.monitor(now);
    let mut n = 0;
    for (i, queued) in q.iter().enumerate() {
        if *queued {
            let b = k.detach(i);
            k.free_detached(env, b);
            n += 1;
        }
    }
    n
}

#[test]
fn a_thousand_headless_frees_make_two_blocks_one_batch_and_two_bulk_frees() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut env = MapEnv::default();
    let mut k = KfreeRcuCpu::new(5 * HZ);
    assert_eq!(KVFREE_BULK_MAX_ENTR, 510);
    for i in 0..1000 {
        assert_eq!(k.queue(&mut env, 0x100 + i * 64, None, 0), Queued::Block);
        let want = if i + 1 >= 510 { 1 } else { 5 * HZ };
        assert_eq!(k.monitor_at(), Some(want), "object {i}");
    }
    assert!(!k.monitor_due(0));
    assert!(k.monitor_due(1));
    assert_eq!(k.stats.blocks_alloc, 2);
    assert_eq!(k.waiting(), 1000);
    assert!(
        env.freed.is_empty(),
        "nothing freed before the grace period"
    );
    assert_eq!(monitor_and_gp(&mut k, &mut env, 1), 1, "one batch");
    assert_eq!(env.bulk_calls, vec![490, 510], "the newest block first");
    assert_eq!(env.freed.len(), 1000);
    assert_eq!(k.waiting(), 0);
    assert_eq!(k.stats.peak_waiting, 1000);
    assert_eq!(
        k.cached_blocks(),
        2,
        "emptied blocks kept for the next batches"
    );
    assert_eq!(
        k.monitor_at(),
        None,
        "nothing left: the monitor is not rearmed"
    );
    assert_eq!(k.drain_cache(&mut env), 2);
    assert!(env.blocks_live.is_empty());
}

#[test]
fn two_argument_frees_without_a_kept_block_take_the_list_and_still_drain() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for mutated in [false, true] {
        MUTATION_IGNORE_LIST.store(mutated, SeqCst);
        let r = std::panic::catch_unwind(list_case);
        MUTATION_IGNORE_LIST.store(false, SeqCst);
        assert_eq!(r.is_ok(), !mutated, "mutated={mutated}");
    }
}

fn list_case() {
    let mut env = MapEnv::default();
    let mut k = KfreeRcuCpu::new(5 * HZ);
    // Two-argument kvfree_rcu may not allocate: with no block kept, each object's own
    // rcu_head (at offset 16) links it.
    for i in 0..10 {
        let obj = 0x2000 + i * 64;
        assert_eq!(k.queue(&mut env, obj, Some(obj + 16), 7), Queued::List);
    }
    assert_eq!(k.monitor_at(), Some(7 + 5 * HZ));
    assert!(!k.monitor_due(7 + 5 * HZ - 1));
    assert_eq!(monitor_and_gp(&mut k, &mut env, 7 + 5 * HZ), 1);
    assert_eq!(env.freed.len(), 10, "every list object freed");
    assert_eq!(k.waiting(), 0);
    // Headless with no memory: the caller frees inline after synchronize_rcu.
    env.no_memory = true;
    assert_eq!(k.queue(&mut env, 0x9000, None, 0), Queued::Inline);
    assert_eq!(k.stats.inline, 1);
    // A block given ahead serves the two-argument form.
    env.no_memory = false;
    assert!(k.needs_block(&env, 0x3000), "no block, none kept");
    let b = env.alloc_block().unwrap();
    assert!(k.fill_cache(b));
    assert!(!k.needs_block(&env, 0x3000), "one kept");
    assert_eq!(k.queue(&mut env, 0x3000, Some(0x3010), 0), Queued::Block);
    assert!(!k.needs_block(&env, 0x3040), "room in the block");
}

#[test]
fn busy_slots_make_the_monitor_rearm_and_vmalloc_areas_are_freed_one_by_one() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut env = MapEnv::default();
    let mut k = KfreeRcuCpu::new(5 * HZ);
    k.queue(&mut env, 0x100, None, 0);
    assert_eq!(k.monitor(5 * HZ), [true, false]);
    k.queue(&mut env, VMALLOC_BASE + 0x1000, None, 5 * HZ);
    assert_eq!(k.monitor(10 * HZ), [false, true], "slot 0 still waits");
    k.queue(&mut env, 0x200, None, 10 * HZ);
    assert_eq!(k.monitor(15 * HZ), [false, false], "both slots wait");
    assert_eq!(k.monitor_at(), Some(20 * HZ), "rearmed");
    let b1 = k.detach(1);
    k.free_detached(&mut env, b1);
    assert_eq!(k.stats.single_frees, 1, "vfree of the area");
    assert_eq!(env.bulk_calls, Vec::<usize>::new());
    let b0 = k.detach(0);
    k.free_detached(&mut env, b0);
    assert_eq!(monitor_and_gp(&mut k, &mut env, 20 * HZ), 1);
    assert_eq!(env.freed.len(), 3);
    assert_eq!(k.stats.batches, 3);
    assert!(k.cached_blocks() <= RCU_MIN_CACHED_OBJS);
}

/// The fake machine's cache as the batched way's memory and kfree.
struct SlabEnv<'a> {
    c: &'a Cache<&'static FakeMachine>,
    m: &'static FakeMachine,
}

impl Env for SlabEnv<'_> {
    fn alloc_block(&mut self) -> Option<usize> {
        self.m.alloc_block(BLOCK_BYTES)
    }
    fn free_block(&mut self, block: usize) {
        self.m.free_block(block, BLOCK_BYTES)
    }
    fn load(&self, addr: usize) -> usize {
        self.m.load(addr)
    }
    fn store(&mut self, addr: usize, value: usize) {
        self.m.store(addr, value)
    }
    fn is_vmalloc(&self, _: usize) -> bool {
        false
    }
    fn kfree_bulk(&mut self, block: usize, nr: usize) {
        let objs: Vec<usize> = (0..nr).map(|i| self.m.load(block + 16 + i * 8)).collect();
        self.c.free_bulk(&objs);
    }
    fn kvfree(&mut self, ptr: usize) {
        self.c.free(ptr)
    }
}

/// kfree_rcu of `n` objects of one cache by one CPU, the way `way`; returns the callbacks
/// queued (per-object callbacks, batches, sheaves) and checks nothing came back before the
/// grace period and everything after it.
fn three_ways_case(way: &str, n: usize) -> usize {
    FakeMachine::set_cpu(0);
    let m: &'static FakeMachine = Box::leak(Box::new(FakeMachine::new(&[1024], &[0], None)));
    let t = Tunables {
        design: Design::Sheaves,
        ..Tunables::default()
    };
    let c = Cache::new(m, "k", 64, 0, t, 9, None).unwrap();
    let objs: Vec<usize> = (0..n).map(|_| c.alloc().unwrap()).collect();
    let mut env = SlabEnv { c: &c, m };
    let mut k = KfreeRcuCpu::new(5 * HZ);
    let mut per_object: Vec<usize> = Vec::new();
    let mut sheaves: Vec<usize> = Vec::new();
    for &o in &objs {
        match way {
            "call_rcu" => per_object.push(o),
            "batched" => assert_eq!(k.queue(&mut env, o, Some(o + 16), 0), Queued::List),
            _ => match c.kfree_rcu_sheaf(o) {
                RcuSheafFree::Full(s) => sheaves.push(s),
                RcuSheafFree::Queued => {}
                other => panic!("{other:?}"),
            },
        }
    }
    sheaves.extend(c.take_rcu_free());
    let waiting: HashSet<usize> = objs.iter().copied().collect();
    let during: Vec<usize> = (0..n).map(|_| c.alloc().unwrap()).collect();
    assert!(
        during.iter().all(|o| !waiting.contains(o)),
        "{way}: reused early"
    );
    for o in during {
        c.free(o);
    }
    // The grace period ends.
    let callbacks = match way {
        "call_rcu" => {
            for &o in &per_object {
                c.free(o);
            }
            per_object.len()
        }
        "batched" => {
            let q = k.monitor(5 * HZ);
            let mut nb = 0;
            for (i, queued) in q.iter().enumerate() {
                if *queued {
                    let b = k.detach(i);
                    k.free_detached(&mut env, b);
                    nb += 1;
                }
            }
            nb
        }
        _ => {
            for &s in &sheaves {
                c.rcu_free_sheaf(s);
            }
            sheaves.len()
        }
    };
    let s = c.stats();
    assert_eq!(s.live_objects(), 0, "{way}");
    assert_eq!(s.get(Stat::FreeRcuSheaf) != 0, way == "sheaf", "{way}");
    std::println!(
        "kfree_rcu three ways: {way:8} objects {n:4} callbacks {callbacks:4} per_1000 {:6.1} \
         free_rcu_sheaf {} barn_put {} sheaf_flush {} rcu_head_list {} kfree_bulk_calls {}",
        callbacks as f64 * 1000.0 / n as f64,
        s.get(Stat::FreeRcuSheaf),
        s.get(Stat::BarnPut),
        s.get(Stat::SheafFlush),
        k.stats.in_list,
        k.stats.bulk_calls,
    );
    k.drain_cache(&mut env);
    c.destroy().unwrap();
    assert_eq!(m.blocks_in_use(), 0, "{way}");
    callbacks
}

#[test]
fn three_ways_queue_one_callback_per_object_per_batch_and_per_sheaf() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    assert_eq!(three_ways_case("call_rcu", 600), 600);
    assert_eq!(three_ways_case("batched", 600), 1);
    // 600 objects of kmalloc-64: ten sheaves of 60.
    assert_eq!(three_ways_case("sheaf", 600), 10);
    assert_eq!(
        three_ways_case("sheaf", 605),
        11,
        "the partial sheaf taken at the end"
    );
}
