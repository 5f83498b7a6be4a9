//! SMP: bring every CPU of the topology online in parallel, then let CPUs ask each other for
//! work (cross-CPU calls, TLB shootdowns) and count what they did.
//!
//! `init` (boot CPU, after the frame allocator) calibrates the TSC, enables the boot CPU's
//! local APIC, starts all APs at once through `smp::start` and prints how long it took. APs
//! then sit in `ap_idle` (hlt with interrupts on) and run what `run_on_cpus` and
//! `tlb_shootdown` queue for them. The boot CPU runs with interrupts on from then on.
//!
//! Lock order: none of its own; `IrqSpinLock` spinners poll the TLB-flush queue.

use numalab_algo::page::{VirtAddr, PAGE_SIZE};

mod call;
mod queue;
pub mod start;
pub mod stats;
#[cfg(feature = "ktest")]
mod tests;
mod tlb;

#[cfg(feature = "ktest")]
#[allow(unused_imports)] // callers name it when they match on call_on_cpu's error
pub use call::CallError;
#[cfg(feature = "ktest")]
pub use call::{call_on_cpu, run_pending_calls};
pub use call::{on_each_cpu, run_on_cpus};
#[cfg(feature = "ktest")]
pub use stats::dump_stats;
pub use stats::CpuStats;
pub use tlb::tlb_shootdown;

use alloc::vec::Vec;
use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering};
use spin::Once;

use crate::arch::{self, apic, tsc};
use crate::percpu::{self, per_cpu, PerCpu};
use crate::topology::{self, CpuId};

pub use crate::percpu::MAX_CPUS;

/// The SMP part of each CPU's per-CPU area.
#[repr(align(64))]
pub struct PerCpuSmp {
    pub(crate) calls: AtomicPtr<call::CallNode>,
    pub(crate) flushes: tlb::FlushQueue,
    pub stats: CpuStats,
}

impl PerCpuSmp {
    pub const fn new() -> PerCpuSmp {
        PerCpuSmp {
            calls: AtomicPtr::new(ptr::null_mut()),
            flushes: AtomicPtr::new(ptr::null_mut()),
            stats: CpuStats::new(),
        }
    }
}

per_cpu! {
    /// smp's per-CPU state, each copy on its own cache line: smp declares it itself (its
    /// DEFINE_PER_CPU), so the per-CPU area (percpu) knows nothing of smp.
    static CPU_STATE: PerCpuSmp = PerCpuSmp::new();
}

impl PerCpuSmp {
    /// The state of `cpu` (every started CPU has an id below MAX_CPUS, see `init`).
    #[inline]
    pub fn of(cpu: CpuId) -> &'static PerCpuSmp {
        CPU_STATE.on(cpu)
    }

    /// The calling CPU's state, for as long as the pin lives.
    #[inline]
    pub fn this(pin: &percpu::CpuPin) -> &PerCpuSmp {
        CPU_STATE.get_with(pin)
    }
}

impl Default for PerCpuSmp {
    fn default() -> Self {
        Self::new()
    }
}

static ONLINE: Once<Vec<CpuId>> = Once::new();

/// The online CPUs, by increasing id (only the boot CPU before `init`).
pub fn online_cpus() -> &'static [CpuId] {
    match ONLINE.get() {
        Some(list) => list,
        None => &[CpuId(0)],
    }
}

/// Sends the cross-CPU call IPI to `target` and counts it.
fn send_call_ipi(target: &PerCpu) {
    PerCpuSmp::this(&percpu::pin())
        .stats
        .ipis_sent
        .fetch_add(1, Ordering::Relaxed);
    apic::send_ipi(target.apic_id(), arch::idt::CALL_VECTOR);
}

/// The call IPI's handler (interrupts off): runs queued TLB flushes; queued functions run in
/// process context (idle loop or the waiting caller), which the IPI has woken up.
pub fn handle_call_ipi() {
    PerCpuSmp::this(&percpu::pin())
        .stats
        .ipis_received
        .fetch_add(1, Ordering::Relaxed);
    tlb::run_pending_flushes();
    if let Some(h) = QS_HOOKS.get() {
        (h.ipi)();
    }
    apic::eoi();
}

/// Sends `cpu` the call IPI with nothing queued (RCU's expedited grace periods: the handler
/// reports a quiescent state for the code it interrupted). Not to the calling CPU.
pub fn kick_cpu(cpu: CpuId) {
    if cpu == percpu::cpu_id() {
        return;
    }
    if let Some(target) = percpu::of(cpu) {
        send_call_ipi(target);
    }
}

/// What the tick, the idle loop and the wait loops tell RCU: installed by `rcu::init` (smp
/// imports nothing of rcu, which allocates through mm, which imports smp).
pub struct QsHooks {
    /// The tick's quiescent state (interrupts off).
    pub tick: fn(),
    /// Back from hlt, before any work.
    pub exit_idle: fn(),
    /// A pass of the idle loop: quiescent point and callbacks.
    pub idle_pass: fn(),
    /// Just before hlt (interrupts off): false when the CPU must not halt.
    pub enter_idle: fn() -> bool,
    /// A wait loop's quiescent state (report only).
    pub report_qs: fn(),
    /// The call IPI's part (interrupts off): an expedited grace period's quiescent state.
    pub ipi: fn(),
}

