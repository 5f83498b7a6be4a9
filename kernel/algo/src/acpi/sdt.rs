//! The common parts of every ACPI system description table: the 36-byte header, the checksum,
//! little-endian field reads that cannot go out of bounds, and the walk over the
//! `(type, length)` entries that MADT and SRAT share.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// Size of the standard SDT header (signature, length, revision, checksum, OEM fields).
pub const HEADER_BYTES: usize = 36;

/// Largest table numalab reads, kernel and host alike: the kernel does not copy a table whose
/// header claims more, and `qemu-run.sh topology` ignores it the same way ([`too_large`]).
/// 2 MiB: a SLIT for 1024 localities (Linux's MAX_NUMNODES, numalab's `numa::MAX_NODES`) is
/// 1 MiB + 44 bytes, so a 1 MiB limit would drop the distances of a 1024-node machine; the
/// largest real MADT or SRAT is far smaller.
pub const MAX_TABLE_BYTES: u32 = 2 << 20;

/// The warning for a table whose header length is over [`MAX_TABLE_BYTES`] (`where_` names
/// it: a physical address in the kernel, a file on the host), or None when it is within it.
pub fn too_large(table: &str, where_: &str, length: u32) -> Option<String> {
    (length > MAX_TABLE_BYTES).then(|| {
        format!(
            "{table} at {where_}: length field {length} is over the {MAX_TABLE_BYTES}-byte limit: table ignored"
        )
    })
}

/// Reads a little-endian u8 at `off`, or None past the end.
pub fn u8_at(bytes: &[u8], off: usize) -> Option<u8> {
    bytes.get(off).copied()
}

/// Reads a little-endian u16 at `off`, or None if it does not fit.
pub fn u16_at(bytes: &[u8], off: usize) -> Option<u16> {
    let b = bytes.get(off..off.checked_add(2)?)?;
    Some(u16::from_le_bytes([b[0], b[1]]))
}

/// Reads a little-endian u32 at `off`, or None if it does not fit.
pub fn u32_at(bytes: &[u8], off: usize) -> Option<u32> {
    let b = bytes.get(off..off.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Reads a little-endian u64 at `off`, or None if it does not fit.
pub fn u64_at(bytes: &[u8], off: usize) -> Option<u64> {
    let b = bytes.get(off..off.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Some(u64::from_le_bytes(a))
}

/// The signature as text (non-printable bytes shown as `?`).
pub fn signature_text(sig: &[u8]) -> String {
    sig.iter()
        .map(|&c| if c.is_ascii_graphic() { c as char } else { '?' })
        .collect()
}

/// The length field of a table header, if the bytes hold a header.
pub fn header_length(bytes: &[u8]) -> Option<u32> {
    u32_at(bytes, 4)
}

/// Checks a whole table: signature, header length against the bytes given, checksum.
/// Returns the table's bytes (exactly `length` of them) or why the table cannot be used
/// (the caller prints it as a warning naming the table).
pub fn check_table<'a>(
    bytes: &'a [u8],
    signature: &[u8; 4],
    min_bytes: usize,
) -> Result<&'a [u8], String> {
    let name = signature_text(signature);
    if bytes.len() < HEADER_BYTES {
        return Err(format!(
            "{name}: truncated table ({} bytes, a header needs {HEADER_BYTES})",
            bytes.len()
        ));
    }
    if &bytes[0..4] != signature {
        return Err(format!(
            "{name}: signature is '{}'",
            signature_text(&bytes[0..4])
        ));
    }
    let length = header_length(bytes).unwrap_or(0) as usize;
    if length < min_bytes {
        return Err(format!(
            "{name}: truncated table (length {length}, needs at least {min_bytes})"
        ));
    }
    if length > bytes.len() {
        return Err(format!(
            "{name}: truncated table (length field {length} runs past the {} bytes present)",
            bytes.len()
        ));
    }
    // A bad checksum is not a reason to refuse: see [`bad_checksum`].
    Ok(&bytes[..length])
}

/// The warning for a table whose bytes do not sum to zero, or None when they do (or when
/// the bytes hold no whole header). ACPICA checks the checksum when it installs a table and
/// only warns, "Incorrect checksum in table [SRAT] - 0x12, should be 0x34"
/// (tables/tbprint.c `acpi_tb_verify_checksum`; it refuses only when built with
/// `ACPI_CHECKSUM_ABORT`, which Linux is not), and Linux then uses the table. numalab does
/// the same: the warning names the table, the checksum byte, the byte that would
/// make the sum zero and the sum itself, and the table is used.
pub fn bad_checksum(name: &str, bytes: &[u8]) -> Option<String> {
    let length = header_length(bytes)? as usize;
    let table = bytes.get(..length).filter(|_| length >= HEADER_BYTES)?;
    let sum = table.iter().fold(0u8, |acc, &b| acc.wrapping_add(b));
    (sum != 0).then(|| {
        let stored = table[9];
        let wanted = stored.wrapping_sub(sum);
        format!(
            "{name}: incorrect checksum {stored:#04x}, should be {wanted:#04x} (its {length} \
             bytes sum to {sum:#04x}, not 0): table used anyway, as ACPICA and Linux do"
        )
    })
}

/// How a captured table named `name` is cut short, or None: fewer bytes than the length field
/// of its own header says ("16 of its 76 bytes"). Only bytes that begin with the name (or a
/// piece of it) hold a standard header (RSDP's begin `RSD PTR `: not checked); a cut inside
/// the first 8 bytes leaves no length field, so is cut short too. A firmware table in memory
/// always has its length; a capture (an acpidump text, a .dat file) shorter than that was cut.
pub fn cut_short(name: &str, bytes: &[u8]) -> Option<String> {
    let name = name.as_bytes();
    if name.len() != 4 || !name.starts_with(&bytes[..bytes.len().min(4)]) {
        return None;
    }
    let present = bytes.len();
    match header_length(bytes) {
        Some(length) if present < length as usize => {
            Some(format!("{present} of its {length} bytes"))
        }
        Some(_) => None,
        None => Some(format!(
            "{present} bytes, not even the 8 that hold its length"
        )),
    }
}

/// One `(type, length, body...)` entry of a MADT or SRAT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    /// Position among the table's entries, from 0 (what warnings and the dump call "entry N").
    pub index: usize,
    /// Byte offset of the entry in the table.
    pub offset: usize,
    pub kind: u8,
    /// The whole entry, type and length bytes included.
    pub bytes: &'a [u8],
}

