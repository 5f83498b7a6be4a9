//! Where SLUB's own structures live (issue 43 item 5, docs/slub.md "Where a cache's own
//! structures live"): each node's lists and barn in a block of that node's memory (Linux's
//! kmem_cache_alloc_node of kmem_cache_node and kmalloc_node of the barn), each CPU's slab
//! slot in a region of its memory node (Linux's alloc_percpu of kmem_cache_cpu).
//!
//! - `NodeBox`: a value in a block of a per-node pool of power-of-two blocks (64 bytes to a
//!   page) carved from pages of that node (`Policy::Preferred`: a memoryless or exhausted node
//!   gets the nearest memory, as kmalloc_node falls back).
//! - `CpuSlots`: a slot of `CPU_SLAB_BYTES` in every CPU's region. `init` takes one region of
//!   `REGION_BYTES` per CPU of the topology on that CPU's memory node and stores each CPU's
//!   delta (its region's address minus CPU 0's) in its `PerCpu` (Linux's pcpu first chunk and
//!   `__per_cpu_offset`): the fast paths reach the running CPU's slot with the slot's address
//!   in CPU 0's region plus one GS-relative load, as before. At most `SLOTS_PER_CPU` caches
//!   live at once (Linux grows more chunks; numalab refuses the cache: `CreateError::NoMemory`).

use super::per_node::PerNode;
use crate::mm::frame::{self, Policy, PAGE_SIZE};
use crate::sync::IrqSpinLock;
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::marker::PhantomData;
use core::ptr::NonNull;
use numalab_algo::page::VirtAddr;
use numalab_algo::slub::{PerCpuSlots, CPU_SLAB_BYTES};
use numalab_algo::topology::{CpuId, NodeId};
use spin::Once;

/// Block sizes of the per-node pool: 64 << class bytes, up to a page.
const CLASSES: usize = 7;
const _: () = assert!(64 << (CLASSES - 1) == PAGE_SIZE as usize);

/// Per node, per class: the first free block (linked through their first word), 0 when none.
static POOL: IrqSpinLock<Vec<[usize; CLASSES]>> = IrqSpinLock::new(Vec::new());
/// Pool pages per node (SLUB's held bytes).
static POOL_PAGES_ON: PerNode = PerNode::new();

/// Bytes of each CPU's region of slab slots (order 4: 64 KiB).
const REGION_ORDER: u8 = 4;
pub const REGION_BYTES: usize = (PAGE_SIZE as usize) << REGION_ORDER;
/// Caches with per-CPU slots alive at once.
pub const SLOTS_PER_CPU: usize = REGION_BYTES / CPU_SLAB_BYTES;

struct Regions {
    /// CPU 0's region (the slots' addresses are in it).
    base: usize,
    /// Per CPU: its region's address minus `base` (wrapping).
    deltas: Box<[usize]>,
    /// Per CPU: the node its region is on.
    nodes: Box<[NodeId]>,
}

static REGIONS: Once<Regions> = Once::new();
/// Which slots are taken.
static SLOTS_USED: IrqSpinLock<[bool; SLOTS_PER_CPU]> = IrqSpinLock::new([false; SLOTS_PER_CPU]);

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

/// Pages the pool and the per-CPU regions hold on `node`.
pub fn held_pages_on(node: NodeId) -> usize {
    let regions = REGIONS
        .get()
        .map_or(0, |r| r.nodes.iter().filter(|&&n| n == node).count());
    POOL_PAGES_ON.get(node) + (regions << REGION_ORDER)
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

/// Takes every CPU's region of slab slots on its memory node and points each online CPU's
/// slot offset at it (`slub::init`, before the first cache).
pub fn init() {
    POOL_PAGES_ON.init();
    let topo = crate::topology::get();
    let nr = topo.nr_cpus().max(1);
    let mut bases = Vec::with_capacity(nr);
    let mut nodes = Vec::with_capacity(nr);
    for cpu in 0..nr {
        let node = topo.mem_node(topo.node_of_cpu(CpuId(cpu as u16)));
        let pages =
            frame::alloc_pages(REGION_ORDER, Policy::Preferred(node)).unwrap_or_else(|_| {
                crate::mm::out_of_memory(format_args!(
                    "slub: no memory for CPU {cpu}'s per-CPU slab region"
                ))
            });
        nodes.push(pages.node());
        let (phys, _) = pages.into_raw();
        bases.push(frame::phys_to_virt(phys).as_u64() as usize);
    }
    let base = bases[0];
    let r = REGIONS.call_once(|| Regions {
        base,
        deltas: bases.iter().map(|b| b.wrapping_sub(base)).collect(),
        nodes: nodes.into_boxed_slice(),
    });
    for (cpu, &delta) in r.deltas.iter().enumerate() {
        if let Some(area) = crate::percpu::of(CpuId(cpu as u16)) {
            area.set_slub_slot_off(delta);
        }
    }
}

/// One `T` per CPU, each in its CPU's region (`Platform::alloc_per_cpu`).
pub struct CpuSlots<T> {
    /// The slot's address in CPU 0's region: CPU c's is this plus c's delta.
    pub(super) base: usize,
    slot: usize,
    nr: usize,
    _t: PhantomData<T>,
}

// SAFETY: CpuSlots owns its Ts (one per CPU) as a Box<[T]> does.
unsafe impl<T: Send> Send for CpuSlots<T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for CpuSlots<T> {}

impl<T: Default> CpuSlots<T> {
    /// A default T in a free slot of every CPU's region; None when every slot is taken, or
    /// when `T` does not fit a slot.
    pub fn new() -> Option<CpuSlots<T>> {
        if core::mem::size_of::<T>() > CPU_SLAB_BYTES || core::mem::align_of::<T>() > 64 {
            return None;
        }
        let r = REGIONS.get()?;
        let slot = {
            let mut used = SLOTS_USED.lock();
            let s = used.iter().position(|u| !u)?;
            used[s] = true;
            s
        };
        let slots = CpuSlots {
            base: r.base + slot * CPU_SLAB_BYTES,
            slot,
            nr: r.deltas.len(),
            _t: PhantomData,
        };
        for cpu in 0..slots.nr {
            // SAFETY: the slot is ours (marked used above) in every CPU's region: a fresh
            // CPU_SLAB_BYTES block, 64-byte aligned, that T fits (checked above).
            unsafe { (slots.addr(cpu) as *mut T).write(T::default()) };
        }
        Some(slots)
    }
}

impl<T> CpuSlots<T> {
    fn addr(&self, cpu: usize) -> usize {
        let r = REGIONS
            .get()
            .expect("slub: per-CPU regions exist before any cache");
        self.base.wrapping_add(r.deltas[cpu])
    }
}

impl<T: Send + Sync> PerCpuSlots<T> for CpuSlots<T> {
    fn get(&self, cpu: usize) -> &T {
        assert!(cpu < self.nr, "slub: CPU {cpu} has no slot");
        // SAFETY: a live T of this slot in CPU `cpu`'s region (written in `new`).
        unsafe { &*(self.addr(cpu) as *const T) }
    }
    fn len(&self) -> usize {
        self.nr
    }
}

impl<T> Drop for CpuSlots<T> {
    fn drop(&mut self) {
        for cpu in 0..self.nr {
            // SAFETY: each CPU's T is live and dropped once, here.
            unsafe { core::ptr::drop_in_place(self.addr(cpu) as *mut T) };
        }
        SLOTS_USED.lock()[self.slot] = false;
    }
}
