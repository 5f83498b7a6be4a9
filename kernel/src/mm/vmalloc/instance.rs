//! One vmalloc allocator over one virtual range with one node policy: the shared state behind
//! locks (implementing numalab_algo's `Shards`), and the page side of vmalloc/vfree/vmap/vunmap.
//!
//! Lock order (outermost first): purge lock > free-space lock ("global lock") > vmap node
//! lock > page allocator. Pages are allocated, mapped, unmapped and freed with no vmalloc
//! lock held; nothing prints while holding one.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::panic::Location;
use core::sync::atomic::{
    AtomicU64,
    Ordering::{Relaxed, Release},
};

use numalab_algo::page::{PhysAddr, VirtAddr};
use numalab_algo::vmalloc::ops::{self, Busy, FreeFault, Reserved, Scope};
use numalab_algo::vmalloc::{
    FreeSpace, Layout, NodeCounts, Policy, PurgeReport, Shards, VmError, VmapNode, VnId, PAGE_SIZE,
};

use super::blocks::{self, Backing};
use super::counter::PerCpuCounter;
use super::{backing, map, probe};
use crate::sync::{IrqSpinLock, LockStatsSnapshot};
use crate::topology::NodeId;

/// How an area's pages are owned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AreaKind {
    /// vmalloc: the area owns its pages and vfree frees them.
    Vmalloc,
    /// vmap: the caller's pages; vunmap leaves them alone.
    Vmap,
}

/// What a busy tree records per live area.
#[derive(Clone, Copy, Debug)]
pub struct AreaMeta {
    pub caller: &'static Location<'static>,
    pub nr_pages: u32,
    pub kind: AreaKind,
    /// How its pages were allocated (vmap: none, order 0): `Backing`'s fields, flat, so that
    /// they fill the record's padding (16 bytes, as before `vmalloc.page_order`).
    pub order: u8,
    pub high_blocks: u16,
}

impl AreaMeta {
    /// How the area's pages were allocated.
    pub fn backing(&self) -> Backing {
        Backing {
            order: self.order,
            high_blocks: self.high_blocks,
        }
    }
}

/// Event counters of one instance.
#[derive(Default)]
pub struct Counters {
    pub allocs: PerCpuCounter,
    pub frees: PerCpuCounter,
    pub pool_allocs: PerCpuCounter,
    pub purges: PerCpuCounter,
    /// Lazy purges that waited for another CPU's purge (past twice the threshold).
    pub purge_waits: PerCpuCounter,
    pub pages_purged: PerCpuCounter,
    pub shootdowns: PerCpuCounter,
    pub bad_frees: PerCpuCounter,
    pub local_pages: PerCpuCounter,
    pub remote_pages: PerCpuCounter,
    /// Buddy calls that allocated an area's pages (one per block).
    pub buddy_allocs: PerCpuCounter,
    /// Buddy calls that freed them (vfree and undone areas: one per block).
    pub buddy_frees: PerCpuCounter,
    /// Pages that came in blocks of 2^page_order (page_order > 0).
    pub high_order_pages: PerCpuCounter,
}

/// One vmap node in a block of a chosen node's memory (SLUB's per-node pool).
type VmapNodeBox = crate::mm::slub::placement::NodeBox<IrqSpinLock<VmapNode<Busy<AreaMeta>>>>;

/// A vmalloc allocator (one per policy; see mod.rs).
pub struct Vmalloc {
    pub layout: Layout,
    pub range_start: u64,
    range_bytes: u64,
    free: IrqSpinLock<FreeSpace>,
    /// The vmap nodes. In the numa design vmap node i is NUMA node i, and its lock and trees'
    /// roots lie in that node's memory (a memoryless node's: the nearest memory node); the
    /// global and cpu designs keep Linux's one array (mm/vmalloc.c `vmap_init_nodes`:
    /// `kmalloc_array` at boot), on node 0. docs/vmalloc.md, "Where the vmap nodes live".
    nodes: Box<[VmapNodeBox]>,
    purge_lock: IrqSpinLock<()>,
    /// Full purges finished (`Shards::full_purges`: one exhaustion purge serves every CPU
    /// that ran out meanwhile).
    full_purges: AtomicU64,
    lazy_pages: AtomicU64,
    /// `vmalloc.page_order`: blocks of 2^page_order backing pages (blocks.rs).
    pub page_order: u8,
    /// On the heap: 4 KiB per counter, and the three designs are built on the boot stack.
    pub counters: Box<Counters>,
}

