//! The direct map: every physical byte mapped at one virtual offset the bootloader chose
//! (Linux's PAGE_OFFSET, with `phys_to_virt`/`virt_to_phys` for its __va/__pa). This file
//! owns the offset: no other file adds or subtracts it (tests/structure.rs checks).

use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use numalab_algo::page::{PhysAddr, VirtAddr};

/// Virtual address of physical address 0. Zero until `init`: a lookup before then reads
/// the identity, which no allocator's address matches (kernel addresses are in the upper
/// half), so it fails its caller's checks rather than touching memory.
static OFFSET: AtomicU64 = AtomicU64::new(0);

/// Records the direct map's offset (early boot, once, before anything maps an address).
pub fn init(offset: u64) {
    OFFSET.store(offset, Relaxed);
}

/// The direct-map address of `phys`.
#[inline(always)]
pub fn phys_to_virt(phys: PhysAddr) -> VirtAddr {
    VirtAddr::new(OFFSET.load(Relaxed).wrapping_add(phys.as_u64()))
}

/// The direct-map address of `phys` as a raw pointer (dereferencing it is the caller's
/// unsafe business).
#[inline(always)]
pub fn phys_to_ptr<T>(phys: PhysAddr) -> *mut T {
    phys_to_virt(phys).as_u64() as *mut T
}

/// The physical address of the direct-map address `virt`, or None when `virt` lies below
/// the direct map (then it is no direct-map address).
#[inline(always)]
pub fn virt_to_phys(virt: VirtAddr) -> Option<PhysAddr> {
    virt.as_u64()
        .checked_sub(OFFSET.load(Relaxed))
        .map(PhysAddr::new)
}

/// `virt_to_phys` without the check, for the free fast paths: an address below the direct
/// map wraps to a physical address far above any node's memory, which every lookup of
/// managed pages refuses, so the caller tests nothing for it.
#[inline(always)]
pub fn virt_to_phys_unchecked(virt: VirtAddr) -> PhysAddr {
    PhysAddr::new(virt.as_u64().wrapping_sub(OFFSET.load(Relaxed)))
}

/// The physical address of a pointer into the direct map (heap memory), or None.
#[inline(always)]
pub fn ptr_to_phys<T>(ptr: *const T) -> Option<PhysAddr> {
    virt_to_phys(VirtAddr::new(ptr as u64))
}

/// Whether the direct map starts on a multiple of `align_bytes` (a power of two).
#[cfg(feature = "ktest")]
pub fn is_aligned_to(align_bytes: u64) -> bool {
    OFFSET.load(Relaxed).is_multiple_of(align_bytes)
}

/// The offset as the x86_64 crate's page-table walker wants it (`OffsetPageTable`'s base):
/// for paging.rs only.
pub(super) fn base() -> u64 {
    OFFSET.load(Relaxed)
}
