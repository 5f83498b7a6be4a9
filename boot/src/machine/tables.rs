//! From MADT/SRAT/SLIT bytes to a [`Machine`], with the kernel's own builder
//! (numalab_algo::acpi::numa::build), so `topology` shows what the booted kernel would, and
//! every decision about a messy table is the one docs/topology.md documents.
//!
//! What a table source lacks, and the rule used instead:
//! - the memory map: RAM is taken to be the enabled, not hot-pluggable, not non-volatile SRAT
//!   memory ranges (hot-pluggable ones are listed in a note, not counted: without the map a
//!   table cannot tell present hot-pluggable memory from an empty slot);
//! - the boot CPU: the first enabled processor entry of the MADT (the ACPI spec asks firmware
//!   to list the boot processor first), whatever its APIC id; it becomes CPU 0;
//! - the APIC mode: x2APIC (every id usable, as on the machine that wrote the tables).
//!
//! Fatal (a [`SourceError`]): no MADT copy that passes its checks, or none with an enabled
//! processor: the CPUs are the machine.

use super::{Machine, Node, SourceError};
use numalab_algo::acpi::apic::ApicMode;
use numalab_algo::acpi::dump_text::DumpedTable;
use numalab_algo::acpi::numa::{self, Machine as AcpiMachine};
use numalab_algo::acpi::{madt, sdt, slit, srat};
use numalab_algo::memrange;
use numalab_algo::topology::NodeId;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One copy of a table: where it came from and its bytes.
#[derive(Clone, Debug, Default)]
pub struct Table {
    /// For messages: `DIR/srat.dat`, or `FILE line 12 (SRAT)`.
    pub label: String,
    pub file: PathBuf,
    pub bytes: Vec<u8>,
}

/// Every copy of each table, in the order the parsers try them.
#[derive(Clone, Debug, Default)]
pub struct RawTables {
    pub madts: Vec<Table>,
    pub srats: Vec<Table>,
    pub slits: Vec<Table>,
}

impl RawTables {
    /// The APIC, SRAT and SLIT tables of an acpidump text, in the text's order (others are
    /// ignored).
    pub fn from_dump(file: &Path, dumped: Vec<DumpedTable>) -> RawTables {
        let mut raw = RawTables::default();
        for t in dumped {
            let list = match t.name.as_str() {
                "APIC" => &mut raw.madts,
                "SRAT" => &mut raw.srats,
                "SLIT" => &mut raw.slits,
                _ => continue,
            };
            list.push(Table {
                label: format!("{} line {} ({})", file.display(), t.line, t.name),
                file: file.to_path_buf(),
                bytes: t.bytes,
            });
        }
        raw
    }

    fn labels(&self) -> String {
        let names: Vec<String> = self
            .madts
            .iter()
            .chain(&self.srats)
            .chain(&self.slits)
            .map(|t| {
                t.file
                    .file_name()
                    .map_or(t.label.clone(), |n| n.to_string_lossy().into_owned())
            })
            .collect();
        names.join(" ")
    }
}

fn slices(ts: &[Table]) -> Vec<&[u8]> {
    ts.iter().map(|t| t.bytes.as_slice()).collect()
}

/// The copies the kernel would read: one whose header claims more than the kernel copies
/// (`sdt::MAX_TABLE_BYTES`) is left out with the kernel's own warning, before any parsing.
fn within_limit(name: &str, ts: &[Table], warnings: &mut Vec<String>) -> Vec<Table> {
    ts.iter()
        .filter(|t| {
            let length = sdt::header_length(&t.bytes).unwrap_or(0);
            match sdt::too_large(name, &t.label, length) {
                Some(w) => {
                    warnings.push(w);
                    false
                }
                None => true,
            }
        })
        .cloned()
        .collect()
}

