//! Kernel options of the `soak` group. The soak (`--suite soak`): tagged allocator operations on
//! every CPU.

use super::{Kind, Spec};

super::declare! {
    SOAK = "soak";
    SOAK_OPS: u64 = Spec {
        key: "soak.ops",
        kind: Kind::U64 { min: 1, max: 1 << 40 },
        default: "10000000",
        help: "soak: operations over all CPUs (when soak.seconds is 0)",
    };
    SOAK_SECONDS: u64 = Spec {
        key: "soak.seconds",
        kind: Kind::U64 { min: 0, max: 1 << 20 },
        default: "0",
        help: "soak: run this long instead of soak.ops (0: run soak.ops operations)",
    };
    SOAK_SEED: u64 = Spec {
        key: "soak.seed",
        kind: Kind::U64 { min: 0, max: u64::MAX },
        default: "1",
        help: "soak: seed of every CPU's operation mix (printed at the start; the same seed repeats a run's choices)",
    };
    SOAK_CHECKPOINTS: u64 = Spec {
        key: "soak.checkpoints",
        kind: Kind::U64 { min: 1, max: 10_000 },
        default: "10",
        help: "soak: rounds, each ended by a checkpoint (every tag, per-node conservation)",
    };
}
