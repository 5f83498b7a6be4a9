//! Per-CPU page lists (Linux's per_cpu_pages), the protocol: for one (CPU, node with memory)
//! pair, a stack of free blocks of orders 0..=PCP_MAX_ORDER linked through the node's memmap,
//! refilled from and drained to the node's buddy in batches under the node lock. The kernel
//! (kernel/src/mm/frame/pcp.rs) instantiates it over its memmap with `Bare`; the model
//! checks (pcp_model.rs) run this same code with every shared access a scheduling point.
//!
//! Claim rule: a list is changed only by whoever holds its claim, the `BUSY` bit of its count
//! word, taken in one atomic step (a compare-exchange: Linux 6.1's pcp spin_trylock idea).
//! The owner CPU tries once (`enter`): if the bit is set, either one of its own interrupt
//! handlers interrupted it mid-operation or another CPU is draining the list, and it goes to
//! the buddy allocator instead, so no interrupt masking is needed and nothing spins on the
//! fast paths. Another CPU drains a list remotely (`claim`, a bounded spin: the holder's
//! operation is short and waits on nothing but a node lock), which is legal in any context,
//! interrupts off and caller's locks held included; that is how the kernel's `drain_all` and
//! its allocation slow path empty every CPU's lists (no cross-CPU call, which would deadlock
//! with a CPU spinning on a lock the caller holds). Claim and release are acquire and
//! release, so the next holder sees the list as the last one left it. The block's state byte
//! moves from allocated to cached with a compare-exchange (`push`), so two CPUs freeing the
//! same block at once cannot both put it on a list: one wins, the other's free is refused.
//! The counters are atomics written with plain loads and stores by the claim holder (or the
//! owner CPU), so they can be read from anywhere.
//!
//! Lock order: the claim is taken before the node's buddy lock (`refill`, `drain` take the
//! lock with the claim held); nothing takes a claim with the buddy lock held.

use core::marker::PhantomData;
use core::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicU8};

use crate::frame::buddy::{Buddy, BuddyStore, ALLOCATED, CACHED, NIL};

/// Highest order kept on per-CPU lists (Linux keeps 0..=3 as well).
pub const PCP_MAX_ORDER: u8 = 3;
const PCP_ORDERS: usize = PCP_MAX_ORDER as usize + 1;

pub use crate::page::PAGE_SHIFT;

/// The bit of the count word that says an operation is in progress (the claim).
pub const BUSY: u32 = 1 << 31;

/// The links a list needs from each page's metadata (the kernel's `PageMeta`).
pub trait PcpPage: Sync {
    /// The buddy's state byte (`ALLOCATED | order`, `CACHED | order`, ...).
    fn state(&self) -> &AtomicU8;
    /// The next block on the list (a page index in the node, or `NIL`).
    fn next(&self) -> &AtomicU32;
}

/// The machine the lists run on. The kernel's (`Bare`) keeps every default, which compiles
/// to the plain atomics; the model checks make each hook a scheduling point, and their
/// mutated machines replace an atomic step with a load and a store, to show that the checker
/// catches the bug.
pub trait PcpSync {
    /// How many times a remote claim tries a claimed list before giving up on it.
    const CLAIM_SPINS: u32 = 1 << 20;
    /// Called before every access to memory another CPU may touch.
    #[inline(always)]
    fn point() {}
    /// One wait of a remote claim's spin.
    #[inline(always)]
    fn spin() {
        core::hint::spin_loop();
    }
    /// `word` from `old` to `new` in one step (acquire on success): taking the claim.
    /// Returns the value it replaced (`old`), or None when the word was not `old`. (Returning
    /// the compare-exchange's own result, not `old`, saves the fast paths a register copy.)
    #[inline(always)]
    fn claim_word(word: &AtomicU32, old: u32, new: u32) -> Option<u32> {
        word.compare_exchange(old, new, Acquire, Relaxed).ok()
    }
    /// `state` from `old` to `new` in one step: a block becoming cached.
    #[inline(always)]
    fn move_state(state: &AtomicU8, old: u8, new: u8) -> bool {
        state.compare_exchange(old, new, Relaxed, Relaxed).is_ok()
    }
}

