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

use crate::qemu_machine::{Numa, QemuMachine};

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
        if extra.iter().any(|a| a == "-acpitable") {
            return Err("--trace: a machine whose SRAT is injected (-acpitable, as --machine replays do) is not supported yet: the plugin's node map comes from the -numa arguments".into());
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

    fn preset(name: &str) -> QemuMachine {
        let p = crate::presets::find(name).unwrap();
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
        let p = crate::presets::find("2node").unwrap();
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
        let e = NodeMap::of(&preset("uma"), &["-acpitable".into(), "file=x".into()]).unwrap_err();
        assert!(e.contains("-acpitable"), "{e}");
    }

    #[test]
    fn a_q35_machine_is_refused() {
        let m = preset("2node");
        let e = NodeMap::of(&m, &["-M".into(), "q35".into()]).unwrap_err();
        assert!(e.contains("q35"), "{e}");
    }
}
