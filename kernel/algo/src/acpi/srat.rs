//! SRAT (System Resource Affinity Table): which proximity domain each processor (Local APIC
//! affinity, type 0; Local x2APIC affinity, type 2) and each memory range (Memory affinity,
//! type 1, with its enabled, hot-pluggable and non-volatile flags) belongs to.
//!
//! This module only reads entries; deciding what to keep (disabled entries, overlaps, ranges
//! outside RAM, unknown APIC ids) is `numa.rs`'s job.

use super::sdt::{self, Entry};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// Header plus the 4-byte table revision and 8 reserved bytes.
pub const SRAT_FIXED_BYTES: usize = 48;
/// Entry flags bit 0 (all entry types): the entry is in use.
pub const FLAG_ENABLED: u32 = 1 << 0;
/// Memory affinity flags bit 1: the range can be hot-added/removed.
pub const MEM_HOTPLUGGABLE: u32 = 1 << 1;
/// Memory affinity flags bit 2: the range is non-volatile (persistent) memory.
pub const MEM_NON_VOLATILE: u32 = 1 << 2;

/// A processor affinity entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SratCpu {
    pub index: usize,
    pub pxm: u32,
    pub apic_id: u32,
    pub enabled: bool,
    pub x2apic: bool,
}

/// A memory affinity entry: [base, base + length).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SratMem {
    pub index: usize,
    pub pxm: u32,
    pub base: u64,
    pub length: u64,
    pub flags: u32,
}

impl SratMem {
    pub fn enabled(&self) -> bool {
        self.flags & FLAG_ENABLED != 0
    }
    pub fn hotpluggable(&self) -> bool {
        self.flags & MEM_HOTPLUGGABLE != 0
    }
    pub fn non_volatile(&self) -> bool {
        self.flags & MEM_NON_VOLATILE != 0
    }
}

/// A parsed SRAT.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Srat {
    pub cpus: Vec<SratCpu>,
    pub mems: Vec<SratMem>,
    /// One line per entry, for `acpi.dump=1`.
    pub dump: Vec<String>,
    pub warnings: Vec<String>,
}

fn mem_flags_text(flags: u32) -> String {
    let mut s = String::from(if flags & FLAG_ENABLED != 0 {
        "enabled"
    } else {
        "disabled"
    });
    if flags & MEM_HOTPLUGGABLE != 0 {
        s.push_str(", hot-pluggable");
    }
    if flags & MEM_NON_VOLATILE != 0 {
        s.push_str(", non-volatile");
    }
    s
}

fn parse_entry(e: &Entry, revision: u8, srat: &mut Srat) {
    let need = match e.kind {
        0 => 16,
        1 => 40,
        2 => 24,
        _ => {
            srat.dump.push(format!(
                "SRAT entry {}: type {} (length {}): not used, skipped",
                e.index,
                e.kind,
                e.bytes.len()
            ));
            return;
        }
    };
    // `linux_bad_entry` refused the table for any entry shorter than its type needs.
    if e.bytes.len() < need {
        return;
    }
    let b = e.bytes;
    let rd32 = |off| sdt::u32_at(b, off).unwrap_or(0);
    let rd8 = |off| sdt::u8_at(b, off).unwrap_or(0);
    match e.kind {
        0 => {
            // Proximity domain bits 31:8 are only defined from SRAT revision 2 (as Linux reads it).
            let high = if revision >= 2 {
                (rd8(9) as u32) << 8 | (rd8(10) as u32) << 16 | (rd8(11) as u32) << 24
            } else {
                0
            };
            let cpu = SratCpu {
                index: e.index,
                pxm: rd8(2) as u32 | high,
                apic_id: rd8(3) as u32,
                enabled: rd32(4) & FLAG_ENABLED != 0,
                x2apic: false,
            };
            srat.dump.push(format!(
                "SRAT entry {}: processor APIC id {} -> PXM {} ({})",
                e.index,
                cpu.apic_id,
                cpu.pxm,
                if cpu.enabled { "enabled" } else { "disabled" }
            ));
            srat.cpus.push(cpu);
        }
        2 => {
            let cpu = SratCpu {
                index: e.index,
                pxm: rd32(4),
                apic_id: rd32(8),
                enabled: rd32(12) & FLAG_ENABLED != 0,
                x2apic: true,
            };
            srat.dump.push(format!(
                "SRAT entry {}: processor x2APIC id {} -> PXM {} ({})",
                e.index,
                cpu.apic_id,
                cpu.pxm,
                if cpu.enabled { "enabled" } else { "disabled" }
            ));
            srat.cpus.push(cpu);
        }
        _ => {
            // Linux masks a revision-1 table's memory domain to 8 bits
            // (acpi_numa_memory_affinity_init: `if (acpi_srat_revision <= 1) pxm &= 0xff;`).
            let mem = SratMem {
                index: e.index,
                pxm: if revision <= 1 {
                    rd32(2) & 0xff
                } else {
                    rd32(2)
                },
                base: rd32(8) as u64 | (rd32(12) as u64) << 32,
                length: rd32(16) as u64 | (rd32(20) as u64) << 32,
                flags: rd32(28),
            };
            srat.dump.push(format!(
                "SRAT entry {}: memory {:#x}-{:#x} ({} MiB) -> PXM {} ({})",
                e.index,
                mem.base,
                mem.base.saturating_add(mem.length),
                mem.length >> 20,
                mem.pxm,
                mem_flags_text(mem.flags)
            ));
            srat.mems.push(mem);
        }
    }
}

