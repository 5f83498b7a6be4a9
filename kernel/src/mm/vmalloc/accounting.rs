//! `vmalloc.nr_vmalloc`: the per-NUMA-node count of pages backing vmalloc areas (Linux 7.1's
//! `NR_VMALLOC` node counter, "mm: vmalloc: streamline vmalloc memory accounting"). Off by
//! default; when on, every buddy block an area gets adds its pages to the counter of the node
//! it came from, and vfree subtracts them again: one update per block, as Linux's
//! `mod_node_page_state(page, NR_VMALLOC, 1 << order)`. Each node's counter has one word per
//! CPU (Linux's counters are per-CPU too), so updates stay local.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering::Relaxed};

use numalab_algo::page::PhysAddr;
use spin::Once;

use super::counter::PerCpuCounter;
use crate::topology::NodeId;

static ENABLED: AtomicBool = AtomicBool::new(false);
static NODES: Once<Box<[PerCpuCounter]>> = Once::new();

/// Sets the knob and makes one counter per NUMA node (at vmalloc init).
pub fn init(enabled: bool, nr_nodes: usize) {
    NODES.call_once(|| {
        (0..nr_nodes.max(1))
            .map(|_| PerCpuCounter::default())
            .collect()
    });
    ENABLED.store(enabled, Relaxed);
}

/// Turns the counter on or off (tests: both states in one boot; nothing else may allocate
/// from vmalloc meanwhile, or its areas are freed under the other state).
#[cfg(feature = "ktest")]
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Relaxed);
}

/// Whether the counter is kept (`vmalloc.nr_vmalloc=1`).
#[inline]
pub fn enabled() -> bool {
    ENABLED.load(Relaxed)
}

/// Counts `pages` more vmalloc pages on `node` (knob on only).
#[inline]
pub fn add(node: NodeId, pages: u64) {
    if !enabled() {
        return;
    }
    if let Some(c) = NODES.get().and_then(|n| n.get(node.index())) {
        c.add(pages);
    }
}

/// Counts `pages` vmalloc pages fewer on the node of the block at `phys` (knob on only).
#[inline]
pub fn sub(phys: PhysAddr, pages: u64) {
    if !enabled() {
        return;
    }
    let Some(node) = crate::mm::frame::node_of_phys(phys) else {
        return;
    };
    if let Some(c) = NODES.get().and_then(|n| n.get(node.index())) {
        c.sub(pages);
    }
}

/// The vmalloc pages of every NUMA node, as Linux's per-node `nr_vmalloc` (all 0 when off).
pub fn per_node() -> Vec<u64> {
    NODES
        .get()
        .map(|n| n.iter().map(PerCpuCounter::get).collect())
        .unwrap_or_default()
}
