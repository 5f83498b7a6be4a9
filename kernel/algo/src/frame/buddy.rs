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

use core::fmt;

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

/// Per-page storage the buddy works on, indexed by page index within the node's span.
pub trait BuddyStore {
    /// Pages in the span.
    fn nr_pages(&self) -> usize;
    fn next(&self, idx: u32) -> u32;
    fn prev(&self, idx: u32) -> u32;
    fn set_next(&mut self, idx: u32, next: u32);
    fn set_prev(&mut self, idx: u32, prev: u32);
    fn state(&self, idx: u32) -> u8;
    fn set_state(&mut self, idx: u32, state: u8);
    /// Sets the state of `idx` to `new` if it is `old`, in one step for stores whose states
    /// other CPUs change without the buddy's lock (the kernel's per-CPU lists move a block
    /// from allocated to cached with a compare-exchange); false when it was not `old`.
    fn replace_state(&mut self, idx: u32, old: u8, new: u8) -> bool {
        if self.state(idx) != old {
            return false;
        }
        self.set_state(idx, new);
        true
    }
}

/// A simple `BuddyStore` on vectors (host tests and small users).
#[derive(Clone, Debug)]
pub struct VecStore {
    links: alloc::vec::Vec<(u32, u32, u8)>,
}

impl VecStore {
    pub fn new(nr_pages: usize) -> VecStore {
        VecStore {
            links: alloc::vec![(NIL, NIL, 0); nr_pages],
        }
    }
}

impl BuddyStore for VecStore {
    fn nr_pages(&self) -> usize {
        self.links.len()
    }
    fn next(&self, idx: u32) -> u32 {
        self.links[idx as usize].0
    }
    fn prev(&self, idx: u32) -> u32 {
        self.links[idx as usize].1
    }
    fn set_next(&mut self, idx: u32, next: u32) {
        self.links[idx as usize].0 = next;
    }
    fn set_prev(&mut self, idx: u32, prev: u32) {
        self.links[idx as usize].1 = prev;
    }
    fn state(&self, idx: u32) -> u8 {
        self.links[idx as usize].2
    }
    fn set_state(&mut self, idx: u32, state: u8) {
        self.links[idx as usize].2 = state;
    }
}

/// Why a free was refused (the block is left as it was).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FreeError {
    /// The pfn is not in this allocator's span.
    OutOfRange,
    /// The pfn is not aligned to the order.
    Unaligned,
    /// The order is above MAX_ORDER.
    BadOrder,
    /// The block is already free (double free).
    AlreadyFree,
    /// The pfn is not the head of an allocated block of that order (state byte shown).
    NotAllocated(u8),
}

impl fmt::Display for FreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FreeError::OutOfRange => write!(f, "outside the node"),
            FreeError::Unaligned => write!(f, "not aligned to its order"),
            FreeError::BadOrder => write!(f, "order above {}", MAX_ORDER),
            FreeError::AlreadyFree => write!(f, "double free of a free block"),
            FreeError::NotAllocated(s) => {
                write!(
                    f,
                    "not the head of an allocated block of that order (state {:#x})",
                    s
                )
            }
        }
    }
}

/// What a consistency check found wrong (no allocation: it runs under the node lock).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckError {
    /// A list entry's state byte is not `FREE | order` (pfn, order, state).
    BadState(u64, u8, u8),
    /// A list entry's prev link does not point back (pfn, order).
    BrokenLink(u64, u8),
    /// A list is longer than its count (a cycle or a duplicate) (order).
    ListTooLong(u8),
    /// A list's length differs from its count (order, walked, counted).
    CountMismatch(u8, usize, usize),
    /// A block and its buddy are both free at the same order (pfn, order).
    Unmerged(u64, u8),
    /// A free block is unaligned or leaves the span (pfn, order).
    BadBlock(u64, u8),
    /// Free pages counted by the state scan differ from the lists (scanned, listed).
    ScanMismatch(usize, usize),
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            CheckError::BadState(p, o, s) => {
                write!(f, "free list {} holds pfn {:#x} with state {:#x}", o, p, s)
            }
            CheckError::BrokenLink(p, o) => write!(f, "free list {} broken at pfn {:#x}", o, p),
            CheckError::ListTooLong(o) => write!(f, "free list {} longer than its count", o),
            CheckError::CountMismatch(o, w, c) => {
                write!(f, "free list {} has {} blocks, counted {}", o, w, c)
            }
            CheckError::Unmerged(p, o) => {
                write!(f, "pfn {:#x} and its buddy are both free at order {}", p, o)
            }
            CheckError::BadBlock(p, o) => {
                write!(f, "free block pfn {:#x} order {} is misplaced", p, o)
            }
            CheckError::ScanMismatch(s, l) => {
                write!(f, "state scan finds {} free pages, lists {}", s, l)
            }
        }
    }
}

