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
use numalab_algo::memrange;
use numalab_algo::topology::Topology;
use spin::Once;

pub use numalab_algo::topology::{CpuId, NodeId};

static TOPOLOGY: Once<Topology> = Once::new();

/// Usable RAM from the bootloader's map, merged into sorted [start, end) ranges.
pub fn usable_ranges() -> Vec<(u64, u64)> {
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for r in crate::early::info().regions.iter() {
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
    let regions = crate::early::info().regions.iter();
    memrange::normalize(&regions.map(|r| (r.start, r.end)).collect::<Vec<_>>())
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
        let raw = tables();
        let (madts, srats, slits) = (
            as_slices(&raw.madts),
            as_slices(&raw.srats),
            as_slices(&raw.slits),
        );
        let usable = usable_ranges();
        let ram = memory_map_ranges();
        let machine = Machine {
            boot_apic_id: current_apic_id(),
            apic_mode: crate::arch::apic::mode_from_cpuid(),
            madts: &madts,
            srats: &srats,
            slits: &slits,
            usable: &usable,
            ram: &ram,
        };
        let outcome = numa::build(&machine);
        if crate::options::load().get(&crate::options::ACPI_DUMP) {
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

/// The ACPI tables as found (a production image).
#[cfg(not(feature = "ktest"))]
fn tables() -> crate::acpi::RawTables {
    crate::acpi::find_tables()
}

/// The ACPI tables as found, then damaged as `acpi.corrupt=` asks (ktest images only).
#[cfg(feature = "ktest")]
fn tables() -> crate::acpi::RawTables {
    let mut raw = crate::acpi::find_tables();
    corrupt_for_test(
        &mut raw.srats,
        crate::options::load().get(&crate::options::ACPI_CORRUPT),
    );
    raw
}

/// The `acpi.corrupt=` test hook: QEMU recomputes the checksum and length of tables given with
/// `-acpitable`, so the host tests damage the kernel's own copy of the first SRAT instead, and
/// the whole boot path (parse, warn, fall back) runs as it would on a bad firmware table.
#[cfg(feature = "ktest")]
fn corrupt_for_test(srats: &mut [Vec<u8>], how: crate::options::AcpiCorrupt) {
    use crate::options::AcpiCorrupt;
    const CHECKSUM_OFFSET: usize = 9;
    const LENGTH_OFFSET: usize = 4;
    let Some(table) = srats.first_mut().filter(|t| t.len() > CHECKSUM_OFFSET) else {
        return;
    };
    match how {
        AcpiCorrupt::SratChecksum => {
            table[CHECKSUM_OFFSET] = table[CHECKSUM_OFFSET].wrapping_add(1)
        }
        AcpiCorrupt::SratLength => {
            let claimed = (table.len() as u32 + 64).to_le_bytes();
            table[LENGTH_OFFSET..LENGTH_OFFSET + 4].copy_from_slice(&claimed);
        }
        AcpiCorrupt::None => {}
    }
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

/// The topology's own tests (white-box: they read the built topology and the memory map).
#[cfg(feature = "ktest")]
mod tests {
    use super::*;
    use crate::ktest::{Ctx, TestResult};
    use crate::{kassert, kassert_eq, ktest};
    use numalab_algo::page::PhysAddr;

    use crate::ktest::suites::TOPOLOGY as SUITE;

    /// Every CPU has a valid node and a distinct APIC id, and CPU 0 is the CPU running this.
    fn test_cpus(_ctx: &Ctx) -> TestResult {
        let t = get();
        kassert!(t.nr_cpus() >= 1);
        kassert_eq!(t.cpus[0].apic_id, current_apic_id());
        for (i, c) in t.cpus.iter().enumerate() {
            kassert_eq!(c.cpu.index(), i);
            kassert!(
                c.node.index() < t.nr_nodes(),
                "CPU {} on node {}",
                i,
                c.node.0
            );
            kassert!(
                t.cpus[..i].iter().all(|o| o.apic_id != c.apic_id),
                "APIC id {} twice",
                c.apic_id
            );
            kassert!(t.nodes[c.node.index()].cpus.contains(&c.cpu));
        }
        Ok(())
    }

    /// Node memory is usable RAM, disjoint between nodes, and together it is all usable RAM.
    fn test_memory(_ctx: &Ctx) -> TestResult {
        let t = get();
        let usable = usable_ranges();
        let mut all: Vec<(u64, u64)> = Vec::new();
        for node in &t.nodes {
            for &(s, e) in &node.mem_ranges {
                kassert!(
                    memrange::intersect(&usable, &[(s, e)])
                        .iter()
                        .map(|(a, b)| b - a)
                        .sum::<u64>()
                        == e - s,
                    "node {} range {:#x}-{:#x} is not all usable RAM",
                    node.id.0,
                    s,
                    e
                );
                kassert_eq!(t.node_of_phys(PhysAddr::new(s)), Some(node.id));
                all.push((s, e));
            }
        }
        let total: u64 = all.iter().map(|(s, e)| e - s).sum();
        kassert_eq!(memrange::normalize(&all), memrange::normalize(&usable));
        kassert_eq!(total, usable.iter().map(|(s, e)| e - s).sum::<u64>());
        Ok(())
    }

    /// Fallback orders list memory nodes by distance; a memoryless node's mem_node has memory.
    fn test_fallback(_ctx: &Ctx) -> TestResult {
        let t = get();
        for node in &t.nodes {
            let order = t.fallback_order(node.id);
            kassert!(!order.is_empty(), "node {} has no fallback", node.id.0);
            for pair in order.windows(2) {
                kassert!(t.distance(node.id, pair[0]) <= t.distance(node.id, pair[1]));
            }
            let home = t.mem_node(node.id);
            kassert!(!t.is_memoryless(home));
            if !t.is_memoryless(node.id) {
                kassert_eq!(home, node.id);
            }
            kassert_eq!(t.distance(node.id, node.id), 10);
        }
        Ok(())
    }

    ktest!(SUITE, Test, "cpus", test_cpus);
    ktest!(SUITE, Test, "memory", test_memory);
    ktest!(SUITE, Test, "fallback", test_fallback);
}
