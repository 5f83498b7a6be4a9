//! Host tests of `numa.rs`: valid machines, every bad-table case, and a never-panics fuzz.

use super::*;
use crate::acpi::madt::build::{local_apic, local_x2apic, madt};

use crate::acpi::sdt;
use crate::acpi::slit::build::slit;
use crate::acpi::srat::build::{cpu, mem, srat, x2cpu};
use crate::acpi::srat::{FLAG_ENABLED, MEM_HOTPLUGGABLE};

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
    run_in(ApicMode::X2Apic, boot, madts, srats, slits)
}

fn run_in(
    apic_mode: ApicMode,
    boot: u32,
    madts: &[&[u8]],
    srats: &[&[u8]],
    slits: &[&[u8]],
) -> Outcome {
    build(&Machine {
        boot_apic_id: boot,
        apic_mode,
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

fn one_warning(o: &Outcome, needles: &[&str]) {
    assert_eq!(o.warnings.len(), 1, "{:#?}", o.warnings);
    for n in needles {
        assert!(o.warnings[0].contains(n), "{:?} lacks {n:?}", o.warnings[0]);
    }
}

fn is_single_node(o: &Outcome, nr_cpus: usize) {
    let t = &o.topology;
    assert_eq!(t.nr_nodes(), 1);
    assert_eq!(t.nr_cpus(), nr_cpus);
    assert_eq!(t.nodes[0].mem_ranges, USABLE.to_vec());
}

fn madt8() -> Vec<u8> {
    qemu_4node().0
}

/// A SRAT over the test's RAM: CPUs 0-7 on PXMs by `pxm_of_cpu`, memory split by `mems`.
fn srat_with(pxm_of_cpu: impl Fn(u8) -> u32, mems: &[(u32, u64, u64, u32)]) -> Vec<u8> {
    let mut e: Vec<Vec<u8>> = (0..8u8).map(|i| cpu(pxm_of_cpu(i), i, true)).collect();
    e.extend(mems.iter().map(|&(p, b, l, f)| mem(p, b, l, f)));
    srat(&e)
}

#[test]
fn no_srat_is_one_node() {
    let o = run(0, &[&madt8()], &[], &[]);
    one_warning(&o, &["SRAT: no SRAT table", "single node"]);
    is_single_node(&o, 8);
}

#[test]
fn a_table_with_a_bad_checksum_is_used_with_a_warning_as_acpica_does() {
    // ACPICA's acpi_tb_verify_checksum only warns ("Incorrect checksum in table [SRAT]") and
    // Linux uses the table: the OEM id byte changed, every table still gives its machine.
    let (m, s, l) = qemu_4node();
    let good = run(0, &[&m], &[&s], &[&l]);
    assert!(good.warnings.is_empty(), "{:#?}", good.warnings);
    for (name, which) in [("MADT", 0), ("SRAT", 1), ("SLIT", 2)] {
        let mut t = [m.clone(), s.clone(), l.clone()];
        t[which][10] = t[which][10].wrapping_add(1);
        let stored = t[which][9];
        let o = run(0, &[&t[0]], &[&t[1]], &[&t[2]]);
        one_warning(
            &o,
            &[
                &format!("{name}: incorrect checksum {stored:#04x}, should be "),
                "sum to 0x01, not 0",
                "table used anyway, as ACPICA and Linux do",
            ],
        );
        assert_eq!(o.topology, good.topology, "{name}");
    }
}

#[test]
fn truncated_srat_is_one_node() {
    let (m, s, _) = qemu_4node();
    let o = run(0, &[&m], &[&s[..s.len() - 10]], &[]);
    one_warning(&o, &["SRAT: truncated table", "single node"]);
    is_single_node(&o, 8);
}

#[test]
fn truncated_entry_turns_numa_off_as_in_linux() {
    // A memory entry whose length byte says 24 (a memory entry needs 40): Linux's bad_srat()
    // (before it numalab dropped the entry and read on).
    let mut short = mem(1, 512 * MIB, 512 * MIB, FLAG_ENABLED);
    short.truncate(24);
    short[1] = 24;
    let mut e: Vec<Vec<u8>> = (0..8u8).map(|i| cpu(0, i, true)).collect();
    e.push(mem(0, 0, 2048 * MIB, FLAG_ENABLED));
    e.push(short);
    let o = run(0, &[&madt8()], &[&srat(&e)], &[]);
    one_warning(
        &o,
        &[
            "SRAT entry 9 (memory affinity): length 24, Linux needs at least 40",
            "single node",
        ],
    );
    is_single_node(&o, 8);
}

#[test]
fn entry_running_past_the_table_is_dropped() {
    let mut s = srat_with(
        |i| i as u32 / 4,
        &[(0, 0, 1024 * MIB, 1), (1, 1024 * MIB, 1024 * MIB, 1)],
    );
    // Make the last memory entry (entry 9) claim 60 bytes.
    let last = s.len() - 40;
    s[last + 1] = 60;
    sdt::fix_checksum(&mut s);
    let o = run(0, &[&madt8()], &[&s], &[]);
    assert!(o.warnings[0].contains("SRAT entry 9") && o.warnings[0].contains("runs past the end"));
    // Node 1 keeps its CPUs but lost its memory; its usable RAM is given to node 0's... home.
    assert_eq!(o.topology.nr_nodes(), 2);
    assert!(o.topology.is_memoryless(NodeId(1)));
    assert!(
        o.warnings[1].contains("in no memory affinity entry: given to node 0"),
        "{:?}",
        o.warnings
    );
}

#[test]
fn overlapping_ranges_between_nodes_turn_numa_off_as_in_linux() {
    let s = srat_with(
        |i| i as u32 / 4,
        &[(0, 0, 1280 * MIB, 1), (1, 1024 * MIB, 1024 * MIB, 1)],
    );
    let o = run(0, &[&madt8()], &[&s], &[]);
    assert!(
        o.warnings[0].contains("SRAT entry 9 (memory PXM 1")
            && o.warnings[0].contains("overlaps entry 8 of PXM 0")
            && o.warnings[0].contains("numa_cleanup_meminfo")
    );
    assert_eq!(o.warnings.len(), 1);
    is_single_node(&o, 8);
    // Same-domain overlaps are merged silently.
    let s = srat_with(
        |_| 0,
        &[(0, 0, 1280 * MIB, 1), (0, 1024 * MIB, 1024 * MIB, 1)],
    );
    assert!(run(0, &[&madt8()], &[&s], &[]).warnings.is_empty());
}

#[test]
fn ranges_outside_ram_are_dropped_unless_hotpluggable() {
    let s = srat_with(
        |i| i as u32 / 4,
        &[
            (0, 0, 1024 * MIB, 1),
            (1, 1024 * MIB, 1024 * MIB, 1),
            (1, 64 << 30, 1 << 30, 1),
            (1, 8 << 30, 8 << 30, FLAG_ENABLED | MEM_HOTPLUGGABLE),
            (1, u64::MAX - 5, 10, 1),
            (1, 4 << 30, 0, 1),
        ],
    );
    let o = run(0, &[&madt8()], &[&s], &[]);
    assert_eq!(o.warnings.len(), 3, "{:#?}", o.warnings);
    assert!(o.warnings[0].contains("SRAT entry 10") && o.warnings[0].contains("outside RAM"));
    assert!(o.warnings[1].contains("SRAT entry 12") && o.warnings[1].contains("overflows"));
    assert!(o.warnings[2].contains("SRAT entry 13") && o.warnings[2].contains("length 0"));
    assert_eq!(
        o.topology.nodes[1].mem_ranges,
        vec![(1024 * MIB, 0x7ffe0000)]
    );
}

#[test]
fn all_entries_disabled_is_one_node() {
    let mut e: Vec<Vec<u8>> = (0..8u8).map(|i| cpu(i as u32 / 2, i, false)).collect();
    e.push(mem(0, 0, 1024 * MIB, 0));
    e.push(mem(1, 1024 * MIB, 1024 * MIB, 0));
    let o = run(0, &[&madt8()], &[&srat(&e)], &[]);
    one_warning(
        &o,
        &[
            "SRAT: no enabled memory affinity entry covers usable RAM",
            "single node",
        ],
    );
    is_single_node(&o, 8);
}

#[test]
fn processor_entry_for_unknown_apic_is_dropped() {
    let mut e: Vec<Vec<u8>> = (0..8u8).map(|i| cpu(i as u32 / 4, i, true)).collect();
    e.push(cpu(1, 42, true));
    e.push(mem(0, 0, 1024 * MIB, 1));
    e.push(mem(1, 1024 * MIB, 1024 * MIB, 1));
    let o = run(0, &[&madt8()], &[&srat(&e)], &[]);
    one_warning(
        &o,
        &[
            "SRAT entries 8 (processor APIC ids 42)",
            "APIC id not in the MADT",
            "dropped",
        ],
    );
    assert_eq!(o.topology.nr_cpus(), 8);
}

#[test]
fn slit_problems() {
    let (m, s, _) = qemu_4node();
    let two = slit(&[vec![10, 20], vec![20, 10]]);
    let o = run(0, &[&m], &[&s], &[&two]);
    // Linux's acpi_numa_slit_init: the localities the SLIT has, 10/20 for the rest.
    one_warning(
        &o,
        &[
            "SLIT: 2 localities",
            "no row for PXM 2 3",
            "acpi_numa_slit_init",
        ],
    );
    assert_eq!(o.topology.distance(NodeId(3), NodeId(2)), 20);
    assert_eq!(o.topology.distance(NodeId(0), NodeId(1)), 20);
    let d = |self_d: u8, remote: u8, far: u8| -> Vec<Vec<u8>> {
        (0..4)
            .map(|i| {
                (0..4)
                    .map(|j| {
                        if i == j {
                            self_d
                        } else if i == 3 || j == 3 {
                            far
                        } else {
                            remote
                        }
                    })
                    .collect()
            })
            .collect()
    };
    let o = run(0, &[&m], &[&s], &[&slit(&d(11, 20, 20))]);
    one_warning(
        &o,
        &["SLIT entry [0][0]: self-distance 11", "default distances"],
    );
    let o = run(0, &[&m], &[&s], &[&slit(&d(10, 9, 20))]);
    one_warning(
        &o,
        &["SLIT entry [0][1]: remote distance 9", "default distances"],
    );
    let o = run(0, &[&m], &[&s], &[&slit(&d(10, 20, 255))]);
    one_warning(&o, &["distance 255 (unreachable): kept"]);
    assert_eq!(o.topology.distance(NodeId(0), NodeId(3)), 255);
    assert_eq!(
        o.topology.fallback_order(NodeId(0)),
        &[NodeId(0), NodeId(1), NodeId(2), NodeId(3)]
    );
    let mut asym = d(10, 20, 20);
    asym[0][3] = 30;
    let o = run(0, &[&m], &[&s], &[&slit(&asym)]);
    one_warning(
        &o,
        &["asymmetric distances [0][3]=30 [3][0]=20", "kept as given"],
    );
    assert_eq!(
        (
            o.topology.distance(NodeId(0), NodeId(3)),
            o.topology.distance(NodeId(3), NodeId(0))
        ),
        (30, 20)
    );
}

#[test]
fn sparse_proximity_domains_are_dense_nodes() {
    let pxm = [0u32, 7, 200];
    let s = srat_with(
        |i| pxm[(i as usize * 3) / 8],
        &[
            (200, 1536 * MIB, 512 * MIB, 1),
            (0, 0, 768 * MIB, 1),
            (7, 768 * MIB, 768 * MIB, 1),
        ],
    );
    let n = 201;
    let dist: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| {
                    if i == j {
                        10
                    } else if i.min(j) == 0 && i.max(j) == 7 {
                        17
                    } else {
                        30
                    }
                })
                .collect()
        })
        .collect();
    let o = run(0, &[&madt8()], &[&s], &[&slit(&dist)]);
    assert!(o.warnings.is_empty(), "{:#?}", o.warnings);
    let t = &o.topology;
    assert_eq!(
        t.nodes.iter().map(|n| n.pxm).collect::<Vec<_>>(),
        vec![0, 7, 200]
    );
    assert_eq!(t.nodes[2].mem_ranges, vec![(1536 * MIB, 0x7ffe0000)]);
    assert_eq!(
        t.nodes.iter().map(|n| n.cpus.len()).collect::<Vec<_>>(),
        vec![3, 3, 2]
    );
    assert_eq!(
        (
            t.distance(NodeId(0), NodeId(1)),
            t.distance(NodeId(1), NodeId(2))
        ),
        (17, 30)
    );
    let lines = t.numactl_lines(&|_| 0);
    assert_eq!(lines[0], "available: 3 nodes (0-2)");
    assert_eq!(lines[1], "node 0 cpus: 0 1 2");
}

