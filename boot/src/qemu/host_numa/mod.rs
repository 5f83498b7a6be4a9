//! Host placement of a KVM guest: the host's NUMA topology read from a sysfs root
//! (`devices/system/node`, `devices/system/cpu`), the guest-to-host node map (guest node i on
//! host node i mod the host's node count, or `--host-map 0=1,1=0`), the pinning plan (each
//! vCPU on the CPUs of the host node that backs its guest node) and the memory backends bound
//! to that node (`host-nodes=H,policy=bind`, as QEMU's memory-backend objects take them).
//! Pure: it reads only the sysfs root it is given and starts nothing (docs/running.md, "On
//! your own server").

use crate::qemu::machine::{Backend, Numa, QemuMachine};
use std::collections::BTreeMap;
use std::path::Path;

/// `--host-map GUEST=HOST,...` as parsed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostMap(pub Vec<(u32, u32)>);

/// What the command line asks of the placement (`--pin`, `--host-map`, `--oversubscribe`,
/// `--prealloc`, `--hugepages`) and where the host's sysfs is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// `--pin`: place even on a host of one node (the default under KVM on more than one).
    pub pin: bool,
    pub host_map: HostMap,
    pub oversubscribe: bool,
    pub prealloc: bool,
    /// A hugetlbfs mount for the guest's memory.
    pub hugepages: Option<std::path::PathBuf>,
    /// The sysfs root (`/sys`; a fake tree in tests).
    pub sys_root: std::path::PathBuf,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            pin: false,
            host_map: HostMap::default(),
            oversubscribe: false,
            prealloc: false,
            hugepages: None,
            sys_root: std::path::PathBuf::from("/sys"),
        }
    }
}

impl Options {
    /// The first placement option the command line gave (`--pin`, ...), if any: they only
    /// mean something under KVM.
    pub fn asked(&self) -> Option<&'static str> {
        [
            (self.pin, "--pin"),
            (!self.host_map.0.is_empty(), "--host-map"),
            (self.oversubscribe, "--oversubscribe"),
            (self.prealloc, "--prealloc"),
            (self.hugepages.is_some(), "--hugepages"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }

    /// The placement of `machine` under KVM on the host these options read: None when
    /// nothing asks for one (a one-node host without `--pin` or `--host-map`), else the plan
    /// or why it is refused.
    pub fn place(&self, machine: &QemuMachine) -> Option<Result<Placement, String>> {
        let host = match read_host(&self.sys_root) {
            Ok(h) => h,
            Err(e) => return Some(Err(format!("host topology: {e}"))),
        };
        if host.nodes.len() < 2 && !self.pin && self.host_map.0.is_empty() {
            // Still refuse oversubscription: it makes KVM's contention figures meaningless.
            return match plan(machine, &host, &[], self.oversubscribe) {
                Ok(_) => None,
                Err(e) => Some(Err(e)),
            };
        }
        Some(plan(machine, &host, &self.host_map.0, self.oversubscribe))
    }
}

impl Options {
    /// `machine` placed on the host (memory bound, `placed_machine`) with its placement, for
    /// a boot under KVM (`kvm`); None when no placement applies (`place`); `Err`: why the
    /// host refuses the machine.
    pub fn placed(
        &self,
        machine: &QemuMachine,
        kvm: bool,
    ) -> Result<Option<(QemuMachine, Placement)>, String> {
        if !kvm {
            return Ok(None);
        }
        match self.place(machine) {
            None => Ok(None),
            Some(p) => {
                let p = p?;
                let placed = placed_machine(machine, &p, self.prealloc, self.hugepages.as_deref());
                Ok(Some((placed, p)))
            }
        }
    }
}

/// One host node: its id and its online CPUs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostNode {
    pub id: u32,
    pub cpus: Vec<u32>,
}

/// The host as sysfs shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostTopology {
    /// Nodes with their CPUs, by id.
    pub nodes: Vec<HostNode>,
    /// Every online CPU.
    pub cpus_online: Vec<u32>,
}

