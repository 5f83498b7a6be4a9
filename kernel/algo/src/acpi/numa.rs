//! From table bytes to a [`Topology`]: picks the first valid MADT, SRAT and SLIT, keeps or
//! drops each entry by the documented rules, maps sparse proximity domains to dense node ids
//! (in increasing proximity-domain order), intersects each node's SRAT ranges with the
//! usable memory map, and assigns every CPU a node.
//!
//! Decisions (each announced by one warning line naming the table and entry), Linux's where
//! Linux has one (docs/topology.md lists each with its Linux source):
//! - no SRAT, or no SRAT that passes its checks, or one without an enabled memory range in
//!   RAM: a single node 0 with every CPU and all usable memory;
//! - a SRAT Linux declares bad (an entry length that does not fit its type, a zero length, an
//!   enabled entry's domain at or past MAX_PXM_DOMAINS: `srat::parse`), or memory of two
//!   domains that overlaps (`numa_cleanup_meminfo`): the same single node, as Linux boots;
//! - disabled entries: skipped silently (QEMU pads the SRAT with disabled zero-length ones);
//! - memory entries that are zero-length, overflow, or lie outside the memory map (unless
//!   hot-pluggable: QEMU describes its hotplug area that way): dropped; non-volatile ranges
//!   are not used as RAM (listed by `acpi.dump`);
//! - usable RAM in no SRAT range: given to the boot CPU's nearest node with memory;
//! - processor entries (MADT or SRAT) with the reserved invalid APIC id, 0xff in a local APIC
//!   entry or 0xffffffff in a local x2APIC entry: dropped, not CPUs (as Linux ignores them);
//!   MADT processors whose id the APIC mode cannot address (above 254 in xAPIC mode): refused,
//!   never brought up, and their SRAT entries dropped silently;
//! - processor entries for an APIC id the MADT does not list: dropped (entries for MADT
//!   processors that are present but disabled, as QEMU writes for `maxcpus`, are dropped
//!   silently); two entries for one APIC id: the last wins (Linux's `set_apicid_to_node`);
//!   CPUs without an entry: placed on the boot CPU's nearest node with memory;
//! - no SLIT: 10 to self, 20 to others (Linux's default); a SLIT that Linux's `slit_valid()`
//!   rejects (a self-distance other than 10 or a remote one of 10 or less, in any locality,
//!   phantom ones included): not used (defaults); a SLIT with fewer localities than a node's
//!   domain: used for the localities it has, the rest 10/20 (`acpi_numa_slit_init`); 255
//!   and asymmetric matrices: kept as given (legal), with a warning.
//!
//! Warnings are bounded (`acpi::warn`): lists inside one line show their first items, and
//! each table gives at most a fixed number of lines.
//!
//! [`Topology`]: crate::topology::Topology

use super::apic::{self, ApicMode};
use super::madt::{self, Madt};
use super::slit::{self, Slit};
use super::srat::{self, Srat};
use super::warn::{cap_per_table, capped_join};
use crate::memrange::{intersect, normalize, subtract};
use crate::topology::{CpuId, CpuInfo, NodeId, NodeInfo, Topology};
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

/// Most CPUs the MADT parse keeps in the topology (an ACPI parse limit, bounding what bad
/// tables cost; CpuId is 16 bits). The kernel runs at most `percpu::MAX_CPUS` (256) of them:
/// smp bring-up leaves the CPUs above that offline with a warning.
pub const MAX_ACPI_CPUS: usize = 4096;
/// Most nodes (Linux's usual MAX_NUMNODES).
pub const MAX_NODES: usize = 1024;

/// What the kernel found: the boot CPU, the raw tables (every copy of each signature, in
/// XSDT order) and the bootloader's memory map.
#[derive(Clone, Copy, Debug, Default)]
pub struct Machine<'a> {
    /// APIC id of the CPU running this code (CPUID), always CPU 0.
    pub boot_apic_id: u32,
    /// The APIC mode the kernel will use: CPUs it cannot address are not brought up.
    pub apic_mode: ApicMode,
    pub madts: &'a [&'a [u8]],
    pub srats: &'a [&'a [u8]],
    pub slits: &'a [&'a [u8]],
    /// Usable RAM, [start, end) ranges.
    pub usable: &'a [(u64, u64)],
    /// Every range in the memory map, whatever its kind ("RAM" for the outside-RAM check).
    pub ram: &'a [(u64, u64)],
}

