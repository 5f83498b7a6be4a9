//! Model checks (shuttle) of vmalloc's lazy list against reuse: the real `reserve`, `detach`,
//! `queue_lazy` and `purge` of ops.rs over a [`Shards`] whose free-space, vmap node and purge
//! locks are shuttle mutexes, with two CPUs that allocate and free small areas in a range so
//! small that allocations need the ranges other CPUs' frees left on lazy lists (the
//! exhaustion purge of `reserve`, threshold purges of frees, pools).
//!
//! Checked after every step: a reserved range overlaps no live area and no range that was
//! unmapped and not yet covered by a TLB flush (the property the lazy list exists for: a
//! virtual range is reused only after the flush); the lazy page count never goes below zero
//! (an unsigned wrap); at the end, everything freed and purged, the free space is whole and
//! every list and pool empty. Under each policy (global, cpu, numa). Mutations that must be
//! caught: the lazy count updated with a load and a store, and a real bug found earlier (the lazy
//! pages counted after the area is visible on the list, commit 5ee7645 fixed it).

use super::free_space::FreeSpace;
use super::layout::{Layout, Policy, VnId};
use super::node::VmapNode;
use super::ops::{detach, purge, queue_lazy, reserve, Busy, PurgeReport, Scope, Shards};
use super::PAGE_SIZE;
use crate::model_check::{self, point};
use crate::topology::{CpuId, NodeId};
use shuttle::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::vec::Vec;

const P: u64 = PAGE_SIZE;
const BASE: u64 = 0xffff_c000_0000_0000;
/// The range: 10 pages, room for four 2-page areas and one more.
const RANGE_PAGES: u64 = 10;
/// Every area: one page and its guard page.
const AREA: u64 = 2 * P;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mutation {
    None,
    /// `lazy_add` as a load, a scheduling point and a store.
    SplitLazyAdd,
    /// The bug before its fix: the pages counted after the area is on the lazy list.
    CountAfterPush,
    /// A free gives the range straight back to the free space (no lazy list, no flush).
    NoLazyList,
}

/// Schedules (of unmutated runs) in which an allocation got a range freed earlier in the
/// same run: the reuse the scenarios exist for must happen.
static REUSES: AtomicU64 = AtomicU64::new(0);

/// What the test knows: live areas and unmapped, not yet flushed ranges.
#[derive(Default)]
struct Truth {
    live: Vec<u64>,
    stale: Vec<u64>,
    freed: Vec<u64>,
    reused: bool,
}

struct Model {
    layout: Layout,
    free: Mutex<FreeSpace>,
    nodes: Vec<Mutex<VmapNode<Busy<u32>>>>,
    purge_lock: Mutex<()>,
    lazy: AtomicU64,
    full_purges: AtomicU64,
    truth: std::sync::Mutex<Truth>,
    mutation: Mutation,
}

impl Shards<u32> for Model {
    fn layout(&self) -> &Layout {
        &self.layout
    }
    fn range_bytes(&self) -> u64 {
        RANGE_PAGES * P
    }
    fn with_free<R>(&self, f: impl FnOnce(&mut FreeSpace) -> R) -> R {
        f(&mut self.free.lock().unwrap())
    }
    fn with_node<R>(&self, vn: VnId, f: impl FnOnce(&mut VmapNode<Busy<u32>>) -> R) -> R {
        f(&mut self.nodes[vn.index()].lock().unwrap())
    }
    fn lazy_add(&self, delta: i64) -> u64 {
        point();
        let total = if self.mutation == Mutation::SplitLazyAdd {
            let old = self.lazy.load(SeqCst);
            point();
            let new = old.wrapping_add_signed(delta);
            self.lazy.store(new, SeqCst);
            new
        } else {
            self.lazy
                .fetch_add(delta as u64, SeqCst)
                .wrapping_add(delta as u64)
        };
        assert!(
            total <= RANGE_PAGES,
            "lazy page count out of range: {total:#x} (went below zero)"
        );
        total
    }
    fn flush_tlb(&self, start: u64, end: u64) {
        point();
        // Every range unmapped before this flush and inside [start, end) is safe to reuse.
        self.truth
            .lock()
            .unwrap()
            .stale
            .retain(|&a| !(start <= a && a + AREA <= end));
    }
    fn full_purges(&self) -> u64 {
        self.full_purges.load(SeqCst)
    }
    fn full_purge_done(&self) {
        self.full_purges.fetch_add(1, SeqCst);
    }
    fn try_with_purge<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        let _held = self.purge_lock.try_lock().ok()?;
        Some(f())
    }
    fn with_purge<R>(&self, f: impl FnOnce() -> R) -> R {
        let _held = self.purge_lock.lock().unwrap();
        f()
    }
    fn purged(&self, report: &PurgeReport) {
        assert_eq!(report.refused, 0, "the free space refused a purged area");
    }
}

