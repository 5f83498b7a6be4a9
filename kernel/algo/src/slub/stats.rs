//! SLUB statistics with Linux's CONFIG_SLUB_STATS names, counted per CPU by the CPU itself
//! (a plain load and store, no lock prefix) and summed on demand; and the debug error kinds.

use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// One counter. The names are Linux's (/sys/kernel/slab/CACHE/NAME), plus numalab's
/// own for paths Linux does not count separately (marked).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Stat {
    /// Allocation from the CPU freelist.
    AllocFastpath,
    /// Allocation that took the slow path (counted when it succeeds).
    AllocSlowpath,
    /// Allocation that refilled the CPU freelist from its active slab's own freelist.
    AllocRefill,
    /// The CPU took a partial slab from a node list.
    AllocFromPartial,
    /// A new slab came from the page allocator.
    AllocSlab,
    /// The CPU slab was on the wrong node for alloc_node.
    AllocNodeMismatch,
    /// numalab: the partial slab came from another node (also counted in alloc_from_partial).
    AllocRemotePartial,
    /// numalab: prefer_local chose a new local slab over remote partials.
    AllocPreferLocal,
    /// numalab: alloc_node's node was out of pages; the CPU slab taken on another node
    /// stands in for it (serves its next non-strict requests) until full.
    AllocNodeFallback,
    FreeFastpath,
    FreeSlowpath,
    /// Free into a slab owned by some CPU.
    FreeFrozen,
    FreeAddPartial,
    FreeRemovePartial,
    /// A slab went back to the page allocator.
    FreeSlab,
    /// The active slab was taken from the CPU partial list.
    CpuPartialAlloc,
    /// A free froze a full slab onto the CPU partial list.
    CpuPartialFree,
    /// A node partial slab moved to the CPU partial list while refilling.
    CpuPartialNode,
    /// The CPU partial list was full and drained to the node lists.
    CpuPartialDrain,
    DeactivateFull,
    DeactivateEmpty,
    DeactivateToHead,
    DeactivateToTail,
    DeactivateRemoteFrees,
    /// The active slab had no free objects left: dropped without list work.
    DeactivateBypass,
    /// The page allocator could not give the preferred order; the minimum order was used.
    OrderFallback,
    /// A compare-and-swap of a slab word lost a race and was retried (Linux's
    /// cmpxchg_double_fail).
    CmpxchgDoubleFail,
    /// A fast path's (freelist, tid) compare-and-swap failed because an interrupt (or
    /// migration) changed the CPU slab in between; it retried (Linux's cmpxchg_double_cpu_fail).
    CmpxchgDoubleCpuFail,
    /// numalab: objects handed out by alloc_bulk.
    AllocBulk,
    /// numalab: objects returned by free_bulk.
    FreeBulk,
    // ---- the sheaves design (Linux 7's names) ----
    /// Allocation from the CPU's main sheaf (Linux's ALLOC_PCS).
    AllocCpuSheaf,
    /// Free into the CPU's main sheaf (Linux's FREE_PCS).
    FreeCpuSheaf,
    /// Objects flushed from a sheaf back to their slabs.
    SheafFlush,
    /// Objects taken from slabs into a sheaf.
    SheafRefill,
    /// The main and spare sheaves were swapped.
    SheafSwap,
    /// An empty sheaf was allocated.
    SheafAlloc,
    /// An empty sheaf was freed.
    SheafFree,
    /// A full sheaf came from the barn (an empty one went back).
    BarnGet,
    /// The barn had no full sheaf.
    BarnGetFail,
    /// A full sheaf went to the barn (an empty one came back).
    BarnPut,
    /// The barn already held its bound of full sheaves.
    BarnPutFail,
    /// numalab: a refill skipped another node's partial slabs because its list_lock was
    /// taken (the trylock of Linux commit 40fd0acc45d0).
    AllocRemoteTrylockFail,
    /// numalab: an allocation or free found the CPU's sheaf trylock taken (an interrupt
    /// on top of its owner's fast path) and took the slab path.
    SheafTrylockFail,
    /// kfree_rcu() put an object in the CPU's rcu_free sheaf (Linux 6.18's FREE_RCU_SHEAF).
    FreeRcuSheaf,
    /// kfree_rcu() found no rcu_free sheaf to use (trylock taken, no barn, no memory for a
    /// sheaf): the batched kfree_rcu takes the object (FREE_RCU_SHEAF_FAIL).
    FreeRcuSheafFail,
}

/// Number of counters.
pub const NR_STATS: usize = Stat::FreeRcuSheafFail as usize + 1;

impl Stat {
    /// Linux's name of the counter (/sys/kernel/slab/CACHE/NAME).
    pub fn name(self) -> &'static str {
        STAT_NAMES[self as usize].1
    }
}

