//! The local APIC of each CPU: x2APIC (MSRs) when CPUID offers it, xAPIC (MMIO) otherwise;
//! interrupt command register (IPIs, INIT, SIPI), EOI, and the LAPIC timer.
//!
//! The mode is chosen once on the boot CPU (`init_boot_cpu`) and every AP uses the same
//! (`init_this_cpu`). In xAPIC mode the register page (IA32_APIC_BASE, normally 0xfee00000) is
//! mapped uncached at a kernel virtual address; it is the same physical address on every CPU,
//! each CPU seeing its own APIC there. The legacy 8259 PICs are masked: interrupts come only
//! from the APICs.

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use numalab_algo::acpi::apic::ApicMode;
use numalab_algo::page::{PhysAddr, VirtAddr};
use x86_64::instructions::port::Port;
use x86_64::registers::model_specific::Msr;
use x86_64::structures::paging::PageTableFlags;

use super::vectors::SPURIOUS_VECTOR;

const IA32_APIC_BASE: u32 = 0x1b;
const APIC_BASE_ENABLE: u64 = 1 << 11;
const APIC_BASE_X2APIC: u64 = 1 << 10;
const X2APIC_MSR_BASE: u32 = 0x800;

// Register offsets (xAPIC MMIO byte offsets; the x2APIC MSR is 0x800 + offset / 16).
const REG_ID: u32 = 0x20;
const REG_TPR: u32 = 0x80;
const REG_EOI: u32 = 0xb0;
const REG_SVR: u32 = 0xf0;
const REG_ICR_LOW: u32 = 0x300;
const REG_ICR_HIGH: u32 = 0x310;
const REG_LVT_TIMER: u32 = 0x320;
const REG_TIMER_INITIAL: u32 = 0x380;
const REG_TIMER_CURRENT: u32 = 0x390;
const REG_TIMER_DIVIDE: u32 = 0x3e0;

const ICR_DELIVERY_PENDING: u32 = 1 << 12;
const ICR_LEVEL_ASSERT: u32 = 1 << 14;
const ICR_FIXED: u32 = 0b000 << 8;
const ICR_INIT: u32 = 0b101 << 8;
const ICR_STARTUP: u32 = 0b110 << 8;
const LVT_MASKED: u32 = 1 << 16;
#[cfg(feature = "ktest")]
const LVT_TIMER_PERIODIC: u32 = 1 << 17;
/// Divide configuration value for "divide by 16".
const TIMER_DIVIDE_BY_16: u32 = 0b0011;

static X2APIC: AtomicBool = AtomicBool::new(false);
/// Virtual address of the xAPIC register page (0 in x2APIC mode or before init).
static MMIO_VIRT: AtomicU64 = AtomicU64::new(0);
/// LAPIC timer ticks per second at divide-by-16 (calibrated on the boot CPU).
static TIMER_HZ: AtomicU64 = AtomicU64::new(0);

/// Whether the APICs run in x2APIC mode.
pub fn is_x2apic() -> bool {
    X2APIC.load(Ordering::Relaxed)
}

fn read(reg: u32) -> u32 {
    if is_x2apic() {
        // SAFETY: x2APIC mode is enabled on this CPU (init_this_cpu), so the 0x800 MSR range
        // is the APIC's register file; reading a register has no side effect.
        unsafe { Msr::new(X2APIC_MSR_BASE + (reg >> 4)).read() as u32 }
    } else {
        let base = MMIO_VIRT.load(Ordering::Relaxed);
        // SAFETY: `base` maps the APIC's 4 KiB register page uncached (init_boot_cpu) and
        // `reg` is one of the aligned 32-bit registers defined above.
        unsafe { core::ptr::read_volatile((base + reg as u64) as *const u32) }
    }
}

fn write(reg: u32, value: u32) {
    if is_x2apic() {
        // SAFETY: as in `read`; the callers write architecturally valid values.
        unsafe { Msr::new(X2APIC_MSR_BASE + (reg >> 4)).write(value as u64) }
    } else {
        let base = MMIO_VIRT.load(Ordering::Relaxed);
        // SAFETY: as in `read`.
        unsafe { core::ptr::write_volatile((base + reg as u64) as *mut u32, value) }
    }
}

