//! A cache's knobs (`Tunables`: Linux's per-cache sysfs files and slub_* boot parameters)
//! and the SLUB designs one kernel holds (`Design`, the `slub.design` option's values).

use super::geometry::DebugFlags;

/// Per-cache knobs (Linux's per-cache sysfs files and slub_* boot parameters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tunables {
    /// Empty slabs a node keeps before giving them back; None: Linux's ilog2(size)/2
    /// clamped to [5, max_partial].
    pub min_partial: Option<usize>,
    /// Upper clamp of the automatic min_partial (Linux's MAX_PARTIAL, 10).
    pub max_partial: usize,
    pub max_order: u8,
    /// Minimum objects per slab; 0: 4 * (fls(nr_cpus) + 1).
    pub min_objects: usize,
    /// Free objects kept on each CPU's partial list; None: Linux's table by size; 0: off.
    pub cpu_partial: Option<usize>,
    /// Take a new local slab rather than a remote partial while the local node has memory.
    pub prefer_local: bool,
    /// Treat a request for a memoryless node as one for its nearest memory node.
    pub memoryless_fix: bool,
    /// 0..=1000: how often (per mille) a CPU may take partial slabs from remote nodes
    /// (Linux's remote_node_defrag_ratio, default 1000 ~ 98%; 1024: always).
    pub remote_node_defrag_ratio: u32,
    pub debug: DebugFlags,
    /// Which SLUB: Linux 7's sheaves, the per-CPU partial slabs of Linux up to 6.17, or
    /// 6.18/6.19's hybrid (sheaves for the caches that opt in, over the partial design).
    pub design: Design,
    /// Under `Design::Hybrid`: this cache opts in to sheaves (Linux 6.18's
    /// `kmem_cache_args.sheaf_capacity`); ignored by the other designs.
    pub sheaves_opt_in: bool,
    /// Objects per sheaf; None: Linux's calculate_sheaf_capacity.
    pub sheaf_capacity: Option<usize>,
    /// Barns on memoryless nodes: none (7.0 as shipped) or one per node with CPUs (the fix
    /// series "slab: support memoryless nodes with sheaves").
    pub memoryless_barns: bool,
    /// Refills that look at other nodes' partial slabs take their list_lock with a trylock
    /// (Linux commit 40fd0acc45d0) rather than spinning.
    pub any_node_trylock: bool,
}

crate::options::choice! {
    /// The SLUB designs one kernel holds (`slub.design`).
    pub enum Design {
        /// Per-CPU main and spare sheaves under a local trylock, per-node barns (Linux 7.0).
        #[default]
        Sheaves = "sheaves",
        /// Per-CPU slab, tid + cmpxchg16b fast path, per-CPU partial slabs (Linux up to 6.17).
        Partial = "partial",
        /// Linux 6.18 and 6.19: caches that opt in (`Tunables::sheaves_opt_in`) put sheaves and
        /// barns on top of the partial design, which refills and takes back their sheaves; all
        /// other caches run the partial design (hybrid.rs).
        Hybrid = "hybrid",
    }
}

impl Default for Tunables {
    fn default() -> Self {
        Tunables {
            min_partial: None,
            max_partial: super::geometry::MAX_PARTIAL,
            max_order: 3,
            min_objects: 0,
            cpu_partial: None,
            prefer_local: false,
            memoryless_fix: true,
            remote_node_defrag_ratio: 1000,
            debug: DebugFlags::default(),
            design: Design::Partial,
            sheaves_opt_in: false,
            sheaf_capacity: None,
            memoryless_barns: true,
            any_node_trylock: true,
        }
    }
}
