//! Puts the virtual clock's timer phase on the kernel's own code, so that a det (`-icount`)
//! boot with several vCPUs interleaves them the same way every time.
//!
//! Why (measured, docs/benchmarks.md "Why det counts repeat"): under `-icount` QEMU 7.2 runs
//! the vCPUs round-robin on one host thread; a vCPU's turn ends at the next QEMU_CLOCK_VIRTUAL
//! timer deadline, and a kick timer moves to the next vCPU every 100 ms of virtual time,
//! counted from the last moment all vCPUs were idle. The firmware reads the boot disk through
//! asynchronous block I/O and halts while it waits; with `sleep=off` each halt warps the clock
//! to the next PIT tick, so how much virtual time passes before the kernel starts depends on
//! the host (236.5 against 657.5 million instructions under load). Two timers would carry that
//! host-timed offset into the kernel: the PIT's channel 0 tick (18.2 Hz, programmed by the
//! firmware) and the kick timer. `align` removes both:
//! - channel 0 is reprogrammed to mode 0 (one interrupt at terminal count, then silent), so
//!   QEMU deletes its timer; the 8259s are masked, so the one edge reaches no CPU;
//! - the boot CPU halts until a LAPIC one-shot `ALIGN_US` later, with every AP still waiting
//!   for its SIPI: all vCPUs are idle, so QEMU stops the kick timer and starts it again when
//!   the boot CPU wakes, at a point fixed by the kernel's code.
//!
//! It also starts the kernel's clock epoch (`tsc::since_epoch`). After it, every timer
//! deadline is set by the kernel relative to its own instructions. On a boot without icount it
//! costs one `ALIGN_US` wait.

use x86_64::instructions::interrupts;
use x86_64::instructions::port::Port;

use super::apic;

/// The boot CPU's one-shot wait (virtual time under icount, where the halt warps through it).
pub const ALIGN_US: u64 = 1_000;

/// PIT mode/command port and channel 0's data port.
const PIT_MODE: u16 = 0x43;
const PIT_CH0: u16 = 0x40;
/// Channel 0 (bits 7-6: 00), lobyte/hibyte access (5-4: 11), mode 0, interrupt on terminal
/// count (3-1: 000), binary (0: 0).
const CH0_MODE0: u8 = 0b0011_0000;

/// Stops the firmware's PIT tick and restarts QEMU's round-robin kick timer from here.
/// Boot CPU, before any AP starts, with the timer vector's handler installed and the LAPIC
/// timer calibrated. Returns false, with nothing done, when the LAPIC timer is not calibrated
/// (or its 1 ms count does not fit the timer; the PIT is then already quiet).
pub fn align() -> bool {
    let ticks = apic::timer_hz() * ALIGN_US / 1_000_000;
    if ticks == 0 {
        return false;
    }
    // SAFETY: 0x43 and 0x40 are the PIT's mode port and channel 0; nothing else in the kernel
    // uses channel 0 (TSC calibration uses channel 2), and the 8259s its output feeds are
    // masked (apic::init_boot_cpu), so the single terminal-count edge is not delivered.
    unsafe {
        Port::<u8>::new(PIT_MODE).write(CH0_MODE0);
        Port::<u8>::new(PIT_CH0).write(1);
        Port::<u8>::new(PIT_CH0).write(0);
    }
    if !apic::timer_oneshot(ticks) {
        return false;
    }
    let were_enabled = interrupts::are_enabled();
    // The one-shot's count reads 0 once it fired; any other interrupt only ends one halt.
    while apic::timer_current() != 0 {
        // sti; hlt: the one-shot firing after the check still wakes the hlt.
        interrupts::enable_and_hlt();
        interrupts::disable();
    }
    super::tsc::mark_epoch();
    if were_enabled {
        interrupts::enable();
    }
    true
}
