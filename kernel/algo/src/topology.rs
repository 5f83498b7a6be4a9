//! The NUMA topology the rest of the kernel consumes: dense node and CPU ids, memory ranges,
//! distances, and what is derived from them (memoryless and CPU-less nodes, the nearest node
//! with memory, and each node's fallback order). No ACPI type leaks past this value.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::page::PhysAddr;

/// A logical NUMA node id, dense from 0 (Linux's nid), mapped from a proximity domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub u16);

/// A logical CPU id, dense from 0 (0 is the boot CPU).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CpuId(pub u16);

impl NodeId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl CpuId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Distance to self (ACPI SLIT convention, also Linux's LOCAL_DISTANCE).
pub const LOCAL_DISTANCE: u8 = 10;
/// Distance between nodes when there is no SLIT (Linux's REMOTE_DISTANCE).
pub const REMOTE_DISTANCE: u8 = 20;

/// One CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuInfo {
    pub cpu: CpuId,
    /// Local APIC id (x2APIC id when above 254).
    pub apic_id: u32,
    pub node: NodeId,
}

/// One node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    pub id: NodeId,
    /// The ACPI proximity domain this node came from.
    pub pxm: u32,
    /// Usable physical memory, [start, end) byte ranges, sorted, not overlapping.
    pub mem_ranges: Vec<(u64, u64)>,
    pub cpus: Vec<CpuId>,
}

impl NodeInfo {
    pub fn mem_bytes(&self) -> u64 {
        self.mem_ranges.iter().map(|(s, e)| e - s).sum()
    }
}

/// The machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    pub nodes: Vec<NodeInfo>,
    /// Indexed by CpuId; cpu 0 is the boot CPU.
    pub cpus: Vec<CpuInfo>,
    /// nodes x nodes, row = from.
    distances: Vec<u8>,
    /// Per node: nodes with memory by increasing distance, ties by node id.
    fallback: Vec<Vec<NodeId>>,
}

impl Topology {
    /// Builds the topology and its derived data. `distances` is a full matrix (row = from) or
    /// None for Linux's default (10 to self, 20 to others). `nodes[i].id` must be `NodeId(i)`
    /// and `cpus[i].cpu` must be `CpuId(i)`; node cpu lists are rebuilt from `cpus`.
    pub fn new(
        mut nodes: Vec<NodeInfo>,
        cpus: Vec<CpuInfo>,
        distances: Option<Vec<Vec<u8>>>,
    ) -> Topology {
        let n = nodes.len();
        for node in &mut nodes {
            node.cpus.clear();
            node.mem_ranges.sort_unstable();
        }
        for cpu in &cpus {
            if let Some(node) = nodes.get_mut(cpu.node.index()) {
                node.cpus.push(cpu.cpu);
            }
        }
        let mut flat = Vec::with_capacity(n * n);
        for i in 0..n {
            for j in 0..n {
                let d = distances
                    .as_ref()
                    .and_then(|m| m.get(i).and_then(|row| row.get(j)).copied())
                    .unwrap_or(if i == j {
                        LOCAL_DISTANCE
                    } else {
                        REMOTE_DISTANCE
                    });
                flat.push(d);
            }
        }
        let mut topo = Topology {
            nodes,
            cpus,
            distances: flat,
            fallback: Vec::new(),
        };
        topo.fallback = (0..n)
            .map(|i| {
                let mut order: Vec<NodeId> = topo
                    .nodes
                    .iter()
                    .filter(|node| node.mem_bytes() > 0)
                    .map(|node| node.id)
                    .collect();
                order.sort_by_key(|&m| (topo.distance(NodeId(i as u16), m), m));
                order
            })
            .collect();
        topo
    }

