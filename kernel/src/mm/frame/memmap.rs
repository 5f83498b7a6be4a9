//! The memmap: one `PageMeta` ("struct page") per 4 KiB page of a node's span, stored in that
//! node's own memory, and the `BuddyStore` view the node's buddy allocator works on.
//!
//! This is the only unsafe code of the frame allocator: turning carved-out physical memory
//! into a `&'static [PageMeta]`.

use core::sync::atomic::{AtomicU32, AtomicU8, AtomicUsize, Ordering::Relaxed};
use numalab_algo::frame::buddy::{BuddyStore, NIL};
use numalab_algo::page::VirtAddr;

/// Per-page metadata. `owner` and `private` belong to whoever allocated the block (read them
/// on the head page): SLUB keeps its slab pointer in `owner` (0 = not a slab). The other
/// fields belong to the frame allocator (free-list and per-CPU list links, state byte).
#[repr(C)]
pub struct PageMeta {
    pub owner: AtomicUsize,
    pub private: AtomicUsize,
    pub(super) next: AtomicU32,
    pub(super) prev: AtomicU32,
    pub(super) state: AtomicU8,
}

/// Bytes of memmap per page of span.
pub const PAGE_META_BYTES: u64 = core::mem::size_of::<PageMeta>() as u64;
const _: () = assert!(
    PAGE_META_BYTES == 32,
    "PageMeta layout changed: update docs"
);

impl PageMeta {
    const fn new() -> PageMeta {
        PageMeta {
            owner: AtomicUsize::new(0),
            private: AtomicUsize::new(0),
            next: AtomicU32::new(NIL),
            prev: AtomicU32::new(NIL),
            state: AtomicU8::new(0),
        }
    }

    /// The frame allocator's state byte (see numalab_algo::frame::buddy).
    pub fn state(&self) -> u8 {
        self.state.load(Relaxed)
    }
}

/// A node's memmap; all fields are atomics, so shared references suffice (the buddy's
/// mutations happen under the node lock, per-CPU list mutations on the owning CPU).
#[derive(Clone, Copy)]
pub struct MemMap {
    pub pages: &'static [PageMeta],
}

impl MemMap {
    /// Initializes `nr_pages` `PageMeta`s at `virt` and returns them as the memmap.
    ///
    /// # Safety
    /// `virt` must be the direct-map address of `nr_pages * PAGE_META_BYTES` bytes of RAM,
    /// 8-byte aligned, that nothing else uses now or ever (they are reserved from the
    /// allocator for the life of the kernel).
    pub unsafe fn init_at(virt: VirtAddr, nr_pages: usize) -> MemMap {
        let base = virt.as_mut_ptr::<PageMeta>();
        for i in 0..nr_pages {
            // SAFETY: i < nr_pages, inside the exclusive, aligned region the caller gave.
            unsafe { base.add(i).write(PageMeta::new()) };
        }
        // SAFETY: the nr_pages elements were just initialized; the region is never reused
        // (caller's contract), so a 'static shared slice of atomics is sound.
        let pages = unsafe { core::slice::from_raw_parts(base, nr_pages) };
        MemMap { pages }
    }
}

impl BuddyStore for MemMap {
    #[inline]
    fn nr_pages(&self) -> usize {
        self.pages.len()
    }
    #[inline]
    fn next(&self, idx: u32) -> u32 {
        self.pages[idx as usize].next.load(Relaxed)
    }
    #[inline]
    fn prev(&self, idx: u32) -> u32 {
        self.pages[idx as usize].prev.load(Relaxed)
    }
    #[inline]
    fn set_next(&mut self, idx: u32, next: u32) {
        self.pages[idx as usize].next.store(next, Relaxed)
    }
    #[inline]
    fn set_prev(&mut self, idx: u32, prev: u32) {
        self.pages[idx as usize].prev.store(prev, Relaxed)
    }
    #[inline]
    fn state(&self, idx: u32) -> u8 {
        self.pages[idx as usize].state.load(Relaxed)
    }
    #[inline]
    fn set_state(&mut self, idx: u32, state: u8) {
        self.pages[idx as usize].state.store(state, Relaxed)
    }
    #[inline]
    fn replace_state(&mut self, idx: u32, old: u8, new: u8) -> bool {
        // One step: a per-CPU list's push (no node lock) may race this free (node lock held).
        self.pages[idx as usize]
            .state
            .compare_exchange(old, new, Relaxed, Relaxed)
            .is_ok()
    }
}
