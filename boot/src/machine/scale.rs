//! Fitting a described machine to a QEMU run: the same nodes (by proximity domain), the same
//! distances, CPUs and memory scaled down when the machine is bigger than the run.
//!
//! - CPUs: the limit is `--smp` (else 255, TCG's maximum). A machine with more CPUs keeps each
//!   node's share (largest remainder, at least one CPU on every node that has CPUs); a node
//!   keeps the first of its CPUs in the source's order. The kept CPUs are renumbered densely
//!   in the source's order (the booted kernel numbers CPUs 0..N-1).
//! - Memory: the limit is `--mem` (else what the host can spare: half its available memory,
//!   at most [`DEFAULT_MAX_MIB`]). A machine with more is scaled down proportionally, every
//!   node with memory keeping at least [`MIN_NODE_MIB`]; a smaller one keeps its sizes (raised
//!   to the minimum). Memoryless nodes stay memoryless.
//!
//! Each change is one note ("replay: ...") the runner prints.

use super::Machine;
use std::path::PathBuf;

/// Least memory a node with memory gets (the floor: page metadata, slabs, a stack).
pub const MIN_NODE_MIB: u64 = 64;
/// Most vCPUs QEMU's TCG runs.
pub const MAX_VCPUS: u32 = 255;
/// Largest default memory (larger boots take longer under TCG; `--mem` gives more).
pub const DEFAULT_MAX_MIB: u64 = 2048;

/// One node of the QEMU machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanNode {
    pub pxm: u32,
    /// CPU ids in the booted kernel (= QEMU APIC ids).
    pub cpus: Vec<u32>,
    pub mem_mib: u64,
}

/// The QEMU machine that replays a described one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub source: PathBuf,
    pub nodes: Vec<PlanNode>,
    pub distances: Vec<Vec<u8>>,
    /// SLIT by proximity domain (see [`Machine::slit`]).
    pub slit: Option<(usize, Vec<u8>)>,
    pub cpus: u32,
    pub mem_mib: u64,
    /// What was scaled or renumbered, one line each.
    pub notes: Vec<String>,
}

/// Splits `total` over `weights` by largest remainder; every positive weight gets at least
/// `floor` (callers make sure `total` allows it).
fn split(total: u64, weights: &[u64], floor: u64) -> Vec<u64> {
    let mut out = vec![0u64; weights.len()];
    let mut fixed = vec![false; weights.len()];
    loop {
        let fixed_total: u64 = (0..weights.len())
            .filter(|&i| fixed[i])
            .map(|_| floor)
            .sum();
        let rest = total.saturating_sub(fixed_total);
        let free: Vec<usize> = (0..weights.len())
            .filter(|&i| weights[i] > 0 && !fixed[i])
            .collect();
        let sum: u128 = free.iter().map(|&i| weights[i] as u128).sum();
        if sum == 0 {
            for i in 0..weights.len() {
                out[i] = if fixed[i] { floor } else { 0 };
            }
            return out;
        }
        let share = |i: usize| (rest as u128 * weights[i] as u128 / sum) as u64;
        let small: Vec<usize> = free.iter().copied().filter(|&i| share(i) < floor).collect();
        if !small.is_empty() {
            for i in small {
                fixed[i] = true;
            }
            continue;
        }
        for i in 0..weights.len() {
            out[i] = if fixed[i] { floor } else { 0 };
        }
        let mut given = 0u64;
        for &i in &free {
            out[i] = share(i);
            given += out[i];
        }
        // Largest remainders first, ties to the lower node.
        let mut rem: Vec<(u128, usize)> = free
            .iter()
            .map(|&i| (rest as u128 * weights[i] as u128 % sum, i))
            .collect();
        rem.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        for &(_, i) in rem.iter().take((rest - given) as usize) {
            out[i] += 1;
        }
        return out;
    }
}

/// Largest table QEMU's `-acpitable` takes ("ACPI table too big, requested: N, max: 65535").
pub const QEMU_MAX_TABLE_BYTES: usize = 65535;

