//! Catalog entry of the kfree_rcu experiment: rcuscale's kfree_rcu_test on every
//! CPU under the three `rcu.kfree` ways.

use super::{
    case, Baseline, Boot, Boots, Cases, Counterpart, Designs, Experiment, Headline, Required, Seed,
    Twin, TwinRecord, TSC_DET,
};

/// Every boot but uma.
const ALL: Boots = TSC_DET.and(Boots::ICOUNT);

const PER_OP: &str = "instructions_per_op";
const GP: &str = "grace_periods_per_kop";
const PEAK: &str = "peak_waiting_objects";

/// The counted metrics (det and tsc).
const COUNTS: &[&str] = &[
    GP,
    "callbacks_per_kop",
    PEAK,
    "list_lock_acquisitions_per_kop",
    "barn_lock_acquisitions_per_kop",
];

/// kernel/src/bench/kfree_rcu_scale.rs: each CPU allocates rcuscale's kfree_obj (8 bytes and
/// an rcu_head, kmalloc-32's size) and frees it with kfree_rcu, `kfree_loops` times
/// `kfree_alloc_num`, under `call_rcu`, `batched` (Linux 6.1) and `sheaf` (6.18/7.x):
/// instructions per allocation and kfree_rcu (icount, one CPU), grace periods, callbacks,
/// the most objects waiting on one CPU, list_lock and barn lock acquisitions (det, tsc).
pub const KFREE_RCU_SCALE: Experiment = Experiment {
    name: "kfree_rcu_scale",
    cases: &[
        case("call_rcu", ALL),
        case("batched", ALL),
        case("sheaf", ALL),
    ],
    baseline: Baseline::Case("batched"),
    boots: ALL,
    numa_only: false,
    designs: Designs::Boot,
    required: &[
        Required {
            cases: Cases::Every,
            metrics: &[PER_OP],
            boot: Boot::Icount,
        },
        Required {
            cases: Cases::Every,
            metrics: COUNTS,
            boot: Boot::Det,
        },
        Required {
            cases: Cases::Every,
            metrics: COUNTS,
            boot: Boot::Tsc,
        },
    ],
    seeds: &[Seed {
        seed: "008",
        metric: PER_OP,
        case: "sheaf",
        boot: Boot::Icount,
        base: "batched",
        base_boot: Boot::Icount,
        thread_figure: "vmalloc workloads 2-10% slower on 7.0-rc1..rc5 than 6.19, mostly the \
             kvfree_rcu paths of test_vmalloc (Graviton3, Sapphire Rapids)",
        // The middle of 2-10% slower, as a cost (instructions per op): new / old.
        thread_ratio: 1.06,
    }],
    headline: Headline::Ratio {
        metric: PER_OP,
        case: "sheaf",
        base: "batched",
        boot: Boot::Icount,
    },
    // linux/twin/kfree_rcu_scale.c: the same loop with Linux's own kfree_rcu (6.1: batched;
    // 7.x: the rcu_free sheaf of a cache with sheaves) and rcuscale's kfree_by_call_rcu, in
    // the icount boot (its required records) and, facing numalab's tsc counts, the tsc boot.
    twin: Some(Twin {
        boot: Boot::Icount,
        required: &[
            twin_icount("linux/call_rcu", PER_OP),
            twin_icount("linux/kfree_rcu", PER_OP),
            twin_icount("linux/call_rcu", GP),
            twin_icount("linux/kfree_rcu", GP),
            twin_icount("linux/call_rcu", PEAK),
        ],
        split_over_boots: false,
        counterparts: &[
            facing("call_rcu", "linux/call_rcu", PER_OP, Boot::Icount),
            facing("batched", "linux/kfree_rcu", PER_OP, Boot::Icount),
            facing("sheaf", "linux/kfree_rcu", PER_OP, Boot::Icount),
            // Every CPU, host time: the twin's tsc boot faces numalab's.
            facing("call_rcu", "linux/call_rcu", GP, Boot::Tsc),
            facing("batched", "linux/kfree_rcu", GP, Boot::Tsc),
            facing("sheaf", "linux/kfree_rcu", GP, Boot::Tsc),
            facing("call_rcu", "linux/call_rcu", PEAK, Boot::Tsc),
        ],
    }),
};

/// A record the Linux twin prints in its icount boot.
const fn twin_icount(case: &'static str, metric: &'static str) -> TwinRecord {
    TwinRecord {
        boot: Boot::Icount,
        case,
        metric,
    }
}

/// numalab's way `case` facing the Linux twin's `linux_case`, `metric` in `boot`.
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
