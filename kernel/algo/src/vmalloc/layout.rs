//! Which vmap node an area, a lazy free or a pool lookup goes to, for the three designs.
//!
//! Words: a *vmap node* ([`VnId`]) is a shard of vmalloc's bookkeeping (lock, busy tree, lazy
//! list, pools); a *NUMA node* ([`NodeId`]) is a memory/CPU locality domain from ACPI. Only in
//! the `numa` policy is there one vmap node per NUMA node (VnId i == NodeId i).

use crate::topology::{CpuId, NodeId};

/// Index of a vmap node (not a NUMA node; see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VnId(pub u16);

impl VnId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

crate::options::choice! {
    /// The three designs of seed 002, chosen with `vmalloc.nodes=`.
    pub enum Policy {
        /// One vmap node whose busy tree and lazy list sit under the global free-space lock;
        /// no pools (vmalloc before the 6.9 series).
        Global = "global",
        /// Linux 6.9: clamp(possible CPUs, 1, 128) vmap nodes; an area's busy/lazy node is
        /// picked by its address in zones of 16 pages, pools by the allocating CPU's id.
        #[default]
        Cpu = "cpu",
        /// Chinner's counter-proposal: one vmap node per NUMA node; busy, lazy and pools all
        /// on the NUMA node the area's pages come from; purges per node.
        Numa = "numa",
    }
}

/// Linux's vmap zone: 16 pages.
pub const ZONE_BYTES: u64 = 16 * super::PAGE_SIZE;
/// Linux caps the CPU-count design at 128 vmap nodes.
pub const MAX_CPU_NODES: usize = 128;

/// The node layout of one policy on one machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub policy: Policy,
    pub nr_nodes: usize,
    /// Lazy pages that trigger a purge: of all nodes together (global, cpu) or of one node
    /// (numa).
    pub lazy_max_pages: u64,
}

/// Linux's lazy_max_pages(): 32 MiB of pages times fls(online CPUs).
pub fn linux_lazy_max_pages(nr_cpus: usize) -> u64 {
    let fls = usize::BITS - nr_cpus.max(1).leading_zeros();
    fls as u64 * (32 << 20) / super::PAGE_SIZE
}

impl Layout {
    /// `lazy_max_pages` 0 means Linux's formula for `nr_cpus`; in `numa` it is split evenly
    /// between the NUMA nodes (each node purges its own list).
    pub fn new(
        policy: Policy,
        nr_cpus: usize,
        nr_numa_nodes: usize,
        lazy_max_pages: u64,
    ) -> Layout {
        let nr_nodes = match policy {
            Policy::Global => 1,
            Policy::Cpu => nr_cpus.clamp(1, MAX_CPU_NODES),
            Policy::Numa => nr_numa_nodes.max(1),
        };
        let total = if lazy_max_pages == 0 {
            linux_lazy_max_pages(nr_cpus)
        } else {
            lazy_max_pages
        };
        let lazy_max_pages = match policy {
            Policy::Numa => (total / nr_nodes as u64).max(1),
            _ => total,
        };
        Layout {
            policy,
            nr_nodes,
            lazy_max_pages,
        }
    }

    /// Lazy pages past which a freeing CPU waits for a purge in progress instead of leaving
    /// its area for the next one: twice `lazy_max_pages` (ops::purge says why).
    pub fn lazy_wait_pages(&self) -> u64 {
        self.lazy_max_pages.saturating_mul(2)
    }

    /// Whether allocations try the vmap nodes' pools first.
    pub fn pools_enabled(&self) -> bool {
        self.policy != Policy::Global
    }

    /// The vmap node whose busy tree (and later lazy list) holds an area at `addr` whose pages
    /// come from NUMA node `numa`.
    #[inline]
    pub fn busy_node(&self, addr: u64, numa: NodeId) -> VnId {
        match self.policy {
            Policy::Global => VnId(0),
            Policy::Cpu => VnId(((addr / ZONE_BYTES) % self.nr_nodes as u64) as u16),
            Policy::Numa => VnId((numa.index() % self.nr_nodes) as u16),
        }
    }

    /// The vmap node whose pools an allocation on `cpu` for NUMA node `numa` tries first.
    #[inline]
    pub fn pool_node(&self, cpu: CpuId, numa: NodeId) -> VnId {
        match self.policy {
            Policy::Global => VnId(0),
            Policy::Cpu => VnId((cpu.index() % self.nr_nodes) as u16),
            Policy::Numa => VnId((numa.index() % self.nr_nodes) as u16),
        }
    }

    /// The i-th vmap node to search for the live area at `addr` on vfree: the node the
    /// address maps to (global, cpu: the only one), else the caller's NUMA node first, then the
    /// others in order (numa: an area may be freed on another node than it was allocated).
    #[inline]
    pub fn lookup_node(&self, addr: u64, hint_numa: NodeId, i: usize) -> VnId {
        let first = self.busy_node(addr, hint_numa).index();
        VnId(((first + i) % self.nr_nodes) as u16)
    }

    /// How many nodes `lookup_node` may have to try.
    pub fn lookup_len(&self) -> usize {
        match self.policy {
            Policy::Numa => self.nr_nodes,
            _ => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_counts_per_policy() {
        assert_eq!(Layout::new(Policy::Global, 8, 4, 0).nr_nodes, 1);
        assert_eq!(Layout::new(Policy::Cpu, 8, 4, 0).nr_nodes, 8);
        assert_eq!(Layout::new(Policy::Cpu, 300, 4, 0).nr_nodes, 128);
        assert_eq!(Layout::new(Policy::Cpu, 0, 4, 0).nr_nodes, 1);
        assert_eq!(Layout::new(Policy::Numa, 8, 4, 0).nr_nodes, 4);
        assert_eq!(linux_lazy_max_pages(8), 4 * 8192);
        assert_eq!(Layout::new(Policy::Numa, 8, 4, 0).lazy_max_pages, 8192);
        assert_eq!(Policy::from_name("cpu"), Some(Policy::Cpu));
        assert_eq!(Policy::from_name("node"), None);
    }

    #[test]
    fn cpu_policy_zones_of_16_pages() {
        let l = Layout::new(Policy::Cpu, 4, 1, 0);
        let base = 0xffff_c000_0000_0000u64;
        assert_eq!(l.busy_node(base, NodeId(0)), VnId(0));
        assert_eq!(l.busy_node(base + 15 * 4096, NodeId(0)), VnId(0));
        assert_eq!(l.busy_node(base + 16 * 4096, NodeId(0)), VnId(1));
        assert_eq!(l.busy_node(base + 64 * 4096, NodeId(0)), VnId(0));
        assert_eq!(l.pool_node(CpuId(6), NodeId(0)), VnId(2));
        assert_eq!(l.lookup_len(), 1);
        let n = Layout::new(Policy::Numa, 8, 4, 0);
        assert_eq!(n.busy_node(base, NodeId(3)), VnId(3));
        assert_eq!(n.lookup_node(base, NodeId(3), 1), VnId(0));
    }
}
