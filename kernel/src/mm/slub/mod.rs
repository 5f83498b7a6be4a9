//! SLUB: the kernel's slab allocator (Linux's mm/slub.c design) over the frame allocator.
//!
//! The state machine lives in `numalab_algo::slub` (pure, host-tested); this module binds it
//! to real pages and CPUs (`platform.rs`), keeps the registry of caches, the kmalloc size
//! classes (`kmalloc.rs`), the slabinfo/stats dumps (`info.rs`), tests and benchmarks.
//!
//! Per-CPU scheme: interrupts off on the local CPU around every per-CPU freelist access
//! (pushfq/cli ... sti), not Linux's transaction id + cmpxchg16b. Nothing preempts a CPU
//! here except interrupts, so masking them makes the per-CPU slab exclusively ours with plain
//! loads and stores: fewer instructions than a cmpxchg16b loop (no lock prefix) and no
//! 16-byte alignment or tid bookkeeping. Cross-CPU work (flush) runs on the owning CPU via a
//! cross-CPU call, never by touching another CPU's per-CPU slab.
//!
//! Lock order (outermost first):
//! 1. `CACHES` (the registry) - only around cache creation, destruction and dumps;
//! 2. interrupts off on the local CPU (per-CPU slab, per-CPU partial list, per-CPU stats);
//! 3. one node `list_lock` of one cache (IrqSpinLock, with contention counters);
//! 4. a slab's state word (compare-and-swap);
//! 5. the descriptor pool lock, then the frame allocator's node locks (frame's order).
//!
//! Nothing is printed while a list_lock is held (reports are printed after release).

mod cmpxchg16b;
pub mod info;
pub mod kmalloc;
mod kmalloc_object;
mod object;
mod per_node;
pub mod placement;
#[cfg(feature = "ktest")]
mod placement_tests;
pub mod platform;
mod private;
#[cfg(feature = "ktest")]
mod sheaf_tests;
pub mod slabmap;
#[cfg(feature = "ktest")]
mod tests;

pub use kmalloc_object::KmallocObject;
pub use object::Object;
pub use private::PrivateCache;

use crate::options::{AnyNodeLock, MemorylessSheaves, Slabinfo};
use crate::sync::{IrqSpinLock, LockStatsSnapshot};
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use numalab_algo::slub::geometry::MAX_SLAB_ORDER;
use numalab_algo::slub::{
    Cache, Checks, CreateError, DebugFlags, SlabInfo, SlabinfoMode, StatsSnapshot, Tunables,
};
use numalab_algo::topology::NodeId;
use platform::KernelPlatform;
use spin::Once;

/// A SLUB cache in the kernel.
#[repr(transparent)]
pub struct KmemCache(Cache<KernelPlatform>);

/// Every live cache, in creation order (kmalloc caches first).
static CACHES: IrqSpinLock<Vec<&'static KmemCache>> = IrqSpinLock::new(Vec::new());
static DEFAULTS: Once<BootTunables> = Once::new();
static READY: AtomicBool = AtomicBool::new(false);
/// Cache ids ever created (feeds the freelist obfuscation seed).
static CREATED: AtomicUsize = AtomicUsize::new(0);

/// The tunables of the boot command line, and which caches `slub.debug` names.
struct BootTunables {
    tunables: Tunables,
    /// `slub.sheaves_caches`: the caches that opt in to sheaves under the hybrid design.
    sheaves_caches: Vec<alloc::string::String>,
    debug_caches: Vec<alloc::string::String>,
    slabinfo_scan: bool,
    /// `slub.checks`: the sheaves free fast path's checks, set on every cache at creation.
    checks: Checks,
}

/// Whether SLUB is up (the heap sends small allocations to kmalloc from then on).
#[inline]
pub fn is_ready() -> bool {
    READY.load(Relaxed)
}

