//! `VmapNode`: one vmap node (a shard of vmalloc's bookkeeping, *not* a NUMA node by
//! itself): its busy tree of live areas, its lazy list of unmapped areas waiting for a TLB
//! flush, and its pools of purged areas by size in pages (1..=256) that later allocations
//! take without touching the global free space. The kernel keeps each node under its own lock.

use alloc::vec::Vec;

use super::tree::AreaTree;
use super::PAGE_SIZE;

/// Pools hold areas of 1..=MAX_POOL_PAGES pages (Linux's MAX_VA_SIZE_PAGES).
pub const MAX_POOL_PAGES: usize = 256;

/// An area that was unmapped and waits for the next purge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LazyArea {
    pub start: u64,
    pub size_bytes: u64,
}

#[derive(Clone, Debug, Default)]
struct Pool {
    starts: Vec<u64>,
    /// Taken from since the last decay.
    used: bool,
}

/// Counts of one node, for dumps and conservation checks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeCounts {
    pub busy_areas: u64,
    pub busy_pages: u64,
    pub lazy_areas: u64,
    pub lazy_pages: u64,
    pub pool_areas: u64,
    pub pool_pages: u64,
    pub pool_hits: u64,
    pub pool_misses: u64,
}

/// One vmap node. `M` is what the kernel records per live area (caller, pages, kind).
#[derive(Clone, Debug)]
pub struct VmapNode<M: Copy> {
    busy: AreaTree<M>,
    busy_pages: u64,
    lazy: Vec<LazyArea>,
    lazy_pages: u64,
    pools: Vec<Pool>,
    pool_areas: u64,
    pool_pages: u64,
    pool_hits: u64,
    pool_misses: u64,
}

impl<M: Copy> Default for VmapNode<M> {
    fn default() -> Self {
        Self::new()
    }
}

impl<M: Copy> VmapNode<M> {
    pub fn new() -> VmapNode<M> {
        let mut busy = AreaTree::new();
        busy.reserve(64);
        VmapNode {
            busy,
            busy_pages: 0,
            lazy: Vec::with_capacity(64),
            lazy_pages: 0,
            pools: (0..MAX_POOL_PAGES).map(|_| Pool::default()).collect(),
            pool_areas: 0,
            pool_pages: 0,
            pool_hits: 0,
            pool_misses: 0,
        }
    }

    // ---- busy tree ----

    /// Records a live area. False if an area already starts there.
    pub fn busy_insert(&mut self, start: u64, size_bytes: u64, meta: M) -> bool {
        let ok = self.busy.insert(start, size_bytes, meta);
        if ok {
            self.busy_pages += size_bytes / PAGE_SIZE;
        }
        ok
    }

    /// Removes the live area starting exactly at `start`.
    pub fn busy_remove(&mut self, start: u64) -> Option<(u64, M)> {
        let r = self.busy.remove(start);
        if let Some((size, _)) = r {
            self.busy_pages -= size / PAGE_SIZE;
        }
        r
    }

    pub fn busy_get(&self, start: u64) -> Option<(u64, M)> {
        self.busy.get(start)
    }

    /// The live area containing `addr`.
    pub fn busy_containing(&self, addr: u64) -> Option<(u64, u64, M)> {
        self.busy.containing(addr)
    }

    /// Live areas in address order.
    pub fn busy_for_each(&self, f: impl FnMut(u64, u64, &M)) {
        self.busy.for_each(f)
    }

    // ---- lazy list ----

    /// Queues an unmapped area for the next purge; returns this node's lazy pages.
    pub fn lazy_push(&mut self, start: u64, size_bytes: u64) -> u64 {
        self.lazy.push(LazyArea { start, size_bytes });
        self.lazy_pages += size_bytes / PAGE_SIZE;
        self.lazy_pages
    }

    pub fn lazy_pages(&self) -> u64 {
        self.lazy_pages
    }

    /// Moves the lazy list into `out` (whose old contents are kept), leaving it empty.
    pub fn lazy_take(&mut self, out: &mut Vec<LazyArea>) -> u64 {
        let pages = self.lazy_pages;
        out.append(&mut self.lazy);
        self.lazy_pages = 0;
        pages
    }

    /// Whether `addr` lies in an area on the lazy list (freed, not purged yet).
    pub fn lazy_containing(&self, addr: u64) -> Option<LazyArea> {
        self.lazy
            .iter()
            .copied()
            .find(|a| a.start <= addr && addr - a.start < a.size_bytes)
    }

    // ---- pools ----

