//! Machine descriptions written with the algo crate's table and text builders, for the tests
//! (boot's unit tests, tests/s06_replay.rs) and the worked example of docs/replay.md:
//! `cargo test -q -p numalab-boot write_samples` leaves them in target/replay/samples/.
//!
//! - [`four_socket`]: a 4-socket, 8-domain server as its firmware might describe it: domains
//!   2, 3, 6, 7, 10, 11, 14, 15 (sparse, starting above 0) in a 16-locality SLIT (the other
//!   localities are phantoms), the second domain of sockets 1 and 3 memoryless, 4 CPUs per
//!   domain with APIC ids `socket * 16 + domain * 4 + core`, sockets 2 and 3 as x2APIC
//!   entries, disabled placeholder processors (APIC ids 0, 0xff, 0xffffffff), an I/O APIC
//!   and a reserved MADT entry type; disabled SRAT processor entries with the same
//!   placeholder ids in domain 0 and disabled zero-length memory entries.
//! - [`eight_node_numactl`]: `numactl -H` of an 8-node, 64-CPU box (two sockets of four
//!   sub-NUMA clusters, hyperthread siblings numbered 32 above their cores).

use numalab_algo::acpi::dump_text;
use numalab_algo::acpi::madt::build::{local_apic, local_x2apic, madt};
use numalab_algo::acpi::slit::build::slit;
use numalab_algo::acpi::srat::build::{cpu, mem, srat, x2cpu};
use numalab_algo::acpi::srat::FLAG_ENABLED;
use numalab_algo::formats::numactl::{Numactl, NumactlNode};
use std::path::Path;

const GIB: u64 = 1 << 30;

/// The proximity domain of `socket`'s domain `k` (0 or 1).
pub fn four_socket_pxm(socket: u32, k: u32) -> u32 {
    4 * socket + 2 + k
}

/// Whether the domain holds memory (the second domain of sockets 1 and 3 does not).
pub fn four_socket_has_memory(socket: u32, k: u32) -> bool {
    !(k == 1 && socket % 2 == 1)
}

/// SLIT distance between localities `a` and `b` of [`four_socket`] (phantoms: 40).
pub fn four_socket_distance(a: usize, b: usize) -> u8 {
    let real = |p: usize| p % 4 >= 2;
    if a == b {
        10
    } else if !real(a) || !real(b) {
        40
    } else if a / 4 == b / 4 {
        12
    } else if (a / 4).abs_diff(b / 4) == 2 {
        32
    } else {
        21
    }
}

/// MADT, SRAT and SLIT of the 4-socket machine.
pub fn four_socket() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let mut m = Vec::new();
    let mut s = Vec::new();
    let mut uid = 0u32;
    for socket in 0..4u32 {
        for k in 0..2u32 {
            for core in 0..4u32 {
                let apic = socket * 16 + k * 4 + core;
                if socket < 2 {
                    m.push(local_apic(uid as u8, apic as u8, 1));
                    s.push(cpu(four_socket_pxm(socket, k), apic as u8, true));
                } else {
                    m.push(local_x2apic(apic, 1, uid));
                    s.push(x2cpu(four_socket_pxm(socket, k), apic, true));
                }
                uid += 1;
            }
        }
    }
    // Placeholders for absent sockets, as firmware writes them.
    m.push(local_apic(200, 0xff, 0));
    m.push(local_apic(201, 0, 0));
    m.push(local_x2apic(u32::MAX, 0, 202));
    m.push(vec![1, 12, 8, 0, 0, 0, 0xc0, 0xfe, 0, 0, 0, 0]); // I/O APIC
    m.push(vec![0x7f, 6, 1, 2, 3, 4]); // reserved type: skipped by its length
                                       // Memory: 4 GiB per domain with memory; the first below 4 GiB, the rest above.
    let mut base = 4 * GIB;
    for socket in 0..4u32 {
        for k in 0..2u32 {
            if !four_socket_has_memory(socket, k) {
                continue;
            }
            let pxm = four_socket_pxm(socket, k);
            if base == 4 * GIB && socket == 0 && k == 0 {
                s.push(mem(pxm, 0, 0xa0000, FLAG_ENABLED));
                s.push(mem(pxm, 0x10_0000, 2 * GIB - 0x10_0000, FLAG_ENABLED));
                s.push(mem(pxm, base, 2 * GIB, FLAG_ENABLED));
                base += 2 * GIB;
            } else {
                s.push(mem(pxm, base, 4 * GIB, FLAG_ENABLED));
                base += 4 * GIB;
            }
        }
    }
    s.push(cpu(0, 0, false));
    s.push(cpu(0, 0xff, false));
    s.push(x2cpu(0, u32::MAX, false));
    s.push(mem(0, 0, 0, 0));
    s.push(mem(0, 0, 0, 0));
    let matrix: Vec<Vec<u8>> = (0..16)
        .map(|a| (0..16).map(|b| four_socket_distance(a, b)).collect())
        .collect();
    (madt(&m), srat(&s), slit(&matrix))
}