#[test]
fn memoryless_and_cpuless_nodes() {
    // seeds.md: node 0 has CPUs 0-3 and no memory, node 1 CPUs 4-7 and all memory.
    let s = srat_with(
        |i| i as u32 / 4,
        &[(1, 0, 0xa0000, 1), (1, MIB, 2047 * MIB, 1)],
    );
    let o = run(
        0,
        &[&madt8()],
        &[&s],
        &[&slit(&[vec![10, 40], vec![40, 10]])],
    );
    assert!(o.warnings.is_empty(), "{:#?}", o.warnings);
    let t = &o.topology;
    assert!(t.is_memoryless(NodeId(0)) && !t.is_cpuless(NodeId(0)));
    assert_eq!(t.mem_node(NodeId(0)), NodeId(1));
    assert_eq!(t.numactl_lines(&|_| 0)[2], "node 0 size: 0 MB");
    // CPU-less node 2.
    let s = srat_with(
        |i| i as u32 / 4,
        &[
            (0, 0, 512 * MIB, 1),
            (1, 512 * MIB, 512 * MIB, 1),
            (2, 1024 * MIB, 1024 * MIB, 1),
        ],
    );
    let t = run(0, &[&madt8()], &[&s], &[]).topology;
    assert!(t.is_cpuless(NodeId(2)) && !t.is_memoryless(NodeId(2)));
    assert_eq!(t.numactl_lines(&|_| 0)[7], "node 2 cpus:");
}

