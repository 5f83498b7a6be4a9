//! One NUMA node's page frames (Linux's pglist_data with its one zone): the managed ranges,
//! the memmap carved from the node's own memory, and the buddy allocator under the node lock.

use super::memmap::{MemMap, PageMeta, PAGE_META_BYTES};
use crate::sync::IrqSpinLock;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use numalab_algo::frame::buddy::Buddy;
use numalab_algo::memrange;
use numalab_algo::page::{Pfn, PhysAddr};
use numalab_algo::topology::NodeId;

pub use numalab_algo::page::{PAGE_SHIFT, PAGE_SIZE};

/// A node with memory.
pub struct Node {
    pub id: NodeId,
    /// First pfn of the span the memmap covers (first range's start to last range's end;
    /// other nodes' memory may lie inside it).
    pub base_pfn: u64,
    pub memmap: MemMap,
    /// The node lock: the buddy allocator and its free lists.
    pub buddy: IrqSpinLock<Buddy<MemMap>>,
    /// Physical [start, end) ranges handed to the buddy (usable, minus reserved, minus memmap).
    pub ranges: Vec<(u64, u64)>,
    /// Where this node's memmap lives (physical [start, end)).
    pub memmap_phys: (u64, u64),
    pub managed_pages: usize,
    /// Frees refused as invalid (unaligned, double, wrong order) for pages of this node.
    pub invalid_frees: AtomicU64,
}

/// Why a node has no allocator.
#[derive(Debug)]
pub enum NodeSkip {
    /// No usable page after reservations.
    NoMemory,
    /// No range can hold the node's memmap (bytes needed).
    NoRoomForMemmap(u64),
}

impl Node {
    /// Builds node `id` over `usable` (page-aligned physical ranges, reservations already
    /// removed): carves the memmap off the top of its highest range that holds it, and frees
    /// the rest into the buddy.
    pub fn build(id: NodeId, usable: &[(u64, u64)]) -> Result<Node, NodeSkip> {
        let (Some(first), Some(last)) = (usable.first(), usable.last()) else {
            return Err(NodeSkip::NoMemory);
        };
        // The span, so the memmap, covers whole 2 MiB sections (SPARSEMEM's unit), so that
        // every section of the node is mapped whole into the vmemmap (vmemmap.rs; kfree's
        // owner lookup, one load). A span starting or ending inside a section left that section to the lookup
        // by range: ~150 instructions more per kfree of an object on such a page (0-2 MiB
        // holds early slabs), so a fast path's instruction count moved with where its
        // object happened to lie (fast64 changes once left unexplained). The pages added
        // at either end are not managed: their metadata stays in the not-free state, as in
        // a hole.
        let section = 1u64 << numalab_algo::page::SECTION_PAGES_SHIFT;
        let base_pfn = (first.0 >> PAGE_SHIFT) & !(section - 1);
        let end_pfn = (last.1 >> PAGE_SHIFT).next_multiple_of(section);
        let span_pages = (end_pfn - base_pfn) as usize;
        let memmap_bytes = (span_pages as u64 * PAGE_META_BYTES).div_ceil(PAGE_SIZE) * PAGE_SIZE;
        let Some((memmap_phys, ranges)) = memrange::carve_top(usable, memmap_bytes, PAGE_SIZE)
        else {
            return Err(NodeSkip::NoRoomForMemmap(memmap_bytes));
        };
        if ranges.is_empty() {
            return Err(NodeSkip::NoMemory);
        }
        // SAFETY: memmap_phys is usable RAM of this node (from the bootloader's Usable map,
        // minus every reservation), mapped in the direct map, page aligned;
        // it is removed from `ranges`, so the buddy never hands it out, and nothing else owns
        // it: the frame allocator is built once.
        let memmap = unsafe {
            MemMap::init_at(
                super::phys_to_virt(PhysAddr::new(memmap_phys.0)),
                span_pages,
            )
        };
        let mut buddy = Buddy::new(memmap, base_pfn);
        let mut managed_pages = 0;
        for &(s, e) in &ranges {
            managed_pages += buddy.add_free_range(s >> PAGE_SHIFT, e >> PAGE_SHIFT);
        }
        Ok(Node {
            id,
            base_pfn,
            memmap,
            buddy: IrqSpinLock::new(buddy),
            ranges,
            memmap_phys,
            managed_pages,
            invalid_frees: AtomicU64::new(0),
        })
    }

    /// The metadata of `pfn`, if it is in this node's span. The span may hold other nodes'
    /// pages (whose metadata is in their own memmaps): callers find the node by range first
    /// (`frame::page_meta`), or know the page is this node's.
    #[inline]
    pub fn meta(&self, pfn: Pfn) -> Option<&'static PageMeta> {
        let pages: &'static [PageMeta] = self.memmap.pages;
        pages.get(pfn.as_u64().wrapping_sub(self.base_pfn) as usize)
    }

    /// Whether the physical range [phys, phys+bytes) lies inside one managed range.
    pub fn holds(&self, phys: PhysAddr, bytes: u64) -> bool {
        let phys = phys.as_u64();
        self.ranges
            .iter()
            .any(|&(s, e)| s <= phys && phys + bytes <= e)
    }

    pub fn count_invalid_free(&self) {
        self.invalid_frees.fetch_add(1, Relaxed);
    }
}
