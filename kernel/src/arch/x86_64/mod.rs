//! x86_64: descriptor tables, exceptions, QEMU's exit and fw_cfg devices.

pub mod fixup;
pub mod fw_cfg;
pub mod gdt;
pub mod idt;
pub mod qemu_exit;

/// Loads the boot CPU's GDT/TSS and the shared IDT.
pub fn init_boot_cpu() {
    gdt::init_boot_cpu();
    idt::init();
}

/// Reads the time-stamp counter. Under `-icount shift=0` it counts executed instructions.
#[inline(always)]
pub fn rdtsc() -> u64 {
    // SAFETY: rdtsc has no memory effects; CR4.TSD is clear, so it is allowed at CPL 0.
    unsafe { core::arch::x86_64::_rdtsc() }
}
