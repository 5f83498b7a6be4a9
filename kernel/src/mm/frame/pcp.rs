//! Per-CPU page lists (Linux's per_cpu_pages): for each (CPU, node with memory) pair, a stack
//! of free blocks of orders 0..=PCP_MAX_ORDER linked through the memmap, refilled from and
//! drained to the node's buddy in batches under the node lock.
//!
//! Claim rule: a list is changed only by whoever holds its claim, the `BUSY` bit of its count
//! word, taken in one atomic step (a compare-exchange: Linux 6.1's pcp spin_trylock idea).
//! The owner CPU tries once (`enter`): if the bit is set, either one of its own interrupt
//! handlers interrupted it mid-operation or another CPU is draining the list, and it goes to
//! the buddy allocator instead, so no interrupt masking is needed and nothing spins on the
//! fast paths. Another CPU drains a list remotely (`claim`, a bounded spin: the holder's
//! operation is short and waits on nothing but a node lock), which is legal in any context,
//! interrupts off and caller's locks held included; that is how `drain_all` and the
//! allocation slow path empty every CPU's lists (no cross-CPU call, which would deadlock with
//! a CPU spinning on a lock the caller holds). Claim and release are acquire and release, so
//! the next holder sees the list as the last one left it. The block's state byte moves from
//! allocated to cached with a compare-exchange (`push`), so two CPUs freeing the same block
//! at once cannot both put it on a list: one wins, the other's free is refused as invalid.
//! The counters are atomics written with plain loads and stores by the claim holder (or the
//! owner CPU), so they can be read from anywhere.

use super::memmap::PageMeta;
use super::node::Node;
use core::sync::atomic::Ordering::Relaxed;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

const _: () = assert!(core::mem::size_of::<PcpList>().is_power_of_two());
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
    /// Local-policy allocations served by the fast path from this (the CPU's nearest memory
    /// node's) list: each is also a numa_hit, a pcp_hit and a local_node (or other_node, for a
    /// CPU of a memoryless node), added when the counters are read.
    pub fast_hits: AtomicU64,
}

/// `c += 1` for a counter only its owner CPU writes.
#[inline(always)]
pub fn bump(c: &AtomicU64) {
    c.store(c.load(Relaxed).wrapping_add(1), Relaxed);
}

/// The lists of one CPU for one node. It carries a copy of its node's memmap slice and base
/// pfn so the fast paths touch nothing else. Cache-line aligned (no false sharing between
/// CPUs) and a power of two in size (indexing is one shift).
#[repr(align(128))]
pub struct PcpList {
    heads: [AtomicU32; PCP_ORDERS],
    /// Pages held (all orders), with `BUSY` set while the owner changes the list.
    word: AtomicU32,
    /// Above this many pages a free drains a batch (0: lists disabled, every free drains).
    pub high_pages: u32,
    base_pfn: u64,
    /// `Pages` word of the node's first pfn: base_pfn << 12 | the node's code bits.
    base_raw: u64,
    memmap: &'static [PageMeta],
    pub stats: PcpStats,
}

/// The bit of `PcpList::word` that says an operation is in progress (the claim).
const BUSY: u32 = 1 << 31;

/// How many times a remote drain tries a claimed list before giving up on it.
const CLAIM_SPINS: u32 = 1 << 20;

impl PcpList {
    /// The list of one CPU for `node` (None: a node without memory, never used).
    pub fn new(node: Option<&Node>, high_pages: u32, node_bits: u64) -> PcpList {
        let base_pfn = node.map_or(0, |n| n.base_pfn);
        PcpList {
            base_raw: base_pfn << super::PAGE_SHIFT | node_bits,
            heads: [const { AtomicU32::new(NIL) }; PCP_ORDERS],
            word: AtomicU32::new(0),
            high_pages,
            base_pfn,
            memmap: node.map_or(&[], |n| n.memmap.pages),
            stats: PcpStats::default(),
        }
    }

    /// Pages this list holds (all orders).
    pub fn pages(&self) -> u32 {
        self.word.load(Relaxed) & !BUSY
    }

    /// Claims the list for an operation (one compare-exchange) and returns its page count;
    /// None when it is claimed already (we are an interrupt handler that interrupted its
    /// owner, or another CPU is draining it): use the buddy then. `exit` ends the operation
    /// with the new count.
    #[inline(always)]
    pub fn enter(&self) -> Option<u32> {
        let word = self.word.load(Relaxed);
        if word & BUSY != 0 {
            return None;
        }
        self.word
            .compare_exchange(word, word | BUSY, Ordering::Acquire, Relaxed)
            .ok()
    }

