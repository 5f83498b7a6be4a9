//! A binary buddy allocator over one node's page frames (orders 0..=MAX_ORDER), pure logic.
//!
//! The per-page state (free-list links and a state byte) lives in a `BuddyStore` the caller
//! provides: the kernel backs it with its memmap (struct page array), the host tests with a
//! `Vec`. Block alignment is by absolute page frame number, as in Linux: the buddy of the
//! order-`k` block at pfn `p` is at `p ^ (1 << k)`.
//!
//! Each page's state byte says what the page is, and only head pages carry one:
//! `0` (tail, hole or reserved), `FREE | k` (head of a free order-`k` block on a free list),
//! `ALLOCATED | k` (head of a block handed out), `CACHED | k` (head of a block sitting in a
//! per-CPU list: handed out by the buddy, not yet to a user). Frees check the byte, so an
//! unaligned free, a free of a tail, a double free or a wrong order is an error, never
//! corruption.

mod check;
mod store;
#[cfg(test)]
mod tests;

pub use check::{CheckError, FreeError, ScanCounts};
pub use store::{BuddyStore, VecStore};

/// Largest order: blocks of up to 2^10 pages (4 MiB of 4 KiB pages), like Linux's MAX_ORDER.
pub const MAX_ORDER: u8 = 10;
/// Number of orders (free lists).
pub const NR_ORDERS: usize = MAX_ORDER as usize + 1;
/// The empty link.
pub const NIL: u32 = u32::MAX;

/// State byte: head of a free block of the order in the low bits.
pub const FREE: u8 = 0x40;
/// State byte: head of an allocated block of the order in the low bits.
pub const ALLOCATED: u8 = 0x80;
/// State byte: head of a block held by a per-CPU cache (allocated from the buddy's view).
pub const CACHED: u8 = 0xC0;
/// Mask of the kind bits of a state byte.
pub const KIND_MASK: u8 = 0xC0;
/// Mask of the order bits of a state byte.
pub const ORDER_MASK: u8 = 0x3F;

/// A buddy allocator over the pfns [base_pfn, base_pfn + store.nr_pages()).
pub struct Buddy<S: BuddyStore> {
    store: S,
    base_pfn: u64,
    heads: [u32; NR_ORDERS],
    nr_free: [usize; NR_ORDERS],
    free_pages: usize,
    managed_pages: usize,
}

