//! The SLUB core's `Platform` on real hardware: direct-map memory words, pages from the
//! frame allocator with the slab pointer in their `PageMeta::owner`, IrqSpinLock list_locks,
//! the running CPU from percpu, interrupts masked with cli, rdtsc, cross-CPU calls, and a
//! pool of slab descriptors carved from whole pages.
//!
//! This is SLUB's only unsafe code: the word accesses.

use crate::mm::frame::{self, Pages, Policy, PAGE_SIZE};
use crate::percpu::PerCpuBox;
use crate::sync::IrqSpinLock;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use numalab_algo::page::VirtAddr;
use numalab_algo::slub::{PerCpuSlots, Platform, Report, SlabPages, DESC_BYTES};
use numalab_algo::topology::{CpuId, NodeId, Topology};
use spin::Once;

pub use super::per_node::PerNode;

/// The kernel's machine for the SLUB core (a zero-sized handle).
#[derive(Clone, Copy, Default)]
pub struct KernelPlatform;

/// Free descriptors (linked through their first word) and the pages carved for them.
struct DescPool {
    free: usize,
    pages: usize,
}

static DESC_POOL: IrqSpinLock<DescPool> = IrqSpinLock::new(DescPool { free: 0, pages: 0 });
/// Descriptor pool pages per node.
static DESC_PAGES_ON: PerNode = PerNode::new();
/// Sheaf blocks live, per kmalloc class (an index into KMALLOC_SIZES): the kmalloc objects
/// that the sheaves themselves occupy, for the soak's per-cache object check.
static SHEAF_BLOCKS: [core::sync::atomic::AtomicI64;
    numalab_algo::slub::geometry::KMALLOC_SIZES.len()] = [const { core::sync::atomic::AtomicI64::new(0) };
    numalab_algo::slub::geometry::KMALLOC_SIZES.len()];

/// Where sheaves come from: kmalloc, which registers itself once its caches exist (so that
/// this file, which kmalloc's caches run on, does not import kmalloc).
pub(super) struct BlockSource {
    pub alloc: fn(usize) -> Option<core::ptr::NonNull<u8>>,
    /// # Safety
    /// Gives back a block `alloc` returned, once.
    pub free: unsafe fn(core::ptr::NonNull<u8>),
}

static BLOCK_SOURCE: Once<BlockSource> = Once::new();

/// Registers the allocator of sheaf blocks (kmalloc::init).
pub(super) fn set_block_source(source: BlockSource) {
    BLOCK_SOURCE.call_once(|| source);
}

/// Sheaf blocks live in kmalloc class `class`.
pub fn sheaf_blocks(class: usize) -> i64 {
    SHEAF_BLOCKS.get(class).map_or(0, |n| n.load(Relaxed))
}

/// Makes the per-node counters of the descriptor pool (before the first descriptor).
pub(super) fn init() {
    DESC_PAGES_ON.init();
}

/// Descriptor pool pages on `node`.
pub fn desc_pool_pages_on(node: NodeId) -> usize {
    DESC_PAGES_ON.get(node)
}

/// Nodes SLUB's own per-node counters have slots for (the machine's node count).
pub fn counted_nodes() -> usize {
    DESC_PAGES_ON.nodes()
}

/// Reports misuses as warnings: `slub: CACHE: KIND at ADDR`.
static REPORTS: AtomicUsize = AtomicUsize::new(0);

/// Misuse reports printed since boot.
pub fn reports_printed() -> usize {
    REPORTS.load(Relaxed)
}

#[inline(always)]
fn word(addr: usize) -> &'static AtomicUsize {
    debug_assert!(addr & 7 == 0);
    // SAFETY: the SLUB core only passes 8-byte aligned addresses inside memory it owns:
    // slab pages it got from `alloc_pages` (objects are checked against the CPU slab's range
    // or their page's owner word before any access) and descriptors from `alloc_desc`. All
    // of it lies in the direct map, stays mapped for the kernel's life, and is accessed only
    // through atomics, so a shared reference to an AtomicUsize there is valid.
    unsafe { AtomicUsize::from_ptr(addr as *mut usize) }
}

// SLUB's per-CPU slots are the kernel's run-time per-CPU data (percpu/dynamic.rs).
impl<T: Send + Sync> PerCpuSlots<T> for PerCpuBox<T> {
    fn get(&self, cpu: usize) -> &T {
        self.on(CpuId(cpu as u16))
    }
    fn len(&self) -> usize {
        PerCpuBox::len(self)
    }
}

