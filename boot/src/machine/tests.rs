//! Host tests of the machine readers: every source kind, every messy-table case
//! with its documented outcome (docs/replay.md), and sources that cannot be used.

use super::samples::{self, four_socket, four_socket_cpus_of_node};
use super::*;
use numalab_algo::acpi::madt::build::{local_apic, madt};
use numalab_algo::acpi::sdt;
use numalab_algo::acpi::slit::build::slit;
use numalab_algo::acpi::srat::build::{cpu, mem, srat};
use numalab_algo::acpi::srat::FLAG_ENABLED;

const MIB: u64 = 1 << 20;

/// A fresh directory under the system's temporary directory.
fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("numalab-machine-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes `files` into a fresh directory and loads it.
fn load_dir(name: &str, files: &[(&str, &[u8])]) -> Result<Machine, SourceError> {
    let d = tmp(name);
    for (f, bytes) in files {
        std::fs::write(d.join(f), bytes).unwrap();
    }
    load(&d)
}

fn table_warnings(m: &Machine) -> Vec<&String> {
    m.warnings.iter().collect()
}

fn cpus(m: &Machine) -> Vec<Vec<u32>> {
    m.nodes.iter().map(|n| n.cpus.clone()).collect()
}

#[test]
fn four_socket_dir_is_linux_view() {
    let (a, s, l) = four_socket();
    let m = load_dir(
        "4s",
        &[("apic.dat", &a), ("srat.dat", &s), ("slit.dat", &l)],
    )
    .unwrap();
    let pxms: Vec<u32> = m.nodes.iter().map(|n| n.pxm).collect();
    assert_eq!(pxms, vec![2, 3, 6, 7, 10, 11, 14, 15]);
    for (i, n) in m.nodes.iter().enumerate() {
        assert_eq!(n.cpus, four_socket_cpus_of_node(i), "node {i}");
    }
    let sizes: Vec<u64> = m.nodes.iter().map(|n| n.size_mib).collect();
    assert_eq!(sizes, vec![4095, 4096, 4096, 0, 4096, 4096, 4096, 0]);
    assert_eq!(m.nodes[1].apic_ids, Some(vec![4, 5, 6, 7]));
    assert_eq!(m.nodes[6].apic_ids, Some(vec![48, 49, 50, 51]));
    // Phantom localities are skipped: node distances come from the domains' rows.
    assert_eq!(m.distances[0], vec![10, 12, 21, 21, 32, 32, 21, 21]);
    let (n, matrix) = m.slit.clone().unwrap();
    assert_eq!((n, matrix[16 * 2 + 3]), (16, 12));
    // Placeholders, the I/O APIC and the reserved entry type raise no warning.
    assert!(table_warnings(&m).is_empty(), "{:#?}", m.warnings);
    assert_eq!(m.notes.len(), 1, "{:#?}", m.notes);
    assert!(m.notes[0].contains("SLIT localities 0-1,4-5,8-9,12-13 have no CPU or memory"));
    let report = m.report();
    assert_eq!(report[0], "available: 8 nodes (0-7)");
    assert!(report.contains(&"node 3 size: 0 MB".to_string()));
    assert!(report.iter().any(|l| l
        == "# node 0: PXM 2, APIC ids 0-3, memory 0x0-0xa0000 0x100000-0x80000000 \
            0x100000000-0x180000000 (4095 MiB)"));
    assert!(report
        .iter()
        .any(|l| l.starts_with("# node 3: PXM 7, memoryless, APIC ids 20-23, no memory")));
}

#[test]
fn sysfs_names_and_acpidump_text_give_the_same_machine() {
    let (a, s, l) = four_socket();
    let dir = load_dir(
        "4s-dir",
        &[("apic.dat", &a), ("srat.dat", &s), ("slit.dat", &l)],
    )
    .unwrap();
    let sys = load_dir(
        "4s-sys",
        &[("APIC", &a), ("SRAT", &s), ("SLIT", &l), ("DSDT", b"x")],
    )
    .unwrap();
    let d = tmp("4s-text");
    let f = d.join("acpidump.txt");
    std::fs::write(&f, samples::four_socket_acpidump_text()).unwrap();
    let text = load(&f).unwrap();
    for other in [&sys, &text] {
        assert_eq!(other.nodes, dir.nodes);
        assert_eq!(other.distances, dir.distances);
        assert_eq!(other.slit, dir.slit);
    }
    assert_eq!(text.what, "acpidump text: APIC SRAT SLIT");
}

#[test]
fn numactl_text_keeps_nodes_cpus_and_distances() {
    let d = tmp("numactl");
    let f = d.join("numactl.txt");
    let h = samples::eight_node_numactl();
    std::fs::write(&f, format!("$ numactl -H\n{}", h.text())).unwrap();
    let m = load(&f).unwrap();
    assert_eq!(m.numactl(), h);
    assert_eq!(m.report()[..h.lines().len()], h.lines()[..]);
    assert!(m.report().contains(
        &"# node 2: replayed as PXM 2, 64320 MiB (a numactl text has no proximity domains, APIC ids or memory ranges)"
            .to_string()
    ));
    // Sparse node ids: the SLIT by domain has default rows for the missing ones.
    let sparse = h
        .text()
        .replace("available: 8 nodes (0-7)", "available: 8 nodes (0-6,9)");
    let sparse = sparse
        .replace("node 7 ", "node 9 ")
        .replace(
            "node   0   1   2   3   4   5   6   7",
            "node   0   1   2   3   4   5   6   9",
        )
        .replace("  7:  21", "  9:  21");
    std::fs::write(&f, sparse).unwrap();
    let m = load(&f).unwrap();
    let (n, matrix) = m.slit.clone().unwrap();
    assert_eq!(n, 10);
    assert_eq!(
        (matrix[9 * 10 + 4], matrix[7 * 10 + 7], matrix[7 * 10 + 1]),
        (12, 10, 20)
    );
    assert!(m.notes[0].contains("node ids 0-6,9 are sparse"));
}

/// A 2-node machine: CPUs 0-1 on PXM 0, 2-3 on PXM 1, 512 MiB each.
fn small(srat_entries: &[Vec<u8>]) -> (Vec<u8>, Vec<u8>) {
    let a = madt(&(0..4).map(|i| local_apic(i, i, 1)).collect::<Vec<_>>());
    (a, srat(srat_entries))
}

fn two_nodes() -> Vec<Vec<u8>> {
    vec![
        cpu(0, 0, true),
        cpu(0, 1, true),
        cpu(1, 2, true),
        cpu(1, 3, true),
        mem(0, 0, 512 * MIB, FLAG_ENABLED),
        mem(1, 512 * MIB, 512 * MIB, FLAG_ENABLED),
    ]
}

#[test]
fn slit_larger_than_its_locality_count_is_read_to_its_count() {
    let (a, s) = small(&two_nodes());
    let mut l = slit(&[vec![10, 17], vec![17, 10]]);
    l.extend_from_slice(&[99; 5]);
    let len = l.len() as u32;
    l[4..8].copy_from_slice(&len.to_le_bytes());
    sdt::fix_checksum(&mut l);
    let m = load_dir(
        "bigslit",
        &[("apic.dat", &a), ("srat.dat", &s), ("slit.dat", &l)],
    )
    .unwrap();
    assert_eq!(m.distances, vec![vec![10, 17], vec![17, 10]]);
    assert_eq!(
        table_warnings(&m),
        vec!["SLIT: 5 bytes after the 2x2 matrix: ignored"]
    );
}

/// Linux's acpi_parse_entries_array stops at a zero-length entry with -EINVAL
/// ("Invalid zero length"), which fails the ACPI NUMA init: one node, wherever the entry is
/// (numalab used to keep the entries before it).
#[test]
fn zero_length_srat_entry_turns_numa_off_as_in_linux() {
    for at in [2, 6] {
        let mut e = two_nodes();
        e.insert(at, vec![0, 0]); // type 0, length 0
        let (a, s) = small(&e);
        let m = load_dir("zerolen", &[("apic.dat", &a), ("srat.dat", &s)]).unwrap();
        let w = table_warnings(&m);
        assert!(
            w[0].contains(&format!("SRAT entry {at} at offset"))
                && w[0].contains("length 0 (Linux's acpi_parse_entries_array")
                && w[0].contains("single node"),
            "{w:#?}"
        );
        assert_eq!(cpus(&m), vec![vec![0, 1, 2, 3]]);
    }
}

#[test]
fn revision_1_srat_reads_8_bit_domains() {
    let mut e = two_nodes();
    e[2] = cpu(0x0101, 2, true);
    e[3] = cpu(0x0101, 3, true);
    let (a, mut s) = small(&e);
    s[8] = 1;
    sdt::fix_checksum(&mut s);
    let m = load_dir("rev1", &[("apic.dat", &a), ("srat.dat", &s)]).unwrap();
    assert_eq!(cpus(&m), vec![vec![0, 1], vec![2, 3]]);
    assert_eq!(m.nodes[1].pxm, 1);
}

#[test]
fn several_copies_first_valid_is_used() {
    let (a, s) = small(&two_nodes());
    let mut bad = s.clone();
    bad[20] ^= 1;
    let one = srat(&[cpu(0, 0, true), mem(0, 0, MIB * 1024, FLAG_ENABLED)]);
    let m = load_dir(
        "copies",
        &[
            ("apic.dat", &a),
            ("srat.dat", &bad),
            ("srat1.dat", &s),
            ("srat2.dat", &one),
        ],
    )
    .unwrap();
    assert_eq!(cpus(&m), vec![vec![0, 1], vec![2, 3]]);
    let w = table_warnings(&m);
    assert!(
        w.iter()
            .any(|l| l.contains("SRAT: another SRAT (table 3 of 3) ignored")),
        "{w:#?}"
    );
    // The first copy's bad checksum is warned about and the copy is used.
    assert!(
        w.iter().any(|l| l.starts_with("SRAT: incorrect checksum")),
        "{w:#?}"
    );
}

#[test]
fn boot_cpu_is_the_first_madt_entry_whatever_its_id() {
    let a = madt(&[
        local_apic(0, 6, 1),
        local_apic(1, 0, 1),
        local_apic(2, 2, 1),
        local_apic(3, 4, 1),
    ]);
    let s = srat(&[
        cpu(0, 0, true),
        cpu(0, 2, true),
        cpu(1, 4, true),
        cpu(1, 6, true),
        mem(0, 0, 512 * MIB, FLAG_ENABLED),
        mem(1, 512 * MIB, 512 * MIB, FLAG_ENABLED),
    ]);
    let m = load_dir("boot6", &[("apic.dat", &a), ("srat.dat", &s)]).unwrap();
    // CPU 0 is APIC id 6 (node 1); CPUs 1 and 2 are APIC ids 0 and 2 (node 0).
    assert_eq!(cpus(&m), vec![vec![1, 2], vec![0, 3]]);
    assert_eq!(m.nodes[1].apic_ids, Some(vec![6, 4]));
}

#[test]
fn cpus_missing_from_the_srat_go_to_the_boot_cpus_nearest_memory_node() {
    let mut e = two_nodes();
    e.remove(3);
    let (a, s) = small(&e);
    let m = load_dir("nosrat-cpu", &[("apic.dat", &a), ("srat.dat", &s)]).unwrap();
    assert_eq!(cpus(&m), vec![vec![0, 1, 3], vec![2]]);
    assert!(table_warnings(&m)[0]
        .contains("no processor affinity entry for APIC ids 3: placed on node 0"));
}

#[test]
fn hotpluggable_ranges_are_noted_and_linux_order_explained() {
    let mut e = vec![
        cpu(5, 0, true),
        cpu(5, 1, true),
        cpu(1, 2, true),
        cpu(1, 3, true),
    ];
    e.push(mem(1, 0, 512 * MIB, FLAG_ENABLED));
    e.push(mem(5, 512 * MIB, 512 * MIB, FLAG_ENABLED));
    e.push(mem(5, 1 << 40, 1 << 32, FLAG_ENABLED | 2));
    let (a, s) = small(&e);
    let m = load_dir("hot", &[("apic.dat", &a), ("srat.dat", &s)]).unwrap();
    assert_eq!(cpus(&m), vec![vec![2, 3], vec![0, 1]]);
    let notes = &m.notes;
    assert!(notes[0].contains("1 hot-pluggable SRAT memory ranges (4096 MiB) not counted"));
    assert!(
        notes[1].contains("PXM 5 1;") && notes[1].contains("Linux's node 1 0"),
        "{notes:#?}"
    );
}

#[test]
fn no_srat_is_one_node_and_the_replay_gives_it_all_memory() {
    let (a, _) = small(&[]);
    let m = load_dir("nosrat", &[("APIC", &a)]).unwrap();
    assert_eq!(cpus(&m), vec![vec![0, 1, 2, 3]]);
    assert!(table_warnings(&m)[0].contains("SRAT: no SRAT table"));
    let p = scale::plan(&m, None, Some(256), 0).unwrap();
    assert_eq!(p.nodes[0].mem_mib, 256);
}

/// The one-line error for a source, checked to name `file` and say `problem`.
fn fails(r: Result<Machine, SourceError>, file: &Path, problem: &str) {
    let e = r.unwrap_err();
    let line = e.to_string();
    assert!(!line.contains('\n'), "{line}");
    assert_eq!(e.file, file, "{line}");
    assert!(line.contains(problem), "{line}");
}

#[test]
fn unusable_sources_are_one_error_naming_the_file() {
    let d = tmp("bad");
    fails(
        load(&d.join("missing")),
        &d.join("missing"),
        "No such file or directory",
    );
    fails(load(&d), &d, "no MADT file (apic.dat");
    let (a, s) = small(&two_nodes());
    let mut bad = a.clone();
    bad[0] = b'X';
    std::fs::write(d.join("apic.dat"), &bad).unwrap();
    std::fs::write(d.join("srat.dat"), &s).unwrap();
    fails(load(&d), &d.join("apic.dat"), "no usable MADT (");
    std::fs::write(d.join("apic.dat"), madt(&[local_apic(0, 0, 0)])).unwrap();
    fails(load(&d), &d, "no enabled processor entry");
    std::fs::remove_file(d.join("apic.dat")).unwrap();
    std::fs::create_dir(d.join("apic.dat")).unwrap();
    fails(load(&d), &d.join("apic.dat"), "not a regular file");
    let f = d.join("binary");
    // (ff fe 00 01, this test's bytes once, is now read as UTF-16LE text: "Ā".)
    std::fs::write(&f, b"SRAT\0\x01\xff\xfe").unwrap();
    fails(load(&f), &f, "not text (a binary file)");
    std::fs::write(&f, "hello\nworld\n").unwrap();
    fails(load(&f), &f, "neither a numactl -H text");
    std::fs::write(&f, "available: 2 nodes (0-1)\nnode 0 cpus: 0\n").unwrap();
    fails(
        load(&f),
        &f,
        "line 2: the text ends before 'node distances:'",
    );
    std::fs::write(&f, "SRAT @ 0x0\n  0000: 53 52 zz\n").unwrap();
    fails(
        load(&f),
        &f,
        "line 2 in table SRAT (header on line 1): expected two hex digits",
    );
    std::fs::write(&f, "SRAT @ 0x0\n  0000: 53 52\n").unwrap();
    fails(
        load(&f),
        &f,
        "line 1: table SRAT is cut short: its hex rows hold 2 bytes",
    );
    std::fs::write(&f, "SLIT @ 0x0\n  0000: 53 4C 49 54 08 00 00 00\n").unwrap();
    fails(load(&f), &f, "no APIC (MADT) table");
    let big = std::fs::File::create(&f).unwrap();
    big.set_len(MAX_FILE_BYTES + 1).unwrap();
    fails(load(&f), &f, "more than the 64 MiB");
    let cpuless = samples::eight_node_numactl()
        .text()
        .lines()
        .map(|l| {
            if l.contains("cpus:") {
                format!("{}:", l.split(':').next().unwrap())
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&f, cpuless).unwrap();
    fails(load(&f), &f, "no node lists a CPU");
}

#[test]
fn hostile_tables_never_panic() {
    // Cut, flipped and re-checksummed copies of the 4-socket tables: every load ends in a
    // machine or one error.
    let (a, s, l) = four_socket();
    let d = tmp("fuzz");
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for round in 0..300 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let mut t = [a.clone(), s.clone(), l.clone()];
        let which = (seed % 3) as usize;
        let pos = (seed >> 8) as usize % t[which].len();
        if round % 3 == 0 {
            t[which].truncate(pos);
        } else {
            t[which][pos] = (seed >> 32) as u8;
            sdt::fix_checksum(&mut t[which]);
        }
        for (name, bytes) in ["apic.dat", "srat.dat", "slit.dat"].iter().zip(&t) {
            std::fs::write(d.join(name), bytes).unwrap();
        }
        if let Ok(m) = load(&d) {
            let _ = m.report();
            let _ = scale::plan(&m, Some(8), Some(512), 0);
        }
    }
}