fn boot_tunables() -> BootTunables {
    let opts = crate::options::load();
    let mut t = Tunables {
        max_order: (opts.get(&crate::options::SLUB_MAX_ORDER) as u8).min(MAX_SLAB_ORDER),
        min_objects: opts.get(&crate::options::SLUB_MIN_OBJECTS) as usize,
        max_partial: opts.get(&crate::options::SLUB_MAX_PARTIAL) as usize,
        min_partial: opts
            .get(&crate::options::SLUB_MIN_PARTIAL)
            .set()
            .map(|v| v as usize),
        cpu_partial: opts
            .get(&crate::options::SLUB_CPU_PARTIAL)
            .set()
            .map(|v| v as usize),
        prefer_local: opts.get(&crate::options::SLUB_PREFER_LOCAL),
        memoryless_fix: opts.get(&crate::options::SLUB_MEMORYLESS_FIX),
        remote_node_defrag_ratio: opts.get(&crate::options::SLUB_REMOTE_NODE_DEFRAG_RATIO) as u32,
        debug: DebugFlags::default(),
        design: opts.get(&crate::options::SLUB_DESIGN),
        sheaves_opt_in: false,
        sheaf_capacity: opts
            .get(&crate::options::SLUB_SHEAF_CAPACITY)
            .set()
            .map(|v| v as usize),
        memoryless_barns: match opts.get(&crate::options::SLUB_SHEAVES_MEMORYLESS) {
            MemorylessSheaves::Barn => true,
            MemorylessSheaves::None => false,
        },
        any_node_trylock: match opts.get(&crate::options::SLUB_SHEAVES_ANY_NODE) {
            AnyNodeLock::Trylock => true,
            AnyNodeLock::Spin => false,
        },
    };
    let debug = opts.get(&crate::options::SLUB_DEBUG);
    t.debug = debug.flags;
    BootTunables {
        tunables: t,
        sheaves_caches: opts.get(&crate::options::SLUB_SHEAVES_CACHES).names,
        debug_caches: debug.caches,
        slabinfo_scan: match opts.get(&crate::options::SLUB_SLABINFO) {
            Slabinfo::Scan => true,
            Slabinfo::Counters => false,
        },
        checks: opts.get(&crate::options::SLUB_CHECKS),
    }
}

/// The boot defaults (from `slub.*` options) a new cache named `name` gets; under
/// `slub.design=hybrid` it opts in to sheaves when `slub.sheaves_caches` names it.
pub fn default_tunables(name: &str) -> Tunables {
    let b = DEFAULTS.call_once(boot_tunables);
    let mut t = b.tunables;
    t.sheaves_opt_in = b.sheaves_caches.iter().any(|c| c == name);
    if !b.debug_caches.is_empty() && !b.debug_caches.iter().any(|c| c == name) {
        t.debug = DebugFlags::default();
    }
    t
}

/// The sheaves free fast path's checks chosen by `slub.checks` (every cache gets them).
pub fn boot_checks() -> Checks {
    DEFAULTS.call_once(boot_tunables).checks
}

/// The slabinfo counting mode chosen by `slub.slabinfo`.
pub fn boot_slabinfo_mode() -> SlabinfoMode {
    if DEFAULTS.call_once(boot_tunables).slabinfo_scan {
        SlabinfoMode::Scan
    } else {
        SlabinfoMode::Counters
    }
}

/// Creates the kmalloc caches and opens kmalloc to the heap. Boot CPU, after the frame
/// allocator.
pub fn init() {
    let t = default_tunables("");
    platform::init();
    placement::init();
    kmalloc::init();
    READY.store(true, Relaxed);
    crate::mm::frame::register_holder(&SlubPages);
    let k64 = kmalloc::cache_for(64).map(|c| c.core());
    println!(
        "numalab: slub: {} kmalloc caches (kmalloc-8 .. kmalloc-8k), max_order {}, min_objects {}; kmalloc-64: {} objects per slab, min_partial {}, cpu_partial {}, sheaf_capacity {}; prefer_local {}, memoryless_fix {}, debug {}; design {}; checks {}",
        numalab_algo::slub::geometry::KMALLOC_SIZES.len(),
        t.max_order,
        if t.min_objects == 0 { 4 * (numalab_algo::slub::geometry::fls(crate::topology::get().nr_cpus()) as usize + 1) } else { t.min_objects },
        k64.map_or(0, |c| c.order_objects().objects),
        k64.map_or(0, |c| c.min_partial()),
        k64.map_or(0, |c| c.cpu_partial().0),
        k64.map_or(0, |c| c.sheaf_capacity()),
        t.prefer_local as u8,
        t.memoryless_fix as u8,
        t.debug.letters(),
        t.design.name(),
        boot_checks().name()
    );
}

/// The owner word of the page holding virtual address `addr` (0: not a slab page).
#[inline(always)]
pub(crate) fn owner_of(addr: usize) -> usize {
    slabmap::get(addr)
}

/// Cross-CPU calls for flushing.
pub(crate) mod cross_cpu {
    use numalab_algo::topology::CpuId;

    /// Runs `f` on every online CPU, each on its own CPU, and waits.
    pub fn on_each_cpu(f: &(dyn Fn() + Sync)) {
        crate::smp::on_each_cpu(&|_cpu| f());
    }

    /// Runs `f` on each of `cpus` concurrently and waits.
    pub fn run_on_cpus(cpus: &[CpuId], f: &(dyn Fn(CpuId) + Sync)) {
        crate::smp::run_on_cpus(cpus, f);
    }

    /// The CPUs that run code.
    pub fn online_cpus() -> alloc::vec::Vec<CpuId> {
        crate::smp::online_cpus().to_vec()
    }
}