impl<S: BuddyStore> Buddy<S> {
    /// An empty allocator (no free page yet) over the span starting at `base_pfn`. Every
    /// page's state must be 0 in `store`.
    pub fn new(store: S, base_pfn: u64) -> Buddy<S> {
        Buddy {
            store,
            base_pfn,
            heads: [NIL; NR_ORDERS],
            nr_free: [0; NR_ORDERS],
            free_pages: 0,
            managed_pages: 0,
        }
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    pub fn base_pfn(&self) -> u64 {
        self.base_pfn
    }

    pub fn end_pfn(&self) -> u64 {
        self.base_pfn + self.store.nr_pages() as u64
    }

    /// Pages currently on the free lists.
    pub fn free_pages(&self) -> usize {
        self.free_pages
    }

    /// Pages ever given with `add_free_range` (the node's managed pages).
    pub fn managed_pages(&self) -> usize {
        self.managed_pages
    }

    /// Free blocks per order (buddyinfo).
    pub fn nr_free(&self) -> [usize; NR_ORDERS] {
        self.nr_free
    }

    /// Hands the pages [start_pfn, end_pfn) to the allocator as free memory, in the largest
    /// aligned blocks. Pages outside the span are ignored. Returns the pages added.
    pub fn add_free_range(&mut self, start_pfn: u64, end_pfn: u64) -> usize {
        let start = start_pfn.max(self.base_pfn);
        let end = end_pfn.min(self.end_pfn());
        let mut pfn = start;
        let mut added = 0;
        while pfn < end {
            let mut order = MAX_ORDER;
            while order > 0 && (pfn & ((1u64 << order) - 1) != 0 || pfn + (1u64 << order) > end) {
                order -= 1;
            }
            let idx = (pfn - self.base_pfn) as u32;
            if self.store.state(idx) != 0 {
                // Already managed: skip one page rather than corrupt the lists.
                pfn += 1;
                continue;
            }
            self.store.set_state(idx, ALLOCATED | order);
            self.managed_pages += 1 << order;
            added += 1 << order;
            // Cannot fail: the head was just marked allocated with this order.
            let _ = self.free(pfn, order);
            pfn += 1u64 << order;
        }
        added
    }

    fn push(&mut self, idx: u32, order: u8) {
        let head = self.heads[order as usize];
        self.store.set_next(idx, head);
        self.store.set_prev(idx, NIL);
        if head != NIL {
            self.store.set_prev(head, idx);
        }
        self.heads[order as usize] = idx;
        self.store.set_state(idx, FREE | order);
        self.nr_free[order as usize] += 1;
        self.free_pages += 1 << order;
    }

    fn unlink(&mut self, idx: u32, order: u8) {
        let next = self.store.next(idx);
        let prev = self.store.prev(idx);
        if prev == NIL {
            self.heads[order as usize] = next;
        } else {
            self.store.set_next(prev, next);
        }
        if next != NIL {
            self.store.set_prev(next, prev);
        }
        self.store.set_state(idx, 0);
        self.nr_free[order as usize] -= 1;
        self.free_pages -= 1 << order;
    }

    /// Allocates a block of 2^order pages; returns its first pfn, or None when no block of
    /// that order or above is free.
    pub fn alloc(&mut self, order: u8) -> Option<u64> {
        self.alloc_as(order, ALLOCATED)
    }

    /// `alloc`, the block marked as held by a per-CPU cache (`CACHED | order`) from the start
    /// (never seen as allocated, so a stale free cannot take it in between).
    pub fn alloc_cached(&mut self, order: u8) -> Option<u64> {
        self.alloc_as(order, CACHED)
    }

    fn alloc_as(&mut self, order: u8, kind: u8) -> Option<u64> {
        if order > MAX_ORDER {
            return None;
        }
        let mut k = order;
        while self.heads[k as usize] == NIL {
            k += 1;
            if k > MAX_ORDER {
                return None;
            }
        }
        let idx = self.heads[k as usize];
        self.unlink(idx, k);
        while k > order {
            k -= 1;
            self.push(idx + (1u32 << k), k);
        }
        self.store.set_state(idx, kind | order);
        Some(self.base_pfn + idx as u64)
    }

    /// Validates that `pfn` heads an allocated (or cached, when `cached`) block of `order`.
    pub fn check_free(&self, pfn: u64, order: u8, cached: bool) -> Result<u32, FreeError> {
        if order > MAX_ORDER {
            return Err(FreeError::BadOrder);
        }
        if pfn < self.base_pfn || pfn + (1u64 << order) > self.end_pfn() {
            return Err(FreeError::OutOfRange);
        }
        if pfn & ((1u64 << order) - 1) != 0 {
            return Err(FreeError::Unaligned);
        }
        let idx = (pfn - self.base_pfn) as u32;
        let state = self.store.state(idx);
        let want = if cached { CACHED } else { ALLOCATED } | order;
        if state == want {
            return Ok(idx);
        }
        if state & KIND_MASK == FREE || state & KIND_MASK == CACHED && !cached {
            return Err(FreeError::AlreadyFree);
        }
        if state == 0 && self.inside_free_block(pfn) {
            return Err(FreeError::AlreadyFree);
        }
        Err(FreeError::NotAllocated(state))
    }

    /// Whether `pfn` lies inside a larger free block (at most MAX_ORDER probes).
    fn inside_free_block(&self, pfn: u64) -> bool {
        (1..=MAX_ORDER).any(|k| {
            let head = pfn & !((1u64 << k) - 1);
            head >= self.base_pfn
                && head < self.end_pfn()
                && self.store.state((head - self.base_pfn) as u32) == FREE | k
        })
    }

    /// Frees the allocated block of `order` at `pfn`, merging with free buddies.
    pub fn free(&mut self, pfn: u64, order: u8) -> Result<(), FreeError> {
        self.free_inner(pfn, order, false)
    }

    /// Frees a block a per-CPU cache held (state `CACHED | order`).
    pub fn free_cached(&mut self, pfn: u64, order: u8) -> Result<(), FreeError> {
        self.free_inner(pfn, order, true)
    }

    fn free_inner(&mut self, pfn: u64, order: u8, cached: bool) -> Result<(), FreeError> {
        let mut idx = self.check_free(pfn, order, cached)?;
        let want = if cached { CACHED } else { ALLOCATED } | order;
        if !self.store.replace_state(idx, want, 0) {
            // Another CPU changed the state since the check (a per-CPU list took the block):
            // this free lost the race; say why as the check now sees it.
            self.check_free(pfn, order, cached)?;
            return Err(FreeError::NotAllocated(self.store.state(idx)));
        }
        let mut order = order;
        let mut abs = pfn;
        while order < MAX_ORDER {
            let buddy = abs ^ (1u64 << order);
            if buddy < self.base_pfn || buddy >= self.end_pfn() {
                break;
            }
            let bidx = (buddy - self.base_pfn) as u32;
            if self.store.state(bidx) != FREE | order {
                break;
            }
            self.unlink(bidx, order);
            abs &= !(1u64 << order);
            idx = (abs - self.base_pfn) as u32;
            order += 1;
        }
        self.push(idx, order);
        Ok(())
    }

    /// Marks an allocated block as held by a per-CPU cache, or back (no other effect).
    pub fn set_cached(&mut self, pfn: u64, order: u8, cached: bool) {
        let idx = (pfn - self.base_pfn) as u32;
        self.store
            .set_state(idx, if cached { CACHED } else { ALLOCATED } | order);
    }
}