/// The topology, the warnings to print, and the dump (`acpi.dump=1`) of the tables used.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub topology: Topology,
    pub warnings: Vec<String>,
    pub dump: Vec<String>,
}

/// Parses every copy of a table and keeps the first valid one. Each rejected copy gives one
/// warning; when none is valid, the last warning carries `fallback` (the decision).
fn pick<T>(
    name: &str,
    tables: &[&[u8]],
    parse: fn(&[u8]) -> Result<T, String>,
    fallback: &str,
    warnings: &mut Vec<String>,
) -> Option<T> {
    let mut chosen: Option<T> = None;
    let mut errors: Vec<String> = Vec::new();
    for (i, t) in tables.iter().enumerate() {
        if chosen.is_some() {
            warnings.push(format!(
                "{name}: another {name} (table {} of {}) ignored: the first valid one is used",
                i + 1,
                tables.len()
            ));
            continue;
        }
        // ACPICA warns about a bad checksum and installs the table; Linux uses it.
        if let Some(w) = super::sdt::bad_checksum(name, t) {
            warnings.push(w);
        }
        match parse(t) {
            Ok(v) => chosen = Some(v),
            Err(e) => errors.push(e),
        }
    }
    let n = errors.len();
    for (i, e) in errors.into_iter().enumerate() {
        let decision = if chosen.is_none() && i + 1 == n {
            fallback
        } else {
            "this table ignored"
        };
        warnings.push(format!("{e}: {decision}"));
    }
    if tables.is_empty() {
        warnings.push(format!("{name}: no {name} table: {fallback}"));
    }
    chosen
}

/// Index of the node with memory nearest to `from` (ties by id), if any.
fn nearest_with_memory(from: usize, dist: &[Vec<u8>], has_mem: &[bool]) -> Option<usize> {
    (0..has_mem.len())
        .filter(|&m| has_mem[m])
        .min_by_key(|&m| (dist[from][m], m))
}

/// `ids` separated by spaces, the first MAX_LISTED of them (then "... and K more").
fn id_list(ids: &[u32]) -> String {
    capped_join(ids, " ")
}

/// The CPUs: boot CPU first, then every enabled MADT processor in table order whose APIC id
/// is valid and addressable in `mode`; and the ids refused because `mode` cannot address them
/// (their SRAT entries are then dropped without a second warning).
fn cpu_list(
    boot: u32,
    mode: ApicMode,
    madt: Option<&Madt>,
    warnings: &mut Vec<String>,
) -> (Vec<u32>, BTreeSet<u32>) {
    let mut apic_ids = vec![boot];
    let Some(madt) = madt else {
        return (apic_ids, BTreeSet::new());
    };
    warnings.extend(madt.warnings.iter().cloned());
    let enabled = madt.enabled_apic_ids(warnings);
    if !enabled.iter().any(|&(id, _)| id == boot) {
        warnings.push(format!(
            "MADT: the boot CPU's APIC id {boot} is not listed as enabled: kept as CPU 0"
        ));
    }
    // The boot CPU is running, whatever its id: only the others are checked against the mode.
    let others: Vec<(u32, usize)> = enabled.into_iter().filter(|&(id, _)| id != boot).collect();
    let (others, refused_warnings) = apic::addressable(mode, &others);
    warnings.extend(refused_warnings);
    let max = mode.max_apic_id();
    let refused: BTreeSet<u32> = madt
        .cpus
        .iter()
        .map(|c| c.apic_id)
        .filter(|&id| id > max && id != boot)
        .collect();
    for (id, index) in others {
        if apic_ids.len() == MAX_ACPI_CPUS {
            warnings.push(format!(
                "MADT entry {index}: more than {MAX_ACPI_CPUS} CPUs: this and later processors dropped"
            ));
            break;
        }
        apic_ids.push(id);
    }
    (apic_ids, refused)
}

/// Builds the topology of `m`. Never panics, whatever the bytes. Each table gives at most
/// `warn::MAX_LINES_PER_TABLE` warning lines (then one line counting the rest).
pub fn build(m: &Machine) -> Outcome {
    let mut outcome = build_all(m);
    outcome.warnings = cap_per_table(outcome.warnings);
    outcome
}

