//! x86_64: descriptor tables, exceptions, local APIC, TSC, page tables, AP start-up, QEMU's
//! exit and fw_cfg devices.

pub mod apic;
pub mod fixup;
pub mod fw_cfg;
pub mod gdt;
pub mod idt;
pub mod paging;
pub mod qemu_exit;
pub mod smp;
pub mod tsc;

/// Loads the boot CPU's GDT/TSS and the shared IDT, and points its GS base at its per-CPU area.
pub fn init_boot_cpu() {
    gdt::init_boot_cpu();
    idt::init();
    crate::percpu::init_boot_cpu();
}

/// TSC ticks per second (calibrated against the PIT by SMP bring-up; 0 before).
pub fn tsc_hz() -> u64 {
    tsc::hz()
}

/// Busy-waits at least `us` microseconds on the TSC.
pub fn delay_us(us: u64) {
    tsc::delay_us(us)
}

/// Reads the time-stamp counter. Under `-icount shift=0` it counts executed instructions.
#[inline(always)]
pub fn rdtsc() -> u64 {
    // SAFETY: rdtsc has no memory effects; CR4.TSD is clear, so it is allowed at CPL 0.
    unsafe { core::arch::x86_64::_rdtsc() }
}
