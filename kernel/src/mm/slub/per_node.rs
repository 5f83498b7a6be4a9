//! SLUB's counters per node of the machine (pages of its pools, large kmallocs), one slot for
//! each of the topology's nodes.

use alloc::boxed::Box;
use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use numalab_algo::topology::NodeId;
use spin::Once;

/// A counter per node of the machine: one slot for each of the topology's nodes (at most
/// Linux's MAX_NUMNODES, 1024, the bound the ACPI and numactl readers enforce), allocated from
/// the heap on first use, which [`super::init`] makes before SLUB takes its first page, so no
/// two nodes ever share a slot. (A fixed array of 64 counted nodes 63 and up
/// in one slot, and the soak's per-node conservation of node 63 failed on 66 nodes.)
pub struct PerNode(Once<Box<[AtomicUsize]>>);

impl Default for PerNode {
    fn default() -> PerNode {
        PerNode::new()
    }
}

impl PerNode {
    pub const fn new() -> PerNode {
        PerNode(Once::new())
    }

    /// The slots; the first call (on the boot CPU, from `super::init`) allocates them.
    fn slots(&self) -> &[AtomicUsize] {
        self.0.call_once(|| {
            let nodes = crate::topology::get().nr_nodes().max(1);
            (0..nodes).map(|_| AtomicUsize::new(0)).collect()
        })
    }

    /// `node`'s slot. Every node SLUB sees comes from the frame allocator, which knows only the
    /// topology's nodes: a node outside them is a bug, and panics here rather than being
    /// counted on another node.
    fn slot(&self, node: NodeId) -> &AtomicUsize {
        let slots = self.slots();
        match slots.get(node.index()) {
            Some(s) => s,
            None => panic!(
                "slub: node {} outside the machine's {} nodes",
                node.0,
                slots.len()
            ),
        }
    }

    /// Makes the slots now (before anything may count into them with a lock held).
    pub fn init(&self) {
        self.slots();
    }

    pub fn add(&self, node: NodeId, n: usize) {
        self.slot(node).fetch_add(n, Relaxed);
    }

    pub fn sub(&self, node: NodeId, n: usize) {
        self.slot(node).fetch_sub(n, Relaxed);
    }

    pub fn get(&self, node: NodeId) -> usize {
        self.slot(node).load(Relaxed)
    }

    /// How many nodes have a slot (the machine's node count).
    pub fn nodes(&self) -> usize {
        self.slots().len()
    }
}