static QS_HOOKS: Once<QsHooks> = Once::new();

/// Installs RCU's hooks (once).
pub fn set_qs_hooks(hooks: QsHooks) {
    QS_HOOKS.call_once(|| hooks);
}

/// A wait loop's quiescent state, when RCU is up.
#[inline]
fn report_qs() {
    if let Some(h) = QS_HOOKS.get() {
        (h.report_qs)();
    }
}

/// A function the LAPIC timer handler runs on each tick (0: none), for tests that need work
/// done in interrupt context (SLUB's interrupt-vs-fast-path hammer).
static TIMER_HOOK: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);

/// Installs (Some) or removes (None) the timer tick hook.
#[cfg(feature = "ktest")]
pub fn set_timer_hook(hook: Option<fn()>) {
    TIMER_HOOK.store(hook.map_or(0, |f| f as usize), Ordering::Release);
}

/// The LAPIC timer's handler: counts the tick, reports an RCU quiescent state when it
/// interrupted code outside every read-side section, and runs the hook, if any.
pub fn handle_timer() {
    PerCpuSmp::this(&percpu::pin())
        .stats
        .timer_ticks
        .fetch_add(1, Ordering::Relaxed);
    if let Some(h) = QS_HOOKS.get() {
        (h.tick)();
    }
    let hook = TIMER_HOOK.load(Ordering::Acquire);
    if hook != 0 {
        // SAFETY: TIMER_HOOK only ever holds 0 or a `fn()` stored by set_timer_hook.
        let f: fn() = unsafe { core::mem::transmute::<usize, fn()>(hook) };
        f();
    }
    apic::eoi();
}

/// Polled by spinning code that may run with interrupts off (IrqSpinLock's spin hook, installed
/// by `init`): serves shootdowns.
#[inline]
fn poll_irq_safe() {
    tlb::run_pending_flushes();
}

/// Where each AP goes once online: run queued work and its RCU callbacks, halt when there is
/// none (marked idle for RCU, an extended quiescent state, while halted).
fn ap_idle(me: &'static PerCpu) -> ! {
    x86_64::instructions::interrupts::enable();
    loop {
        // Out of hlt (or a pass that did not halt): no longer idle before any work runs.
        let rcu = QS_HOOKS.get();
        if let Some(h) = rcu {
            (h.exit_idle)();
        }
        tlb::run_pending_flushes();
        call::run_pending_calls();
        if let Some(h) = rcu {
            (h.idle_pass)();
        }
        x86_64::instructions::interrupts::disable();
        let queues = PerCpuSmp::of(me.cpu());
        if queues.calls.load(Ordering::Acquire).is_null()
            && queues.flushes.load(Ordering::Acquire).is_null()
            && rcu.is_none_or(|h| (h.enter_idle)())
        {
            // sti; hlt: an IPI arriving after the check still wakes the hlt.
            x86_64::instructions::interrupts::enable_and_hlt();
        } else {
            x86_64::instructions::interrupts::enable();
        }
    }
}

/// The physical range kept for the AP trampoline, [start, end): one page below 1 MiB chosen
/// from the boot memory map (deterministic, so the frame allocator can exclude it).
pub fn trampoline_reserved_range() -> Option<(u64, u64)> {
    let usable = topology::usable_ranges();
    numalab_algo::smp::pick_trampoline_page(&usable).map(|p| (p, p + PAGE_SIZE))
}

/// Calibrates the clock, starts every AP of the topology and waits for them (boot CPU, once).
pub fn init() {
    arch::idt::set_apic_handlers(handle_call_ipi, handle_timer);
    // Lock waiters serve shootdowns while they spin with interrupts off (before any AP runs).
    crate::sync::set_spin_poll(poll_irq_safe);
    let opts = crate::options::load();
    let verbose = opts.get(&crate::options::SMP_VERBOSE);
    let (cal, source) = tsc::init_rate();
    debug_assert_eq!(arch::tsc_hz(), cal.hz);
    if cal.hz == 0 {
        crate::warn!("tsc: calibration against the PIT failed; delays assume 3 GHz");
    }
    match source {
        tsc::Source::Pit => println!(
            "numalab: tsc: {}.{:03} MHz, calibrated against PIT channel 2 ({} x {} ms windows, spread {} ppm, PIT read within {} ns)",
            cal.hz / 1_000_000,
            cal.hz / 1_000 % 1_000,
            cal.rounds,
            cal.window_us / 1_000,
            cal.spread_ppm,
            cal.best_bracket_ticks * 1_000_000_000 / cal.hz.max(1)
        ),
        tsc::Source::HypervisorLeaf | tsc::Source::CrystalLeaf => println!(
            "numalab: tsc: {}.{:03} MHz, from CPUID leaf {}",
            cal.hz / 1_000_000,
            cal.hz / 1_000 % 1_000,
            if source == tsc::Source::HypervisorLeaf { "0x40000010" } else { "0x15" }
        ),
    }
    let apic_virt = start::apic_mmio_virt();
    if let Err(why) = apic_virt
        .ok_or("no virtual region for the APIC")
        .and_then(apic::init_boot_cpu)
    {
        crate::warn!("smp: {}; running on the boot CPU only", why);
        return;
    }
    let timer_hz = apic::calibrate_timer();
    println!(
        "numalab: apic: {} mode, boot CPU APIC id {}, LAPIC timer {} kHz (divide by 16)",
        if apic::is_x2apic() { "x2APIC" } else { "xAPIC" },
        apic::id(),
        timer_hz / 1_000
    );
    if !arch::clock_phase::align() {
        crate::warn!("smp: LAPIC timer not calibrated; timer phase left as the firmware set it");
    }
    let hold_apic = held_apic(opts);
    start_all(
        opts.get(&crate::options::SMP_TIMEOUT_MS),
        hold_apic,
        verbose,
    );
    x86_64::instructions::interrupts::enable();
}