    /// `enter` for a CPU that is not the owner (a remote drain): retries while the claim is
    /// held, at most `CLAIM_SPINS` times (the holder's operation is short; the bound keeps an
    /// interrupt handler that would wait for the operation it interrupted from hanging).
    /// None when the list stayed claimed.
    pub fn claim(&self) -> Option<u32> {
        for _ in 0..CLAIM_SPINS {
            if let Some(pages) = self.enter() {
                return Some(pages);
            }
            core::hint::spin_loop();
        }
        None
    }

    /// Ends what `enter` began, storing the new page count (and releasing the claim).
    #[inline(always)]
    pub fn exit(&self, pages: u32) {
        self.word.store(pages, Ordering::Release);
    }

    /// Takes a block of `order` off the list (between enter and exit); returns its pfn and
    /// the new page count. Counts nothing: the caller accounts the hit.
    #[inline(always)]
    pub fn pop(&self, pages: u32, order: u8) -> Option<(u64, u32)> {
        let (raw, pages) = self.pop_raw(pages, order)?;
        Some((raw >> super::PAGE_SHIFT, pages))
    }

    /// `pop`, returning the block's `Pages` word without the order bits.
    #[inline(always)]
    pub fn pop_raw(&self, pages: u32, order: u8) -> Option<(u64, u32)> {
        let head = &self.heads[order as usize];
        let idx = head.load(Relaxed);
        let meta = self.memmap.get(idx as usize)?;
        head.store(meta.next.load(Relaxed), Relaxed);
        meta.state.store(ALLOCATED | order, Relaxed);
        Some((
            self.base_raw + ((idx as u64) << super::PAGE_SHIFT),
            pages - (1 << order),
        ))
    }

    /// Puts the allocated block of `order` at `pfn` on the list (between enter and exit);
    /// returns the new page count, or None when the block is not the
    /// head of an allocated block of this order or lies outside the node: nothing changed.
    /// The state moves from allocated to cached in one compare-exchange: of two CPUs freeing
    /// the same block at once (or one here and one in the buddy, which does the same), only
    /// one wins.
    #[inline(always)]
    pub fn push(&self, pages: u32, pfn: u64, order: u8) -> Option<u32> {
        let idx = pfn.wrapping_sub(self.base_pfn);
        let meta = self.memmap.get(idx as usize)?;
        meta.state
            .compare_exchange(ALLOCATED | order, CACHED | order, Relaxed, Relaxed)
            .ok()?;
        let head = &self.heads[order as usize];
        meta.next.store(head.load(Relaxed), Relaxed);
        head.store(idx as u32, Relaxed);
        Some(pages + (1 << order))
    }

    /// Takes `batch_pages` worth of `order` blocks from the node's buddy (one lock hold;
    /// between enter and exit): one is returned allocated, the rest go on the list. Returns
    /// it (None when the node has no such block) and the new page count.
    pub fn refill(
        &self,
        node: &Node,
        order: u8,
        batch_pages: u32,
        pages: u32,
    ) -> (Option<u64>, u32) {
        let nr_blocks = (batch_pages >> order).max(1);
        let mut buddy = node.buddy.lock();
        let Some(first) = buddy.alloc(order) else {
            return (None, pages);
        };
        let head = &self.heads[order as usize];
        let mut added = 0u32;
        for _ in 1..nr_blocks {
            // Cached from the start: never allocated, so a stale free cannot push it too.
            let Some(pfn) = buddy.alloc_cached(order) else {
                break;
            };
            let idx = (pfn - node.base_pfn) as u32;
            node.memmap.pages[idx as usize]
                .next
                .store(head.load(Relaxed), Relaxed);
            head.store(idx, Relaxed);
            added += 1;
        }
        drop(buddy);
        bump(&self.stats.pcp_refill);
        (Some(first), pages + (added << order))
    }

    /// Gives at least `nr_pages` pages back to the buddy (one lock hold; between enter and
    /// exit), from `first_order`'s list first, then the others. Returns the pages given back
    /// and the new page count.
    pub fn drain(&self, node: &Node, first_order: u8, nr_pages: u32, pages: u32) -> (u32, u32) {
        if pages == 0 {
            return (0, 0);
        }
        let mut drained = 0u32;
        let mut buddy = node.buddy.lock();
        for k in 0..PCP_ORDERS {
            let order = ((first_order as usize + k) % PCP_ORDERS) as u8;
            let head = &self.heads[order as usize];
            while drained < nr_pages {
                let idx = head.load(Relaxed);
                let Some(meta) = node.memmap.pages.get(idx as usize) else {
                    break;
                };
                head.store(meta.next.load(Relaxed), Relaxed);
                // Cannot fail: every block on the list is marked CACHED | order by push or
                // refill; a failure would be a bug, and leaking the block is then the safe side.
                let _ = buddy.free_cached(node.base_pfn + idx as u64, order);
                drained += 1 << order;
            }
        }
        drop(buddy);
        bump(&self.stats.pcp_drain);
        (drained, pages.saturating_sub(drained))
    }
}
