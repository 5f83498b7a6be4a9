//! A SLUB cache: per-CPU active slab and partial list, per-node lists, tunables, and the
//! allocation and free fast paths. The slow paths are in alloc.rs and free.rs, the facts,
//! counters and bulk calls in cache_facts.rs, the sheaves design in sheaves.rs.
//!
//! Per-CPU state belongs to its own CPU. The fast paths do not mask interrupts: like Linux,
//! they read the CPU's transaction id (`tid`) first, then the freelist and the active slab's
//! bounds, and commit with one double-word compare-and-swap of (freelist, tid) that also
//! advances the tid (`Platform::cpu_cmpxchg_double`, cmpxchg16b in the kernel). Anything
//! that changes the CPU slab in between (an interrupt handler's fast path, or any slow path,
//! which runs with interrupts off and advances the tid before it re-enables them) makes the
//! compare fail and the fast path retries. The argument is written out in docs/slub.md.
//! Other CPUs reach a slab only through its state word (compare-and-swap) or under its
//! node's list_lock.

use super::barn::Barn;
use super::freelist::decode;
use super::freelist::encode;
use super::geometry::{
    calculate_layout, calculate_order, cpu_partial_slabs, default_cpu_partial_objects,
    default_min_partial, DebugFlags, ObjLayout, OrderObjects, MAX_SLAB_ORDER, PAGE_SIZE,
};
use super::placed::{NodeArray, PerCpuSlots};
use super::platform::Platform;
use super::slab::NodeLists;
use super::stats::{CpuStats, Stat, StatsSnapshot, NR_ERROR_KINDS};
use crate::topology::NodeId;
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{
    compiler_fence, AtomicBool, AtomicU64, AtomicUsize, Ordering, Ordering::Relaxed,
};

pub use super::tunables::{Design, Tunables};

/// Why a cache could not be created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateError {
    /// Object size 0 or larger than a slab of the largest order.
    BadSize(usize),
    /// Alignment not a power of two or above a page.
    BadAlign(usize),
    /// No memory for the cache's per-node or per-CPU structures.
    NoMemory,
}

/// One CPU's slab state for one cache (Linux's kmem_cache_cpu). The first 64-byte line
/// holds everything the fast paths touch (freelist and tid as one 16-byte aligned pair for
/// the double-word compare-and-swap, the active slab, its bounds and node, and the two
/// fast-path counters); the slow path's state and the other statistics follow on other
/// lines (`HOT_LINE_BYTES` is checked at compile time below).
#[repr(C, align(64))]
#[derive(Default)]
pub(crate) struct CpuSlab {
    /// Next free object of the active slab (private to this CPU), 0 when none.
    pub freelist: AtomicUsize,
    /// Transaction id: advanced by every change of this CPU slab (fast path commit, slow
    /// path, flush), so a fast path that was interrupted sees its compare fail.
    pub tid: AtomicUsize,
    /// Descriptor of the active slab, 0 when none.
    pub slab: AtomicUsize,
    /// Address of the active slab's first object.
    pub base: AtomicUsize,
    /// Objects of the active slab for the fast free path's bound (0: no fast frees, as for
    /// debug caches).
    pub objects: AtomicUsize,
    /// Node of the active slab.
    pub node: AtomicUsize,
    /// alloc_fastpath and free_fastpath, counted here (one interrupt-atomic increment each,
    /// `Platform::cpu_inc`) rather than in `stats`, so the fast paths stay in this line.
    pub alloc_fastpath: AtomicU64,
    pub free_fastpath: AtomicU64,
    // ---- end of the hot line; the sheaves design's hot words follow ----
    /// The sheaves' local trylock (Linux's local_trylock_t): 1 while the CPU (or an
    /// interrupt on it) works on its sheaves. Only this CPU touches it, with plain loads and
    /// stores; an interrupt that finds it taken uses the slab path.
    pub sheaf_lock: AtomicUsize,
    /// The main sheaf (never 0 in a sheaves cache: the bootstrap sheaf at first).
    pub main: AtomicUsize,
    /// The spare sheaf, empty or full, or 0.
    pub spare: AtomicUsize,
    /// This CPU's memory node (Linux's numa_mem_id): its barn refills from there, and frees
    /// of other nodes' objects bypass the sheaves.
    pub home: AtomicUsize,
    /// This CPU's own node (Linux's numa_node_id): whose barn it uses.
    pub cpu_node: AtomicUsize,
    /// Bytes of the active slab's memory: [base, base + span).
    pub span: AtomicUsize,
    /// 1 + the node whose non-strict requests the active slab serves although it is on
    /// another node (that node was out of pages when the slab was taken); 0: none. Linux
    /// only insists on the node for __GFP_THISNODE; without this, every `alloc_node` of an
    /// exhausted node would reject the fallback slab and build a new one.
    pub stands_in_for: AtomicUsize,
    /// First slab of the CPU partial list (chained through the descriptors), 0 when none.
    pub partial: AtomicUsize,
    pub partial_slabs: AtomicUsize,
    /// Debug caches keep their private freelist here, out of the fast paths' sight.
    pub debug_freelist: AtomicUsize,
    /// The rcu_free sheaf (Linux 6.18's pcs->rcu_free): objects given to kfree_rcu, handed
    /// whole to call_rcu when full (rcu_sheaf.rs); 0 when none.
    pub rcu_free: AtomicUsize,
    pub stats: CpuStats,
}

