//! What the SLUB core needs from its machine, as one trait: word access to object and
//! descriptor memory, pages with an owner word, the running CPU, interrupt masking, a lock,
//! a clock and cross-CPU calls. The kernel implements it over real memory (kernel/src/mm/
//! slub/); the host tests implement it over an array with fake CPUs (fake.rs).

use crate::topology::{CpuId, NodeId, Topology};
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

/// Pages given to a slab.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlabPages {
    /// Address of the first byte (page aligned).
    pub base: usize,
    /// The node whose memory the pages are.
    pub node: NodeId,
}

/// Bytes of one slab descriptor (Linux's struct slab), taken from `Platform::alloc_desc`.
pub const DESC_BYTES: usize = 64;

/// A misuse found by a check, reported by the core after it released its locks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Report<'a> {
    pub cache: &'a str,
    pub addr: usize,
    pub kind: crate::slub::stats::ErrorKind,
    /// CPU of the last allocation and free of the object (debug flag U), if known.
    pub track: Option<(u16, u16)>,
}

/// Owner words below this are no slab descriptor: 0 (no owner) or a platform's own mark.
pub const OWNER_MARKS: usize = 8;

/// The machine under the SLUB core.
///
/// Memory words are 8-byte aligned addresses the core got from `alloc_pages` or
/// `alloc_desc`. `load`/`store` are plain (relaxed) accesses; `cas` is a full compare-and-swap.
pub trait Platform: Sync {
    /// The per-node list_lock.
    type Lock: Sync + Send + 'static;
    /// An owned value in the memory of a chosen node (Linux's kmalloc_node'd or
    /// kmem_cache_alloc_node'd structure): derefs to the value; dropping it drops the value
    /// and gives the memory back. `Box<T>` on a platform without node memory of its own.
    type NodeBox<T: Send + Sync + 'static>: core::ops::Deref<Target = T> + Send + Sync;
    /// One value per CPU of the topology, each on its CPU's memory node (Linux's
    /// alloc_percpu); `super::placed::HeapPerCpu` on a platform without node memory.
    type PerCpu<T: Default + Send + Sync + 'static>: super::placed::PerCpuSlots<T>;

    fn new_lock(&self) -> Self::Lock;
    /// Runs `f` with `lock` held and interrupts off.
    fn with_lock<R>(&self, lock: &Self::Lock, f: impl FnOnce() -> R) -> R;
    /// Runs `f` with `lock` held if it can be taken at once; None when it is taken. The
    /// default always takes it (platforms without contention).
    fn try_with_lock<R>(&self, lock: &Self::Lock, f: impl FnOnce() -> R) -> Option<R> {
        Some(self.with_lock(lock, f))
    }

