//! Kernel options of the `slub` group. SLUB's boot tunables, Linux's slub_* parameters and
//! numalab's seed fixes.

use super::{AutoOr, CacheNames, Choice, Kind, ParsedValue, SlubDebug, Spec};
use crate::slub::{Checks, Design};

super::choice! {
    /// `slub.sheaves_memoryless`: whether memoryless nodes get barns.
    pub enum MemorylessSheaves {
        /// A barn on every node (the fix series, Linux 7.1).
        #[default]
        Barn = "barn",
        /// No barn on memoryless nodes (Linux 7.0 as shipped).
        None = "none",
    }
}

super::choice! {
    /// `slub.sheaves_any_node`: how a sheaf refill takes other nodes' list_locks.
    pub enum AnyNodeLock {
        /// Trylock (Linux commit 40fd0acc45d0).
        #[default]
        Trylock = "trylock",
        /// Spin (before it).
        Spin = "spin",
    }
}

super::choice! {
    /// `slub.slabinfo`: how slabinfo counts active objects.
    pub enum Slabinfo {
        /// Exact counters, no list_lock.
        #[default]
        Counters = "counters",
        /// Linux's count_partial under list_lock.
        Scan = "scan",
    }
}

super::declare! {
    SLUB = "slub";
    SLUB_MAX_ORDER: u64 = Spec {
        key: "slub.max_order",
        kind: Kind::U64 { min: 0, max: 10 },
        default: "3",
        help: "largest slab order calculate_order may choose (Linux slub_max_order)",
    };
    SLUB_MIN_OBJECTS: u64 = Spec {
        key: "slub.min_objects",
        kind: Kind::U64 { min: 0, max: 32767 },
        default: "0",
        help: "minimum objects per slab; 0: 4 * (fls(nr_cpus) + 1) (Linux slub_min_objects)",
    };
    SLUB_MIN_PARTIAL: AutoOr<u64> = Spec {
        key: "slub.min_partial",
        kind: Kind::KeywordOr {
            keyword: "auto",
            min: 0,
            max: 1 << 20,
        },
        default: "auto",
        help: "partial slabs a node keeps before freeing empty ones; auto: ilog2(size)/2 clamped to [5, max_partial]",
    };
    SLUB_MAX_PARTIAL: u64 = Spec {
        key: "slub.max_partial",
        kind: Kind::U64 { min: 1, max: 4096 },
        default: "10",
        help: "upper clamp of the automatic min_partial (Linux MAX_PARTIAL)",
    };
    SLUB_CPU_PARTIAL: AutoOr<u64> = Spec {
        key: "slub.cpu_partial",
        kind: Kind::KeywordOr {
            keyword: "auto",
            min: 0,
            max: 1 << 20,
        },
        default: "auto",
        help: "free objects kept on each CPU's partial list; auto: Linux's table by size; 0: no CPU partials",
    };
    SLUB_MEMORYLESS_FIX: bool = Spec {
        key: "slub.memoryless_fix",
        kind: Kind::Bool,
        default: "1",
        help: "treat a request for a memoryless node as its nearest memory node (seed 003)",
    };
    SLUB_PREFER_LOCAL: bool = Spec {
        key: "slub.prefer_local",
        kind: Kind::Bool,
        default: "0",
        help: "take a new local slab instead of a remote partial while the local node has memory (seed 004)",
    };
    SLUB_REMOTE_NODE_DEFRAG_RATIO: u64 = Spec {
        key: "slub.remote_node_defrag_ratio",
        kind: Kind::U64 { min: 0, max: 1000 },
        default: "1000",
        help: "per mille of slow paths that may take partial slabs from remote nodes",
    };
    SLUB_DEBUG: SlubDebug = Spec {
        key: "slub.debug",
        kind: SlubDebug::KIND,
        default: "",
        help: "debug flags F (sanity) Z (red zone) P (poison) U (user), 1 = all, optionally ,CACHE,... to limit them",
    };
    SLUB_DESIGN: Design = Spec {
        key: "slub.design",
        kind: Design::KIND,
        default: "sheaves",
        help: "sheaves: Linux 7's per-CPU sheaves and per-node barns; partial: the per-CPU slab and partial slabs of Linux up to 6.17; hybrid: Linux 6.18/6.19, sheaves over the partial design for the caches of slub.sheaves_caches",
    };
    SLUB_SHEAVES_CACHES: CacheNames = Spec {
        key: "slub.sheaves_caches",
        kind: CacheNames::KIND,
        default: "maple_node,vm_area_struct",
        help: "caches that opt in to sheaves under slub.design=hybrid (Linux 6.18's users: maple_node, vm_area_struct), or none",
    };
    SLUB_CHECKS: Checks = Spec {
        key: "slub.checks",
        kind: Checks::KIND,
        default: "full",
        help: "checks of the sheaves free fast path: full (every invalid free reported, never cached) or linux (Linux 7 with SLAB_FREELIST_HARDENED: slab and cache only; docs/slub.md)",
    };
    SLUB_SHEAF_CAPACITY: AutoOr<u64> = Spec {
        key: "slub.sheaf_capacity",
        kind: Kind::KeywordOr {
            keyword: "auto",
            min: 1,
            max: 1020,
        },
        default: "auto",
        help: "objects per sheaf, rounded up to fill a kmalloc bucket (hybrid: exactly); auto: Linux's calculate_sheaf_capacity (60 for kmalloc-64; hybrid: 32, 6.18's maple_node and vm_area_struct)",
    };
    SLUB_SHEAVES_MEMORYLESS: MemorylessSheaves = Spec {
        key: "slub.sheaves_memoryless",
        kind: MemorylessSheaves::KIND,
        default: "barn",
        help: "barns on memoryless nodes: barn (the fix series, Linux 7.1) or none (7.0 as shipped: their CPUs fall to the slab path)",
    };
    SLUB_SHEAVES_ANY_NODE: AnyNodeLock = Spec {
        key: "slub.sheaves_any_node",
        kind: AnyNodeLock::KIND,
        default: "trylock",
        help: "how a refill takes other nodes' list_locks: trylock (Linux commit 40fd0acc45d0) or spin (before it)",
    };
    SLUB_SLABINFO: Slabinfo = Spec {
        key: "slub.slabinfo",
        kind: Slabinfo::KIND,
        default: "counters",
        help: "how slabinfo counts active objects: counters (exact, no list_lock) or scan (Linux's count_partial under list_lock)",
    };
}
