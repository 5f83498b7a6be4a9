//! Named NUMA machines (`--topology NAME`) and the QEMU arguments that describe them.
//!
//! A preset is data: nodes with memory and a CPU count, and an optional SLIT. `--smp` and
//! `--mem` rescale it (CPUs spread over the nodes that have CPUs, memory over the nodes that
//! have memory), so every preset works at any size.

use crate::qemu::machine::{Backend, Numa, QemuMachine};

/// One NUMA node of a preset.
#[derive(Clone, Debug)]
pub struct NodeSpec {
    /// Share of the machine's memory (0 = memoryless node).
    pub mem_shares: u32,
    /// Share of the machine's CPUs (0 = CPU-less node).
    pub cpu_shares: u32,
}

/// A named machine.
#[derive(Clone, Debug)]
pub struct Preset {
    pub name: &'static str,
    pub about: &'static str,
    pub cpus: u32,
    pub mem_mib: u64,
    /// Empty for a machine without `-numa` (UMA).
    pub nodes: Vec<NodeSpec>,
    /// Full distance matrix (row = from) or empty for QEMU's default (no SLIT).
    pub distances: Vec<Vec<u8>>,
}

fn node(mem_shares: u32, cpu_shares: u32) -> NodeSpec {
    NodeSpec {
        mem_shares,
        cpu_shares,
    }
}

/// Distance matrix from a function of (from, to).
fn matrix(n: usize, f: impl Fn(usize, usize) -> u8) -> Vec<Vec<u8>> {
    (0..n).map(|i| (0..n).map(|j| f(i, j)).collect()).collect()
}

/// Every preset, default first.
pub fn all() -> Vec<Preset> {
    vec![
        Preset {
            name: "4node",
            about: "default: 4 nodes x 2 CPUs, 512 MiB each, two sockets of two nodes (SLIT 10/16/32)",
            cpus: 8,
            mem_mib: 2048,
            nodes: vec![node(1, 1); 4],
            distances: matrix(4, |i, j| if i == j { 10 } else if i / 2 == j / 2 { 16 } else { 32 }),
        },
        Preset {
            name: "uma",
            about: "no -numa: one node, 4 CPUs, 1 GiB",
            cpus: 4,
            mem_mib: 1024,
            nodes: vec![],
            distances: vec![],
        },
        Preset {
            name: "2node",
            about: "2 nodes x 2 CPUs, 512 MiB each, no SLIT (distances 10/20 assumed)",
            cpus: 4,
            mem_mib: 1024,
            nodes: vec![node(1, 1); 2],
            distances: vec![],
        },
        Preset {
            name: "memoryless",
            about: "seed 003 on x86: node 0 has CPUs 0-3 and no memory, node 1 CPUs 4-7 and 2 GiB, distance 40",
            cpus: 8,
            mem_mib: 2048,
            nodes: vec![node(0, 1), node(1, 1)],
            distances: matrix(2, |i, j| if i == j { 10 } else { 40 }),
        },
        Preset {
            name: "cpuless",
            about: "3 nodes of 512 MiB; node 2 has no CPUs (SLIT 10/20/30)",
            cpus: 4,
            mem_mib: 1536,
            nodes: vec![node(1, 1), node(1, 1), node(1, 0)],
            distances: matrix(3, |i, j| {
                if i == j {
                    10
                } else if i.max(j) == 2 {
                    30
                } else {
                    20
                }
            }),
        },
        Preset {
            name: "snc",
            about: "Chinner's shape: 2 sockets x 2 sub-NUMA clusters, 4 CPUs each (SLIT 10/12/21)",
            cpus: 16,
            mem_mib: 2048,
            nodes: vec![node(1, 1); 4],
            distances: matrix(4, |i, j| if i == j { 10 } else if i / 2 == j / 2 { 12 } else { 21 }),
        },
        Preset {
            name: "8node",
            about: "8 nodes x 8 CPUs (64 vCPUs), 256 MiB each, two sockets (SLIT 10/20/30)",
            cpus: 64,
            mem_mib: 2048,
            nodes: vec![node(1, 1); 8],
            distances: matrix(8, |i, j| if i == j { 10 } else if i / 4 == j / 4 { 20 } else { 30 }),
        },
        Preset {
            name: "8node-2mem",
            about: "the 7.0 sheaves regression's shape: 8 nodes with a CPU each, memory (512 MiB) only on nodes 3 and 7, two sockets (SLIT 10/20/30)",
            cpus: 8,
            mem_mib: 1024,
            nodes: (0..8).map(|i| node(u32::from(i % 4 == 3), 1)).collect(),
            distances: matrix(8, |i, j| if i == j { 10 } else if i / 4 == j / 4 { 20 } else { 30 }),
        },
        Preset {
            name: "2x8",
            about: "seed 000's shape, scaled: 2 nodes x 8 CPUs, 1 GiB each (SLIT 10/21); 8 CPUs per SLUB list_lock",
            cpus: 16,
            mem_mib: 2048,
            nodes: vec![node(1, 1); 2],
            distances: matrix(2, |i, j| if i == j { 10 } else { 21 }),
        },
        // The cost models' machines (costs/, docs/costs.md), scaled to a 2-core host: one vCPU
        // per node, the SLIT the machine reports where its source printed one.
        Preset {
            name: "cascadelake-2s",
            about: "cost model cascadelake-2s's shape: 2 sockets, SNC off, 1 CPU and 512 MiB per node (SLIT 10/21 as an 8269CY reports it)",
            cpus: 2,
            mem_mib: 1024,
            nodes: vec![node(1, 1); 2],
            distances: matrix(2, |i, j| if i == j { 10 } else { 21 }),
        },
        Preset {
            name: "genoa-9224-nps2",
            about: "cost model genoa-9224-nps2's shape: 2 sockets x NPS2, 1 CPU and 512 MiB per node (SLIT 10/12/32 as the EPYC 9224 reports it)",
            cpus: 4,
            mem_mib: 2048,
            nodes: vec![node(1, 1); 4],
            distances: matrix(4, |i, j| if i == j { 10 } else if i / 2 == j / 2 { 12 } else { 32 }),
        },
        Preset {
            name: "genoa-9224-cxl",
            about: "cost model genoa-9224-cxl's shape: genoa-9224-nps2 and node 4, CXL memory without CPUs (SLIT 50/60 to it, 255 from it, as the EPYC 9224 reports it)",
            cpus: 4,
            mem_mib: 2560,
            nodes: (0..5).map(|i| node(1, u32::from(i < 4))).collect(),
            distances: matrix(5, |i, j| match (i, j) {
                _ if i == j => 10,
                (4, _) => 255,
                (_, 4) if i < 2 => 50,
                (_, 4) => 60,
                _ if i / 2 == j / 2 => 12,
                _ => 32,
            }),
        },
        Preset {
            name: "gnr-6980p-snc3",
            about: "cost model gnr-6980p-snc3's shape: 2 sockets x SNC3, 1 CPU and 256 MiB per node (SLIT derived from the MLC matrix, 10 x latency / local: no published SLIT)",
            cpus: 6,
            mem_mib: 1536,
            nodes: vec![node(1, 1); 6],
            distances: gnr_slit(),
        },
        Preset {
            name: "asym",
            about: "2 nodes x 2 CPUs with asymmetric distances (0->1 15, 1->0 25)",
            cpus: 4,
            mem_mib: 1024,
            nodes: vec![node(1, 1); 2],
            distances: vec![vec![10, 15], vec![25, 10]],
        },
    ]
}

