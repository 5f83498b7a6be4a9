//! The kernel ELF's data symbols, for naming the c2c table's static lines: a small reader of
//! ELF64 little-endian `.symtab` (no dependency), and Rust's symbol demangling for plain paths:
//! legacy (`_ZN` length-prefixed path `E`, the trailing `h<16 hex>` hash dropped) and v0
//! (`_R` with nested `N` and crate-root `C` paths; generic or impl paths are left mangled).

/// Sized symbols of the file, sorted by address: (address, bytes, name).
pub fn symbols(elf: &[u8]) -> Result<Vec<(u64, u64, String)>, String> {
    let u16_at =
        |o: usize| -> Option<u16> { Some(u16::from_le_bytes(elf.get(o..o + 2)?.try_into().ok()?)) };
    let u32_at =
        |o: usize| -> Option<u32> { Some(u32::from_le_bytes(elf.get(o..o + 4)?.try_into().ok()?)) };
    let u64_at =
        |o: usize| -> Option<u64> { Some(u64::from_le_bytes(elf.get(o..o + 8)?.try_into().ok()?)) };
    if elf.get(0..4) != Some(b"\x7fELF") || elf.get(4) != Some(&2) || elf.get(5) != Some(&1) {
        return Err("not an ELF64 little-endian file".into());
    }
    let bad = || "truncated ELF file".to_string();
    let shoff = u64_at(0x28).ok_or_else(bad)? as usize;
    let shentsize = u16_at(0x3a).ok_or_else(bad)? as usize;
    let shnum = u16_at(0x3c).ok_or_else(bad)? as usize;
    let section = |i: usize| -> Option<(u32, usize, usize, u32)> {
        let o = shoff + i * shentsize;
        Some((
            u32_at(o + 4)?,
            u64_at(o + 0x18)? as usize,
            u64_at(o + 0x20)? as usize,
            u32_at(o + 0x28)?,
        ))
    };
    let mut out = Vec::new();
    for i in 0..shnum {
        let (kind, off, size, link) = section(i).ok_or_else(bad)?;
        if kind != 2 {
            continue; // SHT_SYMTAB only
        }
        let (_, str_off, str_size, _) = section(link as usize).ok_or_else(bad)?;
        let strtab = elf.get(str_off..str_off + str_size).ok_or_else(bad)?;
        for s in (off..off + size).step_by(24) {
            let (Some(name), Some(value), Some(bytes)) = (u32_at(s), u64_at(s + 8), u64_at(s + 16))
            else {
                return Err(bad());
            };
            if bytes == 0 || value == 0 {
                continue;
            }
            let raw = strtab
                .get(name as usize..)
                .and_then(|t| t.split(|&b| b == 0).next())
                .map(|t| String::from_utf8_lossy(t).into_owned())
                .unwrap_or_default();
            out.push((value, bytes, demangle(&raw)));
        }
    }
    out.sort();
    Ok(out)
}

/// The symbol holding `addr` in `syms` (sorted), with the offset into it.
pub fn lookup(syms: &[(u64, u64, String)], addr: u64) -> Option<(&str, u64)> {
    let i = syms.partition_point(|s| s.0 <= addr);
    let (start, bytes, name) = syms.get(i.checked_sub(1)?)?;
    (addr < start + bytes).then(|| (name.as_str(), addr - start))
}

/// One v0 identifier at `*i`: an optional disambiguator `s<base62>_`, a decimal length, an
/// optional `_`, the bytes.
fn v0_ident(s: &[u8], i: &mut usize) -> Option<String> {
    if s.get(*i) == Some(&b's') {
        *i += s[*i..].iter().position(|&b| b == b'_')? + 1;
    }
    let start = *i;
    while s.get(*i).is_some_and(u8::is_ascii_digit) {
        *i += 1;
    }
    let len: usize = std::str::from_utf8(&s[start..*i]).ok()?.parse().ok()?;
    if s.get(*i) == Some(&b'_') {
        *i += 1;
    }
    let text = s.get(*i..*i + len)?;
    *i += len;
    String::from_utf8(text.to_vec()).ok()
}

/// A v0 path at `*i` made only of crate roots and nested names.
fn v0_path(s: &[u8], i: &mut usize) -> Option<Vec<String>> {
    match *s.get(*i)? {
        b'C' => {
            *i += 1;
            Some(vec![v0_ident(s, i)?])
        }
        b'N' => {
            let ns = *s.get(*i + 1)?;
            *i += 2;
            let mut path = v0_path(s, i)?;
            let ident = v0_ident(s, i)?;
            path.push(match (ns, ident.is_empty()) {
                (b'C', true) => "{closure}".into(),
                (_, _) => ident,
            });
            Some(path)
        }
        _ => None,
    }
}

/// Rust's mangling to a path (`_ZN4core3fmt5write17h0123456789abcdefE` and
/// `_RNvNtCs1a_4core3fmt5write` -> `core::fmt::write`); any other name is returned as it is.
pub fn demangle(name: &str) -> String {
    if let Some(v0) = name.strip_prefix("_R") {
        let mut i = 0;
        return match v0_path(v0.as_bytes(), &mut i) {
            Some(parts) => parts.join("::"),
            None => name.to_string(),
        };
    }
    let Some(mut rest) = name.strip_prefix("_ZN") else {
        return name.to_string();
    };
    let mut parts: Vec<&str> = Vec::new();
    while !rest.starts_with('E') {
        let digits = rest.chars().take_while(|c| c.is_ascii_digit()).count();
        let Ok(len) = rest[..digits].parse::<usize>() else {
            return name.to_string();
        };
        let Some(part) = rest.get(digits..digits + len) else {
            return name.to_string();
        };
        parts.push(part);
        rest = &rest[digits + len..];
    }
    if parts.last().is_some_and(|p| {
        p.len() == 17 && p.starts_with('h') && p[1..].chars().all(|c| c.is_ascii_hexdigit())
    }) {
        parts.pop();
    }
    parts.join("::")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demangles_legacy_paths_and_drops_the_hash() {
        assert_eq!(
            demangle("_ZN14numalab_kernel5bench6region5MARKS17h0123456789abcdefE"),
            "numalab_kernel::bench::region::MARKS"
        );
        assert_eq!(demangle("plain"), "plain");
        assert_eq!(
            demangle("_RNvNtNtNtCs2xYnTfvw3D8_14numalab_kernel4arch5amd6410trace_mark6KERNEL"),
            "numalab_kernel::arch::amd64::trace_mark::KERNEL"
        );
        assert_eq!(demangle("_RNvCs1a_4core5write"), "core::write");
        // Generic and impl paths stay mangled rather than half read.
        assert_eq!(demangle("_RINvCs1a_4core5writeE"), "_RINvCs1a_4core5writeE");
        assert_eq!(demangle("_ZN99broken"), "_ZN99broken");
    }

    #[test]
    fn lookup_finds_the_holder_only_inside_it() {
        let syms = vec![
            (0x100, 0x10, "a".to_string()),
            (0x200, 0x40, "b".to_string()),
        ];
        assert_eq!(lookup(&syms, 0x108), Some(("a", 8)));
        assert_eq!(lookup(&syms, 0x110), None);
        assert_eq!(lookup(&syms, 0x23f), Some(("b", 0x3f)));
        assert_eq!(lookup(&syms, 0x50), None);
    }

    #[test]
    fn this_test_binary_has_symbols() {
        // The host test binary is an ELF64 LE file too: its symbol table reads.
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let syms = symbols(&me).unwrap();
        assert!(syms.len() > 100, "{}", syms.len());
        assert!(symbols(b"not an elf").is_err());
    }
}
