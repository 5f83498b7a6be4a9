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
    let (what, need) = match e.kind {
        0 => ("processor local APIC affinity", 16),
        1 => ("memory affinity", 40),
        2 => ("processor local x2APIC affinity", 24),
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
    if e.bytes.len() < need {
        srat.warnings.push(format!(
            "SRAT entry {} ({what}): truncated entry (length {}, needs {need}): entry dropped",
            e.index,
            e.bytes.len()
        ));
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
            let mem = SratMem {
                index: e.index,
                pxm: rd32(2),
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

/// Parses a SRAT. `Err` says why the whole table cannot be used (one warning line).
pub fn parse(bytes: &[u8]) -> Result<Srat, String> {
    let table = sdt::check_table(bytes, b"SRAT", SRAT_FIXED_BYTES)?;
    let revision = table[8];
    let mut srat = Srat::default();
    let entries = sdt::entries(table, SRAT_FIXED_BYTES, "SRAT", &mut srat.warnings);
    for e in &entries {
        parse_entry(e, revision, &mut srat);
    }
    Ok(srat)
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
    fn truncated_entries() {
        let mut m = mem(0, 0, 1 << 20, 1);
        m.truncate(30);
        m[1] = 30;
        let s = parse(&srat(&[m, cpu(0, 0, true)])).unwrap();
        assert_eq!(s.cpus.len(), 1);
        assert!(s.warnings[0].contains("SRAT entry 0 (memory affinity): truncated entry"));
    }
}