/// The machine the tables describe, as the kernel would build it.
pub fn machine(source: &Path, raw: &RawTables) -> Result<Machine, SourceError> {
    let mut size_warnings = Vec::new();
    let kept = RawTables {
        madts: within_limit("MADT", &raw.madts, &mut size_warnings),
        srats: within_limit("SRAT", &raw.srats, &mut size_warnings),
        slits: within_limit("SLIT", &raw.slits, &mut size_warnings),
    };
    if kept.madts.is_empty() && !raw.madts.is_empty() {
        return Err(SourceError::new(
            &raw.madts[0].file,
            format!(
                "no usable MADT ({}): the MADT lists the CPUs",
                size_warnings[0]
            ),
        ));
    }
    let mut m = machine_within_limit(source, raw, &kept)?;
    size_warnings.append(&mut m.warnings);
    m.warnings = size_warnings;
    Ok(m)
}

/// [`machine`] of the copies within the size limit (`raw` names the source's files).
fn machine_within_limit(
    source: &Path,
    raw: &RawTables,
    kept: &RawTables,
) -> Result<Machine, SourceError> {
    let what = if raw
        .madts
        .first()
        .is_some_and(|t| t.label.contains(" line "))
    {
        let mut sigs: Vec<&str> = Vec::new();
        if !raw.madts.is_empty() {
            sigs.push("APIC");
        }
        if !raw.srats.is_empty() {
            sigs.push("SRAT");
        }
        if !raw.slits.is_empty() {
            sigs.push("SLIT");
        }
        format!("acpidump text: {}", sigs.join(" "))
    } else {
        format!("binary tables: {}", raw.labels())
    };
    if raw.madts.is_empty() {
        return Err(SourceError::new(
            source,
            "no APIC (MADT) table: the MADT lists the CPUs",
        ));
    }
    // The boot CPU: the first enabled valid processor of the first MADT that parses.
    let mut errors = Vec::new();
    let mut boot = None;
    for t in &kept.madts {
        match madt::parse(&t.bytes) {
            Ok(m) => {
                let mut scratch = Vec::new();
                boot = Some(m.enabled_apic_ids(&mut scratch).first().map(|c| c.0));
                break;
            }
            Err(e) => errors.push(format!("{}: {e}", t.label)),
        }
    }
    let boot = match boot {
        Some(Some(id)) => id,
        Some(None) => {
            return Err(SourceError::new(
                source,
                "MADT: no enabled processor entry: no CPU to replay",
            ))
        }
        None => {
            let first = &kept.madts[0];
            return Err(SourceError::new(
                &first.file,
                format!(
                    "no usable MADT ({}): the MADT lists the CPUs",
                    errors.join("; ")
                ),
            ));
        }
    };
    // RAM: the enabled, not hot-pluggable, not non-volatile ranges of the first valid SRAT.
    let mut notes = Vec::new();
    let first_srat = kept.srats.iter().find_map(|t| srat::parse(&t.bytes).ok());
    let mut ram: Vec<(u64, u64)> = Vec::new();
    if let Some(s) = &first_srat {
        let mut hot = (0usize, 0u64);
        for m in s.mems.iter().filter(|m| m.enabled() && m.length > 0) {
            let Some(end) = m.base.checked_add(m.length) else {
                continue;
            };
            if m.hotpluggable() {
                hot = (hot.0 + 1, hot.1.saturating_add(m.length));
            } else if !m.non_volatile() {
                ram.push((m.base, end));
            }
        }
        if hot.0 > 0 {
            notes.push(format!(
                "replay: {} hot-pluggable SRAT memory ranges ({} MiB) not counted: without the \
                 machine's memory map a table cannot tell present memory from an empty slot",
                hot.0,
                hot.1 >> 20
            ));
        }
    }
    let ram = memrange::normalize(&ram);
    let (madts, srats, slits) = (
        slices(&kept.madts),
        slices(&kept.srats),
        slices(&kept.slits),
    );
    let outcome = numa::build(&AcpiMachine {
        boot_apic_id: boot,
        apic_mode: ApicMode::X2Apic,
        madts: &madts,
        srats: &srats,
        slits: &slits,
        usable: &ram,
        ram: &ram,
    });
    let topo = &outcome.topology;
    let nodes: Vec<Node> = topo
        .nodes
        .iter()
        .map(|n| {
            let size_mib = n.mem_bytes() >> 20;
            Node {
                id: n.id.0 as u32,
                pxm: n.pxm,
                cpus: n.cpus.iter().map(|c| c.0 as u32).collect(),
                apic_ids: Some(
                    n.cpus
                        .iter()
                        .map(|c| topo.cpus[c.index()].apic_id)
                        .collect(),
                ),
                mem_ranges: Some(n.mem_ranges.clone()),
                size_mib,
                free_mib: size_mib,
            }
        })
        .collect();
    let n = nodes.len();
    let distances: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| topo.distance(NodeId(i as u16), NodeId(j as u16)))
                .collect()
        })
        .collect();
    // The SLIT replayed: the first copy that parses and that the parsers use for these nodes.
    let pxms: Vec<u32> = nodes.iter().map(|n| n.pxm).collect();
    let slit = kept
        .slits
        .iter()
        .filter_map(|t| slit::parse(&t.bytes).ok())
        .next()
        .filter(|s| s.distances_for(&pxms).is_ok())
        .map(|s| (s.localities, s.matrix));
    if let Some((n, m)) = &slit {
        let nodes: BTreeSet<u32> = pxms.iter().copied().collect();
        let phantoms: Vec<u32> = (0..*n as u32).filter(|p| !nodes.contains(p)).collect();
        if !phantoms.is_empty() && m.len() == n * n {
            notes.push(format!(
                "replay: SLIT localities {} have no CPU or memory (phantom domains): their rows \
                 and columns are skipped; the replayed SLIT keeps those below PXM {}",
                numalab_algo::formats::numactl::id_ranges(&phantoms),
                pxms.iter().max().copied().unwrap_or(0)
            ));
        }
    }
    if let Some(order) = linux_order(first_srat.as_ref(), &pxms) {
        notes.push(format!(
            "replay: Linux numbers nodes in the order their proximity domains first appear in \
             the SRAT (processor entries, then memory): PXM {}; numalab numbers them by \
             increasing PXM, so its node N is Linux's node {}",
            order
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(" "),
            pxms.iter()
                .map(|p| format!(
                    "{}",
                    order.iter().position(|q| q == p).unwrap_or(usize::MAX)
                ))
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    if nodes.iter().all(|n| n.size_mib == 0) {
        notes.push(
            "replay: no node has memory in the SRAT (or there is no SRAT): a replay gives all \
             of --mem to node 0"
                .into(),
        );
    }
    Ok(Machine {
        source: source.to_path_buf(),
        what,
        nodes,
        distances,
        slit,
        warnings: outcome.warnings,
        notes,
    })
}

/// The order Linux's acpi_numa_init meets the domains of `pxms` (enabled processor entries in
/// table order, then enabled memory entries), when it differs from increasing order.
fn linux_order(s: Option<&srat::Srat>, pxms: &[u32]) -> Option<Vec<u32>> {
    let s = s?;
    let nodes: BTreeSet<u32> = pxms.iter().copied().collect();
    let mut placed: BTreeSet<u32> = BTreeSet::new();
    let mut order: Vec<u32> = Vec::new();
    let met = s
        .cpus
        .iter()
        .filter(|c| c.enabled)
        .map(|c| c.pxm)
        .chain(s.mems.iter().filter(|m| m.enabled()).map(|m| m.pxm))
        .chain(pxms.iter().copied());
    for p in met {
        if nodes.contains(&p) && placed.insert(p) {
            order.push(p);
        }
    }
    (order != pxms).then_some(order)
}
