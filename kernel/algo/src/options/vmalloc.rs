//! Kernel options of the `vmalloc` group. vmalloc: the vmap node design and lazy purging.

use super::{Kind, Spec, Word};

super::declare! {
    VMALLOC = "vmalloc";
    VMALLOC_NODES: Word = Spec {
        key: "vmalloc.nodes",
        kind: Kind::Choice(&["global", "cpu", "numa"]),
        default: "cpu",
        help: "vmap node design behind vmalloc(): global lock, CPU-count shards (Linux 6.9), one per NUMA node",
    };
    VMALLOC_LAZY_MAX_PAGES: u64 = Spec {
        key: "vmalloc.lazy_max_pages",
        kind: Kind::U64 { min: 0, max: 1 << 30 },
        default: "0",
        help: "lazy vfree pages that trigger a purge (0: Linux's fls(CPUs) * 8192; numa splits it per node)",
    };
}