impl Model {
    fn new(policy: Policy, mutation: Mutation) -> Model {
        // Two CPUs on two NUMA nodes; a purge once more than 2 pages are lazy.
        let layout = Layout::new(policy, 2, 2, 2);
        Model {
            layout,
            free: Mutex::new(FreeSpace::new(BASE, BASE + RANGE_PAGES * P)),
            nodes: (0..layout.nr_nodes)
                .map(|_| Mutex::new(VmapNode::new()))
                .collect(),
            purge_lock: Mutex::new(()),
            lazy: AtomicU64::new(0),
            full_purges: AtomicU64::new(0),
            truth: std::sync::Mutex::new(Truth::default()),
            mutation,
        }
    }

    /// vmalloc's reservation on `cpu`; the range must be neither live nor unflushed.
    fn alloc(&self, cpu: u16) -> u64 {
        let r = reserve(self, AREA, P, CpuId(cpu), NodeId(cpu), cpu as u32)
            .expect("the range has room for every live area");
        let mut t = self.truth.lock().unwrap();
        let overlaps = |a: &u64| r.start < a + AREA && *a < r.start + AREA;
        assert!(
            !t.live.iter().any(overlaps),
            "{:#x} handed out while live",
            r.start
        );
        assert!(
            !t.stale.iter().any(overlaps),
            "{:#x} reused before the TLB flush that follows its unmap",
            r.start
        );
        t.live.push(r.start);
        if t.freed.contains(&r.start) {
            t.reused = true;
        }
        r.start
    }

    /// vfree on `cpu`: detach, unmap (the range becomes stale), queue lazily, purge if the
    /// threshold says so.
    fn free(&self, cpu: u16, addr: u64) {
        {
            let mut t = self.truth.lock().unwrap();
            let i = t.live.iter().position(|&a| a == addr).unwrap();
            t.live.swap_remove(i);
        }
        let d = detach(self, addr, BASE, NodeId(cpu)).expect("a live area");
        assert_eq!(d.size_bytes, AREA);
        {
            let mut t = self.truth.lock().unwrap();
            t.stale.push(addr);
            t.freed.push(addr);
        }
        if self.mutation == Mutation::NoLazyList {
            self.with_free(|fs| fs.free(addr, d.size_bytes)).unwrap();
            return;
        }
        let scope = if self.mutation == Mutation::CountAfterPush {
            self.queue_lazy_count_after_push(d.lazy_vn, addr, d.size_bytes)
        } else {
            queue_lazy(self, d.lazy_vn, addr, d.size_bytes)
        };
        if let Some(scope) = scope {
            purge(self, scope, false);
        }
    }

