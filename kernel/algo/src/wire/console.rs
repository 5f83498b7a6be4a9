//! The kernel's console lines outside KTAP that the host sorts: warnings (`numalab: warning:`,
//! the kernel's `warn!`), the panic and exception lines, the out-of-memory line, and the
//! bootloader's panic (not the kernel's line, but on the same console).

/// What starts every warning the kernel prints (its `warn!` macro, kernel/src/serial.rs).
pub const WARNING: &str = "numalab: warning: ";
/// What starts the kernel's panic line (kernel/src/panic.rs).
pub const PANIC: &str = "PANIC:";
/// What starts the kernel's CPU exception line (kernel/src/arch/x86_64/idt.rs).
pub const EXCEPTION: &str = "EXCEPTION:";
/// What starts the kernel's out-of-memory line (kernel/src/mm/mod.rs), before it exits.
pub const OUT_OF_MEMORY: &str = "numalab: out of memory:";
/// What starts the bootloader's panic line (a line naming `bootloader`); its message follows
/// on the next line.
pub const BOOTLOADER_PANIC: &str = "ERROR: panicked at";

/// A console line read back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConsoleLine<'a> {
    /// A warning: the text after [`WARNING`].
    Warning(&'a str),
    /// The panic line: the text after [`PANIC`].
    Panic(&'a str),
    /// An exception line: the text after [`EXCEPTION`].
    Exception(&'a str),
    /// The out-of-memory line, whole and trimmed.
    OutOfMemory(&'a str),
    /// The bootloader's panic line.
    BootloaderPanic,
}

/// Reads one line (a trailing `\r` ignored): None when it is none of these.
pub fn parse(line: &str) -> Option<ConsoleLine<'_>> {
    let line = line.trim_end_matches(['\r', '\n']);
    if let Some(text) = line.strip_prefix(WARNING) {
        Some(ConsoleLine::Warning(text))
    } else if let Some(text) = line.strip_prefix(PANIC) {
        Some(ConsoleLine::Panic(text))
    } else if let Some(text) = line.strip_prefix(EXCEPTION) {
        Some(ConsoleLine::Exception(text))
    } else if line.starts_with(OUT_OF_MEMORY) {
        Some(ConsoleLine::OutOfMemory(line.trim()))
    } else if line.starts_with(BOOTLOADER_PANIC) && line.contains("bootloader") {
        Some(ConsoleLine::BootloaderPanic)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    #[test]
    fn each_line_reads_back() {
        let w = format!("{WARNING}{}", format_args!("invalid free at {:#x}", 16));
        assert_eq!(
            parse(&w),
            Some(ConsoleLine::Warning("invalid free at 0x10"))
        );
        assert_eq!(
            parse(&format!("{PANIC} at a.rs:1:2: boom\r")),
            Some(ConsoleLine::Panic(" at a.rs:1:2: boom"))
        );
        assert_eq!(
            parse(&format!("{EXCEPTION} vector 14")),
            Some(ConsoleLine::Exception(" vector 14"))
        );
        assert_eq!(
            parse(&format!("{OUT_OF_MEMORY} slub; too little ")),
            Some(ConsoleLine::OutOfMemory(
                "numalab: out of memory: slub; too little"
            ))
        );
        assert_eq!(
            parse("ERROR: panicked at bootloader/src/x.rs"),
            Some(ConsoleLine::BootloaderPanic)
        );
        for other in [
            "ERROR: panicked at src/x.rs",
            " numalab: warning: x",
            "ok 1 a",
        ] {
            assert_eq!(parse(other), None, "{other}");
        }
    }
}