/// The 6980P SNC3 run's idle latencies (ns, costs/gnr-6980p-snc3.mlc), row = CPU node.
const GNR_NS: [[f64; 6]; 6] = [
    [138.7, 168.0, 208.5, 394.1, 475.2, 445.1],
    [160.3, 134.4, 170.4, 415.2, 448.2, 479.7],
    [156.2, 123.6, 106.5, 507.8, 513.2, 452.5],
    [396.0, 476.0, 445.6, 102.0, 129.4, 157.5],
    [419.7, 452.6, 421.2, 122.1, 102.4, 130.2],
    [445.4, 449.5, 392.4, 148.3, 122.3, 103.8],
];

/// The SLIT as ACPI defines it (relative latency, 10 local) from [`GNR_NS`]: round(10 x
/// latency / the row's local latency). No SLIT was published with the run (docs/costs.md).
fn gnr_slit() -> Vec<Vec<u8>> {
    matrix(6, |i, j| (10.0 * GNR_NS[i][j] / GNR_NS[i][i]).round() as u8)
}

/// The preset called `name`.
pub fn find(name: &str) -> Option<Preset> {
    all().into_iter().find(|p| p.name == name)
}

/// Splits `total` over `shares` (largest remainder to the first nodes); 0 shares get 0.
fn split(total: u64, shares: &[u32]) -> Vec<u64> {
    let sum: u64 = shares.iter().map(|&s| s as u64).sum();
    if sum == 0 {
        return vec![0; shares.len()];
    }
    let mut out: Vec<u64> = shares.iter().map(|&s| total * s as u64 / sum).collect();
    let mut rest = total - out.iter().sum::<u64>();
    for (i, &s) in shares.iter().enumerate() {
        if rest == 0 {
            break;
        }
        if s > 0 {
            out[i] += 1;
            rest -= 1;
        }
    }
    out
}

impl Preset {
    /// What the kernel should report for this machine: per node (CPU ids, MiB).
    pub fn layout(&self, cpus: u32, mem_mib: u64) -> Vec<(Vec<u32>, u64)> {
        if self.nodes.is_empty() {
            return vec![((0..cpus).collect(), mem_mib)];
        }
        let cpu_shares: Vec<u32> = self.nodes.iter().map(|n| n.cpu_shares).collect();
        let mem_shares: Vec<u32> = self.nodes.iter().map(|n| n.mem_shares).collect();
        let cpu_counts = split(cpus as u64, &cpu_shares);
        let mems = split(mem_mib, &mem_shares);
        let mut next = 0u32;
        cpu_counts
            .iter()
            .zip(mems)
            .map(|(&count, mem)| {
                let ids: Vec<u32> = (next..next + count as u32).collect();
                next += count as u32;
                (ids, mem)
            })
            .collect()
    }

