//! The page frame allocator: one buddy allocator per NUMA node with memory, per-CPU page
//! lists in front of them, and allocation policies that fall back by SLIT distance.
//!
//! Lock order (outermost first): the caller's locks (SLUB list_lock, vmalloc locks) > one node
//! lock (`Node::buddy`) at a time > the serial console lock (never taken while a node lock is
//! held: warnings are printed after unlocking). Per-CPU lists take no lock: whoever holds a
//! list's claim (one compare-exchange on its busy bit, see pcp.rs: the owner CPU, or another
//! CPU draining it) changes it, and takes the node lock inside to refill or drain.
//!
//! Layering: `numalab_algo::frame::buddy` (pure split/merge) <- `node` (memmap, node lock) <- `pcp`
//! (per-CPU lists) <- this module (policies, `Pages`, counters) <- `crate::mm::heap`.

mod build;
mod chain;
mod holders;
mod lookup;
mod memmap;
mod node;
mod pages;
mod pages_mem;
mod pcp;
mod stats;
#[cfg(feature = "ktest")]
mod tests;
mod vmemmap;
#[cfg(feature = "ktest")]
mod vmemmap_tests;

use crate::percpu::PerCpuBox;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use numalab_algo::frame::nodemap::NodeMap;
use numalab_algo::page::{Pfn, PhysAddr, VirtAddr};
use numalab_algo::topology::{CpuId, NodeId, Topology};
use spin::Once;

pub use build::init;
pub use chain::PageChain;
pub use holders::{held_bytes_on as holders_held_bytes_on, register_holder, PageHolder};
pub use lookup::{node_base_pfn, node_of_phys, page_meta, page_owner, page_owner_fast};
pub use memmap::PageMeta;
pub use node::{PAGE_SHIFT, PAGE_SIZE};
pub use numalab_algo::frame::buddy::MAX_ORDER;
pub use pages::Pages;
use pages::*;
pub use stats::{buddyinfo_lines, numastat_lines, pcp_lines, NodeCounters};

use node::{Node, NodeSkip};
use pcp::{bump, PcpList, PCP_MAX_ORDER};

/// Where an allocation may come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// The calling CPU's nearest memory node, then by distance (the default).
    Local,
    /// The given node, then by distance from it.
    Preferred(NodeId),
    /// The given node only.
    Bind(NodeId),
    /// Round-robin over the memory nodes (per CPU), then by distance.
    Interleave,
}

/// Why an allocation failed. Never a panic: callers decide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocError {
    /// Every node the policy allows is out of blocks of this order.
    OutOfMemory,
    /// Order above MAX_ORDER.
    BadOrder(u8),
    /// The policy names a node that does not exist, or (Bind) has no memory.
    BadNode(NodeId),
    /// Called before `init`, or from a CPU the topology does not list.
    NotReady,
}

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllocError::OutOfMemory => write!(f, "out of memory"),
            AllocError::BadOrder(o) => write!(f, "order {} above {}", o, MAX_ORDER),
            AllocError::BadNode(n) => write!(f, "node {} has no memory or does not exist", n.0),
            AllocError::NotReady => write!(f, "frame allocator not ready"),
        }
    }
}

/// Per-CPU policy data, fixed at init: run-time per-CPU data (`FrameAllocator::cpus`), each
/// CPU's copy on its memory node.
struct CpuCtx {
    node: NodeId,
    mem_node: NodeId,
    /// This CPU's list for its nearest memory node (the allocation fast path's list).
    local: &'static PcpList,
    /// This CPU's lists by node, one per node (build.rs, `pcp_row_on`: in its memory node's
    /// memory).
    lists: &'static [PcpList],
    /// `lists` up to `NODE_CODE_REFUSED` of them (the free fast path).
    row: &'static [PcpList],
    fallback: &'static [NodeId],
    interleave_next: AtomicU32,
}

