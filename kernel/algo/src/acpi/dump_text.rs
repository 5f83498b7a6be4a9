//! The text that plain `acpidump` (ACPICA) prints: each table as a header line
//! `SRAT @ 0x000000007FFE1A2E` and hex rows `    0000: 53 52 41 54 ...  SRAT....`, tables
//! separated by blank lines. A writer (tests write machine descriptions with it) and a
//! panic-free reader.
//!
//! Reader rules: a header line is `NAME @ 0xHEX`; a row is `OFFSET: XX XX ...` with up to 16
//! bytes, the ASCII column after two blanks ignored; rows of a table must follow each other
//! (offset = bytes read so far). Other lines outside a table (banners, `Firmware Warning`
//! lines) are skipped; a malformed row is an error naming its line.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

/// Most bytes one text may hold in tables (64 MiB: more is not an ACPI dump).
pub const MAX_TOTAL_BYTES: usize = 64 << 20;

/// One table as `acpidump` prints it, ending with a blank line.
pub fn write_table(name: &str, address: u64, bytes: &[u8]) -> String {
    let mut out = format!("{name} @ 0x{address:016X}\n");
    for (row, chunk) in bytes.chunks(16).enumerate() {
        let _ = write!(out, "    {:04X}:", row * 16);
        for b in chunk {
            let _ = write!(out, " {b:02X}");
        }
        for _ in chunk.len()..16 {
            out.push_str("   ");
        }
        out.push_str("  ");
        for &b in chunk {
            out.push(if (0x20..0x7f).contains(&b) {
                b as char
            } else {
                '.'
            });
        }
        out.push('\n');
    }
    out.push('\n');
    out
}

/// A table read from the text: its name as the header line gives it, and its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpedTable {
    pub name: String,
    /// 1-based line of its header.
    pub line: usize,
    pub bytes: Vec<u8>,
}

/// `NAME @ 0xHEX` -> NAME.
fn header(line: &str) -> Option<&str> {
    let (name, addr) = line.trim().split_once(" @ ")?;
    let hex = addr
        .trim()
        .strip_prefix("0x")
        .or_else(|| addr.trim().strip_prefix("0X"))?;
    if hex.is_empty() || !hex.chars().all(|c| c.is_ascii_hexdigit()) || name.is_empty() {
        return None;
    }
    Some(name)
}

/// `OFFSET: XX XX ...  ascii` -> (offset, bytes); None if the line is not a row.
fn row(line: &str) -> Option<Result<(usize, Vec<u8>), &'static str>> {
    let t = line.trim_start();
    let (off, rest) = t.split_once(':')?;
    if off.is_empty() || off.len() > 16 || !off.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let offset = match usize::from_str_radix(off, 16) {
        Ok(o) => o,
        Err(_) => return Some(Err("offset out of range")),
    };
    let rest = rest.trim_start();
    let hex = match rest.find("  ") {
        Some(i) => &rest[..i],
        None => rest,
    };
    let mut bytes = Vec::with_capacity(16);
    for w in hex.split_whitespace() {
        if w.len() != 2 {
            return Some(Err("expected two hex digits per byte"));
        }
        match u8::from_str_radix(w, 16) {
            Ok(b) => bytes.push(b),
            Err(_) => return Some(Err("expected two hex digits per byte")),
        }
    }
    if bytes.is_empty() || bytes.len() > 16 {
        return Some(Err("expected 1 to 16 bytes in a row"));
    }
    Some(Ok((offset, bytes)))
}

/// Every table of an `acpidump` text, in order. `Err` is one line: `line N: problem`.
pub fn parse(text: &str) -> Result<Vec<DumpedTable>, String> {
    let mut tables: Vec<DumpedTable> = Vec::new();
    let mut open = false;
    let mut total = 0usize;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            open = false;
            continue;
        }
        if let Some(name) = header(line) {
            tables.push(DumpedTable {
                name: String::from(name),
                line: n,
                bytes: Vec::new(),
            });
            open = true;
            continue;
        }
        match row(line) {
            None => {
                if open {
                    return Err(format!(
                        "line {n}: expected a hex row 'OFFSET: XX XX ...' of table {}: {:?}",
                        tables.last().map_or("", |t| t.name.as_str()),
                        line.trim_end()
                    ));
                }
            }
            Some(Err(why)) => {
                let table = match tables.last().filter(|_| open) {
                    Some(t) => format!(" in table {} (header on line {})", t.name, t.line),
                    None => String::new(),
                };
                return Err(format!("line {n}{table}: {why}: {:?}", line.trim_end()));
            }
            Some(Ok((offset, bytes))) => {
                let Some(t) = tables.last_mut().filter(|_| open) else {
                    return Err(format!(
                        "line {n}: hex row outside a table (no 'NAME @ 0xADDRESS' line before it)"
                    ));
                };
                if offset != t.bytes.len() {
                    return Err(format!(
                        "line {n}: row at offset {offset:#x} in table {}, expected {:#x}",
                        t.name,
                        t.bytes.len()
                    ));
                }
                total += bytes.len();
                if total > MAX_TOTAL_BYTES {
                    return Err(format!(
                        "line {n}: more than {} MiB of tables",
                        MAX_TOTAL_BYTES >> 20
                    ));
                }
                t.bytes.extend_from_slice(&bytes);
            }
        }
    }
    if tables.is_empty() {
        return Err(String::from(
            "no table dump (a 'NAME @ 0xADDRESS' line followed by hex rows)",
        ));
    }
    if let Some(why) = tables.iter().find_map(cut_short) {
        return Err(why);
    }
    Ok(tables)
}