/// Splits `table[start..]` into entries. A length of 0 cannot advance and ends the walk with
/// one warning (Linux's `acpi_parse_entries_array`, lib/fw_table.c, returns -EINVAL: "Invalid
/// zero length"). A length of 1 advances by one byte, as that loop does (`entry.hdr +=
/// entry_len` whatever the type): the next entry starts at the 1-byte entry's length byte.
/// A length that runs past the table ends the walk with one warning.
pub fn entries<'a>(
    table: &'a [u8],
    start: usize,
    name: &str,
    warnings: &mut Vec<String>,
) -> Vec<Entry<'a>> {
    let mut out = Vec::new();
    let mut offset = start;
    let mut index = 0;
    while offset < table.len() {
        let (Some(kind), Some(len)) = (u8_at(table, offset), u8_at(table, offset + 1)) else {
            warnings.push(format!(
                "{name} entry {index} at offset {offset}: truncated entry (1 byte before the table ends): ignored"
            ));
            break;
        };
        let len = len as usize;
        if len == 0 {
            warnings.push(format!(
                "{name} entry {index} at offset {offset} (type {kind}): length 0 cannot advance: \
                 this entry and the rest of the table ignored"
            ));
            break;
        }
        let Some(bytes) = table.get(offset..offset + len) else {
            warnings.push(format!(
                "{name} entry {index} at offset {offset} (type {kind}): length {len} runs past the end \
                 of the table ({} bytes): entry dropped",
                table.len()
            ));
            break;
        };
        out.push(Entry {
            index,
            offset,
            kind,
            bytes,
        });
        offset += len;
        index += 1;
    }
    out
}

/// Fills in a valid header and checksum for `body` (test helper, also used by host tests
/// that write tables for QEMU's `-acpitable`).
pub fn build_table(signature: &[u8; 4], revision: u8, body: &[u8]) -> Vec<u8> {
    let mut t = Vec::with_capacity(HEADER_BYTES + body.len());
    t.extend_from_slice(signature);
    t.extend_from_slice(&((HEADER_BYTES + body.len()) as u32).to_le_bytes());
    t.push(revision);
    t.push(0); // checksum, fixed below
    t.extend_from_slice(b"NUMLAB");
    t.extend_from_slice(b"NUMALAB ");
    t.extend_from_slice(&1u32.to_le_bytes());
    t.extend_from_slice(b"NLAB");
    t.extend_from_slice(&1u32.to_le_bytes());
    t.extend_from_slice(body);
    fix_checksum(&mut t);
    t
}