/// Every counter in order, with its name.
pub const STAT_NAMES: [(Stat, &str); NR_STATS] = [
    (Stat::AllocFastpath, "alloc_fastpath"),
    (Stat::AllocSlowpath, "alloc_slowpath"),
    (Stat::AllocRefill, "alloc_refill"),
    (Stat::AllocFromPartial, "alloc_from_partial"),
    (Stat::AllocSlab, "alloc_slab"),
    (Stat::AllocNodeMismatch, "alloc_node_mismatch"),
    (Stat::AllocRemotePartial, "alloc_remote_partial"),
    (Stat::AllocPreferLocal, "alloc_prefer_local"),
    (Stat::AllocNodeFallback, "alloc_node_fallback"),
    (Stat::FreeFastpath, "free_fastpath"),
    (Stat::FreeSlowpath, "free_slowpath"),
    (Stat::FreeFrozen, "free_frozen"),
    (Stat::FreeAddPartial, "free_add_partial"),
    (Stat::FreeRemovePartial, "free_remove_partial"),
    (Stat::FreeSlab, "free_slab"),
    (Stat::CpuPartialAlloc, "cpu_partial_alloc"),
    (Stat::CpuPartialFree, "cpu_partial_free"),
    (Stat::CpuPartialNode, "cpu_partial_node"),
    (Stat::CpuPartialDrain, "cpu_partial_drain"),
    (Stat::DeactivateFull, "deactivate_full"),
    (Stat::DeactivateEmpty, "deactivate_empty"),
    (Stat::DeactivateToHead, "deactivate_to_head"),
    (Stat::DeactivateToTail, "deactivate_to_tail"),
    (Stat::DeactivateRemoteFrees, "deactivate_remote_frees"),
    (Stat::DeactivateBypass, "deactivate_bypass"),
    (Stat::OrderFallback, "order_fallback"),
    (Stat::CmpxchgDoubleFail, "cmpxchg_double_fail"),
    (Stat::CmpxchgDoubleCpuFail, "cmpxchg_double_cpu_fail"),
    (Stat::AllocBulk, "alloc_bulk"),
    (Stat::FreeBulk, "free_bulk"),
    (Stat::AllocCpuSheaf, "alloc_cpu_sheaf"),
    (Stat::FreeCpuSheaf, "free_cpu_sheaf"),
    (Stat::SheafFlush, "sheaf_flush"),
    (Stat::SheafRefill, "sheaf_refill"),
    (Stat::SheafSwap, "sheaf_swap"),
    (Stat::SheafAlloc, "sheaf_alloc"),
    (Stat::SheafFree, "sheaf_free"),
    (Stat::BarnGet, "barn_get"),
    (Stat::BarnGetFail, "barn_get_fail"),
    (Stat::BarnPut, "barn_put"),
    (Stat::BarnPutFail, "barn_put_fail"),
    (Stat::AllocRemoteTrylockFail, "alloc_remote_trylock_fail"),
    (Stat::SheafTrylockFail, "sheaf_trylock_fail"),
    (Stat::FreeRcuSheaf, "free_rcu_sheaf"),
    (Stat::FreeRcuSheafFail, "free_rcu_sheaf_fail"),
];

/// One CPU's counters. Only that CPU writes them (interrupts off); anyone may read.
pub struct CpuStats {
    counts: [AtomicU64; NR_STATS],
}