#[test]
fn cpus_without_srat_entry_go_to_the_boot_cpus_memory_node() {
    let mut e: Vec<Vec<u8>> = (0..4u8).map(|i| cpu(0, i, true)).collect();
    e.push(mem(1, 0, 2048 * MIB, 1));
    let o = run(0, &[&madt8()], &[&srat(&e)], &[]);
    one_warning(
        &o,
        &["no processor affinity entry for APIC ids 4 5 6 7: placed on node 1"],
    );
    assert_eq!(
        o.topology.nodes[1].cpus,
        vec![CpuId(4), CpuId(5), CpuId(6), CpuId(7)]
    );
}

#[test]
fn boot_cpu_is_cpu_0_and_disabled_cpus_are_left_out_silently() {
    let m = madt(&[
        local_apic(0, 0, 1),
        local_apic(1, 1, 1),
        local_apic(2, 2, 1),
        local_apic(3, 3, 0),
        local_apic(4, 4, 2),
    ]);
    let o = run(2, &[&m], &[], &[]);
    assert_eq!(o.warnings.len(), 1, "{:#?}", o.warnings); // no SRAT
    let ids: Vec<u32> = o.topology.cpus.iter().map(|c| c.apic_id).collect();
    assert_eq!(ids, vec![2, 0, 1]);
    // SRAT entries for the disabled (hot-pluggable) processors 3 and 4: no warning.
    let s = srat(&[
        cpu(0, 0, true),
        cpu(0, 1, true),
        cpu(1, 2, true),
        cpu(0, 3, true),
        cpu(1, 4, true),
        mem(0, 0, 1 << 30, 1),
        mem(1, 1 << 30, 1 << 30, 1),
    ]);
    let o = run(2, &[&m], &[&s], &[]);
    assert!(o.warnings.is_empty(), "{:#?}", o.warnings);
    assert_eq!(
        o.topology.cpus.iter().map(|c| c.node.0).collect::<Vec<_>>(),
        vec![1, 0, 0]
    );
}

