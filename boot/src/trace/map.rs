//! The machine as the trace plugin sees it: which guest-physical ranges belong to which node,
//! which vCPU sits on which node, and the SLIT. Derived from the typed QEMU machine with the
//! rules QEMU 7.2's `pc` machine applies (hw/i386/pc_piix.c, hw/i386/acpi-build.c
//! `build_srat`), so that it equals the SRAT the kernel reads:
//! - RAM below 4 GiB is all of it, unless the machine has 3.5 GiB or more; then 3 GiB lie
//!   below 4 GiB and the rest starts at 4 GiB (`gigabyte_align`);
//! - each node's memory follows the previous node's from 0, in node-id order; the node that
//!   spans 640 KiB loses the hole up to 1 MiB, and a node that spans the below-4G end
//!   continues at 4 GiB;
//! - a CPU no `-numa node,cpus=` names is on node 0; without a `-numa dist` the distances are
//!   10 local, 20 remote (what Linux assumes without a SLIT).

use crate::qemu::machine::{Numa, QemuMachine};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// One node's guest-physical range, [start, end).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemRange {
    pub start: u64,
    pub end: u64,
    pub node: u32,
}

/// What the plugin needs to know of the machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeMap {
    /// SLIT rows, one per node.
    pub distances: Vec<Vec<u8>>,
    pub ranges: Vec<MemRange>,
    /// Node of each vCPU, by QEMU's cpu_index.
    pub vcpu_nodes: Vec<u32>,
    /// Each node's RAM is its own memory backend (QEMU 7.2 then reports RAM addresses per
    /// backend; the plugin's `qemu_ram per_node`), else one block (`single`).
    pub ram_per_node: bool,
}

/// Bytes of guest RAM below 4 GiB for `total` bytes of RAM on QEMU's `pc` machine.
pub fn below_4g_bytes(total: u64) -> u64 {
    if total >= 0xe000_0000 {
        3 * GIB
    } else {
        total
    }
}

/// The ACPI tables `-acpitable file=PATH` injects (the replays of docs/replay.md, the tests'
/// hand-made tables), by signature.
struct Injected {
    srat: Option<Vec<u8>>,
    slit: Option<Vec<u8>>,
}

fn injected_tables(args: &[String]) -> Result<Injected, String> {
    let mut t = Injected {
        srat: None,
        slit: None,
    };
    for (i, a) in args.iter().enumerate() {
        if a != "-acpitable" {
            continue;
        }
        let Some(path) = args
            .get(i + 1)
            .and_then(|v| v.split(',').find_map(|w| w.strip_prefix("file=")))
        else {
            continue;
        };
        let bytes = std::fs::read(path).map_err(|e| format!("--trace: -acpitable {path}: {e}"))?;
        match bytes.get(..4) {
            Some(b"SRAT") => t.srat = Some(bytes),
            Some(b"SLIT") => t.slit = Some(bytes),
            _ => {}
        }
    }
    Ok(t)
}

/// The machine type named by `-M`/`-machine` in `args` (its first word), if any.
fn machine_type(args: &[String]) -> Option<&str> {
    args.iter().enumerate().find_map(|(i, a)| {
        let value = match a.as_str() {
            "-M" | "-machine" => args.get(i + 1)?.as_str(),
            _ => return None,
        };
        let first = value.split(',').next().unwrap_or("");
        Some(first.strip_prefix("type=").unwrap_or(first))
    })
}

