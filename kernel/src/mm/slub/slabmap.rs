//! SLUB's page -> owner words (slab descriptor, the large-kmalloc mark, or 0), for kfree and
//! the slow free path. The one place an owner lives is the page's frame metadata,
//! `PageMeta::owner`, which every managed page has: a lookup is `frame::page_meta` (the vmemmap:
//! a bound check, the section's word, `VMEMMAP + pfn * 32`) and one load of the owner word. There is no second map to fall out of
//! step with it (issue 14 bug 6: a per-GiB owner map, allocated lazily, missed the owners
//! written while its chunk could not be allocated, and kfree dropped those slabs' objects).

use crate::mm::frame;
use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use numalab_algo::page::{PhysAddr, PAGE_SHIFT};

/// The direct map's offset, copied from the boot information by `init` so that kfree reads
/// a plain static instead of checking a `Once` (usize::MAX before: every lookup misses).
static PHYS_OFFSET: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Copies the direct-map offset (SLUB init, before the first slab).
pub fn init() {
    PHYS_OFFSET.store(crate::early::info().phys_offset as usize, Relaxed);
}

#[inline(always)]
fn phys_of(virt: usize) -> Option<usize> {
    virt.checked_sub(PHYS_OFFSET.load(Relaxed))
}

/// Records `owner` in the PageMeta of each of the `nr_pages` pages at direct-map address
/// `virt` (pages the frame allocator handed out, so each has one).
pub fn set(virt: usize, nr_pages: usize, owner: usize) {
    let Some(phys) = phys_of(virt) else { return };
    for i in 0..nr_pages {
        if let Some(meta) = frame::page_meta(PhysAddr::new((phys + (i << PAGE_SHIFT)) as u64)) {
            meta.owner.store(owner, Relaxed);
        }
    }
}

/// The owner word of the page holding `virt` (0: none, or not a managed page). An address
/// below the direct map wraps to a physical address no node manages, which the frame
/// allocator's slow lookup answers with 0, so the fast path tests nothing for it.
#[inline(always)]
pub fn get(virt: usize) -> usize {
    frame::page_owner(PhysAddr::new(
        virt.wrapping_sub(PHYS_OFFSET.load(Relaxed)) as u64
    ))
}

/// `get` through the vmemmap only: 0 also for a page it does not map (a section
/// shared by two nodes), where the caller then asks `get`. The free fast paths' lookup.
#[inline(always)]
pub fn get_fast(virt: usize) -> usize {
    frame::page_owner_fast(PhysAddr::new(
        virt.wrapping_sub(PHYS_OFFSET.load(Relaxed)) as u64
    ))
}
