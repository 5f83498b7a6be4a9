//! Private caches as owned values: a `PrivateCache` is a cache that only its creator destroys,
//! by value (`destroy(self)`), so code that creates a cache for itself (experiments, the soak,
//! tests) needs no `unsafe` to get rid of it. It derefs to the cache with the handle's
//! lifetime (the raw API: alloc by pointer, stats, lock counters), and hands out SLUB's owned
//! objects (`Object`).

use super::{KmemCache, NodeId, Object};
use numalab_algo::slub::{CreateError, Tunables};

/// A cache of one owner, destroyed by `destroy` (dropping the handle leaks the cache: safe).
pub struct PrivateCache {
    cache: &'static KmemCache,
}

impl PrivateCache {
    /// `KmemCache::create`, owned.
    pub fn create(
        name: &str,
        size_bytes: usize,
        align: usize,
        tunables: Tunables,
    ) -> Result<PrivateCache, CreateError> {
        KmemCache::create(name, size_bytes, align, tunables).map(|cache| PrivateCache { cache })
    }

    /// An owned object (freed when dropped).
    pub fn alloc_object(&self) -> Option<Object> {
        self.cache.alloc_object()
    }

    /// An owned object from `node`'s memory (the node may be memoryless: nearest memory).
    pub fn alloc_object_node(&self, node: NodeId) -> Option<Object> {
        self.cache.alloc_object_node(node)
    }

    /// `KmemCache::alloc_objects` on this cache.
    pub fn alloc_objects(
        &self,
        out: &mut alloc::vec::Vec<Object>,
        buf: &mut [usize],
        count: usize,
    ) -> usize {
        self.cache.alloc_objects(out, buf, count)
    }

    /// `KmemCache::free_objects` on this cache.
    pub fn free_objects(&self, objs: &mut alloc::vec::Vec<Object>, buf: &mut [usize]) {
        self.cache.free_objects(objs, buf)
    }

    /// Destroys the cache when no object is live; with live objects it reports them (as
    /// `KmemCache::destroy` does), keeps the cache (leaked, still valid for its objects) and
    /// returns their count.
    pub fn destroy(self) -> Result<(), usize> {
        // SAFETY: `self.cache` is private to this handle, which is consumed here: every
        // reference it lent (`Deref`) has ended, and an `Object` of the cache is a live object,
        // which makes destroy refuse. Owners call this once the CPUs they lent the cache to
        // have returned (smp::run_on_cpus waits for them), so no other CPU is inside the cache.
        unsafe { self.cache.destroy() }
    }
}

impl core::ops::Deref for PrivateCache {
    type Target = KmemCache;
    #[inline(always)]
    fn deref(&self) -> &KmemCache {
        self.cache
    }
}
