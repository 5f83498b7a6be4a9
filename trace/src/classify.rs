//! Classification of an x86 instruction by its bytes at translation: the region marker NOP,
//! the watch marker NOP, atomics (LOCK prefix, XCHG with a memory operand), or plain.

/// `nopl 0x4c4d554e(%rax,%rax,1)`: the kernel's region marker ("NUML" as its displacement).
pub const MARKER: [u8; 8] = [0x0F, 0x1F, 0x84, 0x00, 0x4E, 0x55, 0x4D, 0x4C];

/// `nopl 0x574d554e(%rax,%rax,1)`: the kernel's watch marker ("NUMW"): the next access's line
/// is one the kernel named, kept in every region's table whatever its rank.
pub const WATCH: [u8; 8] = [0x0F, 0x1F, 0x84, 0x00, 0x4E, 0x55, 0x4D, 0x57];

/// What an instruction's memory accesses count as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InsnClass {
    /// The marker NOP: the vCPU's next access names its region.
    Marker,
    /// The watch NOP: the vCPU's next access names a line to keep.
    Watch,
    /// Lock-prefixed or XCHG with memory: counted as `atomics`, a store for coherence.
    Atomic,
    /// Loads and stores by direction.
    Plain,
}

const LOCK: u8 = 0xF0;

fn is_legacy_prefix(b: u8) -> bool {
    matches!(
        b,
        0x66 | 0x67 | 0xF2 | 0xF3 | 0x2E | 0x36 | 0x3E | 0x26 | 0x64 | 0x65 | LOCK
    )
}

/// Classifies one instruction from its bytes.
pub fn classify(bytes: &[u8]) -> InsnClass {
    if bytes == MARKER {
        return InsnClass::Marker;
    }
    if bytes == WATCH {
        return InsnClass::Watch;
    }
    let mut i = 0;
    let mut lock = false;
    while let Some(&b) = bytes.get(i) {
        if !is_legacy_prefix(b) {
            break;
        }
        lock |= b == LOCK;
        i += 1;
    }
    if lock {
        return InsnClass::Atomic;
    }
    if matches!(bytes.get(i), Some(0x40..=0x4F)) {
        i += 1;
    }
    match (bytes.get(i), bytes.get(i + 1)) {
        (Some(0x86 | 0x87), Some(modrm)) if modrm >> 6 != 3 => InsnClass::Atomic,
        _ => InsnClass::Plain,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_exact_bytes_only() {
        assert_eq!(classify(&MARKER), InsnClass::Marker);
        assert_eq!(classify(&WATCH), InsnClass::Watch);
        // Another displacement: an ordinary long NOP.
        assert_eq!(
            classify(&[0x0F, 0x1F, 0x84, 0x00, 0, 0, 0, 0]),
            InsnClass::Plain
        );
        // The marker with a prefix is not the marker.
        assert_eq!(
            classify(&[0x66, 0x0F, 0x1F, 0x84, 0x00, 0x4E, 0x55, 0x4D, 0x4C]),
            InsnClass::Plain
        );
    }

    #[test]
    fn lock_prefixes() {
        // lock cmpxchg %rcx,(%rdx): f0 48 0f b1 0a
        assert_eq!(classify(&[0xF0, 0x48, 0x0F, 0xB1, 0x0A]), InsnClass::Atomic);
        // lock incl (%rax): f0 ff 00
        assert_eq!(classify(&[0xF0, 0xFF, 0x00]), InsnClass::Atomic);
        // 66 f0 0f b1 0a: lock after an operand-size prefix
        assert_eq!(classify(&[0x66, 0xF0, 0x0F, 0xB1, 0x0A]), InsnClass::Atomic);
        // LOCK before another prefix: f0 66 0f b1 0a, f0 2e ff 00
        assert_eq!(classify(&[0xF0, 0x66, 0x0F, 0xB1, 0x0A]), InsnClass::Atomic);
        assert_eq!(classify(&[0xF0, 0x2E, 0xFF, 0x00]), InsnClass::Atomic);
        // gs-prefixed lock add: 65 f0 48 01 08
        assert_eq!(classify(&[0x65, 0xF0, 0x48, 0x01, 0x08]), InsnClass::Atomic);
        // mov (%rax),%rcx: 48 8b 08
        assert_eq!(classify(&[0x48, 0x8B, 0x08]), InsnClass::Plain);
        // rep movsb: f3 a4 (F3 is a prefix but not LOCK)
        assert_eq!(classify(&[0xF3, 0xA4]), InsnClass::Plain);
        // F0 as a ModRM/immediate byte, not a prefix: add $0xf0,%al = 04 f0
        assert_eq!(classify(&[0x04, 0xF0]), InsnClass::Plain);
    }

    #[test]
    fn xchg_memory_only() {
        // xchg %rax,(%rdx): 48 87 02 (mod 00)
        assert_eq!(classify(&[0x48, 0x87, 0x02]), InsnClass::Atomic);
        // xchg %al,0x8(%rdx): 86 42 08 (mod 01)
        assert_eq!(classify(&[0x86, 0x42, 0x08]), InsnClass::Atomic);
        // xchg %rcx,%rax: 48 87 c8 (mod 11, registers)
        assert_eq!(classify(&[0x48, 0x87, 0xC8]), InsnClass::Plain);
        // xchg %cl,%al: 86 c8
        assert_eq!(classify(&[0x86, 0xC8]), InsnClass::Plain);
        // 66 87 02: xchg %ax,(%rdx)
        assert_eq!(classify(&[0x66, 0x87, 0x02]), InsnClass::Atomic);
        // A lone opcode without ModRM (truncated) is plain.
        assert_eq!(classify(&[0x87]), InsnClass::Plain);
    }
}
