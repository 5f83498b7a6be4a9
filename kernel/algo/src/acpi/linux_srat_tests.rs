//! Host tests of Linux's rules for malformed SRAT and SLIT, one per rule,
//! each naming the Linux code it follows (6.1 and 7.x alike: drivers/acpi/numa/srat.c,
//! arch/x86/mm/srat.c, arch/x86/mm/numa.c / mm/numa_memblks.c, drivers/acpi/tables.c).

use super::*;
use crate::acpi::madt::build::{local_apic, madt};
use crate::acpi::sdt;
use crate::acpi::slit::build::slit;
use crate::acpi::srat::build::{cpu, mem, srat, x2cpu};
use crate::acpi::srat::FLAG_ENABLED;

const MIB: u64 = 1 << 20;
const USABLE: &[(u64, u64)] = &[(0, 0x9f000), (0x100000, 0x40000000)];
const RAM: &[(u64, u64)] = &[(0, 0xa0000), (0xf0000, 0x40000000)];

/// Four CPUs (APIC ids 0-3) on the machine described by `srat` and `slits`.
fn run(srat: &[u8], slits: &[&[u8]]) -> Outcome {
    let m = madt(&(0..4).map(|i| local_apic(i, i, 1)).collect::<Vec<_>>());
    build(&Machine {
        boot_apic_id: 0,
        apic_mode: ApicMode::X2Apic,
        madts: &[&m],
        srats: &[srat],
        slits,
        usable: USABLE,
        ram: RAM,
    })
}

/// CPUs 0-1 on PXM 0, 2-3 on PXM 1; 512 MiB each; plus `extra` entries.
fn two_nodes(extra: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut e = vec![
        cpu(0, 0, true),
        cpu(0, 1, true),
        cpu(1, 2, true),
        cpu(1, 3, true),
        mem(0, 0, 512 * MIB, FLAG_ENABLED),
        mem(1, 512 * MIB, 512 * MIB, FLAG_ENABLED),
    ];
    e.extend(extra.iter().cloned());
    e
}

/// Linux's one-node view: bad_srat() (or a failed numa_cleanup_meminfo) turns ACPI NUMA off
/// and x86 boots dummy_numa_init's single node with every CPU and all memory.
fn numa_off(o: &Outcome, needles: &[&str]) {
    assert_eq!(o.topology.nr_nodes(), 1, "{:#?}", o.warnings);
    assert_eq!(o.topology.nr_cpus(), 4);
    assert_eq!(o.topology.nodes[0].mem_ranges, USABLE.to_vec());
    let w = o.warnings.join("\n");
    for n in needles {
        assert!(w.contains(n), "no {n:?} in:\n{w}");
    }
    assert!(w.contains("single node holding all memory and CPUs"), "{w}");
}

#[test]
fn linux_masks_a_revision_1_memory_entrys_domain_to_8_bits() {
    // acpi_numa_memory_affinity_init: `if (acpi_srat_revision <= 1) pxm &= 0xff;`
    let mut t = srat(&[
        cpu(0, 0, true),
        cpu(0, 1, true),
        cpu(1, 2, true),
        cpu(1, 3, true),
        mem(0x300, 0, 512 * MIB, FLAG_ENABLED),
        mem(0x101, 512 * MIB, 512 * MIB, FLAG_ENABLED),
    ]);
    t[8] = 1;
    sdt::fix_checksum(&mut t);
    let o = run(&t, &[]);
    assert!(o.warnings.is_empty(), "{:#?}", o.warnings);
    let pxms: Vec<u32> = o.topology.nodes.iter().map(|n| n.pxm).collect();
    assert_eq!(pxms, vec![0, 1]);
    assert_eq!(
        o.topology.nodes[1].mem_ranges,
        vec![(512 * MIB, 0x40000000)]
    );
    // Revision 2 reads all 32 bits: 0x300 and 0x101 are other domains than the CPUs'.
    t[8] = 2;
    sdt::fix_checksum(&mut t);
    let o = run(&t, &[]);
    assert_eq!(o.topology.nr_nodes(), 4, "{:#?}", o.warnings);
}

