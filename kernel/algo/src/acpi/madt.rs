//! MADT ("APIC"): the processors of the machine, from Processor Local APIC (type 0) and
//! Processor Local x2APIC (type 9) entries, with their enabled and online-capable flags.
//! Other entry types (I/O APICs, overrides, NMI sources) are listed in the dump and skipped.

use super::apic;
use super::sdt::{self, Entry};
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// Fixed part of the MADT: header, local APIC address, flags.
pub const MADT_FIXED_BYTES: usize = 44;
/// Flags bit 0: the processor is usable now.
pub const FLAG_ENABLED: u32 = 1 << 0;
/// Flags bit 1: the processor may be brought online later (hotplug), when not enabled.
pub const FLAG_ONLINE_CAPABLE: u32 = 1 << 1;

/// One processor entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MadtCpu {
    /// Entry index in the MADT.
    pub index: usize,
    pub apic_id: u32,
    pub uid: u32,
    pub flags: u32,
    pub x2apic: bool,
}

impl MadtCpu {
    pub fn enabled(&self) -> bool {
        self.flags & FLAG_ENABLED != 0
    }
    pub fn online_capable(&self) -> bool {
        self.flags & FLAG_ONLINE_CAPABLE != 0
    }
}

/// A parsed MADT.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Madt {
    /// Every processor entry, enabled or not, in table order.
    pub cpus: Vec<MadtCpu>,
    /// One line per entry, for `acpi.dump=1`.
    pub dump: Vec<String>,
    /// One line per problem (entry dropped, table cut short).
    pub warnings: Vec<String>,
}

impl Madt {
    /// The APIC ids of enabled processors, in table order, with their entry index. Dropped,
    /// each with a warning pushed to `warnings`: the reserved invalid ids (0xff in a local APIC
    /// entry, 0xffffffff in a local x2APIC entry; Linux ignores them too) and duplicates.
    pub fn enabled_apic_ids(&self, warnings: &mut Vec<String>) -> Vec<(u32, usize)> {
        // Entry index of each APIC id's first listing (a map: a hostile table may hold
        // 100000 entries, so no quadratic search).
        let mut first: BTreeMap<u32, usize> = BTreeMap::new();
        let mut out: Vec<(u32, usize)> = Vec::new();
        for cpu in self.cpus.iter().filter(|c| c.enabled()) {
            if apic::is_invalid_id(cpu.apic_id, cpu.x2apic) {
                warnings.push(format!(
                    "MADT entry {} (local {}APIC id {:#x}): {}: not a CPU, entry dropped",
                    cpu.index,
                    if cpu.x2apic { "x2" } else { "" },
                    cpu.apic_id,
                    apic::INVALID_ID_REASON
                ));
                continue;
            }
            if let Some(&earlier) = first.get(&cpu.apic_id) {
                warnings.push(format!(
                    "MADT entry {}: APIC id {} already listed by entry {earlier}: entry dropped",
                    cpu.index, cpu.apic_id
                ));
                continue;
            }
            first.insert(cpu.apic_id, cpu.index);
            out.push((cpu.apic_id, cpu.index));
        }
        out
    }
}

fn flags_text(flags: u32) -> &'static str {
    match (flags & FLAG_ENABLED != 0, flags & FLAG_ONLINE_CAPABLE != 0) {
        (true, _) => "enabled",
        (false, true) => "disabled, online-capable",
        (false, false) => "disabled",
    }
}

fn parse_entry(e: &Entry, madt: &mut Madt) {
    let (need, x2apic) = match e.kind {
        0 => (8, false),
        9 => (16, true),
        _ => {
            madt.dump.push(format!(
                "MADT entry {}: type {} (length {}): not a processor, skipped",
                e.index,
                e.kind,
                e.bytes.len()
            ));
            return;
        }
    };
    if e.bytes.len() < need {
        madt.warnings.push(format!(
            "MADT entry {} ({} APIC): truncated entry (length {}, needs {need}): entry dropped",
            e.index,
            if x2apic { "local x2" } else { "local" },
            e.bytes.len()
        ));
        return;
    }
    // Lengths were checked above, so the reads below cannot fail; unwrap_or keeps them total.
    let cpu = if x2apic {
        MadtCpu {
            index: e.index,
            apic_id: sdt::u32_at(e.bytes, 4).unwrap_or(0),
            flags: sdt::u32_at(e.bytes, 8).unwrap_or(0),
            uid: sdt::u32_at(e.bytes, 12).unwrap_or(0),
            x2apic,
        }
    } else {
        MadtCpu {
            index: e.index,
            uid: sdt::u8_at(e.bytes, 2).unwrap_or(0) as u32,
            apic_id: sdt::u8_at(e.bytes, 3).unwrap_or(0) as u32,
            flags: sdt::u32_at(e.bytes, 4).unwrap_or(0),
            x2apic,
        }
    };
    madt.dump.push(format!(
        "MADT entry {}: {} APIC id {} uid {} ({})",
        cpu.index,
        if x2apic { "local x2" } else { "local" },
        cpu.apic_id,
        cpu.uid,
        flags_text(cpu.flags)
    ));
    madt.cpus.push(cpu);
}

