//! numalab's hardware-free algorithms, shared by the kernel and unit-tested on the host.
//!
//! Nothing here touches hardware or uses `unsafe`: each module is a pure data structure or
//! parser that the kernel wraps with locks, page tables and per-CPU state.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod acpi;
pub mod bench;
pub mod fault;
pub mod formats;
pub mod frame;
pub mod kfree_rcu;
pub mod knob;
pub mod memrange;
#[cfg(test)]
mod model_check;
pub mod options;
pub mod page;
pub mod rcu;
pub mod rng;
pub mod slub;
pub mod smp;
pub mod topology;
pub mod vmalloc;
pub mod wire;