#[test]
fn linux_declares_a_srat_bad_for_an_entry_whose_length_does_not_fit_its_type() {
    // arch/x86/mm/srat.c: a processor entry of length != 16, an x2APIC entry shorter than
    // 24; drivers/acpi/numa/srat.c: a memory entry shorter than 40: bad_srat(), NUMA off.
    let mut short_cpu = cpu(0, 1, true);
    short_cpu.truncate(12);
    short_cpu[1] = 12;
    let mut long_cpu = cpu(0, 1, true);
    long_cpu.extend([0u8; 4]);
    long_cpu[1] = 20;
    let mut short_x2 = x2cpu(0, 1, true);
    short_x2.truncate(20);
    short_x2[1] = 20;
    let mut short_mem = mem(0, 0, MIB, 0);
    short_mem.truncate(32);
    short_mem[1] = 32;
    for (entry, want) in [
        (short_cpu, "length 12, Linux needs exactly 16"),
        (long_cpu, "length 20, Linux needs exactly 16"),
        (short_x2, "length 20, Linux needs at least 24"),
        (short_mem, "length 32, Linux needs at least 40"),
    ] {
        let o = run(&srat(&two_nodes(&[entry])), &[]);
        numa_off(&o, &["SRAT entry 6", want, "bad_srat()"]);
    }
    // A longer memory or x2APIC entry is read (Linux checks `<`, not `!=`).
    let mut long_mem = mem(1, 512 * MIB, MIB, FLAG_ENABLED);
    long_mem.extend([0u8; 8]);
    long_mem[1] = 48;
    let o = run(&srat(&two_nodes(&[long_mem])), &[]);
    assert_eq!(o.topology.nr_nodes(), 2, "{:#?}", o.warnings);
}

#[test]
fn linux_turns_numa_off_for_a_zero_length_entry() {
    // drivers/acpi/tables.c acpi_parse_entries_array: "Invalid zero length", -EINVAL; the
    // memory pass's error fails acpi_numa_init, so x86 falls back to one node.
    let o = run(&srat(&two_nodes(&[vec![1u8, 0, 0, 0]])), &[]);
    numa_off(&o, &["SRAT entry 6", "length 0", "Invalid zero length"]);
}

#[test]
fn linux_steps_over_a_one_byte_entry_by_one_byte() {
    // lib/fw_table.c (drivers/acpi/tables.c in 6.1) acpi_parse_entries_array: `entry.hdr +=
    // entry_len` for any type and any length but 0, so a 1-byte entry of a type no handler
    // takes is stepped over by one byte and the walk goes on at its length byte. Here that
    // byte is the type (1) of the memory entry of PXM 1, which Linux then reads whole.
    let mut with_mem = two_nodes(&[]);
    with_mem.pop();
    let mut one_byte = vec![0x7fu8];
    one_byte.extend(mem(1, 512 * MIB, 512 * MIB, FLAG_ENABLED));
    with_mem.push(one_byte);
    let o = run(&srat(&with_mem), &[]);
    assert!(o.warnings.is_empty(), "{:#?}", o.warnings);
    assert_eq!(o.topology.nr_nodes(), 2);
    assert_eq!(o.topology.nodes[1].mem_ranges, vec![(512 * MIB, 1 << 30)]);
    // Before a processor entry, the byte after the length is that entry's type, 0: a memory
    // entry of length 0 for Linux, "Invalid zero length", and NUMA off.
    let o = run(&srat(&two_nodes(&[vec![0x7f, 1], cpu(1, 3, false)])), &[]);
    numa_off(&o, &["(type 1): length 0", "Invalid zero length"]);
}