/// Page counts by state from a full scan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanCounts {
    pub free_pages: usize,
    pub allocated_pages: usize,
    pub cached_pages: usize,
}

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

    /// Walks every free list: states, links, counts, alignment, merging. O(free blocks).
    pub fn check_lists(&self) -> Result<(), CheckError> {
        let mut listed = 0usize;
        for order in 0..=MAX_ORDER {
            let mut cur = self.heads[order as usize];
            let mut prev = NIL;
            let mut walked = 0usize;
            while cur != NIL {
                walked += 1;
                if walked > self.nr_free[order as usize] {
                    return Err(CheckError::ListTooLong(order));
                }
                let pfn = self.base_pfn + cur as u64;
                let state = self.store.state(cur);
                if state != FREE | order {
                    return Err(CheckError::BadState(pfn, order, state));
                }
                if self.store.prev(cur) != prev {
                    return Err(CheckError::BrokenLink(pfn, order));
                }
                if pfn & ((1u64 << order) - 1) != 0 || pfn + (1u64 << order) > self.end_pfn() {
                    return Err(CheckError::BadBlock(pfn, order));
                }
                if order < MAX_ORDER {
                    let buddy = pfn ^ (1u64 << order);
                    if buddy >= self.base_pfn
                        && buddy < self.end_pfn()
                        && self.store.state((buddy - self.base_pfn) as u32) == FREE | order
                    {
                        return Err(CheckError::Unmerged(pfn, order));
                    }
                }
                prev = cur;
                cur = self.store.next(cur);
            }
            if walked != self.nr_free[order as usize] {
                return Err(CheckError::CountMismatch(
                    order,
                    walked,
                    self.nr_free[order as usize],
                ));
            }
            listed += walked << order;
        }
        if listed != self.free_pages {
            return Err(CheckError::ScanMismatch(listed, self.free_pages));
        }
        Ok(())
    }

    /// Scans every page's state byte (O(span)) and checks the free pages it finds against
    /// the lists; returns the counts by state.
    pub fn scan(&self) -> Result<ScanCounts, CheckError> {
        let mut c = ScanCounts::default();
        for idx in 0..self.store.nr_pages() as u32 {
            let state = self.store.state(idx);
            let pages = 1usize << (state & ORDER_MASK);
            match state & KIND_MASK {
                FREE => c.free_pages += pages,
                ALLOCATED => c.allocated_pages += pages,
                CACHED => c.cached_pages += pages,
                _ => {}
            }
        }
        if c.free_pages != self.free_pages {
            return Err(CheckError::ScanMismatch(c.free_pages, self.free_pages));
        }
        Ok(c)
    }

    /// Visits every free block (pfn, order).
    pub fn for_each_free(&self, mut f: impl FnMut(u64, u8)) {
        for order in 0..=MAX_ORDER {
            let mut cur = self.heads[order as usize];
            let mut steps = 0;
            while cur != NIL && steps <= self.nr_free[order as usize] {
                f(self.base_pfn + cur as u64, order);
                cur = self.store.next(cur);
                steps += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    fn buddy(base: u64, pages: usize) -> Buddy<VecStore> {
        Buddy::new(VecStore::new(pages), base)
    }

    #[test]
    fn add_range_uses_largest_aligned_blocks() {
        let mut b = buddy(0, 4096);
        assert_eq!(b.add_free_range(3, 2051), 2048);
        b.check_lists().unwrap();
        let nr = b.nr_free();
        // 3 (o0), 4-7 (o2), 8-15 (o3), ..., 512-1023 (o9), 1024-2047 (o10), 2048-2050 (o1,o0)
        assert_eq!(nr, [2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]);
        assert_eq!(b.free_pages(), 2048);
        assert_eq!(b.managed_pages(), 2048);
    }

    #[test]
    fn split_and_merge_back() {
        let mut b = buddy(1024, 1024);
        b.add_free_range(1024, 2048);
        assert_eq!(b.nr_free()[10], 1);
        let p = b.alloc(0).unwrap();
        assert_eq!(p, 1024);
        assert_eq!(b.nr_free(), [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0]);
        b.check_lists().unwrap();
        b.free(p, 0).unwrap();
        assert_eq!(b.nr_free()[10], 1);
        assert_eq!(b.free_pages(), 1024);
        b.check_lists().unwrap();
    }

    #[test]
    fn exhaustion_returns_none() {
        let mut b = buddy(0, 16);
        b.add_free_range(0, 16);
        assert!(b.alloc(5).is_none());
        let blocks: Vec<u64> = (0..16).map(|_| b.alloc(0).unwrap()).collect();
        assert!(b.alloc(0).is_none());
        for p in blocks {
            b.free(p, 0).unwrap();
        }
        assert_eq!(b.alloc(4), Some(0));
        assert!(b.alloc(11).is_none());
    }

    #[test]
    fn invalid_frees_are_refused() {
        let mut b = buddy(0, 64);
        b.add_free_range(0, 64);
        let p = b.alloc(2).unwrap();
        assert_eq!(b.free(p + 1, 0), Err(FreeError::NotAllocated(0)));
        assert_eq!(b.free(p + 2, 1), Err(FreeError::NotAllocated(0)));
        assert_eq!(b.free(p, 1), Err(FreeError::NotAllocated(ALLOCATED | 2)));
        assert_eq!(b.free(p + 1, 2), Err(FreeError::Unaligned));
        assert_eq!(b.free(64, 0), Err(FreeError::OutOfRange));
        assert_eq!(b.free(0, 11), Err(FreeError::BadOrder));
        b.free(p, 2).unwrap();
        assert_eq!(b.free(p, 2), Err(FreeError::AlreadyFree));
        assert_eq!(b.free(p + 1, 0), Err(FreeError::AlreadyFree));
        b.check_lists().unwrap();
        assert_eq!(b.free_pages(), 64);
    }

    #[test]
    fn holes_are_never_handed_out() {
        let mut b = buddy(0, 2048);
        b.add_free_range(0, 100);
        b.add_free_range(1500, 2048);
        let mut got = Vec::new();
        while let Some(p) = b.alloc(0) {
            assert!(!(100..1500).contains(&p), "hole page {p}");
            got.push(p);
        }
        assert_eq!(got.len(), 100 + 548);
        for p in got {
            b.free(p, 0).unwrap();
        }
        b.check_lists().unwrap();
        assert_eq!(b.scan().unwrap().free_pages, 648);
    }

    use crate::rng::Rng;

    #[test]
    fn randomized_conservation() {
        for seed in 1..=4u64 {
            let mut rng = Rng::new(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let base = 0x100 + seed * 3;
            let pages = 5000;
            let mut b = buddy(base, pages);
            b.add_free_range(base + 7, base + pages as u64 - 5);
            let total = b.managed_pages();
            let mut live: Vec<(u64, u8)> = Vec::new();
            let mut owned = alloc::vec![false; pages];
            let mut allocated = 0usize;
            for step in 0..20_000 {
                if !rng.next_u64().is_multiple_of(3) || live.is_empty() {
                    let order = (rng.next_u64() % 6) as u8;
                    if let Some(p) = b.alloc(order) {
                        assert_eq!(p & ((1 << order) - 1), 0);
                        for i in 0..(1u64 << order) {
                            let o = &mut owned[(p + i - base) as usize];
                            assert!(!*o, "page {} handed out twice", p + i);
                            *o = true;
                        }
                        live.push((p, order));
                        allocated += 1 << order;
                    }
                } else {
                    let i = (rng.next_u64() as usize) % live.len();
                    let (p, order) = live.swap_remove(i);
                    for i in 0..(1u64 << order) {
                        owned[(p + i - base) as usize] = false;
                    }
                    b.free(p, order).unwrap();
                    allocated -= 1 << order;
                }
                assert_eq!(b.free_pages() + allocated, total, "step {step}");
                if step % 997 == 0 {
                    b.check_lists().unwrap();
                    let c = b.scan().unwrap();
                    assert_eq!(c.allocated_pages, allocated);
                }
            }
            for (p, o) in live.drain(..) {
                b.free(p, o).unwrap();
            }
            b.check_lists().unwrap();
            assert_eq!(b.free_pages(), total);
        }
    }

    #[test]
    fn cached_state_round_trip() {
        let mut b = buddy(0, 8);
        b.add_free_range(0, 8);
        let p = b.alloc(0).unwrap();
        b.set_cached(p, 0, true);
        assert_eq!(b.free(p, 0), Err(FreeError::AlreadyFree));
        b.free_cached(p, 0).unwrap();
        assert_eq!(b.free_pages(), 8);
        assert_eq!(
            b.scan().unwrap(),
            ScanCounts {
                free_pages: 8,
                ..Default::default()
            }
        );
    }

    /// A store where another CPU's per-CPU list takes the block (allocated -> cached) between
    /// the buddy's check and its state change, as `frame`'s pcp push can without the node
    /// lock (issue 14).
    struct RacingStore {
        inner: VecStore,
        steal: Option<u32>,
    }

    impl BuddyStore for RacingStore {
        fn nr_pages(&self) -> usize {
            self.inner.nr_pages()
        }
        fn next(&self, idx: u32) -> u32 {
            self.inner.next(idx)
        }
        fn prev(&self, idx: u32) -> u32 {
            self.inner.prev(idx)
        }
        fn set_next(&mut self, idx: u32, next: u32) {
            self.inner.set_next(idx, next)
        }
        fn set_prev(&mut self, idx: u32, prev: u32) {
            self.inner.set_prev(idx, prev)
        }
        fn state(&self, idx: u32) -> u8 {
            self.inner.state(idx)
        }
        fn set_state(&mut self, idx: u32, state: u8) {
            self.inner.set_state(idx, state)
        }
        fn replace_state(&mut self, idx: u32, old: u8, new: u8) -> bool {
            if self.steal.take() == Some(idx) {
                let s = self.inner.state(idx);
                self.inner.set_state(idx, CACHED | (s & ORDER_MASK));
            }
            self.inner.replace_state(idx, old, new)
        }
    }

    #[test]
    fn a_free_that_loses_the_race_to_a_per_cpu_list_is_refused() {
        let mut b = Buddy::new(
            RacingStore {
                inner: VecStore::new(16),
                steal: None,
            },
            0,
        );
        b.add_free_range(0, 16);
        let p = b.alloc(1).unwrap();
        b.store.steal = Some(p as u32);
        assert_eq!(b.free(p, 1), Err(FreeError::AlreadyFree));
        // Nothing changed but the state the other CPU set: the block is still out.
        assert_eq!(b.free_pages(), 14);
        b.check_lists().unwrap();
        b.free_cached(p, 1).unwrap();
        assert_eq!(b.free_pages(), 16);
    }

    #[test]
    fn alloc_cached_marks_the_block_cached() {
        let mut b = buddy(0, 8);
        b.add_free_range(0, 8);
        let p = b.alloc_cached(1).unwrap();
        assert_eq!(b.store().state(p as u32), CACHED | 1);
        assert_eq!(b.free(p, 1), Err(FreeError::AlreadyFree));
        b.free_cached(p, 1).unwrap();
        assert_eq!(b.free_pages(), 8);
    }
}