#[test]
fn two_srats_first_valid_wins() {
    let (m, s, _) = qemu_4node();
    let other = srat_with(|_| 5, &[(5, 0, 2048 * MIB, 1)]);
    let o = run(0, &[&m], &[&s, &other], &[]);
    one_warning(&o, &["SRAT: another SRAT (table 2 of 2) ignored"]);
    assert_eq!(o.topology.nr_nodes(), 4);
    // A first copy damaged beyond its checksum (a length that runs past its bytes) is
    // ignored for the second.
    let mut bad = s.clone();
    bad[4] = bad[4].wrapping_add(8);
    let o = run(0, &[&m], &[&bad[..], &other], &[]);
    one_warning(&o, &["SRAT: truncated table", "this table ignored"]);
    assert_eq!(o.topology.nodes[0].pxm, 5);
}

use crate::rng::Rng;

fn mutate(rng: &mut Rng, t: &[u8]) -> Vec<u8> {
    let mut v = t.to_vec();
    match rng.below(6) {
        0 => v.truncate(rng.below(v.len() as u64 + 1) as usize),
        1 => (0..1 + rng.below(8)).for_each(|_| {
            if !v.is_empty() {
                let i = rng.below(v.len() as u64) as usize;
                v[i] = rng.next_u64() as u8;
            }
        }),
        2 => {
            // a lying length field (table or an entry), checksum fixed so it is believed
            let i = if rng.below(2) == 0 {
                4
            } else {
                36 + rng.below(v.len().saturating_sub(36) as u64) as usize
            };
            if i < v.len() {
                v[i] = rng.next_u64() as u8;
            }
        }
        3 => (0..rng.below(64)).for_each(|_| v.push(rng.next_u64() as u8)),
        4 => {
            let i = rng.below(v.len() as u64) as usize;
            v.splice(i..i, (0..rng.below(48)).map(|_| rng.next_u64() as u8));
        }
        _ => v = (0..rng.below(300)).map(|_| rng.next_u64() as u8).collect(),
    }
    if rng.below(4) != 0 {
        sdt::fix_checksum(&mut v);
    }
    v
}