/// Parses a SRAT. `Err` says why the whole table cannot be used (one warning line): a bad
/// table (`sdt::check_table`), or one Linux declares bad ([`linux_bad_entry`],
/// [`linux_bad_domain`]) and boots without (one node).
pub fn parse(bytes: &[u8]) -> Result<Srat, String> {
    let table = sdt::check_table(bytes, b"SRAT", SRAT_FIXED_BYTES)?;
    let revision = table[8];
    let mut srat = Srat::default();
    let entries = sdt::entries(table, SRAT_FIXED_BYTES, "SRAT", &mut srat.warnings);
    if let Some(why) = linux_bad_entry(table, &entries) {
        return Err(why);
    }
    for e in &entries {
        parse_entry(e, revision, &mut srat);
    }
    if let Some(why) = linux_bad_domain(&srat) {
        return Err(why);
    }
    Ok(srat)
}

/// Linux's MAX_PXM_DOMAINS: MAX_NUMNODES when that is above 256 (include/acpi/acpi_numa.h),
/// 1024 with the NODES_SHIFT=10 of Debian's 6.1 and 7.x kernels.
pub const MAX_PXM_DOMAINS: u32 = 1024;

/// The entry for which Linux declares the whole SRAT bad, as one line naming it: a length of
/// 0 (drivers/acpi/tables.c `acpi_parse_entries_array`: "Invalid zero length", -EINVAL, which
/// fails `acpi_numa_init`), or a length that does not fit the entry's type (arch/x86/mm/srat.c:
/// a processor entry of length other than 16 or an x2APIC entry under 24; drivers/acpi/numa/
/// srat.c: a memory entry under 40; each `bad_srat()`). Disabled entries included: Linux
/// checks the length first. A length of 1 is a bad length for those types too; an entry of
/// another type and length 1 is stepped over by one byte, as Linux does (`sdt::entries`).
pub fn linux_bad_entry(table: &[u8], entries: &[Entry]) -> Option<String> {
    for e in entries {
        let len = e.bytes.len();
        let bad = match e.kind {
            0 if len != 16 => Some(("processor local APIC affinity", "exactly 16")),
            1 if len < 40 => Some(("memory affinity", "at least 40")),
            2 if len < 24 => Some(("processor local x2APIC affinity", "at least 24")),
            _ => None,
        };
        if let Some((what, need)) = bad {
            return Some(format!(
                "SRAT entry {} ({what}): length {len}, Linux needs {need} (bad_srat(): \
                 \"SRAT: SRAT not used.\")",
                e.index
            ));
        }
    }
    // Where the walk stopped: a length that cannot advance.
    let offset = entries
        .last()
        .map_or(SRAT_FIXED_BYTES, |e| e.offset + e.bytes.len());
    let (kind, len) = (sdt::u8_at(table, offset)?, sdt::u8_at(table, offset + 1)?);
    // A length of 1 advances one byte (sdt::entries, as Linux): the 1-byte entry is one of
    // `entries`, judged above by its type, and only a length of 0 stops the walk here.
    (len == 0).then(|| {
        format!(
            "SRAT entry {} at offset {offset} (type {kind}): length 0 (Linux's \
             acpi_parse_entries_array: \"Invalid zero length\", the SRAT not used)",
            entries.len()
        )
    })
}

/// The first enabled entry whose proximity domain Linux cannot map to a node, as one line:
/// `acpi_map_pxm_to_node` returns NUMA_NO_NODE for a domain at or past [`MAX_PXM_DOMAINS`]
/// ("SRAT: Too many proximity domains"), and both entry kinds then call `bad_srat()`. An
/// x2APIC entry with the invalid id 0xffffffff is ignored before its domain is mapped.
pub fn linux_bad_domain(srat: &Srat) -> Option<String> {
    let cpus = srat
        .cpus
        .iter()
        .filter(|c| c.enabled && !(c.x2apic && c.apic_id == u32::MAX))
        .map(|c| (c.index, c.pxm, format!("processor APIC id {}", c.apic_id)));
    let mems = srat.mems.iter().filter(|m| m.enabled()).map(|m| {
        (
            m.index,
            m.pxm,
            format!("memory {:#x}+{:#x}", m.base, m.length),
        )
    });
    let (index, pxm, what) = cpus
        .chain(mems)
        .filter(|c| c.1 >= MAX_PXM_DOMAINS)
        .min_by_key(|c| c.0)?;
    Some(format!(
        "SRAT entry {index} ({what}): PXM {pxm} is at or past MAX_PXM_DOMAINS ({MAX_PXM_DOMAINS}): \
         Linux's acpi_map_pxm_to_node() gives no node and the SRAT is not used (bad_srat(), \
         \"SRAT: Too many proximity domains\")"
    ))
}

