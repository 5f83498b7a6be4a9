//! ACPI table discovery: finds the MADT, SRAT and SLIT from the bootloader's RSDP with the
//! `acpi` crate and copies their bytes out of firmware memory.
//!
//! Interpretation happens in numalab_algo::acpi, pure bounds-checked parsers: the `acpi`
//! crate's typed tables trust each table's length fields, so a malformed table could make
//! them read out of bounds. Here each table is copied only after its header length has been
//! checked against a size limit and the direct map.

mod handler;

use acpi::AcpiTables;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use handler::DirectMap;
use numalab_algo::acpi::sdt::{self, HEADER_BYTES, MAX_TABLE_BYTES};
use numalab_algo::page::PhysAddr;
/// Bytes of an ACPI 2.0+ RSDP (a 1.0 RSDP is 20, the rest is read but unused).
const RSDP_V2_BYTES: usize = 36;
/// The bootloader maps at least the first 4 GiB of physical memory.
const MIN_MAPPED_BYTES: u64 = 1 << 32;

/// Every copy of the tables numalab reads, in RSDT/XSDT order, plus what went wrong.
#[derive(Default)]
pub struct RawTables {
    pub madts: Vec<Vec<u8>>,
    pub srats: Vec<Vec<u8>>,
    pub slits: Vec<Vec<u8>>,
    /// One line per table found: signature, physical address, length (for `acpi.dump=1`).
    pub found: Vec<String>,
    /// Problems locating or copying tables (printed as warnings).
    pub warnings: Vec<String>,
}

fn direct_map() -> DirectMap {
    let early = crate::early::info();
    let map_end = early.regions.iter().map(|r| r.end).max().unwrap_or(0);
    DirectMap {
        mapped_end: map_end.max(MIN_MAPPED_BYTES),
    }
}

/// Copies `len` bytes at physical `phys` out of the direct map, or None if they are not all
/// inside it.
fn copy_phys(map: &DirectMap, phys: PhysAddr, len: usize) -> Option<Vec<u8>> {
    if !map.covers(phys, len as u64) {
        return None;
    }
    let mut out = alloc::vec![0u8; len];
    // SAFETY: [phys, phys + len) is inside the direct map (checked above), which maps all
    // physical memory readable; firmware tables are not written concurrently; `out` has
    // `len` bytes and does not overlap firmware memory.
    unsafe {
        core::ptr::copy_nonoverlapping(map.virt(phys).as_mut_ptr::<u8>(), out.as_mut_ptr(), len);
    }
    Some(out)
}

/// Checks what the `acpi` crate will read without checks: the RSDP's signature and the
/// RSDT/XSDT it points to (inside the direct map, length within the limit). Returns why not.
fn check_root(map: &DirectMap, rsdp: PhysAddr) -> Result<(), String> {
    let bytes = copy_phys(map, rsdp, RSDP_V2_BYTES)
        .ok_or_else(|| format!("ACPI: RSDP at {rsdp:#x} is outside the direct map"))?;
    if &bytes[0..8] != b"RSD PTR " {
        return Err(format!("ACPI: no RSDP signature at {rsdp:#x}"));
    }
    let revision = bytes[15];
    let (name, root) = if revision == 0 {
        ("RSDT", sdt::u32_at(&bytes, 16).unwrap_or(0) as u64)
    } else {
        ("XSDT", sdt::u64_at(&bytes, 24).unwrap_or(0))
    };
    let root = PhysAddr::new(root);
    let header = copy_phys(map, root, HEADER_BYTES)
        .ok_or_else(|| format!("ACPI: {name} at {root:#x} is outside the direct map"))?;
    let length = sdt::header_length(&header).unwrap_or(0);
    if (length as usize) < HEADER_BYTES
        || length > MAX_TABLE_BYTES
        || !map.covers(root, length as u64)
    {
        return Err(format!(
            "ACPI: {name} at {root:#x} has a bad length {length}"
        ));
    }
    Ok(())
}

/// Finds and copies the MADT, SRAT and SLIT. Never panics; without an RSDP or with an RSDP
/// the crate rejects, returns no tables and a warning (the topology falls back to one node).
pub fn find_tables() -> RawTables {
    let mut raw = RawTables::default();
    let map = direct_map();
    let Some(rsdp) = crate::early::info().rsdp_phys else {
        raw.warnings
            .push("ACPI: the bootloader found no RSDP: no ACPI tables".into());
        return raw;
    };
    if let Err(why) = check_root(&map, PhysAddr::new(rsdp)) {
        raw.warnings.push(format!("{why}: no ACPI tables"));
        return raw;
    }
    // SAFETY: `rsdp` is the address the bootloader got from the firmware; check_root found
    // an RSDP there and a root table (RSDT/XSDT) of sane length inside the direct map, which
    // is all from_rsdp reads.
    let tables = match unsafe { AcpiTables::from_rsdp(map, rsdp as usize) } {
        Ok(t) => t,
        Err(e) => {
            raw.warnings.push(format!(
                "ACPI: RSDP at {rsdp:#x} rejected ({e:?}): no ACPI tables"
            ));
            return raw;
        }
    };
    // Only the entry addresses come from the crate: headers are read here, so a signature
    // that is not text or a length that lies cannot trip the crate's typed accessors.
    for phys in tables.table_entries() {
        let phys = PhysAddr::new(phys as u64);
        let Some(header) = copy_phys(&map, phys, HEADER_BYTES) else {
            raw.warnings.push(format!(
                "ACPI: table at {phys:#x} is outside the direct map: ignored"
            ));
            continue;
        };
        let name = sdt::signature_text(&header[0..4]);
        let length = sdt::header_length(&header).unwrap_or(0);
        raw.found
            .push(format!("table {name} at {phys:#x}, {length} bytes"));
        let (list, table) = match &header[0..4] {
            b"APIC" => (&mut raw.madts, "MADT"),
            b"SRAT" => (&mut raw.srats, "SRAT"),
            b"SLIT" => (&mut raw.slits, "SLIT"),
            _ => continue,
        };
        // The limit is shared with the host's `topology` (numalab_algo::acpi::sdt).
        if let Some(w) = sdt::too_large(table, &format!("{phys:#x}"), length) {
            raw.warnings.push(w);
            continue;
        }
        // A length below a header is copied as a header; the parser reports it as truncated.
        match copy_phys(&map, phys, (length as usize).max(HEADER_BYTES)) {
            Some(bytes) => list.push(bytes),
            None => raw.warnings.push(format!(
                "{table} at {phys:#x}: runs past mapped memory: table ignored"
            )),
        }
    }
    raw
}