/// Bytes of the per-CPU state the fast paths touch: one cache line.
pub const HOT_LINE_BYTES: usize = 64;
/// Bytes of one CPU's slot (the stride of a cache's per-CPU array on the host; in the kernel
/// each CPU's slot is run-time per-CPU data, reached with one GS-relative add).
pub const CPU_SLAB_BYTES: usize = core::mem::size_of::<CpuSlab>();

const _: () = {
    use core::mem::{align_of, offset_of};
    assert!(align_of::<CpuSlab>() == HOT_LINE_BYTES);
    // cmpxchg16b: freelist and tid adjacent, 16-byte aligned.
    assert!(offset_of!(CpuSlab, freelist) == 0);
    assert!(offset_of!(CpuSlab, tid) == 8);
    assert!(offset_of!(CpuSlab, slab) + 8 <= HOT_LINE_BYTES);
    assert!(offset_of!(CpuSlab, base) + 8 <= HOT_LINE_BYTES);
    assert!(offset_of!(CpuSlab, objects) + 8 <= HOT_LINE_BYTES);
    assert!(offset_of!(CpuSlab, node) + 8 <= HOT_LINE_BYTES);
    assert!(offset_of!(CpuSlab, alloc_fastpath) + 8 <= HOT_LINE_BYTES);
    assert!(offset_of!(CpuSlab, free_fastpath) + 8 <= HOT_LINE_BYTES);
    assert!(offset_of!(CpuSlab, sheaf_lock) >= HOT_LINE_BYTES);
    assert!(offset_of!(CpuSlab, cpu_node) + 8 <= 2 * HOT_LINE_BYTES);
    assert!(offset_of!(CpuSlab, span) >= HOT_LINE_BYTES);
    assert!(offset_of!(CpuSlab, stats) >= HOT_LINE_BYTES);
};

impl CpuSlab {
    /// Advances the tid after a change of this CPU slab made with interrupts off.
    #[inline(always)]
    pub(crate) fn bump_tid(&self) {
        self.tid
            .store(self.tid.load(Relaxed).wrapping_add(1), Relaxed);
    }

    /// This CPU's counters, the hot fast-path ones included.
    pub(crate) fn snapshot_into(&self, s: &mut StatsSnapshot) {
        s.add_cpu(&self.stats);
        s.add_raw(Stat::AllocFastpath, self.alloc_fastpath.load(Relaxed));
        s.add_raw(Stat::FreeFastpath, self.free_fastpath.load(Relaxed));
    }
}

