//! Starting the application processors: per-CPU stacks with guard pages, descriptor tables and
//! per-CPU areas on the CPU's node, the trampoline page, INIT-SIPI-SIPI to all APs at once,
//! and the 64-bit entry every AP runs before joining `crate::smp`'s idle loop.
//!
//! Virtual layout of the SMP region (one PML4 slot, 512 GiB, claimed from `paging`):
//!
//! ```text
//!   +0                      xAPIC register page (uncached)
//!   +1 GiB + i * 128 KiB    CPU i: guard | #DF IST 8K | guard | NMI IST 8K | guard | stack 64K
//!   +256 GiB                scratch pages for tests (`alloc_scratch_virt`)
//! ```
//!
//! Guard pages are never mapped, so a stack overflow faults instead of corrupting a neighbour.

mod memory;
pub mod trampoline;

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use spin::Once;
use x86_64::registers::control::{Cr0, Cr3, Cr4};
use x86_64::registers::model_specific::{Efer, EferFlags};

use crate::arch::gdt::CpuTables;
use crate::arch::{apic, tsc};
use crate::percpu::PerCpu;
use crate::topology::{CpuId, NodeId};
use numalab_algo::page::PhysAddr;

#[cfg(feature = "ktest")]
pub use memory::{alloc_scratch_virt, node_pages_phys};
pub use memory::{apic_mmio_virt, set_node_page_source};

/// Kernel stack of each AP.
pub const KERNEL_STACK_BYTES: u64 = 64 * 1024;
/// Largest APIC id the start-up table covers (x2APIC ids can be sparse and large).
const MAX_APIC_ID: u32 = 0xffff;
/// Each IST stack of each AP.
pub const IST_BYTES: u64 = 8 * 1024;

/// Where one AP stands during bring-up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum ApState {
    /// SIPIs sent, not yet in the kernel.
    Waiting = 0,
    /// Running its 64-bit entry.
    Arrived = 1,
    /// In the idle loop, taking cross-CPU calls.
    Online = 2,
    /// Did not answer in time: if it ever arrives it halts.
    Abandoned = 3,
}

/// One AP to start.
pub struct ApSlot {
    pub cpu: CpuId,
    pub apic_id: u32,
    pub node: NodeId,
    pub percpu: &'static PerCpu,
    tables: &'static CpuTables,
    state: AtomicU8,
    /// TSC when it became Online.
    pub online_tsc: AtomicU64,
}

impl ApSlot {
    pub fn state(&self) -> ApState {
        match self.state.load(Ordering::Acquire) {
            0 => ApState::Waiting,
            1 => ApState::Arrived,
            2 => ApState::Online,
            _ => ApState::Abandoned,
        }
    }
}

/// One AP's request: which CPU, where it runs, and the memory node for its data.
pub struct ApRequest {
    pub cpu: CpuId,
    pub apic_id: u32,
    pub node: NodeId,
    pub mem_node: NodeId,
}

/// What `start_aps` did.
pub struct StartReport {
    pub slots: &'static [ApSlot],
    /// TSC of the first STARTUP IPI and when the last AP came online.
    pub first_sipi_tsc: u64,
    pub last_online_tsc: u64,
    /// Trampoline page (physical).
    pub trampoline_phys: u64,
}

