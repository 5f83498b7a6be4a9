//! Per-CPU page lists (Linux's per_cpu_pages): for each (CPU, node with memory) pair, a stack
//! of free blocks of orders 0..=PCP_MAX_ORDER linked through the memmap, refilled from and
//! drained to the node's buddy in batches under the node lock.
//!
//! Ownership rule: a CPU's lists are changed only by that CPU with interrupts disabled, or by
//! another CPU while the owner is not running (before SMP bring-up). Draining another CPU's
//! lists therefore goes through a cross-CPU call. The fields are atomics used with plain
//! loads and stores (no read-modify-write: the owner is the only writer), so the counters
//! can be read from anywhere.

use super::node::Node;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use numalab_algo::buddy::{ALLOCATED, CACHED, NIL};

/// Highest order kept on per-CPU lists (Linux keeps 0..=3 as well).
pub const PCP_MAX_ORDER: u8 = 3;
const PCP_ORDERS: usize = PCP_MAX_ORDER as usize + 1;

/// Counters of one (CPU, node) pair; numastat and pcp figures are sums over CPUs.
#[derive(Default)]
pub struct PcpStats {
    /// Allocated on this node, which the policy preferred.
    pub numa_hit: AtomicU64,
    /// Allocated on this node, which the policy did not prefer.
    pub numa_miss: AtomicU64,
    /// The policy preferred this node, the pages came from another.
    pub numa_foreign: AtomicU64,
    /// Interleave allocations that landed on the node interleave chose.
    pub interleave_hit: AtomicU64,
    /// Allocated on this node by a CPU of this node.
    pub local_node: AtomicU64,
    /// Allocated on this node by a CPU of another node.
    pub other_node: AtomicU64,
    /// Allocations served from the per-CPU list.
    pub pcp_hit: AtomicU64,
    /// Batches taken from the buddy into the list.
    pub pcp_refill: AtomicU64,
    /// Batches given back from the list to the buddy.
    pub pcp_drain: AtomicU64,
}

/// `c += 1` for a counter only its owner CPU writes.
#[inline(always)]
pub fn bump(c: &AtomicU64) {
    c.store(c.load(Relaxed).wrapping_add(1), Relaxed);
}

/// The lists of one CPU for one node.
pub struct PcpList {
    heads: [AtomicU32; PCP_ORDERS],
    blocks: [AtomicU32; PCP_ORDERS],
    /// Pages held, all orders.
    pages: AtomicU32,
    pub stats: PcpStats,
}

/// What a push found (reported by the caller once interrupts are back on).
pub enum PushOutcome {
    Ok,
    /// Over `high`: the caller drains a batch.
    OverHigh,
    /// Not the head of an allocated block of this order (state byte).
    Invalid(u8),
}

impl PcpList {
    pub fn new() -> PcpList {
        PcpList {
            heads: [const { AtomicU32::new(NIL) }; PCP_ORDERS],
            blocks: [const { AtomicU32::new(0) }; PCP_ORDERS],
            pages: AtomicU32::new(0),
            stats: PcpStats::default(),
        }
    }

    /// Pages this list holds (all orders).
    pub fn pages(&self) -> u32 {
        self.pages.load(Relaxed)
    }

    /// Takes a block of `order` off the list (owner CPU, interrupts off).
    #[inline(always)]
    pub fn pop(&self, node: &Node, order: u8) -> Option<u64> {
        let head = &self.heads[order as usize];
        let idx = head.load(Relaxed);
        let meta = node.memmap.pages.get(idx as usize)?;
        head.store(meta.next.load(Relaxed), Relaxed);
        let blocks = &self.blocks[order as usize];
        blocks.store(blocks.load(Relaxed) - 1, Relaxed);
        self.pages
            .store(self.pages.load(Relaxed) - (1 << order), Relaxed);
        meta.state.store(ALLOCATED | order, Relaxed);
        bump(&self.stats.pcp_hit);
        Some(node.base_pfn + idx as u64)
    }

    /// Puts an allocated block of `order` at `pfn` (in `node`'s span) on the list.
    #[inline(always)]
    pub fn push(&self, node: &Node, pfn: u64, order: u8, high_pages: u32) -> PushOutcome {
        let idx = pfn.wrapping_sub(node.base_pfn);
        let Some(meta) = node.memmap.pages.get(idx as usize) else {
            return PushOutcome::Invalid(0);
        };
        let state = meta.state.load(Relaxed);
        if state != ALLOCATED | order {
            return PushOutcome::Invalid(state);
        }
        meta.state.store(CACHED | order, Relaxed);
        let head = &self.heads[order as usize];
        meta.next.store(head.load(Relaxed), Relaxed);
        head.store(idx as u32, Relaxed);
        let blocks = &self.blocks[order as usize];
        blocks.store(blocks.load(Relaxed) + 1, Relaxed);
        let pages = self.pages.load(Relaxed) + (1 << order);
        self.pages.store(pages, Relaxed);
        if pages > high_pages {
            PushOutcome::OverHigh
        } else {
            PushOutcome::Ok
        }
    }

    /// Takes `batch_pages` worth of `order` blocks from the node's buddy (one lock hold): one
    /// is returned allocated, the rest go on the list. None when the node has no such block.
    pub fn refill(&self, node: &Node, order: u8, batch_pages: u32) -> Option<u64> {
        let nr_blocks = (batch_pages >> order).max(1);
        let mut buddy = node.buddy.lock();
        let first = buddy.alloc(order)?;
        let head = &self.heads[order as usize];
        let mut added = 0u32;
        for _ in 1..nr_blocks {
            let Some(pfn) = buddy.alloc(order) else { break };
            buddy.set_cached(pfn, order, true);
            let idx = (pfn - node.base_pfn) as u32;
            node.memmap.pages[idx as usize]
                .next
                .store(head.load(Relaxed), Relaxed);
            head.store(idx, Relaxed);
            added += 1;
        }
        drop(buddy);
        let blocks = &self.blocks[order as usize];
        blocks.store(blocks.load(Relaxed) + added, Relaxed);
        self.pages
            .store(self.pages.load(Relaxed) + (added << order), Relaxed);
        bump(&self.stats.pcp_refill);
        Some(first)
    }

    /// Gives at least `nr_pages` pages back to the buddy (one lock hold), from `first_order`'s
    /// list first, then the others. Returns the pages given back.
    pub fn drain(&self, node: &Node, first_order: u8, nr_pages: u32) -> u32 {
        if self.pages.load(Relaxed) == 0 {
            return 0;
        }
        let mut drained = 0u32;
        let mut buddy = node.buddy.lock();
        for k in 0..PCP_ORDERS {
            let order = ((first_order as usize + k) % PCP_ORDERS) as u8;
            let head = &self.heads[order as usize];
            let blocks = &self.blocks[order as usize];
            while drained < nr_pages {
                let idx = head.load(Relaxed);
                let Some(meta) = node.memmap.pages.get(idx as usize) else {
                    break;
                };
                head.store(meta.next.load(Relaxed), Relaxed);
                blocks.store(blocks.load(Relaxed) - 1, Relaxed);
                // Cannot fail: every block on the list is marked CACHED | order by push or
                // refill; a failure would be a bug, and leaking the block is then the safe side.
                let _ = buddy.free_cached(node.base_pfn + idx as u64, order);
                drained += 1 << order;
            }
        }
        drop(buddy);
        self.pages
            .store(self.pages.load(Relaxed).saturating_sub(drained), Relaxed);
        bump(&self.stats.pcp_drain);
        drained
    }
}
