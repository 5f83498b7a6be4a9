//! numalab-trace: a QEMU TCG plugin (API v1) that counts NUMA memory traffic and cache-line
//! transfers per timed region (docs/trace.md). Everything but `plugin` is pure and host-tested.

pub mod account;
pub mod cache;
pub mod classify;
pub mod config;
pub mod directory;
pub mod fasthash;
pub mod hierarchy;
pub mod hwaddr;
pub mod lines;
#[cfg(not(test))]
pub mod plugin;
pub mod report;
