//! Which node and which page descriptor (struct page) a physical address has: the vmemmap's
//! arithmetic first (vmemmap.rs), the nodes' managed ranges for pages it does not map.

use super::{vmemmap, FrameAllocator, PageMeta, FRAME};
use numalab_algo::page::{Pfn, PhysAddr};
use numalab_algo::topology::NodeId;

/// The node whose managed pages include `phys`, never found by a node's span (a span may
/// hold another node's memory): a page the frame allocator has a state for (free, allocated,
/// cached) in a section the vmemmap maps is its section's node (page_to_nid); any other page
/// is looked up by the nodes' ranges.
#[inline]
pub fn node_of_phys(phys: PhysAddr) -> Option<NodeId> {
    let pfn = phys.pfn().as_u64();
    match vmemmap::managed_node(pfn) {
        Some(node) => Some(node),
        None => FRAME.get()?.node_map.node_of(pfn),
    }
}

/// First pfn of `node`'s memmap span (None without memory).
pub fn node_base_pfn(node: NodeId) -> Option<Pfn> {
    Some(Pfn::new(
        FRAME.get()?.nodes.get(node.index())?.as_ref()?.base_pfn,
    ))
}

/// The metadata (struct page) of the page holding `phys`, if a node manages it; a page no
/// node manages but inside a 2 MiB section a node's memmap covers (the node's first or last
/// section, a reserved page) gets its entry there, not free and with no owner, as Linux's
/// reserved struct pages (node.rs: spans cover whole sections). Managed
/// pages (whatever the layout of the nodes' ranges) always get the same `PageMeta`: the one
/// of the node whose managed ranges hold the page. Fast path: the vmemmap (plain statics, one
/// bounds check, one load of the section's word, then `VMEMMAP + pfn * 32`; vmemmap.rs);
/// pages of sections it leaves unmapped are looked up by range.
#[inline(always)]
pub fn page_meta(phys: PhysAddr) -> Option<&'static PageMeta> {
    match vmemmap::pfn_to_page(phys.pfn().as_u64()) {
        Some(meta) => Some(meta),
        None => page_meta_slow(phys),
    }
}

/// The owner word (`PageMeta::owner`) of the page holding `phys`, 0 when no node manages
/// it: `page_meta(phys)?.owner` without a reference in between (kfree's lookup).
#[inline(always)]
pub fn page_owner(phys: PhysAddr) -> usize {
    match vmemmap::owner(phys.pfn().as_u64()) {
        Some(owner) => owner,
        None => page_owner_slow(phys),
    }
}

/// `page_owner` through the vmemmap only: 0 for a page it does not map (the caller then
/// asks `page_owner`). The free fast paths' lookup: a bounds check and three loads, with
/// no call inside.
#[inline(always)]
pub fn page_owner_fast(phys: PhysAddr) -> usize {
    vmemmap::owner(phys.pfn().as_u64()).unwrap_or(0)
}

/// `page_owner` for pages the vmemmap does not map.
#[cold]
#[inline(never)]
fn page_owner_slow(phys: PhysAddr) -> usize {
    page_meta_slow(phys).map_or(0, |m| m.owner.load(core::sync::atomic::Ordering::Relaxed))
}

/// `page_meta` for pages the vmemmap does not map.
#[cold]
#[inline(never)]
fn page_meta_slow(phys: PhysAddr) -> Option<&'static PageMeta> {
    page_meta_by_range(FRAME.get()?, phys)
}

/// The slow path: the node whose managed ranges hold the page (`node_of_phys`'s map).
#[cold]
pub(super) fn page_meta_by_range(fa: &FrameAllocator, phys: PhysAddr) -> Option<&'static PageMeta> {
    let pfn = phys.pfn().as_u64();
    let nid = fa.node_map.node_of(pfn)?;
    fa.nodes.get(nid.index())?.as_ref()?.meta(Pfn::new(pfn))
}