/// A slab cache over platform `P`. It must not move after its first allocation (its
/// address names it in every slab descriptor): keep it boxed or static.
pub struct Cache<P: Platform> {
    pub(crate) plat: P,
    pub(crate) name: String,
    pub(crate) layout: ObjLayout,
    pub(crate) oo: OrderObjects,
    pub(crate) min: OrderObjects,
    pub(crate) random: usize,
    pub(crate) debug: DebugFlags,
    pub(crate) debug_any: bool,
    pub(crate) min_partial: usize,
    pub(crate) cpu_partial_objects: usize,
    pub(crate) cpu_partial_slabs: usize,
    pub(crate) prefer_local: bool,
    pub(crate) defrag_ratio: u32,
    pub(crate) tunables: Tunables,
    /// For each requested node, the node whose lists serve it (memoryless fix).
    pub(crate) node_map: Box<[NodeId]>,
    pub(crate) ctor: Option<fn(usize)>,
    /// Each CPU's slab state, in its CPU's node's memory (Linux's alloc_percpu'd
    /// kmem_cache_cpu).
    pub(crate) cpus: P::PerCpu<CpuSlab>,
    /// Each node's lists, in that node's memory (Linux's kmem_cache_node, allocated on its
    /// node by init_kmem_cache_nodes); a memoryless node's in the nearest memory.
    pub(crate) nodes: NodeArray<P::NodeBox<NodeLists<P::Lock>>>,
    /// The sheaves design: objects per sheaf (0: no sheaves, the partial design's paths).
    pub(crate) sheaf_capacity: usize,
    /// Per node: its barn (empty for the partial design), in that node's memory (Linux
    /// kmalloc_node's it there).
    pub(crate) barns: NodeArray<P::NodeBox<Barn<P::Lock>>>,
    /// Sheaves stacked over the per-CPU slab (`Design::Hybrid`, opted in): refills and
    /// bypasses go through the partial design's paths (hybrid.rs).
    pub(crate) hybrid: bool,
    /// The bootstrap sheaf (a zeroed descriptor block: size 0, capacity 0), 0 when none.
    pub(crate) bootstrap_sheaf: usize,
    /// Object index without a division (see `object_index`).
    pub(crate) odd_inverse: usize,
    pub(crate) stride_shift: u32,
    /// `slub.checks=linux` (checks.rs): the sheaves free fast path skips numalab's own checks.
    pub(crate) checks_linux: AtomicBool,
    /// The sheaves design with `slub.checks=full` (checks.rs): `free`'s first and, for the
    /// default configuration, only test (linux checks and the partial design test
    /// `sheaf_capacity` after it).
    /// A word (0 or 1), not a bool: the test is then one compare with memory.
    pub(crate) sheaves_full: AtomicUsize,
    pub(crate) errors: [AtomicU64; NR_ERROR_KINDS],
    pub(crate) dead: AtomicBool,
}