impl NodeMap {
    /// The map of `m`. Err: a machine whose layout this does not know (a machine type other
    /// than `pc`, or a node whose memory backend is not declared).
    pub fn of(m: &QemuMachine, extra: &[String]) -> Result<NodeMap, String> {
        let tables = injected_tables(extra)?;
        if let Some(srat) = &tables.srat {
            if m.numa.iter().any(|n| !matches!(n, Numa::Other(_))) {
                return Err("--trace: the machine has both -numa nodes and an injected SRAT; which one the kernel reads is not defined".into());
            }
            return Ok(Self::of_srat(m, srat, tables.slit.as_deref()));
        }
        if let Some(kind) = machine_type(extra) {
            if !kind.starts_with("pc") || kind.starts_with("pc-q35") {
                return Err(format!(
                    "--trace: the machine type {kind} lays out RAM differently from QEMU's pc machine; only pc is known"
                ));
            }
        }
        // (node id, bytes, inclusive CPU ranges) of each `-numa node`.
        type NodeItem = (u32, u64, Vec<(u32, u32)>);
        let mut nodes: Vec<NodeItem> = Vec::new();
        let mut dists: Vec<(u32, u32, u8)> = Vec::new();
        for item in &m.numa {
            match item {
                Numa::Node {
                    nodeid,
                    cpus,
                    memdev,
                    ..
                } => {
                    let id = nodeid.unwrap_or(nodes.len() as u32);
                    let bytes = match memdev {
                        Some(dev) => {
                            m.backends
                                .iter()
                                .find(|b| &b.id == dev)
                                .ok_or_else(|| {
                                    format!("--trace: node {id}'s memdev {dev} is not declared")
                                })?
                                .size_mib
                                * MIB
                        }
                        None => 0,
                    };
                    nodes.push((id, bytes, cpus.clone()));
                }
                Numa::Dist { src, dst, val } => dists.push((*src, *dst, *val)),
                Numa::Other(_) => {}
            }
        }
        let total = m.mem_mib() * MIB;
        if nodes.is_empty() {
            nodes.push((0, total, Vec::new()));
        }
        nodes.sort_by_key(|n| n.0);
        let n = nodes.len();
        let mut distances = vec![vec![20u8; n]; n];
        for (i, row) in distances.iter_mut().enumerate() {
            row[i] = 10;
        }
        let index = |id: u32| nodes.iter().position(|x| x.0 == id);
        for &(s, d, v) in &dists {
            if let (Some(a), Some(b)) = (index(s), index(d)) {
                distances[a][b] = v;
            }
        }
        // QEMU fills the other direction of a pair given once.
        for &(s, d, v) in &dists {
            if let (Some(a), Some(b)) = (index(s), index(d)) {
                if !dists.iter().any(|&(s2, d2, _)| s2 == d && d2 == s) {
                    distances[b][a] = v;
                }
            }
        }
        let below = below_4g_bytes(total);
        let mut ranges = Vec::new();
        let mut push = |start: u64, end: u64, node: u32| {
            if end > start {
                ranges.push(MemRange { start, end, node });
            }
        };
        // QEMU 7.2's build_srat: each node's memory follows the previous node's from 0; the
        // 640 KiB-1 MiB hole is cut out of the node that spans it (its RAM there is lost),
        // and the part past the below-4G end moves to 4 GiB.
        let mut next = 0u64;
        for (i, (_, bytes, _)) in nodes.iter().enumerate() {
            let node = i as u32;
            let mut base = next;
            next = base + bytes;
            if base <= 640 * KIB && next > 640 * KIB {
                push(base, 640 * KIB, node);
                if next <= MIB {
                    next = MIB;
                    continue;
                }
                base = MIB;
            }
            if base <= below && next > below {
                push(base, below, node);
                let high = next - below;
                base = 4 * GIB;
                next = base + high;
            }
            push(base, next, node);
        }
        let vcpus = m.max_cpus();
        let mut vcpu_nodes = vec![0u32; vcpus as usize];
        for (i, (_, _, cpus)) in nodes.iter().enumerate() {
            for &(a, b) in cpus {
                for c in a..=b.min(vcpus.saturating_sub(1)) {
                    vcpu_nodes[c as usize] = i as u32;
                }
            }
        }
        Ok(NodeMap {
            distances,
            ranges,
            vcpu_nodes,
            ram_per_node: !m.backends.is_empty(),
        })
    }

