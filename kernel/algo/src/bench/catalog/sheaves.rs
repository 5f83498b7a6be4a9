//! Catalog entries of the sheaves experiments: the two SLUB designs side by side on
//! alloc_peers' and slub_list_lock's workloads (Linux 7.0's "slab: replace cpu (partial)
//! slabs with sheaves"), CPUs of memoryless nodes under sheaves as 7.0 shipped and as
//! the fix series has it, and 6.18/6.19's opt-in sheaves on the maple tree's pattern.

use super::{
    case, Baseline, Boot, Boots, Case, Cases, Counterpart, Designs, Experiment, Headline, Required,
    Seed, Twin, TwinRecord, TSC_DET,
};

const PAIR: &str = "instructions_per_pair";
const OPS: &str = "ops_per_cpu";

/// Every boot but uma.
const ALL: Boots = TSC_DET.and(Boots::ICOUNT);

/// memoryless_sheaves' counted metrics (tsc and det).
const MEMORYLESS_COUNTS: &[&str] = &[
    "sheaf_fraction_memoryless_cpus",
    "sheaf_fraction_memory_cpus",
    "slab_path_per_kop",
    "list_lock_acquisitions_per_kop",
];

const fn icount(name: &'static str) -> Case {
    case(name, Boots::ICOUNT)
}

/// A record the Linux twin prints in its icount boot.
const fn twin_icount(case: &'static str, metric: &'static str) -> TwinRecord {
    TwinRecord {
        boot: Boot::Icount,
        case,
        metric,
    }
}

/// numalab's `case` facing the Linux twin's `linux_case` in the icount boot.
const fn facing(case: &'static str, linux_case: &'static str, metric: &'static str) -> Counterpart {
    Counterpart {
        case,
        linux_case,
        metric,
        boot: Boot::Icount,
    }
}

/// kernel/src/bench/sheaves_vs_partial.rs: alloc_peers' three workloads on kmalloc-like
/// private caches of each design (icount), and slub_list_lock's workload at 25/50/100% of
/// the CPUs (tsc, det) with list_lock and barn lock acquisitions, slabs allocated and
/// freed, slab memory left after the workload and the share of frees that bypassed the
/// sheaves.
pub const SHEAVES_VS_PARTIAL: Experiment = Experiment {
    name: "sheaves_vs_partial",
    cases: &[
        icount("partial/fast64"),
        icount("partial/random"),
        icount("partial/burst256"),
        icount("sheaves/fast64"),
        icount("sheaves/random"),
        icount("sheaves/burst256"),
        case("partial", TSC_DET),
        case("sheaves", TSC_DET),
    ],
    baseline: Baseline::Case("partial"),
    boots: TSC_DET.and(Boots::ICOUNT),
    numa_only: false,
    designs: Designs::Both,
    required: &[
        Required {
            cases: Cases::Only(&[
                "partial/fast64",
                "partial/random",
                "partial/burst256",
                "sheaves/fast64",
                "sheaves/random",
                "sheaves/burst256",
            ]),
            metrics: &[PAIR, "slab_path_per_kpair"],
            boot: Boot::Icount,
        },
        Required {
            cases: Cases::Only(&["partial", "sheaves"]),
            metrics: &[
                "list_lock_acquisitions_per_kop",
                "barn_lock_acquisitions_per_kop",
                "slabs_allocated_per_kop",
                "slabs_freed_per_kop",
                "slab_kib_after",
                "free_bypass_fraction",
            ],
            boot: Boot::Det,
        },
        Required {
            cases: Cases::Only(&["partial", "sheaves"]),
            metrics: &[
                OPS,
                "list_lock_acquisitions_per_kop",
                "barn_lock_acquisitions_per_kop",
                "slabs_allocated_per_kop",
                "slabs_freed_per_kop",
                "slab_kib_after",
                "free_bypass_fraction",
            ],
            boot: Boot::Tsc,
        },
    ],
    seeds: &[Seed {
        seed: "005",
        metric: OPS,
        case: "sheaves",
        boot: Boot::Tsc,
        base: "partial",
        base_boot: Boot::Tsc,
        thread_figure:
            "-1.2% to -4.2% will-it-scale at 64/128/192 processes, sheaves for all caches",
        thread_ratio: 0.973,
    }],
    headline: Headline::Ratio {
        metric: PAIR,
        case: "sheaves/random",
        base: "partial/random",
        boot: Boot::Icount,
    },
    // linux/twin/sheaves_vs_partial.c: the three workloads on one design per Linux kernel (6.1
    // partial, 7.x sheaves): fast64 and burst256 on private caches, random on kmalloc's.
    twin: Some(Twin {
        boot: Boot::Icount,
        required: &[
            twin_icount("linux/fast64", PAIR),
            twin_icount("linux/random", PAIR),
            twin_icount("linux/burst256", PAIR),
        ],
        split_over_boots: false,
        counterparts: &[
            facing("partial/fast64", "linux/fast64", PAIR),
            facing("sheaves/fast64", "linux/fast64", PAIR),
            facing("partial/random", "linux/random", PAIR),
            facing("sheaves/random", "linux/random", PAIR),
            facing("partial/burst256", "linux/burst256", PAIR),
            facing("sheaves/burst256", "linux/burst256", PAIR),
        ],
    }),
};