    /// One node holding every CPU and all memory (no SRAT, or a SRAT that cannot be trusted).
    pub fn single_node(apic_ids: &[u32], mem_ranges: Vec<(u64, u64)>) -> Topology {
        let cpus = apic_ids
            .iter()
            .enumerate()
            .map(|(i, &apic_id)| CpuInfo {
                cpu: CpuId(i as u16),
                apic_id,
                node: NodeId(0),
            })
            .collect();
        let node = NodeInfo {
            id: NodeId(0),
            pxm: 0,
            mem_ranges,
            cpus: Vec::new(),
        };
        Topology::new(alloc::vec![node], cpus, None)
    }

    pub fn nr_nodes(&self) -> usize {
        self.nodes.len()
    }

    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }

    /// SLIT distance from `from` to `to`.
    pub fn distance(&self, from: NodeId, to: NodeId) -> u8 {
        self.distances[from.index() * self.nodes.len() + to.index()]
    }

    /// The nodes with memory that an allocation for `node` tries, nearest first.
    pub fn fallback_order(&self, node: NodeId) -> &[NodeId] {
        &self.fallback[node.index()]
    }

    /// The nearest node with memory (Linux's numa_mem_id for a CPU on `node`); `node` itself
    /// when it has memory. A machine without any memory node returns `node`.
    pub fn mem_node(&self, node: NodeId) -> NodeId {
        self.fallback[node.index()].first().copied().unwrap_or(node)
    }

    pub fn is_memoryless(&self, node: NodeId) -> bool {
        self.nodes[node.index()].mem_bytes() == 0
    }

    pub fn is_cpuless(&self, node: NodeId) -> bool {
        self.nodes[node.index()].cpus.is_empty()
    }

    pub fn node_of_cpu(&self, cpu: CpuId) -> NodeId {
        self.cpus[cpu.index()].node
    }

    /// The node whose memory contains physical address `phys`, if any.
    pub fn node_of_phys(&self, phys: PhysAddr) -> Option<NodeId> {
        let phys = phys.as_u64();
        self.nodes
            .iter()
            .find(|n| n.mem_ranges.iter().any(|&(s, e)| s <= phys && phys < e))
            .map(|n| n.id)
    }
}

/// `a-b` or `a` (numactl's node range notation).
fn id_range(first: usize, last: usize) -> String {
    if first == last {
        format!("{first}")
    } else {
        format!("{first}-{last}")
    }
}