impl<P: Platform> Cache<P> {
    /// A cache of `object_size` bytes aligned to `align` (0 or a power of two up to a page),
    /// with slab geometry from Linux's calculate_order. `random` seeds the freelist pointer
    /// obfuscation; `ctor` runs on each object when its slab is created.
    pub fn new(
        plat: P,
        name: &str,
        object_size: usize,
        align: usize,
        t: Tunables,
        random: usize,
        ctor: Option<fn(usize)>,
    ) -> Result<Self, CreateError> {
        if align != 0 && (!align.is_power_of_two() || align > (PAGE_SIZE as usize)) {
            return Err(CreateError::BadAlign(align));
        }
        let max_order = t.max_order.min(MAX_SLAB_ORDER);
        if object_size == 0 || object_size > (PAGE_SIZE as usize) << MAX_SLAB_ORDER {
            return Err(CreateError::BadSize(object_size));
        }
        let layout = calculate_layout(object_size, align, t.debug);
        let topo = plat.topology();
        let nr_cpus = topo.nr_cpus().max(1);
        let order = calculate_order(layout.size, t.min_objects, max_order, nr_cpus);
        if order > MAX_SLAB_ORDER {
            return Err(CreateError::BadSize(object_size));
        }
        let oo = OrderObjects::new(order, layout.size);
        let min = OrderObjects::new(super::geometry::get_order(layout.size), layout.size);
        let debug_any = t.debug.any();
        // Linux 7: no sheaves for debug caches (they keep the partial design's paths here);
        // Linux 6.18: sheaves only for caches that ask for them, never for debug caches.
        let sheaves = !debug_any
            && match t.design {
                Design::Sheaves => true,
                Design::Hybrid => t.sheaves_opt_in,
                Design::Partial => false,
            };
        // Linux: no CPU partial lists for debug caches; none at all with sheaves.
        let cpu_partial_objects = if debug_any || t.design == Design::Sheaves {
            0
        } else {
            t.cpu_partial
                .unwrap_or_else(|| default_cpu_partial_objects(layout.size))
        };
        let cpu_partial_slabs = if cpu_partial_objects == 0 {
            0
        } else {
            cpu_partial_slabs(cpu_partial_objects, oo.objects)
        };
        let min_partial = t
            .min_partial
            .unwrap_or_else(|| default_min_partial(layout.size, t.max_partial));
        let node_map: Vec<NodeId> = (0..topo.nr_nodes())
            .map(|i| {
                let n = NodeId(i as u16);
                if t.memoryless_fix && topo.is_memoryless(n) {
                    topo.mem_node(n)
                } else {
                    n
                }
            })
            .collect();
        let nodes = (0..topo.nr_nodes().max(1))
            .map(|i| plat.node_box(NodeLists::new(plat.new_lock()), NodeId(i as u16)))
            .collect::<Option<Vec<_>>>()
            .ok_or(CreateError::NoMemory)?;
        let cpus = plat
            .alloc_per_cpu::<CpuSlab>()
            .ok_or(CreateError::NoMemory)?;
        debug_assert_eq!(cpus.len(), nr_cpus);
        let (sheaf_capacity, bootstrap_sheaf) = match sheaves.then(|| plat.alloc_desc()) {
            Some(Some(b)) if t.design == Design::Hybrid => {
                (super::sheaf::hybrid_sheaf_capacity(t.sheaf_capacity), b)
            }
            Some(Some(b)) => (
                super::sheaf::sheaf_capacity(layout.size, t.sheaf_capacity),
                b,
            ),
            _ => (0, 0),
        };
        let barns = if sheaf_capacity == 0 {
            Vec::new()
        } else {
            for i in 0..cpus.len() {
                let c = cpus.get(i);
                let node = topo.node_of_cpu(crate::topology::CpuId(i as u16));
                c.home.store(topo.mem_node(node).index(), Relaxed);
                c.cpu_node.store(node.index(), Relaxed);
                c.main.store(bootstrap_sheaf, Relaxed);
            }
            (0..topo.nr_nodes().max(1))
                .map(|i| {
                    let n = NodeId(i as u16);
                    let exists = !topo.is_memoryless(n) || t.memoryless_barns;
                    plat.node_box(Barn::new(plat.new_lock(), exists), n)
                })
                .collect::<Option<Vec<_>>>()
                .ok_or(CreateError::NoMemory)?
        };
        let stride_shift = layout.size.trailing_zeros();
        let odd = layout.size >> stride_shift;
        let mut odd_inverse = odd;
        for _ in 0..6 {
            odd_inverse =
                odd_inverse.wrapping_mul(2usize.wrapping_sub(odd.wrapping_mul(odd_inverse)));
        }
        Ok(Cache {
            odd_inverse,
            stride_shift,
            name: String::from(name),
            layout,
            oo,
            min,
            random: random | 1,
            debug: t.debug,
            debug_any,
            min_partial,
            cpu_partial_objects,
            cpu_partial_slabs,
            prefer_local: t.prefer_local,
            defrag_ratio: t.remote_node_defrag_ratio.min(1024),
            tunables: t,
            node_map: node_map.into_boxed_slice(),
            ctor,
            cpus,
            nodes: NodeArray::new(nodes),
            hybrid: t.design == Design::Hybrid && sheaf_capacity != 0,
            sheaf_capacity,
            barns: NodeArray::new(barns),
            bootstrap_sheaf,
            checks_linux: AtomicBool::new(false),
            sheaves_full: AtomicUsize::new(usize::from(sheaf_capacity != 0)),
            errors: core::array::from_fn(|_| AtomicU64::new(0)),
            dead: AtomicBool::new(false),
            plat,
        })
    }

    #[inline(always)]
    pub(crate) fn cpu_slab(&self) -> &CpuSlab {
        self.plat.this_cpu(&self.cpus)
    }

    /// Allocates one object on the running CPU's memory node (or wherever its CPU slab is).
    #[inline]
    pub fn alloc(&self) -> Option<usize> {
        self.alloc_inner(None, false)
    }

    /// Allocates one object, preferably from `node`'s memory (a memoryless node: see
    /// `Tunables::memoryless_fix`). When `node` is out of pages the object comes from the
    /// nearest node that has some, and the slab it comes from keeps serving requests for
    /// `node` until it is full (Linux's kmalloc_node without __GFP_THISNODE).
    pub fn alloc_node(&self, node: NodeId) -> Option<usize> {
        self.alloc_inner(Some(node), false)
    }

