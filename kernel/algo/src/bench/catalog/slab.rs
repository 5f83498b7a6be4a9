//! Catalog entries of the slab experiments: SLUB against other allocators, node list_lock
//! contention (seed 000), slabinfo readers (001), prefer-local partial slabs (004) and slab
//! memory on a memoryless node (003).

use super::{
    case, sometimes, Baseline, Boot, Boots, Case, Cases, Counterpart, Designs, Experiment,
    Headline, Required, Seed, Twin, TwinRecord, TSC_DET, TSC_ICOUNT,
};

const PAIR: &str = "instructions_per_pair";
const HARNESS: &str = "harness_instructions_per_pair";
const OPS: &str = "ops_per_cpu";
const LOCAL: &str = "local_object_fraction";
const GROWTH_LOCAL: &str = "growth_local_object_fraction";

/// An alloc_peers case, in both of its boots.
const fn peer(name: &'static str) -> Case {
    case(name, TSC_ICOUNT)
}

/// An alloc_peers case that can be missing (the allocator could not claim or map its arena).
const fn peer_maybe(name: &'static str) -> Case {
    sometimes(name, TSC_ICOUNT)
}

const fn twin(boot: Boot, case: &'static str, metric: &'static str) -> TwinRecord {
    TwinRecord { boot, case, metric }
}

const fn facing(
    case: &'static str,
    linux_case: &'static str,
    metric: &'static str,
    boot: Boot,
) -> Counterpart {
    Counterpart {
        case,
        linux_case,
        metric,
        boot,
    }
}

/// kernel/src/bench/alloc_peers.rs: instructions per pair of SLUB/kmalloc against other
/// allocators, per workload (`ALLOCATOR/WORKLOAD`), less the empty-loop harness.
pub const ALLOC_PEERS: Experiment = Experiment {
    name: "alloc_peers",
    cases: &[
        peer("harness/fast64"),
        peer("harness/random"),
        peer("harness/burst256"),
        peer("harness_inline/fast64"),
        peer("harness_inline/random"),
        peer("harness_inline/burst256"),
        peer("numalab/fast64"),
        peer("numalab/random"),
        peer("numalab/burst256"),
        peer("numalab_inline/fast64"),
        peer("numalab_inline/random"),
        peer("numalab_inline/burst256"),
        peer("numalab_irqoff/fast64"),
        peer("numalab_irqoff/random"),
        peer("numalab_irqoff/burst256"),
        peer("numalab_kmem_cache/fast64"),
        peer("numalab_kmem_cache/burst256"),
        peer("numalab_kmem_cache_inline/fast64"),
        peer("numalab_kmem_cache_inline/burst256"),
        peer("numalab_kmem_cache_irqoff/fast64"),
        peer("numalab_kmem_cache_irqoff/burst256"),
        peer("numalab_checks_linux/fast64"),
        peer("numalab_checks_linux/random"),
        peer("numalab_checks_linux/burst256"),
        peer("numalab_kmem_cache_checks_linux/fast64"),
        peer("numalab_kmem_cache_checks_linux/burst256"),
        peer("linked_list_allocator/fast64"),
        peer("linked_list_allocator/random"),
        peer("linked_list_allocator/burst256"),
        peer_maybe("talc/fast64"),
        peer_maybe("talc/random"),
        peer_maybe("talc/burst256"),
        peer("buddy_system_allocator/fast64"),
        peer("buddy_system_allocator/random"),
        peer("buddy_system_allocator/burst256"),
        peer_maybe("slabmalloc/fast64"),
        peer_maybe("slabmalloc/random"),
        peer_maybe("slabmalloc/burst256"),
    ],
    baseline: Baseline::PerWorkload("numalab"),
    boots: TSC_ICOUNT,
    numa_only: false,
    designs: Designs::Boot,
    required: &[Required {
        cases: Cases::Only(&["numalab/fast64", "numalab/random", "numalab/burst256"]),
        metrics: &[PAIR],
        boot: Boot::Icount,
    }],
    seeds: &[],
    headline: Headline::Ratio {
        metric: PAIR,
        case: "numalab/random",
        base: "buddy_system_allocator/random",
        boot: Boot::Icount,
    },
    twin: Some(Twin {
        boot: Boot::Icount,
        required: &[
            twin(Boot::Icount, "kmalloc/fast64", PAIR),
            twin(Boot::Icount, "kmalloc/random", PAIR),
            twin(Boot::Icount, "kmalloc/burst256", PAIR),
            twin(Boot::Icount, "kmem_cache/fast64", PAIR),
            twin(Boot::Icount, "harness/fast64", HARNESS),
            twin(Boot::Icount, "harness/random", HARNESS),
            twin(Boot::Icount, "harness/burst256", HARNESS),
        ],
        split_over_boots: false,
        counterparts: &[
            facing("numalab/fast64", "kmalloc/fast64", PAIR, Boot::Icount),
            facing("numalab/random", "kmalloc/random", PAIR, Boot::Icount),
            facing("numalab/burst256", "kmalloc/burst256", PAIR, Boot::Icount),
            facing(
                "numalab_kmem_cache/fast64",
                "kmem_cache/fast64",
                PAIR,
                Boot::Icount,
            ),
            // The empty-loop harness each kernel subtracts from the rows above (the same
            // loops around empty out-of-line functions): near 1 when the loops match.
            facing("harness/fast64", "harness/fast64", HARNESS, Boot::Icount),
            facing("harness/random", "harness/random", HARNESS, Boot::Icount),
            facing(
                "harness/burst256",
                "harness/burst256",
                HARNESS,
                Boot::Icount,
            ),
        ],
    }),
};

