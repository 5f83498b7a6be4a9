//! The runner's exit statuses (README.md's table) and the one mapping from a boot's verdict to
//! a status, used by every command (a single boot, the bench and twin runs, the soak).

use crate::qemu::Verdict;

/// Every in-kernel test passed.
pub const PASS: i32 = 0;
/// A test failed, the kernel panicked or faulted, no test ran, or the KTAP log was cut short.
pub const FAIL: i32 = 1;
/// Bad command line (the message and the usage line are printed).
pub const USAGE: i32 = 2;
/// The kernel or an image could not be built.
pub const BUILD: i32 = 3;
/// QEMU or its firmware is missing, or QEMU itself failed.
pub const QEMU: i32 = 4;
/// The guest ran out of memory (the machine is too small: docs/running.md, "Memory floor").
pub const OUT_OF_MEMORY: i32 = 5;
/// The run passed its `--timeout` and was killed.
pub const TIMEOUT: i32 = 124;

/// The exit status of a boot that ended with `verdict`.
pub fn of(verdict: &Verdict) -> i32 {
    match verdict {
        Verdict::Pass => PASS,
        Verdict::Timeout => TIMEOUT,
        Verdict::QemuError(_) => QEMU,
        Verdict::OutOfMemory(_) => OUT_OF_MEMORY,
        _ => FAIL,
    }
}