fn build_all(m: &Machine) -> Outcome {
    let mut warnings = Vec::new();
    let mut dump = Vec::new();
    let usable = normalize(m.usable);
    let ram = normalize(m.ram);

    let madt = pick(
        "MADT",
        m.madts,
        madt::parse,
        "only the boot CPU is used",
        &mut warnings,
    );
    if let Some(t) = &madt {
        dump.extend(t.dump.iter().cloned());
    }
    let (apic_ids, refused) = cpu_list(m.boot_apic_id, m.apic_mode, madt.as_ref(), &mut warnings);
    let single = |warnings: Vec<String>, dump: Vec<String>| Outcome {
        topology: Topology::single_node(&apic_ids, usable.clone()),
        warnings,
        dump,
    };

    let fallback = "single node holding all memory and CPUs";
    let Some(srat) = pick("SRAT", m.srats, srat::parse, fallback, &mut warnings) else {
        return single(warnings, dump);
    };
    dump.extend(srat.dump.iter().cloned());
    warnings.extend(srat.warnings.iter().cloned());
    let slit = if m.slits.is_empty() {
        None
    } else {
        pick(
            "SLIT",
            m.slits,
            slit::parse,
            "SLIT not used, default distances 10/20",
            &mut warnings,
        )
    };
    if let Some(s) = &slit {
        dump.extend(s.dump.iter().cloned());
        warnings.extend(s.warnings.iter().cloned());
    }
    // Processors the MADT lists but not as enabled (hotplug, `-smp N,maxcpus=M`) may have
    // SRAT entries; those are dropped silently, as are those of CPUs refused (and warned about)
    // because the APIC mode cannot address them.
    let mut absent: BTreeSet<u32> = madt
        .iter()
        .flat_map(|t| t.cpus.iter())
        .filter(|c| !c.enabled() && !apic::is_invalid_id(c.apic_id, c.x2apic))
        .map(|c| c.apic_id)
        .collect();
    absent.extend(refused);
    let cpus = Cpus {
        apic_ids: &apic_ids,
        absent: &absent,
        boot_apic_id: m.boot_apic_id,
    };
    match place(&srat, slit.as_ref(), &cpus, (&usable, &ram), &mut warnings) {
        Some(topology) => Outcome {
            topology,
            warnings,
            dump,
        },
        None => single(warnings, dump),
    }
}

/// Memory entries kept: (pxm, start, end, entry). None when memory of two domains overlaps:
/// Linux's `numa_cleanup_meminfo` (arch/x86/mm/numa.c in 6.1, mm/numa_memblks.c in 7.x) then
/// fails the ACPI NUMA init ("node A [mem ...] overlaps with node B [mem ...]", -EINVAL) and
/// x86 boots one node; the warning names both entries.
fn kept_memory(
    srat: &Srat,
    ram: &[(u64, u64)],
    warnings: &mut Vec<String>,
) -> Option<Vec<(u32, u64, u64, usize)>> {
    let mut kept: Vec<(u32, u64, u64, usize)> = Vec::new();
    let mut claimed = Claimed::default();
    for mem in srat
        .mems
        .iter()
        .filter(|m| m.enabled() && !m.non_volatile())
    {
        let what = format!(
            "SRAT entry {} (memory PXM {} {:#x}+{:#x})",
            mem.index, mem.pxm, mem.base, mem.length
        );
        if mem.length == 0 {
            warnings.push(format!("{what}: enabled with length 0: entry dropped"));
            continue;
        }
        let Some(end) = mem.base.checked_add(mem.length) else {
            warnings.push(format!("{what}: range overflows 64 bits: entry dropped"));
            continue;
        };
        if intersect(ram, &[(mem.base, end)]).is_empty() {
            if !mem.hotpluggable() {
                warnings.push(format!(
                    "{what}: outside RAM (no part of it is in the memory map): entry dropped"
                ));
            }
            continue;
        }
        if let Some((s, e, pxm, index)) = claimed.claim(mem.base, end, mem.pxm, mem.index) {
            warnings.push(format!(
                "{what}: overlaps entry {index} of PXM {pxm} ({s:#x}-{e:#x}): Linux's \
                 numa_cleanup_meminfo() refuses overlapping nodes (NUMA off): single node \
                 holding all memory and CPUs"
            ));
            return None;
        }
        kept.push((mem.pxm, mem.base, end, mem.index));
    }
    Some(kept)
}