impl Shards<AreaMeta> for Vmalloc {
    #[inline]
    fn layout(&self) -> &Layout {
        &self.layout
    }
    #[inline]
    fn range_bytes(&self) -> u64 {
        self.range_bytes
    }
    #[inline]
    fn with_free<R>(&self, f: impl FnOnce(&mut FreeSpace) -> R) -> R {
        f(&mut self.free.lock())
    }
    #[inline]
    fn with_node<R>(&self, vn: VnId, f: impl FnOnce(&mut VmapNode<Busy<AreaMeta>>) -> R) -> R {
        f(&mut self.nodes[vn.index()].lock())
    }
    #[inline]
    fn lazy_add(&self, delta: i64) -> u64 {
        if delta >= 0 {
            self.lazy_pages.fetch_add(delta as u64, Relaxed) + delta as u64
        } else {
            self.lazy_pages.fetch_sub(delta.unsigned_abs(), Relaxed) - delta.unsigned_abs()
        }
    }
    fn flush_tlb(&self, start: u64, end: u64) {
        self.counters.shootdowns.add(1);
        backing::tlb_shootdown(VirtAddr::new(start), VirtAddr::new(end));
    }
    fn with_purge<R>(&self, f: impl FnOnce() -> R) -> R {
        let _held = self.purge_lock.lock();
        f()
    }
    fn try_with_purge<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        let _held = self.purge_lock.try_lock()?;
        Some(f())
    }
    fn purged(&self, report: &PurgeReport) {
        self.counters.purges.add(1);
        self.counters.pages_purged.add(report.pages);
    }
    fn purge_waited(&self) {
        self.counters.purge_waits.add(1);
    }
    fn full_purges(&self) -> u64 {
        self.full_purges.load(Relaxed)
    }
    fn full_purge_done(&self) {
        // Release: a CPU that sees the new count also sees the free space the purge filled
        // (it reads it under the free-space lock anyway).
        self.full_purges.fetch_add(1, Release);
    }
}

/// A bad vfree/vunmap: the address and why (already reported and counted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadFree {
    pub addr: u64,
    pub fault: FreeFault,
    pub wrong_kind: bool,
}

impl BadFree {
    pub fn reason(&self) -> &'static str {
        if self.wrong_kind {
            "vfree of a vmap area or vunmap of a vmalloc area"
        } else {
            self.fault.reason()
        }
    }
}

impl Vmalloc {
    /// An allocator over [range_start, range_start + range_bytes) with `layout`.
    pub fn new(layout: Layout, range_start: u64, range_bytes: u64) -> Vmalloc {
        Vmalloc {
            layout,
            range_start,
            range_bytes,
            free: IrqSpinLock::new(FreeSpace::new(range_start, range_start + range_bytes)),
            nodes: (0..layout.nr_nodes)
                .map(|i| {
                    let node = match layout.policy {
                        Policy::Numa => NodeId(i as u16),
                        Policy::Global | Policy::Cpu => NodeId(0),
                    };
                    VmapNodeBox::new(IrqSpinLock::new(VmapNode::new()), node).unwrap_or_else(|| {
                        crate::mm::out_of_memory(format_args!(
                            "vmalloc: no memory on any node for a vmap node"
                        ))
                    })
                })
                .collect(),
            purge_lock: IrqSpinLock::new(()),
            full_purges: AtomicU64::new(0),
            lazy_pages: AtomicU64::new(0),
            page_order: 0,
            counters: Box::default(),
        }
    }