struct Bringup {
    /// Slot index by APIC id (usize::MAX: none).
    by_apic: Vec<usize>,
    slots: &'static [ApSlot],
    cr4: u64,
    entry_hook: fn(&'static PerCpu) -> !,
}

static BRINGUP: Once<Bringup> = Once::new();

/// The boot CPU's state the APs copy.
fn boot_efer_bits() -> u32 {
    let mut bits = EferFlags::LONG_MODE_ENABLE.bits() as u32;
    if Efer::read().contains(EferFlags::NO_EXECUTE_ENABLE) {
        bits |= EferFlags::NO_EXECUTE_ENABLE.bits() as u32;
    }
    bits
}

/// Prepares every AP in `requests`, starts them all in parallel (INIT to all, 10 ms, SIPI to
/// all, 200 us, SIPI to those not yet arrived) and waits up to `timeout_us` for all of them.
/// Each AP that arrives runs `entry_hook` with its per-CPU area after marking itself online.
/// `hold_apic` (debug) names an AP that is prepared but sent no IPI, so it never answers.
pub fn start_aps(
    requests: &[ApRequest],
    timeout_us: u64,
    hold_apic: Option<u32>,
    entry_hook: fn(&'static PerCpu) -> !,
) -> Result<StartReport, &'static str> {
    let tramp_phys =
        memory::trampoline_page().ok_or("no usable page below 1 MiB for the AP trampoline")?;
    let (pml4, _) = Cr3::read();
    let cr3 = pml4.start_address().as_u64();
    if cr3 >= 1 << 32 {
        return Err("the kernel's PML4 is above 4 GiB (the 32-bit trampoline cannot load it)");
    }
    // Per-CPU memory, each on its CPU's memory node.
    let mut slots = Vec::with_capacity(requests.len());
    let mut stack_tops = Vec::with_capacity(requests.len());
    for (i, req) in requests.iter().enumerate() {
        let stacks =
            memory::map_cpu_stacks(i, req.mem_node).ok_or("out of memory for AP stacks")?;
        let (percpu, tables) = memory::alloc_cpu_area(req, stacks.ist_tops)
            .ok_or("out of memory for per-CPU areas")?;
        stack_tops.push(stacks.kernel_top);
        slots.push(ApSlot {
            cpu: req.cpu,
            apic_id: req.apic_id,
            node: req.node,
            percpu,
            tables,
            state: AtomicU8::new(ApState::Waiting as u8),
            online_tsc: AtomicU64::new(0),
        });
    }
    let slots: &'static [ApSlot] = Vec::leak(slots);
    let max_apic = requests.iter().map(|r| r.apic_id).max().unwrap_or(0);
    if max_apic > MAX_APIC_ID {
        return Err("an APIC id above 65535 (the trampoline's lookup table would be too large)");
    }
    let mut by_apic = alloc::vec![usize::MAX; max_apic as usize + 1];
    let stack_table: &'static mut [u64] = Vec::leak(alloc::vec![0u64; max_apic as usize + 1]);
    for (i, slot) in slots.iter().enumerate() {
        by_apic[slot.apic_id as usize] = i;
        stack_table[slot.apic_id as usize] = stack_tops[i];
    }
    BRINGUP.call_once(|| Bringup {
        by_apic,
        slots,
        cr4: Cr4::read_raw(),
        entry_hook,
    });
    // The trampoline page, identity mapped so paging can turn on while running it.
    let params = trampoline::Params {
        cr3: cr3 as u32,
        efer_bits: boot_efer_bits(),
        cr0: Cr0::read_raw() as u32,
        max_apic_id: max_apic,
        stack_table: stack_table.as_ptr() as u64,
        entry: ap_entry as *const () as u64,
    };
    // SAFETY: `tramp_phys` is a reserved low page (memory::trampoline_page) seen through the
    // direct map; the trampoline is smaller than a page (checked in trampoline_page).
    unsafe {
        trampoline::install(
            crate::arch::direct_map::phys_to_ptr(PhysAddr::new(tramp_phys)),
            tramp_phys as u32,
            &params,
        )
    };
    memory::identity_map(PhysAddr::new(tramp_phys))
        .map_err(|_| "cannot identity-map the AP trampoline page")?;
    core::sync::atomic::fence(Ordering::SeqCst);

    // INIT to every AP, then one 10 ms wait for all of them (Intel SDM 8.4.4.1).
    let to_start = || slots.iter().filter(|s| Some(s.apic_id) != hold_apic);
    for slot in to_start() {
        apic::send_init(slot.apic_id);
    }
    tsc::delay_us(10_000);
    let vector = (tramp_phys >> 12) as u8;
    let first_sipi_tsc = crate::arch::rdtsc();
    for slot in to_start() {
        apic::send_startup(slot.apic_id, vector);
    }
    tsc::delay_us(200);
    for slot in to_start() {
        if slot.state() == ApState::Waiting {
            apic::send_startup(slot.apic_id, vector);
        }
    }
    // Bounded wait for all of them.
    let deadline = crate::arch::rdtsc() + tsc::us_to_ticks(timeout_us);
    loop {
        let pending = slots
            .iter()
            .filter(|s| matches!(s.state(), ApState::Waiting | ApState::Arrived))
            .count();
        if pending == 0 || crate::arch::rdtsc() > deadline {
            break;
        }
        core::hint::spin_loop();
    }
    for slot in slots {
        // Those still waiting (or half way) are given up; a late one halts in ap_entry.
        let _ = slot.state.compare_exchange(
            ApState::Waiting as u8,
            ApState::Abandoned as u8,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        let _ = slot.state.compare_exchange(
            ApState::Arrived as u8,
            ApState::Abandoned as u8,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }
    let last_online_tsc = slots
        .iter()
        .filter(|s| s.state() == ApState::Online)
        .map(|s| s.online_tsc.load(Ordering::Acquire))
        .max()
        .unwrap_or(first_sipi_tsc);
    if slots.iter().all(|s| s.state() == ApState::Online) {
        // Nobody runs the trampoline any more; a SIPI cannot arrive without an INIT first.
        memory::identity_unmap(PhysAddr::new(tramp_phys));
    }
    Ok(StartReport {
        slots,
        first_sipi_tsc,
        last_online_tsc,
        trampoline_phys: tramp_phys,
    })
}

/// Where every AP lands from the trampoline, on its own kernel stack.
extern "C" fn ap_entry(apic_id: u32) -> ! {
    crate::arch::trace_mark::mark_kernel();
    let Some(bringup) = BRINGUP.get() else {
        halt_forever()
    };
    let Some(&index) = bringup.by_apic.get(apic_id as usize) else {
        halt_forever()
    };
    let Some(slot) = bringup.slots.get(index) else {
        halt_forever()
    };
    if slot
        .state
        .compare_exchange(
            ApState::Waiting as u8,
            ApState::Arrived as u8,
            Ordering::AcqRel,
            Ordering::Acquire,
        )
        .is_err()
    {
        // Abandoned (too late) or a duplicate start: stay out of the kernel's way.
        halt_forever();
    }
    // SAFETY: the boot CPU's CR4 is valid on this identical CPU model (QEMU gives every vCPU
    // the same features); PCIDE needs CR3[11:0] = 0, which holds (no PCID in use).
    unsafe { Cr4::write_raw(bringup.cr4) };
    slot.tables.load();
    crate::arch::idt::init();
    // SAFETY: this is the CPU the slot describes (found by its own APIC id); the area is its.
    unsafe { crate::percpu::install(slot.percpu) };
    apic::init_this_cpu();
    slot.online_tsc
        .store(crate::arch::rdtsc(), Ordering::Release);
    if slot
        .state
        .compare_exchange(
            ApState::Arrived as u8,
            ApState::Online as u8,
            Ordering::AcqRel,
            Ordering::Acquire,
        )
        .is_err()
    {
        halt_forever();
    }
    (bringup.entry_hook)(slot.percpu)
}

fn halt_forever() -> ! {
    loop {
        x86_64::instructions::interrupts::disable();
        x86_64::instructions::hlt();
    }
}
