//! A directory of binary ACPI tables: as `acpidump -b` writes them (`apic.dat`, `srat.dat`,
//! `slit.dat`; several copies of one signature as `srat1.dat`, `srat2.dat`) or as Linux
//! exposes them under /sys/firmware/acpi/tables (`APIC`, `SRAT`, `SLIT`, copies `SRAT1`, ...).
//! Names match in any case; other files (dsdt.dat, FACP, ...) are ignored. Copies are taken
//! unnumbered first, then by number, and the parsers use the first valid one.

use super::tables::{RawTables, Table};
use super::{io_problem, read_file, SourceError};
use std::path::Path;

/// The signature and copy number a file name stands for: `srat2.dat` -> ("SRAT", 2),
/// `APIC` -> ("APIC", 0). None for other names.
pub fn table_name(file: &str) -> Option<(&'static str, u32)> {
    let lower = file.to_ascii_lowercase();
    let stem = lower.strip_suffix(".dat").unwrap_or(&lower);
    for sig in ["APIC", "SRAT", "SLIT"] {
        let Some(rest) = stem.strip_prefix(&sig.to_ascii_lowercase()) else {
            continue;
        };
        if rest.is_empty() {
            return Some((sig, 0));
        }
        if rest.len() <= 4 && rest.chars().all(|c| c.is_ascii_digit()) {
            return rest.parse().ok().map(|n| (sig, n));
        }
    }
    None
}

/// Reads the MADT, SRAT and SLIT files of `dir`. No MADT file is an error (the MADT lists
/// the CPUs); no SRAT or SLIT is allowed (the parsers' fallbacks apply).
pub fn read(dir: &Path) -> Result<RawTables, SourceError> {
    let entries = std::fs::read_dir(dir).map_err(|e| SourceError::new(dir, io_problem(&e)))?;
    let mut found: Vec<(&'static str, u32, String)> = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| SourceError::new(dir, io_problem(&e)))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some((sig, n)) = table_name(&name) {
            found.push((sig, n, name));
        }
        if found.len() > 4096 {
            return Err(SourceError::new(dir, "more than 4096 table files"));
        }
    }
    found.sort();
    let mut raw = RawTables::default();
    for (sig, _, name) in found {
        let path = dir.join(&name);
        let bytes = read_file(&path)?;
        // A file shorter than its header's length is a cut copy: QEMU would take
        // the bytes present as the whole table, so no replay is built from it.
        if let Some(what) = numalab_algo::acpi::sdt::cut_short(sig, &bytes) {
            return Err(SourceError::new(
                &path,
                format!("table {sig} is cut short: the file holds {what} (a truncated copy)"),
            ));
        }
        let t = Table {
            label: path.display().to_string(),
            file: path,
            bytes,
        };
        match sig {
            "APIC" => raw.madts.push(t),
            "SRAT" => raw.srats.push(t),
            _ => raw.slits.push(t),
        }
    }
    if raw.madts.is_empty() {
        return Err(SourceError::new(
            dir,
            "no MADT file (apic.dat as acpidump -b writes it, or APIC from \
             /sys/firmware/acpi/tables): the MADT lists the CPUs",
        ));
    }
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_any_case_and_copies() {
        assert_eq!(table_name("apic.dat"), Some(("APIC", 0)));
        assert_eq!(table_name("APIC"), Some(("APIC", 0)));
        assert_eq!(table_name("Srat2.DAT"), Some(("SRAT", 2)));
        assert_eq!(table_name("SRAT1"), Some(("SRAT", 1)));
        assert_eq!(table_name("slit.dat"), Some(("SLIT", 0)));
        for other in [
            "dsdt.dat",
            "FACP",
            "srat.bak",
            "srat_old.dat",
            "srat99999.dat",
            "apic.dat.gz",
        ] {
            assert_eq!(table_name(other), None, "{other}");
        }
    }
}