    /// The same allocator with backing pages in blocks of 2^`order` (`vmalloc.page_order`;
    /// clamped to the buddy's largest order).
    pub fn with_page_order(mut self, order: u8) -> Vmalloc {
        self.page_order = order.min(numalab_algo::frame::buddy::MAX_ORDER);
        self
    }

    pub fn contains(&self, addr: VirtAddr) -> bool {
        let addr = addr.as_u64();
        addr >= self.range_start && addr - self.range_start < self.range_bytes
    }

    /// Counters of the global free-space lock.
    pub fn global_lock_stats(&self) -> LockStatsSnapshot {
        self.free.stats.snapshot()
    }

    /// Counters of each vmap node lock, by vmap node.
    pub fn each_node_lock_stats(&self) -> Vec<LockStatsSnapshot> {
        self.nodes.iter().map(|n| n.stats.snapshot()).collect()
    }

    /// The locks as objects with their names, for the trace plugin's c2c table: the global
    /// free-space lock, each vmap node's busy lock, the purge lock, and the shared counters.
    pub fn lock_objects(&self) -> Vec<(&dyn core::any::Any, alloc::string::String)> {
        let mut out: Vec<(&dyn core::any::Any, alloc::string::String)> =
            alloc::vec![(&self.free, "vmalloc global free lock".into())];
        for (i, n) in self.nodes.iter().enumerate() {
            // The lock itself (in its node's block), not the box that points at it.
            let lock: &IrqSpinLock<VmapNode<Busy<AreaMeta>>> = n;
            out.push((lock, alloc::format!("vmap node {i} busy.lock")));
        }
        out.push((&self.purge_lock, "vmalloc purge lock".into()));
        out.push((&*self.counters, "vmalloc counters".into()));
        out
    }

    /// Counters of the purge lock.
    pub fn purge_lock_stats(&self) -> LockStatsSnapshot {
        self.purge_lock.stats.snapshot()
    }

    /// Counters of all vmap node locks together (sums; the longest single wait).
    pub fn node_lock_stats(&self) -> LockStatsSnapshot {
        self.nodes
            .iter()
            .fold(LockStatsSnapshot::default(), |mut a, n| {
                a.add(&n.stats.snapshot());
                a
            })
    }

    /// Allocates `size_bytes` (rounded up to pages) of pages from NUMA node `numa` (or the
    /// calling CPU's memory node), mapped at `align_bytes`, followed by an unmapped guard page.
    pub fn alloc(
        &self,
        size_bytes: u64,
        align_bytes: u64,
        numa: Option<NodeId>,
        zero: bool,
        caller: &'static Location<'static>,
    ) -> Result<VirtAddr, VmError> {
        if size_bytes == 0 {
            return Err(VmError::ZeroSize);
        }
        if size_bytes > self.range_bytes {
            return Err(VmError::TooLarge(size_bytes));
        }
        let nr_pages = size_bytes.div_ceil(PAGE_SIZE);
        let cpu = backing::this_cpu();
        let numa = numa.unwrap_or_else(backing::this_mem_node);
        let planned = Backing::planned(self.page_order, nr_pages);
        let meta = AreaMeta {
            caller,
            nr_pages: nr_pages as u32,
            kind: AreaKind::Vmalloc,
            order: planned.order,
            high_blocks: planned.high_blocks,
        };
        let r = ops::reserve(
            self,
            (nr_pages + 1) * PAGE_SIZE,
            align_bytes,
            cpu,
            numa,
            meta,
        )?;
        self.counters.allocs.add(1);
        if r.from_pool {
            self.counters.pool_allocs.add(1);
        }
        // Fault injection (`fault.vmalloc`): fail halfway, so the half-built area is undone.
        let fail_at =
            crate::fault::should_fail(crate::fault::Point::Vmalloc).then_some(nr_pages / 2);
        let local = backing::this_mem_node();
        let p = match blocks::populate(
            r.start,
            nr_pages,
            self.page_order,
            numa,
            zero,
            fail_at,
            local,
        ) {
            Ok(p) => p,
            Err(stop) => {
                self.counters.buddy_allocs.add(stop.buddy_calls);
                self.release(r, stop.mapped, stop.backing, AreaKind::Vmalloc);
                return Err(VmError::NoMemory);
            }
        };
        if p.backing != planned {
            // The buddy refused a block: record how the pages really came (the free path
            // frees by it).
            let meta = AreaMeta {
                order: p.backing.order,
                high_blocks: p.backing.high_blocks,
                ..meta
            };
            ops::on_node(self, r.vn, |n| {
                if let Some((size, mut busy)) = n.busy_remove(r.start) {
                    busy.meta = meta;
                    n.busy_insert(r.start, size, busy);
                }
            });
        }
        self.counters.buddy_allocs.add(p.buddy_calls);
        self.counters
            .high_order_pages
            .add(p.backing.high_blocks as u64 * (1 << p.backing.order));
        let (n_local, n_remote) = (p.local_pages, p.remote_pages);
        self.counters.local_pages.add(n_local);
        self.counters.remote_pages.add(n_remote);
        Ok(VirtAddr::new(r.start))
    }

