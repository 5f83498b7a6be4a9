//! Memory management.
//!
//! Layout of the kernel's virtual address space (the bootloader chooses the exact bases):
//!
//! ```text
//!   kernel image        where bootloader 0.11 loads the ELF
//!   direct map          all physical memory at one offset (Mapping::Dynamic), like
//!                       Linux's page_offset_base (arch/x86_64/direct_map.rs owns it)
//!   bootstrap heap      a slice of the direct map (kernel/src/early.rs, below mm: ACPI and topology read
//!                       through it before any allocator exists), early boot only
//!   vmalloc range       one free higher-half PML4 slot (512 GiB), see vmalloc/mod.rs
//! ```
//!
//! Physical memory: the frame allocator (frame/) owns every usable page above 1 MiB except
//! the bootstrap heap, one buddy per NUMA node, each node's memmap (struct page array) at the
//! top of that node's own memory; heap.rs is the `#[global_allocator]` glue.

#[cfg_attr(
    not(feature = "ktest"),
    expect(
        dead_code,
        unused_imports,
        reason = "the allocator API: in a production image (no ktest feature) its callers, the tests, stress runs and benchmarks, are not built; the ktest build lints it in full"
    )
)]
pub mod frame;

/// Ends the run because memory ran out where the kernel cannot go on (early init, a structure
/// a subsystem cannot work without): one `numalab: out of memory: WHAT` line, then QEMU's exit
/// with status 37, which the runner reports as the guest's out-of-memory (docs/running.md:
/// the memory floor), not as a test failure or a panic.
pub fn out_of_memory(what: core::fmt::Arguments) -> ! {
    x86_64::instructions::interrupts::disable();
    crate::println!(
        "{} {what}; the machine has too little memory (docs/running.md, memory floor)",
        numalab_algo::wire::console::OUT_OF_MEMORY
    );
    crate::arch::qemu_exit::exit(crate::arch::qemu_exit::ExitCode::OutOfMemory)
}
#[cfg_attr(
    not(feature = "ktest"),
    expect(
        dead_code,
        reason = "the allocator API: in a production image (no ktest feature) its callers, the tests, stress runs and benchmarks, are not built; the ktest build lints it in full"
    )
)]
pub mod heap;
#[cfg_attr(
    not(feature = "ktest"),
    expect(
        dead_code,
        unused_imports,
        reason = "the allocator API: in a production image (no ktest feature) its callers, the tests, stress runs and benchmarks, are not built; the ktest build lints it in full"
    )
)]
pub mod slub;
#[cfg_attr(
    not(feature = "ktest"),
    expect(
        dead_code,
        unused_imports,
        reason = "the allocator API: in a production image (no ktest feature) its callers, the tests, stress runs and benchmarks, are not built; the ktest build lints it in full"
    )
)]
pub mod vmalloc;
