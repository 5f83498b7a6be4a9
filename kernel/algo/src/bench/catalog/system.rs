//! Catalog entries of the experiments outside the slab allocator: the clock's floor, the page
//! allocator, cross-CPU calls and vmalloc's vmap nodes (seed 002).

use super::{
    case, Baseline, Boot, Boots, Cases, Counterpart, Designs, Experiment, Headline, Required, Seed,
    Twin, TwinRecord, TSC_ICOUNT,
};

const PAIR: &str = "instructions_per_pair";

/// kernel/src/bench/mod.rs: ticks between two back-to-back clock reads, the floor under every
/// short measurement.
pub const CLOCK_OVERHEAD: Experiment = Experiment {
    name: "clock_overhead",
    cases: &[case("rdtsc", TSC_ICOUNT)],
    baseline: Baseline::Case("rdtsc"),
    boots: TSC_ICOUNT,
    numa_only: false,
    designs: Designs::NoSlab,
    required: &[
        Required {
            cases: Cases::Every,
            metrics: &["min_ticks_per_read"],
            boot: Boot::Icount,
        },
        Required {
            cases: Cases::Every,
            metrics: &["mean_ticks_per_read"],
            boot: Boot::Tsc,
        },
    ],
    seeds: &[],
    headline: Headline::Value {
        metric: "min_ticks_per_read",
        case: "rdtsc",
        boot: Boot::Icount,
    },
    twin: None,
};

/// kernel/src/bench/page_alloc.rs: instructions per order-0 pair, numalab's per-CPU lists
/// against buddy_system_allocator (the one-CPU boot only; the other boots check locality).
pub const PAGE_ALLOC: Experiment = Experiment {
    name: "page_alloc",
    cases: &[
        case("numalab", Boots::ICOUNT),
        case("buddy_system_allocator", Boots::ICOUNT),
    ],
    baseline: Baseline::Case("numalab"),
    boots: Boots::ICOUNT,
    numa_only: false,
    designs: Designs::NoSlab,
    required: &[Required {
        cases: Cases::Every,
        metrics: &[PAIR],
        boot: Boot::Icount,
    }],
    seeds: &[],
    headline: Headline::Ratio {
        metric: PAIR,
        case: "numalab",
        base: "buddy_system_allocator",
        boot: Boot::Icount,
    },
    twin: Some(Twin {
        boot: Boot::Icount,
        required: &[TwinRecord {
            boot: Boot::Icount,
            case: "linux",
            metric: PAIR,
        }],
        split_over_boots: false,
        counterparts: &[Counterpart {
            case: "numalab",
            linux_case: "linux",
            metric: PAIR,
            boot: Boot::Icount,
        }],
    }),
};

/// kernel/src/bench/smp_calls.rs: a cross-CPU call to every CPU, to the farthest CPU (with a
/// second CPU online) and a one-page TLB shootdown.
pub const SMP_CALLS: Experiment = Experiment {
    name: "smp_calls",
    cases: &[
        case("on_each_cpu", TSC_ICOUNT),
        case("call_on_cpu", Boots::TSC),
        case("tlb_shootdown_1page", TSC_ICOUNT),
    ],
    baseline: Baseline::Case("on_each_cpu"),
    boots: TSC_ICOUNT,
    numa_only: false,
    designs: Designs::NoSlab,
    required: &[],
    seeds: &[],
    headline: Headline::Value {
        metric: "round_trip",
        case: "on_each_cpu",
        boot: Boot::Icount,
    },
    twin: None,
};

const fn vmalloc_facing(case: &'static str) -> Counterpart {
    Counterpart {
        case,
        linux_case: "linux",
        metric: PAIR,
        boot: Boot::Icount,
    }
}

/// kernel/src/bench/vmalloc_scaling.rs: vmalloc/vfree pairs with one global lock, per-CPU
/// and per-node vmap nodes (seed 002).
pub const VMALLOC_SCALING: Experiment = Experiment {
    name: "vmalloc_scaling",
    cases: &[
        case("global", super::TSC_DET.and(Boots::ICOUNT)),
        case("cpu", super::TSC_DET.and(Boots::ICOUNT)),
        case("numa", super::TSC_DET.and(Boots::ICOUNT)),
    ],
    baseline: Baseline::Case("global"),
    boots: super::TSC_DET.and(Boots::ICOUNT),
    numa_only: false,
    designs: Designs::NoSlab,
    required: &[
        Required {
            cases: Cases::Any,
            metrics: &[PAIR, "purges"],
            boot: Boot::Icount,
        },
        Required {
            cases: Cases::Every,
            metrics: &[
                "global_lock_acquisitions_per_pair",
                "contended_acquisitions_per_pair",
                "node_lock_acquisitions_per_pair",
                "node_lock_contended_per_pair",
                "purges_per_kpair",
                "ops_per_sec",
            ],
            boot: Boot::Tsc,
        },
        Required {
            cases: Cases::Every,
            metrics: &[
                "global_lock_acquisitions_per_pair",
                "contended_acquisitions_per_pair",
                "node_lock_acquisitions_per_pair",
                "purges_per_kpair",
            ],
            boot: Boot::Det,
        },
    ],
    seeds: &[
        Seed {
            seed: "002",
            metric: "ops_per_sec",
            case: "cpu",
            boot: Boot::Tsc,
            base: "global",
            base_boot: Boot::Tsc,
            thread_figure: "test_vmalloc 64 threads 10m51s -> 51s (~12x)",
            thread_ratio: 651.0 / 51.0,
        },
        Seed {
            seed: "002",
            metric: "global_lock_acquisitions_per_pair",
            case: "cpu",
            boot: Boot::Det,
            base: "global",
            base_boot: Boot::Det,
            thread_figure: "lock slow path 93.07% -> 16.51% of cycles",
            thread_ratio: 16.51 / 93.07,
        },
    ],
    headline: Headline::Ratio {
        metric: "global_lock_acquisitions_per_pair",
        case: "cpu",
        base: "global",
        boot: Boot::Det,
    },
    twin: Some(Twin {
        boot: Boot::Icount,
        required: &[TwinRecord {
            boot: Boot::Icount,
            case: "linux",
            metric: PAIR,
        }],
        split_over_boots: false,
        counterparts: &[
            vmalloc_facing("global"),
            vmalloc_facing("cpu"),
            vmalloc_facing("numa"),
        ],
    }),
};