    /// `queue_lazy` as it was before commit 5ee7645 (the mutation `CountAfterPush`).
    fn queue_lazy_count_after_push(&self, vn: VnId, start: u64, size_bytes: u64) -> Option<Scope> {
        let node_lazy = super::ops::on_node(self, vn, |n| n.lazy_push(start, size_bytes));
        let total = self.lazy_add((size_bytes / P) as i64);
        match self.layout.policy {
            Policy::Numa if node_lazy > self.layout.lazy_max_pages => Some(Scope::Node(vn)),
            Policy::Numa => None,
            _ if total > self.layout.lazy_max_pages => Some(Scope::All),
            _ => None,
        }
    }

    /// Everything freed and purged: the free space whole, lists, pools and count empty.
    fn finish(&self) {
        let live = self.truth.lock().unwrap().live.clone();
        for a in live {
            self.free(0, a);
        }
        purge(self, Scope::All, true);
        let fs = self.free.lock().unwrap();
        assert!(fs.is_all_free(), "free space not whole: {:?}", fs.blocks());
        for n in &self.nodes {
            let c = n.lock().unwrap().counts();
            assert_eq!((c.busy_areas, c.lazy_areas, c.pool_areas), (0, 0, 0));
        }
        assert_eq!(self.lazy.load(SeqCst), 0, "lazy page count");
        if self.mutation == Mutation::None && self.truth.lock().unwrap().reused {
            REUSES.fetch_add(1, SeqCst);
        }
    }
}

/// Two CPUs: each allocates, frees, allocates twice and frees one (at most two live areas
/// each); the frees' lazy ranges are what the other CPU's allocations need.
fn lazy_vs_reuse(policy: Policy, mutation: Mutation) {
    let m = Model::new(policy, mutation);
    shuttle::thread::scope(|s| {
        for cpu in 0..2u16 {
            let m = &m;
            s.spawn(move || {
                let a = m.alloc(cpu);
                m.free(cpu, a);
                let b = m.alloc(cpu);
                let _c = m.alloc(cpu);
                m.free(cpu, b);
                let d = m.alloc(cpu);
                m.free(cpu, d);
            });
        }
    });
    m.finish();
}

/// `iterations` random and `iterations` PCT schedules per policy, fixed seed.
fn check(mutation: Mutation, iterations: usize, seed: u64) {
    for policy in Policy::ALL {
        model_check::check(move || lazy_vs_reuse(policy, mutation), iterations, seed);
    }
}

/// Schedules per scheduler and policy (see docs/testing.md for the time it takes).
const DEFAULT_SCHEDULES: usize = 300;

fn schedules() -> usize {
    model_check::schedules(DEFAULT_SCHEDULES)
}

#[test]
fn model_vmalloc_lazy_purge_vs_reuse() {
    let n = schedules();
    check(Mutation::None, n, 21);
    let reuses = REUSES.load(SeqCst);
    eprintln!("model vmalloc: {reuses} schedules reused a freed range");
    assert!(
        reuses as usize > n,
        "only {reuses} schedules reused a freed range"
    );
}

fn failure(mutation: Mutation, seed: u64) -> Option<String> {
    model_check::failure(|| check(mutation, DEFAULT_SCHEDULES, seed))
}

#[test]
fn model_vmalloc_finds_a_non_atomic_lazy_count() {
    let msg = failure(Mutation::SplitLazyAdd, 21).expect("split lazy_add went unnoticed");
    assert!(
        msg.contains("lazy page count"),
        "failed, but not as expected: {msg}"
    );
}

#[test]
fn model_vmalloc_finds_reuse_before_the_flush() {
    let msg = failure(Mutation::NoLazyList, 21).expect("reuse before the flush went unnoticed");
    assert!(
        msg.contains("reused before the TLB flush"),
        "failed, but not as expected: {msg}"
    );
}

#[test]
fn model_vmalloc_finds_issue_14_lazy_count_wrap() {
    let msg =
        failure(Mutation::CountAfterPush, 21).expect("the count-after-push bug went unnoticed");
    assert!(
        msg.contains("went below zero"),
        "failed, but not as expected: {msg}"
    );
}