    /// Maps the caller's pages `phys` (page-aligned physical addresses) contiguously.
    pub fn vmap(
        &self,
        phys: &[PhysAddr],
        caller: &'static Location<'static>,
    ) -> Result<VirtAddr, VmError> {
        if phys.is_empty() || phys.iter().any(|p| !p.is_page_aligned()) {
            return Err(VmError::BadPages);
        }
        let nr_pages = phys.len() as u64;
        let numa = backing::this_mem_node();
        let meta = AreaMeta {
            caller,
            nr_pages: nr_pages as u32,
            kind: AreaKind::Vmap,
            order: 0,
            high_blocks: 0,
        };
        let cpu = backing::this_cpu();
        let r = ops::reserve(self, (nr_pages + 1) * PAGE_SIZE, PAGE_SIZE, cpu, numa, meta)?;
        self.counters.allocs.add(1);
        // Fault injection (`fault.vmalloc`): fail halfway, as a page table allocation would.
        let fail_at =
            crate::fault::should_fail(crate::fault::Point::Vmalloc).then_some(phys.len() / 2);
        for (i, &p) in phys.iter().enumerate() {
            if fail_at == Some(i) {
                self.release(r, i as u64, Backing::default(), AreaKind::Vmap);
                return Err(VmError::NoMemory);
            }
            // SAFETY: the area was just reserved for us and is unmapped; the caller lends
            // its pages for as long as the mapping lives (vmap's contract).
            if !unsafe { map::map_page(VirtAddr::new(r.start + i as u64 * PAGE_SIZE), p) } {
                self.release(r, i as u64, Backing::default(), AreaKind::Vmap);
                return Err(VmError::NoMemory);
            }
        }
        Ok(VirtAddr::new(r.start))
    }

    /// Undoes a half-built area: unmaps its first `mapped` pages (allocated as `how` says)
    /// and frees the VA lazily.
    fn release(&self, r: Reserved, mapped: u64, how: Backing, kind: AreaKind) {
        let start = r.start;
        // SAFETY: we own the half-built area (nobody else has its address); its first
        // `mapped` pages are mapped as `how` says, whole blocks first (blocks::populate).
        let calls = unsafe { blocks::unmap_free(start, mapped, how, kind == AreaKind::Vmalloc) };
        self.counters.buddy_frees.add(calls);
        let detached = ops::on_node(self, r.vn, |n| n.busy_remove(start));
        if let Some((size, _)) = detached {
            self.queue(r.lazy_vn, start, size);
        }
    }

    fn queue(&self, vn: VnId, start: u64, size_bytes: u64) {
        if let Some(scope) = ops::queue_lazy(self, vn, start, size_bytes) {
            self.purge(scope, false);
        }
    }

