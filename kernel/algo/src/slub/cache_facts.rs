//! A cache's read-only facts (name, geometry, tunables), its counters and node figures,
//! misuse reports, and the bulk entry points; the cache itself and its fast paths are in
//! cache.rs.

use super::cache::{Cache, Tunables};
use super::geometry::{DebugFlags, ObjLayout, OrderObjects, PAGE_SIZE};
use super::placed::PerCpuSlots;
use super::platform::{Platform, Report};
use super::stats::{ErrorKind, Stat, StatsSnapshot};
use crate::topology::NodeId;
use core::sync::atomic::Ordering::Relaxed;

impl<P: Platform> Cache<P> {
    /// The address that names this cache in slab descriptors.
    #[inline]
    pub fn id(&self) -> usize {
        self as *const Self as usize
    }

    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn platform(&self) -> &P {
        &self.plat
    }
    /// Bytes the user asked for per object.
    pub fn object_size(&self) -> usize {
        self.layout.object_size
    }
    /// Stride between objects (object plus debug words, aligned).
    pub fn size(&self) -> usize {
        self.layout.size
    }
    pub fn layout(&self) -> ObjLayout {
        self.layout
    }
    /// The preferred slab order and objects per slab.
    pub fn order_objects(&self) -> OrderObjects {
        self.oo
    }
    /// The fallback (minimum) slab order.
    pub fn min_order_objects(&self) -> OrderObjects {
        self.min
    }
    pub fn min_partial(&self) -> usize {
        self.min_partial
    }
    pub fn cpu_partial(&self) -> (usize, usize) {
        (self.cpu_partial_objects, self.cpu_partial_slabs)
    }
    pub fn tunables(&self) -> Tunables {
        self.tunables
    }
    pub fn debug_flags(&self) -> DebugFlags {
        self.debug
    }
    pub(crate) fn has_cpu_partial(&self) -> bool {
        self.cpu_partial_slabs != 0
    }

    /// The node whose lists serve a request for `node`.
    #[inline]
    pub fn effective_node(&self, node: NodeId) -> NodeId {
        self.node_map.get(node.index()).copied().unwrap_or(node)
    }

    /// Allocates up to `out.len()` objects; returns how many. With sheaves, Linux 7.3's
    /// kmem_cache_alloc_bulk_noprof (sheaves_bulk.rs); otherwise the CPU slab's freelist and
    /// slow path with interrupts off once (6.x's __kmem_cache_alloc_bulk).
    pub fn alloc_bulk(&self, out: &mut [usize]) -> usize {
        if self.sheaf_capacity != 0 {
            return self.sheaf_alloc_bulk(out);
        }
        let irq = self.plat.irq_save();
        let c = self.cpu_slab();
        let want = out.len();
        let mut slots = out.iter_mut();
        let n = self.cpu_slab_take(c, want, &mut |obj| {
            if let Some(slot) = slots.next() {
                *slot = obj;
            }
        });
        c.stats.add(Stat::AllocBulk, n as u64);
        self.plat.irq_restore(irq);
        n
    }

    /// Frees every object in `objs`: with sheaves, Linux 7.3's kmem_cache_free_bulk
    /// (free_to_pcs_bulk, sheaves_bulk.rs); otherwise one `free` each.
    pub fn free_bulk(&self, objs: &[usize]) {
        if self.sheaf_capacity != 0 {
            return self.sheaf_free_bulk(objs);
        }
        for &obj in objs {
            self.free(obj);
        }
        let irq = self.plat.irq_save();
        self.cpu_slab().stats.add(Stat::FreeBulk, objs.len() as u64);
        self.plat.irq_restore(irq);
    }

    /// Counts a misuse and reports it (no lock may be held).
    pub(crate) fn report_error(&self, addr: usize, kind: ErrorKind, track: Option<(u16, u16)>) {
        self.errors[kind as usize].fetch_add(1, Relaxed);
        self.plat.report(&Report {
            cache: &self.name,
            addr,
            kind,
            track,
        });
    }

    /// How many misuses of `kind` were detected.
    pub fn error_count(&self, kind: ErrorKind) -> u64 {
        self.errors[kind as usize].load(Relaxed)
    }

    /// Counters summed over CPUs.
    pub fn stats(&self) -> StatsSnapshot {
        let mut s = StatsSnapshot::default();
        for c in self.cpus.iter() {
            c.snapshot_into(&mut s);
        }
        s
    }

    /// One CPU's counters.
    pub fn cpu_stats(&self, cpu: crate::topology::CpuId) -> StatsSnapshot {
        let mut s = StatsSnapshot::default();
        if let Some(c) = self.cpus.try_get(cpu.index()) {
            c.snapshot_into(&mut s);
        }
        s
    }

    /// The address of CPU `cpu`'s slab slot (where its memory is: the placement checks).
    pub fn cpu_slot_addr(&self, cpu: crate::topology::CpuId) -> Option<usize> {
        self.cpus
            .try_get(cpu.index())
            .map(|c| c as *const super::cache::CpuSlab as usize)
    }

    /// Slabs held, per node.
    pub fn nr_slabs(&self, node: NodeId) -> usize {
        self.nodes
            .get(node.index())
            .map_or(0, |n| n.nr_slabs.load(Relaxed))
    }

    /// Partial slabs on a node's list (a hint unless the cache is quiet).
    pub fn nr_partial(&self, node: NodeId) -> usize {
        self.nodes.get(node.index()).map_or(0, |n| n.nr_partial())
    }

    /// Bytes of memory held in slab pages, all nodes.
    pub fn slab_bytes(&self) -> usize {
        self.nodes
            .iter()
            .map(|n| n.nr_pages.load(Relaxed) * (PAGE_SIZE as usize))
            .sum()
    }

    /// Pages held in slabs on `node`.
    pub fn slab_pages_on(&self, node: NodeId) -> usize {
        self.nodes
            .get(node.index())
            .map_or(0, |n| n.nr_pages.load(Relaxed))
    }

    /// Whether `destroy` succeeded on this cache.
    pub fn is_dead(&self) -> bool {
        self.dead.load(Relaxed)
    }

    /// The node list lock of `node`, for its contention counters.
    pub fn list_lock(&self, node: NodeId) -> Option<&P::Lock> {
        self.nodes.get(node.index()).map(|n| &n.list_lock)
    }
}
