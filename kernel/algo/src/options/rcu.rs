//! Kernel options of the `rcu` group. RCU (docs/rcu.md).

use super::{Kind, Spec};

super::declare! {
    RCU = "rcu";
    RCU_FANOUT_LEAF: u64 = Spec {
        key: "rcu.fanout_leaf",
        kind: Kind::U64 { min: 0, max: 64 },
        default: "0",
        help: "CPUs per leaf rcu_node (Linux's rcu_fanout_leaf); 0: one leaf per NUMA node",
    };
}