struct FrameAllocator {
    topo: &'static Topology,
    nr_nodes: usize,
    /// Indexed by NodeId; None for nodes without memory.
    nodes: Vec<Option<Node>>,
    /// Per CPU: its policy data and its lists (percpu's run-time per-CPU data).
    cpus: PerCpuBox<CpuCtx>,
    mem_nodes: Vec<NodeId>,
    /// Which node manages a page: every node's managed ranges (not its span: another node's
    /// memory may lie between a node's ranges).
    node_map: NodeMap,
    pcp_enabled: bool,
    pcp_batch_pages: u32,
    /// Frees of addresses outside every node.
    stray_frees: AtomicU64,
}

static FRAME: Once<FrameAllocator> = Once::new();

/// Whether `init` has run (the heap routes large allocations here from then on).
#[inline]
pub fn is_ready() -> bool {
    FRAME.get().is_some()
}

/// The node of a block no node manages.
const NOT_MANAGED: NodeId = NodeId(u16::MAX);

#[cold]
fn report_unaligned(phys: PhysAddr, order: u8) {
    match node_of_phys(phys).and_then(|n| FRAME.get()?.nodes.get(n.index())?.as_ref()) {
        Some(node) => node.count_invalid_free(),
        None => {
            if let Some(fa) = FRAME.get() {
                fa.stray_frees.fetch_add(1, Relaxed);
            }
        }
    }
    warn!(
        "frame: invalid free of {:#x} order {}: not page aligned or order above {}: dropped",
        phys, order, MAX_ORDER
    );
}

/// Virtual address of `phys` in the direct map (arch/x86_64/direct_map.rs).
pub use crate::arch::direct_map::phys_to_virt;

/// Physical address of a direct-map address of a page this allocator handed out (its
/// `Pages`, a memmap entry): such an address is never below the direct map.
#[inline]
pub fn virt_to_phys(virt: VirtAddr) -> PhysAddr {
    crate::arch::direct_map::virt_to_phys_unchecked(virt)
}

/// Allocates 2^order pages under `policy`. The fast path (Local, orders 0..=3, a block on
/// the CPU's list for its nearest memory node) is inlined; the rest is `alloc_slow`.
#[inline(always)]
pub fn alloc_pages(order: u8, policy: Policy) -> Result<Pages, AllocError> {
    if crate::fault::should_fail(crate::fault::Point::PageAlloc) {
        return Err(AllocError::OutOfMemory); // fault.page_alloc (crate::fault)
    }
    if policy == Policy::Local && order <= PCP_MAX_ORDER {
        if let Some(fa) = FRAME.get() {
            let pin = crate::percpu::pin();
            let list = fa.cpus.get_with(&pin).local;
            if let Some(pages) = list.enter() {
                if let Some((raw, pages)) = list.pop_raw(pages, order) {
                    bump(&list.stats.fast_hits);
                    list.exit(pages);
                    return Ok(Pages {
                        raw: raw | (order as u64) << ORDER_SHIFT,
                    });
                }
                list.exit(pages);
            }
        }
    }
    alloc_slow(order, policy)
}

#[inline(never)]
fn alloc_slow(order: u8, policy: Policy) -> Result<Pages, AllocError> {
    let Some(fa) = FRAME.get() else {
        return Err(AllocError::NotReady);
    };
    fa.alloc(order, policy)
}

/// Frees a block (the `Drop` of `Pages`). Fast path: order 0 onto the calling CPU's list
/// for the block's node (the order known, its constants fold); orders 1..=3 take the same
/// path out of line; the rest (and invalid frees, which are reported, counted and dropped)
/// is `free_slow`.
#[inline(always)]
fn free_block(raw: u64) {
    if raw & (0xf << ORDER_SHIFT) == 0 {
        if !free_to_pcp(raw, 0) {
            free_slow(raw);
        }
    } else {
        free_small_order(raw);
    }
}

#[inline(never)]
fn free_small_order(raw: u64) {
    let order = ((raw >> ORDER_SHIFT) & 0xf) as u8;
    if order > PCP_MAX_ORDER || !free_to_pcp(raw, order) {
        free_slow(raw);
    }
}

