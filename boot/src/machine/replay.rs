//! Booting a replayed machine and checking it: QEMU gets `-smp N -m M` without `-numa` (so
//! QEMU writes no SRAT or SLIT of its own) plus a SRAT and a SLIT written here and injected
//! with `-acpitable`. The SRAT uses the source's proximity domains (sparse or above 0 stay
//! so), puts QEMU's CPU k (APIC id k, the booted kernel's CPU k) in the domain of replayed
//! CPU k, and tiles QEMU's RAM with each node's memory in node order; the SLIT is the
//! source's, indexed by proximity domain, phantom localities included (up to the largest
//! domain that is a node). The kernel then builds the nodes from these tables as it would
//! from the real machine's.
//!
//! The check: the kernel's printed `numactl -H` against the plan: node count, each node's
//! CPUs and every distance exactly; each size at most what the node was given and at least
//! that minus what firmware and the kernel keep (docs/topology.md: up to
//! [`LOW_NODE_SLACK_MIB`] on the node holding address 0, [`SLACK_MIB`] elsewhere).

use super::scale::{self, Plan};
use numalab_algo::acpi::slit::build::slit;
use numalab_algo::acpi::srat::build::{cpu, mem, srat};
use numalab_algo::acpi::srat::FLAG_ENABLED;
use numalab_algo::formats::numactl::{self, Numactl, NumactlNode};
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;
pub use super::scale::QEMU_MAX_TABLE_BYTES;
/// MiB the node holding physical address 0 may lose (real-mode area, bootloader, kernel).
pub const LOW_NODE_SLACK_MIB: u64 = 32;
/// MiB any other node may lose (ACPI tables at the top of low RAM).
pub const SLACK_MIB: u64 = 2;

/// How much of a node's memory firmware and the kernel may keep: BIOS boots lose at most
/// the documented slack; OVMF (UEFI) keeps an amount that varies with the machine, so there
/// sizes are only checked not to exceed what the node was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slack {
    pub low_node_mib: u64,
    pub other_mib: u64,
}

impl Slack {
    pub fn for_firmware(firmware: crate::build::image::Firmware) -> Slack {
        match firmware {
            crate::build::image::Firmware::Bios => Slack {
                low_node_mib: LOW_NODE_SLACK_MIB,
                other_mib: SLACK_MIB,
            },
            crate::build::image::Firmware::Uefi => Slack {
                low_node_mib: u64::MAX,
                other_mib: u64::MAX,
            },
        }
    }
}
/// QEMU's pc machine puts RAM of 3.5 GiB or more above 3 GiB at 4 GiB (gigabyte-aligned split).
const PC_SPLIT_FROM: u64 = 0xe000_0000;
const PC_LOW_RAM: u64 = 0xc000_0000;
const FOUR_GIB: u64 = 1 << 32;

/// Each node's physical ranges in QEMU's RAM of `plan.mem_mib` MiB: node after node from
/// address 0, split around the PCI hole as QEMU's pc machine splits RAM.
pub fn layout(plan: &Plan) -> Vec<Vec<(u64, u64)>> {
    let total = plan.mem_mib * MIB;
    let low = if total >= PC_SPLIT_FROM {
        PC_LOW_RAM
    } else {
        total
    };
    let phys = |o: u64| if o < low { o } else { FOUR_GIB + (o - low) };
    let mut offset = 0u64;
    plan.nodes
        .iter()
        .map(|n| {
            let (s, e) = (offset, offset + n.mem_mib * MIB);
            offset = e;
            let mut r = Vec::new();
            if s < e && s < low {
                r.push((s, e.min(low)));
            }
            if s < e && e > low {
                r.push((phys(s.max(low)), phys(e)));
            }
            r
        })
        .collect()
}

/// The SRAT of the replayed machine.
pub fn srat_bytes(plan: &Plan) -> Vec<u8> {
    let mut entries = Vec::new();
    for n in &plan.nodes {
        for &c in &n.cpus {
            entries.push(cpu(n.pxm, c as u8, true));
        }
    }
    for (n, ranges) in plan.nodes.iter().zip(layout(plan)) {
        for (s, e) in ranges {
            entries.push(mem(n.pxm, s, e - s, FLAG_ENABLED));
        }
    }
    srat(&entries)
}

/// The SLIT of the replayed machine: the source's, cut after the largest node domain.
pub fn slit_bytes(plan: &Plan) -> Option<Vec<u8>> {
    let (localities, matrix) = plan.slit.as_ref()?;
    let max_pxm = plan.nodes.iter().map(|n| n.pxm as usize).max()?;
    let n = (*localities).min(max_pxm + 1);
    let rows: Vec<Vec<u8>> = (0..n)
        .map(|i| matrix[i * localities..i * localities + n].to_vec())
        .collect();
    Some(slit(&rows))
}

