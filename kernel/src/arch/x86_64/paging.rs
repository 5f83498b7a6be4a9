//! Kernel page-table access: map, remap and unmap 4 KiB pages in the live page tables (the
//! ones the bootloader built, shared by every CPU), and hand out unused top-level regions.
//!
//! The tables are reached through the direct map (direct_map.rs) with the `x86_64` crate's `OffsetPageTable`. Every CPU runs on the same PML4, so a new mapping is
//! visible everywhere at once; a changed or removed mapping is flushed only on the calling
//! CPU here, and the caller shoots it down on the others (`crate::smp::tlb_shootdown`).
//!
//! Page-table pages come from the source the frame allocator registers when it is up
//! (`set_table_page_source`; the heap before); they are never freed. This module imports no
//! mm code: it is handed what it needs. One `IrqSpinLock` serializes all changes; nothing is printed while it is held.
//! Lock order: callers' locks (vmalloc) > this page-table lock > the frame allocator's node lock.

use core::alloc::Layout;
use numalab_algo::page::{PhysAddr, VirtAddr};
use x86_64::registers::control::Cr3;
#[cfg(feature = "ktest")]
use x86_64::structures::paging::Translate;
use x86_64::structures::paging::{
    FrameAllocator, Mapper, OffsetPageTable, Page, PageTable, PageTableFlags, PhysFrame, Size4KiB,
};
use x86_64::{PhysAddr as HwPhysAddr, VirtAddr as HwVirtAddr};

use crate::sync::IrqSpinLock;
use spin::Once;

pub use numalab_algo::page::PAGE_SIZE;

/// Why a mapping change failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PagingError {
    /// The virtual page is already mapped (to the given frame).
    AlreadyMapped(u64),
    /// The virtual page is not mapped.
    NotMapped,
    /// The address lies inside a 2 MiB or 1 GiB mapping, which this module does not split.
    InsideHugePage,
    /// No memory for a page-table page.
    OutOfMemory,
    /// No free top-level slot left in the kernel half.
    NoFreeSlot,
}

/// Serializes every change to the shared page tables.
static LOCK: IrqSpinLock<()> = IrqSpinLock::new(());

/// Where page-table pages come from once the frame allocator is up: a function returning the
/// physical address of a page nobody else uses.
static TABLE_PAGE_SOURCE: Once<fn() -> Option<u64>> = Once::new();

/// Registers the page source for new page tables (the frame allocator, once it is up): each
/// call returns an unused page's physical address, or None when there is no memory.
pub fn set_table_page_source(source: fn() -> Option<u64>) {
    TABLE_PAGE_SOURCE.call_once(|| source);
}

/// Hands out zeroed 4 KiB pages for new page tables: from the registered source once there is
/// one (the frame allocator, the calling CPU's node), from the heap before. Page-table pages
/// are never freed.
struct TablePageSource;

// SAFETY: every frame returned is freshly allocated, zeroed and leaked (never freed or
// reused), so nothing else uses it.
unsafe impl FrameAllocator<Size4KiB> for TablePageSource {
    fn allocate_frame(&mut self) -> Option<PhysFrame<Size4KiB>> {
        let phys = if let Some(source) = TABLE_PAGE_SOURCE.get() {
            source()?
        } else {
            let layout = Layout::from_size_align(PAGE_SIZE as usize, PAGE_SIZE as usize).ok()?;
            // SAFETY: the layout has a non-zero size.
            let ptr = unsafe { alloc::alloc::alloc(layout) };
            if ptr.is_null() {
                return None;
            }
            super::direct_map::ptr_to_phys(ptr)?.as_u64()
        };
        // SAFETY: the page was just allocated (and leaked) for this table; it is mapped in
        // the direct map.
        unsafe {
            core::ptr::write_bytes(
                super::direct_map::phys_to_ptr::<u8>(PhysAddr::new(phys)),
                0,
                PAGE_SIZE as usize,
            )
        };
        PhysFrame::from_start_address(HwPhysAddr::new(phys)).ok()
    }
}

