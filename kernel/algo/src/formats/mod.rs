//! Text formats numalab writes and reads: KTAP (the kernel's test output) and the text of
//! `numactl -H` (machine descriptions). The BENCH record format is `crate::bench` (its
//! `Record`), next to the experiment catalog it checks against.

pub mod ktap;
pub mod numactl;