#[test]
fn linux_declares_a_srat_bad_for_a_domain_at_or_past_max_pxm_domains() {
    // acpi_map_pxm_to_node: pxm >= MAX_PXM_DOMAINS (MAX_NUMNODES, 1024 with Debian's
    // NODES_SHIFT=10) is NUMA_NO_NODE, and both entry kinds then call bad_srat().
    let o = run(&srat(&two_nodes(&[cpu(1024, 3, true)])), &[]);
    numa_off(&o, &["SRAT entry 6", "PXM 1024", "MAX_PXM_DOMAINS"]);
    let o = run(
        &srat(&two_nodes(&[mem(4000, 1 << 32, MIB, FLAG_ENABLED)])),
        &[],
    );
    numa_off(&o, &["SRAT entry 6", "PXM 4000"]);
    // Disabled entries and x2APIC entries with the invalid id are not mapped: no verdict.
    let o = run(
        &srat(&two_nodes(&[
            cpu(5000, 3, false),
            mem(5000, 0, MIB, 0),
            x2cpu(5000, 0xffff_ffff, true),
        ])),
        &[],
    );
    assert_eq!(o.topology.nr_nodes(), 2, "{:#?}", o.warnings);
    let o = run(&srat(&two_nodes(&[cpu(1023, 3, true)])), &[]);
    assert_eq!(o.topology.nr_nodes(), 3, "{:#?}", o.warnings);
}

#[test]
fn linux_refuses_memory_of_two_domains_that_overlaps() {
    // numa_cleanup_meminfo: "node A [mem ...] overlaps with node B [mem ...]", -EINVAL: the
    // ACPI NUMA init fails and x86 boots one node. Overlaps within one domain are merged.
    let o = run(
        &srat(&two_nodes(&[mem(1, 256 * MIB, 16 * MIB, FLAG_ENABLED)])),
        &[],
    );
    numa_off(
        &o,
        &[
            "SRAT entry 6",
            "overlaps entry 4 of PXM 0",
            "numa_cleanup_meminfo",
        ],
    );
    let o = run(
        &srat(&two_nodes(&[mem(0, 256 * MIB, 16 * MIB, FLAG_ENABLED)])),
        &[],
    );
    assert_eq!(o.topology.nr_nodes(), 2, "{:#?}", o.warnings);
}

#[test]
fn linux_keeps_the_last_processor_entry_of_an_apic_id() {
    // set_apicid_to_node() overwrites: of two entries for one APIC id, the later one wins.
    let o = run(&srat(&two_nodes(&[cpu(0, 3, true)])), &[]);
    assert_eq!(o.topology.nr_nodes(), 2);
    assert_eq!(o.topology.cpus[3].node, NodeId(0), "{:#?}", o.warnings);
    let w = o.warnings.join("\n");
    assert!(
        w.contains("SRAT entry 3 (processor APIC id 3, PXM 1) is overridden by entry 6 (PXM 0)"),
        "{w}"
    );
}

#[test]
fn linux_uses_the_localities_a_short_slit_has_and_defaults_the_rest() {
    // acpi_numa_slit_init sets the distances of localities below locality_count; the others
    // keep numa_alloc_distance's defaults, 10 to self and 20 to others.
    let t = srat(&[
        cpu(0, 0, true),
        cpu(1, 1, true),
        cpu(2, 2, true),
        cpu(2, 3, true),
        mem(0, 0, 256 * MIB, FLAG_ENABLED),
        mem(1, 256 * MIB, 256 * MIB, FLAG_ENABLED),
        mem(2, 512 * MIB, 512 * MIB, FLAG_ENABLED),
    ]);
    let l = slit(&[vec![10, 15], vec![15, 10]]);
    let o = run(&t, &[&l]);
    let t = &o.topology;
    assert_eq!(t.nr_nodes(), 3);
    assert_eq!(t.distance(NodeId(0), NodeId(1)), 15, "{:#?}", o.warnings);
    assert_eq!(t.distance(NodeId(0), NodeId(2)), 20);
    assert_eq!(t.distance(NodeId(2), NodeId(1)), 20);
    assert_eq!(t.distance(NodeId(2), NodeId(2)), 10);
    let w = o.warnings.join("\n");
    assert!(
        w.contains("SLIT: 2 localities") && w.contains("PXM 2"),
        "{w}"
    );
}