impl Topology {
    /// The lines `numactl -H` prints for this machine (numactl 2.x `hardware()`), with the
    /// trailing blank numactl leaves after each distance column trimmed. Sizes are usable
    /// bytes rounded down to MiB ("MB" as numactl says); `free_bytes` gives each node's free
    /// memory.
    pub fn numactl_lines(&self, free_bytes: &dyn Fn(NodeId) -> u64) -> Vec<String> {
        let n = self.nodes.len();
        let mut out = Vec::with_capacity(3 * n + n + 3);
        let range = if n == 0 {
            String::new()
        } else {
            id_range(0, n - 1)
        };
        out.push(format!("available: {n} nodes ({range})"));
        for node in &self.nodes {
            let mut cpus = format!("node {} cpus:", node.id.0);
            for cpu in &node.cpus {
                cpus.push_str(&format!(" {}", cpu.0));
            }
            out.push(cpus);
            out.push(format!(
                "node {} size: {} MB",
                node.id.0,
                node.mem_bytes() >> 20
            ));
            out.push(format!(
                "node {} free: {} MB",
                node.id.0,
                free_bytes(node.id) >> 20
            ));
        }
        out.push(String::from("node distances:"));
        let mut head = String::from("node ");
        for j in 0..n {
            head.push_str(&format!("{j:>3} "));
        }
        out.push(String::from(head.trim_end()));
        for i in 0..n {
            let mut row = format!("{i:>3}: ");
            for j in 0..n {
                row.push_str(&format!(
                    "{:>3} ",
                    self.distance(NodeId(i as u16), NodeId(j as u16))
                ));
            }
            out.push(String::from(row.trim_end()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn node(i: u16, ranges: Vec<(u64, u64)>) -> NodeInfo {
        NodeInfo {
            id: NodeId(i),
            pxm: i as u32,
            mem_ranges: ranges,
            cpus: vec![],
        }
    }

    #[test]
    fn memoryless_node_falls_back_to_nearest() {
        let nodes = vec![node(0, vec![]), node(1, vec![(0, 1 << 30)])];
        let cpus = (0..4)
            .map(|i| CpuInfo {
                cpu: CpuId(i),
                apic_id: i as u32,
                node: NodeId(i / 2),
            })
            .collect();
        let t = Topology::new(nodes, cpus, Some(vec![vec![10, 40], vec![40, 10]]));
        assert!(t.is_memoryless(NodeId(0)));
        assert_eq!(t.mem_node(NodeId(0)), NodeId(1));
        assert_eq!(t.fallback_order(NodeId(0)), &[NodeId(1)]);
        assert_eq!(t.nodes[0].cpus, vec![CpuId(0), CpuId(1)]);
        assert_eq!(
            t.node_of_phys(crate::page::PhysAddr::new(4096)),
            Some(NodeId(1))
        );
    }

    #[test]
    fn fallback_sorted_by_distance_then_id() {
        let nodes = (0..4)
            .map(|i| node(i, vec![(i as u64 * 100, i as u64 * 100 + 50)]))
            .collect();
        let d = vec![
            vec![10, 16, 32, 32],
            vec![16, 10, 32, 32],
            vec![32, 32, 10, 16],
            vec![32, 32, 16, 10],
        ];
        let t = Topology::new(nodes, vec![], Some(d));
        assert_eq!(
            t.fallback_order(NodeId(2)),
            &[NodeId(2), NodeId(3), NodeId(0), NodeId(1)]
        );
        assert!(t.is_cpuless(NodeId(0)));
        let no_slit = Topology::new(
            vec![node(0, vec![(0, 1)]), node(1, vec![(1, 2)])],
            vec![],
            None,
        );
        assert_eq!(no_slit.distance(NodeId(0), NodeId(1)), REMOTE_DISTANCE);
    }

    #[test]
    fn numactl_format_matches_numactl() {
        let nodes = (0..4)
            .map(|i| {
                node(
                    i,
                    vec![((i as u64 * 512) << 20, ((i as u64 + 1) * 512) << 20)],
                )
            })
            .collect();
        let d = vec![
            vec![10, 16, 32, 32],
            vec![16, 10, 32, 32],
            vec![32, 32, 10, 16],
            vec![32, 32, 16, 10],
        ];
        let cpus = (0..6)
            .map(|i| CpuInfo {
                cpu: CpuId(i),
                apic_id: i as u32,
                node: NodeId(i / 2),
            })
            .collect();
        let t = Topology::new(nodes, cpus, Some(d));
        let lines = t.numactl_lines(&|n| (n.0 as u64 + 1) << 20);
        let want = "available: 4 nodes (0-3)\n\
                    node 0 cpus: 0 1\nnode 0 size: 512 MB\nnode 0 free: 1 MB\n\
                    node 1 cpus: 2 3\nnode 1 size: 512 MB\nnode 1 free: 2 MB\n\
                    node 2 cpus: 4 5\nnode 2 size: 512 MB\nnode 2 free: 3 MB\n\
                    node 3 cpus:\nnode 3 size: 512 MB\nnode 3 free: 4 MB\n\
                    node distances:\n\
                    node   0   1   2   3\n  \
                    0:  10  16  32  32\n  \
                    1:  16  10  32  32\n  \
                    2:  32  32  10  16\n  \
                    3:  32  32  16  10";
        assert_eq!(lines.join("\n"), want);
        let one = Topology::single_node(&[0], vec![(0, (1 << 20) - 1)]);
        let lines = one.numactl_lines(&|_| 0);
        assert_eq!(lines[0], "available: 1 nodes (0)");
        assert_eq!(lines[2], "node 0 size: 0 MB");
        assert_eq!(lines[5..], ["node   0", "  0:  10"]);
    }
}
