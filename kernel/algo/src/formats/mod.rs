//! Text formats numalab writes and reads: KTAP (the kernel's test output), the text of
//! `numactl -H` (machine descriptions), Linux's /proc/lock_stat (lock statistics) and the trace
//! plugin's counter names. The BENCH record format is `crate::bench` (its
//! `Record`), next to the experiment catalog it checks against.

/// KTAP lines moved to the wire module (every serial line kind is declared there).
pub use crate::wire::ktap;
pub mod lock_stat;
pub mod numactl;
pub mod trace_counters;
