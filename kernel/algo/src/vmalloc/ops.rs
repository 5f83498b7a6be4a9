//! The vmalloc bookkeeping steps of all three designs, written once over a [`Shards`]
//! (the global free space and the vmap nodes, each behind whatever lock the user provides):
//! reserve an area, find and detach a live area on free, queue it lazily, and purge.
//!
//! Lock discipline the steps follow (the kernel's lock order): the global free-space lock is
//! taken before a vmap node lock and never the other way round; `Policy::Global` holds the
//! free-space lock around every node access (one lock for everything); the other policies
//! take one node lock at a time and the free-space lock only on a pool miss or in a purge.

use alloc::vec::Vec;

use super::free_space::{check_request, FreeSpace};
use super::layout::{Layout, Policy, VnId};
use super::node::{LazyArea, VmapNode, MAX_POOL_PAGES};
use super::{VmError, PAGE_SIZE};
use crate::topology::{CpuId, NodeId};

/// What a busy tree holds per live area: the caller's meta and the vmap node whose lazy list
/// (and so, after the purge, whose pool) the area goes to when freed. In `cpu` that is the
/// node of the allocating CPU (Linux's vn_id), while the busy tree is picked by address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Busy<M: Copy> {
    pub lazy_vn: VnId,
    pub meta: M,
}

/// Access to the shared state; the kernel implements it with spin locks, the host tests with
/// `RefCell`s.
pub trait Shards<M: Copy> {
    fn layout(&self) -> &Layout;
    /// Size of the virtual range (for the "too large" check without a lock).
    fn range_bytes(&self) -> u64;
    /// Runs `f` with the global free space locked.
    fn with_free<R>(&self, f: impl FnOnce(&mut FreeSpace) -> R) -> R;
    /// Runs `f` with vmap node `vn` locked.
    fn with_node<R>(&self, vn: VnId, f: impl FnOnce(&mut VmapNode<Busy<M>>) -> R) -> R;
    /// Adds `delta` to the lazy pages of all nodes together; returns the new total.
    fn lazy_add(&self, delta: i64) -> u64;
    /// Flushes [start, end) from every CPU's TLB (one shootdown).
    fn flush_tlb(&self, start: u64, end: u64);
    /// Runs `f` with the purge lock held (one purge at a time).
    fn with_purge<R>(&self, f: impl FnOnce() -> R) -> R;
    /// Called after every purge with what it did (counters).
    fn purged(&self, _report: &PurgeReport) {}
}

/// Runs `f` on node `vn`, inside the free-space lock under `Policy::Global`.
pub fn on_node<M: Copy, S: Shards<M>, R>(
    s: &S,
    vn: VnId,
    f: impl FnOnce(&mut VmapNode<Busy<M>>) -> R,
) -> R {
    if s.layout().policy == Policy::Global {
        s.with_free(|_| s.with_node(vn, f))
    } else {
        s.with_node(vn, f)
    }
}

/// A reserved area.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reserved {
    pub start: u64,
    /// The vmap node whose busy tree holds it.
    pub vn: VnId,
    /// The vmap node whose lazy list takes it when freed.
    pub lazy_vn: VnId,
    /// Taken from a pool (no free-space lock).
    pub from_pool: bool,
}

/// Which lazy lists a purge takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    All,
    /// One vmap node only (`numa`: the node under pressure).
    Node(VnId),
}

/// What a purge did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PurgeReport {
    pub areas: u64,
    pub pages: u64,
    /// TLB shootdowns issued (0 or 1).
    pub flushes: u64,
    pub to_pools: u64,
    pub to_free_space: u64,
    /// Pool areas given back by decay.
    pub decayed: u64,
    /// Areas the free space refused (overlap: a bookkeeping bug); never expected.
    pub refused: u64,
}