/// Most SLIT localities QEMU's `-acpitable` takes: a table is at most
/// [`QEMU_MAX_TABLE_BYTES`], and a SLIT of L localities is 44 + L * L bytes.
pub const QEMU_MAX_LOCALITIES: usize = 255;

/// Bytes of a SLIT of `l` localities.
fn slit_len(l: usize) -> usize {
    numalab_algo::acpi::slit::SLIT_FIXED_BYTES + l * l
}

/// The SLIT to inject for `nodes` (by proximity domain, as [`Machine::slit`]), fitted to what
/// QEMU takes. The replay cuts the source's SLIT after the largest node domain; when that is
/// still more than [`QEMU_MAX_LOCALITIES`] localities (a domain of 255 or more), the nodes'
/// domains are renumbered 0..N-1 in node order (phantom localities left out), which keeps
/// every node's distances and the kernel's node order. More than 255 nodes cannot keep their
/// distances: refused, unless they are all Linux's defaults, which need no SLIT.
fn fit_slit(
    m: &Machine,
    nodes: &mut [PlanNode],
    notes: &mut Vec<String>,
) -> Result<Option<(usize, Vec<u8>)>, String> {
    let Some((l, matrix)) = &m.slit else {
        return Ok(None);
    };
    let max_pxm = nodes.iter().map(|n| n.pxm as usize).max().unwrap_or(0);
    let cut = (*l).min(max_pxm + 1);
    if cut <= QEMU_MAX_LOCALITIES {
        return Ok(m.slit.clone());
    }
    let n = nodes.len();
    let limit = QEMU_MAX_TABLE_BYTES;
    if n > QEMU_MAX_LOCALITIES {
        let default = m.distances.iter().enumerate().all(|(i, row)| {
            row.iter()
                .enumerate()
                .all(|(j, &d)| d == if i == j { 10 } else { 20 })
        });
        if !default {
            return Err(format!(
                "{}: {n} nodes need a SLIT of {} bytes to keep their distances, more than the \
                 {limit} bytes QEMU's -acpitable takes ({QEMU_MAX_LOCALITIES} localities at \
                 most): this machine cannot be replayed with its distances",
                m.source.display(),
                slit_len(n)
            ));
        }
        notes.push(format!(
            "replay: no SLIT injected: {n} nodes need one of {} bytes, more than the {limit} \
             bytes QEMU's -acpitable takes, and every distance is Linux's default (10 to self, \
             20 to others), which the kernel uses without a SLIT",
            slit_len(n)
        ));
        return Ok(None);
    }
    let old: Vec<u32> = nodes.iter().map(|p| p.pxm).collect();
    // A SLIT may have fewer localities than the domains (Linux then uses 10/20 for the rest).
    let at = |i: u32, j: u32| {
        let (i, j) = (i as usize, j as usize);
        (i < *l && j < *l).then(|| matrix.get(i * l + j).copied())?
    };
    let mut compact = Vec::with_capacity(n * n);
    for &i in &old {
        for &j in &old {
            compact.push(at(i, j).unwrap_or(if i == j { 10 } else { 20 }));
        }
    }
    for (i, p) in nodes.iter_mut().enumerate() {
        p.pxm = i as u32;
    }
    notes.push(format!(
        "replay: proximity domains {} renumbered 0-{} in the injected SRAT and SLIT: a SLIT up \
         to PXM {max_pxm} has {cut} localities ({} bytes), more than the {limit} bytes QEMU's \
         -acpitable takes; every node's distances are kept, {} phantom localities left out",
        numalab_algo::formats::numactl::id_ranges(&old),
        n - 1,
        slit_len(cut),
        cut - n
    ));
    Ok(Some((n, compact)))
}

/// Largest `--mem`, in MiB (512 GiB): half of the 1 TiB QEMU's TCG CPUs address (40 physical
/// address bits), which leaves room for the 4 GiB split and the PCI holes QEMU places above RAM.
pub const MAX_MEM_MIB: u64 = 512 << 10;