    /// Allocates one object from `node`'s memory only (Linux's __GFP_THISNODE): None when
    /// `node` has no partial slab and no pages for a new one; never falls back.
    pub fn alloc_node_strict(&self, node: NodeId) -> Option<usize> {
        self.alloc_inner(Some(node), true)
    }

    /// Whether the CPU's active slab may serve a request for `node`: it is on `node`, or
    /// (not strict) it stands in for `node`.
    #[inline(always)]
    pub(crate) fn cpu_slab_serves(&self, c: &CpuSlab, node: NodeId, strict: bool) -> bool {
        c.node.load(Relaxed) == node.index()
            || (!strict && c.stands_in_for.load(Relaxed) == node.index() + 1)
    }

    /// The fast path: pop the CPU freelist's head with a compare-and-swap of (freelist,
    /// tid); the slow path when the freelist is empty or the active slab is on the wrong
    /// node for `node`.
    #[inline(always)]
    pub(crate) fn alloc_inner(&self, node: Option<NodeId>, strict: bool) -> Option<usize> {
        let obj = self.alloc_raw_inner(node, strict) as usize;
        (obj != 0).then_some(obj)
    }

    /// `alloc` returning the address, 0 when out of memory (for callers that turn it into
    /// a nullable pointer without a tagged Option in between).
    #[inline(always)]
    pub fn alloc_raw(&self) -> usize {
        self.alloc_raw_inner(None, false) as usize
    }

    /// `alloc` as a pointer, null when out of memory: the kernel's entry points return it
    /// as `Option<NonNull<u8>>` with no conversion after the slow path's call, so that call
    /// is a tail jump.
    #[inline(always)]
    pub fn alloc_ptr(&self) -> *mut u8 {
        self.alloc_raw_inner(None, false)
    }

    /// The fast path (null: out of memory; a pointer so that the slow path's result is
    /// returned as it is). Straight-line code: a failed compare (an
    /// interrupt changed the CPU slab) hands the request to the slow path, which runs with
    /// interrupts off and cannot be raced.
    #[inline(always)]
    fn alloc_raw_inner(&self, node: Option<NodeId>, strict: bool) -> *mut u8 {
        if self.sheaf_capacity != 0 {
            return self.sheaf_alloc(node, strict);
        }
        self.cpu_slab_alloc(node, strict)
    }

    /// The partial design's fast path (the per-CPU slab's freelist), also the slab path of
    /// a hybrid cache's sheaves.
    #[inline(always)]
    pub(crate) fn cpu_slab_alloc(&self, node: Option<NodeId>, strict: bool) -> *mut u8 {
        let node = node.map(|n| self.effective_node(n));
        let c = self.cpu_slab();
        let tid = c.tid.load(Relaxed);
        // The tid is read before everything it vouches for (same CPU: a compiler fence).
        compiler_fence(Ordering::Acquire);
        let obj = c.freelist.load(Relaxed);
        if obj == 0 || !node.is_none_or(|n| self.cpu_slab_serves(c, n, strict)) {
            return self.alloc_slow_entry(node, strict, false);
        }
        let fp = obj + self.layout.fp_offset;
        // If an interrupt took `obj` meanwhile this may read a user's word: the compare
        // below then fails (the tid moved) and the value is never used.
        let next = decode(self.plat.load(fp), self.random, fp);
        if self.plat.cpu_cmpxchg_double(
            [&c.freelist, &c.tid],
            [obj, tid],
            [next, tid.wrapping_add(1)],
        ) {
            self.plat.cpu_inc(&c.alloc_fastpath);
            return obj as *mut u8;
        }
        self.alloc_slow_entry(node, strict, true)
    }

    /// The allocation slow path with interrupts off; advances the tid before enabling them.
    /// `raced`: the fast path's compare failed (counted as cmpxchg_double_cpu_fail).
    /// Returns the object or null.
    #[cold]
    #[inline(never)]
    fn alloc_slow_entry(&self, node: Option<NodeId>, strict: bool, raced: bool) -> *mut u8 {
        let irq = self.plat.irq_save();
        let c = self.cpu_slab();
        if raced {
            c.stats.inc(Stat::CmpxchgDoubleCpuFail);
        }
        let r = self.alloc_slow(c, node, strict);
        c.bump_tid();
        self.plat.irq_restore(irq);
        r.map_or(core::ptr::null_mut(), |obj| obj as *mut u8)
    }

