//! The guest's memory floor and its out-of-memory: a machine too small for
//! the suite asked is refused before anything boots (`floor_problem`, exit 2); a guest that runs
//! out of memory anyway ends at once with a line naming the cause: the kernel's own
//! `numalab: out of memory: ...` (QEMU status 37), or the bootloader's panic when it cannot map
//! the machine's memory (it then halts for good, so the runner stops QEMU on that line).
//!
//! The floors were measured by bisecting `-m` on a one-CPU machine without NUMA (docs/running.md,
//! "Memory floor", names the commands): more CPUs and nodes need more.

use crate::wire::BootLog;
use numalab_algo::options::Suite;

/// Below this the bootloader cannot map the machine's memory and never starts the kernel
/// (QEMU on the image with `-m 22M`: `FrameAllocationFailed`; 23M boots). Every suite that
/// the command line accepts has a higher floor; `Suite::None` (set by the tests) is held to it.
pub const BOOT_FLOOR_MIB: u64 = 23;
/// The smallest `-m` at which `--suite test` passes (56 MiB fails fault.oom).
pub const TEST_FLOOR_MIB: u64 = 57;
/// The smallest `-m` at which the default suite (`all`) fails no test it does not fail at 1 GiB;
/// bench, stress and soak are held to it too.
pub const ALL_FLOOR_MIB: u64 = 66;

/// QEMU's exit status when the kernel wrote 0x12 (`numalab: out of memory: ...`).
pub const STATUS_OUT_OF_MEMORY: i32 = 37;

/// The floor of `suite`, in MiB.
pub fn floor_mib(suite: Suite) -> u64 {
    match suite {
        Suite::None => BOOT_FLOOR_MIB,
        Suite::Test => TEST_FLOOR_MIB,
        _ => ALL_FLOOR_MIB,
    }
}

/// Why a machine of `mem_mib` cannot run `suite` (one line), or None.
pub fn floor_problem(mem_mib: u64, suite: Suite) -> Option<String> {
    let floor = floor_mib(suite);
    (mem_mib < floor).then(|| {
        let what = if mem_mib < BOOT_FLOOR_MIB {
            "too little memory to boot: the bootloader cannot map it".to_string()
        } else {
            format!("too little memory for --suite {suite}")
        };
        format!(
            "the machine has {mem_mib} MiB of memory, {what} (the floor is {floor} MiB; \
             docs/running.md, \"Memory floor\"): give QEMU -m {floor}M or more"
        )
    })
}

/// What a boot's serial log says about memory running out: the kernel's own line, or the
/// bootloader's failure to map the machine's memory (its panic message, the line after).
pub fn out_of_memory_line(log: &BootLog) -> Option<String> {
    if let Some(l) = &log.out_of_memory {
        return Some(l.clone());
    }
    let why = log.bootloader_panic.as_deref()?;
    why.contains("FrameAllocationFailed").then(|| {
        format!(
            "the bootloader ran out of memory mapping the machine's memory ({why}): \
             the machine is too small to boot"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machines_below_the_floor_are_refused_naming_the_cause() {
        let boot = floor_problem(16, Suite::All).unwrap();
        assert!(boot.contains("16 MiB") && boot.contains("too little memory to boot"));
        let suite = floor_problem(24, Suite::All).unwrap();
        assert!(
            suite.contains("too little memory for --suite all"),
            "{suite}"
        );
        assert!(suite.contains(&format!("-m {ALL_FLOOR_MIB}M")), "{suite}");
        assert_eq!(floor_problem(ALL_FLOOR_MIB, Suite::All), None);
        assert_eq!(floor_problem(TEST_FLOOR_MIB, Suite::Test), None);
        assert_eq!(floor_problem(BOOT_FLOOR_MIB, Suite::None), None);
        assert!(floor_problem(BOOT_FLOOR_MIB - 1, Suite::None).is_some());
    }

    #[test]
    fn the_kernel_and_the_bootloader_out_of_memory_lines_are_found() {
        let k = "boot\nnumalab: out of memory: slub: no memory for CPU 0's region; more\n";
        assert_eq!(
            out_of_memory_line(&BootLog::parse(k)).unwrap(),
            "numalab: out of memory: slub: no memory for CPU 0's region; more"
        );
        let b = "ERROR: panicked at /x/bootloader-x86_64-common-0.11.14/src/lib.rs:369:29:\n\
                 failed to map page Page[2MiB](0x2fdc0000000) to frame PhysFrame[2MiB](0x7dc0000000): FrameAllocationFailed\n";
        assert!(out_of_memory_line(&BootLog::parse(b))
            .unwrap()
            .contains("too small to boot"));
        assert_eq!(
            out_of_memory_line(&BootLog::parse("PANIC: at x: y\n")),
            None
        );
    }
}