/// The CPUs of node `node` of the 4-socket machine (nodes by increasing PXM, CPUs numbered
/// in MADT order, the boot CPU first).
pub fn four_socket_cpus_of_node(node: usize) -> Vec<u32> {
    (node as u32 * 4..node as u32 * 4 + 4).collect()
}

/// The 8-node, 64-CPU machine's `numactl -H`.
pub fn eight_node_numactl() -> Numactl {
    let nodes = (0..8u32)
        .map(|n| NumactlNode {
            id: n,
            cpus: (4 * n..4 * n + 4)
                .chain(32 + 4 * n..32 + 4 * n + 4)
                .collect(),
            size_mib: 64326 - n as u64 * 3,
            free_mib: 60000 + n as u64 * 100,
        })
        .collect();
    let distances = (0..8)
        .map(|i: usize| {
            (0..8)
                .map(|j: usize| {
                    if i == j {
                        10
                    } else if i / 4 == j / 4 {
                        12
                    } else {
                        21
                    }
                })
                .collect()
        })
        .collect();
    Numactl { nodes, distances }
}

/// Writes the 4-socket machine as `acpidump -b` would (`dir/apic.dat`, `srat.dat`, `slit.dat`).
pub fn write_four_socket_dir(dir: &Path) -> std::io::Result<()> {
    let (m, s, l) = four_socket();
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("apic.dat"), m)?;
    std::fs::write(dir.join("srat.dat"), s)?;
    std::fs::write(dir.join("slit.dat"), l)
}

/// The 4-socket machine as plain `acpidump` text (with a DSDT-like table that is ignored).
pub fn four_socket_acpidump_text() -> String {
    let (m, s, l) = four_socket();
    let mut t = String::from("Firmware Warning (ACPI): made-up banner\n\n");
    t.push_str(&dump_text::write_table("APIC", 0x7ffe_1000, &m));
    t.push_str(&dump_text::write_table(
        "DSDT",
        0x7ffe_0000,
        &numalab_algo::acpi::sdt::build_table(b"DSDT", 2, &[0x10; 40]),
    ));
    t.push_str(&dump_text::write_table("SRAT", 0x7ffe_2000, &s));
    t.push_str(&dump_text::write_table("SLIT", 0x7ffe_3000, &l));
    t
}

/// Writes every sample under `dir`: `four-socket/` (binary tables), `four-socket.acpidump`,
/// `eight-node.numactl`.
pub fn write_all(dir: &Path) -> std::io::Result<()> {
    write_four_socket_dir(&dir.join("four-socket"))?;
    std::fs::write(
        dir.join("four-socket.acpidump"),
        four_socket_acpidump_text(),
    )?;
    std::fs::write(dir.join("eight-node.numactl"), eight_node_numactl().text())
}

#[cfg(test)]
mod tests {
    #[test]
    fn write_samples() {
        let dir = crate::build::image::repo_root().join("target/replay/samples");
        super::write_all(&dir).unwrap();
        assert!(dir.join("four-socket/srat.dat").exists());
    }
}