/// Parses Linux's CPU or node list format (`0-7,16-23`, `3`, an empty list), as in
/// /sys/devices/system/cpu/online and nodeN/cpulist.
pub fn parse_list(text: &str) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let num = |s: &str| {
            s.parse::<u32>()
                .map_err(|_| format!("'{}' is not a CPU list (e.g. 0-7,16-23)", text.trim()))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b || b - a > 1 << 16 {
                    return Err(format!("'{part}': not an ascending range"));
                }
                out.extend(a..=b);
            }
            None => out.push(num(part)?),
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Writes `cpus` in Linux's list format (`0-7,16-23`).
pub fn format_list(cpus: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

fn read_list(path: &Path) -> Result<Vec<u32>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse_list(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Reads the host's topology under the sysfs root `sys` (`/sys` on a real host): the online
/// CPUs from `devices/system/cpu/online`, the nodes from `devices/system/node/online` and
/// each `nodeN/cpulist`. A kernel without NUMA (no node directory) is one node 0 holding
/// every online CPU.
pub fn read_host(sys: &Path) -> Result<HostTopology, String> {
    let cpus_online = read_list(&sys.join("devices/system/cpu/online"))?;
    let node_dir = sys.join("devices/system/node");
    if !node_dir.join("online").exists() {
        return Ok(HostTopology {
            nodes: vec![HostNode {
                id: 0,
                cpus: cpus_online.clone(),
            }],
            cpus_online,
        });
    }
    let mut nodes = Vec::new();
    for id in read_list(&node_dir.join("online"))? {
        let cpus = read_list(&node_dir.join(format!("node{id}/cpulist")))?
            .into_iter()
            .filter(|c| cpus_online.contains(c))
            .collect();
        nodes.push(HostNode { id, cpus });
    }
    if nodes.is_empty() {
        return Err(format!("{}: no node online", node_dir.display()));
    }
    Ok(HostTopology { nodes, cpus_online })
}

/// Parses `--host-map`: `GUEST=HOST` pairs separated by commas (`0=1,1=0`).
pub fn parse_host_map(text: &str) -> Result<Vec<(u32, u32)>, String> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for pair in text.split(',') {
        let (g, h) = pair
            .split_once('=')
            .and_then(|(g, h)| Some((g.trim().parse().ok()?, h.trim().parse().ok()?)))
            .ok_or_else(|| format!("'{pair}' is not GUEST=HOST (e.g. 0=1,1=0)"))?;
        if out.iter().any(|&(seen, _)| seen == g) {
            return Err(format!("guest node {g} is mapped twice"));
        }
        out.push((g, h));
    }
    Ok(out)
}

/// A guest node as the machine describes it: id, vCPUs, memory backend id.
#[derive(Clone, Debug, PartialEq, Eq)]
struct GuestNode {
    id: u32,
    vcpus: Vec<u32>,
    memdev: Option<String>,
}

/// The guest's nodes from the machine's `-numa node` items (a machine without any: one node 0
/// with every vCPU and, when it has exactly one backend, that backend).
fn guest_nodes(machine: &QemuMachine) -> Vec<GuestNode> {
    let mut nodes: Vec<GuestNode> = Vec::new();
    for (i, n) in machine.numa.iter().enumerate() {
        if let Numa::Node {
            nodeid,
            cpus,
            memdev,
            ..
        } = n
        {
            nodes.push(GuestNode {
                id: nodeid.unwrap_or(i as u32),
                vcpus: cpus.iter().flat_map(|&(a, b)| a..=b).collect(),
                memdev: memdev.clone(),
            });
        }
    }
    if nodes.is_empty() {
        nodes.push(GuestNode {
            id: 0,
            vcpus: (0..machine.cpus()).collect(),
            memdev: (machine.backends.len() == 1).then(|| machine.backends[0].id.clone()),
        });
    }
    nodes
}

/// One vCPU's place: its guest node, the host node backing it and that node's CPUs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VcpuPin {
    pub vcpu: u32,
    pub guest_node: u32,
    pub host_node: u32,
    pub host_cpus: Vec<u32>,
}

/// The placement of a machine on a host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Guest node -> host node, by guest node.
    pub map: Vec<(u32, u32)>,
    /// Every vCPU present at boot, in order.
    pub vcpus: Vec<VcpuPin>,
    /// Memory backends: (id, guest node, the host node its memory is bound to).
    pub backends: Vec<(String, u32, u32)>,
}

/// The guest-to-host node map of `machine` on `host`: guest node i (in the machine's order)
/// on host node i mod the host's node count, unless `explicit` (`--host-map`) names it. An
/// explicit pair for a guest node the machine lacks, or a host node the host lacks, is
/// refused.
pub fn node_map(
    machine: &QemuMachine,
    host: &HostTopology,
    explicit: &[(u32, u32)],
) -> Result<Vec<(u32, u32)>, String> {
    let guest = guest_nodes(machine);
    for &(g, h) in explicit {
        if !guest.iter().any(|n| n.id == g) {
            return Err(format!(
                "--host-map {g}={h}: the machine has no guest node {g}"
            ));
        }
        if !host.nodes.iter().any(|n| n.id == h) {
            let ids: Vec<u32> = host.nodes.iter().map(|n| n.id).collect();
            return Err(format!(
                "--host-map {g}={h}: the host has no node {h} (its nodes: {})",
                format_list(&ids)
            ));
        }
    }
    Ok(guest
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let h = explicit
                .iter()
                .find(|&&(g, _)| g == n.id)
                .map_or(host.nodes[i % host.nodes.len()].id, |&(_, h)| h);
            (n.id, h)
        })
        .collect())
}

