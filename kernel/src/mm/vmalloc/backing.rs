//! What vmalloc needs from the layers below it, in one place: 4 KiB physical pages on a NUMA
//! node, the calling CPU's identity, a TLB shootdown, and running a function on every CPU.
//!
//! Pages come from the page frame allocator (mm::frame), CPU identity from percpu, shootdowns
//! and cross-CPU runs from smp; this file is the only one vmalloc needs to change when those
//! interfaces do.

use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::mm::frame;
use crate::topology::{CpuId, NodeId};
use numalab_algo::page::{PhysAddr, VirtAddr};

/// Pages currently handed out by `alloc_page` and not yet given back (conservation checks).
static PAGES_OUT: AtomicU64 = AtomicU64::new(0);

/// A zero-filled or uninitialized 4 KiB page from NUMA node `node` (preferred: the nearest
/// node with memory when it has none free): its physical address and the node it came from.
#[inline]
pub fn alloc_page(node: NodeId, zero: bool) -> Option<(PhysAddr, NodeId)> {
    alloc_block(node, 0, zero)
}

/// A block of 2^`order` physically contiguous pages from NUMA node `node` (preferred), in one
/// buddy call: its physical address and the node it came from.
#[inline]
pub fn alloc_block(node: NodeId, order: u8, zero: bool) -> Option<(PhysAddr, NodeId)> {
    let pages = frame::alloc_pages(order, frame::Policy::Preferred(node)).ok()?;
    if zero {
        // SAFETY: the block is ours (just allocated) and the direct map covers it.
        unsafe { core::ptr::write_bytes(pages.virt_ptr(), 0, pages.size_bytes()) };
    }
    let got = pages.node();
    let phys = pages.into_raw().0;
    PAGES_OUT.fetch_add(1 << order, Relaxed);
    Some((phys, got))
}

/// Gives back a page from `alloc_page`.
///
/// # Safety
/// `phys` came from `alloc_page`, is not given back twice, and nothing uses it any more.
#[inline]
pub unsafe fn free_page(phys: PhysAddr) {
    // SAFETY: the same contract, for an order-0 block.
    unsafe { free_block(phys, 0) }
}

/// Gives back a block from `alloc_block` in one buddy call.
///
/// # Safety
/// `(phys, order)` came from `alloc_block`, the block is not given back twice, and nothing
/// uses any of its pages any more.
#[inline]
pub unsafe fn free_block(phys: PhysAddr, order: u8) {
    PAGES_OUT.fetch_sub(1 << order, Relaxed);
    // SAFETY: per this function's contract, (phys, order) came from Pages::into_raw in
    // alloc_block and nothing uses the block any more; dropping the Pages frees it.
    drop(unsafe { frame::Pages::from_raw(phys, order) });
}

/// Pages handed out and not given back.
pub fn pages_out() -> u64 {
    PAGES_OUT.load(Relaxed)
}

/// The calling CPU.
#[inline]
pub fn this_cpu() -> CpuId {
    crate::percpu::cpu_id()
}

/// The nearest NUMA node with memory to the calling CPU.
#[inline]
pub fn this_mem_node() -> NodeId {
    crate::percpu::mem_node_id()
}

/// CPUs that can run vmalloc code.
pub fn nr_cpus() -> usize {
    crate::percpu::nr_cpus_online().max(1)
}

/// Flushes [start, end) from every online CPU's TLB and waits (one shootdown).
pub fn tlb_shootdown(start: VirtAddr, end: VirtAddr) {
    crate::smp::tlb_shootdown(start, end);
}

/// Runs `f` on every online CPU at once and waits for all (the caller runs its share).
pub fn on_each_cpu(f: &(dyn Fn(CpuId) + Sync)) {
    crate::smp::on_each_cpu(f);
}

/// The TSC frequency, once calibrated (at SMP bring-up); None before.
pub fn tsc_hz() -> Option<u64> {
    Some(crate::arch::tsc_hz()).filter(|&hz| hz > 0)
}