/// Masks both legacy 8259 PICs (after remapping them away from the exception vectors, so a
/// stray IRQ cannot look like a CPU exception).
fn mask_legacy_pic() {
    let writes: [(u16, u8); 10] = [
        (0x20, 0x11),
        (0xa0, 0x11),
        (0x21, 0x20),
        (0xa1, 0x28),
        (0x21, 0x04),
        (0xa1, 0x02),
        (0x21, 0x01),
        (0xa1, 0x01),
        (0x21, 0xff),
        (0xa1, 0xff),
    ];
    for (port, value) in writes {
        // SAFETY: ports 0x20/0x21/0xa0/0xa1 are the two 8259s; this is the standard
        // initialization sequence followed by masking every line.
        unsafe { Port::<u8>::new(port).write(value) };
    }
}

/// The mode `init_boot_cpu` chooses: x2APIC when CPUID offers it (leaf 1 ECX bit 21), else
/// xAPIC. The topology is built with it (before the APIC is enabled), so CPUs whose APIC id
/// this mode cannot address are never brought up.
pub fn mode_from_cpuid() -> ApicMode {
    if core::arch::x86_64::__cpuid(1).ecx & (1 << 21) != 0 {
        ApicMode::X2Apic
    } else {
        ApicMode::XApic
    }
}

/// Chooses the mode, maps the xAPIC page if needed, masks the 8259s and enables the boot
/// CPU's APIC. Returns an error message when the APIC cannot be used.
pub fn init_boot_cpu(map_mmio_at: VirtAddr) -> Result<(), &'static str> {
    let cpuid1 = core::arch::x86_64::__cpuid(1);
    if cpuid1.edx & (1 << 9) == 0 {
        return Err("CPUID reports no local APIC");
    }
    let x2 = mode_from_cpuid() == ApicMode::X2Apic;
    X2APIC.store(x2, Ordering::Relaxed);
    if !x2 {
        // SAFETY: IA32_APIC_BASE exists on every CPU with an APIC (checked above).
        let base =
            PhysAddr::new(unsafe { Msr::new(IA32_APIC_BASE).read() } & 0x000f_ffff_ffff_f000);
        let flags = PageTableFlags::WRITABLE
            | PageTableFlags::NO_CACHE
            | PageTableFlags::WRITE_THROUGH
            | PageTableFlags::NO_EXECUTE;
        // SAFETY: `map_mmio_at` is a page in the SMP region reserved for this mapping, and
        // `base` is the APIC's MMIO page, which no allocator hands out.
        unsafe { super::paging::map_4k(map_mmio_at, base, flags) }
            .map_err(|_| "cannot map the xAPIC register page")?;
        MMIO_VIRT.store(map_mmio_at.as_u64(), Ordering::Relaxed);
    }
    mask_legacy_pic();
    init_this_cpu();
    Ok(())
}

/// Enables the calling CPU's APIC in the chosen mode, accepts all priorities, masks its timer.
pub fn init_this_cpu() {
    let msr = Msr::new(IA32_APIC_BASE);
    // SAFETY: IA32_APIC_BASE exists (checked on the boot CPU, every CPU is the same model);
    // setting EN (and EXTD in x2APIC mode) is the documented way to enable the APIC.
    unsafe {
        let mut m = msr;
        let mut value = m.read() | APIC_BASE_ENABLE;
        if is_x2apic() {
            value |= APIC_BASE_X2APIC;
        }
        m.write(value);
    }
    write(REG_TPR, 0);
    write(
        REG_LVT_TIMER,
        LVT_MASKED | super::vectors::TIMER_VECTOR as u32,
    );
    write(REG_SVR, 0x100 | SPURIOUS_VECTOR as u32);
}

/// The calling CPU's APIC id (x2APIC id in x2APIC mode).
pub fn id() -> u32 {
    if is_x2apic() {
        read(REG_ID)
    } else {
        read(REG_ID) >> 24
    }
}

/// Signals end of interrupt to the calling CPU's APIC.
#[inline]
pub fn eoi() {
    write(REG_EOI, 0);
}