impl KmemCache {
    /// A cache of `size_bytes` objects aligned to `align` (0: 8 bytes), with `tunables`
    /// (start from `default_tunables(name)`). The cache lives until `destroy`.
    pub fn create(
        name: &str,
        size_bytes: usize,
        align: usize,
        tunables: Tunables,
    ) -> Result<&'static KmemCache, CreateError> {
        Self::create_with_ctor(name, size_bytes, align, tunables, None)
    }

    /// Like `create`, with a constructor run on every object when its slab is made.
    pub fn create_with_ctor(
        name: &str,
        size_bytes: usize,
        align: usize,
        tunables: Tunables,
        ctor: Option<fn(usize)>,
    ) -> Result<&'static KmemCache, CreateError> {
        let n = CREATED.fetch_add(1, Relaxed);
        let random =
            (crate::arch::rdtsc() as usize).rotate_left(17) ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let core = Cache::new(
            KernelPlatform,
            name,
            size_bytes,
            align,
            tunables,
            random,
            ctor,
        )?;
        core.set_checks(boot_checks());
        let cache: &'static KmemCache = Box::leak(Box::new(KmemCache(core)));
        CACHES.lock().push(cache);
        Ok(cache)
    }

    /// The pure core (stats, geometry, slabinfo).
    pub fn core(&self) -> &Cache<KernelPlatform> {
        &self.0
    }

    pub fn name(&self) -> &str {
        self.0.name()
    }

    #[inline(always)]
    pub fn alloc(&self) -> Option<NonNull<u8>> {
        // Null (out of memory) becomes None with no tag to test, and the slow path's result
        // is returned as it is (a tail jump).
        NonNull::new(self.0.alloc_ptr())
    }

    /// An object, preferably from `node`'s memory (another node's when `node` is out of
    /// pages; Linux's kmem_cache_alloc_node without __GFP_THISNODE).
    pub fn alloc_node(&self, node: NodeId) -> Option<NonNull<u8>> {
        NonNull::new(self.0.alloc_node(node)? as *mut u8)
    }

    /// An object from `node`'s memory only, or None (Linux's __GFP_THISNODE).
    pub fn alloc_node_strict(&self, node: NodeId) -> Option<NonNull<u8>> {
        NonNull::new(self.0.alloc_node_strict(node)? as *mut u8)
    }

    /// Frees an object. Misuse that the checks detect is reported, counted and dropped.
    ///
    /// # Safety
    /// `obj` must not be used after this call; it should come from this cache's `alloc`.
    #[inline]
    pub unsafe fn free(&self, obj: NonNull<u8>) {
        self.0.free(obj.as_ptr() as usize)
    }

    /// Fills `out` with object addresses; returns how many were allocated.
    pub fn alloc_bulk(&self, out: &mut [usize]) -> usize {
        self.0.alloc_bulk(out)
    }

    /// Frees objects by address.
    ///
    /// # Safety
    /// As for `free`, for every object.
    pub unsafe fn free_bulk(&self, objs: &[usize]) {
        self.0.free_bulk(objs)
    }

    /// Flushes every CPU's slabs and gives back empty slabs; returns slabs given back.
    pub fn shrink(&self) -> usize {
        self.0.shrink()
    }

    /// Flushes every CPU's slabs to the node lists (cross-CPU calls).
    pub fn flush_all(&self) {
        self.0.flush_all()
    }

    /// Destroys the cache if no object is live: every slab page goes back to the page
    /// allocator, the cache leaves the registry and its own memory (the per-CPU slab array,
    /// the node lists, its name and the cache itself, as Linux's kmem_cache_destroy frees
    /// cpu_slab, the nodes and the kmem_cache) goes back to the heap. With live objects it
    /// reports them (cache and count), stays usable, and returns the count.
    ///
    /// The per-CPU array is nr_cpus * CPU_SLAB_BYTES (512): from 8 CPUs on it is whole heap pages
    /// (64 CPUs: an order-3 block), which a leaked cache used to keep for good (40
    /// pages per 5 caches on 8 nodes x 8 CPUs).
    ///
    /// # Safety
    /// On `Ok` the cache is freed: neither the caller nor anyone else may use this reference
    /// (or a copy of it, e.g. from an earlier [`caches`]) afterwards, and no other CPU may be
    /// using the cache while it is destroyed. On `Err` the cache stays valid.
    pub unsafe fn destroy(&'static self) -> Result<(), usize> {
        match self.0.destroy() {
            Ok(()) => {
                CACHES
                    .lock()
                    .retain(|c| !core::ptr::eq(*c as *const KmemCache, self as *const KmemCache));
                let raw = self as *const KmemCache as *mut KmemCache;
                // SAFETY: every KmemCache is made by create_with_ctor with Box::leak (the
                // field is private to this module), so `raw` is that Box's pointer; it has
                // no slab left (core destroy succeeded) and no registry entry, and the
                // caller promises no further use, so this is the last reference.
                drop(unsafe { Box::from_raw(raw) });
                Ok(())
            }
            Err(live) => {
                warn!(
                    "slub: destroy {}: {} {}; cache kept",
                    self.name(),
                    live,
                    numalab_algo::formats::ktap::OBJECTS_REMAINING
                );
                Err(live)
            }
        }
    }

    /// The list_lock counters of `node` (None: no such node).
    pub fn list_lock_stats_on(&self, node: NodeId) -> Option<LockStatsSnapshot> {
        self.0.list_lock(node).map(|l| l.stats.snapshot())
    }

    /// `node`'s list_lock as an object (its bytes name its lines in the trace's c2c table).
    pub fn list_lock_object(&self, node: NodeId) -> Option<&dyn core::any::Any> {
        self.0.list_lock(node).map(|l| l as &dyn core::any::Any)
    }

    /// `node`'s barn lock as an object; None without a barn there.
    pub fn barn_lock_object(&self, node: NodeId) -> Option<&dyn core::any::Any> {
        self.0.barn_lock(node).map(|l| l as &dyn core::any::Any)
    }

    /// The barn lock counters of `node` (None: no barn there, or the partial design).
    pub fn barn_lock_stats_on(&self, node: NodeId) -> Option<LockStatsSnapshot> {
        self.0.barn_lock(node).map(|l| l.stats.snapshot())
    }

    /// list_lock counters summed over nodes.
    pub fn list_lock_stats(&self) -> LockStatsSnapshot {
        let topo = crate::topology::get();
        let mut s = LockStatsSnapshot::default();
        for n in 0..topo.nr_nodes() {
            if let Some(lock) = self.0.list_lock(NodeId(n as u16)) {
                s.add(&lock.stats.snapshot());
            }
        }
        s
    }

    pub fn reset_list_lock_stats(&self) {
        let topo = crate::topology::get();
        for n in 0..topo.nr_nodes() {
            if let Some(lock) = self.0.list_lock(NodeId(n as u16)) {
                lock.stats.reset();
            }
        }
    }

    /// Barn lock counters summed over nodes (the sheaves design's shared lock).
    pub fn barn_lock_stats(&self) -> LockStatsSnapshot {
        let topo = crate::topology::get();
        let mut s = LockStatsSnapshot::default();
        for n in 0..topo.nr_nodes() {
            if let Some(lock) = self.0.barn_lock(NodeId(n as u16)) {
                s.add(&lock.stats.snapshot());
            }
        }
        s
    }

    pub fn reset_barn_lock_stats(&self) {
        let topo = crate::topology::get();
        for n in 0..topo.nr_nodes() {
            if let Some(lock) = self.0.barn_lock(NodeId(n as u16)) {
                lock.stats.reset();
            }
        }
    }

    /// SLUB_STATS counters summed over CPUs.
    pub fn stats(&self) -> StatsSnapshot {
        self.0.stats()
    }

    /// Bytes held in slab pages.
    pub fn slab_bytes(&self) -> usize {
        self.0.slab_bytes()
    }

    pub fn slabinfo(&self, mode: SlabinfoMode) -> SlabInfo {
        self.0.slabinfo(mode)
    }
}