/// Puts the block `raw` of `order` (at most PCP_MAX_ORDER) on this CPU's list for its node;
/// false when the list cannot take it (not ready, busy, or a node code without a list).
#[inline(always)]
fn free_to_pcp(raw: u64, order: u8) -> bool {
    let code = ((raw >> NODE_CODE_SHIFT) & NODE_CODE_MASK) as usize;
    let Some(fa) = FRAME.get() else { return false };
    let pin = crate::percpu::pin();
    let ctx = fa.cpus.get_with(&pin);
    // Codes REFUSED and LOOKUP are beyond `row`: they take the slow path.
    let Some(list) = ctx.row.get(code) else {
        return false;
    };
    let Some(pages) = list.enter() else {
        return false;
    };
    match list.push(pages, raw >> PAGE_SHIFT, order) {
        Some(new_pages) if new_pages <= list.high_pages => list.exit(new_pages),
        outcome => fa.push_over_high(list, raw, pages, outcome),
    }
    true
}

#[inline(never)]
fn free_slow(raw: u64) {
    let Some(fa) = FRAME.get() else { return };
    let code = (raw >> NODE_CODE_SHIFT) & NODE_CODE_MASK;
    if code == NODE_CODE_REFUSED {
        return;
    }
    let pages = core::mem::ManuallyDrop::new(Pages { raw });
    fa.free(pages.phys_addr(), pages.order(), pages.node());
}

impl FrameAllocator {
    /// CPU `cpu`'s list for `node`.
    #[inline(always)]
    fn pcp(&self, cpu: CpuId, node: NodeId) -> &PcpList {
        &self.cpus.on(cpu).lists[node.index()]
    }

    /// The CPUs with lists (the topology's).
    fn cpu_ids(&self) -> impl Iterator<Item = CpuId> {
        (0..self.cpus.len()).map(|c| CpuId(c as u16))
    }

    #[inline]
    fn alloc(&self, order: u8, policy: Policy) -> Result<Pages, AllocError> {
        if order > MAX_ORDER {
            return Err(AllocError::BadOrder(order));
        }
        let pin = crate::percpu::pin();
        let ctx = self.cpus.get_with(&pin);
        let (preferred, list): (NodeId, &[NodeId]) = match policy {
            Policy::Local => (ctx.mem_node, ctx.fallback),
            Policy::Preferred(n) => {
                if n.index() >= self.nr_nodes {
                    return Err(AllocError::BadNode(n));
                }
                (self.topo.mem_node(n), self.topo.fallback_order(n))
            }
            Policy::Bind(n) => match self.nodes.get(n.index()) {
                Some(Some(node)) => (n, core::slice::from_ref(&node.id)),
                _ => return Err(AllocError::BadNode(n)),
            },
            Policy::Interleave => {
                if self.mem_nodes.is_empty() {
                    return Err(AllocError::OutOfMemory);
                }
                let i = ctx.interleave_next.load(Relaxed);
                ctx.interleave_next.store(i.wrapping_add(1), Relaxed);
                let n = self.mem_nodes[i as usize % self.mem_nodes.len()];
                (n, self.topo.fallback_order(n))
            }
        };
        for attempt in 0..2 {
            for &nid in list {
                if let Some(pfn) = self.alloc_on(ctx, nid, order) {
                    self.account(ctx, preferred, nid, policy);
                    return Ok(Pages::new(Pfn::new(pfn).addr(), order, nid));
                }
            }
            // Slow path: give every CPU's cached pages back (they may merge into a block of
            // this order; Linux's drain_all_pages before giving up) and try once more. Each
            // list is drained under its claim, legal with interrupts off and locks held.
            if attempt == 0 && self.drain_every_cpu() == 0 {
                break;
            }
        }
        Err(AllocError::OutOfMemory)
    }

    /// One node: its per-CPU list, else its buddy.
    #[inline(always)]
    fn alloc_on(&self, ctx: &CpuCtx, nid: NodeId, order: u8) -> Option<u64> {
        let node = self.nodes.get(nid.index())?.as_ref()?;
        if self.pcp_enabled && order <= PCP_MAX_ORDER {
            let list = &ctx.lists[nid.index()];
            if let Some(pages) = list.enter() {
                let (pfn, pages) = match list.pop(pages, order) {
                    Some((pfn, pages)) => {
                        bump(&list.stats.pcp_hit);
                        (Some(pfn), pages)
                    }
                    None => pcp::refill(list, node, order, self.pcp_batch_pages, pages),
                };
                list.exit(pages);
                pfn
            } else {
                node.buddy.lock().alloc(order)
            }
        } else {
            node.buddy.lock().alloc(order)
        }
    }