/// The placement of `machine` on `host` with the node map `explicit` overrides. Refused
/// (the reason, for exit status 2) when the machine has more vCPUs than the host has online
/// CPUs, or a host node would run more vCPUs than it has CPUs, unless `oversubscribe`:
/// vCPUs taking turns on a core make contention figures meaningless.
pub fn plan(
    machine: &QemuMachine,
    host: &HostTopology,
    explicit: &[(u32, u32)],
    oversubscribe: bool,
) -> Result<Placement, String> {
    let map = node_map(machine, host, explicit)?;
    let host_of = |g: u32| map.iter().find(|&&(x, _)| x == g).map(|&(_, h)| h);
    let cpus_of = |h: u32| {
        host.nodes
            .iter()
            .find(|n| n.id == h)
            .map(|n| n.cpus.clone())
            .unwrap_or_default()
    };
    let present = machine.cpus();
    let mut vcpus = Vec::new();
    let mut backends = Vec::new();
    for n in guest_nodes(machine) {
        let h = host_of(n.id).unwrap_or(0);
        for &v in n.vcpus.iter().filter(|&&v| v < present) {
            vcpus.push(VcpuPin {
                vcpu: v,
                guest_node: n.id,
                host_node: h,
                host_cpus: cpus_of(h),
            });
        }
        if let Some(id) = n.memdev {
            backends.push((id, n.id, h));
        }
    }
    vcpus.sort_by_key(|p| p.vcpu);
    if !oversubscribe {
        if present as usize > host.cpus_online.len() {
            return Err(format!(
                "{present} vCPUs but the host has {} online CPUs: vCPUs would take turns on \
                 the cores and contention figures would mean nothing (--oversubscribe to run \
                 anyway)",
                host.cpus_online.len()
            ));
        }
        let mut per_host: BTreeMap<u32, usize> = BTreeMap::new();
        for p in &vcpus {
            *per_host.entry(p.host_node).or_default() += 1;
        }
        for (h, k) in per_host {
            let have = cpus_of(h).len();
            if k > have {
                return Err(format!(
                    "host node {h} would run {k} vCPUs on its {have} CPUs (--host-map to \
                     spread the guest nodes, or --oversubscribe to run anyway)"
                ));
            }
        }
    }
    Ok(Placement {
        map,
        vcpus,
        backends,
    })
}

/// `machine` with each placed memory backend bound to its host node
/// (`host-nodes=H,policy=bind`), `prealloc=on` when asked, and on hugetlbfs
/// (`memory-backend-file,mem-path=DIR`) when `hugepages` names the mount.
pub fn placed_machine(
    machine: &QemuMachine,
    placement: &Placement,
    prealloc: bool,
    hugepages: Option<&Path>,
) -> QemuMachine {
    let mut m = machine.clone();
    for b in &mut m.backends {
        let Some(&(_, _, h)) = placement.backends.iter().find(|(id, ..)| *id == b.id) else {
            continue;
        };
        bind(b, h, prealloc, hugepages);
    }
    m
}

fn bind(b: &mut Backend, host_node: u32, prealloc: bool, hugepages: Option<&Path>) {
    let owned = ["host-nodes=", "policy=", "prealloc=", "mem-path="];
    b.other.retain(|w| !owned.iter().any(|k| w.starts_with(k)));
    if let Some(dir) = hugepages {
        b.kind = "memory-backend-file".into();
        b.other.push(format!("mem-path={}", dir.display()));
    }
    b.other.push(format!("host-nodes={host_node}"));
    b.other.push("policy=bind".into());
    if prealloc {
        b.other.push("prealloc=on".into());
    }
}

impl Placement {
    /// One line per guest node: `guest node G -> host node H: vCPUs 0-7 on host CPUs 0-7,
    /// memory m0 bound`.
    pub fn describe(&self) -> Vec<String> {
        self.map
            .iter()
            .map(|&(g, h)| {
                let vcpus: Vec<u32> = self
                    .vcpus
                    .iter()
                    .filter(|p| p.guest_node == g)
                    .map(|p| p.vcpu)
                    .collect();
                let cpus = self
                    .vcpus
                    .iter()
                    .find(|p| p.guest_node == g)
                    .map_or(String::from("-"), |p| format_list(&p.host_cpus));
                let mem: Vec<&str> = self
                    .backends
                    .iter()
                    .filter(|(_, bg, _)| *bg == g)
                    .map(|(id, ..)| id.as_str())
                    .collect();
                format!(
                    "guest node {g} -> host node {h}: vCPUs {} on host CPUs {cpus}, memory {}",
                    if vcpus.is_empty() {
                        "none".into()
                    } else {
                        format_list(&vcpus)
                    },
                    if mem.is_empty() {
                        "none".into()
                    } else {
                        format!("{} bound", mem.join(","))
                    }
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