impl Platform for KernelPlatform {
    type Lock = IrqSpinLock<()>;
    type NodeBox<T: Send + Sync + 'static> = super::placement::NodeBox<T>;
    type PerCpu<T: Default + Send + Sync + 'static> = PerCpuBox<T>;

    fn node_box<T: Send + Sync + 'static>(
        &self,
        value: T,
        node: NodeId,
    ) -> Option<super::placement::NodeBox<T>> {
        super::placement::NodeBox::new(value, node)
    }

    fn alloc_per_cpu<T: Default + Send + Sync + 'static>(&self) -> Option<PerCpuBox<T>> {
        PerCpuBox::new(|_| T::default())
    }

    fn new_lock(&self) -> IrqSpinLock<()> {
        IrqSpinLock::new(())
    }

    #[inline]
    fn with_lock<R>(&self, lock: &IrqSpinLock<()>, f: impl FnOnce() -> R) -> R {
        let _guard = lock.lock();
        f()
    }

    #[inline]
    fn try_with_lock<R>(&self, lock: &IrqSpinLock<()>, f: impl FnOnce() -> R) -> Option<R> {
        let _guard = lock.try_lock()?;
        Some(f())
    }

    #[inline]
    fn topology(&self) -> &Topology {
        crate::topology::get()
    }

    #[inline(always)]
    fn cpu(&self) -> CpuId {
        crate::percpu::cpu_id()
    }

    #[inline(always)]
    fn this_cpu<'a, T: Default + Send + Sync + 'static>(&self, slots: &'a PerCpuBox<T>) -> &'a T {
        // One GS-relative load and an add (this_cpu_ptr), with no guard: the core holds the
        // slot within one operation, and a numalab CPU never changes under it (the pin would
        // cost nothing, but cannot outlive this call: percpu/guard.rs).
        // SAFETY: the reference is used by the SLUB core on this CPU only (Platform::this_cpu's
        // contract: within one operation of the running CPU).
        unsafe { slots.this_unguarded() }
    }

    #[inline(always)]
    fn cpu_cmpxchg_double(
        &self,
        pair: [&AtomicUsize; 2],
        old: [usize; 2],
        new: [usize; 2],
    ) -> bool {
        let addr = pair[0] as *const AtomicUsize as usize;
        debug_assert!(addr.is_multiple_of(16));
        debug_assert_eq!(pair[1] as *const AtomicUsize as usize, addr + 8);
        // SAFETY: `addr` is the 16-byte aligned (freelist, tid) pair of the running CPU's
        // slot (CpuSlab: repr(C, align(64)), both at offsets 0 and 8, asserted at compile
        // time), valid for the cache's life; only this CPU (and its interrupts) writes it.
        unsafe { super::cmpxchg16b::cpu_cmpxchg_double(pair[0], old, new) }
    }

    #[inline(always)]
    fn cpu_inc(&self, counter: &AtomicU64) {
        // SAFETY: `counter` is a live, aligned u64 of the running CPU's slot; a plain `inc`
        // of memory cannot be split by an interrupt on this CPU (Linux's this_cpu_inc), and
        // other CPUs only read it (an aligned 8-byte store is atomic for them).
        unsafe {
            core::arch::asm!(
                "inc qword ptr [{c}]",
                c = in(reg) counter.as_ptr(),
                options(nostack)
            );
        }
    }

    #[inline(always)]
    fn irq_save(&self) -> bool {
        let were = x86_64::instructions::interrupts::are_enabled();
        if were {
            x86_64::instructions::interrupts::disable();
        }
        were
    }

    #[inline(always)]
    fn irq_restore(&self, were_enabled: bool) {
        if were_enabled {
            x86_64::instructions::interrupts::enable();
        }
    }

    fn now(&self) -> u64 {
        crate::arch::tsc::since_epoch()
    }

    fn on_each_cpu(&self, f: &(dyn Fn() + Sync)) {
        super::cross_cpu::on_each_cpu(f);
    }

    #[inline(always)]
    fn load(&self, addr: usize) -> usize {
        word(addr).load(Relaxed)
    }

    #[inline(always)]
    fn store(&self, addr: usize, value: usize) {
        word(addr).store(value, Relaxed)
    }

    #[inline]
    fn cas(&self, addr: usize, old: usize, new: usize) -> bool {
        word(addr)
            .compare_exchange(old, new, core::sync::atomic::Ordering::AcqRel, Relaxed)
            .is_ok()
    }

    fn alloc_pages(&self, order: u8, node: Option<NodeId>) -> Option<SlabPages> {
        if crate::fault::should_fail(crate::fault::Point::Slab) {
            return None; // fault.slab: a new slab's pages (docs/testing.md)
        }
        let policy = node.map_or(Policy::Local, Policy::Preferred);
        let pages = frame::alloc_pages(order, policy).ok()?;
        let node = pages.node();
        let (phys, _) = pages.into_raw();
        Some(SlabPages {
            base: frame::phys_to_virt(phys).as_u64() as usize,
            node,
        })
    }

    fn alloc_pages_on(&self, order: u8, node: NodeId) -> Option<SlabPages> {
        if crate::fault::should_fail(crate::fault::Point::Slab) {
            return None; // fault.slab, as above
        }
        let pages = frame::alloc_pages(order, Policy::Bind(node)).ok()?;
        let (phys, _) = pages.into_raw();
        Some(SlabPages {
            base: frame::phys_to_virt(phys).as_u64() as usize,
            node,
        })
    }

    fn free_pages(&self, base: usize, order: u8) {
        let phys = frame::virt_to_phys(VirtAddr::new(base as u64));
        // SAFETY: `base`/`order` come from `alloc_pages` above (into_raw), and the SLUB core
        // frees a slab only once, after its last object came back.
        drop(unsafe { Pages::from_raw(phys, order) });
    }

    fn set_owner(&self, base: usize, nr_pages: usize, owner: usize) {
        super::slabmap::set(base, nr_pages, owner);
    }

    #[inline]
    fn owner(&self, addr: usize) -> usize {
        super::owner_of(addr)
    }

    #[inline(always)]
    fn owner_fast(&self, addr: usize) -> usize {
        super::slabmap::get_fast(addr)
    }

    fn node_has_free_memory(&self, node: NodeId) -> bool {
        // A node "has free memory" above 1/64 of its size (a low watermark).
        let total = frame::total_bytes(node);
        total > 0 && frame::free_bytes(node) > total / 64
    }

    fn alloc_desc(&self) -> Option<usize> {
        let mut pool = DESC_POOL.lock();
        if pool.free == 0 {
            let pages = frame::alloc_pages(0, Policy::Local).ok()?;
            DESC_PAGES_ON.add(pages.node(), 1);
            let (phys, _) = pages.into_raw();
            let base = frame::phys_to_virt(phys).as_u64() as usize;
            pool.pages += 1;
            for i in (0..PAGE_SIZE as usize / DESC_BYTES).rev() {
                let d = base + i * DESC_BYTES;
                self.store(d, pool.free);
                pool.free = d;
            }
        }
        let d = pool.free;
        pool.free = self.load(d);
        drop(pool);
        for w in 0..DESC_BYTES / 8 {
            self.store(d + w * 8, 0);
        }
        Some(d)
    }

    fn free_desc(&self, desc: usize) {
        let mut pool = DESC_POOL.lock();
        self.store(desc, pool.free);
        pool.free = desc;
    }

    fn alloc_block(&self, bytes: usize) -> Option<usize> {
        // Linux kmallocs its sheaves too. A nested call into the same cache finds this
        // CPU's sheaf trylock taken and takes the slab path, so there is no recursion.
        // Before kmalloc registers itself there are no sheaves (the slab path serves).
        let source = BLOCK_SOURCE.get()?;
        let p = (source.alloc)(bytes)?;
        let addr = p.as_ptr() as usize;
        for w in 0..bytes.div_ceil(8) {
            self.store(addr + w * 8, 0);
        }
        if let Some(n) =
            numalab_algo::slub::geometry::kmalloc_index(bytes).and_then(|i| SHEAF_BLOCKS.get(i))
        {
            n.fetch_add(1, Relaxed);
        }
        Some(addr)
    }

    fn free_block(&self, addr: usize, bytes: usize) {
        if let Some(n) =
            numalab_algo::slub::geometry::kmalloc_index(bytes).and_then(|i| SHEAF_BLOCKS.get(i))
        {
            n.fetch_sub(1, Relaxed);
        }
        if let (Some(p), Some(source)) =
            (core::ptr::NonNull::new(addr as *mut u8), BLOCK_SOURCE.get())
        {
            // SAFETY: `addr` is a block `alloc_block` got from this source (kmalloc), given
            // back once by the SLUB core (a sheaf is freed when it leaves the cache for good).
            unsafe { (source.free)(p) };
        }
    }

    fn report(&self, r: &Report<'_>) {
        REPORTS.fetch_add(1, Relaxed);
        match r.track {
            Some((a, f)) => warn!(
                "slub: {}: {} at {:#x} (last alloc cpu {}, last free cpu {})",
                r.cache,
                r.kind.name(),
                r.addr,
                a,
                f
            ),
            None => warn!("slub: {}: {} at {:#x}", r.cache, r.kind.name(), r.addr),
        }
    }
}