/// The address space claimed so far by kept memory entries: disjoint intervals keyed by
/// start, each (end, pxm, first entry index); overlapping ranges of one domain are merged.
/// O(log n) per entry, so a table of 25000 entries costs no quadratic scan.
#[derive(Default)]
struct Claimed(BTreeMap<u64, (u64, u32, usize)>);

impl Claimed {
    /// Claims [start, end) for `pxm`, or returns the other domain's interval it overlaps
    /// (start, end, pxm, entry index) and claims nothing.
    fn claim(
        &mut self,
        start: u64,
        end: u64,
        pxm: u32,
        index: usize,
    ) -> Option<(u64, u64, u32, usize)> {
        // Intervals are disjoint, so the ones meeting [start, end) are the last starting at or
        // before `start` (if it reaches past `start`) and those starting inside.
        let before = self
            .0
            .range(..=start)
            .next_back()
            .filter(|(_, v)| v.0 > start);
        let inside = self.0.range(start..end).filter(|(&s, _)| s != start);
        let meeting: Vec<(u64, (u64, u32, usize))> = before
            .into_iter()
            .chain(inside)
            .map(|(&s, &v)| (s, v))
            .collect();
        if let Some(&(s, (e, p, i))) = meeting.iter().find(|(_, v)| v.1 != pxm) {
            return Some((s, e, p, i));
        }
        let (mut lo, mut hi, mut first) = (start, end, index);
        for (s, (e, _, i)) in meeting {
            self.0.remove(&s);
            lo = lo.min(s);
            hi = hi.max(e);
            first = first.min(i);
        }
        self.0.insert(lo, (hi, pxm, first));
        None
    }
}

/// The CPUs as the MADT gave them.
struct Cpus<'a> {
    /// CpuId order: boot CPU, then enabled MADT processors.
    apic_ids: &'a [u32],
    /// MADT processors present but not enabled, or refused by the APIC mode.
    absent: &'a BTreeSet<u32>,
    boot_apic_id: u32,
}

/// [start, end) ranges of the memory map.
type Ranges<'a> = &'a [(u64, u64)];

