//! Kernel option `rcu.kfree`: which of the three kfree_rcu / kvfree_rcu ways the kernel runs
//! (kernel/algo/src/kfree_rcu, kernel/src/mm/kfree_rcu). The rest of the `rcu` group is
//! RCU's own.

use super::{Choice, Spec};

super::choice! {
    /// `rcu.kfree`: how kfree_rcu and kvfree_rcu defer their frees.
    pub enum KfreeRcuWay {
        /// Linux 6.18 and 7.x: the CPU's rcu_free sheaf for its own node's objects of caches
        /// with sheaves, handed whole to call_rcu when full; everything else batched.
        #[default]
        Sheaf = "sheaf",
        /// Linux 6.1: per-CPU pages of pointers, drained by a monitor, freed with kfree_bulk.
        Batched = "batched",
        /// One call_rcu callback per object.
        CallRcu = "call_rcu",
    }
}

super::declare! {
    KFREE_RCU = "rcu";
    RCU_KFREE: KfreeRcuWay = Spec {
        key: "rcu.kfree",
        kind: KfreeRcuWay::KIND,
        default: "sheaf",
        help: "kfree_rcu/kvfree_rcu: sheaf (Linux 6.18/7.x rcu_free sheaf, else batched; needs slub.design=sheaves or hybrid), batched (Linux 6.1's kfree_rcu_cpu pages, monitor and kfree_bulk) or call_rcu (one callback per object)",
    };
}
