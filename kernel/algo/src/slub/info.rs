//! What a cache reports and how it gives memory back: /proc/slabinfo 2.1 lines, counted two
//! ways (seed 001): from counters kept on every alloc, free and slab move (never walking a
//! list under list_lock, exact), or Linux's old count_partial walk under each list_lock
//! (kept for the experiment, with the longest lock hold measured); shrink and destroy.

use super::cache::Cache;
use super::platform::Platform;
use super::slab::{Slab, LIST_NONE};
use super::stats::Stat;
use alloc::format;
use alloc::string::String;
use core::sync::atomic::Ordering::Relaxed;

/// How slabinfo counts active objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlabinfoMode {
    /// Linux's count_partial: walk each node's partial list under its list_lock and count
    /// free objects there (objects free in per-CPU slabs look active).
    Scan,
    /// numalab's counters: objects handed out minus objects taken back, summed per CPU;
    /// no list lock taken.
    Counters,
}

/// The numbers behind one slabinfo line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlabInfo {
    pub active_objs: usize,
    pub num_objs: usize,
    pub objsize: usize,
    pub objperslab: usize,
    pub pagesperslab: usize,
    pub active_slabs: usize,
    pub num_slabs: usize,
    /// Longest list_lock hold of this reader, in `Platform::now` units (0 for Counters).
    pub max_lock_hold: u64,
    /// list_lock acquisitions this reader made.
    pub lock_acquisitions: u64,
    /// Partial slabs this reader walked under list_lock (0 for Counters).
    pub partial_slabs_walked: u64,
    /// `Platform::now` units this reader spent between asking for a list_lock and holding
    /// it, summed over nodes (0 for Counters).
    pub lock_wait: u64,
}

/// The header of /proc/slabinfo version 2.1.
pub const SLABINFO_HEADER: &str = "slabinfo - version: 2.1\n# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail>";

/// One line in Linux's format (`%-17s %6lu %6lu %6u %4u %4d : tunables ... : slabdata ...`).
pub fn slabinfo_line(name: &str, s: &SlabInfo) -> String {
    format!(
        "{:<17} {:>6} {:>6} {:>6} {:>4} {:>4} : tunables {:>4} {:>4} {:>4} : slabdata {:>6} {:>6} {:>6}",
        name, s.active_objs, s.num_objs, s.objsize, s.objperslab, s.pagesperslab, 0, 0, 0, s.active_slabs, s.num_slabs, 0
    )
}

/// Slabs with this many free objects or fewer are moved to the head by shrink, least free
/// first (Linux's SHRINK_PROMOTE_MAX).
const SHRINK_PROMOTE_MAX: usize = 32;

impl<P: Platform> Cache<P> {
    /// The slabinfo numbers, counted the `mode` way.
    pub fn slabinfo(&self, mode: SlabinfoMode) -> SlabInfo {
        let p = &self.plat;
        let mut info = SlabInfo {
            objsize: self.layout.size,
            objperslab: self.oo.objects,
            pagesperslab: 1 << self.oo.order,
            ..SlabInfo::default()
        };
        for n in self.nodes.iter() {
            info.num_slabs += n.nr_slabs.load(Relaxed);
            info.num_objs += n.total_objects.load(Relaxed);
        }
        info.active_slabs = info.num_slabs;
        match mode {
            SlabinfoMode::Counters => {
                // Objects cached in sheaves are in use as far as their slabs know: Linux's
                // slabinfo counts them as active, and so does this.
                let s = self.stats();
                info.active_objs = (s.live_objects() + s.sheaf_cached_objects()).max(0) as usize;
            }
            SlabinfoMode::Scan => {
                let mut free = 0usize;
                for n in self.nodes.iter() {
                    let asked = p.now();
                    let (count, walked, waited, held) = p.with_lock(&n.list_lock, || {
                        let start = p.now();
                        let (mut count, mut walked) = (0usize, 0u64);
                        let mut s = n.partial.head();
                        while s != 0 {
                            let slab = Slab(s);
                            count += slab.objects(p) - slab.state(p).inuse();
                            walked += 1;
                            s = slab.next(p);
                        }
                        (
                            count,
                            walked,
                            start.wrapping_sub(asked),
                            p.now().wrapping_sub(start),
                        )
                    });
                    free += count;
                    info.partial_slabs_walked += walked;
                    info.lock_wait += waited;
                    info.lock_acquisitions += 1;
                    info.max_lock_hold = info.max_lock_hold.max(held);
                }
                info.active_objs = info.num_objs.saturating_sub(free);
            }
        }
        info
    }

