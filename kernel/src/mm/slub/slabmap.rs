//! SLUB's page -> owner words (slab descriptor, the large-kmalloc mark, or 0), for kfree and
//! the slow free path. The one place an owner lives is the page's frame metadata,
//! `PageMeta::owner`, which every managed page has: a lookup is `frame::page_meta` (the vmemmap:
//! a bound check, the section's word, `VMEMMAP + pfn * 32`) and one load of the owner word. There is no second map to fall out of
//! step with it (a per-GiB owner map, allocated lazily, missed the owners
//! written while its chunk could not be allocated, and kfree dropped those slabs' objects).

use crate::arch::direct_map;
use crate::mm::frame;
use core::sync::atomic::Ordering::Relaxed;

use numalab_algo::page::{PhysAddr, VirtAddr, PAGE_SHIFT};

#[inline(always)]
fn phys_of(virt: usize) -> Option<usize> {
    direct_map::virt_to_phys(VirtAddr::new(virt as u64)).map(|p| p.as_u64() as usize)
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
    frame::page_owner(direct_map::virt_to_phys_unchecked(VirtAddr::new(
        virt as u64,
    )))
}

/// `get` through the vmemmap only: 0 also for a page it does not map (a section
/// shared by two nodes), where the caller then asks `get`. The free fast paths' lookup.
#[inline(always)]
pub fn get_fast(virt: usize) -> usize {
    frame::page_owner_fast(direct_map::virt_to_phys_unchecked(VirtAddr::new(
        virt as u64,
    )))
}