/// The kernel's machine: no hooks.
pub struct Bare;
impl PcpSync for Bare {}

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
    /// Listed blocks the buddy refused when drained (a bookkeeping bug; never expected): the
    /// block is leaked rather than risk handing it out twice.
    pub drain_refused: AtomicU64,
}

/// `c += 1` for a counter only its owner CPU (or the claim holder) writes.
#[inline(always)]
pub fn bump(c: &AtomicU64) {
    c.store(c.load(Relaxed).wrapping_add(1), Relaxed);
}

/// The lists of one CPU for one node over the node's memmap `'m`. It carries the memmap
/// slice and base pfn so the fast paths touch nothing else. Cache-line aligned (no false
/// sharing between CPUs).
#[repr(align(128))]
pub struct PcpList<'m, P: PcpPage, S: PcpSync = Bare> {
    heads: [AtomicU32; PCP_ORDERS],
    /// Pages held (all orders), with `BUSY` set while an operation is in progress.
    word: AtomicU32,
    /// Above this many pages a free drains a batch (0: lists disabled, every free drains).
    pub high_pages: u32,
    base_pfn: u64,
    /// The word `pop_raw` returns for the node's first pfn: base_pfn << PAGE_SHIFT | the
    /// caller's tag bits.
    base_raw: u64,
    memmap: &'m [P],
    pub stats: PcpStats,
    // `fn() -> S`: the machine is a type, never a value, so it does not make the list !Sync.
    machine: PhantomData<fn() -> S>,
}

impl<'m, P: PcpPage, S: PcpSync> PcpList<'m, P, S> {
    /// An empty list over `memmap`, whose first page is `base_pfn`; `tag_bits` are or-ed
    /// into the words `pop_raw` returns (they must be below `1 << PAGE_SHIFT`).
    pub fn new(memmap: &'m [P], base_pfn: u64, tag_bits: u64, high_pages: u32) -> Self {
        PcpList {
            heads: [const { AtomicU32::new(NIL) }; PCP_ORDERS],
            word: AtomicU32::new(0),
            high_pages,
            base_pfn,
            base_raw: base_pfn << PAGE_SHIFT | tag_bits,
            memmap,
            stats: PcpStats::default(),
            machine: PhantomData,
        }
    }

    /// Pages this list holds (all orders).
    pub fn pages(&self) -> u32 {
        S::point();
        self.word.load(Relaxed) & !BUSY
    }

    /// Whether the claim is held now (a snapshot).
    pub fn claimed(&self) -> bool {
        S::point();
        self.word.load(Relaxed) & BUSY != 0
    }

    /// Claims the list for an operation (one compare-exchange) and returns its page count;
    /// None when it is claimed already (we are an interrupt handler that interrupted its
    /// owner, or another CPU is draining it): use the buddy then. `exit` ends the operation
    /// with the new count.
    #[inline(always)]
    pub fn enter(&self) -> Option<u32> {
        S::point();
        let word = self.word.load(Relaxed);
        if word & BUSY != 0 {
            return None;
        }
        S::point();
        S::claim_word(&self.word, word, word | BUSY)
    }

    /// `enter` for a CPU that is not the owner (a remote drain): retries while the claim is
    /// held, at most `CLAIM_SPINS` times (the holder's operation is short; the bound keeps an
    /// interrupt handler that would wait for the operation it interrupted from hanging).
    /// None when the list stayed claimed.
    pub fn claim(&self) -> Option<u32> {
        for _ in 0..S::CLAIM_SPINS {
            if let Some(pages) = self.enter() {
                return Some(pages);
            }
            S::spin();
        }
        None
    }

    /// Ends what `enter` began, storing the new page count (and releasing the claim).
    #[inline(always)]
    pub fn exit(&self, pages: u32) {
        S::point();
        self.word.store(pages, Release);
    }