/// Reserves `size_bytes` (page multiple, guard page included by the caller) at
/// `align_bytes`, for CPU `cpu` with pages from NUMA node `numa`, and records it busy with
/// `meta`. On an exhausted range it purges everything (emptying the pools) and tries once more.
pub fn reserve<M: Copy, S: Shards<M>>(
    s: &S,
    size_bytes: u64,
    align_bytes: u64,
    cpu: CpuId,
    numa: NodeId,
    meta: M,
) -> Result<Reserved, VmError> {
    check_request(size_bytes, align_bytes, s.range_bytes())?;
    let layout = *s.layout();
    let nr_pages = size_bytes / PAGE_SIZE;
    let lazy_vn = if layout.pools_enabled() {
        layout.pool_node(cpu, numa)
    } else {
        VnId(0)
    };
    let busy = Busy { lazy_vn, meta };
    if layout.pools_enabled() && align_bytes <= PAGE_SIZE && nr_pages as usize <= MAX_POOL_PAGES {
        // One lock when the area's busy node is the pool's node (always in numa).
        let taken = s.with_node(lazy_vn, |n| {
            let start = n.pool_take(nr_pages)?;
            let vn = layout.busy_node(start, numa);
            if vn == lazy_vn {
                n.busy_insert(start, size_bytes, busy);
            }
            Some((start, vn))
        });
        if let Some((start, vn)) = taken {
            if vn != lazy_vn {
                s.with_node(vn, |n| n.busy_insert(start, size_bytes, busy));
            }
            return Ok(Reserved {
                start,
                vn,
                lazy_vn,
                from_pool: true,
            });
        }
    }
    for attempt in 0..2 {
        let got = if layout.policy == Policy::Global {
            s.with_free(|fs| {
                let start = fs.alloc(size_bytes, align_bytes)?;
                s.with_node(VnId(0), |n| n.busy_insert(start, size_bytes, busy));
                Ok(start)
            })
        } else {
            s.with_free(|fs| fs.alloc(size_bytes, align_bytes))
                .inspect(|&start| {
                    let vn = layout.busy_node(start, numa);
                    s.with_node(vn, |n| n.busy_insert(start, size_bytes, busy));
                })
        };
        match got {
            Ok(start) => {
                return Ok(Reserved {
                    start,
                    vn: layout.busy_node(start, numa),
                    lazy_vn,
                    from_pool: false,
                })
            }
            Err(VmError::Exhausted) if attempt == 0 => {
                purge(s, Scope::All, true);
            }
            Err(e) => return Err(e),
        }
    }
    Err(VmError::Exhausted)
}

/// Why an address given to vfree/vunmap is not a live area.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FreeFault {
    /// Outside this vmalloc range.
    NotInRange,
    /// Inside the live area starting at `start`, but not its start.
    InsideArea { start: u64 },
    /// An area freed already and not reused yet (double free).
    AlreadyFreed { start: u64 },
    /// Free virtual space (never allocated, or freed and purged).
    NotAllocated,
}

impl FreeFault {
    pub fn reason(&self) -> &'static str {
        match self {
            FreeFault::NotInRange => "not a vmalloc address",
            FreeFault::InsideArea { .. } => "not the start of an area",
            FreeFault::AlreadyFreed { .. } => "area already freed (double free)",
            FreeFault::NotAllocated => "no area there",
        }
    }
}

/// A live area taken out of its busy tree by [`detach`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Detached<M: Copy> {
    /// The vmap node whose busy tree held it.
    pub busy_vn: VnId,
    /// The vmap node whose lazy list it goes to.
    pub lazy_vn: VnId,
    pub size_bytes: u64,
    pub meta: M,
}