    /// The map of a machine whose SRAT (and SLIT) are injected, read as the kernel reads them
    /// (kernel/algo/src/acpi/numa.rs): enabled entries only; nodes are the proximity domains
    /// in increasing order; QEMU's CPU k has APIC id k; a SLIT gives the distances of the
    /// domains it has, 10/20 the rest; QEMU's RAM is one block (`-m`). A table the kernel
    /// would refuse gives the one-node map the kernel then boots with.
    fn of_srat(m: &QemuMachine, srat: &[u8], slit: Option<&[u8]>) -> NodeMap {
        use numalab_algo::acpi::{slit as slit_table, srat as srat_table};
        let vcpus = m.max_cpus() as usize;
        let one_node = || {
            let total = m.mem_mib() * MIB;
            let below = below_4g_bytes(total);
            let mut ranges = vec![MemRange {
                start: 0,
                end: below,
                node: 0,
            }];
            if total > below {
                ranges.push(MemRange {
                    start: 4 * GIB,
                    end: 4 * GIB + total - below,
                    node: 0,
                });
            }
            NodeMap {
                distances: vec![vec![10]],
                ranges,
                vcpu_nodes: vec![0; vcpus],
                ram_per_node: false,
            }
        };
        let Ok(table) = srat_table::parse(srat) else {
            return one_node();
        };
        let mems: Vec<&srat_table::SratMem> = table
            .mems
            .iter()
            .filter(|x| x.enabled() && x.length > 0)
            .collect();
        let cpus: Vec<&srat_table::SratCpu> = table.cpus.iter().filter(|c| c.enabled).collect();
        let mut pxms: Vec<u32> = mems
            .iter()
            .map(|x| x.pxm)
            .chain(cpus.iter().map(|c| c.pxm))
            .collect();
        pxms.sort_unstable();
        pxms.dedup();
        if pxms.is_empty() {
            return one_node();
        }
        let node = |pxm: u32| pxms.iter().position(|&p| p == pxm).unwrap_or(0) as u32;
        let mut ranges: Vec<MemRange> = mems
            .iter()
            .map(|x| MemRange {
                start: x.base,
                end: x.base + x.length,
                node: node(x.pxm),
            })
            .collect();
        ranges.sort_by_key(|r| r.start);
        let mut vcpu_nodes = vec![0u32; vcpus];
        for c in &cpus {
            // The last entry for an APIC id wins, as in Linux.
            if let Some(slot) = vcpu_nodes.get_mut(c.apic_id as usize) {
                *slot = node(c.pxm);
            }
        }
        let slit = slit.and_then(|b| slit_table::parse(b).ok());
        let distances = pxms
            .iter()
            .enumerate()
            .map(|(i, &a)| {
                pxms.iter()
                    .enumerate()
                    .map(|(j, &b)| {
                        let default = if i == j { 10 } else { 20 };
                        slit.as_ref()
                            .and_then(|s| s.get(a as usize, b as usize))
                            .unwrap_or(default)
                    })
                    .collect()
            })
            .collect();
        NodeMap {
            distances,
            ranges,
            vcpu_nodes,
            ram_per_node: false,
        }
    }

    /// The plugin's config file (docs/trace.md "Config"), keeping the `top` hottest lines of
    /// each region.
    pub fn config_text(&self, top: usize) -> String {
        let mut s = String::from("# numalab-trace config, written by qemu-run.sh\n");
        s.push_str(&format!("nodes {}\n", self.distances.len()));
        for (i, row) in self.distances.iter().enumerate() {
            let row: Vec<String> = row.iter().map(|d| d.to_string()).collect();
            s.push_str(&format!("distance {i} {}\n", row.join(" ")));
        }
        for r in &self.ranges {
            s.push_str(&format!("mem {:#x} {:#x} {}\n", r.start, r.end, r.node));
        }
        for (v, n) in self.vcpu_nodes.iter().enumerate() {
            s.push_str(&format!("vcpu {v} {n}\n"));
        }
        s.push_str(&format!("top {top}\n"));
        s.push_str(if self.ram_per_node {
            "qemu_ram per_node\n"
        } else {
            "qemu_ram single\n"
        });
        s
    }

