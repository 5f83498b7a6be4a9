//! In-kernel SMP tests: CPUs check in on the right node, per-CPU data is private, cross-CPU
//! calls round-trip, shootdowns really flush, stacks have guard pages, and all CPUs hammering
//! one lock lose no increment.

use alloc::format;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::{on_each_cpu, online_cpus, run_on_cpus};
use crate::arch::{self, apic, paging};
use crate::ktest::{Ctx, TestError, TestResult};
use crate::percpu::{self, per_cpu};
use crate::sync::{IrqSpinLock, LockStatsSnapshot};
use crate::topology::{self, CpuId};
use crate::{kassert, kassert_eq, ktest};
use numalab_algo::page::{PhysAddr, VirtAddr};

mod lock_stat;
mod percpu_box;

use crate::ktest::suites::SMP as SUITE;

/// Per-CPU result slots, indexed by CpuId.
fn slots(init: u64) -> Vec<AtomicU64> {
    (0..super::MAX_CPUS).map(|_| AtomicU64::new(init)).collect()
}

/// Every CPU of the topology is online and reports its own id, APIC id and node.
fn cpus_check_in(_ctx: &Ctx) -> TestResult {
    let topo = topology::get();
    let expected = &topo.cpus;
    kassert_eq!(percpu::nr_cpus_online(), online_cpus().len());
    // A CPU held back on purpose (smp.hold_apic) is expected to be missing.
    let held: Option<u32> = crate::options::load()
        .get(&crate::options::SMP_HOLD_APIC)
        .and_then(|id| u32::try_from(id).ok());
    let missing: Vec<u16> = expected
        .iter()
        .filter(|c| c.cpu.index() < super::MAX_CPUS && percpu::of(c.cpu).is_none())
        .filter(|c| Some(c.apic_id) != held)
        .map(|c| c.cpu.0)
        .collect();
    kassert!(missing.is_empty(), "CPUs not online: {:?}", missing);
    let seen_cpu = slots(u64::MAX);
    let seen_apic = slots(u64::MAX);
    let seen_node = slots(u64::MAX);
    let seen_mem = slots(u64::MAX);
    on_each_cpu(&|cpu: CpuId| {
        seen_cpu[cpu.index()].store(percpu::cpu_id().0 as u64, Ordering::Relaxed);
        seen_apic[cpu.index()].store(apic::id() as u64, Ordering::Relaxed);
        seen_node[cpu.index()].store(percpu::node_id().0 as u64, Ordering::Relaxed);
        let mine = percpu::this().mem_node();
        let gs = percpu::mem_node_id();
        seen_mem[cpu.index()].store(
            if mine == gs {
                gs.0 as u64
            } else {
                u64::MAX - 1
            },
            Ordering::Relaxed,
        );
    });
    for c in expected
        .iter()
        .filter(|c| c.cpu.index() < super::MAX_CPUS && percpu::of(c.cpu).is_some())
    {
        let i = c.cpu.index();
        kassert_eq!(
            seen_cpu[i].load(Ordering::Relaxed),
            c.cpu.0 as u64,
            "cpu_id() on CPU {}",
            i
        );
        kassert_eq!(
            seen_apic[i].load(Ordering::Relaxed),
            c.apic_id as u64,
            "APIC id of CPU {}",
            i
        );
        kassert_eq!(
            seen_node[i].load(Ordering::Relaxed),
            c.node.0 as u64,
            "node of CPU {}",
            i
        );
        kassert_eq!(
            seen_mem[i].load(Ordering::Relaxed),
            topo.mem_node(c.node).0 as u64,
            "memory node of CPU {}",
            i
        );
    }
    Ok(())
}

per_cpu! {
    /// Scratch word of the per-CPU privacy test, one per CPU on its own cache line.
    static TEST_WORD: Word = Word(AtomicU64::new(TEST_WORD_INIT));
}

