//! Nothing freed early: every online CPU (so every node) walks a table of
//! RCU-protected entries inside read-side sections while it replaces entries and hands the
//! old ones to `call_rcu`. The callback poisons the entry and puts it in a shared pool that
//! every writer takes from first, so an entry freed too early is soon poisoned and then reused
//! under a reader that still holds it. Readers load every entry, then check the loaded
//! entries' magic and key six times before the section ends; the LAPIC tick fires inside the sections (interrupts on) on up to 16 CPUs spread over the online ones. At the end,
//! after `rcu_barrier`, every entry is either in the table or in the pool (none lost).

use crate::arch::apic;
use crate::ktest::suites::RCU as SUITE;
use crate::ktest::{Ctx, TestError, TestResult};
use crate::rcu::{call_rcu, quiescent_point, rcu_barrier, read_lock, RcuHead};
use crate::smp::{on_each_cpu, online_cpus};
use crate::sync::IrqSpinLock;
use crate::topology::CpuId;
use crate::{kassert, kassert_eq, ktest};
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicPtr, AtomicU64, Ordering::*};

pub(crate) const LIVE: u64 = 0x4c49_5645_4c49_5645;
/// SLUB's free poison byte, 0x6b (POISON_FREE), in every byte.
const POISON: u64 = 0x6b6b_6b6b_6b6b_6b6b;
/// Entries in the table.
const SLOTS: usize = 8;
/// Checks of every held entry per section.
const CHECKS: usize = 6;
/// Read-side sections per CPU; every other one is followed by a replacement.
const ROUNDS: u64 = 400;
/// Above this many CPUs, each runs proportionally fewer rounds (at least `MIN_ROUNDS`), so the
/// replacements stay about 64 CPUs' worth: 255 vCPUs on a 2-core host took 102.9 s for the
/// `rcu` and `kfree_rcu` suites at the full count.
const FULL_ROUNDS_CPUS: u64 = 64;
const MIN_ROUNDS: u64 = 40;

/// Rounds per CPU on `cpus` CPUs (even: every other one replaces).
pub(crate) fn rounds(cpus: usize) -> u64 {
    let r = (ROUNDS * FULL_ROUNDS_CPUS / (cpus as u64).max(1)).clamp(MIN_ROUNDS, ROUNDS);
    r & !1
}
/// CPUs whose LAPIC timer ticks inside the sections (at most; spread evenly over the online
/// CPUs, so every node has some when nodes hold consecutive CPU ids). Every tick is a QEMU
/// timer callback and an EOI under QEMU's big lock: 255 vCPUs all ticking at 20 kHz on a
/// 2-core host did not finish the test in 6 minutes; with 16 of them ticking it took 3 s
/// (`./qemu-run.sh --topology uma --smp 255 --mem 2G --suite test --set filter=rcu`).
const TICKING_CPUS: usize = 16;
/// The tick's rate on a ticking CPU.
const TICK_HZ: u64 = 20_000;

/// A table entry: the rcu_head first (byte 0), then what readers check.
#[repr(C)]
pub(crate) struct Entry {
    pub head: RcuHead,
    pub magic: AtomicU64,
    pub key: AtomicU64,
}

/// Freed entries (addresses), reused first by every writer.
static POOL: IrqSpinLock<Vec<usize>> = IrqSpinLock::new(Vec::new());
static ALLOCATED: AtomicU64 = AtomicU64::new(0);
static FREED: AtomicU64 = AtomicU64::new(0);

/// The free: poison, then into the pool.
///
/// # Safety
/// `head` is the first field of an `Entry` that no table slot points to any more.
unsafe fn free_entry(head: NonNull<RcuHead>) {
    // SAFETY: Entry is repr(C) with the head first; the entry was leaked from a Box and
    // stays allocated (in the pool) until the test frees it.
    let e = unsafe { &*(head.as_ptr() as *const Entry) };
    e.magic.store(POISON, Relaxed);
    e.key.store(POISON, Relaxed);
    FREED.fetch_add(1, Relaxed);
    POOL.lock().push(head.as_ptr() as usize);
}

/// An entry for slot `key`: from the pool if it has one, else a new one.
fn get_entry(key: u64) -> *mut Entry {
    let p = match POOL.lock().pop() {
        Some(p) => p as *mut Entry,
        None => {
            ALLOCATED.fetch_add(1, Relaxed);
            Box::into_raw(Box::new(Entry {
                head: RcuHead::new(),
                magic: AtomicU64::new(0),
                key: AtomicU64::new(0),
            }))
        }
    };
    // SAFETY: the entry is ours: new, or out of the pool (freed after a grace period).
    let e = unsafe { &*p };
    e.key.store(key, Relaxed);
    e.magic.store(LIVE, Relaxed);
    p
}

/// What the readers and writers of `run` saw and did.
pub(crate) struct Run {
    /// The table at the end (every CPU finished): the entries still in it.
    pub table: Vec<*mut Entry>,
    pub cpus: usize,
    pub visits: u64,
    pub replaced: u64,
    ticked: u64,
    ticking: u64,
    bad: u64,
    first_bad: u64,
}

impl Run {
    /// The line every variant prints: CPUs, ticks, visits and replacements.
    pub(crate) fn summary(&self) -> alloc::string::String {
        alloc::format!(
            "{} CPUs ({} ticking at {} Hz inside the sections): {} entry visits, {} replacements",
            self.cpus,
            self.ticked,
            TICK_HZ,
            self.visits,
            self.replaced
        )
    }

