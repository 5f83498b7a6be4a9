//! SLUB's own page -> owner map, for kfree's fast lookup: two levels, 1 GiB of physical
//! memory per 2 MiB chunk of words (one per 4 KiB page), chunks allocated when the first
//! slab lands in their gigabyte. A lookup is a subtraction, two shifts and two loads (the
//! frame allocator's page_meta searches the nodes). The owner is also written to the page's
//! `PageMeta::owner` (the shared contract); when a chunk cannot be allocated, lookups in its
//! gigabyte fall back to page_meta.

use crate::mm::frame::{self, Policy};
use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use numalab_algo::topology::NodeId;

const PAGE_SHIFT: u32 = 12;
const CHUNK_SHIFT: u32 = 30;
const ENTRIES_PER_CHUNK: usize = 1 << (CHUNK_SHIFT - PAGE_SHIFT);
/// 2 MiB of words per chunk.
const CHUNK_ORDER: u8 = 9;
/// Physical memory covered: 64 GiB.
const MAX_CHUNKS: usize = 64;

static CHUNKS: [AtomicUsize; MAX_CHUNKS] = [const { AtomicUsize::new(0) }; MAX_CHUNKS];
static CHUNK_PAGES_ON: [AtomicUsize; super::platform::MAX_NODES] =
    [const { AtomicUsize::new(0) }; super::platform::MAX_NODES];

/// Pages of map chunks on `node` (held by SLUB for good, like a memmap).
pub fn chunk_pages_on(node: NodeId) -> usize {
    CHUNK_PAGES_ON[node.index().min(super::platform::MAX_NODES - 1)].load(Relaxed)
}

#[inline(always)]
fn phys_of(virt: usize) -> Option<usize> {
    virt.checked_sub(crate::mm::early::info().phys_offset as usize)
}

/// The chunk for `phys`, allocating it (zeroed) if needed; 0 when it cannot.
fn chunk_for(phys: usize) -> usize {
    let i = phys >> CHUNK_SHIFT;
    let Some(slot) = CHUNKS.get(i) else { return 0 };
    let c = slot.load(Relaxed);
    if c != 0 {
        return c;
    }
    let Ok(pages) = frame::alloc_pages(CHUNK_ORDER, Policy::Local) else {
        return 0;
    };
    let node = pages.node();
    let bytes = pages.size_bytes();
    let ptr = pages.virt_ptr();
    // SAFETY: a fresh block of `bytes` bytes we own; zeroing makes every entry "no owner".
    unsafe { ptr.write_bytes(0, bytes) };
    let (phys_chunk, order) = pages.into_raw();
    match slot.compare_exchange(
        0,
        ptr as usize,
        core::sync::atomic::Ordering::AcqRel,
        Relaxed,
    ) {
        Ok(_) => {
            CHUNK_PAGES_ON[node.index().min(super::platform::MAX_NODES - 1)]
                .fetch_add(1 << order, Relaxed);
            ptr as usize
        }
        Err(other) => {
            // SAFETY: the block came from into_raw above and was never published.
            drop(unsafe { frame::Pages::from_raw(phys_chunk, order) });
            other
        }
    }
}

#[inline(always)]
fn entry(chunk: usize, phys: usize) -> &'static AtomicUsize {
    let index = (phys >> PAGE_SHIFT) & (ENTRIES_PER_CHUNK - 1);
    // SAFETY: `chunk` is a published chunk: a 2 MiB block of zeroed or atomically written
    // words that is never freed; `index` < ENTRIES_PER_CHUNK keeps the word inside it.
    unsafe { AtomicUsize::from_ptr((chunk as *mut usize).add(index)) }
}

/// Records `owner` for the `nr_pages` pages at direct-map address `virt`, in the map and in
/// each page's PageMeta.
pub fn set(virt: usize, nr_pages: usize, owner: usize) {
    let Some(phys) = phys_of(virt) else { return };
    for i in 0..nr_pages {
        let p = phys + (i << PAGE_SHIFT);
        if let Some(meta) = frame::page_meta(p as u64) {
            meta.owner.store(owner, Relaxed);
        }
        let chunk = chunk_for(p);
        if chunk != 0 {
            entry(chunk, p).store(owner, Relaxed);
        }
    }
}

/// The owner word of the page holding `virt` (0: none).
#[inline]
pub fn get(virt: usize) -> usize {
    let Some(phys) = phys_of(virt) else { return 0 };
    let chunk = match CHUNKS.get(phys >> CHUNK_SHIFT) {
        Some(slot) => slot.load(Relaxed),
        None => 0,
    };
    if chunk != 0 {
        return entry(chunk, phys).load(Relaxed);
    }
    frame::page_meta(phys as u64).map_or(0, |m| m.owner.load(Relaxed))
}
