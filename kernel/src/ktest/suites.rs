//! Every KTAP suite, and the suites whose services its tests use (`uses`): the runner orders
//! suites by this graph (ktest/mod.rs), so no suite has a hand-set place. The tests register
//! in their subsystem (`ktest!(SUITE, ...)` after `use crate::ktest::suites::FRAME as SUITE`);
//! only the suites are declared here, so a subsystem's tests never import another's.

use super::KSuite;

/// The option check runs in every boot that runs any test.
pub static OPTIONS: KSuite = KSuite {
    name: "options",
    uses: &[],
    every_suite: true,
};

/// The runner itself.
pub static KTEST: KSuite = KSuite {
    name: "ktest",
    uses: &[&OPTIONS],
    every_suite: false,
};

/// The bootstrap heap (early.rs), before any allocator exists.
pub static EARLY: KSuite = KSuite {
    name: "early",
    uses: &[&KTEST],
    every_suite: false,
};

/// The first suite after the options: every allocator reads the topology.
pub static TOPOLOGY: KSuite = KSuite {
    name: "topology",
    uses: &[&EARLY],
    every_suite: false,
};

/// CPU bring-up, per-CPU data, cross-CPU calls and locks (after topology).
pub static SMP: KSuite = KSuite {
    name: "smp",
    uses: &[&TOPOLOGY],
    every_suite: false,
};

/// The page frame allocator's tests (after topology and smp: they use every CPU).
pub static FRAME: KSuite = KSuite {
    name: "frame",
    uses: &[&TOPOLOGY, &SMP],
    every_suite: false,
};

/// The slub KTAP suite: SLUB's own tests (tests.rs) and the stress runs that drive it from
/// outside (kernel/src/stress) register in it.
pub static SLUB: KSuite = KSuite {
    name: "slub",
    uses: &[&FRAME],
    every_suite: false,
};

/// RCU (after slub: the tree's nodes are in SLUB's per-node blocks; before vmalloc).
pub static RCU: KSuite = KSuite {
    name: "rcu",
    uses: &[&SMP, &SLUB],
    every_suite: false,
};

/// The trace plugin's known answers (bench/region_tests.rs): probes on pages of two nodes.
pub static TRACE: KSuite = KSuite {
    name: "trace",
    uses: &[&SMP, &FRAME, &SLUB],
    every_suite: false,
};

/// kfree_rcu three ways (after rcu: every way ends in call_rcu).
pub static KFREE_RCU: KSuite = KSuite {
    name: "kfree_rcu",
    uses: &[&RCU, &SLUB],
    every_suite: false,
};

/// vmalloc's tests (after frame: areas are backed by pages; test_vmalloc's kvfree_rcu cases).
pub static VMALLOC: KSuite = KSuite {
    name: "vmalloc",
    uses: &[&FRAME, &SLUB, &KFREE_RCU],
    every_suite: false,
};

/// After slub and vmalloc (their caches and instances exist).
pub static FAULT: KSuite = KSuite {
    name: "fault",
    uses: &[&SLUB, &VMALLOC],
    every_suite: false,
};

/// Every experiment, after every subsystem's tests.
pub static BENCH: KSuite = KSuite {
    name: "bench",
    uses: &[&FRAME, &SLUB, &KFREE_RCU, &VMALLOC, &FAULT],
    every_suite: false,
};

/// The soak (only with `suite=soak`): every allocator, fault injection and kvfree_rcu.
pub static SOAK: KSuite = KSuite {
    name: "soak",
    uses: &[&FRAME, &SLUB, &KFREE_RCU, &VMALLOC, &FAULT],
    every_suite: false,
};