    /// The QEMU arguments for this machine with `cpus` CPUs and `mem_mib` MiB.
    pub fn qemu_args(&self, cpus: u32, mem_mib: u64) -> Vec<String> {
        self.qemu_args_online(cpus, None, mem_mib)
    }

    /// As [`Preset::qemu_args`], with only `online` of the `cpus` CPUs present when given
    /// (`-smp ONLINE,maxcpus=CPUS`: the same nodes and SRAT, the rest of the CPUs absent).
    pub fn qemu_args_online(&self, cpus: u32, online: Option<u32>, mem_mib: u64) -> Vec<String> {
        self.machine(cpus, mem_mib).args(online)
    }

    /// This preset with `cpus` CPUs and `mem_mib` MiB as a typed QEMU machine: one memory
    /// backend per node with memory, one `-numa node` per node, one `-numa dist` per distance
    /// (one direction only when the matrix is symmetric); no `-numa` at all for UMA, so QEMU
    /// writes no SRAT (the kernel falls back to one node).
    pub fn machine(&self, cpus: u32, mem_mib: u64) -> QemuMachine {
        let mut m = QemuMachine::uma(cpus, mem_mib);
        if self.nodes.is_empty() {
            return m;
        }
        for (i, (ids, mem)) in self.layout(cpus, mem_mib).iter().enumerate() {
            let memdev = (*mem > 0).then(|| {
                m.backends.push(Backend {
                    kind: "memory-backend-ram".into(),
                    id: format!("m{i}"),
                    size_mib: *mem,
                    other: Vec::new(),
                });
                format!("m{i}")
            });
            m.numa.push(Numa::Node {
                nodeid: Some(i as u32),
                cpus: match (ids.first(), ids.last()) {
                    (Some(&a), Some(&b)) => vec![(a, b)],
                    _ => Vec::new(),
                },
                memdev,
                initiator: None,
            });
        }
        let d = &self.distances;
        let symmetric = (0..d.len()).all(|i| (0..d.len()).all(|j| d[i][j] == d[j][i]));
        for (i, row) in d.iter().enumerate() {
            for (j, &val) in row.iter().enumerate() {
                if i != j && (!symmetric || i < j) {
                    m.numa.push(Numa::Dist {
                        src: i as u32,
                        dst: j as u32,
                        val,
                    });
                }
            }
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_is_exact() {
        assert_eq!(split(8, &[1, 1, 1, 1]), vec![2, 2, 2, 2]);
        assert_eq!(split(5, &[1, 1, 0]), vec![3, 2, 0]);
        assert_eq!(split(2048, &[0, 1]), vec![0, 2048]);
    }

    #[test]
    fn memoryless_matches_seeds_md() {
        let p = find("memoryless").unwrap();
        assert_eq!(
            p.qemu_args(8, 2048).join(" "),
            "-smp 8 -m 2048M -object memory-backend-ram,size=2048M,id=m1 -numa node,nodeid=0,cpus=0-3 \
             -numa node,nodeid=1,cpus=4-7,memdev=m1 -numa dist,src=0,dst=1,val=40"
        );
    }

    #[test]
    fn two_by_eight_has_eight_cpus_per_node() {
        let p = find("2x8").unwrap();
        assert_eq!(
            p.qemu_args(16, 2048).join(" "),
            "-smp 16 -m 2048M -object memory-backend-ram,size=1024M,id=m0 -object memory-backend-ram,size=1024M,id=m1 \
             -numa node,nodeid=0,cpus=0-7,memdev=m0 -numa node,nodeid=1,cpus=8-15,memdev=m1 -numa dist,src=0,dst=1,val=21"
        );
    }

    #[test]
    fn uma_has_no_numa_arguments() {
        assert_eq!(
            find("uma").unwrap().qemu_args(4, 1024).join(" "),
            "-smp 4 -m 1024M"
        );
    }

    #[test]
    fn asym_gives_both_directions() {
        let args = find("asym").unwrap().qemu_args(4, 1024).join(" ");
        assert!(args.contains("dist,src=0,dst=1,val=15"));
        assert!(args.contains("dist,src=1,dst=0,val=25"));
    }

    #[test]
    fn gnr_slit_is_the_relative_latency() {
        assert_eq!(gnr_slit()[0], vec![10, 12, 15, 28, 34, 32]);
    }

    #[test]
    fn every_preset_is_consistent() {
        for p in all() {
            let layout = p.layout(p.cpus, p.mem_mib);
            assert_eq!(
                layout.iter().map(|l| l.0.len() as u32).sum::<u32>(),
                p.cpus,
                "{}",
                p.name
            );
            assert_eq!(
                layout.iter().map(|l| l.1).sum::<u64>(),
                p.mem_mib,
                "{}",
                p.name
            );
            if !p.distances.is_empty() {
                assert_eq!(p.distances.len(), p.nodes.len(), "{}", p.name);
            }
        }
    }
}