    /// numastat accounting, as Linux's zone_statistics does it.
    #[inline(always)]
    fn account(&self, ctx: &CpuCtx, preferred: NodeId, got: NodeId, policy: Policy) {
        let cpu_node = ctx.node;
        let s = &ctx.lists[got.index()].stats;
        if got == preferred {
            bump(&s.numa_hit);
            if policy == Policy::Interleave {
                bump(&s.interleave_hit);
            }
        } else {
            bump(&s.numa_miss);
            bump(&ctx.lists[preferred.index()].stats.numa_foreign);
        }
        bump(if got == cpu_node {
            &s.local_node
        } else {
            &s.other_node
        });
    }

    #[inline]
    fn free(&self, phys: PhysAddr, order: u8, nid: NodeId) {
        let Some(Some(node)) = self.nodes.get(nid.index()) else {
            self.stray_frees.fetch_add(1, Relaxed);
            warn!(
                "frame: free of {:#x} order {} outside every node: dropped",
                phys, order
            );
            return;
        };
        if !phys.is_page_aligned() {
            node.count_invalid_free();
            warn!(
                "frame: invalid free of {:#x} order {} on node {}: not page aligned: dropped",
                phys, order, nid.0
            );
            return;
        }
        let pfn = phys.pfn().as_u64();
        let result = node.buddy.lock().free(pfn, order);
        if let Err(why) = result {
            node.count_invalid_free();
            warn!(
                "frame: invalid free of {:#x} order {} on node {}: {}: dropped",
                phys, order, nid.0, why
            );
        }
    }

    /// A push that did not end under `high` (list entered, `pages` before the push): drain a
    /// batch, or, for a refused block, leave the list as it was and report the free.
    #[cold]
    #[inline(never)]
    fn push_over_high(&self, list: &PcpList, raw: u64, pages: u32, outcome: Option<u32>) {
        let code = ((raw >> NODE_CODE_SHIFT) & NODE_CODE_MASK) as u16;
        let order = ((raw >> ORDER_SHIFT) & 0xf) as u8;
        match outcome {
            Some(new_pages) => list.exit(self.drain_batch(list, NodeId(code), order, new_pages)),
            None => {
                list.exit(pages);
                let phys = PhysAddr::new(raw).page_align_down();
                let state = page_meta(phys).map_or(0, |m| m.state());
                self.report_invalid(phys, order, NodeId(code), state);
            }
        }
    }

    /// A push went over `high`: give a batch back (owner CPU, list entered); returns the new
    /// page count.
    #[inline(never)]
    fn drain_batch(&self, list: &PcpList, nid: NodeId, order: u8, pages: u32) -> u32 {
        match self.nodes.get(nid.index()) {
            Some(Some(node)) => pcp::drain(list, node, order, self.pcp_batch_pages, pages).1,
            _ => pages,
        }
    }

    /// A free the per-CPU list refused: count it and say why (after interrupts are back on;
    /// no lock is held while printing).
    #[cold]
    #[inline(never)]
    fn report_invalid(&self, phys: PhysAddr, order: u8, nid: NodeId, state: u8) {
        let Some(Some(node)) = self.nodes.get(nid.index()) else {
            self.stray_frees.fetch_add(1, Relaxed);
            warn!(
                "frame: free of {:#x} order {} outside every node: dropped",
                phys, order
            );
            return;
        };
        node.count_invalid_free();
        let why = match node
            .buddy
            .lock()
            .check_free(phys.pfn().as_u64(), order, false)
        {
            Err(e) => e,
            Ok(_) => numalab_algo::frame::buddy::FreeError::NotAllocated(state),
        };
        warn!(
            "frame: invalid free of {:#x} order {} on node {}: {}: dropped",
            phys, order, nid.0, why
        );
    }