/// The `smp.hold_apic` test hook: an AP prepared but sent no IPI, so the did-not-answer path
/// runs. Only ktest images have the option.
#[cfg(feature = "ktest")]
fn held_apic(opts: &numalab_algo::options::Options) -> Option<u32> {
    opts.get(&crate::options::SMP_HOLD_APIC)
        .and_then(|id| u32::try_from(id).ok())
}

/// A production image holds no AP back.
#[cfg(not(feature = "ktest"))]
fn held_apic(_opts: &numalab_algo::options::Options) -> Option<u32> {
    None
}

fn start_all(timeout_ms: u64, hold_apic: Option<u32>, verbose: bool) {
    let topo = topology::get();
    let cpus = &topo.cpus;
    let boot_apic = apic::id();
    let mut requests = Vec::new();
    for cpu in cpus.iter().skip(1) {
        if cpu.cpu.index() >= MAX_CPUS {
            crate::warn!(
                "smp: CPU {} (APIC id {}) is beyond the {} CPUs supported; left offline",
                cpu.cpu.0,
                cpu.apic_id,
                MAX_CPUS
            );
            continue;
        }
        if cpu.apic_id == boot_apic {
            crate::warn!(
                "smp: CPU {} has the boot CPU's APIC id {}; left offline",
                cpu.cpu.0,
                cpu.apic_id
            );
            continue;
        }
        requests.push(start::ApRequest {
            cpu: cpu.cpu,
            apic_id: cpu.apic_id,
            node: cpu.node,
            mem_node: topo.mem_node(cpu.node),
        });
    }
    let total = requests.len() + 1;
    let mut areas: Vec<Option<&'static PerCpu>> = alloc::vec![None; cpus.len().min(MAX_CPUS)];
    areas[0] = Some(percpu::boot_cpu());
    if requests.is_empty() {
        percpu::publish(areas);
        ONLINE.call_once(|| alloc::vec![CpuId(0)]);
        println!("numalab: smp: 1 of 1 CPUs online (no other CPU to start)");
        return;
    }
    let report = match start::start_aps(&requests, timeout_ms * 1000, hold_apic, ap_idle) {
        Ok(r) => r,
        Err(why) => {
            crate::warn!("smp: {}; running on the boot CPU only", why);
            percpu::publish(areas);
            ONLINE.call_once(|| alloc::vec![CpuId(0)]);
            return;
        }
    };
    let mut online = alloc::vec![CpuId(0)];
    for slot in report.slots {
        if slot.state() == start::ApState::Online {
            areas[slot.cpu.index()] = Some(slot.percpu);
            online.push(slot.cpu);
        } else {
            crate::warn!(
                "smp: CPU {} (APIC id {}, node {}) did not answer within {} ms; continuing without it",
                slot.cpu.0,
                slot.apic_id,
                slot.node.0,
                timeout_ms
            );
        }
    }
    online.sort_unstable();
    let nr_online = online.len();
    percpu::publish(areas);
    ONLINE.call_once(|| online);
    let hz = tsc::hz();
    let us = numalab_algo::smp::ticks_to_us(report.first_sipi_tsc, report.last_online_tsc, hz);
    println!(
        "numalab: smp: {} of {} CPUs online in {}.{:03} ms (first SIPI to last CPU online, TSC); trampoline at {:#x}",
        nr_online,
        total,
        us / 1000,
        us % 1000,
        report.trampoline_phys
    );
    if verbose {
        for slot in report
            .slots
            .iter()
            .filter(|s| s.state() == start::ApState::Online)
        {
            let at = numalab_algo::smp::ticks_to_us(
                report.first_sipi_tsc,
                slot.online_tsc.load(Ordering::Acquire),
                hz,
            );
            println!(
                "numalab: smp: CPU {} APIC id {} node {} online at +{} us",
                slot.cpu.0, slot.apic_id, slot.node.0, at
            );
        }
    }
    // The APs ran the identity-mapped trampoline page; drop their stale translations of it.
    // (identity mapped: the page's virtual address is its physical one)
    let tramp_virt = VirtAddr::new(report.trampoline_phys);
    tlb_shootdown(tramp_virt, tramp_virt + PAGE_SIZE);
}
