//! A Linux kernel's data symbols from its System.map (`ADDR TYPE NAME` a line, the format of
//! `nm` and of /proc/kallsyms), for naming the c2c table's static lines of the twin's traced
//! boots (docs/linux-twin.md) as elf.rs does numalab's. System.map has no sizes: a symbol's
//! size is the distance to the next symbol (of any type) at a higher address, capped at
//! [`MAX_BYTES`]. The symbols are link-time addresses; trace/mod.rs shifts them by the KASLR
//! offset the module's `# trace kernel 0xADDR SYMBOL` line gives.

/// The largest size given to a symbol (the last one of a section would otherwise reach to
/// the next section).
pub const MAX_BYTES: u64 = 4096;

/// The symbol types kept: initialised data (`d`/`D`), bss (`b`/`B`), read-only data (`r`/`R`)
/// and weak objects (`v`/`V`); lower case: local (static) symbols. Also kept, whatever their
/// type: symbols past the end of the kernel's text (`_etext`) outside its init sections
/// (`__init_begin`..`__init_end`, freed after boot and reused as ordinary memory): Linux 7.3's
/// /proc/kallsyms types some data `T` or `t` (`jiffies_64`, `vmap_nodes`; kallsyms.rs).
const DATA_TYPES: &[char] = &['d', 'D', 'b', 'B', 'r', 'R', 'v', 'V'];

/// Kernel addresses start here; below are the per-CPU section's offsets (type `D`/`A` at
/// 0x0...), which are not addresses and are left out.
const KERNEL_SPACE: u64 = 0xffff_0000_0000_0000;

/// The data symbols of System.map text `text`, sorted by address: (address, bytes, name).
/// Err: the text has no symbol line at all, or it is Debian's stub (one line saying that the
/// real System.map is in the `-dbg` package), in one line saying so.
pub fn symbols(text: &str) -> Result<Vec<(u64, u64, String)>, String> {
    if let Some(l) = text
        .lines()
        .find(|l| l.contains("The real System.map is in"))
    {
        let said = l.split_once(" B ").map_or(l, |(_, s)| s).trim();
        return Err(format!("a stub, not a symbol table (it says: {said})"));
    }
    // Every symbol's address (for the sizes), then the data ones.
    let mut all: Vec<(u64, char, &str)> = text
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let addr = u64::from_str_radix(w.next()?, 16).ok()?;
            let kind = w.next()?.chars().next()?;
            let name = w.next()?;
            Some((addr, kind, name))
        })
        .collect();
    if all.is_empty() {
        return Err("no `ADDRESS TYPE NAME` line".into());
    }
    all.sort_by_key(|s| s.0);
    let at = |name: &str| all.iter().find(|s| s.2 == name).map(|s| s.0);
    let etext = at("_etext");
    let init = at("__init_begin").zip(at("__init_end"));
    let mut out = Vec::new();
    for (i, &(addr, kind, name)) in all.iter().enumerate() {
        let in_init = init.is_some_and(|(b, e)| addr >= b && addr < e);
        let past_text = etext.is_some_and(|e| addr >= e);
        if addr < KERNEL_SPACE || in_init || !(DATA_TYPES.contains(&kind) || past_text) {
            continue;
        }
        let next = all[i + 1..].iter().map(|s| s.0).find(|&a| a > addr);
        let bytes = next.map_or(MAX_BYTES, |n| (n - addr).min(MAX_BYTES));
        out.push((addr, bytes, name.to_string()));
    }
    Ok(out)
}

/// The address of the symbol `name` in System.map text `text` (any type), if it has it.
pub fn address_of(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let mut w = l.split_whitespace();
        let addr = w.next()?;
        let _kind = w.next()?;
        (w.next()? == name)
            .then(|| u64::from_str_radix(addr, 16).ok())
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAP: &str = "0000000000000000 D __per_cpu_start\n\
        0000000000001000 D fixed_percpu_data\n\
        ffffffff81000000 T _text\n\
        ffffffff81000040 t a_function\n\
        ffffffff82a0b000 D jiffies_64\n\
        ffffffff82a0b040 d vmap_area_lock\n\
        ffffffff82a0b040 d vmap_area_lock_alias\n\
        ffffffff82a0b080 B free_vmap_area_lock\n\
        ffffffff82a0c100 b last_bss\n";

    #[test]
    fn data_symbols_sized_to_the_next_one() {
        let s = symbols(MAP).unwrap();
        let names: Vec<&str> = s.iter().map(|x| x.2.as_str()).collect();
        assert_eq!(
            names,
            [
                "jiffies_64",
                "vmap_area_lock",
                "vmap_area_lock_alias",
                "free_vmap_area_lock",
                "last_bss"
            ]
        );
        assert_eq!(s[0], (0xffffffff82a0b000, 0x40, "jiffies_64".into()));
        // An alias at the same address is sized to the next higher address.
        assert_eq!(s[1].1, 0x40);
        assert_eq!(s[2].1, 0x40);
        // Capped: 0x1080 bytes to the next symbol, 4096 kept; the last one gets the cap.
        assert_eq!(s[3].1, MAX_BYTES);
        assert_eq!(s[4].1, MAX_BYTES);
        assert_eq!(
            crate::trace::elf::lookup(&s, 0xffffffff82a0b044),
            Some(("vmap_area_lock_alias", 4))
        );
        assert_eq!(address_of(MAP, "jiffies_64"), Some(0xffffffff82a0b000));
        assert_eq!(address_of(MAP, "nope"), None);
    }

    #[test]
    fn past_the_text_any_type_is_data_but_not_the_init_sections() {
        // Linux 7.3's kallsyms: `T jiffies_64` in the data, init text between the markers.
        let map = "ffffffff81000000 T _text\n\
            ffffffff81000040 T some_function\n\
            ffffffff821d3f90 T _etext\n\
            ffffffff83207a00 T jiffies_64\n\
            ffffffff833ca200 t vmap_nodes\n\
            ffffffff83ade000 B __init_begin\n\
            ffffffff83ade100 T an_init_function\n\
            ffffffff83ade200 d an_init_datum\n\
            ffffffff83f6c000 D __init_end\n\
            ffffffff83f6c040 b after_init\n";
        let names: Vec<String> = symbols(map).unwrap().into_iter().map(|s| s.2).collect();
        assert_eq!(
            names,
            [
                "_etext",
                "jiffies_64",
                "vmap_nodes",
                "__init_end",
                "after_init"
            ]
        );
    }

    #[test]
    fn debians_stub_and_garbage_are_refused() {
        let stub = "ffffffffffffffff B The real System.map is in the linux-image-6.1.0-57-amd64-dbg package\n";
        let e = symbols(stub).unwrap_err();
        assert!(e.contains("stub") && e.contains("-dbg package"), "{e}");
        assert!(symbols("hello world\n").is_err());
    }
}