    /// Frees an object of this cache. Bad frees (not a slab object, another cache's object,
    /// not at an object boundary, an immediate double free; with debug flags also every
    /// double free and red zone damage) are reported, counted and dropped.
    ///
    /// Fast path: `obj` is an object of the CPU's active slab and not the freelist's head
    /// (Linux's double-free check); it is pushed with a compare-and-swap of (freelist, tid).
    /// One multiply tells both bounds: for an offset that is a multiple of the stride,
    /// `(off * odd_inverse) ror shift` is the object index; for any other offset it is
    /// larger than any index. A failed compare hands the free to the slow path.
    #[inline(always)]
    pub fn free(&self, obj: usize) {
        // Two different words, so the compiler cannot fold the tests into one switch whose
        // order it picks: the default (sheaves, full checks) is decided by the first.
        if self.sheaves_full.load(Relaxed) != 0 {
            return self.sheaf_free::<true>(obj);
        }
        if self.sheaf_capacity != 0 {
            return self.sheaf_free::<false>(obj);
        }
        self.partial_free(obj)
    }

    /// The partial design's free fast path (`free`'s third case).
    #[inline(always)]
    fn partial_free(&self, obj: usize) {
        let c = self.cpu_slab();
        let tid = c.tid.load(Relaxed);
        compiler_fence(Ordering::Acquire);
        let head = c.freelist.load(Relaxed);
        let index = self.object_index(obj.wrapping_sub(c.base.load(Relaxed)));
        if index >= c.objects.load(Relaxed) || obj == head {
            return self.free_slow_entry(obj, false);
        }
        let fp = obj + self.layout.fp_offset;
        self.plat.store(fp, encode(head, self.random, fp));
        if self.plat.cpu_cmpxchg_double(
            [&c.freelist, &c.tid],
            [head, tid],
            [obj, tid.wrapping_add(1)],
        ) {
            self.plat.cpu_inc(&c.free_fastpath);
            return;
        }
        self.free_slow_entry(obj, true)
    }

    /// `free` of an object whose page's owner word the caller read: `desc`, a slab
    /// descriptor of this cache (kfree finds the cache from it). The sheaves design then
    /// skips its own lookup; the partial design's fast path needs none.
    #[inline(always)]
    pub fn free_in_slab(&self, obj: usize, desc: usize) {
        let slab = super::slab::Slab(desc);
        if self.sheaves_full.load(Relaxed) != 0 {
            self.sheaf_free_in::<true>(obj, slab)
        } else if self.sheaf_capacity != 0 {
            self.sheaf_free_in::<false>(obj, slab)
        } else {
            self.partial_free(obj)
        }
    }

    /// The free slow path with interrupts off (the tid advanced before enabling them), then
    /// the report of a bad free with no lock held. `raced` as for `alloc_slow_entry`.
    #[cold]
    #[inline(never)]
    pub(crate) fn free_slow_entry(&self, obj: usize, raced: bool) {
        // Looked up once, with interrupts on: the slab of an object a caller owns cannot
        // change under it.
        let found = self.slab_of(obj);
        if let (false, Ok((slab, off))) = (raced, found) {
            if self.free_lockless(obj, slab, off) {
                return;
            }
        }
        let irq = self.plat.irq_save();
        let c = self.cpu_slab();
        if raced {
            c.stats.inc(Stat::CmpxchgDoubleCpuFail);
        }
        let bad = self.free_slow(c, obj, found);
        c.bump_tid();
        self.plat.irq_restore(irq);
        if let Some(kind) = bad {
            self.report_error(obj, kind, None);
        }
    }

    /// The object index of byte offset `off` in a slab when `off` is a multiple of the
    /// stride; a number above `usize::MAX / stride` (so above any object count) otherwise.
    /// One multiply by the inverse of the stride's odd part and one rotate, no division.
    #[inline(always)]
    pub(crate) fn object_index(&self, off: usize) -> usize {
        off.wrapping_mul(self.odd_inverse)
            .rotate_right(self.stride_shift)
    }
}