    fn topology(&self) -> &Topology;
    /// The running CPU.
    fn cpu(&self) -> CpuId;
    /// `value` in the memory of `node`, or of the nearest node with memory when `node` has
    /// none free (Linux's kmalloc_node, which falls back the same way); None when no node
    /// has memory. The cache's per-node lists and barns live in such boxes.
    fn node_box<T: Send + Sync + 'static>(
        &self,
        value: T,
        node: NodeId,
    ) -> Option<Self::NodeBox<T>>;
    /// A default `T` for every CPU of the topology, each in the memory of its CPU's memory
    /// node (Linux's alloc_percpu: the units of each CPU's node); None when out of memory.
    fn alloc_per_cpu<T: Default + Send + Sync + 'static>(&self) -> Option<Self::PerCpu<T>>;
    /// The running CPU's value of `slots` (Linux's this_cpu_ptr). The kernel reaches it
    /// with one GS-relative add.
    #[inline(always)]
    fn this_cpu<'a, T: Default + Send + Sync + 'static>(
        &self,
        slots: &'a Self::PerCpu<T>,
    ) -> &'a T {
        super::placed::PerCpuSlots::get(slots, self.cpu().index())
    }
    /// The fast paths' commit on the running CPU's own slot: if the words `pair[0]` and
    /// `pair[1]` (adjacent, 16-byte aligned: freelist, tid) equal `old`, replace them with `new` and return true,
    /// as one step that no interrupt on this CPU can split (the kernel's cmpxchg16b, Linux's
    /// this_cpu_cmpxchg_double). Only the owning CPU calls it on its slot. The default is for
    /// platforms without interrupts (the host's fake CPUs are threads with no interrupts).
    #[inline(always)]
    fn cpu_cmpxchg_double(
        &self,
        pair: [&AtomicUsize; 2],
        old: [usize; 2],
        new: [usize; 2],
    ) -> bool {
        if pair[0].load(Relaxed) == old[0] && pair[1].load(Relaxed) == old[1] {
            pair[0].store(new[0], Relaxed);
            pair[1].store(new[1], Relaxed);
            true
        } else {
            false
        }
    }
    /// Adds one to a counter of the running CPU's own slot in one step that no interrupt on
    /// this CPU can split (the kernel: a plain `inc` of memory, Linux's this_cpu_inc).
    #[inline(always)]
    fn cpu_inc(&self, counter: &AtomicU64) {
        counter.fetch_add(1, Relaxed);
    }
    /// Disables interrupts; returns whether they were enabled.
    fn irq_save(&self) -> bool;
    /// Restores the state `irq_save` returned.
    fn irq_restore(&self, were_enabled: bool);
    /// A cycle counter (rdtsc since the kernel's clock epoch): lock hold times and the
    /// remote-node gate. Counted from an epoch the kernel's code fixes, not from reset, so
    /// that the gate's samples repeat in a det boot (the firmware's time before the kernel
    /// depends on the host).
    fn now(&self) -> u64;
    /// Runs `f` on every online CPU (each on its own CPU) and waits.
    fn on_each_cpu(&self, f: &(dyn Fn() + Sync));

    fn load(&self, addr: usize) -> usize;
    fn store(&self, addr: usize, value: usize);
    /// Atomically replaces `old` with `new` at `addr`; false if the word was not `old`.
    fn cas(&self, addr: usize, old: usize, new: usize) -> bool;

    /// `1 << order` contiguous pages, preferably on `node` (None: the running CPU's memory
    /// node), falling back to other nodes like the page allocator does.
    fn alloc_pages(&self, order: u8, node: Option<NodeId>) -> Option<SlabPages>;
    /// `1 << order` contiguous pages of `node` only (Linux's __GFP_THISNODE): None when
    /// `node` has none, never another node's.
    fn alloc_pages_on(&self, order: u8, node: NodeId) -> Option<SlabPages>;
    /// Gives back what `alloc_pages` or `alloc_pages_on` returned.
    fn free_pages(&self, base: usize, order: u8);
    /// Writes `owner` into the owner word of each of the `nr_pages` pages at `base`.
    fn set_owner(&self, base: usize, nr_pages: usize, owner: usize);
    /// The owner word of the page holding `addr`: 0 when none or not RAM, a mark of the
    /// platform's below `OWNER_MARKS` (the kernel's large kmalloc), else the address of a
    /// slab descriptor (8-byte aligned, so never below `OWNER_MARKS`).
    fn owner(&self, addr: usize) -> usize;
    /// `owner` where a short lookup finds it, else 0 (the caller then takes a path that asks
    /// `owner`): the free fast paths' lookup, with no call to a slow lookup inside it.
    #[inline(always)]
    fn owner_fast(&self, addr: usize) -> usize {
        self.owner(addr)
    }
    /// Whether `node` has free memory (prefer_local asks before taking a remote partial).
    fn node_has_free_memory(&self, node: NodeId) -> bool;

    /// A zeroed, 8-byte aligned block of `DESC_BYTES`, or None when out of memory.
    fn alloc_desc(&self) -> Option<usize>;
    fn free_desc(&self, desc: usize);

    /// A zeroed, 8-byte aligned block of `bytes` for a sheaf (Linux kmallocs its sheaves),
    /// or None when out of memory. Called with interrupts off and no lock of the cache held
    /// except, possibly, the running CPU's sheaf trylock (a nested allocation from the same
    /// cache then fails that trylock and takes the slab path).
    fn alloc_block(&self, bytes: usize) -> Option<usize>;
    /// Gives back what `alloc_block(bytes)` returned.
    fn free_block(&self, addr: usize, bytes: usize);

    /// Prints a misuse report (called with no lock held).
    fn report(&self, report: &Report<'_>);
}
