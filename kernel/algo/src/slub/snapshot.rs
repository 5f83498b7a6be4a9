//! One cache's figures frozen for /sys/kernel/slab and /proc/slabinfo (sysfs.rs formats
//! them): storage is allocated first (`CacheSnapshot::for_cache`), then `Cache::fill_snapshot`
//! reads every counter without allocating, so that a snapshot of all caches (kmalloc's own
//! among them) is not changed by the allocations that hold it.

use super::cache::{Cache, Design};
use super::geometry::DebugFlags;
use super::info::SlabInfo;
use super::placed::PerCpuSlots;
use super::platform::Platform;
use super::slab::Slab;
use super::stats::StatsSnapshot;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::Ordering::Relaxed;

/// One node's lists of one cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeFigures {
    /// Slabs of this node (Linux's n->nr_slabs).
    pub slabs: usize,
    /// Objects those slabs hold, free or not (n->total_objects).
    pub total_objects: usize,
    /// Slabs on the node's partial list (n->nr_partial).
    pub partial: usize,
    /// Objects in use in those partial slabs (count_partial(n, count_inuse), under list_lock).
    pub objects_partial: usize,
    /// CPU slabs on this node: active CPU slabs, plus the per-CPU partial slabs of CPUs
    /// whose partial list starts with a slab of this node (Linux's SO_CPU count).
    pub cpu_slabs: usize,
}

/// One cache's facts and counters at one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheSnapshot {
    pub name: String,
    pub design: Design,
    /// Bytes the user asked for (Linux's s->object_size).
    pub object_size: usize,
    /// Stride between objects (s->size: /proc/slabinfo's objsize, sysfs slab_size).
    pub slab_size: usize,
    pub align: usize,
    pub objs_per_slab: usize,
    pub order: u8,
    pub min_partial: usize,
    /// Free objects each CPU may keep on its partial list (s->cpu_partial).
    pub cpu_partial: usize,
    /// Objects per sheaf (0: no sheaves).
    pub sheaf_capacity: usize,
    /// Per mille, as the `slub.remote_node_defrag_ratio` option gives it.
    pub remote_node_defrag_ratio: u32,
    pub debug: DebugFlags,
    /// The constructor's address, 0 when none.
    pub ctor: usize,
    /// Objects in use: handed out minus taken back, plus objects cached in sheaves (whose
    /// slabs count them as in use), exact (`SlabinfoMode::Counters`).
    pub objects: usize,
    pub nodes: Vec<NodeFigures>,
    /// Per CPU: slabs on its CPU partial list.
    pub cpu_partial_slabs: Vec<usize>,
    /// Counters summed over CPUs, and per CPU.
    pub total: StatsSnapshot,
    pub per_cpu: Vec<StatsSnapshot>,
}

impl CacheSnapshot {
    /// Storage for a snapshot of `c` (its name, one slot per node and per CPU), the facts
    /// filled in and every counter still zero. This allocates; `Cache::fill_snapshot` does not.
    pub fn for_cache<P: Platform>(c: &Cache<P>) -> CacheSnapshot {
        let (cpu_partial, _) = c.cpu_partial();
        CacheSnapshot {
            name: String::from(c.name()),
            design: c.tunables().design,
            object_size: c.object_size(),
            slab_size: c.size(),
            align: c.layout().align,
            objs_per_slab: c.order_objects().objects,
            order: c.order_objects().order,
            min_partial: c.min_partial(),
            cpu_partial,
            sheaf_capacity: c.sheaf_capacity(),
            remote_node_defrag_ratio: c.tunables().remote_node_defrag_ratio,
            debug: c.debug_flags(),
            ctor: c.ctor.map_or(0, |f| f as usize),
            objects: 0,
            nodes: vec![NodeFigures::default(); c.nodes.len()],
            cpu_partial_slabs: vec![0; c.cpus.len()],
            total: StatsSnapshot::default(),
            per_cpu: vec![StatsSnapshot::default(); c.cpus.len()],
        }
    }

    /// The /proc/slabinfo numbers of this snapshot (Linux's get_slabinfo: every slab active).
    pub fn slabinfo(&self) -> SlabInfo {
        let num_slabs = self.nodes.iter().map(|n| n.slabs).sum();
        SlabInfo {
            active_objs: self.objects,
            num_objs: self.nodes.iter().map(|n| n.total_objects).sum(),
            objsize: self.slab_size,
            objperslab: self.objs_per_slab,
            pagesperslab: 1 << self.order,
            active_slabs: num_slabs,
            num_slabs,
            ..SlabInfo::default()
        }
    }
}

impl<P: Platform> Cache<P> {
    /// Reads every counter of this cache into `snap` (made by `CacheSnapshot::for_cache` for
    /// this cache) without allocating: per-node slab counts, each node's partial list walked
    /// under its list_lock, CPU slabs, and the SLUB_STATS counters of every CPU. Other CPUs'
    /// slots are read as they stand: exact when they are quiet (the end of a boot's
    /// benchmarks), otherwise each figure is one some moment of the read had.
    pub fn fill_snapshot(&self, snap: &mut CacheSnapshot) {
        let p = &self.plat;
        for (n, f) in self.nodes.iter().zip(snap.nodes.iter_mut()) {
            f.slabs = n.nr_slabs.load(Relaxed);
            f.total_objects = n.total_objects.load(Relaxed);
            let (partial, inuse) = p.with_lock(&n.list_lock, || {
                let (mut count, mut inuse) = (0usize, 0usize);
                let mut s = n.partial.head();
                while s != 0 {
                    let slab = Slab(s);
                    inuse += slab.state(p).inuse();
                    count += 1;
                    s = slab.next(p);
                }
                (count, inuse)
            });
            f.partial = partial;
            f.objects_partial = inuse;
            f.cpu_slabs = 0;
        }
        snap.total = StatsSnapshot::default();
        for (i, c) in self.cpus.iter().enumerate() {
            let mut s = StatsSnapshot::default();
            c.snapshot_into(&mut s);
            snap.per_cpu[i] = s;
            c.snapshot_into(&mut snap.total);
            let active = c.slab.load(Relaxed);
            if active != 0 {
                if let Some(f) = snap.nodes.get_mut(c.node.load(Relaxed)) {
                    f.cpu_slabs += 1;
                }
            }
            let first = c.partial.load(Relaxed);
            let slabs = if first != 0 {
                c.partial_slabs.load(Relaxed)
            } else {
                0
            };
            snap.cpu_partial_slabs[i] = slabs;
            if slabs != 0 {
                if let Some(f) = snap.nodes.get_mut(Slab(first).node(p).index()) {
                    f.cpu_slabs += slabs;
                }
            }
        }
        let t = &snap.total;
        snap.objects = (t.live_objects() + t.sheaf_cached_objects()).max(0) as usize;
    }

    /// A snapshot of this cache (allocates, then reads): for one cache alone.
    pub fn snapshot(&self) -> CacheSnapshot {
        let mut s = CacheSnapshot::for_cache(self);
        self.fill_snapshot(&mut s);
        s
    }
}