fn check_invariants(o: &Outcome, boot: u32) {
    let t = &o.topology;
    assert!(t.nr_nodes() >= 1 && t.nr_cpus() >= 1);
    assert_eq!(t.cpus[0].apic_id, boot);
    for (i, c) in t.cpus.iter().enumerate() {
        assert_eq!(c.cpu.index(), i);
        assert!(c.node.index() < t.nr_nodes());
    }
    for (i, n) in t.nodes.iter().enumerate() {
        assert_eq!(n.id.index(), i);
        let _ = t.mem_node(n.id);
        let _ = t.fallback_order(n.id);
    }
    let _ = t.numactl_lines(&|_| 0);
    let _ = o.warnings.iter().chain(o.dump.iter()).count();
    // Nothing lost: the nodes hold exactly the usable RAM, each byte once.
    let held: Vec<(u64, u64)> = t.nodes.iter().flat_map(|n| n.mem_ranges.clone()).collect();
    let bytes = |r: &[(u64, u64)]| r.iter().map(|(s, e)| e - s).sum::<u64>();
    assert_eq!(bytes(&held), bytes(USABLE), "{:#?}", o.warnings);
    assert_eq!(crate::memrange::normalize(&held), USABLE.to_vec());
}

#[test]
fn arbitrary_bytes_never_panic() {
    let (m, s, l) = qemu_4node();
    let sparse = srat_with(
        |i| [0u32, 7, 200][i as usize % 3],
        &[(0, 0, 1024 * MIB, 1), (200, 1024 * MIB, 1024 * MIB, 1)],
    );
    let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
    let (mut numa_outcomes, mut warned, mut entry_warnings) = (0u32, 0u32, 0u32);
    for round in 0..20_000 {
        let boot = rng.below(10) as u32;
        let pick = |rng: &mut Rng, base: &[u8]| -> Vec<Vec<u8>> {
            (0..rng.below(3))
                .map(|_| {
                    if rng.below(5) == 0 {
                        base.to_vec()
                    } else {
                        mutate(rng, base)
                    }
                })
                .collect()
        };
        let madts = pick(&mut rng, &m);
        let srats = pick(&mut rng, if round % 2 == 0 { &s } else { &sparse });
        let slits = pick(&mut rng, &l);
        let refs = |v: &[Vec<u8>]| v.iter().map(|t| t.to_vec()).collect::<Vec<_>>();
        let (madts, srats, slits) = (refs(&madts), refs(&srats), refs(&slits));
        let a: Vec<&[u8]> = madts.iter().map(|t| t.as_slice()).collect();
        let b: Vec<&[u8]> = srats.iter().map(|t| t.as_slice()).collect();
        let c: Vec<&[u8]> = slits.iter().map(|t| t.as_slice()).collect();
        let o = run(boot, &a, &b, &c);
        check_invariants(&o, boot);
        numa_outcomes += (o.topology.nr_nodes() > 1) as u32;
        warned += !o.warnings.is_empty() as u32;
        entry_warnings += o.warnings.iter().any(|w| w.contains(" entry ")) as u32;
    }
    // The mutations must reach deep: valid NUMA results, rejected tables, and bad entries.
    assert!(
        numa_outcomes > 1000 && warned > 1000 && entry_warnings > 500,
        "{numa_outcomes} {warned} {entry_warnings}"
    );
}