    /// The machine as a cost model sees it (costs/apply.rs).
    pub fn shape(&self) -> crate::costs::Shape {
        let mut mem: Vec<u32> = self
            .ranges
            .iter()
            .filter(|r| r.end > r.start)
            .map(|r| r.node)
            .collect();
        mem.sort_unstable();
        mem.dedup();
        crate::costs::Shape {
            distances: self.distances.clone(),
            vcpu_nodes: self.vcpu_nodes.clone(),
            mem_nodes: mem,
        }
    }

    /// Each node's memory in MiB (for comparing with the kernel's `numactl -H`).
    pub fn node_mib(&self) -> Vec<u64> {
        let mut out = vec![0u64; self.distances.len()];
        for r in &self.ranges {
            out[r.node as usize] += (r.end - r.start) / MIB;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cost_models_shapes_fit_their_cost_models() {
        // boot/src/qemu/presets.rs: a topology preset per cost model, of its shape.
        for name in crate::costs::presets::NAMES {
            let m = NodeMap::of(&preset(name), &[]).unwrap();
            let model = crate::costs::presets::find(name).unwrap();
            crate::costs::apply::fits(&model, &m.shape()).unwrap();
        }
        // A memory-only node is a column of the matrix, not a row.
        let m = NodeMap::of(&preset("genoa-9224-cxl"), &[]).unwrap().shape();
        assert_eq!(m.cpu_nodes(), vec![0, 1, 2, 3]);
        assert_eq!(m.mem_nodes, vec![0, 1, 2, 3, 4]);
    }

    fn preset(name: &str) -> QemuMachine {
        let p = crate::qemu::presets::find(name).unwrap();
        p.machine(p.cpus, p.mem_mib)
    }

    #[test]
    fn two_nodes_follow_each_other_from_the_first_mib() {
        let m = preset("2node");
        let map = NodeMap::of(&m, &[]).unwrap();
        let total = m.mem_mib() * MIB;
        assert_eq!(
            map.ranges[0],
            MemRange {
                start: 0,
                end: 640 * KIB,
                node: 0
            }
        );
        assert_eq!(map.ranges[1].start, MIB);
        assert_eq!(map.ranges[1].end, total / 2);
        assert_eq!(map.ranges[1].end, map.ranges[2].start);
        assert_eq!(map.ranges.last().unwrap().end, total);
        assert_eq!(map.ranges[2].node, 1);
        assert_eq!(map.distances[0][0], 10);
        assert_eq!(map.vcpu_nodes.len() as u32, m.max_cpus());
        assert!(map.vcpu_nodes.contains(&1));
    }

    #[test]
    fn memory_past_three_and_a_half_gib_moves_above_4g() {
        let p = crate::qemu::presets::find("2node").unwrap();
        let m = p.machine(4, 4096);
        let map = NodeMap::of(&m, &[]).unwrap();
        // 2 GiB per node: node 0 [0, 640K) and [1M, 2G), node 1 [2G, 3G) and [4G, 5G).
        assert_eq!(
            map.ranges[1],
            MemRange {
                start: MIB,
                end: 2 * GIB,
                node: 0
            }
        );
        assert_eq!(
            map.ranges[2],
            MemRange {
                start: 2 * GIB,
                end: 3 * GIB,
                node: 1
            }
        );
        assert_eq!(
            map.ranges[3],
            MemRange {
                start: 4 * GIB,
                end: 5 * GIB,
                node: 1
            }
        );
    }

    #[test]
    fn a_memoryless_node_has_no_range_and_the_next_node_takes_the_low_memory() {
        let map = NodeMap::of(&preset("memoryless"), &[]).unwrap();
        assert!(map.ranges.iter().all(|r| r.node == 1), "{:?}", map.ranges);
        assert_eq!(
            map.ranges[0],
            MemRange {
                start: 0,
                end: 640 * KIB,
                node: 1
            }
        );
        assert_eq!(
            map.ranges[1],
            MemRange {
                start: MIB,
                end: 2 * GIB,
                node: 1
            }
        );
        assert_eq!(map.node_mib()[0], 0);
    }

    #[test]
    fn the_config_says_how_qemu_lays_out_ram() {
        let numa = NodeMap::of(&preset("4node"), &[]).unwrap().config_text(20);
        assert!(
            numa.contains("qemu_ram per_node\n") && numa.contains("top 20\n"),
            "{numa}"
        );
        let uma = NodeMap::of(&preset("uma"), &[]).unwrap().config_text(20);
        assert!(uma.contains("qemu_ram single\n"), "{uma}");
        let e = NodeMap::of(
            &preset("uma"),
            &["-acpitable".into(), "file=/nonexistent/x".into()],
        )
        .unwrap_err();
        assert!(e.contains("-acpitable"), "{e}");
    }

    #[test]
    fn an_injected_srat_is_read_as_the_kernel_reads_it() {
        use numalab_algo::acpi::slit::build::slit;
        use numalab_algo::acpi::srat::build::{cpu, mem, srat};
        use numalab_algo::acpi::srat::FLAG_ENABLED;
        let dir = std::env::temp_dir().join(format!("numalab-map-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // Domains 7 and 3 (sparse, out of order): CPUs 0-1 in 7, 2-3 in 3; memory 1 GiB each.
        let table = srat(&[
            cpu(7, 0, true),
            cpu(7, 1, true),
            cpu(3, 2, true),
            cpu(3, 3, true),
            cpu(5, 9, false),
            mem(7, 0, GIB, FLAG_ENABLED),
            mem(3, GIB, GIB, FLAG_ENABLED),
            mem(5, 2 * GIB, GIB, 0),
        ]);
        let mut rows = vec![vec![30u8; 8]; 8];
        for (i, row) in rows.iter_mut().enumerate() {
            row[i] = 10;
        }
        rows[3][7] = 17;
        rows[7][3] = 21;
        let (srat_file, slit_file) = (dir.join("srat.aml"), dir.join("slit.aml"));
        std::fs::write(&srat_file, table).unwrap();
        std::fs::write(&slit_file, slit(&rows)).unwrap();
        let extra: Vec<String> = [
            "-acpitable".to_string(),
            format!("file={}", srat_file.display()),
            "-acpitable".to_string(),
            format!("file={}", slit_file.display()),
        ]
        .into();
        let map = NodeMap::of(&QemuMachine::uma(4, 2048), &extra).unwrap();
        // Node 0 is domain 3, node 1 domain 7 (increasing domain order).
        assert_eq!(map.vcpu_nodes, vec![1, 1, 0, 0]);
        assert_eq!(
            map.ranges[0],
            MemRange {
                start: 0,
                end: GIB,
                node: 1
            }
        );
        assert_eq!(
            map.ranges[1],
            MemRange {
                start: GIB,
                end: 2 * GIB,
                node: 0
            }
        );
        assert_eq!(
            map.ranges.len(),
            2,
            "the disabled entry is not a node's memory"
        );
        assert_eq!(map.distances, vec![vec![10, 17], vec![21, 10]]);
        assert!(!map.ram_per_node);
        // With -numa nodes too, the map is refused as ambiguous.
        let e = NodeMap::of(&preset("2node"), &extra).unwrap_err();
        assert!(e.contains("both"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_q35_machine_is_refused() {
        let m = preset("2node");
        let e = NodeMap::of(&m, &["-M".into(), "q35".into()]).unwrap_err();
        assert!(e.contains("q35"), "{e}");
    }
}
