//! The vmemmap (Linux's SPARSEMEM_VMEMMAP): every node's page descriptors (`PageMeta`) in one
//! virtually contiguous array indexed by pfn, in a top-level region of its own, so that
//! pfn_to_page is `VMEMMAP + pfn * 32` and page_to_pfn its inverse. Each 2 MiB section a
//! single node manages is mapped onto that node's memmap (carved from the node's own memory:
//! node.rs), so the buddy's view of a page (through the direct map) and the vmemmap's are one
//! `PageMeta`; holes stay unmapped; a section two nodes share stays unmapped and its pages
//! are looked up by range (the layout: numalab_algo::frame::vmemmap).
//!
//! Published as plain statics once the mappings are in place (frame init, boot CPU): the
//! base, the sections spanned, and per section its node + 1 (0: not mapped), so a lookup is
//! a bounds check, one load of the section's word and the arithmetic, with no `Once`.

use super::memmap::PageMeta;
use super::node::Node;
use crate::arch::paging;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use numalab_algo::frame::vmemmap::{layout, NodeMemmap, Section, SECTION_PAGES};
use numalab_algo::page::{PhysAddr, VirtAddr, PAGE_SHIFT, PAGE_SIZE, SECTION_PAGES_SHIFT};
use numalab_algo::topology::NodeId;
use x86_64::structures::paging::PageTableFlags;

/// Bytes of descriptors per section (16 KiB: four pages).
const SECTION_META_BYTES: u64 = SECTION_PAGES * core::mem::size_of::<PageMeta>() as u64;
/// Sections mapped at most (512 GiB of physical address space, 16 KiB of vmemmap each: 4 GiB
/// of the 512 GiB region); pages above are looked up by range.
const MAX_SECTIONS: usize = 1 << 18;

/// The vmemmap's base: the address `PageMeta` of pfn 0 has (0 before `build`).
static BASE: AtomicUsize = AtomicUsize::new(0);
/// Per section: its node + 1 when mapped, 0 when not (a hole, a shared section). Leaked by
/// `build`, never written again.
static SECTION_NODE: AtomicPtr<u16> = AtomicPtr::new(core::ptr::null_mut());
/// Sections in `SECTION_NODE` (0 before `build`: every lookup misses).
static SECTIONS: AtomicUsize = AtomicUsize::new(0);

/// Sections the vmemmap spans (0 before `build`).
pub(super) fn sections() -> usize {
    SECTIONS.load(Ordering::Acquire)
}

/// The vmemmap's base (0 before `build`).
pub(super) fn base() -> usize {
    BASE.load(Ordering::Relaxed)
}

/// What `build` made.
pub(super) struct Built {
    pub sections: usize,
    pub mapped: usize,
    pub base: usize,
}

/// The node + 1 of `pfn`'s section when the vmemmap maps it, else 0.
#[inline(always)]
fn section_node(pfn: u64) -> u16 {
    let sec = (pfn >> SECTION_PAGES_SHIFT) as usize;
    // Acquire pairs with `build`'s Release: a non-zero count means the table and the
    // mappings are in place.
    if sec >= SECTIONS.load(Ordering::Acquire) {
        return 0;
    }
    // SAFETY: `sec` is below the published count, and SECTION_NODE points to that many
    // entries, leaked by `build` and never written again.
    unsafe { *SECTION_NODE.load(Ordering::Relaxed).add(sec) }
}

/// The address of `pfn`'s descriptor in the vmemmap, whether mapped or not.
#[inline(always)]
fn meta_addr(pfn: u64) -> usize {
    BASE.load(Ordering::Relaxed)
        .wrapping_add(pfn as usize * core::mem::size_of::<PageMeta>())
}

/// pfn_to_page: the descriptor of page `pfn` when the vmemmap maps it; None for a pfn in a
/// hole, beyond the last section, or in a section two nodes share (the caller then looks it
/// up by range).
#[inline(always)]
pub(super) fn pfn_to_page(pfn: u64) -> Option<&'static PageMeta> {
    if section_node(pfn) == 0 {
        return None;
    }
    // SAFETY: the section is mapped onto a node memmap that covers all of it (`build`), and
    // that memmap is 'static, initialized PageMetas (node.rs).
    Some(unsafe { &*(meta_addr(pfn) as *const PageMeta) })
}