/// kernel/src/bench/slub_list_lock.rs: node list_lock contention under four SLUB tunings
/// (seed 000).
pub const SLUB_LIST_LOCK: Experiment = Experiment {
    name: "slub_list_lock",
    cases: &[
        case("linux_default", TSC_DET),
        case("partial_64", TSC_DET),
        case("order_4", TSC_DET),
        case("cpu_partial_x2", TSC_DET),
    ],
    baseline: Baseline::Case("linux_default"),
    boots: TSC_DET,
    numa_only: false,
    designs: Designs::Partial,
    required: &[
        Required {
            cases: Cases::Every,
            metrics: &[
                OPS,
                "list_lock_acquisitions_per_kop",
                "list_lock_contended_per_kop",
                "list_lock_wait_per_kop",
                "list_lock_wait_share",
            ],
            boot: Boot::Tsc,
        },
        Required {
            cases: Cases::Every,
            metrics: &[
                "list_lock_acquisitions_per_kop",
                "list_lock_contended_per_kop",
            ],
            boot: Boot::Det,
        },
    ],
    seeds: &[
        Seed {
            seed: "000",
            metric: OPS,
            case: "cpu_partial_x2",
            boot: Boot::Tsc,
            base: "linux_default",
            base_boot: Boot::Tsc,
            thread_figure: "+78.1% will-it-scale mmap1 at 100% of 112 CPUs",
            thread_ratio: 1.781,
        },
        Seed {
            seed: "000",
            metric: "list_lock_acquisitions_per_kop",
            case: "cpu_partial_x2",
            boot: Boot::Det,
            base: "linux_default",
            base_boot: Boot::Det,
            thread_figure: "spin slow path 43.65% -> 9.24% of cycles",
            thread_ratio: 9.24 / 43.65,
        },
    ],
    // Linux 6.1's slab order is read-only at run time: order_4 and cpu_partial_x2 run in a
    // second tsc boot whose command line sets it (linux_twin.rs, ORDER4_WORDS).
    headline: Headline::Ratio {
        metric: "list_lock_acquisitions_per_kop",
        case: "cpu_partial_x2",
        base: "linux_default",
        boot: Boot::Det,
    },
    twin: Some(Twin {
        boot: Boot::Tsc,
        required: &[
            twin(Boot::Tsc, "linux/default", OPS),
            twin(Boot::Tsc, "linux/partial_64", OPS),
            twin(Boot::Tsc, "linux/order_4", OPS),
            twin(Boot::Tsc, "linux/cpu_partial_x2", OPS),
        ],
        split_over_boots: true,
        // Throughput per tuning, tsc clock: a trend under TCG (docs/linux-twin.md).
        counterparts: &[
            facing("linux_default", "linux/default", OPS, Boot::Tsc),
            facing("partial_64", "linux/partial_64", OPS, Boot::Tsc),
            facing("order_4", "linux/order_4", OPS, Boot::Tsc),
            facing("cpu_partial_x2", "linux/cpu_partial_x2", OPS, Boot::Tsc),
        ],
    }),
};

