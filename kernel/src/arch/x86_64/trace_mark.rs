//! The region marker the trace plugin recognises (docs/trace.md): the 8-byte NOP
//! `0F 1F 84 00 4E 55 4D 4C` ("NUML" as its displacement) followed at once by a one-byte load.
//! The plugin sees the NOP's bytes at translation and takes the load's virtual address as the
//! calling vCPU's region key. Without the plugin both are two ordinary instructions, executed
//! in every boot alike, so the plugin changes no guest instruction count.

/// Marks the calling CPU as entering the region keyed by `slot`'s address.
#[inline(always)]
pub fn mark(slot: &u8) {
    // SAFETY: a NOP (its memory operand is never accessed) and a one-byte load from `slot`, a
    // valid reference; no stack use, no flags changed, nothing written but the scratch register.
    unsafe {
        core::arch::asm!(
            ".byte 0x0f, 0x1f, 0x84, 0x00, 0x4e, 0x55, 0x4d, 0x4c",
            "mov {tmp}, byte ptr [{p}]",
            p = in(reg) slot as *const u8,
            tmp = out(reg_byte) _,
            options(nostack, readonly, preserves_flags),
        );
    }
}
