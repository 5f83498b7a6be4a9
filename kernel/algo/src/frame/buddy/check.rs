//! What a free or a consistency check finds wrong (`FreeError`, `CheckError`) and the
//! checks themselves: walking the free lists, scanning every page's state byte.

use core::fmt;

use super::{Buddy, BuddyStore, ALLOCATED, CACHED, FREE, KIND_MASK, MAX_ORDER, NIL, ORDER_MASK};

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

impl<S: BuddyStore> Buddy<S> {
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
