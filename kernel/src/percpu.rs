//! Per-CPU identity: which CPU is running, and its node.
//!
//! Until SMP bring-up installs per-CPU areas behind the GS base, only the boot CPU runs and
//! these return its identity.

use crate::topology::{self, CpuId, NodeId};

/// The calling CPU's logical id.
#[inline]
pub fn cpu_id() -> CpuId {
    CpuId(0)
}

/// The calling CPU's node.
#[inline]
pub fn node_id() -> NodeId {
    topology::get().node_of_cpu(cpu_id())
}

/// The nearest node with memory to the calling CPU (Linux's numa_mem_id()).
#[inline]
pub fn mem_node_id() -> NodeId {
    topology::get().mem_node(node_id())
}

/// How many CPUs are online.
pub fn nr_cpus_online() -> usize {
    1
}
