//! Reading an ELF64 file's section and symbol names (little endian, as x86_64 builds are): what
//! the tests that check what an image carries (no tests, no test hooks) read.

/// An ELF64 file's bytes.
struct Elf<'a> {
    bytes: &'a [u8],
}

impl Elf<'_> {
    fn u16_at(&self, o: usize) -> usize {
        u16::from_le_bytes([self.bytes[o], self.bytes[o + 1]]) as usize
    }
    fn u32_at(&self, o: usize) -> usize {
        u32::from_le_bytes(self.bytes[o..o + 4].try_into().unwrap()) as usize
    }
    fn u64_at(&self, o: usize) -> usize {
        u64::from_le_bytes(self.bytes[o..o + 8].try_into().unwrap()) as usize
    }
    /// The offset of section header `i`.
    fn header(&self, i: usize) -> usize {
        self.u64_at(0x28) + i * self.u16_at(0x3a)
    }
    fn count(&self) -> usize {
        self.u16_at(0x3c)
    }
    /// The NUL-terminated string at `at`.
    fn c_str(&self, at: usize) -> String {
        let end = self.bytes[at..].iter().position(|&b| b == 0).unwrap();
        String::from_utf8_lossy(&self.bytes[at..at + end]).into_owned()
    }
}

fn open(bytes: &[u8]) -> Elf<'_> {
    assert_eq!(&bytes[..4], b"\x7fELF", "not an ELF file");
    Elf { bytes }
}

/// The names of the sections.
pub fn section_names(bytes: &[u8]) -> Vec<String> {
    let elf = open(bytes);
    let strtab = elf.u64_at(elf.header(elf.u16_at(0x3e)) + 0x18);
    (0..elf.count())
        .map(|i| elf.c_str(strtab + elf.u32_at(elf.header(i))))
        .collect()
}

/// The names in the symbol table (`.symtab`, type 2), mangled as the linker wrote them.
pub fn symbol_names(bytes: &[u8]) -> Vec<String> {
    const SHT_SYMTAB: usize = 2;
    const SYM_SIZE: usize = 24;
    let elf = open(bytes);
    let mut names = Vec::new();
    for i in 0..elf.count() {
        let h = elf.header(i);
        if elf.u32_at(h + 4) != SHT_SYMTAB {
            continue;
        }
        let (offset, size, link) = (
            elf.u64_at(h + 0x18),
            elf.u64_at(h + 0x20),
            elf.u32_at(h + 0x28),
        );
        let strtab = elf.u64_at(elf.header(link) + 0x18);
        for s in (offset..offset + size).step_by(SYM_SIZE) {
            let name = elf.u32_at(s);
            if name != 0 {
                names.push(elf.c_str(strtab + name));
            }
        }
    }
    names
}

/// Whether `needle` occurs anywhere in the file (a string constant, a symbol name).
pub fn contains(bytes: &[u8], needle: &str) -> bool {
    bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
}