/// FNV-1a, to name table files by content (parallel runs share them safely).
fn fnv64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Writes `bytes` to `dir/NAME-HASH.aml` (once; written to a temporary name and renamed).
fn table_file(dir: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf, String> {
    let path = dir.join(format!("{name}-{:016x}.aml", fnv64(bytes)));
    if std::fs::metadata(&path).is_ok_and(|m| m.len() == bytes.len() as u64) {
        return Ok(path);
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let tmp = dir.join(format!("{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes)
        .and_then(|_| std::fs::rename(&tmp, &path))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// The QEMU arguments of the replayed machine; the tables go to `dir`.
pub fn qemu_args(plan: &Plan, dir: &Path) -> Result<Vec<String>, String> {
    let mut args = crate::qemu::machine::QemuMachine::uma(plan.cpus, plan.mem_mib).args(None);
    let mut tables = vec![("srat", srat_bytes(plan))];
    if let Some(s) = slit_bytes(plan) {
        tables.push(("slit", s));
    }
    for (name, bytes) in tables {
        args.push("-acpitable".into());
        args.push(format!("file={}", table_file(dir, name, &bytes)?.display()));
    }
    Ok(args)
}

/// What the booted kernel should print (free memory unknown: 0).
pub fn expected(plan: &Plan) -> Numactl {
    Numactl {
        nodes: plan
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| NumactlNode {
                id: i as u32,
                cpus: n.cpus.clone(),
                size_mib: n.mem_mib,
                free_mib: 0,
            })
            .collect(),
        distances: plan.distances.clone(),
    }
}

/// Compares the kernel's `numactl -H` block in `log` with the plan. `Ok`: one line saying
/// what matched; `Err`: one line per mismatch.
pub fn check(plan: &Plan, log: &str, slack: Slack) -> Result<String, Vec<String>> {
    let got = numactl::parse(log)
        .map_err(|e| vec![format!("the kernel's numactl -H block cannot be read: {e}")])?;
    let want = expected(plan);
    let mut bad = Vec::new();
    if got.nodes.len() != want.nodes.len() {
        return Err(vec![format!(
            "the kernel has {} nodes, the replayed machine {}",
            got.nodes.len(),
            want.nodes.len()
        )]);
    }
    let low_node = plan.nodes.iter().position(|n| n.mem_mib > 0);
    let mut worst = 0u64;
    for (i, (g, w)) in got.nodes.iter().zip(&want.nodes).enumerate() {
        let (mut gc, mut wc) = (g.cpus.clone(), w.cpus.clone());
        gc.sort_unstable();
        wc.sort_unstable();
        if gc != wc {
            bad.push(format!(
                "node {i} (PXM {}): the kernel has CPUs [{}], the replayed machine [{}]",
                plan.nodes[i].pxm,
                numactl::id_ranges(&gc),
                numactl::id_ranges(&wc)
            ));
        }
        let slack = if Some(i) == low_node {
            slack.low_node_mib
        } else {
            slack.other_mib
        };
        if g.size_mib > w.size_mib || g.size_mib.saturating_add(slack) < w.size_mib {
            bad.push(format!(
                "node {i} (PXM {}): the kernel has {} MB, the replayed machine gave it {} MiB \
                 (firmware and the kernel may keep at most {slack} MiB of it)",
                plan.nodes[i].pxm, g.size_mib, w.size_mib
            ));
        }
        worst = worst.max(w.size_mib.saturating_sub(g.size_mib));
    }
    for (i, (g, w)) in got.distances.iter().zip(&want.distances).enumerate() {
        if g != w {
            bad.push(format!(
                "distances from node {i}: the kernel has {g:?}, the replayed machine {w:?}"
            ));
        }
    }
    if !bad.is_empty() {
        return Err(bad);
    }
    Ok(format!(
        "the kernel's numactl -H matches {}: {} nodes, {} CPUs on the same nodes, every distance, \
         sizes within {worst} MiB of the replayed ones",
        plan.source.display(),
        want.nodes.len(),
        plan.cpus
    ))
}

/// `--machine SOURCE`: loads and plans the machine for `smp` CPUs and `mem_mib` MiB, writes
/// its tables under `dir`, and returns the plan and the QEMU arguments. `user_args` (after
/// `--`) may not describe a machine too. `Err` is one line.
pub fn prepare(
    source: &Path,
    smp: Option<u32>,
    mem_mib: Option<u64>,
    user_args: &[String],
    dir: &Path,
) -> Result<(Plan, Vec<String>), String> {
    if let Some(a) = crate::qemu::machine::machine_word(user_args) {
        return Err(format!(
            "--machine describes the machine: '{a}' after -- cannot describe it too"
        ));
    }
    let m = super::load(source).map_err(|e| e.to_string())?;
    let plan = scale::plan(&m, smp, mem_mib, scale::host_spare_mib())?;
    let args = qemu_args(&plan, dir)?;
    Ok((plan, args))
}

/// Where `--machine` writes its tables: target/replay in the checkout.
pub fn tables_dir() -> PathBuf {
    crate::build::image::repo_root()
        .join("target")
        .join("replay")
}

#[cfg(test)]
mod tests {
    use super::super::scale::PlanNode;
    use super::*;
    use numalab_algo::acpi::{slit as slit_mod, srat as srat_mod};

    const BIOS: Slack = Slack {
        low_node_mib: LOW_NODE_SLACK_MIB,
        other_mib: SLACK_MIB,
    };

    fn plan(mem: &[u64], pxms: &[u32]) -> Plan {
        let n = mem.len();
        Plan {
            source: "m".into(),
            nodes: mem
                .iter()
                .zip(pxms)
                .enumerate()
                .map(|(i, (&m, &p))| PlanNode {
                    pxm: p,
                    cpus: vec![i as u32],
                    mem_mib: m,
                })
                .collect(),
            distances: (0..n)
                .map(|i| (0..n).map(|j| if i == j { 10 } else { 20 }).collect())
                .collect(),
            slit: None,
            cpus: n as u32,
            mem_mib: mem.iter().sum(),
            notes: vec![],
        }
    }

    #[test]
    fn layout_tiles_ram_and_splits_at_the_pci_hole() {
        let p = plan(&[512, 0, 1024], &[0, 1, 2]);
        assert_eq!(
            layout(&p),
            vec![vec![(0, 512 * MIB)], vec![], vec![(512 * MIB, 1536 * MIB)]]
        );
        let p = plan(&[2048, 2048], &[0, 1]);
        assert_eq!(
            layout(&p)[1],
            vec![(2048 * MIB, 3072 * MIB), (FOUR_GIB, FOUR_GIB + 1024 * MIB)]
        );
    }

    #[test]
    fn tables_keep_proximity_domains_and_phantoms() {
        let mut p = plan(&[256, 0], &[2, 5]);
        // A 7-locality SLIT: 0, 1, 3, 4 and 6 are phantoms; 6 is past the last node: cut.
        let l = 7;
        let m: Vec<u8> = (0..l * l)
            .map(|k| {
                if k / l == k % l {
                    10
                } else {
                    30 + (k % l) as u8
                }
            })
            .collect();
        p.slit = Some((l, m));
        let s = srat_mod::parse(&srat_bytes(&p)).unwrap();
        let cpus: Vec<(u32, u32)> = s.cpus.iter().map(|c| (c.apic_id, c.pxm)).collect();
        assert_eq!(cpus, vec![(0, 2), (1, 5)]);
        assert_eq!(s.mems.len(), 1);
        assert_eq!((s.mems[0].pxm, s.mems[0].length), (2, 256 * MIB));
        let t = slit_mod::parse(&slit_bytes(&p).unwrap()).unwrap();
        assert_eq!(t.localities, 6);
        assert_eq!(t.get(2, 5), Some(35));
        assert_eq!(t.get(4, 4), Some(10));
    }

    #[test]
    fn check_compares_cpus_distances_and_sizes() {
        let p = plan(&[512, 0], &[0, 1]);
        let mut kernel = expected(&p);
        kernel.nodes[0].size_mib = 500;
        assert!(check(&p, &format!("boot\n{}KTAP", kernel.text()), BIOS).is_ok());
        kernel.nodes[0].size_mib = 470;
        kernel.nodes[1].cpus = vec![];
        kernel.nodes[0].cpus = vec![0, 1];
        kernel.distances = vec![vec![10, 21], vec![21, 10]];
        let bad = check(&p, &kernel.text(), BIOS).unwrap_err();
        assert_eq!(bad.len(), 5, "{bad:#?}");
        assert!(bad[0].contains("node 0 (PXM 0): the kernel has CPUs [0-1]"));
        assert!(bad[1].contains("node 0 (PXM 0): the kernel has 470 MB"));
        assert!(check(&p, "no block", BIOS).unwrap_err()[0].contains("cannot be read"));
        let uefi = Slack::for_firmware(crate::build::image::Firmware::Uefi);
        kernel = expected(&p);
        kernel.nodes[0].size_mib = 100;
        assert!(check(&p, &kernel.text(), BIOS).is_err());
        assert!(check(&p, &kernel.text(), uefi).is_ok());
    }
}