/// kernel/src/bench/slabinfo_reader.rs: /proc/slabinfo readers against allocating workers,
/// walking the partial lists or reading counters (seed 001).
pub const SLABINFO_READER: Experiment = Experiment {
    name: "slabinfo_reader",
    cases: &[case("scan", TSC_DET), case("counters", TSC_DET)],
    baseline: Baseline::Case("scan"),
    boots: TSC_DET,
    numa_only: false,
    designs: Designs::Partial,
    required: &[
        Required {
            cases: Cases::Every,
            metrics: &[
                "max_list_lock_hold",
                "mean_list_lock_hold",
                "active_objs_error",
                "worker_max_alloc_latency",
                "worker_list_lock_wait_per_kop",
                "partial_slabs_walked_per_read",
            ],
            boot: Boot::Tsc,
        },
        Required {
            cases: Cases::Every,
            metrics: &["active_objs_error"],
            boot: Boot::Det,
        },
    ],
    seeds: &[Seed {
        seed: "001",
        metric: "max_list_lock_hold",
        case: "counters",
        boot: Boot::Tsc,
        base: "scan",
        base_boot: Boot::Tsc,
        thread_figure: "scan held list_lock ~100 ms, irqs off; counters: no walk",
        thread_ratio: 0.0,
    }],
    headline: Headline::Ratio {
        metric: "max_list_lock_hold",
        case: "counters",
        base: "scan",
        boot: Boot::Tsc,
    },
    twin: None,
};

/// kernel/src/bench/numa_locality.rs: prefer-local partial slabs against Linux's default
/// (seed 004).
pub const NUMA_LOCALITY: Experiment = Experiment {
    name: "numa_locality",
    cases: &[case("prefer_local", TSC_DET), case("default", TSC_DET)],
    baseline: Baseline::Case("default"),
    boots: TSC_DET,
    numa_only: true,
    designs: Designs::Partial,
    required: &[
        Required {
            cases: Cases::Every,
            metrics: &[
                LOCAL,
                GROWTH_LOCAL,
                "slab_kib",
                "allocations_per_sec",
                "alloc_prefer_local",
                "alloc_remote_partial",
            ],
            boot: Boot::Tsc,
        },
        Required {
            cases: Cases::Every,
            metrics: &[LOCAL, "slab_kib"],
            boot: Boot::Det,
        },
    ],
    seeds: &[
        Seed {
            seed: "004",
            metric: "allocations_per_sec",
            case: "prefer_local",
            boot: Boot::Tsc,
            base: "default",
            base_boot: Boot::Tsc,
            thread_figure: "hackbench -32.7% (1 group, 16-CPU POWER guest)",
            thread_ratio: 1.3700 / 2.0353,
        },
        Seed {
            seed: "004",
            metric: LOCAL,
            case: "prefer_local",
            boot: Boot::Det,
            base: "default",
            base_boot: Boot::Det,
            thread_figure: "more local objects (the series' aim; no figure)",
            thread_ratio: f64::INFINITY,
        },
    ],
    // Linux 6.1 has no prefer_local: its one case faces numalab's default (what Linux does)
    // and prefer_local (the series' change).
    headline: Headline::Ratio {
        metric: LOCAL,
        case: "prefer_local",
        base: "default",
        boot: Boot::Det,
    },
    twin: Some(Twin {
        boot: Boot::Tsc,
        required: &[
            twin(Boot::Tsc, "linux", LOCAL),
            twin(Boot::Tsc, "linux", GROWTH_LOCAL),
            twin(Boot::Tsc, "linux", "slab_kib"),
        ],
        split_over_boots: false,
        counterparts: &[
            facing("default", "linux", LOCAL, Boot::Tsc),
            facing("prefer_local", "linux", LOCAL, Boot::Tsc),
            facing("default", "linux", GROWTH_LOCAL, Boot::Tsc),
            facing("prefer_local", "linux", GROWTH_LOCAL, Boot::Tsc),
            facing("default", "linux", "slab_kib", Boot::Tsc),
            facing("prefer_local", "linux", "slab_kib", Boot::Tsc),
        ],
    }),
};

