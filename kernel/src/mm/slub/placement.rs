//! Where SLUB's own structures live (docs/slub.md "Where a cache's own structures live"):
//! each node's lists and barn in a block of that node's memory (Linux's kmem_cache_alloc_node
//! of kmem_cache_node and kmalloc_node of the barn). Each CPU's slab slot is run-time per-CPU
//! data (`percpu::PerCpuBox`, Linux's alloc_percpu of kmem_cache_cpu: platform.rs), on its
//! CPU's memory node.
//!
//! `NodeBox`: a value in a block of a per-node pool of power-of-two blocks (64 bytes to a
//! page) carved from pages of that node (`Policy::Preferred`: a memoryless or exhausted node
//! gets the nearest memory, as kmalloc_node falls back).

use super::per_node::PerNode;
use crate::mm::frame::{self, Policy, PAGE_SIZE};
use crate::sync::IrqSpinLock;
use alloc::vec::Vec;
use core::ptr::NonNull;
use numalab_algo::page::VirtAddr;
use numalab_algo::topology::NodeId;

/// Block sizes of the per-node pool: 64 << class bytes, up to a page.
const CLASSES: usize = 7;
const _: () = assert!(64 << (CLASSES - 1) == PAGE_SIZE as usize);

/// Per node, per class: the first free block (linked through their first word), 0 when none.
static POOL: IrqSpinLock<Vec<[usize; CLASSES]>> = IrqSpinLock::new(Vec::new());
/// Pool pages per node (SLUB's held bytes).
static POOL_PAGES_ON: PerNode = PerNode::new();

fn class_of(bytes: usize, align: usize) -> Option<usize> {
    let b = bytes.max(align).max(64).next_power_of_two();
    (b <= PAGE_SIZE as usize).then(|| b.trailing_zeros() as usize - 6)
}

fn node_of_virt(addr: usize) -> Option<NodeId> {
    frame::node_of_phys(frame::virt_to_phys(VirtAddr::new(addr as u64)))
}

/// A block of class `class` from `node`'s pool (memoryless: the nearest memory node's).
fn pool_alloc(class: usize, node: NodeId) -> Option<usize> {
    let topo = crate::topology::get();
    let node = topo.mem_node(node);
    let mut pool = POOL.lock();
    if pool.len() < topo.nr_nodes() {
        pool.resize(topo.nr_nodes(), [0; CLASSES]);
    }
    let mut on = node;
    if pool.get(node.index())?[class] == 0 {
        let pages = frame::alloc_pages(0, Policy::Preferred(node)).ok()?;
        on = pages.node();
        POOL_PAGES_ON.add(on, 1);
        let (phys, _) = pages.into_raw();
        let base = frame::phys_to_virt(phys).as_u64() as usize;
        let size = 64usize << class;
        let head = &mut pool.get_mut(on.index())?[class];
        for b in (0..PAGE_SIZE as usize / size).rev() {
            let block = base + b * size;
            // SAFETY: `block` lies in the page just taken from the frame allocator (direct
            // map, writable, owned by the pool forever), 8-byte aligned.
            unsafe { (block as *mut usize).write(*head) };
            *head = block;
        }
    }
    let head = &mut pool.get_mut(on.index())?[class];
    let block = *head;
    // SAFETY: `block` is a free pool block: its first word links the next free one.
    *head = unsafe { (block as *const usize).read() };
    Some(block)
}

fn pool_free(block: usize, class: usize) {
    let Some(node) = node_of_virt(block) else {
        return;
    };
    let mut pool = POOL.lock();
    if let Some(heads) = pool.get_mut(node.index()) {
        // SAFETY: `block` is a pool block its owner gives back once (NodeBox's drop); its
        // first word is free to link it.
        unsafe { (block as *mut usize).write(heads[class]) };
        heads[class] = block;
    }
}

/// Pages the pool holds on `node`.
pub fn held_pages_on(node: NodeId) -> usize {
    POOL_PAGES_ON.get(node)
}

/// A value in a block of a node's memory (`Platform::node_box`).
pub struct NodeBox<T> {
    ptr: NonNull<T>,
}

// SAFETY: a NodeBox owns its T as a Box does: sending it sends the T, sharing it shares &T.
unsafe impl<T: Send> Send for NodeBox<T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for NodeBox<T> {}

impl<T> NodeBox<T> {
    /// `value` in `node`'s memory (nearest memory when it has none); None when out of memory
    /// or when `T` is above a page.
    pub fn new(value: T, node: NodeId) -> Option<NodeBox<T>> {
        let class = class_of(core::mem::size_of::<T>(), core::mem::align_of::<T>())?;
        let block = pool_alloc(class, node)?;
        let ptr = NonNull::new(block as *mut T)?;
        // SAFETY: the block is free, at least size_of::<T>() bytes and aligned to its size,
        // a power of two at least align_of::<T>().
        unsafe { ptr.as_ptr().write(value) };
        Some(NodeBox { ptr })
    }
}

impl<T> core::ops::Deref for NodeBox<T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        // SAFETY: `ptr` holds a live T until drop.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T> Drop for NodeBox<T> {
    fn drop(&mut self) {
        // SAFETY: the T is live and dropped once, here; the block goes back after.
        unsafe { core::ptr::drop_in_place(self.ptr.as_ptr()) };
        if let Some(class) = class_of(core::mem::size_of::<T>(), core::mem::align_of::<T>()) {
            pool_free(self.ptr.as_ptr() as usize, class);
        }
    }
}

/// Makes the pool's per-node counters (`slub::init`, before the first cache).
pub fn init() {
    POOL_PAGES_ON.init();
}