    /// Linux's __kmem_cache_do_shrink after flushing every CPU: empty partial slabs go back
    /// to the page allocator (whatever min_partial says), and partial slabs with few free
    /// objects move to the head, fullest first. Returns the slabs given back.
    pub fn shrink(&self) -> usize {
        self.flush_all();
        self.shrink_barns();
        if self.hybrid {
            // 6.18: the barns' objects went back through __slab_free, which may have frozen
            // full slabs onto the running CPU's partial list; unfreeze them too.
            self.flush_local();
        }
        let p = &self.plat;
        let mut freed = 0;
        for n in self.nodes.iter() {
            let mut discard = 0usize;
            p.with_lock(&n.list_lock, || {
                let mut promote = [0usize; SHRINK_PROMOTE_MAX];
                let mut s = n.partial.head();
                while s != 0 {
                    let slab = Slab(s);
                    s = slab.next(p);
                    let free = slab.objects(p) - slab.state(p).inuse();
                    if free == slab.objects(p) {
                        n.partial.remove(p, slab);
                        slab.set_cpu_next(p, discard);
                        discard = slab.0;
                    } else if free <= SHRINK_PROMOTE_MAX {
                        n.partial.remove(p, slab);
                        slab.set_cpu_next(p, promote[free - 1]);
                        promote[free - 1] = slab.0;
                    }
                }
                // Most free first onto the head, so the least free ends up first.
                for head in promote.iter().rev() {
                    let mut s = *head;
                    while s != 0 {
                        let slab = Slab(s);
                        s = slab.cpu_next(p);
                        slab.set_cpu_next(p, 0);
                        n.partial.push(p, slab, false, super::slab::LIST_PARTIAL);
                    }
                }
            });
            while discard != 0 {
                let slab = Slab(discard);
                discard = slab.cpu_next(p);
                slab.set_cpu_next(p, 0);
                debug_assert_eq!(slab.list(p), LIST_NONE);
                self.discard_slab(slab);
                freed += 1;
            }
        }
        if freed > 0 {
            let irq = p.irq_save();
            self.cpu_slab().stats.add(Stat::FreeSlab, freed as u64);
            p.irq_restore(irq);
        }
        freed
    }

    /// Destroys the cache: flushes and shrinks it; if objects are still live it stays alive
    /// and their number comes back as the error (Linux: "Objects remaining ... on
    /// __kmem_cache_shutdown()"). On success every slab page is back in the page allocator.
    pub fn destroy(&self) -> Result<(), usize> {
        self.shrink();
        let live = self.stats().live_objects();
        let slabs: usize = self.nodes.iter().map(|n| n.nr_slabs.load(Relaxed)).sum();
        if live != 0 || slabs != 0 {
            return Err(live.max(slabs as i64).max(1) as usize);
        }
        self.free_cpu_sheaves();
        self.dead.store(true, Relaxed);
        Ok(())
    }

    /// Checks the node lists against the counters under each list_lock (for tests): every
    /// listed slab belongs to this cache and node, partial slabs have free objects, counts
    /// add up. Returns a description of the first inconsistency.
    pub fn validate(&self) -> Result<(), String> {
        let p = &self.plat;
        for (i, n) in self.nodes.iter().enumerate() {
            let r = p.with_lock(&n.list_lock, || {
                let mut count = 0;
                let mut s = n.partial.head();
                while s != 0 {
                    let slab = Slab(s);
                    let st = slab.state(p);
                    if slab.cache_id(p) != self.id() || slab.node(p).index() != i {
                        return Err(format!(
                            "{}: node {} partial slab {:#x} of another cache/node",
                            self.name, i, s
                        ));
                    }
                    if st.frozen() || !st.has_free() {
                        return Err(format!(
                            "{}: node {} partial slab {:#x} frozen={} free={}",
                            self.name,
                            i,
                            s,
                            st.frozen(),
                            st.has_free()
                        ));
                    }
                    count += 1;
                    s = slab.next(p);
                }
                if count != n.nr_partial() {
                    return Err(format!(
                        "{}: node {} nr_partial {} but {} listed",
                        self.name,
                        i,
                        n.nr_partial(),
                        count
                    ));
                }
                Ok(())
            });
            r?;
        }
        Ok(())
    }
}
