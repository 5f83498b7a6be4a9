//! The page -> PageMeta index (Linux's mem_section with SPARSEMEM's biased `section_mem_map`):
//! per 2 MiB section of physical memory, the address that the memmap of the one node managing
//! the whole section would have for pfn 0, so that a page's metadata is `base + pfn`. Built
//! once at frame init and published as plain statics, so that `page_meta` (kfree's owner
//! lookup) is a bounds check, one load and an add, with no `Once` and no slice length.

use super::memmap::PageMeta;
use super::node::Node;
use super::PAGE_SHIFT;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

pub(super) use numalab_algo::page::SECTION_PAGES_SHIFT;
const SECTION_PAGES: u64 = 1 << SECTION_PAGES_SHIFT;
/// Sections indexed at most (512 GiB of physical address space, 2 MiB of index); pages
/// above are looked up by range.
const MAX_SECTIONS: u64 = 1 << 18;

/// Per section: the biased base (the address `PageMeta` of pfn 0 would have if the section's
/// node memmap extended down to it), or 0 (looked up by range). Written once by `build`
/// before `SECTIONS` is published.
static BASES: AtomicPtr<usize> = AtomicPtr::new(core::ptr::null_mut());
/// Sections in `BASES` (0 before `build`: every lookup misses).
static SECTIONS: AtomicUsize = AtomicUsize::new(0);

/// The address of page `pfn`'s `PageMeta` through the index, or None (not indexed: the
/// caller looks it up by range). An address, not a reference, so that callers that want
/// one word of it test no pointer for null.
#[inline(always)]
fn meta_addr(pfn: u64) -> Option<usize> {
    let sec = (pfn >> SECTION_PAGES_SHIFT) as usize;
    // Acquire pairs with `build`'s Release: a non-zero count means BASES is written.
    if sec >= SECTIONS.load(Ordering::Acquire) {
        return None;
    }
    // SAFETY: `sec` is below the published count, and BASES points to that many words,
    // leaked by `build` and never written again.
    let base = unsafe { *BASES.load(Ordering::Relaxed).add(sec) };
    if base == 0 {
        return None;
    }
    Some(base.wrapping_add(pfn as usize * core::mem::size_of::<PageMeta>()))
}

/// The metadata of page `pfn` through the index, or None (not indexed).
#[inline(always)]
pub(super) fn lookup(pfn: u64) -> Option<&'static PageMeta> {
    meta_addr(pfn).map(|meta| {
        // SAFETY: a non-zero base was computed by `build` from a node memmap that covers
        // every page of this section, so the address is pfn's entry in that 'static memmap.
        unsafe { &*(meta as *const PageMeta) }
    })
}

/// The owner word of page `pfn` through the index, or None (not indexed): `lookup`'s
/// entry's `owner`, read without a reference in between (kfree's lookup).
#[inline(always)]
pub(super) fn owner(pfn: u64) -> Option<usize> {
    meta_addr(pfn).map(|meta| {
        // SAFETY: as in `lookup`: the address is pfn's entry in a 'static node memmap.
        let entry = unsafe { &*(meta as *const PageMeta) };
        entry.owner.load(Ordering::Relaxed)
    })
}

/// Builds and publishes the index: for each section up to the highest managed page, the
/// biased base of the only node whose managed ranges meet it, when that node's memmap
/// covers the whole section; otherwise 0 (`page_meta` then looks the page up by range,
/// never by span: a node's span may hold another node's range). Returns the sections
/// indexed. Once, on the boot CPU, before any lookup matters.
pub(super) fn build(nodes: &[Option<Node>]) -> usize {
    let end_pfn = nodes
        .iter()
        .flatten()
        .flat_map(|n| n.ranges.iter().map(|r| r.1 >> PAGE_SHIFT))
        .max()
        .unwrap_or(0);
    let nr = end_pfn.div_ceil(SECTION_PAGES).min(MAX_SECTIONS) as usize;
    // Per section: the node index + 1 meeting it, or MIXED.
    const MIXED: usize = usize::MAX;
    let mut owner = alloc::vec![0usize; nr];
    for node in nodes.iter().flatten() {
        for &(s, e) in node
            .ranges
            .iter()
            .filter(|r| r.1 >> PAGE_SHIFT > r.0 >> PAGE_SHIFT)
        {
            let first = ((s >> PAGE_SHIFT) >> SECTION_PAGES_SHIFT) as usize;
            let last = (((e >> PAGE_SHIFT) - 1) >> SECTION_PAGES_SHIFT) as usize;
            for o in owner.iter_mut().take(last + 1).skip(first) {
                *o = match *o {
                    0 => node.id.index() + 1,
                    x if x == node.id.index() + 1 => x,
                    _ => MIXED,
                };
            }
        }
    }
    let bases: Vec<usize> = owner
        .iter()
        .enumerate()
        .map(|(i, &o)| {
            let Some(node) = o
                .checked_sub(1)
                .filter(|_| o != MIXED)
                .and_then(|n| nodes.get(n)?.as_ref())
            else {
                return 0;
            };
            let first_pfn = (i as u64) << SECTION_PAGES_SHIFT;
            let pages: &'static [PageMeta] = node.memmap.pages;
            first_pfn
                .checked_sub(node.base_pfn)
                .and_then(|off| pages.get(off as usize..(off + SECTION_PAGES) as usize))
                .map_or(0, |sec| {
                    (sec.as_ptr() as usize)
                        .wrapping_sub(first_pfn as usize * core::mem::size_of::<PageMeta>())
                })
        })
        .collect();
    let bases = bases.leak();
    BASES.store(bases.as_mut_ptr(), Ordering::Relaxed);
    SECTIONS.store(bases.len(), Ordering::Release);
    bases.len()
}

/// Whether page `pfn` is found through the index (the test of the index counts them).
pub(super) fn indexed(pfn: u64) -> bool {
    lookup(pfn).is_some()
}