/// TEST_WORD's initial value: every CPU's copy starts with it (bring-up runs the initializer).
const TEST_WORD_INIT: u64 = 0x7e57_0000_0000_0001;

#[repr(align(64))]
struct Word(AtomicU64);

impl core::ops::Deref for Word {
    type Target = AtomicU64;
    fn deref(&self) -> &AtomicU64 {
        &self.0
    }
}

/// Each CPU's GS-based area is its own: distinct addresses, and concurrent writes to the
/// same per-CPU variable (`per_cpu!`) never show another CPU's value; every copy starts with
/// the declared initial value.
fn percpu_private(_ctx: &Ctx) -> TestResult {
    let addrs = slots(0);
    let bad = AtomicU32::new(0);
    let uninit = AtomicU32::new(0);
    on_each_cpu(&|cpu: CpuId| {
        if TEST_WORD
            .get_with(&crate::percpu::pin())
            .load(Ordering::Relaxed)
            != TEST_WORD_INIT
        {
            uninit.fetch_add(1, Ordering::Relaxed);
        }
        let me = percpu::this();
        addrs[cpu.index()].store(me as *const _ as u64, Ordering::Relaxed);
        for round in 0..2_000u64 {
            let value = ((cpu.0 as u64) << 32) | round;
            TEST_WORD
                .get_with(&crate::percpu::pin())
                .store(value, Ordering::Relaxed);
            core::hint::spin_loop();
            if TEST_WORD
                .get_with(&crate::percpu::pin())
                .load(Ordering::Relaxed)
                != value
                || percpu::cpu_id() != cpu
            {
                bad.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    kassert_eq!(
        uninit.load(Ordering::Relaxed),
        0,
        "CPUs whose per_cpu! copy did not start with its initializer's value"
    );
    kassert_eq!(
        bad.load(Ordering::Relaxed),
        0,
        "a CPU saw another CPU's per-CPU value"
    );
    let mut seen: Vec<u64> = online_cpus()
        .iter()
        .map(|c| addrs[c.index()].load(Ordering::Relaxed))
        .collect();
    let n = seen.len();
    seen.sort_unstable();
    seen.dedup();
    kassert_eq!(seen.len(), n, "two CPUs share a per-CPU area");
    // per_cpu!: each online CPU's copy holds the last value that CPU wrote, seen from here.
    let online: Vec<(CpuId, u64)> = TEST_WORD
        .online()
        .map(|(c, w)| (c, w.load(Ordering::Relaxed)))
        .collect();
    kassert_eq!(online.len(), n, "per_cpu! online() lists every online CPU");
    for (c, w) in online {
        kassert_eq!(
            w,
            ((c.0 as u64) << 32) | 1_999,
            "CPU {}'s per_cpu! copy",
            c.0
        );
    }
    Ok(())
}

/// Calls reach exactly their target, from the boot CPU to each CPU and from each CPU to its
/// neighbour (nested), and run exactly once per listed CPU.
fn call_roundtrip(_ctx: &Ctx) -> TestResult {
    let online = online_cpus();
    let hits = slots(0);
    for &cpu in online {
        let r = super::call_on_cpu(cpu, &|here: CpuId| {
            if percpu::cpu_id() == here {
                hits[here.index()].fetch_add(1, Ordering::Relaxed);
            }
        });
        kassert!(r.is_ok(), "call_on_cpu({}) failed: {:?}", cpu.0, r);
    }
    // Each CPU calls the next one (ring) from inside a call.
    let ring = slots(0);
    on_each_cpu(&|here: CpuId| {
        let pos = online.iter().position(|&c| c == here).unwrap_or(0);
        let next = online[(pos + 1) % online.len()];
        let _ = super::call_on_cpu(next, &|there: CpuId| {
            ring[there.index()].fetch_add(1, Ordering::Relaxed);
        });
    });
    // A list with duplicates runs each CPU once.
    let dup = slots(0);
    let twice: Vec<CpuId> = online.iter().chain(online.iter()).copied().collect();
    run_on_cpus(&twice, &|here: CpuId| {
        dup[here.index()].fetch_add(1, Ordering::Relaxed);
    });
    for &cpu in online {
        kassert_eq!(
            hits[cpu.index()].load(Ordering::Relaxed),
            1,
            "direct call on CPU {}",
            cpu.0
        );
        kassert_eq!(
            ring[cpu.index()].load(Ordering::Relaxed),
            1,
            "ring call on CPU {}",
            cpu.0
        );
        kassert_eq!(
            dup[cpu.index()].load(Ordering::Relaxed),
            1,
            "duplicate-list call on CPU {}",
            cpu.0
        );
    }
    let bogus = CpuId(super::MAX_CPUS as u16 + 7);
    kassert!(
        super::call_on_cpu(bogus, &|_| {}).is_err(),
        "a call to a CPU that does not exist succeeded"
    );
    Ok(())
}

/// Reads the first word of the shootdown test's scratch page.
fn read_scratch(virt: VirtAddr) -> u64 {
    // SAFETY: `shootdown_flushes` keeps `virt` mapped (to frame a, then frame b) while any CPU
    // runs this; the page is 8-byte aligned.
    unsafe { virt.as_mut_ptr::<u64>().read_volatile() }
}

/// Remaps a page to another frame, shoots it down, and every CPU must see the new frame.
fn shootdown_flushes(_ctx: &Ctx) -> TestResult {
    let virt = super::start::alloc_scratch_virt(1)
        .ok_or_else(|| TestError::Fail("no scratch page".into()))?;
    let node = percpu::mem_node_id();
    let (Some(frame_a), Some(frame_b)) = (
        super::start::node_pages_phys(1, node),
        super::start::node_pages_phys(1, node),
    ) else {
        return Err(TestError::Fail("out of memory".into()));
    };
    let (frame_a, frame_b) = (PhysAddr::new(frame_a), PhysAddr::new(frame_b));
    // SAFETY: both frames were just allocated for this test; writing them via the direct map.
    unsafe {
        crate::arch::direct_map::phys_to_ptr::<u64>(frame_a).write_volatile(0xaaaa);
        crate::arch::direct_map::phys_to_ptr::<u64>(frame_b).write_volatile(0xbbbb);
    }
    let flags = x86_64::structures::paging::PageTableFlags::WRITABLE
        | x86_64::structures::paging::PageTableFlags::NO_EXECUTE;
    // SAFETY: `virt` is a fresh scratch page; frame_a is this test's (leaked) memory.
    unsafe { paging::map_4k(virt, frame_a, flags) }
        .map_err(|e| TestError::Fail(format!("map: {:?}", e)))?;
    let before = slots(0);
    on_each_cpu(&|cpu: CpuId| before[cpu.index()].store(read_scratch(virt), Ordering::Relaxed));
    // SAFETY: every user of `virt` is this test, which expects the switch.
    unsafe { paging::remap_4k(virt, frame_b) }
        .map_err(|e| TestError::Fail(format!("remap: {:?}", e)))?;
    let received_before: Vec<u64> = online_cpus()
        .iter()
        .map(|&c| {
            percpu::of(c).map_or(0, |a| {
                super::PerCpuSmp::of(a.cpu())
                    .stats
                    .shootdowns_received
                    .load(Ordering::Relaxed)
            })
        })
        .collect();
    super::tlb_shootdown(virt, virt + 4096);
    let after = slots(0);
    on_each_cpu(&|cpu: CpuId| after[cpu.index()].store(read_scratch(virt), Ordering::Relaxed));
    let me = percpu::cpu_id();
    for (i, &cpu) in online_cpus().iter().enumerate() {
        kassert_eq!(
            before[cpu.index()].load(Ordering::Relaxed),
            0xaaaa,
            "CPU {} before the remap",
            cpu.0
        );
        kassert_eq!(
            after[cpu.index()].load(Ordering::Relaxed),
            0xbbbb,
            "CPU {} still sees the old frame after the shootdown",
            cpu.0
        );
        if cpu != me {
            let now = percpu::of(cpu).map_or(0, |a| {
                super::PerCpuSmp::of(a.cpu())
                    .stats
                    .shootdowns_received
                    .load(Ordering::Relaxed)
            });
            kassert!(
                now > received_before[i],
                "CPU {} did not count the shootdown",
                cpu.0
            );
        }
    }
    // SAFETY: nobody uses `virt` any more.
    let _ = unsafe { paging::unmap_4k(virt) };
    super::tlb_shootdown(virt, virt + 4096);
    Ok(())
}

/// Every AP's kernel stack is mapped and has an unmapped guard page below it.
fn stack_guard_pages(_ctx: &Ctx) -> TestResult {
    let guard_gap = slots(u64::MAX);
    on_each_cpu(&|cpu: CpuId| {
        if cpu == CpuId(0) {
            return;
        }
        let rsp: u64;
        // SAFETY: reads the stack pointer only.
        unsafe {
            core::arch::asm!("mov {}, rsp", out(reg) rsp, options(nomem, nostack, preserves_flags))
        };
        let mut page = VirtAddr::new(rsp & !4095);
        let mut mapped = 0;
        while paging::translate(page).is_some() && mapped < 64 {
            mapped += 1;
            page = page - 4096;
        }
        guard_gap[cpu.index()].store(mapped, Ordering::Relaxed);
    });
    let max_pages = super::start::KERNEL_STACK_BYTES / 4096;
    for &cpu in online_cpus().iter().filter(|&&c| c != CpuId(0)) {
        let mapped = guard_gap[cpu.index()].load(Ordering::Relaxed);
        kassert!(mapped >= 1 && mapped <= max_pages, "CPU {}: {} mapped pages below its stack pointer before an unmapped one (stack is {} pages)", cpu.0, mapped, max_pages);
    }
    Ok(())
}

/// Each AP's per-CPU area, its `per_cpu!` copies and its kernel stack sit on its memory node
/// (the nearest node with memory for a CPU of a memoryless node).
fn percpu_on_node(_ctx: &Ctx) -> TestResult {
    if !crate::mm::frame::is_ready() {
        return Err(TestError::Skip(
            "no frame allocator: per-CPU memory comes from the heap".into(),
        ));
    }
    let area_node = slots(u64::MAX);
    let var_node = slots(u64::MAX);
    let stack_node = slots(u64::MAX);
    on_each_cpu(&|cpu: CpuId| {
        let rsp: u64;
        // SAFETY: reads the stack pointer only.
        unsafe {
            core::arch::asm!("mov {}, rsp", out(reg) rsp, options(nomem, nostack, preserves_flags))
        };
        let node_of = |virt: u64| {
            paging::translate(VirtAddr::new(virt))
                .and_then(crate::mm::frame::node_of_phys)
                .map_or(u64::MAX - 1, |n| n.0 as u64)
        };
        area_node[cpu.index()].store(
            node_of(percpu::this() as *const _ as u64),
            Ordering::Relaxed,
        );
        var_node[cpu.index()].store(
            node_of(TEST_WORD.get_with(&crate::percpu::pin()) as *const Word as u64),
            Ordering::Relaxed,
        );
        stack_node[cpu.index()].store(node_of(rsp), Ordering::Relaxed);
    });
    let topo = topology::get();
    for &cpu in online_cpus().iter().filter(|&&c| c != CpuId(0)) {
        let want = topo.mem_node(topo.node_of_cpu(cpu)).0 as u64;
        kassert_eq!(
            area_node[cpu.index()].load(Ordering::Relaxed),
            want,
            "per-CPU area of CPU {}",
            cpu.0
        );
        kassert_eq!(
            var_node[cpu.index()].load(Ordering::Relaxed),
            want,
            "per_cpu! copies of CPU {}",
            cpu.0
        );
        kassert_eq!(
            stack_node[cpu.index()].load(Ordering::Relaxed),
            want,
            "kernel stack of CPU {}",
            cpu.0
        );
    }
    Ok(())
}

/// Spins (a load of the tick counter and a `pause`) a CPU makes at least, waiting with
/// interrupts on for its first LAPIC timer tick, before the test gives up: a bound in the
/// guest's own work. Under TCG the timer runs on the host's clock, so a loaded host, which
/// gives a vCPU fewer host cycles per millisecond, makes the tick come after fewer spins,
/// never more. Measured: the slowest CPU's first tick came after 16264 to 96372 spins on
/// 4node beside 4 busy loops (docs/smp.md); the bound is 200 times that.
const TICK_WAIT_SPINS: u64 = 20_000_000;
/// And at least this long by the TSC (100 periods of the 100 Hz timer), so a fast host
/// whose spins are quick still waits for many periods.
const TICK_WAIT_MS: u64 = 1_000;

/// Every CPU's LAPIC timer ticks when started at 100 Hz, and stops: each CPU starts its own
/// timer and waits for its first tick with interrupts on, bounded by its own work
/// (TICK_WAIT_SPINS) and the TSC (TICK_WAIT_MS) together, then stops it and sees no tick in
/// the next 20 ms. The wait used to be 50 ms of TSC time
/// on the boot CPU alone, which a loaded host failed: the vCPU, or QEMU's timer thread, was
/// not scheduled within those 50 ms.
fn lapic_timer_ticks(_ctx: &Ctx) -> TestResult {
    if apic::timer_hz() == 0 {
        return Err(TestError::Skip("LAPIC timer not calibrated".into()));
    }
    let limit_tsc = arch::tsc_hz() * TICK_WAIT_MS / 1000;
    let ticks = slots(0);
    let spins = slots(0);
    let irqs_off = slots(0);
    let late = slots(0);
    on_each_cpu(&|cpu: CpuId| {
        let pin = percpu::pin();
        let counter = &super::PerCpuSmp::this(&pin).stats.timer_ticks;
        let before = counter.load(Ordering::Relaxed);
        irqs_off[cpu.index()].store(
            u64::from(!x86_64::instructions::interrupts::are_enabled()),
            Ordering::Relaxed,
        );
        let t0 = arch::rdtsc();
        apic::timer_periodic(100);
        let mut n = 0u64;
        while counter.load(Ordering::Relaxed) == before {
            n += 1;
            if n >= TICK_WAIT_SPINS && arch::rdtsc().wrapping_sub(t0) >= limit_tsc {
                break;
            }
            core::hint::spin_loop();
        }
        apic::timer_periodic(0);
        // A tick raised just before the stop is taken at the next instruction boundary
        // (interrupts are on): a few spins of guest work let it land before the count.
        for _ in 0..1000 {
            core::hint::spin_loop();
        }
        let stopped = counter.load(Ordering::Relaxed);
        ticks[cpu.index()].store(stopped.wrapping_sub(before), Ordering::Relaxed);
        spins[cpu.index()].store(n, Ordering::Relaxed);
        // Stopped means no tick in 2 periods; a loaded host only makes fewer happen.
        arch::delay_us(20_000);
        late[cpu.index()].store(
            counter.load(Ordering::Relaxed).wrapping_sub(stopped),
            Ordering::Relaxed,
        );
    });
    let mut most = 0;
    for &cpu in online_cpus() {
        let i = cpu.index();
        kassert!(
            irqs_off[i].load(Ordering::Relaxed) == 0,
            "CPU {}: the call ran with interrupts off",
            cpu.0
        );
        kassert!(
            ticks[i].load(Ordering::Relaxed) > 0,
            "CPU {}: no LAPIC timer tick at 100 Hz in {} spins with interrupts on and at least {} ms of TSC time",
            cpu.0,
            spins[i].load(Ordering::Relaxed),
            TICK_WAIT_MS
        );
        kassert!(
            late[i].load(Ordering::Relaxed) == 0,
            "CPU {}: {} LAPIC timer ticks after it was stopped",
            cpu.0,
            late[i].load(Ordering::Relaxed)
        );
        most = most.max(spins[i].load(Ordering::Relaxed));
    }
    crate::println!(
        "# smp.lapic_timer_ticks: every CPU ticked; the slowest after {} spins (bound {})",
        most,
        TICK_WAIT_SPINS
    );
    Ok(())
}

/// All CPUs increment one counter under one lock; the total and the lock's count are exact.
fn hammer(per_cpu: u64) -> TestResult {
    let lock = IrqSpinLock::new(0u64);
    let unlocked = AtomicU64::new(0);
    on_each_cpu(&|_| {
        for _ in 0..per_cpu {
            let mut g = lock.lock();
            // A read-modify-write split in two, so a broken lock loses increments.
            let v = *g;
            core::hint::spin_loop();
            *g = v + 1;
        }
        unlocked.fetch_add(per_cpu, Ordering::Relaxed);
    });
    let n = online_cpus().len() as u64;
    let total = *lock.lock();
    kassert_eq!(total, per_cpu * n, "lost increments under the lock");
    kassert_eq!(unlocked.load(Ordering::Relaxed), per_cpu * n);
    kassert!(!lock.is_locked(), "lock still held after the hammer");
    {
        let held = lock.try_lock();
        kassert!(held.is_some(), "try_lock failed on a free lock");
        kassert!(
            lock.try_lock().is_none(),
            "try_lock succeeded on a held lock"
        );
    }
    let s = lock.stats.snapshot().since(&LockStatsSnapshot::default());
    kassert_eq!(s.acquisitions, per_cpu * n + 2, "lock acquisitions counted");
    lock.stats.reset();
    kassert_eq!(lock.stats.snapshot(), LockStatsSnapshot::default());
    kassert!(s.contended <= s.acquisitions);
    crate::println!(
        "# smp: lock hammer: {} CPUs x {} increments: acquisitions {} contended {} spins {}",
        n,
        per_cpu,
        s.acquisitions,
        s.contended,
        s.spins
    );
    Ok(())
}

/// The quick version: about 12800 increments in all (200 per CPU on up to 64 CPUs, fewer per
/// CPU above that, so 255 vCPUs on a 2-core host stay quick).
fn lock_hammer(_ctx: &Ctx) -> TestResult {
    let n = online_cpus().len() as u64;
    hammer((12_800 / n).clamp(20, 200))
}

fn lock_hammer_stress(_ctx: &Ctx) -> TestResult {
    hammer(20_000)
}

/// Counters dump (and a sanity check: the boot CPU sent IPIs if there are other CPUs).
fn counters(_ctx: &Ctx) -> TestResult {
    super::dump_stats();
    if online_cpus().len() > 1 {
        let s = super::PerCpuSmp::of(percpu::boot_cpu().cpu())
            .stats
            .snapshot();
        kassert!(
            s.ipis_sent > 0 && s.calls_sent > 0,
            "boot CPU counted no IPIs: {:?}",
            s
        );
    }
    Ok(())
}

ktest!(SUITE, Test, cpus_check_in);
ktest!(SUITE, Test, percpu_private);
ktest!(SUITE, Test, call_roundtrip);
ktest!(SUITE, Test, shootdown_flushes);
ktest!(SUITE, Test, percpu_on_node);
ktest!(SUITE, Test, stack_guard_pages);
ktest!(SUITE, Test, lapic_timer_ticks);
ktest!(SUITE, Test, lock_hammer);
ktest!(SUITE, Stress, lock_hammer_stress);
ktest!(SUITE, Test, counters);