/// Finds the live area starting at `addr` and removes it from its busy tree. The caller
/// unmaps it and then calls [`queue_lazy`] with `lazy_vn`.
pub fn detach<M: Copy, S: Shards<M>>(
    s: &S,
    addr: u64,
    range_start: u64,
    hint_numa: NodeId,
) -> Result<Detached<M>, FreeFault> {
    if addr < range_start || addr - range_start >= s.range_bytes() {
        return Err(FreeFault::NotInRange);
    }
    let layout = *s.layout();
    if addr.is_multiple_of(PAGE_SIZE) {
        for i in 0..layout.lookup_len() {
            let vn = layout.lookup_node(addr, hint_numa, i);
            if let Some((size_bytes, b)) = on_node(s, vn, |n| n.busy_remove(addr)) {
                return Ok(Detached {
                    busy_vn: vn,
                    lazy_vn: b.lazy_vn,
                    size_bytes,
                    meta: b.meta,
                });
            }
        }
    }
    Err(diagnose(s, addr))
}

/// Says what `addr` is, for a bad free (slow path: looks at every node).
pub fn diagnose<M: Copy, S: Shards<M>>(s: &S, addr: u64) -> FreeFault {
    let layout = *s.layout();
    for i in 0..layout.nr_nodes {
        let vn = VnId(i as u16);
        let found = on_node(s, vn, |n| {
            if let Some((start, _, _)) = n.busy_containing(addr) {
                return Some(FreeFault::InsideArea { start });
            }
            n.lazy_containing(addr)
                .or_else(|| n.pool_containing(addr))
                .map(|a| FreeFault::AlreadyFreed { start: a.start })
        });
        if let Some(f) = found {
            return f;
        }
    }
    FreeFault::NotAllocated
}

/// Puts a detached, unmapped area on node `vn`'s lazy list. Returns the purge the caller
/// should run now, if the lazy pages passed the threshold.
pub fn queue_lazy<M: Copy, S: Shards<M>>(
    s: &S,
    vn: VnId,
    start: u64,
    size_bytes: u64,
) -> Option<Scope> {
    let layout = *s.layout();
    // Count the pages before the area is visible on a list: a purge on another CPU can take
    // the list right after the push, and subtracts what it took; counted after, the total
    // would go below zero in between (an unsigned wrap that forces purges).
    let total = s.lazy_add((size_bytes / PAGE_SIZE) as i64);
    let node_lazy = on_node(s, vn, |n| n.lazy_push(start, size_bytes));
    match layout.policy {
        Policy::Numa if node_lazy > layout.lazy_max_pages => Some(Scope::Node(vn)),
        Policy::Numa => None,
        _ if total > layout.lazy_max_pages => Some(Scope::All),
        _ => None,
    }
}