#[test]
fn claimed_merges_one_domain_and_refuses_overlap_with_another() {
    let mut c = Claimed::default();
    assert_eq!(c.claim(100, 200, 0, 1), None);
    assert_eq!(c.claim(150, 300, 0, 2), None); // same domain: merged into 100-300
    assert_eq!(c.claim(300, 400, 1, 3), None); // touching is not overlapping
    assert_eq!(c.claim(50, 101, 2, 4), Some((100, 300, 0, 1)));
    assert_eq!(c.claim(399, 500, 0, 5), Some((300, 400, 1, 3)));
    assert_eq!(c.claim(0, 100, 0, 6), None); // touching: a separate interval
    assert_eq!(c.claim(90, 120, 0, 7), None); // bridges 0-100 and 100-300
    assert_eq!(c.0.len(), 2);
    assert_eq!(c.0.get(&0), Some(&(300, 0, 1)));
}

/// Tables with 100000 MADT entries and 20000 memory ranges: lookups are maps, not scans, so
/// this finishes quickly (it is not timed; a quadratic walk would make it take minutes).
#[test]
fn huge_tables_are_handled() {
    let cpus: Vec<Vec<u8>> = (0..100_000u32)
        .map(|i| local_apic(0, (i % 256) as u8, 1))
        .collect();
    let m = madt(&cpus);
    let mut e: Vec<Vec<u8>> = (0..=255u8).map(|i| cpu(i as u32 % 4, i, true)).collect();
    e.extend((0..20_000u64).map(|i| mem((i % 4) as u32, i * 64 * 1024, 64 * 1024, 1)));
    let o = run(0, &[&m], &[&srat(&e)], &[]);
    // Ids 0..=255: 255 is the invalid xAPIC id, so 255 CPUs.
    assert_eq!(o.topology.nr_cpus(), 255);
    assert_eq!(o.topology.nr_nodes(), 4);
}