/// kernel/src/bench/memoryless_node.rs: slab memory on a memoryless node with and without
/// the fix, against a one-node machine (seed 003). `fixed`/`unfixed` print on a machine with
/// a memoryless node that has CPUs, `single_node` on the one-node `uma` comparison.
pub const MEMORYLESS_NODE: Experiment = Experiment {
    name: "memoryless_node",
    cases: &[
        case("fixed", TSC_DET),
        case("unfixed", TSC_DET),
        case("single_node", Boots::UMA),
        case("sheaves_fixed", TSC_DET),
        case("sheaves_unfixed", TSC_DET),
        case("sheaves_single_node", Boots::UMA),
    ],
    baseline: Baseline::Case("single_node"),
    boots: TSC_DET.and(Boots::UMA),
    numa_only: false,
    // The thread is of the partial era; the sheaves cases ask whether it comes back in 7.
    designs: Designs::Both,
    required: &[
        Required {
            cases: Cases::Every,
            metrics: &["slab_kib", "alloc_node_mismatch"],
            boot: Boot::Tsc,
        },
        Required {
            cases: Cases::Every,
            metrics: &["slab_kib"],
            boot: Boot::Det,
        },
        Required {
            cases: Cases::Every,
            metrics: &["slab_kib"],
            boot: Boot::Uma,
        },
    ],
    seeds: &[
        Seed {
            seed: "003",
            metric: "slab_kib",
            case: "unfixed",
            boot: Boot::Tsc,
            base: "single_node",
            base_boot: Boot::Uma,
            thread_figure: "442560 kB vs 195904 kB single-node (2.26x)",
            thread_ratio: 442_560.0 / 195_904.0,
        },
        Seed {
            seed: "003",
            metric: "slab_kib",
            case: "sheaves_unfixed",
            boot: Boot::Tsc,
            base: "sheaves_single_node",
            base_boot: Boot::Uma,
            thread_figure: "442560 kB vs 195904 kB single-node (2.26x), replayed under sheaves",
            thread_ratio: 442_560.0 / 195_904.0,
        },
    ],
    // Linux 6.1 has the memoryless-node fix: its one case faces numalab's fixed and unfixed.
    headline: Headline::Ratio {
        metric: "slab_kib",
        case: "unfixed",
        base: "fixed",
        boot: Boot::Tsc,
    },
    twin: Some(Twin {
        boot: Boot::Tsc,
        required: &[
            twin(Boot::Tsc, "linux", "slab_kib"),
            twin(Boot::Uma, "linux_single_node", "slab_kib"),
        ],
        split_over_boots: false,
        counterparts: &[
            facing("fixed", "linux", "slab_kib", Boot::Tsc),
            facing("unfixed", "linux", "slab_kib", Boot::Tsc),
            facing("single_node", "linux_single_node", "slab_kib", Boot::Uma),
        ],
    }),
};
