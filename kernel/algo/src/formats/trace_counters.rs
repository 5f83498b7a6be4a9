//! The trace plugin's counters of a region row and of the total row, in the output's order
//! (docs/trace.md): declared once, written by the plugin (numalab-trace's `Counters::fields`)
//! and required by the runner's parser (boot/src/trace/output.rs), which refuses a row with a
//! name outside this list or one missing.

/// Counter names, in the order the plugin writes them.
pub const COUNTERS: [&str; 19] = [
    "insns",
    "turns",
    "loads",
    "stores",
    "atomics",
    "io",
    "unmapped",
    "local",
    "remote",
    "dist_sum",
    "hits",
    "l2_hits",
    "llc_hits",
    "miss_local",
    "miss_remote",
    "hitm_local",
    "hitm_remote",
    "inval",
    "writebacks",
];
