//! Page tables for the vmalloc range: claims a PML4 slot (arch::paging), then maps and unmaps
//! 4 KiB pages inside it itself, allocating intermediate tables on demand, and flushes the
//! local TLB. arch::paging serializes every change under one global lock; vmalloc's own
//! slot is kept off that lock so that the designs under test share no lock on map/unmap.
//!
//! Intermediate tables are installed with a compare-and-swap on the parent entry, so two
//! CPUs mapping neighbouring areas never need a lock; tables are never freed (as in Linux,
//! the vmalloc range keeps its page tables). Leaf entries of an area are written only by the
//! area's owner.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use numalab_algo::page::{PhysAddr, VirtAddr};
use numalab_algo::topology::NodeId;
use spin::Once;

use x86_64::registers::control::Cr3;
use x86_64::registers::model_specific::{Efer, EferFlags};

const PRESENT: u64 = 1 << 0;
const WRITABLE: u64 = 1 << 1;
const HUGE: u64 = 1 << 7;
const NO_EXECUTE: u64 = 1 << 63;
const ADDR_MASK: u64 = 0x000f_ffff_ffff_f000;

/// Page-table pages vmalloc allocated (kept for the range's lifetime).
static TABLE_PAGES: AtomicU64 = AtomicU64::new(0);

/// The same pages per node (indexed by NodeId), set up by `init_holder`.
static TABLE_PAGES_ON: Once<&'static [AtomicU64]> = Once::new();

pub fn table_pages() -> u64 {
    TABLE_PAGES.load(Ordering::Relaxed)
}

/// vmalloc's page tables as a holder of frame pages: they are never given back, so the frame
/// allocator's conservation checks (free + held per node) must count them.
struct TablePages;

impl crate::mm::frame::PageHolder for TablePages {
    fn name(&self) -> &'static str {
        "vmalloc page tables"
    }

    fn held_bytes_on(&self, node: NodeId) -> u64 {
        TABLE_PAGES_ON
            .get()
            .and_then(|c| c.get(node.index()))
            .map_or(0, |n| {
                n.load(Ordering::Relaxed) * crate::mm::frame::PAGE_SIZE
            })
    }
}

/// Sets up the per-node counts of table pages for `nr_nodes` nodes and registers them as a
/// page holder; once, before the first table is allocated (vmalloc's init).
pub fn init_holder(nr_nodes: usize) {
    let mut first = false;
    TABLE_PAGES_ON.call_once(|| {
        first = true;
        (0..nr_nodes)
            .map(|_| AtomicU64::new(0))
            .collect::<Vec<_>>()
            .leak()
    });
    if first {
        crate::mm::frame::register_holder(&TablePages);
    }
}

/// The entry `index` of the table at physical address `table`.
fn entry(table: PhysAddr, index: usize) -> &'static AtomicU64 {
    let ptr = crate::arch::direct_map::phys_to_ptr::<AtomicU64>(table) as *const AtomicU64;
    // SAFETY: `table` is a page-table page (from CR3 or a present non-huge entry), which
    // the direct map covers; index < 512 keeps the pointer inside that page; page-table
    // entries are naturally aligned u64 words that the CPU also accesses atomically.
    unsafe { &*ptr.add(index & 511) }
}

fn pml4_phys() -> PhysAddr {
    PhysAddr::new(Cr3::read().0.start_address().as_u64())
}

/// Claims a free kernel-half PML4 slot through the shared page-table module (so CPU stacks
/// and vmalloc never pick the same one) and returns its base and index.
pub fn claim_slot() -> Option<(u64, usize)> {
    let base = crate::arch::paging::reserve_pml4_slot().ok()?;
    Some((base, ((base >> 39) & 511) as usize))
}

fn leaf_flags() -> u64 {
    if Efer::read().contains(EferFlags::NO_EXECUTE_ENABLE) {
        PRESENT | WRITABLE | NO_EXECUTE
    } else {
        PRESENT | WRITABLE
    }
}

/// Returns the next-level table of `e`, installing a zeroed one if it is empty.
fn next_table(e: &AtomicU64) -> Option<PhysAddr> {
    let cur = e.load(Ordering::Acquire);
    if cur & PRESENT != 0 {
        return (cur & HUGE == 0).then_some(PhysAddr::new(cur & ADDR_MASK));
    }
    let (phys, node) = super::backing::alloc_page(NodeId(0), true)?;
    match e.compare_exchange(
        0,
        phys.as_u64() | PRESENT | WRITABLE,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        Ok(_) => {
            TABLE_PAGES.fetch_add(1, Ordering::Relaxed);
            // A table allocated before init_holder (none is) would look leaked to the
            // conservation checks, which then fail loudly.
            if let Some(n) = TABLE_PAGES_ON.get().and_then(|c| c.get(node.index())) {
                n.fetch_add(1, Ordering::Relaxed);
            }
            Some(phys)
        }
        Err(other) => {
            // SAFETY: the page came from alloc_page just now and nothing else saw it.
            unsafe { super::backing::free_page(phys) };
            (other & PRESENT != 0 && other & HUGE == 0).then_some(PhysAddr::new(other & ADDR_MASK))
        }
    }
}

fn index(virt: VirtAddr, level: u32) -> usize {
    ((virt.as_u64() >> (12 + 9 * level)) & 511) as usize
}

/// The leaf entry for `virt`, creating tables on the way when `create`.
fn leaf(virt: VirtAddr, create: bool) -> Option<&'static AtomicU64> {
    let mut table = pml4_phys();
    for level in (1..=3).rev() {
        let e = entry(table, index(virt, level));
        table = if create {
            next_table(e)?
        } else {
            let v = e.load(Ordering::Acquire);
            if v & PRESENT == 0 || v & HUGE != 0 {
                return None;
            }
            PhysAddr::new(v & ADDR_MASK)
        };
    }
    Some(entry(table, index(virt, 0)))
}

/// Maps the 4 KiB page at `virt` to `phys`. False when a page table could not be allocated.
///
/// # Safety
/// `virt` is a page in a vmalloc area the caller owns and has not mapped yet; `phys` is a
/// page the caller may expose at `virt`.
pub unsafe fn map_page(virt: VirtAddr, phys: PhysAddr) -> bool {
    match leaf(virt, true) {
        Some(e) => {
            e.store(
                (phys.as_u64() & ADDR_MASK) | leaf_flags(),
                Ordering::Release,
            );
            true
        }
        None => false,
    }
}

/// Unmaps the page at `virt` and returns the physical page it mapped; invalidates it in the
/// calling CPU's TLB only (other CPUs are flushed by the next purge).
///
/// # Safety
/// `virt` is a page of a vmalloc area the caller owns and nobody accesses any more.
pub unsafe fn unmap_page(virt: VirtAddr) -> Option<PhysAddr> {
    let e = leaf(virt, false)?;
    let old = e.swap(0, Ordering::AcqRel);
    crate::arch::tlb::flush_page(virt);
    (old & PRESENT != 0).then_some(PhysAddr::new(old & ADDR_MASK))
}

/// The physical page mapped at `virt`, if any.
pub fn translate(virt: VirtAddr) -> Option<PhysAddr> {
    let v = leaf(virt, false)?.load(Ordering::Acquire);
    (v & PRESENT != 0).then_some(PhysAddr::new(v & ADDR_MASK))
}