    /// Takes a block of `order` off the list (between enter and exit); returns its pfn and
    /// the new page count. Counts nothing: the caller accounts the hit.
    #[inline(always)]
    pub fn pop(&self, pages: u32, order: u8) -> Option<(u64, u32)> {
        let (raw, pages) = self.pop_raw(pages, order)?;
        Some((raw >> PAGE_SHIFT, pages))
    }

    /// `pop`, returning the block's word (pfn << PAGE_SHIFT | tag bits).
    #[inline(always)]
    pub fn pop_raw(&self, pages: u32, order: u8) -> Option<(u64, u32)> {
        let head = &self.heads[order as usize];
        S::point();
        let idx = head.load(Relaxed);
        let meta = self.memmap.get(idx as usize)?;
        S::point();
        head.store(meta.next().load(Relaxed), Relaxed);
        S::point();
        meta.state().store(ALLOCATED | order, Relaxed);
        Some((
            self.base_raw + ((idx as u64) << PAGE_SHIFT),
            pages - (1 << order),
        ))
    }

    /// Puts the allocated block of `order` at `pfn` on the list (between enter and exit);
    /// returns the new page count, or None when the block is not the head of an allocated
    /// block of this order or lies outside the node: nothing changed. The state moves from
    /// allocated to cached in one compare-exchange: of two CPUs freeing the same block at
    /// once (or one here and one in the buddy, which does the same), only one wins.
    #[inline(always)]
    pub fn push(&self, pages: u32, pfn: u64, order: u8) -> Option<u32> {
        let idx = pfn.wrapping_sub(self.base_pfn);
        let meta = self.memmap.get(idx as usize)?;
        S::point();
        if !S::move_state(meta.state(), ALLOCATED | order, CACHED | order) {
            return None;
        }
        let head = &self.heads[order as usize];
        S::point();
        meta.next().store(head.load(Relaxed), Relaxed);
        S::point();
        head.store(idx as u32, Relaxed);
        Some(pages + (1 << order))
    }

    /// Takes `batch_pages` worth of `order` blocks from the node's `buddy` (locked by the
    /// caller; between enter and exit): one is returned allocated, the rest go on the list.
    /// Returns its pfn (None when the node has no such block) and the new page count.
    pub fn refill<B: BuddyStore>(
        &self,
        buddy: &mut Buddy<B>,
        order: u8,
        batch_pages: u32,
        pages: u32,
    ) -> (Option<u64>, u32) {
        let nr_blocks = (batch_pages >> order).max(1);
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
            let idx = (pfn - self.base_pfn) as u32;
            S::point();
            self.memmap[idx as usize]
                .next()
                .store(head.load(Relaxed), Relaxed);
            S::point();
            head.store(idx, Relaxed);
            added += 1;
        }
        bump(&self.stats.pcp_refill);
        (Some(first), pages + (added << order))
    }

    /// Gives at least `nr_pages` pages back to the node's `buddy` (locked by the caller;
    /// between enter and exit), from `first_order`'s list first, then the others. Returns
    /// the pages given back and the new page count.
    pub fn drain<B: BuddyStore>(
        &self,
        buddy: &mut Buddy<B>,
        first_order: u8,
        nr_pages: u32,
        pages: u32,
    ) -> (u32, u32) {
        if pages == 0 {
            return (0, 0);
        }
        let mut drained = 0u32;
        for k in 0..PCP_ORDERS {
            let order = ((first_order as usize + k) % PCP_ORDERS) as u8;
            let head = &self.heads[order as usize];
            while drained < nr_pages {
                S::point();
                let idx = head.load(Relaxed);
                let Some(meta) = self.memmap.get(idx as usize) else {
                    break;
                };
                S::point();
                head.store(meta.next().load(Relaxed), Relaxed);
                // Every listed block is `CACHED | order` (push, refill); a refusal is a bug,
                // counted, and leaking the block is then the safe side.
                if buddy
                    .free_cached(self.base_pfn + idx as u64, order)
                    .is_err()
                {
                    bump(&self.stats.drain_refused);
                }
                drained += 1 << order;
            }
        }
        bump(&self.stats.pcp_drain);
        (drained, pages.saturating_sub(drained))
    }
}
