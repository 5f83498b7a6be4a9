//! The region marker the trace plugin recognises (docs/trace.md): the 8-byte NOP
//! `0F 1F 84 00 4E 55 4D 4C` ("NUML" as its displacement) followed at once by a one-byte load.
//! The plugin sees the NOP's bytes at translation and takes the load's virtual address as the
//! calling vCPU's region key. Without the plugin both are two ordinary instructions, executed
//! in every boot alike, so the plugin changes no guest instruction count.

/// The marker as text for the probes' own asm (the bytes `mark` emits).
macro_rules! marker {
    () => {
        ".byte 0x0f, 0x1f, 0x84, 0x00, 0x4e, 0x55, 0x4d, 0x4c"
    };
}

/// The key of "in the kernel, in no timed region": every CPU marks it first thing (the boot
/// CPU in `kernel_main`, each AP in its entry), so that the plugin's key 0 holds only what ran
/// before the kernel (the firmware and the boot loader, whose length depends on the host's
/// disk I/O), and every region leaves to it.
pub static KERNEL: u8 = 0;

/// The watch marker's bytes ("NUMW" as the displacement): the next access's line is one the
/// kernel named, which the plugin keeps in its tables whatever its rank.
#[cfg(feature = "ktest")]
macro_rules! watch_marker {
    () => {
        ".byte 0x0f, 0x1f, 0x84, 0x00, 0x4e, 0x55, 0x4d, 0x57"
    };
}

/// Tells the plugin to keep every line `obj` covers in every region's table (a named lock):
/// a watch marker and a one-byte load per 64-byte line, with interrupts off between the two,
/// as `mark`.
#[cfg(feature = "ktest")]
pub fn watch_object<T: ?Sized>(obj: &T) {
    let start = obj as *const T as *const u8 as usize;
    let end = start + core::mem::size_of_val(obj);
    let mut at = start;
    while at < end {
        x86_64::instructions::interrupts::without_interrupts(|| {
            // SAFETY: a NOP (its memory operand is never accessed) and a one-byte load at
            // `at`, which lies inside `obj`'s bytes, readable through the reference `obj`;
            // no stack use, no flags changed.
            unsafe {
                core::arch::asm!(
                    watch_marker!(),
                    "mov {tmp}, byte ptr [{p}]",
                    p = in(reg) at,
                    tmp = out(reg_byte) _,
                    options(nostack, readonly, preserves_flags),
                );
            }
        });
        at = (at & !63) + 64;
    }
}

/// Marks the calling CPU as in the kernel, outside any timed region.
#[inline(always)]
pub fn mark_kernel() {
    mark(&KERNEL)
}

/// Marks the calling CPU as entering the region keyed by `slot`'s address, with interrupts
/// off between the two instructions (the plugin takes the access after the NOP as the
/// marker: an interrupt handler's first access must not be it).
#[inline(always)]
pub fn mark(slot: &u8) {
    x86_64::instructions::interrupts::without_interrupts(|| mark_raw(slot));
}

#[inline(always)]
fn mark_raw(slot: &u8) {
    // SAFETY: a NOP (its memory operand is never accessed) and a one-byte load from `slot`, a
    // valid reference; no stack use, no flags changed, nothing written but the scratch register.
    unsafe {
        core::arch::asm!(
            marker!(),
            "mov {tmp}, byte ptr [{p}]",
            p = in(reg) slot as *const u8,
            tmp = out(reg_byte) _,
            options(nostack, readonly, preserves_flags),
        );
    }
}

/// Known-answer probes for the trace plugin's tests (kernel/src/bench/region_tests.rs): each
/// enters the region `enter`, does exactly the accesses it names with registers only (no
/// stack, no other memory), and leaves to `leave`, so the plugin's counts of the region are
/// known in advance.
/// A probe's asm: the marker into `{enter}`, the body's lines, the marker out to `{leave}`
/// (the scratch register `{t}` takes the marker loads).
#[cfg(feature = "ktest")]
macro_rules! marked {
    ($($line:literal),* $(,)?) => {
        concat!(
            marker!(), "\n", "mov {t:l}, byte ptr [{enter}]", "\n",
            $($line, "\n",)*
            marker!(), "\n", "mov {t:l}, byte ptr [{leave}]",
        )
    };
}

#[cfg(feature = "ktest")]
pub mod probes {
    /// One 8-byte load from each of `lines` 64-byte lines from `base`.
    ///
    /// # Safety
    /// `lines` x 64 bytes at `base` are readable.
    pub unsafe fn read_lines(enter: &u8, leave: &u8, base: *const u8, lines: u64) {
        if lines == 0 {
            return;
        }
        // SAFETY: the caller owns `lines` x 64 readable bytes at `base`; the two marker
        // loads read valid references; only the named registers change.
        unsafe {
            core::arch::asm!(
                marked!("2:", "mov {v}, qword ptr [{p}]", "add {p}, 64", "dec {n}", "jnz 2b"),
                enter = in(reg) enter as *const u8,
                leave = in(reg) leave as *const u8,
                p = inout(reg) base => _,
                n = inout(reg) lines => _,
                v = out(reg) _,
                t = out(reg) _,
                options(nostack, readonly),
            );
        }
    }

    /// One 8-byte store of 0 to each of `lines` 64-byte lines from `base`.
    ///
    /// # Safety
    /// `lines` x 64 bytes at `base` are writable and nothing else uses them meanwhile.
    pub unsafe fn write_lines(enter: &u8, leave: &u8, base: *mut u8, lines: u64) {
        if lines == 0 {
            return;
        }
        // SAFETY: the caller owns `lines` x 64 writable bytes at `base`, which no one else
        // touches meanwhile; the marker loads read valid references.
        unsafe {
            core::arch::asm!(
                marked!("2:", "mov qword ptr [{p}], 0", "add {p}, 64", "dec {n}", "jnz 2b"),
                enter = in(reg) enter as *const u8,
                leave = in(reg) leave as *const u8,
                p = inout(reg) base => _,
                n = inout(reg) lines => _,
                t = out(reg) _,
                options(nostack),
            );
        }
    }

    /// `rounds` times: waits until the word at `word` reads `first + 2i`, then stores
    /// `first + 2i + 1`. Two CPUs with `first` 0 and 1 hand the line back and forth.
    ///
    /// # Safety
    /// `word` is a valid, 8-byte aligned word that only the two CPUs of the protocol use.
    pub unsafe fn ping_pong(enter: &u8, leave: &u8, word: *mut u64, first: u64, rounds: u64) {
        if rounds == 0 {
            return;
        }
        // SAFETY: `word` is a valid, 8-byte aligned word shared only by the two CPUs of
        // the protocol, which write it in turn; the marker loads read valid references.
        unsafe {
            core::arch::asm!(
                marked!(
                    "2:",
                    "pause",
                    "mov {v}, qword ptr [{w}]",
                    "cmp {v}, {e}",
                    "jne 2b",
                    "lea {v}, [{e} + 1]",
                    "mov qword ptr [{w}], {v}",
                    "add {e}, 2",
                    "dec {n}",
                    "jnz 2b",
                ),
                enter = in(reg) enter as *const u8,
                leave = in(reg) leave as *const u8,
                w = in(reg) word,
                e = inout(reg) first => _,
                n = inout(reg) rounds => _,
                v = out(reg) _,
                t = out(reg) _,
                options(nostack),
            );
        }
    }
}
