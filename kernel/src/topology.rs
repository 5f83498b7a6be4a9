//! The machine's NUMA topology, built once at boot and read by every allocator.
//!
//! `init` currently describes a single node holding the boot CPU and all usable memory; the
//! ACPI (MADT/SRAT/SLIT) reader replaces that description (see issue 3).

use alloc::vec::Vec;
use bootloader_api::info::MemoryRegionKind;
use numalab_algo::topology::Topology;
use spin::Once;

pub use numalab_algo::topology::{CpuId, NodeId};

static TOPOLOGY: Once<Topology> = Once::new();

/// Usable RAM from the bootloader's map, merged into sorted [start, end) ranges.
pub fn usable_ranges() -> Vec<(u64, u64)> {
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for r in crate::mm::early::info().regions.iter() {
        if r.kind != MemoryRegionKind::Usable || r.end <= r.start {
            continue;
        }
        match ranges.last_mut() {
            Some(last) if last.1 == r.start => last.1 = r.end,
            _ => ranges.push((r.start, r.end)),
        }
    }
    ranges.sort_unstable();
    ranges
}

/// Builds the topology (once).
pub fn init() -> &'static Topology {
    TOPOLOGY.call_once(|| Topology::single_node(&[0], usable_ranges()))
}

/// The topology. Panics only if called before `init` (a boot-order bug).
pub fn get() -> &'static Topology {
    TOPOLOGY
        .get()
        .expect("topology::get() before topology::init()")
}
