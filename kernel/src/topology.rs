//! The machine's NUMA topology, built once at boot from ACPI (MADT, SRAT, SLIT) and read by
//! every allocator.
//!
//! `init` finds the tables (crate::acpi), hands their bytes with the boot CPU's APIC id and
//! the memory map to numalab_algo::acpi::numa::build (pure parsers: malformed tables become
//! warnings and documented fallbacks, never a panic), prints those warnings, and keeps the
//! result. `print_numactl` prints it as `numactl -H` does.

use alloc::vec::Vec;
use bootloader_api::info::MemoryRegionKind;
use core::arch::x86_64::__cpuid;
use numalab_algo::acpi::numa::{self, Machine};
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

/// Every range of the memory map, whatever its kind (what "outside RAM" is checked against).
fn memory_map_ranges() -> Vec<(u64, u64)> {
    let regions = crate::mm::early::info().regions.iter();
    numa::normalize(&regions.map(|r| (r.start, r.end)).collect::<Vec<_>>())
}

fn as_slices(tables: &[Vec<u8>]) -> Vec<&[u8]> {
    tables.iter().map(|t| t.as_slice()).collect()
}

/// The APIC id of the CPU running this: the x2APIC id (CPUID leaf 0xB) when the CPU has that
/// leaf, else the 8-bit initial APIC id of leaf 1.
pub fn current_apic_id() -> u32 {
    if __cpuid(0).eax >= 0xb {
        let leaf = __cpuid(0xb);
        if leaf.ebx != 0 {
            return leaf.edx;
        }
    }
    __cpuid(1).ebx >> 24
}

/// Builds the topology (once) for the boot CPU, printing one warning per table problem and,
/// with `acpi.dump=1`, every table found and every MADT/SRAT/SLIT entry as parsed.
pub fn init() -> &'static Topology {
    TOPOLOGY.call_once(|| {
        let raw = crate::acpi::find_tables();
        let (madts, srats, slits) = (
            as_slices(&raw.madts),
            as_slices(&raw.srats),
            as_slices(&raw.slits),
        );
        let usable = usable_ranges();
        let ram = memory_map_ranges();
        let machine = Machine {
            boot_apic_id: current_apic_id(),
            madts: &madts,
            srats: &srats,
            slits: &slits,
            usable: &usable,
            ram: &ram,
        };
        let outcome = numa::build(&machine);
        if crate::options::load().bool("acpi.dump") {
            for line in raw.found.iter().chain(outcome.dump.iter()) {
                println!("acpi: {}", line);
            }
        }
        for w in raw.warnings.iter().chain(outcome.warnings.iter()) {
            warn!("{}", w);
        }
        outcome.topology
    })
}

/// The topology. Panics only if called before `init` (a boot-order bug).
pub fn get() -> &'static Topology {
    TOPOLOGY
        .get()
        .expect("topology::get() before topology::init()")
}

/// Prints the topology as `numactl -H` does; `free_bytes` gives each node's free memory.
pub fn print_numactl(free_bytes: &dyn Fn(NodeId) -> u64) {
    for line in get().numactl_lines(free_bytes) {
        println!("{}", line);
    }
}

/// Free bytes before the page allocator exists: the node's usable memory minus the
/// bootstrap heap (the bootloader already left the kernel image and its own data out of the
/// usable map).
pub fn early_free_bytes(node: NodeId) -> u64 {
    let (heap_start, heap_end) = crate::mm::early::info().heap_phys;
    let node = &get().nodes[node.index()];
    let heap: u64 = numa::intersect(&node.mem_ranges, heap_start, heap_end)
        .iter()
        .map(|(s, e)| e - s)
        .sum();
    node.mem_bytes() - heap
}
