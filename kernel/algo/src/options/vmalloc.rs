//! Kernel options of the `vmalloc` group. vmalloc: the vmap node design and lazy purging.

use super::{Choice, Kind, Spec};
use crate::vmalloc::Policy;

super::declare! {
    VMALLOC = "vmalloc";
    VMALLOC_NODES: Policy = Spec {
        key: "vmalloc.nodes",
        kind: Policy::KIND,
        default: "cpu",
        help: "vmap node design behind vmalloc(): global lock, CPU-count shards (Linux 6.9), one per NUMA node",
    };
    VMALLOC_LAZY_MAX_PAGES: u64 = Spec {
        key: "vmalloc.lazy_max_pages",
        kind: Kind::U64 { min: 0, max: 1 << 30 },
        default: "0",
        help: "lazy vfree pages that trigger a purge (0: Linux's fls(CPUs) * 8192; numa splits it per node)",
    };
    VMALLOC_PAGE_ORDER: u64 = Spec {
        key: "vmalloc.page_order",
        kind: Kind::U64 { min: 0, max: 10 },
        default: "0",
        help: "backing pages from the NUMA node's buddy in blocks of 2^N pages while an area has that many left (Linux 6.19's large-order vmalloc), vfree frees each block in one call; 0: single pages",
    };
    VMALLOC_NR_VMALLOC: bool = Spec {
        key: "vmalloc.nr_vmalloc",
        kind: Kind::Bool,
        default: "0",
        help: "keep Linux 7.1's per-node nr_vmalloc count of vmalloc's pages (one update per buddy block on the block's node, and on vfree)",
    };
}
