//! Host tests of `numa.rs`: valid machines, every bad-table case, and a never-panics fuzz.

use super::*;
use crate::acpi::madt::build::{local_apic, madt};

use crate::acpi::slit::build::slit;
use crate::acpi::srat::build::{cpu, mem, srat};
use crate::acpi::srat::FLAG_ENABLED;

const MIB: u64 = 1 << 20;

/// The 4node preset as QEMU describes it (tables written like QEMU's).
fn qemu_4node() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let madt = madt(&(0..8).map(|i| local_apic(i, i, 1)).collect::<Vec<_>>());
    let mut e: Vec<Vec<u8>> = (0..8u8).map(|i| cpu(i as u32 / 2, i, true)).collect();
    e.push(mem(0, 0, 0xa0000, FLAG_ENABLED));
    e.push(mem(0, MIB, 511 * MIB, FLAG_ENABLED));
    for n in 1..4u64 {
        e.push(mem(n as u32, n * 512 * MIB, 512 * MIB, FLAG_ENABLED));
    }
    e.push(mem(0, 0, 0, 0));
    let d = |i: usize, j: usize| {
        if i == j {
            10
        } else if i / 2 == j / 2 {
            16
        } else {
            32
        }
    };
    let slit = slit(
        &(0..4)
            .map(|i| (0..4).map(|j| d(i, j)).collect())
            .collect::<Vec<Vec<u8>>>(),
    );
    (madt, srat(&e), slit)
}

const USABLE: &[(u64, u64)] = &[(0, 0x9f000), (0x100000, 0x7ffe0000)];
const RAM: &[(u64, u64)] = &[(0, 0xa0000), (0xf0000, 0x80000000)];

fn run(boot: u32, madts: &[&[u8]], srats: &[&[u8]], slits: &[&[u8]]) -> Outcome {
    build(&Machine {
        boot_apic_id: boot,
        madts,
        srats,
        slits,
        usable: USABLE,
        ram: RAM,
    })
}

#[test]
fn qemu_4node_is_exact() {
    let (m, s, l) = qemu_4node();
    let o = run(0, &[&m], &[&s], &[&l]);
    assert!(o.warnings.is_empty(), "{:?}", o.warnings);
    let t = &o.topology;
    assert_eq!(t.nr_nodes(), 4);
    assert_eq!(t.nr_cpus(), 8);
    for (i, c) in t.cpus.iter().enumerate() {
        assert_eq!(
            (c.cpu.0 as usize, c.apic_id as usize, c.node.0 as usize),
            (i, i, i / 2)
        );
    }
    assert_eq!(
        t.nodes[0].mem_ranges,
        vec![(0, 0x9f000), (0x100000, 512 * MIB)]
    );
    assert_eq!(t.nodes[3].mem_ranges, vec![(1536 * MIB, 0x7ffe0000)]);
    assert_eq!(t.distance(NodeId(0), NodeId(2)), 32);
    assert_eq!(
        t.fallback_order(NodeId(1)),
        &[NodeId(1), NodeId(0), NodeId(2), NodeId(3)]
    );
}
