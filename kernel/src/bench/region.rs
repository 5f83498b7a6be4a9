//! Timed regions as the trace plugin sees them (docs/trace.md "Regions"), and the det boots'
//! fine-grained interleaving (`bench.det_quantum`).
//!
//! `run_on_cpus(bench, case, cpus, f)` is `smp::run_on_cpus` for an experiment's measured
//! work: it takes a fresh slot of `MARKS`, prints `# trace region 0xKEY: BENCH CASE cpus K`
//! (KEY: the slot's virtual address), and every CPU marks itself into the region
//! (`arch::trace_mark::mark`) before `f` and back out (to `arch::trace_mark::KERNEL`) after it. The plugin keys its
//! counts by that address; the runner joins them to the label. The markers run in every boot,
//! plugin or not, and outside the experiments' timed windows (which `f` opens and closes), so
//! they move no figure of record.
//!
//! The quantum: in a det boot (`bench.clock=icount`, several CPUs online) QEMU 7.2 runs the
//! vCPUs round-robin on one thread, and a vCPU's turn lasts until the next deadline on the
//! virtual clock (one instruction = 1 ns at `-icount shift=0`), or 10^8 instructions when the
//! 100 ms kick timer is the next one. While a region runs, the calling CPU's LAPIC timer is
//! periodic with a period of `bench.det_quantum` instructions: every vCPU's turn ends at the
//! next multiple, so locks and cache lines change hands as often as they would on CPUs that
//! run side by side. The handler (smp's tick: a counter and an EOI, about 30 instructions) runs
//! on the calling CPU once a period; its instructions are inside that CPU's timed work when it
//! takes part (about 3% at the default 1000), and never in the one-CPU icount boot, where
//! no quantum is set.
//!
//! Named lines: `name(addr, bytes, label)` prints `# trace name 0xADDR BYTES: LABEL` for an
//! object the c2c table should name (a cache's node list_lock, a vmap node's lock).

use crate::topology::CpuId;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use numalab_algo::wire::trace::Write as TraceLine;

/// Region slots; slot 0 is never used (a region past the last slot is not marked).
const SLOTS: usize = 4096;

#[repr(C, align(4096))]
struct Marks([u8; SLOTS]);

/// The marker bytes: only their addresses mean anything.
static MARKS: Marks = Marks([0; SLOTS]);
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(1);
static WARNED_FULL: AtomicBool = AtomicBool::new(false);

/// Instructions per vCPU turn in this boot's regions: `bench.det_quantum` in a det boot, else 0.
pub fn det_quantum() -> u64 {
    if super::clock() == numalab_algo::bench::Clock::Icount && super::cpus_online() > 1 {
        crate::options::load().get(&crate::options::BENCH_DET_QUANTUM)
    } else {
        0
    }
}

/// A fresh slot, or 0 (no region) once all are used (warned once).
fn take_slot() -> usize {
    let slot = NEXT_SLOT.fetch_add(1, Ordering::Relaxed);
    if slot < SLOTS {
        return slot;
    }
    if !WARNED_FULL.swap(true, Ordering::Relaxed) {
        crate::warn!(
            "trace: more than {} timed regions; later ones are not marked",
            SLOTS - 1
        );
    }
    0
}

/// A region's key: its marker's address (0: not marked).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionKey(usize);

impl RegionKey {
    /// Says how many operations the region did (`# trace ops 0xKEY N`), for per-operation
    /// figures of the trace.
    pub fn ops(self, ops: u64) {
        if self.0 != 0 {
            crate::println!("{}", TraceLine::Ops { key: self.0, ops });
        }
    }
}

/// A fresh region of experiment `bench`, case `case` on `cpus` CPUs, labelled on the console:
/// its marker byte, and the marker byte of "no region", for code that marks itself.
pub fn open(bench: &str, case: &str, cpus: usize) -> (&'static u8, &'static u8) {
    static BASE: spin::Once<()> = spin::Once::new();
    BASE.call_once(|| {
        // The runner finds the kernel's load offset from this address and the ELF symbol's
        // (the c2c table's names of static data).
        crate::println!(
            "{}",
            TraceLine::Kernel(&crate::arch::trace_mark::KERNEL as *const u8 as usize)
        );
    });
    let slot = take_slot();
    let key = &MARKS.0[slot];
    if slot != 0 {
        crate::println!(
            "{}",
            TraceLine::Region {
                key: key as *const u8 as usize,
                bench,
                case,
                cpus
            }
        );
    }
    (key, &crate::arch::trace_mark::KERNEL)
}

/// Runs `f` on each of `cpus` as one timed region of experiment `bench`, case `case`.
pub fn run_on_cpus(
    bench: &str,
    case: &str,
    cpus: &[CpuId],
    f: &(dyn Fn(CpuId) + Sync),
) -> RegionKey {
    let (key, outside) = open(bench, case, cpus.len());
    let quantum = det_quantum();
    let ticks_per_sec = super::ticks_per_sec();
    let timed = quantum > 0 && crate::arch::apic::timer_periodic(ticks_per_sec / quantum);
    crate::smp::run_on_cpus(cpus, &|cpu| {
        crate::arch::trace_mark::mark(key);
        f(cpu);
        crate::arch::trace_mark::mark(outside);
    });
    if timed {
        crate::arch::apic::timer_periodic(0);
    }
    RegionKey(if core::ptr::eq(key, &MARKS.0[0]) {
        0
    } else {
        key as *const u8 as usize
    })
}

/// A region entered by one CPU at a time, as often as needed (latency_matrix's c2c rounds:
/// the reader's chases are in it, the writer's stores between them are not), the CPU marking
/// itself in and out (`enter`, `leave`) inside its own call. No det quantum: one CPU runs in
/// it, nothing needs interleaving.
pub struct Solo {
    key: &'static u8,
    outside: &'static u8,
}

impl Solo {
    /// A fresh one-CPU region of experiment `bench`, case `case`, labelled on the console.
    pub fn open(bench: &str, case: &str) -> Solo {
        let (key, outside) = open(bench, case, 1);
        Solo { key, outside }
    }

    /// Marks the calling CPU into the region (call it on the CPU that runs in it).
    pub fn enter(&self) {
        crate::arch::trace_mark::mark(self.key);
    }

    /// Marks the calling CPU back out of the region.
    pub fn leave(&self) {
        crate::arch::trace_mark::mark(self.outside);
    }

    /// The region's key, for `# trace ops`.
    pub fn key(&self) -> RegionKey {
        RegionKey(if core::ptr::eq(self.key, &MARKS.0[0]) {
            0
        } else {
            self.key as *const u8 as usize
        })
    }
}

/// `run_on_cpus` on every online CPU.
pub fn on_each_cpu(bench: &str, case: &str, f: &(dyn Fn(CpuId) + Sync)) -> RegionKey {
    run_on_cpus(bench, case, crate::smp::online_cpus(), f)
}

/// Names `obj` for the c2c table (`# trace name 0xADDR BYTES: LABEL`) and tells the plugin to
/// keep each of its lines in its tables whatever their rank (`trace_mark::watch_object`).
pub fn name<T: ?Sized>(obj: &T, label: core::fmt::Arguments) {
    let addr = obj as *const T as *const u8 as usize;
    let bytes = core::mem::size_of_val(obj);
    crate::println!(
        "{}",
        TraceLine::Name {
            addr,
            bytes,
            label: &label
        }
    );
    crate::arch::trace_mark::watch_object(obj);
}