    /// Frees the area starting at `addr`: unmaps it, frees its pages (vmalloc areas) and
    /// queues the virtual range for a lazy purge. A bad address is returned as `BadFree`.
    pub fn free(&self, addr: VirtAddr, kind: AreaKind) -> Result<(), BadFree> {
        let addr = addr.as_u64();
        let hint = backing::this_mem_node();
        let d = match ops::detach(self, addr, self.range_start, hint) {
            Ok(d) => d,
            Err(fault) => {
                self.counters.bad_frees.add(1);
                return Err(BadFree {
                    addr,
                    fault,
                    wrong_kind: false,
                });
            }
        };
        let (size, meta) = (d.size_bytes, d.meta);
        if meta.kind != kind {
            let busy = Busy {
                lazy_vn: d.lazy_vn,
                meta,
            };
            ops::on_node(self, d.busy_vn, |n| n.busy_insert(addr, size, busy));
            self.counters.bad_frees.add(1);
            return Err(BadFree {
                addr,
                fault: FreeFault::InsideArea { start: addr },
                wrong_kind: true,
            });
        }
        // SAFETY: the area left its busy tree above, so we are its only owner; vfree's
        // contract is that nobody accesses it any more; all its pages are mapped as its
        // meta's backing says. Other CPUs may hold stale TLB entries until the purge (Linux's
        // lazy vfree trade).
        let calls = unsafe {
            blocks::unmap_free(
                addr,
                meta.nr_pages as u64,
                meta.backing(),
                kind == AreaKind::Vmalloc,
            )
        };
        self.counters.buddy_frees.add(calls);
        probe::record_free(addr, addr + size, meta.caller);
        self.counters.frees.add(1);
        self.queue(d.lazy_vn, addr, size);
        Ok(())
    }

    /// Purges the lazy lists of `scope` (one TLB shootdown); `full` also empties the pools.
    pub fn purge(&self, scope: Scope, full: bool) -> PurgeReport {
        ops::purge(self, scope, full)
    }

    /// Lazy pages of all nodes together.
    pub fn lazy_pages(&self) -> u64 {
        self.lazy_pages.load(Relaxed)
    }

    /// Counts of every vmap node.
    pub fn node_counts(&self) -> Vec<NodeCounts> {
        self.nodes.iter().map(|n| n.lock().counts()).collect()
    }

    /// (free bytes, free blocks, whole range free) of the free space.
    pub fn free_space_state(&self) -> (u64, usize, bool) {
        let fs = self.free.lock();
        (fs.free_bytes(), fs.nr_blocks(), fs.is_all_free())
    }

    /// Live areas (start, size with guard, meta) in address order, copied out of the locks.
    pub fn busy_areas(&self) -> Vec<(u64, u64, AreaMeta)> {
        let mut out = Vec::new();
        for vn in 0..self.layout.nr_nodes {
            let mut tmp = Vec::new();
            ops::on_node(self, VnId(vn as u16), |n| {
                n.busy_for_each(|s, z, b| tmp.push((s, z, b.meta)))
            });
            out.append(&mut tmp);
        }
        out.sort_unstable_by_key(|a| a.0);
        out
    }

    /// Pool lengths per node: (vmap node, nr_pages, areas).
    pub fn pool_lengths(&self) -> Vec<(u16, u64, u64)> {
        let mut out = Vec::new();
        for vn in 0..self.layout.nr_nodes {
            let mut tmp = Vec::new();
            self.nodes[vn]
                .lock()
                .pool_lengths(|p, n| tmp.push((vn as u16, p, n)));
            out.append(&mut tmp);
        }
        out
    }

    pub fn policy(&self) -> Policy {
        self.layout.policy
    }
}

// The busy tree's per-area record keeps its size (8 more bytes cost every pair).
const _: () = assert!(core::mem::size_of::<AreaMeta>() == 16);
