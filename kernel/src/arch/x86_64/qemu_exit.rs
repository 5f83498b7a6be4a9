//! QEMU's isa-debug-exit device (port 0xf4): the one place that knows numalab's exit codes.
//!
//! Writing `v` makes QEMU exit with status `(v << 1) | 1`: 0x10 -> 33 (success), 0x11 -> 35
//! (failure), 0x12 -> 37 (out of memory). QEMU's own errors exit with 1, so no kernel outcome
//! can be mistaken for them.

use x86_64::instructions::port::Port;

const ISA_DEBUG_EXIT_PORT: u16 = 0xf4;

/// What the kernel reports to the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum ExitCode {
    /// Every test passed: QEMU exits with 33.
    Success = 0x10,
    /// A test failed, or the kernel panicked or took an exception: QEMU exits with 35.
    Failure = 0x11,
    /// The kernel ran out of memory where it cannot go on (early init, a vmap node): QEMU
    /// exits with 37, after a `numalab: out of memory: ...` line (mm::out_of_memory).
    OutOfMemory = 0x12,
}

/// Exits QEMU; halts forever if the device is missing (the host's timeout then reports it).
pub fn exit(code: ExitCode) -> ! {
    let mut port = Port::<u32>::new(ISA_DEBUG_EXIT_PORT);
    // SAFETY: port 0xf4 is the isa-debug-exit device that boot/ always configures; writing it
    // ends the VM and touches no memory.
    unsafe { port.write(code as u32) };
    loop {
        x86_64::instructions::interrupts::disable();
        x86_64::instructions::hlt();
    }
}