/// Why a dumped table is cut short, naming it and its header line: see
/// [`super::sdt::cut_short`]. A table the replay never reads is checked as well: a cut there
/// means the tables after it are missing.
fn cut_short(t: &DumpedTable) -> Option<String> {
    let what = super::sdt::cut_short(&t.name, &t.bytes)?;
    Some(format!(
        "line {}: table {} is cut short: its hex rows hold {what} (the text was cut mid-table \
         or mid-row)",
        t.line, t.name
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acpi::sdt::build_table;

    #[test]
    fn round_trip_and_acpidump_layout() {
        let a = build_table(b"SLIT", 1, &[4, 0, 0, 0, 0, 0, 0, 0, 10, 20, 20, 10]);
        let text = write_table("SLIT", 0x7ffe_1a2e, &a);
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("SLIT @ 0x000000007FFE1A2E"));
        assert_eq!(
            lines.next(),
            Some("    0000: 53 4C 49 54 30 00 00 00 01 55 4E 55 4D 4C 41 42  SLIT0....UNUMLAB")
        );
        let t = parse(&format!(
            "Firmware Warning: x\n{text}{}",
            write_table("APIC", 0, &a)
        ))
        .unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(
            (t[0].name.as_str(), t[0].line, &t[0].bytes),
            ("SLIT", 2, &a)
        );
        assert_eq!(t[1].name, "APIC");
    }

    #[test]
    fn bad_rows_name_the_line() {
        let a = build_table(b"SRAT", 3, &[0u8; 30]);
        let good = write_table("SRAT", 0, &a);
        let cases = [
            (
                good.replacen("0010:", "0020:", 1),
                "line 3: row at offset 0x20",
            ),
            (
                good.replacen(" 53 ", " 5G ", 1),
                "line 2 in table SRAT (header on line 1): expected two hex digits",
            ),
            (
                good.replacen("    0010:", "garbage", 1),
                "line 3: expected a hex row",
            ),
            (
                String::from("0000: 01 02\n"),
                "line 1: hex row outside a table",
            ),
            (String::from("hello\n"), "no table dump"),
        ];
        for (text, want) in cases {
            let e = parse(&text).unwrap_err();
            assert!(e.contains(want), "{want}: {e}");
        }
        for cut in 0..good.len() {
            let _ = parse(&good[..cut]);
        }
    }

    #[test]
    fn a_text_cut_mid_table_mid_row_or_mid_byte_names_the_table_and_line() {
        let a = build_table(b"APIC", 3, &[0u8; 30]);
        let s = build_table(b"SRAT", 3, &[0u8; 40]);
        let text = write_table("APIC", 0, &a) + &write_table("SRAT", 0x10, &s);
        assert!(parse(&text).is_ok());
        // Cut after each character of the SRAT's text up to half of its last byte: every cut
        // is refused with a line number and the table's name.
        let srat_at = text.find("SRAT @").unwrap();
        let line = text[..srat_at].lines().count() + 1;
        let last_row = text[..text.len() - 2].rfind('\n').unwrap() + 1;
        let last_half_byte = last_row + "    0040:".len() + 3 * (76 - 64) - 1;
        for cut in srat_at + "SRAT @ 0x0".len()..=last_half_byte {
            let e = parse(&text[..cut]).unwrap_err();
            assert!(
                e.starts_with("line ") && e.contains("table SRAT"),
                "{cut}: {e}"
            );
        }
        let half = parse(&text[..last_half_byte]).unwrap_err();
        assert!(
            half.contains(&format!("in table SRAT (header on line {line})")),
            "{half}"
        );
        let second_row = srat_at + text[srat_at..].find("    0010:").unwrap();
        let e = parse(&text[..second_row]).unwrap_err();
        assert_eq!(
            e,
            format!(
                "line {line}: table SRAT is cut short: its hex rows hold 16 of its 76 bytes (the \
                 text was cut mid-table or mid-row)"
            )
        );
        let e = parse(&text[..srat_at + 20]).unwrap_err();
        assert!(e.contains("0 bytes, not even the 8"), "{e}");
        assert!(parse(&text[..last_half_byte + 1]).is_ok());
        // RSDP's bytes are not a standard header: not checked.
        let rsdp = write_table("RSDP", 0, b"RSD PTR \x01\x02");
        assert!(parse(&rsdp).is_ok());
    }
}