    /// Takes a purged area of exactly `nr_pages` pages, if the pool has one.
    pub fn pool_take(&mut self, nr_pages: u64) -> Option<u64> {
        if nr_pages == 0 || nr_pages as usize > MAX_POOL_PAGES {
            return None;
        }
        let pool = &mut self.pools[nr_pages as usize - 1];
        pool.used = true;
        match pool.starts.pop() {
            Some(start) => {
                self.pool_areas -= 1;
                self.pool_pages -= nr_pages;
                self.pool_hits += 1;
                Some(start)
            }
            None => {
                self.pool_misses += 1;
                None
            }
        }
    }

    /// Keeps a purged area for reuse. False (area not taken) when it is larger than
    /// MAX_POOL_PAGES or not page granular.
    pub fn pool_put(&mut self, start: u64, size_bytes: u64) -> bool {
        let nr_pages = size_bytes / PAGE_SIZE;
        if !size_bytes.is_multiple_of(PAGE_SIZE)
            || nr_pages == 0
            || nr_pages as usize > MAX_POOL_PAGES
        {
            return false;
        }
        self.pools[nr_pages as usize - 1].starts.push(start);
        self.pool_areas += 1;
        self.pool_pages += nr_pages;
        true
    }

    /// Shrinks the pools: a pool not taken from since the last decay gives back a quarter of
    /// its areas (at least one); `full` empties every pool. The areas given back are
    /// appended to `out` for the caller to return to the free space.
    pub fn decay_pools(&mut self, full: bool, out: &mut Vec<LazyArea>) {
        for (i, pool) in self.pools.iter_mut().enumerate() {
            let len = pool.starts.len();
            let n = if full {
                len
            } else if pool.used || len == 0 {
                0
            } else {
                len.div_ceil(4)
            };
            pool.used = false;
            let size_bytes = (i as u64 + 1) * PAGE_SIZE;
            for start in pool.starts.drain(len - n..) {
                out.push(LazyArea { start, size_bytes });
            }
            self.pool_areas -= n as u64;
            self.pool_pages -= n as u64 * (i as u64 + 1);
        }
    }

    /// Whether `addr` lies in a pooled (purged, reusable) area.
    pub fn pool_containing(&self, addr: u64) -> Option<LazyArea> {
        self.pools.iter().enumerate().find_map(|(i, p)| {
            let size_bytes = (i as u64 + 1) * PAGE_SIZE;
            p.starts
                .iter()
                .find(|&&s| s <= addr && addr - s < size_bytes)
                .map(|&start| LazyArea { start, size_bytes })
        })
    }

    /// Lengths of the non-empty pools as (nr_pages, areas).
    pub fn pool_lengths(&self, mut f: impl FnMut(u64, u64)) {
        for (i, p) in self.pools.iter().enumerate() {
            if !p.starts.is_empty() {
                f(i as u64 + 1, p.starts.len() as u64);
            }
        }
    }

    pub fn counts(&self) -> NodeCounts {
        NodeCounts {
            busy_areas: self.busy.len() as u64,
            busy_pages: self.busy_pages,
            lazy_areas: self.lazy.len() as u64,
            lazy_pages: self.lazy_pages,
            pool_areas: self.pool_areas,
            pool_pages: self.pool_pages,
            pool_hits: self.pool_hits,
            pool_misses: self.pool_misses,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: u64 = PAGE_SIZE;

    #[test]
    fn pools_take_exact_sizes_and_decay_when_unused() {
        let mut n: VmapNode<()> = VmapNode::new();
        for i in 0..8 {
            assert!(n.pool_put(i * 16 * P, 2 * P));
        }
        assert!(!n.pool_put(0, 257 * P), "too large for a pool");
        assert_eq!(n.pool_take(1), None);
        assert_eq!(n.pool_take(2), Some(7 * 16 * P));
        let mut out = Vec::new();
        n.decay_pools(false, &mut out);
        assert!(out.is_empty(), "pool used since last decay keeps its areas");
        n.decay_pools(false, &mut out);
        assert_eq!(out.len(), 2, "unused: a quarter of 7, rounded up");
        assert_eq!(n.counts().pool_areas, 5);
        n.decay_pools(true, &mut out);
        assert_eq!(out.len(), 7);
        assert_eq!(n.counts().pool_pages, 0);
    }

    #[test]
    fn busy_and_lazy_accounting() {
        let mut n: VmapNode<u8> = VmapNode::new();
        assert!(n.busy_insert(0x1000, 3 * P, 7));
        assert!(!n.busy_insert(0x1000, P, 1));
        assert_eq!(n.busy_containing(0x1000 + 2 * P).map(|a| a.2), Some(7));
        assert_eq!(n.busy_remove(0x1000), Some((3 * P, 7)));
        assert_eq!(n.lazy_push(0x1000, 3 * P), 3);
        assert!(n.lazy_containing(0x2000).is_some());
        let mut out = Vec::new();
        assert_eq!(n.lazy_take(&mut out), 3);
        assert_eq!(out.len(), 1);
        assert_eq!(n.counts(), NodeCounts::default());
    }
}