/// Every live cache (a copy of the registry).
pub fn caches() -> Vec<&'static KmemCache> {
    CACHES.lock().clone()
}

/// Bytes in slab pages of every cache, plus the descriptor pool and large kmallocs: what
/// SLUB holds from the page allocator.
pub fn held_bytes() -> usize {
    let topo = crate::topology::get();
    topo.nodes
        .iter()
        .map(|n| held_bytes_on(n.id) as usize)
        .sum()
}

/// SLUB as a holder of frame pages (frame's conservation checks count what it holds).
struct SlubPages;

impl crate::mm::frame::PageHolder for SlubPages {
    fn name(&self) -> &'static str {
        "slub"
    }

    fn held_bytes_on(&self, node: NodeId) -> u64 {
        held_bytes_on(node)
    }
}

/// What SLUB holds from the page allocator on `node`: slab pages of every cache, descriptor
/// pool pages and large kmallocs. `frame::free_bytes(node) + held_bytes_on(node)` stays
/// constant while only SLUB allocates pages (the conservation checks use it).
pub fn held_bytes_on(node: NodeId) -> u64 {
    if !is_ready() {
        return 0;
    }
    // Summed under the registry lock without allocating (an allocation here could itself
    // take a page and skew the figure).
    let slab_pages: usize = CACHES
        .lock()
        .iter()
        .map(|c| c.core().slab_pages_on(node))
        .sum();
    let pages = slab_pages + platform::desc_pool_pages_on(node) + placement::held_pages_on(node);
    (pages * crate::mm::frame::PAGE_SIZE as usize + kmalloc::large_bytes_on(node)) as u64
}