/// Writes the ICR: `low` holds vector, delivery mode and level; the destination is `apic_id`.
fn send_icr(apic_id: u32, low: u32) {
    x86_64::instructions::interrupts::without_interrupts(|| {
        if is_x2apic() {
            // SAFETY: x2APIC mode: the ICR is one 64-bit MSR, destination in the high half.
            unsafe {
                Msr::new(X2APIC_MSR_BASE + (REG_ICR_LOW >> 4))
                    .write(((apic_id as u64) << 32) | low as u64)
            }
        } else {
            while read(REG_ICR_LOW) & ICR_DELIVERY_PENDING != 0 {
                core::hint::spin_loop();
            }
            write(REG_ICR_HIGH, apic_id << 24);
            write(REG_ICR_LOW, low);
        }
    });
}

/// Sends fixed interrupt `vector` to the CPU with `apic_id`.
pub fn send_ipi(apic_id: u32, vector: u8) {
    send_icr(apic_id, ICR_FIXED | ICR_LEVEL_ASSERT | vector as u32);
}

/// Sends an INIT IPI (assert) to `apic_id`.
pub fn send_init(apic_id: u32) {
    send_icr(apic_id, ICR_INIT | ICR_LEVEL_ASSERT);
}

/// Sends a STARTUP IPI: the AP starts in real mode at physical `page_number << 12`.
pub fn send_startup(apic_id: u32, page_number: u8) {
    send_icr(apic_id, ICR_STARTUP | ICR_LEVEL_ASSERT | page_number as u32);
}

/// The LAPIC timer's rate at divide-by-16: the APIC bus rate / 16 when the hypervisor's
/// timing leaf states the bus rate (tsc::apic_bus_hz_from_cpuid), else measured against the
/// calibrated TSC (boot CPU, once).
pub fn calibrate_timer() -> u64 {
    if let Some(bus_hz) = super::tsc::apic_bus_hz_from_cpuid() {
        let hz = bus_hz / 16;
        TIMER_HZ.store(hz, Ordering::Relaxed);
        return hz;
    }
    write(REG_TIMER_DIVIDE, TIMER_DIVIDE_BY_16);
    write(
        REG_LVT_TIMER,
        LVT_MASKED | super::vectors::TIMER_VECTOR as u32,
    );
    write(REG_TIMER_INITIAL, u32::MAX);
    let window_us = 10_000;
    super::tsc::delay_us(window_us);
    let elapsed = u32::MAX - read(REG_TIMER_CURRENT);
    write(REG_TIMER_INITIAL, 0);
    let hz = elapsed as u64 * 1_000_000 / window_us;
    TIMER_HZ.store(hz, Ordering::Relaxed);
    hz
}

/// LAPIC timer ticks per second at the divider used here (0 before `calibrate_timer`).
pub fn timer_hz() -> u64 {
    TIMER_HZ.load(Ordering::Relaxed)
}

/// Arms the calling CPU's timer to fire `TIMER_VECTOR` once, `ticks` timer ticks (at
/// `timer_hz`) from now. Returns false when `ticks` is 0 or does not fit the 32-bit count.
pub fn timer_oneshot(ticks: u64) -> bool {
    let Ok(count) = u32::try_from(ticks) else {
        return false;
    };
    if count == 0 {
        return false;
    }
    write(REG_TIMER_DIVIDE, TIMER_DIVIDE_BY_16);
    write(REG_LVT_TIMER, super::vectors::TIMER_VECTOR as u32);
    write(REG_TIMER_INITIAL, count);
    true
}

/// The calling CPU's timer count (0: stopped, or a one-shot that fired).
pub fn timer_current() -> u32 {
    read(REG_TIMER_CURRENT)
}

/// Starts the calling CPU's timer firing `TIMER_VECTOR` `per_second` times a second
/// (0 stops it). Returns false when the timer was not calibrated.
#[cfg(feature = "ktest")]
pub fn timer_periodic(per_second: u64) -> bool {
    let hz = timer_hz();
    if hz == 0 {
        return false;
    }
    if per_second == 0 {
        write(
            REG_LVT_TIMER,
            LVT_MASKED | super::vectors::TIMER_VECTOR as u32,
        );
        write(REG_TIMER_INITIAL, 0);
        return true;
    }
    let count = (hz / per_second).clamp(1, u32::MAX as u64) as u32;
    write(REG_TIMER_DIVIDE, TIMER_DIVIDE_BY_16);
    write(
        REG_LVT_TIMER,
        LVT_TIMER_PERIODIC | super::vectors::TIMER_VECTOR as u32,
    );
    write(REG_TIMER_INITIAL, count);
    true
}