/// Test and host-test helpers that write SRAT bytes.
pub mod build {
    use alloc::vec::Vec;

    /// A Processor Local APIC affinity entry (32-bit proximity domain, SRAT revision >= 2).
    pub fn cpu(pxm: u32, apic_id: u8, enabled: bool) -> Vec<u8> {
        let p = pxm.to_le_bytes();
        let mut e = alloc::vec![0u8, 16, p[0], apic_id];
        e.extend_from_slice(&(enabled as u32).to_le_bytes());
        e.extend_from_slice(&[0, p[1], p[2], p[3]]);
        e.extend_from_slice(&0u32.to_le_bytes());
        e
    }

    /// A Processor Local x2APIC affinity entry.
    pub fn x2cpu(pxm: u32, x2apic_id: u32, enabled: bool) -> Vec<u8> {
        let mut e = alloc::vec![2u8, 24, 0, 0];
        e.extend_from_slice(&pxm.to_le_bytes());
        e.extend_from_slice(&x2apic_id.to_le_bytes());
        e.extend_from_slice(&(enabled as u32).to_le_bytes());
        e.extend_from_slice(&[0u8; 8]);
        e
    }

    /// A Memory affinity entry.
    pub fn mem(pxm: u32, base: u64, length: u64, flags: u32) -> Vec<u8> {
        let mut e = alloc::vec![1u8, 40];
        e.extend_from_slice(&pxm.to_le_bytes());
        e.extend_from_slice(&[0u8; 2]);
        e.extend_from_slice(&(base as u32).to_le_bytes());
        e.extend_from_slice(&((base >> 32) as u32).to_le_bytes());
        e.extend_from_slice(&(length as u32).to_le_bytes());
        e.extend_from_slice(&((length >> 32) as u32).to_le_bytes());
        e.extend_from_slice(&[0u8; 4]);
        e.extend_from_slice(&flags.to_le_bytes());
        e.extend_from_slice(&[0u8; 8]);
        e
    }

    /// A whole SRAT (revision 3) from entries.
    pub fn srat(entries: &[Vec<u8>]) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&1u32.to_le_bytes());
        body.extend_from_slice(&[0u8; 8]);
        for e in entries {
            body.extend_from_slice(e);
        }
        super::sdt::build_table(b"SRAT", 3, &body)
    }
}

#[cfg(test)]
mod tests {
    use super::build::*;
    use super::*;
    use alloc::vec;

    #[test]
    fn parses_all_entry_kinds() {
        let t = srat(&[
            cpu(0, 0, true),
            cpu(200, 1, true),
            x2cpu(7, 300, true),
            mem(0, 0, 0xa0000, FLAG_ENABLED),
            mem(7, 1 << 32, 1 << 30, FLAG_ENABLED | MEM_HOTPLUGGABLE),
            mem(0, 0, 0, 0),
            vec![3, 8, 0, 0, 0, 0, 0, 0],
        ]);
        let s = parse(&t).unwrap();
        assert!(s.warnings.is_empty());
        assert_eq!(
            s.cpus
                .iter()
                .map(|c| (c.pxm, c.apic_id))
                .collect::<Vec<_>>(),
            vec![(0, 0), (200, 1), (7, 300)]
        );
        assert_eq!(s.mems.len(), 3);
        assert_eq!(
            (s.mems[1].pxm, s.mems[1].base, s.mems[1].length),
            (7, 1 << 32, 1 << 30)
        );
        assert!(s.mems[1].hotpluggable() && s.mems[1].enabled() && !s.mems[2].enabled());
        assert_eq!(s.dump.len(), 7);
        assert!(s.dump[3].contains("memory 0x0-0xa0000"), "{}", s.dump[3]);
    }

    #[test]
    fn revision_1_ignores_high_pxm_bytes() {
        let mut t = srat(&[cpu(0x0102, 3, true)]);
        t[8] = 1;
        sdt::fix_checksum(&mut t);
        assert_eq!(parse(&t).unwrap().cpus[0].pxm, 2);
    }

    #[test]
    fn truncated_entries_make_the_table_bad_as_in_linux() {
        let mut m = mem(0, 0, 1 << 20, 1);
        m.truncate(30);
        m[1] = 30;
        let e = parse(&srat(&[m, cpu(0, 0, true)])).unwrap_err();
        assert!(
            e.contains("SRAT entry 0 (memory affinity): length 30, Linux needs at least 40"),
            "{e}"
        );
    }
}