/// Sets byte 9 so that the table's bytes sum to zero.
pub fn fix_checksum(table: &mut [u8]) {
    if table.len() < HEADER_BYTES {
        return;
    }
    table[9] = 0;
    let sum = table.iter().fold(0u8, |acc, &b| acc.wrapping_add(b));
    table[9] = 0u8.wrapping_sub(sum);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_bounds_checked() {
        let b = [1u8, 2, 3];
        assert_eq!(u16_at(&b, 1), Some(0x0302));
        assert_eq!(u16_at(&b, 2), None);
        assert_eq!(u32_at(&b, 0), None);
        assert_eq!(u64_at(&b, usize::MAX), None);
        assert_eq!(u8_at(&b, 3), None);
    }

    #[test]
    fn check_table_cases() {
        let t = build_table(b"SLIT", 1, &[0u8; 12]);
        assert!(check_table(&t, b"SLIT", 44).is_ok());
        assert!(check_table(&t, b"SRAT", 44)
            .unwrap_err()
            .contains("signature"));
        let mut bad = t.clone();
        bad[20] ^= 1;
        // A bad checksum is used (ACPICA warns and goes on), with the warning naming it.
        assert_eq!(check_table(&bad, b"SLIT", 44), Ok(&bad[..]));
        assert_eq!(bad_checksum("SLIT", &t), None);
        assert_eq!(
            bad_checksum("SLIT", &bad).unwrap(),
            format!(
                "SLIT: incorrect checksum {:#04x}, should be {:#04x} (its 48 bytes sum to 0x01, \
                 not 0): table used anyway, as ACPICA and Linux do",
                bad[9],
                bad[9].wrapping_sub(1)
            )
        );
        assert_eq!(bad_checksum("SLIT", &bad[..20]), None);
        assert!(check_table(&t[..40], b"SLIT", 44)
            .unwrap_err()
            .contains("truncated"));
        assert!(check_table(&t[..10], b"SLIT", 44)
            .unwrap_err()
            .contains("truncated"));
        let mut short = t.clone();
        short[4] = 40;
        fix_checksum(&mut short);
        assert!(check_table(&short, b"SLIT", 44)
            .unwrap_err()
            .contains("needs at least 44"));
    }

    #[test]
    fn entry_walk_stops_on_bad_lengths() {
        let mut w = Vec::new();
        let t = [0u8, 4, 0, 0, 1, 4, 9, 7];
        let e = entries(&t, 0, "MADT", &mut w);
        assert_eq!(e.len(), 2);
        assert!(w.is_empty());
        let e = entries(&[0u8, 4, 0, 0, 1, 0, 5], 0, "MADT", &mut w);
        assert_eq!(e.len(), 1);
        assert!(w[0].contains("MADT entry 1") && w[0].contains("cannot advance"));
        w.clear();
        // Length 1 steps one byte, as Linux's acpi_parse_entries_array: the next entry's type
        // is that length byte (1) and its length the byte after.
        let e = entries(&[0u8, 4, 0, 0, 0x7f, 1, 3, 9, 0x22, 2], 0, "SRAT", &mut w);
        let kinds: Vec<(u8, usize, usize)> = e
            .iter()
            .map(|e| (e.kind, e.offset, e.bytes.len()))
            .collect();
        assert_eq!(
            kinds,
            vec![(0, 0, 4), (0x7f, 4, 1), (1, 5, 3), (0x22, 8, 2)]
        );
        assert!(w.is_empty(), "{w:?}");
        let e = entries(&[0u8, 4, 0, 0, 1, 9, 5], 0, "SRAT", &mut w);
        assert_eq!(e.len(), 1);
        assert!(w[0].contains("SRAT entry 1") && w[0].contains("runs past"));
        w.clear();
        let e = entries(&[0u8, 4, 0, 0, 1], 0, "SRAT", &mut w);
        assert_eq!(e.len(), 1);
        assert!(w[0].contains("truncated entry"));
    }
}
