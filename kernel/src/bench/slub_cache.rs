//! A safe face of a private SLUB cache for the experiments: objects are owned values (`Obj`)
//! that can move between CPUs and are freed exactly once, by value, so the experiments need no
//! `unsafe`. The cache is destroyed when the experiment ends (`finish`).
//!
//! Lock order: none held here; SLUB takes its own (see mm/slub/mod.rs).

use crate::mm::slub::KmemCache;
use crate::sync::LockStatsSnapshot;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use numalab_algo::slub::{SlabInfo, SlabinfoMode, Tunables};
use numalab_algo::topology::NodeId;

/// Objects per `alloc_bulk` call at most (a stack buffer).
pub const BULK_MAX: usize = 64;

/// One live object of a `BenchCache`: its address. Not `Clone`: whoever holds it frees it.
#[derive(Debug)]
pub struct Obj(usize);

impl Obj {
    /// The object's virtual address.
    pub fn addr(&self) -> usize {
        self.0
    }

    /// Writes `value` into the object's first word (a message payload).
    pub fn write_word(&mut self, value: u64) {
        // SAFETY: the object is live, owned by this `Obj` (no other reference to it exists),
        // at least 8 bytes long and 8-byte aligned (every bench cache is created that way).
        unsafe { (self.0 as *mut u64).write_volatile(value) }
    }

    /// Reads the object's first word.
    pub fn read_word(&self) -> u64 {
        // SAFETY: as in `write_word`; the object is live while this `Obj` exists.
        unsafe { (self.0 as *const u64).read_volatile() }
    }
}

/// A private SLUB cache with its own tunables.
pub struct BenchCache {
    cache: &'static KmemCache,
}

impl BenchCache {
    /// Creates `name` with `size_bytes` objects (8-byte aligned, at least 8 bytes).
    pub fn create(name: &str, size_bytes: usize, tunables: Tunables) -> Result<BenchCache, String> {
        KmemCache::create(name, size_bytes.max(8), 8, tunables)
            .map(|cache| BenchCache { cache })
            .map_err(|e| format!("cannot create cache {name}: {e:?}"))
    }

    /// The boot defaults (`slub.*` options) for a cache called `name`.
    pub fn default_tunables(name: &str) -> Tunables {
        crate::mm::slub::default_tunables(name)
    }

    pub fn alloc(&self) -> Option<Obj> {
        self.cache.alloc().map(|p| Obj(p.as_ptr() as usize))
    }

    /// An object from `node`'s memory (kmalloc_node-style: the node may be memoryless).
    pub fn alloc_node(&self, node: NodeId) -> Option<Obj> {
        self.cache
            .alloc_node(node)
            .map(|p| Obj(p.as_ptr() as usize))
    }

    /// Appends up to `count` (at most BULK_MAX) objects to `out`; returns how many.
    pub fn alloc_bulk(&self, out: &mut Vec<Obj>, count: usize) -> usize {
        let mut buf = [0usize; BULK_MAX];
        let n = self.cache.alloc_bulk(&mut buf[..count.min(BULK_MAX)]);
        out.extend(buf[..n].iter().map(|&a| Obj(a)));
        n
    }

    pub fn free(&self, obj: Obj) {
        let addr = obj.0;
        if let Some(ptr) = core::ptr::NonNull::new(addr as *mut u8) {
            // SAFETY: `obj` came from this cache's alloc (Obj is only made here) and is consumed
            // by this call, so the object is freed once and never used again.
            unsafe { self.cache.free(ptr) }
        }
    }

    /// Frees every object in `objs` (left empty), BULK_MAX at a time.
    pub fn free_bulk(&self, objs: &mut Vec<Obj>) {
        let mut buf = [0usize; BULK_MAX];
        while !objs.is_empty() {
            let n = objs.len().min(BULK_MAX);
            for (slot, obj) in buf.iter_mut().zip(objs.drain(objs.len() - n..)) {
                *slot = obj.0;
            }
            // SAFETY: the addresses came from this cache (Obj is only made here) and their
            // owners were drained out of `objs` above, so each is freed once and not used after.
            unsafe { self.cache.free_bulk(&buf[..n]) }
        }
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