    /// No reader saw a freed or reused entry; every CPU meant to tick had a timer.
    pub(crate) fn check(&self) -> TestResult {
        kassert_eq!(
            self.bad,
            0,
            "use after free: readers saw {} freed or reused entries (first magic {:#x})",
            self.bad,
            self.first_bad
        );
        kassert!(
            self.ticked == self.ticking || apic::timer_hz() == 0,
            "{} of {} CPUs meant to tick had a timer",
            self.ticked,
            self.ticking
        );
        Ok(())
    }
}

/// Every online CPU runs `rounds(cpus)` read-side sections over a table of `SLOTS` entries made by
/// `make(key)` (an entry with that key, magic LIVE), and after every other section replaces
/// one entry and hands the old one to `retire` (which frees it after a grace period). `make`
/// may fail (null): None if the first table cannot be made, and a replacement it fails is
/// skipped (not counted).
pub(crate) fn run(
    make: &(dyn Fn(u64) -> *mut Entry + Sync),
    retire: &(dyn Fn(*mut Entry) + Sync),
) -> Option<Run> {
    let table: Vec<AtomicPtr<Entry>> = (0..SLOTS as u64).map(|k| AtomicPtr::new(make(k))).collect();
    if table.iter().any(|e| e.load(Relaxed).is_null()) {
        return None;
    }
    let replaced = AtomicU64::new(0);
    let bad = AtomicU64::new(0);
    let first_bad = AtomicU64::new(0);
    let visits = AtomicU64::new(0);
    let cpus = online_cpus();
    let stride = cpus.len().div_ceil(TICKING_CPUS).max(1);
    let ticking = cpus.len().div_ceil(stride);
    let ticked = AtomicU64::new(0);
    on_each_cpu(&|cpu: CpuId| {
        let me = cpus.iter().position(|&c| c == cpu).unwrap_or(0) as u64;
        let timed = (me as usize).is_multiple_of(stride) && apic::timer_periodic(TICK_HZ);
        if timed {
            ticked.fetch_add(1, Relaxed);
        }
        let mut n = 0u64;
        for round in 0..rounds(cpus.len()) {
            {
                let _g = read_lock();
                // Load every entry, then check the loaded ones again and again for the rest
                // of the section: an entry freed early is poisoned (or reused) under us.
                let mut held = [core::ptr::null_mut::<Entry>(); SLOTS];
                for (h, slot) in held.iter_mut().zip(&table) {
                    *h = slot.load(Acquire);
                }
                for _ in 0..CHECKS {
                    for (k, &p) in held.iter().enumerate() {
                        // SAFETY: `p` was in the table inside this section: RCU keeps it
                        // allocated until the section ends (`retire` frees after a grace
                        // period; the pool variant never returns entries to the heap).
                        let e = unsafe { &*p };
                        let (m, key) = (e.magic.load(Relaxed), e.key.load(Relaxed));
                        if (m != LIVE || key != k as u64) && bad.fetch_add(1, Relaxed) == 0 {
                            first_bad.store(m, Relaxed);
                        }
                        n += 1;
                    }
                    for _ in 0..16 {
                        core::hint::spin_loop();
                    }
                }
            }
            if round % 2 == 1 {
                let k = ((me + round) % SLOTS as u64) as usize;
                let new = make(k as u64);
                if !new.is_null() {
                    retire(table[k].swap(new, AcqRel));
                    replaced.fetch_add(1, Relaxed);
                }
            }
            quiescent_point();
        }
        if timed {
            apic::timer_periodic(0);
        }
        visits.fetch_add(n, Relaxed);
    });
    Some(Run {
        table: table.iter().map(|s| s.load(Acquire)).collect(),
        cpus: cpus.len(),
        visits: visits.load(Relaxed),
        replaced: replaced.load(Relaxed),
        ticked: ticked.load(Relaxed),
        ticking: ticking as u64,
        bad: bad.load(Relaxed),
        first_bad: first_bad.load(Relaxed),
    })
}

fn nothing_freed_early(_ctx: &Ctx) -> TestResult {
    ALLOCATED.store(0, SeqCst);
    FREED.store(0, SeqCst);
    let r = run(&get_entry, &|old| {
        // SAFETY: `old` left the table just now; its head (the first field) goes to call_rcu.
        let head = unsafe { NonNull::new_unchecked(old as *mut RcuHead) };
        call_rcu(head, free_entry);
    })
    .ok_or_else(|| TestError::Fail("no table: Box allocation failed".into()))?;
    rcu_barrier();
    let pool: Vec<usize> = core::mem::take(&mut *POOL.lock());
    let allocated = ALLOCATED.load(SeqCst);
    println!(
        "    # {}, {} entries allocated, {} freed, {} in the pool",
        r.summary(),
        allocated,
        FREED.load(SeqCst),
        pool.len()
    );
    let in_table = r.table.len() as u64;
    for &p in &r.table {
        // SAFETY: every CPU finished; the table's entries came from Box::into_raw.
        drop(unsafe { Box::from_raw(p) });
    }
    for &p in &pool {
        // SAFETY: pooled entries came from Box::into_raw and are in no table slot.
        drop(unsafe { Box::from_raw(p as *mut Entry) });
    }
    r.check()?;
    kassert_eq!(FREED.load(SeqCst), r.replaced, "callbacks lost");
    kassert_eq!(
        r.replaced,
        (rounds(r.cpus) / 2) * r.cpus as u64,
        "a replacement was skipped"
    );
    kassert_eq!(allocated, in_table + pool.len() as u64, "entries lost");
    kassert!(
        allocated < in_table + r.replaced,
        "no freed entry was ever reused ({} allocated)",
        allocated
    );
    Ok(())
}

ktest!(SUITE, Test, nothing_freed_early);
