//! Catalog entry of the kfree_rcu experiment (issue 45): rcuscale's kfree_rcu_test on every
//! CPU under the three `rcu.kfree` ways.

use super::{case, Baseline, Boot, Boots, Cases, Designs, Experiment, Headline, Required, TSC_DET};

/// Every boot but uma.
const ALL: Boots = TSC_DET.and(Boots::ICOUNT);

/// The counted metrics (det and tsc).
const COUNTS: &[&str] = &[
    "grace_periods_per_kop",
    "callbacks_per_kop",
    "peak_waiting_objects",
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
            metrics: &["instructions_per_op"],
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
    seeds: &[],
    headline: Headline::Ratio {
        metric: "instructions_per_op",
        case: "sheaf",
        base: "batched",
        boot: Boot::Icount,
    },
    twin: None,
};