/// APIC id 0xff in a local APIC entry and 0xffffffff in a local x2APIC entry
/// are ACPI's "invalid" ids (Linux's acpi_parse_lapic / acpi_parse_x2apic ignore them): no
/// CPU, in the MADT or the SRAT, and a warning for each. x2APIC id 255 is a real CPU.
#[test]
fn invalid_apic_ids_are_not_cpus() {
    let m = madt(&[
        local_apic(0, 0, 1),
        local_apic(1, 0xff, 1),
        local_x2apic(u32::MAX, 1, 2),
        local_apic(3, 1, 1),
        local_x2apic(0xff, 1, 4),
    ]);
    let s = srat(&[
        cpu(0, 0, true),
        cpu(1, 0xff, true),
        x2cpu(1, u32::MAX, true),
        cpu(1, 1, true),
        x2cpu(1, 0xff, true),
        mem(0, 0, 1024 * MIB, 1),
        mem(1, 1024 * MIB, 1024 * MIB, 1),
    ]);
    let o = run_in(ApicMode::X2Apic, 0, &[&m], &[&s], &[]);
    let t = &o.topology;
    let cpus: Vec<(u32, u16)> = t.cpus.iter().map(|c| (c.apic_id, c.node.0)).collect();
    assert_eq!(cpus, vec![(0, 0), (1, 1), (255, 1)], "{:#?}", o.warnings);
    assert_eq!(o.warnings.len(), 4, "{:#?}", o.warnings);
    let want = [
        "MADT entry 1 (local APIC id 0xff)",
        "MADT entry 2 (local x2APIC id 0xffffffff)",
        "SRAT entry 1 (processor APIC id 0xff)",
        "SRAT entry 2 (processor x2APIC id 0xffffffff)",
    ];
    for (w, head) in o.warnings.iter().zip(want) {
        assert!(w.starts_with(head), "{w:?} does not start with {head:?}");
        assert!(
            w.contains("invalid APIC id") && w.ends_with("entry dropped"),
            "{w:?}"
        );
    }
    // Without a SRAT the MADT's invalid entries are still no CPUs.
    let o = run_in(ApicMode::XApic, 0, &[&m], &[], &[]);
    let ids: Vec<u32> = o.topology.cpus.iter().map(|c| c.apic_id).collect();
    assert_eq!(ids, vec![0, 1], "{:#?}", o.warnings);
}

/// In xAPIC mode an IPI to 255 is a broadcast and an id above 255 is cut to
/// its low 8 bits (another CPU): such CPUs are refused with a warning; x2APIC mode keeps them.
/// SRAT entries for a refused CPU are dropped without a second warning.
#[test]
fn xapic_mode_does_not_bring_up_ids_it_cannot_address() {
    let m = madt(&[
        local_apic(0, 0, 1),
        local_apic(1, 254, 1),
        local_x2apic(255, 1, 2),
        local_x2apic(300, 1, 3),
        local_x2apic(2, 1, 4),
    ]);
    let s = srat(&[
        cpu(0, 0, true),
        cpu(0, 254, true),
        x2cpu(1, 255, true),
        x2cpu(1, 300, true),
        x2cpu(1, 2, true),
        mem(0, 0, 1024 * MIB, 1),
        mem(1, 1024 * MIB, 1024 * MIB, 1),
    ]);
    let o = run_in(ApicMode::XApic, 0, &[&m], &[&s], &[]);
    let ids: Vec<u32> = o.topology.cpus.iter().map(|c| c.apic_id).collect();
    assert_eq!(ids, vec![0, 254, 2], "{:#?}", o.warnings);
    assert_eq!(o.warnings.len(), 2, "{:#?}", o.warnings);
    for (w, head) in o
        .warnings
        .iter()
        .zip(["MADT entry 2 (APIC id 255)", "MADT entry 3 (APIC id 300)"])
    {
        assert!(w.starts_with(head), "{w:?}");
        assert!(
            w.contains("xAPIC mode") && w.ends_with("CPU not brought up"),
            "{w:?}"
        );
    }
    let o = run_in(ApicMode::X2Apic, 0, &[&m], &[&s], &[]);
    assert!(o.warnings.is_empty(), "{:#?}", o.warnings);
    let ids: Vec<u32> = o.topology.cpus.iter().map(|c| c.apic_id).collect();
    assert_eq!(ids, vec![0, 254, 255, 300, 2]);
}