/// kernel/src/bench/memoryless_sheaves.rs: on the 8node-2mem preset (8 nodes with CPUs, 2
/// with memory), every CPU churns a 64-byte cache: the partial design, sheaves as 7.0
/// shipped (no barn on memoryless nodes) and sheaves with the fix (a barn on every node).
pub const MEMORYLESS_SHEAVES: Experiment = Experiment {
    name: "memoryless_sheaves",
    cases: &[
        case("partial", ALL),
        case("sheaves_as_shipped", ALL),
        case("sheaves_fixed", ALL),
    ],
    baseline: Baseline::Case("sheaves_fixed"),
    boots: ALL,
    numa_only: true,
    designs: Designs::Both,
    required: &[
        Required {
            cases: Cases::Every,
            metrics: MEMORYLESS_COUNTS,
            boot: Boot::Tsc,
        },
        Required {
            cases: Cases::Every,
            metrics: MEMORYLESS_COUNTS,
            boot: Boot::Det,
        },
        Required {
            cases: Cases::Every,
            metrics: &[PAIR, "pairs_per_kinstruction"],
            boot: Boot::Icount,
        },
    ],
    seeds: &[Seed {
        seed: "006",
        metric: "pairs_per_kinstruction",
        case: "sheaves_as_shipped",
        boot: Boot::Icount,
        base: "sheaves_fixed",
        base_boot: Boot::Icount,
        thread_figure: "ublk null 36M -> 13M IOPS (-64%) on 7.0, 8 nodes of which 2 have memory",
        thread_ratio: 13.0 / 36.0,
    }],
    headline: Headline::Ratio {
        metric: "pairs_per_kinstruction",
        case: "sheaves_as_shipped",
        base: "sheaves_fixed",
        boot: Boot::Icount,
    },
    // linux/twin/memoryless_sheaves.c: the burst on a private 64-byte cache on the boot CPU (a
    // memoryless node's on 8node-2mem); the sheaf counters need SLUB_STATS (not in Debian's).
    twin: Some(Twin {
        boot: Boot::Icount,
        required: &[
            twin_icount("linux", PAIR),
            twin_icount("linux", "pairs_per_kinstruction"),
        ],
        split_over_boots: false,
        counterparts: &[
            facing("partial", "linux", PAIR),
            facing("sheaves_as_shipped", "linux", PAIR),
            facing("sheaves_fixed", "linux", PAIR),
            facing("partial", "linux", "pairs_per_kinstruction"),
            facing("sheaves_as_shipped", "linux", "pairs_per_kinstruction"),
            facing("sheaves_fixed", "linux", "pairs_per_kinstruction"),
        ],
    }),
};

/// sheaves_opt_in's counted metrics (tsc and det).
const OPT_IN_COUNTS: &[&str] = &[
    "list_lock_acquisitions_per_kop",
    "barn_lock_acquisitions_per_kop",
    "slabs_allocated_per_kop",
    "slab_kib_live",
];

/// Hao Li's figures (LKML 2602.0/06001), will-it-scale at 64/128/192 processes against the
/// kernel before sheaves.
const HAO_LI_MAPLE: &str =
    "+31.5% to +35.4% will-it-scale at 64/128/192 processes, 6.19-rc5 sheaves on maple nodes only vs before sheaves";
const HAO_LI_ALL: &str =
    "-1.2% to -4.2% will-it-scale at 64/128/192 processes, sheaves for all caches vs before sheaves";

/// kernel/src/bench/sheaves_opt_in.rs: the maple tree's pattern under mmap/munmap (bursts of
/// 256-byte node allocations, the replaced nodes freed a grace period later, the unused at
/// once) on every CPU: before sheaves (`partial`), 6.18/6.19's opt-in sheaves for the
/// maple_node cache (`hybrid`) and 7.0's sheaves for all (`sheaves`).
pub const SHEAVES_OPT_IN: Experiment = Experiment {
    name: "sheaves_opt_in",
    cases: &[
        case("partial", ALL),
        case("hybrid", ALL),
        case("sheaves", ALL),
    ],
    baseline: Baseline::Case("partial"),
    boots: ALL,
    numa_only: false,
    designs: Designs::Both,
    required: &[
        Required {
            cases: Cases::Every,
            metrics: OPT_IN_COUNTS,
            boot: Boot::Det,
        },
        Required {
            cases: Cases::Every,
            metrics: OPT_IN_COUNTS,
            boot: Boot::Tsc,
        },
        Required {
            cases: Cases::Every,
            metrics: &[OPS],
            boot: Boot::Tsc,
        },
        Required {
            cases: Cases::Every,
            metrics: &["instructions_per_op"],
            boot: Boot::Icount,
        },
    ],
    seeds: &[
        Seed {
            seed: "007",
            metric: OPS,
            case: "hybrid",
            boot: Boot::Tsc,
            base: "partial",
            base_boot: Boot::Tsc,
            thread_figure: HAO_LI_MAPLE,
            // The middle of +31.5%..+35.4%.
            thread_ratio: 1.3345,
        },
        Seed {
            seed: "007",
            metric: OPS,
            case: "sheaves",
            boot: Boot::Tsc,
            base: "partial",
            base_boot: Boot::Tsc,
            thread_figure: HAO_LI_ALL,
            // The middle of -1.2%..-4.2%.
            thread_ratio: 0.973,
        },
    ],
    headline: Headline::Ratio {
        metric: "instructions_per_op",
        case: "hybrid",
        base: "partial",
        boot: Boot::Icount,
    },
    twin: None,
};