/// What the host can back, in MiB: RAM plus swap (Linux's default overcommit heuristic refuses
/// one allocation larger than that: QEMU's "cannot set up guest memory"), or None when the
/// host overcommits always (`vm.overcommit_memory=1`) or /proc/meminfo cannot be read.
pub fn host_backing_mib() -> Option<u64> {
    let mode = std::fs::read_to_string("/proc/sys/vm/overcommit_memory").unwrap_or_default();
    if mode.trim() == "1" {
        return None;
    }
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib = |key: &str| {
        info.lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
    };
    Some((kib("MemTotal:")? + kib("SwapTotal:").unwrap_or(0)) / 1024)
}

/// Why QEMU could not be given `mib` MiB, on a host that can back `backing_mib` (None: no host
/// limit known): over [`MAX_MEM_MIB`], or over the host's RAM and swap. One line, for `--mem`.
pub fn mem_problem(mib: u64, backing_mib: Option<u64>) -> Option<String> {
    if mib > MAX_MEM_MIB {
        return Some(format!(
            "{mib} MiB is more than the {} GiB numalab gives QEMU (its TCG CPUs address 1 TiB)",
            MAX_MEM_MIB >> 10
        ));
    }
    let host = backing_mib?;
    (mib > host).then(|| {
        format!(
            "{mib} MiB is more than this host's {host} MiB of RAM and swap: QEMU could not \
             allocate it"
        )
    })
}

/// Half of the host's available memory, at most [`DEFAULT_MAX_MIB`] (/proc/meminfo's
/// MemAvailable; [`DEFAULT_MAX_MIB`] when it cannot be read).
pub fn host_spare_mib() -> u64 {
    let avail_kib = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("MemAvailable:"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
    });
    avail_kib.map_or(DEFAULT_MAX_MIB, |k| (k / 1024 / 2).min(DEFAULT_MAX_MIB))
}