/// A SRAT with `n` proximity domains: PXM p holds 512 KiB at 1 GiB + p * 512 KiB; PXM 0 also
/// holds [0, 1 GiB) and the rest of RAM. CPUs 0-6 are in PXMs 0-3, CPU 7 in `cpu7_pxm`.
fn many_domains(n: u32, cpu7_pxm: u32) -> Vec<u8> {
    let mut e: Vec<Vec<u8>> = (0..8u8)
        .map(|i| cpu(if i == 7 { cpu7_pxm } else { i as u32 % 4 }, i, true))
        .collect();
    e.push(mem(0, 0, 1024 * MIB, 1));
    let end = 1024 * MIB + n as u64 * 512 * 1024;
    e.extend((0..n).map(|p| mem(p, 1024 * MIB + p as u64 * 512 * 1024, 512 * 1024, 1)));
    e.push(mem(0, end, 2048 * MIB - end, 1));
    srat(&e)
}

/// An early version gave the RAM of domains past 1024 to kept nodes; numalab follows Linux:
/// a domain at or past MAX_PXM_DOMAINS (1024) makes the whole SRAT bad (`bad_srat()`), and
/// all RAM and CPUs are one node's, none lost.
#[test]
fn domains_past_1024_make_the_srat_bad_as_in_linux() {
    let s = many_domains(1100, 1050);
    let o = run(0, &[&madt8()], &[&s], &[]);
    check_invariants(&o, 0);
    one_warning(
        &o,
        &[
            "PXM 1050 is at or past MAX_PXM_DOMAINS (1024)",
            "single node",
        ],
    );
    is_single_node(&o, 8);
}

/// A 1023-node SLIT whose every pair is asymmetric gave one warning of 15 MB (522753
/// pairs listed). Lists in a warning are capped: the first few, then "... and K more".
#[test]
fn asymmetric_1023_node_slit_gives_a_short_warning() {
    let n = 1023usize;
    let s = many_domains(n as u32, 0);
    let d: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| [10, 20, 30][(j > i) as usize + 2 * (j < i) as usize])
                .collect()
        })
        .collect();
    let o = run(0, &[&madt8()], &[&s], &[&slit(&d)]);
    check_invariants(&o, 0);
    assert_eq!(o.topology.nr_nodes(), n);
    assert_eq!(o.topology.distance(NodeId(1), NodeId(0)), 30);
    let total: usize = o.warnings.iter().map(|w| w.len()).sum();
    assert!(total < 2048, "{total} bytes of warnings");
    one_warning(
        &o,
        &[
            "SLIT: asymmetric distances [0][1]=20 [1][0]=30, ",
            "and 522737 more",
        ],
    );
}

/// Each table gives a bounded number of warning lines, however many bad entries it
/// has (here 1000 duplicate MADT processors and 1000 zero-length SRAT memory entries).
#[test]
fn warning_lines_are_capped_per_table() {
    let mut cpus: Vec<Vec<u8>> = (0..8).map(|i| local_apic(i, i, 1)).collect();
    cpus.extend((0..1000).map(|_| local_apic(9, 3, 1)));
    let m = madt(&cpus);
    let mut e: Vec<Vec<u8>> = (0..8u8).map(|i| cpu(0, i, true)).collect();
    e.push(mem(0, 0, 2048 * MIB, 1));
    e.extend((0..1000).map(|_| mem(1, 0, 0, 1)));
    let o = run(0, &[&m], &[&srat(&e)], &[]);
    check_invariants(&o, 0);
    assert_eq!(o.topology.nr_cpus(), 8);
    let of = |table: &str| o.warnings.iter().filter(|w| w.starts_with(table)).count();
    assert!(of("MADT") <= 33 && of("SRAT") <= 33, "{:#?}", o.warnings);
    for table in ["MADT", "SRAT"] {
        let last = o
            .warnings
            .iter()
            .rev()
            .find(|w| w.starts_with(table))
            .unwrap();
        assert!(last.contains("more warnings not shown"), "{last:?}");
    }
    assert!(
        o.warnings
            .iter()
            .any(|w| w.contains("MADT: 968 more warnings")),
        "{:#?}",
        o.warnings
    );
}