/// Parses a MADT. `Err` says why the whole table cannot be used (one warning line).
pub fn parse(bytes: &[u8]) -> Result<Madt, String> {
    let table = sdt::check_table(bytes, b"APIC", MADT_FIXED_BYTES)
        .map_err(|e| e.replacen("APIC", "MADT", 1))?;
    let mut madt = Madt::default();
    let entries = sdt::entries(table, MADT_FIXED_BYTES, "MADT", &mut madt.warnings);
    for e in &entries {
        parse_entry(e, &mut madt);
    }
    Ok(madt)
}

/// Test and host-test helpers that write MADT bytes.
pub mod build {
    use alloc::vec::Vec;

    /// A Processor Local APIC entry.
    pub fn local_apic(uid: u8, apic_id: u8, flags: u32) -> Vec<u8> {
        let mut e = alloc::vec![0u8, 8, uid, apic_id];
        e.extend_from_slice(&flags.to_le_bytes());
        e
    }

    /// A Processor Local x2APIC entry.
    pub fn local_x2apic(x2apic_id: u32, flags: u32, uid: u32) -> Vec<u8> {
        let mut e = alloc::vec![9u8, 16, 0, 0];
        e.extend_from_slice(&x2apic_id.to_le_bytes());
        e.extend_from_slice(&flags.to_le_bytes());
        e.extend_from_slice(&uid.to_le_bytes());
        e
    }

    /// A whole MADT from entries.
    pub fn madt(entries: &[Vec<u8>]) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&0xfee0_0000u32.to_le_bytes());
        body.extend_from_slice(&1u32.to_le_bytes());
        for e in entries {
            body.extend_from_slice(e);
        }
        super::sdt::build_table(b"APIC", 3, &body)
    }
}

#[cfg(test)]
mod tests {
    use super::build::*;
    use super::*;
    use alloc::vec;

    #[test]
    fn parses_xapic_and_x2apic_entries() {
        let t = madt(&[
            local_apic(0, 0, 1),
            vec![1, 12, 0, 0, 0, 0xc0, 0xfe, 0, 0, 0, 0, 0], // I/O APIC
            local_apic(1, 2, 1),
            local_apic(2, 4, FLAG_ONLINE_CAPABLE),
            local_x2apic(300, 1, 7),
        ]);
        let m = parse(&t).unwrap();
        assert!(m.warnings.is_empty(), "{:?}", m.warnings);
        let ids: Vec<(u32, bool)> = m.cpus.iter().map(|c| (c.apic_id, c.enabled())).collect();
        assert_eq!(ids, vec![(0, true), (2, true), (4, false), (300, true)]);
        assert!(m.cpus[2].online_capable());
        assert_eq!(m.dump.len(), 5);
        let mut w = Vec::new();
        assert_eq!(m.enabled_apic_ids(&mut w), vec![(0, 0), (2, 2), (300, 4)]);
    }

    #[test]
    fn truncated_entry_is_dropped_and_duplicate_warned() {
        let t = madt(&[
            local_apic(0, 0, 1),
            vec![9, 8, 0, 0, 5, 0, 0, 0],
            local_apic(1, 0, 1),
        ]);
        let m = parse(&t).unwrap();
        assert_eq!(m.warnings.len(), 1);
        assert!(m.warnings[0].contains("MADT entry 1") && m.warnings[0].contains("truncated"));
        let mut w = Vec::new();
        assert_eq!(m.enabled_apic_ids(&mut w), vec![(0, 0)]);
        assert!(w[0].contains("MADT entry 2") && w[0].contains("already listed"));
    }

    #[test]
    fn bad_tables_are_refused() {
        let mut t = madt(&[local_apic(0, 0, 1)]);
        t[12] ^= 0xff;
        // A bad checksum alone is read (ACPICA warns and uses the table; numa::build warns).
        assert_eq!(parse(&t).map(|m| m.cpus.len()), Ok(1));
        assert!(parse(&t[..20]).unwrap_err().contains("truncated"));
    }
}