/// The NUMA placement, or None for the single-node fallback (its warning already pushed).
fn place(
    srat: &Srat,
    slit: Option<&Slit>,
    cpus_in: &Cpus,
    (usable, ram): (Ranges, Ranges),
    warnings: &mut Vec<String>,
) -> Option<Topology> {
    let (apic_ids, boot_apic_id) = (cpus_in.apic_ids, cpus_in.boot_apic_id);
    let kept = kept_memory(srat, ram, warnings)?;

    // Processor entries -> proximity domain of each CPU.
    let mut cpu_pxm: Vec<Option<(u32, usize)>> = vec![None; apic_ids.len()];
    let mut unknown: Vec<(usize, u32)> = Vec::new();
    let cpu_of: BTreeMap<u32, usize> = apic_ids.iter().enumerate().map(|(k, &a)| (a, k)).collect();
    for c in srat.cpus.iter().filter(|c| c.enabled) {
        if apic::is_invalid_id(c.apic_id, c.x2apic) {
            warnings.push(format!(
                "SRAT entry {} (processor {}APIC id {:#x}): {}: entry dropped",
                c.index,
                if c.x2apic { "x2" } else { "" },
                c.apic_id,
                apic::INVALID_ID_REASON
            ));
            continue;
        }
        match cpu_of.get(&c.apic_id).copied() {
            None if cpus_in.absent.contains(&c.apic_id) => {}
            None => unknown.push((c.index, c.apic_id)),
            // Linux's set_apicid_to_node() overwrites: the last entry of an APIC id wins.
            Some(k) => {
                if let Some((pxm, first)) = cpu_pxm[k] {
                    warnings.push(format!(
                        "SRAT entry {first} (processor APIC id {}, PXM {pxm}) is overridden by entry {} \
                         (PXM {}): the last entry of an APIC id wins, as in Linux",
                        c.apic_id, c.index, c.pxm
                    ));
                }
                cpu_pxm[k] = Some((c.pxm, c.index));
            }
        }
    }
    if !unknown.is_empty() {
        let entries: Vec<u32> = unknown.iter().map(|u| u.0 as u32).collect();
        let ids: Vec<u32> = unknown.iter().map(|u| u.1).collect();
        warnings.push(format!(
            "SRAT entries {} (processor APIC ids {}): APIC id not in the MADT: entries dropped",
            id_list(&entries),
            id_list(&ids)
        ));
    }

    // Proximity domains -> dense node ids, in increasing domain order.
    let mut pxms: Vec<u32> = kept
        .iter()
        .map(|k| k.0)
        .chain(cpu_pxm.iter().flatten().map(|c| c.0))
        .collect();
    pxms.sort_unstable();
    pxms.dedup();
    // srat::parse refused every domain at or past MAX_PXM_DOMAINS (= MAX_NODES), as Linux
    // does, so every domain is a node.
    let n = pxms.len();
    // The SLIT for the nodes (its warnings are pushed once the NUMA placement is sure).
    let slit_for_nodes = slit.map(|s| s.distances_for(&pxms));
    let node_of = |pxm: u32| pxms.binary_search(&pxm).ok();
    let mut mem: Vec<Vec<(u64, u64)>> = vec![Vec::new(); n];
    for &(pxm, s, e, _) in &kept {
        if let Some(i) = node_of(pxm) {
            mem[i].extend(intersect(usable, &[(s, e)]));
        }
    }
    let has_mem: Vec<bool> = mem.iter().map(|r| !r.is_empty()).collect();
    if !has_mem.iter().any(|&b| b) {
        // The single-node fallback: no domain is a node.
        warnings.push(format!(
            "SRAT: no enabled memory affinity entry covers usable RAM ({} memory entries, {} kept): \
             single node holding all memory and CPUs",
            srat.mems.len(),
            kept.len()
        ));
        return None;
    }

    let distances: Vec<Vec<u8>> = match slit_for_nodes {
        Some(Ok((d, w))) => {
            warnings.extend(w);
            d
        }
        Some(Err(w)) => {
            warnings.push(w);
            default_distances(n)
        }
        None => default_distances(n),
    };

    // The boot CPU's node; without an entry, the first node with memory.
    let boot_node = cpu_pxm[0]
        .and_then(|c| node_of(c.0))
        .or_else(|| has_mem.iter().position(|&b| b))?;
    let home = nearest_with_memory(boot_node, &distances, &has_mem).unwrap_or(boot_node);

    // Usable RAM in no SRAT range goes home.
    let covered = normalize(&kept.iter().map(|k| (k.1, k.2)).collect::<Vec<_>>());
    let uncovered = subtract(usable, &covered);
    if !uncovered.is_empty() {
        let bytes: u64 = uncovered.iter().map(|(s, e)| e - s).sum();
        warnings.push(format!(
            "SRAT: usable RAM {:#x}-{:#x} ({} KiB in {} ranges) is in no memory affinity entry: given to node {home}",
            uncovered[0].0,
            uncovered[uncovered.len() - 1].1,
            bytes >> 10,
            uncovered.len()
        ));
        mem[home].extend(uncovered);
    }

    let mut cpus = Vec::with_capacity(apic_ids.len());
    let mut homeless: Vec<u32> = Vec::new();
    for (k, &apic_id) in apic_ids.iter().enumerate() {
        let node = match cpu_pxm[k].and_then(|c| node_of(c.0)) {
            Some(i) => i,
            None => {
                homeless.push(apic_id);
                home
            }
        };
        cpus.push(CpuInfo {
            cpu: CpuId(k as u16),
            apic_id,
            node: NodeId(node as u16),
        });
    }
    if !homeless.is_empty() {
        warnings.push(format!(
            "SRAT: no processor affinity entry for APIC ids {}: placed on node {home} (nearest node with memory \
             to the boot CPU, APIC id {boot_apic_id})",
            id_list(&homeless)
        ));
    }
    let nodes = pxms
        .iter()
        .zip(mem)
        .enumerate()
        .map(|(i, (&pxm, ranges))| NodeInfo {
            id: NodeId(i as u16),
            pxm,
            mem_ranges: normalize(&ranges),
            cpus: Vec::new(),
        })
        .collect();
    Some(Topology::new(nodes, cpus, Some(distances)))
}

fn default_distances(n: usize) -> Vec<Vec<u8>> {
    use crate::topology::{LOCAL_DISTANCE, REMOTE_DISTANCE};
    (0..n)
        .map(|i| {
            (0..n)
                .map(|j| {
                    if i == j {
                        LOCAL_DISTANCE
                    } else {
                        REMOTE_DISTANCE
                    }
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
#[path = "numa_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "linux_srat_tests.rs"]
mod linux_srat_tests;
