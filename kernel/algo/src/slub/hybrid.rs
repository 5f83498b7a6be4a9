//! The hybrid design (Linux 6.18 and 6.19, "slab: add opt-in caching layer of percpu
//! sheaves", commit 2d517aa09bbc): a cache that opts in keeps per-CPU sheaves and per-node
//! barns (sheaves.rs) on top of the partial design's per-CPU slab and partial lists, and
//! every other cache of the same kernel runs the partial design alone.
//!
//! Where the sheaves design goes to the node's partial slabs (slab_path.rs), a hybrid cache
//! goes through the per-CPU slab as 6.18 does: a sheaf is refilled by the bulk allocator
//! (6.18's refill_sheaf calls __kmem_cache_alloc_bulk: the CPU freelist, then ___slab_alloc
//! with its CPU partial list, node partial lists and new slabs), an allocation that bypasses
//! the sheaves (another node, an interrupt finding the trylock taken, no sheaf to be had)
//! takes the partial design's fast path, and flushed or bypassed frees take its free slow
//! path (__slab_free, which may freeze a full slab onto the CPU partial list).

use super::cache::{Cache, CpuSlab};
use super::freelist::decode;
use super::platform::Platform;
use super::stats::Stat;
use core::sync::atomic::Ordering::Relaxed;

impl<P: Platform> Cache<P> {
    /// Up to `want` objects from the CPU slab's freelist, then the allocation slow path
    /// (Linux 6.18's __kmem_cache_alloc_bulk), each handed to `put`; returns how many.
    /// Interrupts off; the tid is advanced once at the end. Each object is counted as
    /// alloc_fastpath or alloc_slowpath (objects for a caller).
    pub(crate) fn cpu_slab_take(
        &self,
        c: &CpuSlab,
        want: usize,
        put: &mut dyn FnMut(usize),
    ) -> usize {
        let mut n = 0;
        while n < want {
            let obj = c.freelist.load(Relaxed);
            let got = if obj != 0 {
                let fp = obj + self.layout.fp_offset;
                c.freelist
                    .store(decode(self.plat.load(fp), self.random, fp), Relaxed);
                c.stats.inc(Stat::AllocFastpath);
                Some(obj)
            } else {
                self.alloc_slow(c, None, false)
            };
            let Some(obj) = got else { break };
            put(obj);
            n += 1;
        }
        c.bump_tid();
        n
    }

    /// A hybrid cache's sheaf refill: `want` objects through the CPU slab (interrupts off,
    /// the CPU's sheaf trylock held). Counted as sheaf_refill only: Linux 6.18 also counts
    /// them as alloc_fastpath/alloc_slowpath, numalab keeps those two for objects handed to
    /// callers, so that `live_objects` stays exact. The slow path's own events (alloc_slab,
    /// cpu_partial_alloc, alloc_from_partial, ...) stay counted.
    pub(crate) fn hybrid_refill(
        &self,
        c: &CpuSlab,
        want: usize,
        put: &mut dyn FnMut(usize),
    ) -> usize {
        let fast = c.stats.get(Stat::AllocFastpath);
        let slow = c.stats.get(Stat::AllocSlowpath);
        let got = self.cpu_slab_take(c, want, put);
        let uncount = |stat: Stat, before: u64| {
            let n = c.stats.get(stat).wrapping_sub(before);
            c.stats.add(stat, n.wrapping_neg());
        };
        uncount(Stat::AllocFastpath, fast);
        uncount(Stat::AllocSlowpath, slow);
        c.stats.add(Stat::SheafRefill, got as u64);
        got
    }
}
