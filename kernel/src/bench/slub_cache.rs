//! A private SLUB cache for the experiments: objects are SLUB's owned handles
//! (`mm::slub::Object`, here `Obj`) that can move between CPUs and are freed exactly once, by
//! value, so the experiments need no `unsafe`. The cache is destroyed when the experiment ends
//! (`finish`).
//!
//! Lock order: none held here; SLUB takes its own (see mm/slub/mod.rs).

use crate::mm::slub::PrivateCache;
use crate::sync::LockStatsSnapshot;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use numalab_algo::slub::{SlabInfo, SlabinfoMode, StatsSnapshot, Tunables};
use numalab_algo::topology::NodeId;

/// Objects per `alloc_bulk` call at most (a stack buffer).
pub const BULK_MAX: usize = 64;

/// One live object of a `BenchCache`: SLUB's owned handle (dropping it frees it).
pub use crate::mm::slub::Object as Obj;

/// A private SLUB cache with its own tunables.
pub struct BenchCache {
    cache: PrivateCache,
}

impl BenchCache {
    /// Creates `name` with `size_bytes` objects (8-byte aligned, at least 8 bytes).
    pub fn create(name: &str, size_bytes: usize, tunables: Tunables) -> Result<BenchCache, String> {
        let cache = PrivateCache::create(name, size_bytes.max(8), 8, tunables)
            .map_err(|e| format!("cannot create cache {name}: {e:?}"))?;
        for n in 0..crate::topology::get().nr_nodes() {
            let node = NodeId(n as u16);
            if let Some(lock) = cache.list_lock_object(node) {
                super::region::name(lock, format_args!("{name} node {n} list_lock"));
            }
            if let Some(lock) = cache.barn_lock_object(node) {
                super::region::name(lock, format_args!("{name} barn node {n} lock"));
            }
        }
        Ok(BenchCache { cache })
    }

    /// The boot defaults (`slub.*` options) for a cache called `name`.
    pub fn default_tunables(name: &str) -> Tunables {
        crate::mm::slub::default_tunables(name)
    }

    /// The boot defaults with the partial design, whatever `slub.design` says: for the
    /// experiments that replay threads of the per-CPU partial era (Linux up to 6.17).
    pub fn partial_tunables(name: &str) -> Tunables {
        Tunables {
            design: numalab_algo::slub::Design::Partial,
            ..Self::default_tunables(name)
        }
    }

    pub fn barn_lock_stats(&self) -> LockStatsSnapshot {
        self.cache.barn_lock_stats()
    }

    pub fn reset_barn_lock_stats(&self) {
        self.cache.reset_barn_lock_stats()
    }

    pub fn alloc(&self) -> Option<Obj> {
        self.cache.alloc_object()
    }

    /// An object from `node`'s memory (kmalloc_node-style: the node may be memoryless).
    pub fn alloc_node(&self, node: NodeId) -> Option<Obj> {
        self.cache.alloc_object_node(node)
    }

    /// Appends up to `count` (at most BULK_MAX) objects to `out`; returns how many.
    pub fn alloc_bulk(&self, out: &mut Vec<Obj>, count: usize) -> usize {
        self.cache
            .alloc_objects(out, &mut [0usize; BULK_MAX], count)
    }

    /// Frees `obj` (the same as dropping it; says so where an experiment frees).
    pub fn free(&self, obj: Obj) {
        drop(obj)
    }

    /// Frees every object in `objs` (left empty), BULK_MAX at a time.
    pub fn free_bulk(&self, objs: &mut Vec<Obj>) {
        self.cache.free_objects(objs, &mut [0usize; BULK_MAX])
    }

    /// The cache's geometry and partial limits, for the experiment's log:
    /// `(slab order, objects per slab, min_partial, cpu_partial objects)`.
    pub fn shape(&self) -> (u32, usize, usize, usize) {
        let core = self.cache.core();
        let oo = core.order_objects();
        (
            oo.order as u32,
            oo.objects,
            core.min_partial(),
            core.cpu_partial().0,
        )
    }

    /// The per-CPU partial list bound in slabs (Linux's slub_set_cpu_partial).
    pub fn cpu_partial_slabs(&self) -> usize {
        self.cache.core().cpu_partial().1
    }

    /// The cache's SLUB statistics (Linux's stat names), summed over CPUs.
    pub fn stats(&self) -> StatsSnapshot {
        self.cache.stats()
    }

    pub fn list_lock_stats(&self) -> LockStatsSnapshot {
        self.cache.list_lock_stats()
    }

    pub fn reset_list_lock_stats(&self) {
        self.cache.reset_list_lock_stats()
    }

    /// Bytes held in this cache's slab pages.
    pub fn slab_bytes(&self) -> u64 {
        self.cache.slab_bytes() as u64
    }

    pub fn slabinfo(&self, mode: SlabinfoMode) -> SlabInfo {
        self.cache.slabinfo(mode)
    }

    /// Destroys the cache; every object must have been freed.
    pub fn finish(self) -> Result<(), String> {
        let name = String::from(self.cache.name());
        self.cache
            .destroy()
            .map_err(|live| format!("cache {name}: {live} objects still live at the end"))
    }
}