impl Default for CpuStats {
    fn default() -> Self {
        CpuStats {
            counts: core::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

impl CpuStats {
    /// Adds one. Must run on the owning CPU with interrupts off (load + store, no RMW).
    #[inline(always)]
    pub fn inc(&self, stat: Stat) {
        self.add(stat, 1);
    }

    #[inline(always)]
    pub fn add(&self, stat: Stat, n: u64) {
        let c = &self.counts[stat as usize];
        c.store(c.load(Relaxed).wrapping_add(n), Relaxed);
    }

    /// The counter itself, for an interrupt-atomic increment (`Platform::cpu_inc`).
    pub fn counter(&self, stat: Stat) -> &AtomicU64 {
        &self.counts[stat as usize]
    }

    pub fn get(&self, stat: Stat) -> u64 {
        self.counts[stat as usize].load(Relaxed)
    }

    /// Zeroes the counters (only meaningful while the CPU is quiet).
    pub fn reset(&self) {
        for c in &self.counts {
            c.store(0, Relaxed);
        }
    }
}

/// Counters summed over CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatsSnapshot {
    pub counts: [u64; NR_STATS],
}

impl Default for StatsSnapshot {
    fn default() -> Self {
        StatsSnapshot {
            counts: [0; NR_STATS],
        }
    }
}

impl StatsSnapshot {
    pub fn get(&self, stat: Stat) -> u64 {
        self.counts[stat as usize]
    }

    /// Adds `n` to one counter (the per-CPU fast-path counters kept outside `CpuStats`).
    pub fn add_raw(&mut self, stat: Stat, n: u64) {
        let c = &mut self.counts[stat as usize];
        *c = c.wrapping_add(n);
    }

    pub fn add_cpu(&mut self, cpu: &CpuStats) {
        for (i, c) in self.counts.iter_mut().enumerate() {
            *c = c.wrapping_add(cpu.counts[i].load(Relaxed));
        }
    }

    /// Differences `self - earlier`.
    pub fn since(&self, earlier: &StatsSnapshot) -> StatsSnapshot {
        let mut out = *self;
        for (o, e) in out.counts.iter_mut().zip(earlier.counts.iter()) {
            *o = o.wrapping_sub(*e);
        }
        out
    }

    /// Objects handed out minus objects taken back: the exact number of live objects (in
    /// the sheaves design, objects from and to the CPU sheaves included; an object given to
    /// an rcu_free sheaf counts as taken back, its wait for a grace period included).
    pub fn live_objects(&self) -> i64 {
        let allocs = self.get(Stat::AllocFastpath)
            + self.get(Stat::AllocSlowpath)
            + self.get(Stat::AllocCpuSheaf);
        let frees = self.get(Stat::FreeFastpath)
            + self.get(Stat::FreeSlowpath)
            + self.get(Stat::FreeCpuSheaf)
            + self.get(Stat::FreeRcuSheaf);
        allocs as i64 - frees as i64
    }

    /// Free objects held in sheaves (per-CPU and in barns): what came in (refills from
    /// slabs, frees into sheaves) minus what went out (allocations from sheaves, flushes to
    /// slabs). Their slabs count them as in use, as Linux's do. Objects in rcu_free sheaves
    /// (waiting for a grace period, or back in a barn after it) are held too.
    pub fn sheaf_cached_objects(&self) -> i64 {
        let came = self.get(Stat::SheafRefill)
            + self.get(Stat::FreeCpuSheaf)
            + self.get(Stat::FreeRcuSheaf);
        let went = self.get(Stat::AllocCpuSheaf) + self.get(Stat::SheafFlush);
        came as i64 - went as i64
    }
}

/// Kinds of misuse that debug and hardening checks detect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum ErrorKind {
    /// The object is already free (state word or freelist says so).
    DoubleFree,
    /// The pointer is not inside any slab.
    NotSlab,
    /// The pointer is inside a slab of another cache.
    WrongCache,
    /// The pointer is inside a slab of this cache but not at an object boundary.
    NotObjectStart,
    /// The red zone after the object was overwritten (buffer overflow).
    RedZone,
    /// A free object's poison was overwritten (use after free), found at its next allocation.
    Poison,
    /// A free pointer decoded to an address outside its slab (freelist corruption).
    FreelistCorrupt,
}

pub const NR_ERROR_KINDS: usize = ErrorKind::FreelistCorrupt as usize + 1;

impl ErrorKind {
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::DoubleFree => "double free",
            ErrorKind::NotSlab => "invalid free: not a slab object",
            ErrorKind::WrongCache => "invalid free: object of another cache",
            ErrorKind::NotObjectStart => "invalid free: not at an object boundary",
            ErrorKind::RedZone => "red zone overwritten",
            ErrorKind::Poison => "poison overwritten (use after free)",
            ErrorKind::FreelistCorrupt => "freelist pointer corrupt",
        }
    }

    pub const ALL: [ErrorKind; NR_ERROR_KINDS] = [
        ErrorKind::DoubleFree,
        ErrorKind::NotSlab,
        ErrorKind::WrongCache,
        ErrorKind::NotObjectStart,
        ErrorKind::RedZone,
        ErrorKind::Poison,
        ErrorKind::FreelistCorrupt,
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cover_every_stat_in_order() {
        for (i, (s, name)) in STAT_NAMES.iter().enumerate() {
            assert_eq!(*s as usize, i, "{name}");
            assert!(!name.is_empty());
            assert_eq!(s.name(), *name);
        }
    }

    #[test]
    fn sums_and_live_objects() {
        let a = CpuStats::default();
        let b = CpuStats::default();
        a.add(Stat::AllocFastpath, 10);
        b.inc(Stat::AllocSlowpath);
        b.add(Stat::FreeSlowpath, 4);
        let mut s = StatsSnapshot::default();
        s.add_cpu(&a);
        s.add_cpu(&b);
        assert_eq!(s.live_objects(), 7);
        assert_eq!(s.since(&s).live_objects(), 0);
    }
}