    /// Gives all of `cpu`'s listed pages back to their buddies, each list under its claim:
    /// from any CPU and any context. On `cpu` itself a claimed list is skipped at once (we
    /// interrupted its owner: waiting would never end); another CPU's claimed list is waited
    /// for, boundedly (`PcpList::claim`). Returns the pages given back.
    fn drain_cpu(&self, cpu: CpuId) -> u32 {
        let me = crate::percpu::cpu_id() == cpu;
        let mut drained = 0;
        for node in self.nodes.iter().flatten() {
            let list = self.pcp(cpu, node.id);
            if list.pages() == 0 {
                continue;
            }
            let claimed = if me { list.enter() } else { list.claim() };
            if let Some(pages) = claimed {
                let (n, pages) = pcp::drain(list, node, 0, u32::MAX, pages);
                drained += n;
                list.exit(pages);
            }
        }
        drained
    }

    /// `drain_cpu` for every CPU, the caller's first. Returns the pages given back.
    fn drain_every_cpu(&self) -> u32 {
        let me = crate::percpu::cpu_id();
        let mut drained = if self.cpus.get(me).is_some() {
            self.drain_cpu(me)
        } else {
            0
        };
        for cpu in self.cpu_ids().filter(|&c| c != me) {
            drained += self.drain_cpu(cpu);
        }
        drained
    }
}

/// Drains every CPU's per-CPU lists (Linux's drain_all_pages) from the calling CPU, each
/// list under its claim (no cross-CPU call: legal with interrupts off or locks held). Returns
/// the pages given back.
pub fn drain_all() -> u32 {
    let Some(fa) = FRAME.get() else { return 0 };
    fa.drain_every_cpu()
}

/// Pages managed by `node` (0 for a node without memory).
pub fn total_bytes(node: NodeId) -> u64 {
    node_counters(node).map_or(0, |c| c.managed_pages as u64 * PAGE_SIZE)
}

/// Free pages of `node`: in its buddy plus on per-CPU lists.
pub fn free_bytes(node: NodeId) -> u64 {
    node_counters(node).map_or(0, |c| (c.buddy_free_pages + c.pcp_pages) as u64 * PAGE_SIZE)
}

/// For conservation checks: drains every CPU's per-CPU lists, checks every node (free lists,
/// ranges, counters), and returns per node (indexed by NodeId) its free bytes plus the bytes
/// the registered page holders keep on it (SLUB, the heap's pages, vmalloc's page tables).
/// Only a leak (a block never freed, or a free refused as invalid) or an unregistered holder
/// changes the figure across a test that gives back what it took. Not while other CPUs
/// allocate.
pub fn settled_bytes() -> Result<Vec<u64>, String> {
    let topo = crate::topology::get();
    // Allocated before the drain: a heap allocation after it could refill a per-CPU list.
    let mut settled = Vec::with_capacity(topo.nr_nodes());
    drain_all();
    for info in &topo.nodes {
        let c = stats::check_node(info.id)?;
        if c.cached_pages != 0 {
            return Err(alloc::format!(
                "node {}: {} pages cached after drain_all",
                info.id.0,
                c.cached_pages
            ));
        }
        // Pages a holder took meanwhile (kmalloc or heap pages behind Vec and Box) count.
        settled.push(free_bytes(info.id) + holders_held_bytes_on(info.id));
    }
    Ok(settled)
}

/// The counters of `node`'s buddy lock, Linux's `&zone->lock` (None without memory or before
/// init).
pub fn zone_lock_stats(node: NodeId) -> Option<crate::sync::LockStatsSnapshot> {
    let fa = FRAME.get()?;
    let n = fa.nodes.get(node.index())?.as_ref()?;
    Some(n.buddy.stats.snapshot())
}

/// The counters of one node (None without memory or before init).
pub fn node_counters(node: NodeId) -> Option<NodeCounters> {
    let fa = FRAME.get()?;
    let n = fa.nodes.get(node.index())?.as_ref()?;
    Some(stats::collect(fa, n))
}