/// The QEMU machine for `m` with at most `smp` CPUs and `mem_mib` MiB (`spare_mib` when
/// None). `Err`: the run cannot hold the machine's shape (fewer CPUs than nodes with CPUs).
pub fn plan(
    m: &Machine,
    smp: Option<u32>,
    mem_mib: Option<u64>,
    spare_mib: u64,
) -> Result<Plan, String> {
    let mut notes = Vec::new();
    if let Some(n) = m
        .nodes
        .iter()
        .find(|n| n.cpus.is_empty() && n.size_mib == 0 && m.nodes.len() > 1)
    {
        return Err(format!(
            "{}: node {} has neither CPUs nor memory: no SRAT entry can describe it, so the \
             booted kernel (like Linux) would make no node of it",
            m.source.display(),
            n.id
        ));
    }
    let total: u64 = m.nodes.iter().map(|n| n.cpus.len() as u64).sum();
    let with_cpus = m.nodes.iter().filter(|n| !n.cpus.is_empty()).count() as u64;
    let limit = smp.unwrap_or(MAX_VCPUS).min(MAX_VCPUS) as u64;
    if with_cpus > limit {
        return Err(format!(
            "{}: {with_cpus} nodes have CPUs, more than the {limit} CPUs {}: every such node needs one",
            m.source.display(),
            if smp.is_some() { "--smp allows" } else { "TCG runs" }
        ));
    }
    let counts: Vec<u64> = if total > limit {
        let weights: Vec<u64> = m.nodes.iter().map(|n| n.cpus.len() as u64).collect();
        let c = split(limit, &weights, 1);
        notes.push(format!(
            "replay: {total} CPUs scaled to {limit} ({}), each node keeping its share: {}",
            if smp.is_some() {
                "--smp"
            } else {
                "TCG's limit"
            },
            m.nodes
                .iter()
                .zip(&c)
                .map(|(n, k)| format!("node {} {}->{k}", n.id, n.cpus.len()))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        c
    } else {
        if let Some(s) = smp.filter(|&s| s as u64 > total) {
            notes.push(format!(
                "replay: --smp {s} ignored: the machine has {total} CPUs"
            ));
        }
        m.nodes.iter().map(|n| n.cpus.len() as u64).collect()
    };
    // Kept CPUs (source ids), renumbered by source order.
    let kept: Vec<Vec<u32>> = m
        .nodes
        .iter()
        .zip(&counts)
        .map(|(n, &k)| n.cpus[..k as usize].to_vec())
        .collect();
    let mut all: Vec<u32> = kept.iter().flatten().copied().collect();
    all.sort_unstable();
    let renumber = |c: u32| all.binary_search(&c).unwrap_or(0) as u32;
    if total <= limit && all.iter().enumerate().any(|(i, &c)| c != i as u32) {
        notes.push(format!(
            "replay: CPU ids {} renumbered 0-{} (the booted kernel numbers CPUs densely)",
            numalab_algo::formats::numactl::id_ranges(&all),
            all.len().saturating_sub(1)
        ));
    }

    // Memory.
    let mut sizes: Vec<u64> = m.nodes.iter().map(|n| n.size_mib).collect();
    let no_memory = sizes.iter().all(|&s| s == 0);
    let with_mem = (sizes.iter().filter(|&&s| s > 0).count() as u64).max(1);
    let mut target = mem_mib.unwrap_or(spare_mib);
    if target < with_mem * MIN_NODE_MIB {
        notes.push(format!(
            "replay: {target} MiB raised to {} MiB: {with_mem} nodes with memory, at least {MIN_NODE_MIB} MiB each",
            with_mem * MIN_NODE_MIB
        ));
        target = with_mem * MIN_NODE_MIB;
    }
    if no_memory {
        if let Some(s) = sizes.first_mut() {
            *s = target;
        }
    }
    let src_total: u64 = sizes.iter().sum();
    let mem: Vec<u64> = if src_total > target {
        let v = split(target, &sizes, MIN_NODE_MIB);
        notes.push(format!(
            "replay: memory scaled from {src_total} MiB to {} MiB, each node keeping its share (at least {MIN_NODE_MIB} MiB)",
            v.iter().sum::<u64>()
        ));
        v
    } else {
        let v: Vec<u64> = sizes
            .iter()
            .map(|&s| if s > 0 { s.max(MIN_NODE_MIB) } else { 0 })
            .collect();
        if v != sizes {
            notes.push(format!(
                "replay: nodes with less than {MIN_NODE_MIB} MiB raised to {MIN_NODE_MIB} MiB"
            ));
        }
        v
    };
    let mut nodes: Vec<PlanNode> = m
        .nodes
        .iter()
        .zip(kept)
        .zip(&mem)
        .map(|((n, cpus), &mem_mib)| PlanNode {
            pxm: n.pxm,
            cpus: cpus.iter().map(|&c| renumber(c)).collect(),
            mem_mib,
        })
        .collect();
    let slit = fit_slit(m, &mut nodes, &mut notes)?;
    Ok(Plan {
        source: m.source.clone(),
        nodes,
        distances: m.distances.clone(),
        slit,
        cpus: all.len() as u32,
        mem_mib: mem.iter().sum(),
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::super::Node;
    use super::*;

    fn node(id: u32, cpus: std::ops::Range<u32>, size_mib: u64) -> Node {
        Node {
            id,
            pxm: id * 2,
            cpus: cpus.collect(),
            apic_ids: None,
            mem_ranges: None,
            size_mib,
            free_mib: 0,
        }
    }

    fn machine(nodes: Vec<Node>) -> Machine {
        let n = nodes.len();
        Machine {
            source: "m.txt".into(),
            what: String::new(),
            nodes,
            distances: (0..n)
                .map(|i| (0..n).map(|j| if i == j { 10 } else { 20 }).collect())
                .collect(),
            slit: None,
            warnings: vec![],
            notes: vec![],
        }
    }

    /// `--mem 99999999999999G` passed the command line and QEMU exited 4.
    #[test]
    fn mem_is_bounded_by_qemu_and_the_host() {
        assert_eq!(mem_problem(2048, Some(4096)), None);
        assert_eq!(mem_problem(MAX_MEM_MIB, None), None);
        let e = mem_problem(MAX_MEM_MIB + 1, None).unwrap();
        assert!(
            e.contains("more than the 512 GiB numalab gives QEMU"),
            "{e}"
        );
        let e = mem_problem(30 << 10, Some(23 << 10)).unwrap();
        assert!(
            e.contains("more than this host's 23552 MiB of RAM and swap"),
            "{e}"
        );
        assert_eq!(mem_problem(30 << 10, None), None);
    }

    #[test]
    fn split_keeps_shares_and_floors() {
        assert_eq!(split(8, &[4, 4, 0, 8], 1), vec![2, 2, 0, 4]);
        assert_eq!(split(10, &[1, 1, 1], 1), vec![4, 3, 3]);
        assert_eq!(split(256, &[1000, 1, 0, 3], 64), vec![128, 64, 0, 64]);
        assert_eq!(split(2048, &[512, 512, 512, 512], 64), vec![512; 4]);
    }

    #[test]
    fn a_small_machine_is_kept_as_is() {
        let m = machine(vec![
            node(0, 0..4, 512),
            node(1, 4..8, 0),
            node(2, 8..8, 256),
        ]);
        let p = plan(&m, None, Some(2048), 0).unwrap();
        assert_eq!(p.nodes[0].cpus, vec![0, 1, 2, 3]);
        assert_eq!(p.nodes[1].mem_mib, 0);
        assert_eq!((p.cpus, p.mem_mib), (8, 768));
        assert!(p.notes.is_empty(), "{:?}", p.notes);
        assert_eq!(p.nodes[2].pxm, 4);
    }

    #[test]
    fn big_machines_are_scaled_per_node() {
        // 4 nodes x 96 CPUs, 256 GiB each, onto 16 CPUs and 1 GiB.
        let m = machine(
            (0..4)
                .map(|i| node(i, i * 96..(i + 1) * 96, 262144))
                .collect(),
        );
        let p = plan(&m, Some(16), Some(1024), 0).unwrap();
        assert_eq!(p.nodes[1].cpus, vec![4, 5, 6, 7]);
        assert!(p.nodes.iter().all(|n| n.mem_mib == 256));
        assert_eq!(p.notes.len(), 2, "{:?}", p.notes);
        assert!(p.notes[0].contains("384 CPUs scaled to 16 (--smp)"));
        // Without --smp, TCG's 255: shares 64/64/64/63.
        let p = plan(&m, None, None, 512).unwrap();
        let counts: Vec<usize> = p.nodes.iter().map(|n| n.cpus.len()).collect();
        assert_eq!(counts, vec![64, 64, 64, 63]);
        assert_eq!(p.mem_mib, 512);
        assert!(plan(&m, Some(3), None, 512)
            .unwrap_err()
            .contains("4 nodes have CPUs"));
        let empty = machine(vec![node(0, 0..2, 64), node(1, 0..0, 0)]);
        let e = plan(&empty, None, None, 512).unwrap_err();
        assert!(e.contains("node 1 has neither CPUs nor memory"), "{e}");
    }

    #[test]
    fn sparse_cpu_ids_are_renumbered_and_tiny_memory_raised() {
        let mut m = machine(vec![node(0, 0..2, 10), node(1, 0..0, 0)]);
        m.nodes[0].cpus = vec![8, 2];
        m.nodes[1].cpus = vec![5];
        let p = plan(&m, Some(200), Some(32), 0).unwrap();
        assert_eq!(p.nodes[0].cpus, vec![2, 0]);
        assert_eq!(p.nodes[1].cpus, vec![1]);
        assert_eq!(p.nodes[0].mem_mib, 64);
        assert_eq!(p.notes.len(), 4, "{:?}", p.notes);
        // No node with memory at all: node 0 gets it.
        let m = machine(vec![node(0, 0..2, 0)]);
        assert_eq!(plan(&m, None, Some(128), 0).unwrap().nodes[0].mem_mib, 128);
    }
}