/// Runs `f` with the live page tables, under the page-table lock.
fn with_tables<R>(f: impl FnOnce(&mut OffsetPageTable<'static>, &mut TablePageSource) -> R) -> R {
    let _guard = LOCK.lock();
    let (pml4_frame, _) = Cr3::read();
    let pml4 = super::direct_map::phys_to_ptr::<PageTable>(PhysAddr::new(
        pml4_frame.start_address().as_u64(),
    ));
    // SAFETY: CR3 names the live PML4, which the direct map covers; the lock
    // makes this the only mutable view of the tables for the duration of `f`.
    let mut mapper =
        unsafe { OffsetPageTable::new(&mut *pml4, HwVirtAddr::new(super::direct_map::base())) };
    f(&mut mapper, &mut TablePageSource)
}

/// The physical address `virt` translates to, if mapped.
#[cfg(feature = "ktest")]
pub fn translate(virt: VirtAddr) -> Option<PhysAddr> {
    let virt = HwVirtAddr::try_new(virt.as_u64()).ok()?;
    with_tables(|m, _| m.translate_addr(virt).map(|p| PhysAddr::new(p.as_u64())))
}

/// Maps the 4 KiB page at `virt` to the frame at `phys` with `flags` (PRESENT is added).
///
/// # Safety
/// `phys` must be memory (or MMIO) that the caller owns for as long as the mapping exists,
/// and `virt` must be a page no other code expects to be unmapped or mapped elsewhere.
pub unsafe fn map_4k(
    virt: VirtAddr,
    phys: PhysAddr,
    flags: PageTableFlags,
) -> Result<(), PagingError> {
    let page = Page::<Size4KiB>::containing_address(HwVirtAddr::new(virt.as_u64()));
    let frame = PhysFrame::<Size4KiB>::containing_address(HwPhysAddr::new(phys.as_u64()));
    with_tables(|m, frames| {
        // The parents inherit PRESENT|WRITABLE: leaf flags decide the real permissions.
        let parent = PageTableFlags::PRESENT | PageTableFlags::WRITABLE;
        // SAFETY: forwarded from this function's contract.
        match unsafe {
            m.map_to_with_table_flags(page, frame, flags | PageTableFlags::PRESENT, parent, frames)
        } {
            Ok(flush) => {
                flush.flush();
                Ok(())
            }
            Err(e) => Err(map_error(e)),
        }
    })
}

/// Unmaps the 4 KiB page at `virt` and flushes it on this CPU; returns the frame it mapped.
/// Other CPUs may still cache the old translation until a shootdown.
///
/// # Safety
/// Nothing may use the page after this (on any CPU, once shot down).
pub unsafe fn unmap_4k(virt: VirtAddr) -> Result<PhysAddr, PagingError> {
    let page = Page::<Size4KiB>::containing_address(HwVirtAddr::new(virt.as_u64()));
    with_tables(|m, _| match m.unmap(page) {
        Ok((frame, flush)) => {
            flush.flush();
            Ok(PhysAddr::new(frame.start_address().as_u64()))
        }
        Err(x86_64::structures::paging::mapper::UnmapError::ParentEntryHugePage) => {
            Err(PagingError::InsideHugePage)
        }
        Err(_) => Err(PagingError::NotMapped),
    })
}

/// Points the mapped 4 KiB page `virt` at frame `phys` (same flags), flushing this CPU only.
///
/// # Safety
/// As for `map_4k`; and users of the old frame through `virt` must tolerate the switch.
#[cfg(feature = "ktest")]
pub unsafe fn remap_4k(virt: VirtAddr, phys: PhysAddr) -> Result<PhysAddr, PagingError> {
    let page = Page::<Size4KiB>::containing_address(HwVirtAddr::new(virt.as_u64()));
    let frame = PhysFrame::<Size4KiB>::containing_address(HwPhysAddr::new(phys.as_u64()));
    with_tables(|m, frames| {
        let flags = match m.translate(page.start_address()) {
            x86_64::structures::paging::mapper::TranslateResult::Mapped { flags, .. } => flags,
            _ => return Err(PagingError::NotMapped),
        };
        let (old, flush) = m.unmap(page).map_err(|_| PagingError::InsideHugePage)?;
        flush.flush();
        let parent = PageTableFlags::PRESENT | PageTableFlags::WRITABLE;
        // SAFETY: forwarded from this function's contract; the page was just unmapped.
        unsafe { m.map_to_with_table_flags(page, frame, flags, parent, frames) }
            .map_err(map_error)?
            .flush();
        Ok(PhysAddr::new(old.start_address().as_u64()))
    })
}

fn map_error(e: x86_64::structures::paging::mapper::MapToError<Size4KiB>) -> PagingError {
    use x86_64::structures::paging::mapper::MapToError;
    match e {
        MapToError::FrameAllocationFailed => PagingError::OutOfMemory,
        MapToError::ParentEntryHugePage => PagingError::InsideHugePage,
        MapToError::PageAlreadyMapped(f) => PagingError::AlreadyMapped(f.start_address().as_u64()),
    }
}

/// Claims an unused PML4 entry in the kernel half (indexes 256..511, highest free first) by
/// giving it an empty page-directory-pointer table, and returns the 512 GiB region's base.
/// Used for regions that need guard pages (CPU stacks, vmalloc); never released.
pub fn reserve_pml4_slot() -> Result<u64, PagingError> {
    with_tables(|m, frames| {
        let frame = frames.allocate_frame().ok_or(PagingError::OutOfMemory)?;
        let pml4 = m.level_4_table_mut();
        for index in (256..512).rev() {
            if pml4[index].is_unused() {
                pml4[index].set_frame(frame, PageTableFlags::PRESENT | PageTableFlags::WRITABLE);
                // Sign-extend bit 47 (always set in the kernel half).
                return Ok(0xffff_0000_0000_0000 | ((index as u64) << 39));
            }
        }
        Err(PagingError::NoFreeSlot)
    })
}