/// The owner word of page `pfn` (`pfn_to_page(pfn)?.owner`) with no reference in between,
/// None when the vmemmap does not map it (kfree's lookup).
#[inline(always)]
pub(super) fn owner(pfn: u64) -> Option<usize> {
    if section_node(pfn) == 0 {
        return None;
    }
    // SAFETY: as in `pfn_to_page`.
    let entry = unsafe { &*(meta_addr(pfn) as *const PageMeta) };
    Some(entry.owner.load(Ordering::Relaxed))
}

/// page_to_pfn: the pfn whose descriptor `meta` is, when `meta` lies in the vmemmap (a
/// descriptor reached through the direct map, as the buddy holds them, has none). No
/// caller turns a descriptor back into a pfn yet (the buddy works on indexes, `Pages` on
/// addresses); the tests check it inverts `pfn_to_page`.
#[cfg_attr(not(feature = "ktest"), allow(dead_code))]
#[inline(always)]
pub(super) fn page_to_pfn(meta: &PageMeta) -> Option<u64> {
    let base = BASE.load(Ordering::Relaxed);
    let off = (meta as *const PageMeta as usize).checked_sub(base)?;
    let pfn = (off / core::mem::size_of::<PageMeta>()) as u64;
    (base != 0 && section_node(pfn) != 0).then_some(pfn)
}

/// The node that manages page `pfn` according to the vmemmap: its section's node, for a
/// page the frame allocator has a state for (free, allocated or on a per-CPU list: a
/// managed page); None otherwise (the caller asks the ranges).
#[inline(always)]
pub(super) fn managed_node(pfn: u64) -> Option<NodeId> {
    let node = section_node(pfn);
    if node == 0 {
        return None;
    }
    // SAFETY: as in `pfn_to_page`.
    let entry = unsafe { &*(meta_addr(pfn) as *const PageMeta) };
    (entry.state() != 0).then_some(NodeId(node - 1))
}

/// Maps the vmemmap and publishes it: claims a top-level region, maps each section one node
/// manages onto that node's memmap, leaves the rest unmapped. Once, on the boot CPU, with
/// the frame allocator up (page tables come from it). An error (no free top-level slot, no
/// memory for a page table) leaves the vmemmap unpublished: every lookup goes by range.
pub(super) fn build(nodes: &[Option<Node>]) -> Result<Built, paging::PagingError> {
    let ranges: Vec<(usize, Vec<(u64, u64)>)> = nodes
        .iter()
        .flatten()
        .map(|n| {
            let pfns = n
                .ranges
                .iter()
                .map(|&(s, e)| (s >> PAGE_SHIFT, e >> PAGE_SHIFT))
                .collect();
            (n.id.index(), pfns)
        })
        .collect();
    let memmaps: Vec<NodeMemmap> = nodes
        .iter()
        .flatten()
        .zip(&ranges)
        .map(|(n, (id, pfns))| NodeMemmap {
            node: *id,
            base_pfn: n.base_pfn,
            pages: n.memmap.pages.len() as u64,
            ranges: pfns,
        })
        .collect();
    let l = layout(&memmaps, MAX_SECTIONS);
    let base = paging::reserve_pml4_slot()?;
    let with_memory: Vec<&Node> = nodes.iter().flatten().collect();
    let mut table = alloc::vec![0u16; l.nr_sections()];
    let flags = PageTableFlags::WRITABLE | PageTableFlags::NO_EXECUTE | PageTableFlags::GLOBAL;
    for (sec, s) in l.sections.iter().enumerate() {
        let Section::Node {
            owner,
            memmap_index,
        } = *s
        else {
            continue;
        };
        let node = with_memory[owner];
        let phys = node.memmap_phys.0 + memmap_index * core::mem::size_of::<PageMeta>() as u64;
        let virt = base + sec as u64 * SECTION_META_BYTES;
        for page in 0..SECTION_META_BYTES / PAGE_SIZE {
            // SAFETY: the physical pages are this section's slice of the node's memmap, which
            // lives for good (node.rs); the virtual pages are in the region just claimed for
            // the vmemmap, each mapped once.
            unsafe {
                paging::map_4k(
                    VirtAddr::new(virt + page * PAGE_SIZE),
                    PhysAddr::new(phys + page * PAGE_SIZE),
                    flags,
                )?
            };
        }
        table[sec] = node.id.0 + 1;
    }
    let mapped = l.mapped_sections();
    let table = table.leak();
    BASE.store(base as usize, Ordering::Relaxed);
    SECTION_NODE.store(table.as_mut_ptr(), Ordering::Relaxed);
    SECTIONS.store(table.len(), Ordering::Release);
    Ok(Built {
        sections: table.len(),
        mapped,
        base: base as usize,
    })
}