/// Purges the lazy lists of `scope`: one TLB flush for the whole purged range, then areas go
/// to their node's pools (up to 256 pages, policies with pools) or back to the free space;
/// pools not used since the last purge decay by a quarter (`full`: pools are emptied and
/// nothing is pooled, as when the range is exhausted). A purge that finds every lazy list of
/// its scope empty (another CPU purged first) does nothing, decay included, and is not counted.
pub fn purge<M: Copy, S: Shards<M>>(s: &S, scope: Scope, full: bool) -> PurgeReport {
    let layout = *s.layout();
    let nodes = match scope {
        Scope::All => 0..layout.nr_nodes,
        Scope::Node(vn) => vn.index()..vn.index() + 1,
    };
    let report = s.with_purge(|| {
        let mut report = PurgeReport::default();
        let mut lazy: Vec<LazyArea> = Vec::new();
        let mut cuts: Vec<usize> = Vec::with_capacity(nodes.len() + 1);
        let mut pages = 0;
        for i in nodes.clone() {
            cuts.push(lazy.len());
            pages += on_node(s, VnId(i as u16), |n| n.lazy_take(&mut lazy));
        }
        cuts.push(lazy.len());
        s.lazy_add(-(pages as i64));
        if lazy.is_empty() && !full {
            // Another CPU's purge took the lists first: nothing to flush, and decaying the
            // pools again right away would punish CPUs for not allocating in between.
            return None;
        }
        report.areas = lazy.len() as u64;
        report.pages = pages;
        if let (Some(lo), Some(hi)) = (
            lazy.iter().map(|a| a.start).min(),
            lazy.iter().map(|a| a.start + a.size_bytes).max(),
        ) {
            s.flush_tlb(lo, hi);
            report.flushes = 1;
        }
        let mut back: Vec<LazyArea> = Vec::new();
        for (k, i) in nodes.enumerate() {
            let mine = &lazy[cuts[k]..cuts[k + 1]];
            let vn = VnId(i as u16);
            let before = back.len();
            on_node(s, vn, |n| {
                for a in mine {
                    if full || !layout.pools_enabled() || !n.pool_put(a.start, a.size_bytes) {
                        back.push(*a);
                    }
                }
                let pooled = mine.len() - (back.len() - before);
                report.to_pools += pooled as u64;
                let mid = back.len();
                n.decay_pools(full, &mut back);
                report.decayed += (back.len() - mid) as u64;
            });
        }
        report.to_free_space = back.len() as u64 - report.decayed;
        if !back.is_empty() {
            s.with_free(|fs| {
                for a in &back {
                    if fs.free(a.start, a.size_bytes).is_err() {
                        report.refused += 1;
                    }
                }
            });
        }
        Some(report)
    });
    match report {
        Some(r) => {
            s.purged(&r);
            r
        }
        None => PurgeReport::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::cell::{Cell, RefCell};

    const P: u64 = PAGE_SIZE;
    const BASE: u64 = 0xffff_c000_0000_0000;

    struct Host {
        layout: Layout,
        free: RefCell<FreeSpace>,
        nodes: Vec<RefCell<VmapNode<Busy<u32>>>>,
        lazy: Cell<u64>,
        free_locks: Cell<u64>,
        flushes: Cell<u64>,
        /// Set by a test: the next node-lock section that leaves a lazy area on a node runs a
        /// purge of everything right after (another CPU purging between two steps of a free).
        purge_after_lazy_push: Cell<bool>,
        /// The largest lazy total seen (a wrapped, "negative" count shows up as huge).
        lazy_max_seen: Cell<u64>,
    }

    impl Host {
        fn new(policy: Policy, cpus: usize, numa: usize, lazy_max: u64, pages: u64) -> Host {
            let layout = Layout::new(policy, cpus, numa, lazy_max);
            Host {
                layout,
                free: RefCell::new(FreeSpace::new(BASE, BASE + pages * P)),
                nodes: (0..layout.nr_nodes)
                    .map(|_| RefCell::new(VmapNode::new()))
                    .collect(),
                lazy: Cell::new(0),
                free_locks: Cell::new(0),
                flushes: Cell::new(0),
                purge_after_lazy_push: Cell::new(false),
                lazy_max_seen: Cell::new(0),
            }
        }
    }

    impl Shards<u32> for Host {
        fn layout(&self) -> &Layout {
            &self.layout
        }
        fn range_bytes(&self) -> u64 {
            let (s, e) = self.free.borrow().range();
            e - s
        }
        fn with_free<R>(&self, f: impl FnOnce(&mut FreeSpace) -> R) -> R {
            self.free_locks.set(self.free_locks.get() + 1);
            f(&mut self.free.borrow_mut())
        }
        fn with_node<R>(&self, vn: VnId, f: impl FnOnce(&mut VmapNode<Busy<u32>>) -> R) -> R {
            let r = f(&mut self.nodes[vn.index()].borrow_mut());
            let pushed = self.nodes[vn.index()].borrow().lazy_pages() > 0;
            if pushed && self.purge_after_lazy_push.replace(false) {
                purge(self, Scope::All, false);
            }
            r
        }
        fn lazy_add(&self, delta: i64) -> u64 {
            self.lazy.set(self.lazy.get().wrapping_add_signed(delta));
            self.lazy_max_seen
                .set(self.lazy_max_seen.get().max(self.lazy.get()));
            self.lazy.get()
        }
        fn flush_tlb(&self, start: u64, end: u64) {
            assert!(start < end);
            self.flushes.set(self.flushes.get() + 1);
        }
        fn with_purge<R>(&self, f: impl FnOnce() -> R) -> R {
            f()
        }
    }

    fn free(h: &Host, addr: u64, numa: NodeId) -> Result<u64, FreeFault> {
        let d = detach(h, addr, BASE, numa)?;
        let size = d.size_bytes;
        if let Some(scope) = queue_lazy(h, d.lazy_vn, addr, size) {
            let r = purge(h, scope, false);
            assert_eq!(r.refused, 0);
            assert_eq!(r.flushes, 1);
        }
        Ok(size)
    }

    /// Issue 14: a purge on another CPU between a free's push onto a lazy list and its add to
    /// the lazy page count took the area's pages off the count before they were on it, and
    /// the unsigned count wrapped (a huge "total" that forces purges). The count is now raised
    /// before the area becomes visible on a list, so it never goes below zero.
    #[test]
    fn lazy_count_never_goes_below_zero_when_a_purge_runs_in_between() {
        let h = Host::new(Policy::Cpu, 2, 1, 1 << 20, 1024);
        let a = reserve(&h, 4 * P, P, CpuId(0), NodeId(0), 1).unwrap().start;
        h.purge_after_lazy_push.set(true);
        assert_eq!(free(&h, a, NodeId(0)), Ok(4 * P));
        assert!(!h.purge_after_lazy_push.get(), "the purge ran");
        assert_eq!(h.lazy.get(), 0);
        assert!(
            h.lazy_max_seen.get() <= 4,
            "lazy count wrapped: {:#x}",
            h.lazy_max_seen.get()
        );
        conserved(&h);
    }

    fn conserved(h: &Host) {
        purge(h, Scope::All, true);
        assert!(
            h.free.borrow().is_all_free(),
            "{:?}",
            h.free.borrow().blocks()
        );
        for n in &h.nodes {
            let c = n.borrow().counts();
            assert_eq!((c.busy_areas, c.lazy_areas, c.pool_areas), (0, 0, 0));
        }
        assert_eq!(h.lazy.get(), 0);
    }

    #[test]
    fn random_workload_under_each_policy_conserves_space() {
        for policy in Policy::ALL {
            let h = Host::new(policy, 8, 4, 64, 1 << 16);
            let mut rng = crate::rng::Rng::new(0x1234_5678 + policy as u64);
            let mut live: Vec<(u64, u64)> = Vec::new();
            for _ in 0..5000 {
                if live.is_empty() || rng.below(100) < 52 {
                    let big = rng.below(20) == 0;
                    let pages = 1 + rng.below(if big { 300 } else { 4 });
                    let wide = rng.below(10) == 0;
                    let align = if wide { P << rng.below(5) } else { P };
                    let cpu = CpuId(rng.below(8) as u16);
                    let numa = NodeId(cpu.0 / 2);
                    let r = reserve(&h, pages * P, align, cpu, numa, cpu.0 as u32).unwrap();
                    assert_eq!(r.start % align, 0);
                    for &(s, z) in &live {
                        assert!(r.start + pages * P <= s || s + z <= r.start, "overlap");
                    }
                    live.push((r.start, pages * P));
                } else {
                    let (a, z) = live.swap_remove(rng.below(live.len() as u64) as usize);
                    let numa = NodeId(rng.below(4) as u16);
                    assert_eq!(free(&h, a, numa), Ok(z));
                }
            }
            assert!(
                h.flushes.get() > 0,
                "{policy:?}: lazy threshold never reached"
            );
            for (a, _) in live.drain(..) {
                free(&h, a, NodeId(0)).unwrap();
            }
            conserved(&h);
        }
    }

    #[test]
    fn pools_spare_the_global_lock() {
        let mut per_pair = Vec::new();
        for policy in Policy::ALL {
            let h = Host::new(policy, 8, 4, 256, 1 << 16);
            for round in 0..2000u64 {
                let cpu = CpuId((round % 8) as u16);
                let numa = NodeId(cpu.0 / 2);
                let r = reserve(&h, 2 * P, P, cpu, numa, 0).unwrap();
                free(&h, r.start, numa).unwrap();
            }
            per_pair.push(h.free_locks.get() as f64 / 2000.0);
            conserved(&h);
        }
        assert!(per_pair[0] >= 2.0, "{per_pair:?}");
        assert!(per_pair[1] * 10.0 <= per_pair[0], "{per_pair:?}");
        assert!(per_pair[2] * 10.0 <= per_pair[0], "{per_pair:?}");
    }

    #[test]
    fn cpu_policy_returns_areas_to_the_allocating_cpus_pool() {
        // One CPU of 8 running: busy trees by address spread over 8 nodes, but the areas
        // come back to CPU 0's pool, so after the first purge the pool serves everything.
        let h = Host::new(Policy::Cpu, 8, 1, 64, 1 << 16);
        for _ in 0..1000 {
            let r = reserve(&h, 2 * P, P, CpuId(0), NodeId(0), 0).unwrap();
            assert_eq!(r.lazy_vn, VnId(0));
            free(&h, r.start, NodeId(0)).unwrap();
        }
        let c = h.nodes[0].borrow().counts();
        assert!(c.pool_hits > 900, "{c:?}");
        assert!(h.free_locks.get() < 100, "{}", h.free_locks.get());
        conserved(&h);
    }

    #[test]
    fn bad_frees_are_diagnosed() {
        for policy in Policy::ALL {
            let h = Host::new(policy, 4, 2, 1000, 1024);
            let r = reserve(&h, 4 * P, P, CpuId(1), NodeId(0), 9).unwrap();
            assert_eq!(
                detach(&h, BASE - P, BASE, NodeId(0)),
                Err(FreeFault::NotInRange)
            );
            assert_eq!(
                detach(&h, r.start + P, BASE, NodeId(0)),
                Err(FreeFault::InsideArea { start: r.start })
            );
            assert_eq!(
                detach(&h, r.start + 100 * P, BASE, NodeId(0)),
                Err(FreeFault::NotAllocated)
            );
            free(&h, r.start, NodeId(1)).unwrap();
            assert_eq!(
                detach(&h, r.start, BASE, NodeId(0)),
                Err(FreeFault::AlreadyFreed { start: r.start })
            );
            assert_eq!(
                reserve(&h, 0, P, CpuId(0), NodeId(0), 0),
                Err(VmError::ZeroSize)
            );
            assert_eq!(
                reserve(&h, P, 3 * P, CpuId(0), NodeId(0), 0),
                Err(VmError::BadAlign(3 * P))
            );
            assert_eq!(
                reserve(&h, 2048 * P, P, CpuId(0), NodeId(0), 0),
                Err(VmError::TooLarge(2048 * P))
            );
            conserved(&h);
        }
    }

    #[test]
    fn exhaustion_purges_once_then_fails() {
        let h = Host::new(Policy::Cpu, 4, 1, 100_000, 64);
        let mut got = Vec::new();
        while let Ok(r) = reserve(&h, 4 * P, P, CpuId(0), NodeId(0), 0) {
            got.push(r.start);
        }
        assert_eq!(got.len(), 16);
        for a in got.drain(..) {
            free(&h, a, NodeId(0)).unwrap();
        }
        assert_eq!(h.flushes.get(), 0, "below the lazy threshold");
        let r = reserve(&h, 64 * P, P, CpuId(0), NodeId(0), 0).unwrap();
        assert_eq!(
            r.start, BASE,
            "the purge on exhaustion merged everything back"
        );
        assert_eq!(h.flushes.get(), 1);
        assert_eq!(
            reserve(&h, P, P, CpuId(0), NodeId(0), 0),
            Err(VmError::Exhausted)
        );
        free(&h, r.start, NodeId(0)).unwrap();
        conserved(&h);
    }
}
