//! x86_64: descriptor tables, exceptions, local APIC, TSC, timer phase, page tables, QEMU's
//! exit and fw_cfg devices. The floor of the kernel: nothing here imports mm, smp, percpu or
//! topology; what it needs from them (page-table pages, interrupt handlers) is handed to it at
//! their init.

pub mod apic;
#[cfg(feature = "ktest")]
pub mod chase;
pub mod clock_phase;
pub mod direct_map;
pub mod fixup;
pub mod fw_cfg;
pub mod gdt;
pub mod idt;
pub mod paging;
pub mod qemu_exit;
pub mod tlb;
pub mod trace_mark;
pub mod tsc;
pub use tsc::rdtsc;
pub mod vectors;

/// Loads the boot CPU's GDT/TSS and the shared IDT.
pub fn init_boot_cpu() {
    gdt::init_boot_cpu();
    idt::init();
}

/// TSC ticks per second (calibrated against the PIT by SMP bring-up; 0 before).
pub fn tsc_hz() -> u64 {
    tsc::hz()
}

/// Busy-waits at least `us` microseconds on the TSC.
#[cfg(feature = "ktest")]
pub fn delay_us(us: u64) {
    tsc::delay_us(us)
}
