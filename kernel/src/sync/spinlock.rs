//! `IrqSpinLock<T>`: a spin lock (on the `spin` crate) that disables interrupts while held and
//! counts acquisitions, contended acquisitions, spin iterations and the wait itself (rdtsc
//! ticks from the first failed try to the acquisition, summed, shortest and longest;
//! instructions under -icount) with relaxed atomics (cheap enough to leave on for benchmarks:
//! an uncontended acquisition reads no clock).
//!
//! With lock statistics on (`set_lock_stat(true)`, the kernel option `lock_stat=1`, Linux's
//! /proc/sys/kernel/lock_stat) every acquisition also reads the clock when it gets the lock
//! and again when it releases it: the hold time (summed, shortest, longest) and the bounces
//! (acquisitions, and contended ones, by another CPU than the previous acquirer, Linux's
//! acq-bounces and con-bounces). Off, an acquisition costs one load and branch more than
//! without this, and its release one compare (docs/benchmarks.md, "Lock statistics"). The hold
//! and bounce counters are written only by the holder, before it releases, so they need no
//! atomic read-modify-write.
//!
//! A waiter spins with interrupts off, reading the lock (no writes) and executing PAUSE
//! (`core::hint::spin_loop()`, which also lets QEMU run other vCPUs); it runs the poll hook
//! while it spins (`set_spin_poll`: smp installs its shootdown server there at bring-up), so
//! a holder that shoots down cannot deadlock with it. The hook keeps this module free of smp.

use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use spin::mutex::{SpinMutex, SpinMutexGuard};
use spin::Once;

/// Run by every waiter on each spin iteration, once installed.
static SPIN_POLL: Once<fn()> = Once::new();

/// The time-stamp counter, for wait times (sync sits below arch and reads it itself; under
/// `-icount shift=0` it counts executed instructions).
#[inline(always)]
fn timestamp() -> u64 {
    // SAFETY: rdtsc has no memory effects; CR4.TSD is clear, so it is allowed at CPL 0.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// Whether acquisitions time their holds and count bounces (`lock_stat=1`).
static LOCK_STAT: AtomicBool = AtomicBool::new(false);

/// The calling CPU's id, for bounces (installed by the kernel once per-CPU data exists; sync
/// sits below percpu).
static CPU_ID: Once<fn() -> u32> = Once::new();

/// No CPU has taken the lock yet / no wait or hold measured yet.
const NO_CPU: u32 = u32::MAX;
const NO_MIN: u64 = u64::MAX;

/// Turns hold timing and bounce counting on or off for every lock (the kernel sets it from
/// the `lock_stat` option at boot; a test may flip it and must restore it).
pub fn set_lock_stat(on: bool) {
    LOCK_STAT.store(on, Relaxed);
}

/// Whether hold timing is on.
pub fn lock_stat() -> bool {
    LOCK_STAT.load(Relaxed)
}

/// Installs how a lock learns which CPU takes it (once; later calls are ignored).
pub fn set_cpu_id(cpu_id: fn() -> u32) {
    CPU_ID.call_once(|| cpu_id);
}

/// Installs what a waiter runs while it spins with interrupts off (once; later calls are
/// ignored). smp installs its TLB-shootdown server before bringing up other CPUs.
pub fn set_spin_poll(poll: fn()) {
    SPIN_POLL.call_once(|| poll);
}

/// Counters of one lock.
#[derive(Default)]
pub struct LockStats {
    pub acquisitions: AtomicU64,
    /// Acquisitions that found the lock held and had to spin.
    pub contended: AtomicU64,
    /// PAUSE iterations spent waiting.
    pub spins: AtomicU64,
    /// rdtsc ticks from the first failed try to the acquisition, summed over acquisitions.
    pub wait_ticks: AtomicU64,
    /// The longest single wait, rdtsc ticks.
    pub max_wait_ticks: AtomicU64,
    /// The shortest single wait, rdtsc ticks (`u64::MAX`: none yet).
    pub min_wait_ticks: AtomicU64,
    /// Acquisitions whose hold was timed (lock_stat on at acquisition).
    pub holds: AtomicU64,
    /// rdtsc ticks from acquisition to release, summed over timed holds.
    pub hold_ticks: AtomicU64,
    /// The longest timed hold, rdtsc ticks.
    pub max_hold_ticks: AtomicU64,
    /// The shortest timed hold, rdtsc ticks (`u64::MAX`: none yet).
    pub min_hold_ticks: AtomicU64,
    /// Timed acquisitions by another CPU than the previous acquirer (Linux's acq-bounces).
    pub acq_bounces: AtomicU64,
    /// Those of them that had to wait (Linux's con-bounces).
    pub con_bounces: AtomicU64,
    /// The CPU of the last timed acquisition (`u32::MAX`: none yet).
    pub last_cpu: AtomicU32,
}

/// A copy of `LockStats` at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockStatsSnapshot {
    pub acquisitions: u64,
    pub contended: u64,
    pub spins: u64,
    /// rdtsc ticks waited, summed.
    pub wait_ticks: u64,
    /// The longest single wait, rdtsc ticks (since the lock's creation or last reset).
    pub max_wait_ticks: u64,
    /// The shortest single wait, rdtsc ticks (0 when `contended` is 0).
    pub min_wait_ticks: u64,
    /// Timed holds (0 while lock_stat is off).
    pub holds: u64,
    /// rdtsc ticks held, summed over timed holds.
    pub hold_ticks: u64,
    /// The longest timed hold, rdtsc ticks.
    pub max_hold_ticks: u64,
    /// The shortest timed hold, rdtsc ticks (0 when `holds` is 0).
    pub min_hold_ticks: u64,
    pub acq_bounces: u64,
    pub con_bounces: u64,
}

impl LockStatsSnapshot {
    /// Counter differences `self - earlier` (the shortest and longest waits and holds stay
    /// `self`'s: an extreme cannot be subtracted; reset the lock to measure one over a window).
    pub fn since(&self, earlier: &LockStatsSnapshot) -> LockStatsSnapshot {
        LockStatsSnapshot {
            acquisitions: self.acquisitions.wrapping_sub(earlier.acquisitions),
            contended: self.contended.wrapping_sub(earlier.contended),
            spins: self.spins.wrapping_sub(earlier.spins),
            wait_ticks: self.wait_ticks.wrapping_sub(earlier.wait_ticks),
            holds: self.holds.wrapping_sub(earlier.holds),
            hold_ticks: self.hold_ticks.wrapping_sub(earlier.hold_ticks),
            acq_bounces: self.acq_bounces.wrapping_sub(earlier.acq_bounces),
            con_bounces: self.con_bounces.wrapping_sub(earlier.con_bounces),
            ..*self
        }
    }

    /// Adds another lock's counters (sums; the shorter of the shortest and the longer of the
    /// longest waits and holds, of the locks that have one).
    pub fn add(&mut self, other: &LockStatsSnapshot) {
        self.min_wait_ticks = min_of(
            (self.contended, self.min_wait_ticks),
            (other.contended, other.min_wait_ticks),
        );
        self.min_hold_ticks = min_of(
            (self.holds, self.min_hold_ticks),
            (other.holds, other.min_hold_ticks),
        );
        self.acquisitions += other.acquisitions;
        self.contended += other.contended;
        self.spins += other.spins;
        self.wait_ticks += other.wait_ticks;
        self.max_wait_ticks = self.max_wait_ticks.max(other.max_wait_ticks);
        self.holds += other.holds;
        self.hold_ticks += other.hold_ticks;
        self.max_hold_ticks = self.max_hold_ticks.max(other.max_hold_ticks);
        self.acq_bounces += other.acq_bounces;
        self.con_bounces += other.con_bounces;
    }
}

/// The smaller of two minima, each `(count, min)`; a side with count 0 has none.
fn min_of(a: (u64, u64), b: (u64, u64)) -> u64 {
    match (a.0, b.0) {
        (0, _) => b.1,
        (_, 0) => a.1,
        _ => a.1.min(b.1),
    }
}

/// A minimum as stored (`u64::MAX`: none) as a snapshot shows it (0: none).
fn shown_min(raw: u64) -> u64 {
    if raw == NO_MIN {
        0
    } else {
        raw
    }
}

impl LockStats {
    pub const fn new() -> LockStats {
        LockStats {
            acquisitions: AtomicU64::new(0),
            contended: AtomicU64::new(0),
            spins: AtomicU64::new(0),
            wait_ticks: AtomicU64::new(0),
            max_wait_ticks: AtomicU64::new(0),
            min_wait_ticks: AtomicU64::new(NO_MIN),
            holds: AtomicU64::new(0),
            hold_ticks: AtomicU64::new(0),
            max_hold_ticks: AtomicU64::new(0),
            min_hold_ticks: AtomicU64::new(NO_MIN),
            acq_bounces: AtomicU64::new(0),
            con_bounces: AtomicU64::new(0),
            last_cpu: AtomicU32::new(NO_CPU),
        }
    }

    pub fn snapshot(&self) -> LockStatsSnapshot {
        LockStatsSnapshot {
            acquisitions: self.acquisitions.load(Relaxed),
            contended: self.contended.load(Relaxed),
            spins: self.spins.load(Relaxed),
            wait_ticks: self.wait_ticks.load(Relaxed),
            max_wait_ticks: self.max_wait_ticks.load(Relaxed),
            min_wait_ticks: shown_min(self.min_wait_ticks.load(Relaxed)),
            holds: self.holds.load(Relaxed),
            hold_ticks: self.hold_ticks.load(Relaxed),
            max_hold_ticks: self.max_hold_ticks.load(Relaxed),
            min_hold_ticks: shown_min(self.min_hold_ticks.load(Relaxed)),
            acq_bounces: self.acq_bounces.load(Relaxed),
            con_bounces: self.con_bounces.load(Relaxed),
        }
    }

    pub fn reset(&self) {
        self.acquisitions.store(0, Relaxed);
        self.contended.store(0, Relaxed);
        self.spins.store(0, Relaxed);
        self.wait_ticks.store(0, Relaxed);
        self.max_wait_ticks.store(0, Relaxed);
        self.min_wait_ticks.store(NO_MIN, Relaxed);
        self.holds.store(0, Relaxed);
        self.hold_ticks.store(0, Relaxed);
        self.max_hold_ticks.store(0, Relaxed);
        self.min_hold_ticks.store(NO_MIN, Relaxed);
        self.acq_bounces.store(0, Relaxed);
        self.con_bounces.store(0, Relaxed);
        self.last_cpu.store(NO_CPU, Relaxed);
    }

    /// With lock_stat on, at an acquisition (by the new holder): counts a bounce when another
    /// CPU took the lock last; returns the clock, the start of the hold.
    #[cold]
    #[inline(never)]
    fn acquired(&self, contended: bool) -> u64 {
        let cpu = CPU_ID.get().map_or(0, |f| f());
        let last = self.last_cpu.load(Relaxed);
        if last != cpu && last != NO_CPU {
            bump(&self.acq_bounces);
            if contended {
                bump(&self.con_bounces);
            }
        }
        self.last_cpu.store(cpu, Relaxed);
        timestamp()
    }

    /// At the release of a timed hold (by the holder, before it lets go).
    #[cold]
    #[inline(never)]
    fn released(&self, since: u64) {
        let held = timestamp().wrapping_sub(since);
        bump(&self.holds);
        self.hold_ticks
            .store(self.hold_ticks.load(Relaxed).wrapping_add(held), Relaxed);
        if held > self.max_hold_ticks.load(Relaxed) {
            self.max_hold_ticks.store(held, Relaxed);
        }
        if held < self.min_hold_ticks.load(Relaxed) {
            self.min_hold_ticks.store(held, Relaxed);
        }
    }
}

/// `counter += 1` by the lock's holder (the only writer: no read-modify-write needed).
#[inline(always)]
fn bump(counter: &AtomicU64) {
    counter.store(counter.load(Relaxed).wrapping_add(1), Relaxed);
}

/// An IRQ-safe spin lock with contention counters.
pub struct IrqSpinLock<T> {
    inner: SpinMutex<T>,
    pub stats: LockStats,
}

/// Holds the lock and the caller's interrupt state; restores both on drop.
pub struct IrqSpinLockGuard<'a, T> {
    guard: Option<SpinMutexGuard<'a, T>>,
    irqs_were_enabled: bool,
    stats: &'a LockStats,
    /// The clock at acquisition when the hold is timed, else 0 (the TSC, and under icount the
    /// instruction count, is far from 0 once the kernel takes its first lock).
    held_since: u64,
}

impl<T> IrqSpinLock<T> {
    pub const fn new(value: T) -> IrqSpinLock<T> {
        IrqSpinLock {
            inner: SpinMutex::new(value),
            stats: LockStats::new(),
        }
    }

    /// Takes the lock with interrupts disabled, spinning (PAUSE) while another CPU holds it.
    #[inline]
    pub fn lock(&self) -> IrqSpinLockGuard<'_, T> {
        let irqs_were_enabled = x86_64::instructions::interrupts::are_enabled();
        if irqs_were_enabled {
            x86_64::instructions::interrupts::disable();
        }
        self.stats.acquisitions.fetch_add(1, Relaxed);
        let mut contended = false;
        let guard = match self.inner.try_lock() {
            Some(g) => g,
            None => {
                contended = true;
                let t0 = timestamp();
                self.stats.contended.fetch_add(1, Relaxed);
                let mut spins = 0u64;
                let g = loop {
                    while self.inner.is_locked() {
                        // Serve TLB shootdowns while spinning with interrupts off, so a
                        // holder that shoots down while we wait cannot deadlock with us.
                        if let Some(poll) = SPIN_POLL.get() {
                            poll();
                        }
                        core::hint::spin_loop();
                        spins += 1;
                    }
                    if let Some(g) = self.inner.try_lock() {
                        break g;
                    }
                };
                let waited = timestamp().wrapping_sub(t0);
                self.stats.spins.fetch_add(spins, Relaxed);
                self.stats.wait_ticks.fetch_add(waited, Relaxed);
                self.stats.max_wait_ticks.fetch_max(waited, Relaxed);
                // Held now: only this CPU writes the minimum.
                if waited < self.stats.min_wait_ticks.load(Relaxed) {
                    self.stats.min_wait_ticks.store(waited, Relaxed);
                }
                g
            }
        };
        let held_since = if LOCK_STAT.load(Relaxed) {
            self.stats.acquired(contended)
        } else {
            0
        };
        IrqSpinLockGuard {
            guard: Some(guard),
            irqs_were_enabled,
            stats: &self.stats,
            held_since,
        }
    }

    /// Takes the lock if it is free (interrupts disabled while held), without spinning;
    /// counts an acquisition only on success.
    #[inline]
    pub fn try_lock(&self) -> Option<IrqSpinLockGuard<'_, T>> {
        let irqs_were_enabled = x86_64::instructions::interrupts::are_enabled();
        if irqs_were_enabled {
            x86_64::instructions::interrupts::disable();
        }
        match self.inner.try_lock() {
            Some(guard) => {
                self.stats.acquisitions.fetch_add(1, Relaxed);
                let held_since = if LOCK_STAT.load(Relaxed) {
                    self.stats.acquired(false)
                } else {
                    0
                };
                Some(IrqSpinLockGuard {
                    guard: Some(guard),
                    irqs_were_enabled,
                    stats: &self.stats,
                    held_since,
                })
            }
            None => {
                if irqs_were_enabled {
                    x86_64::instructions::interrupts::enable();
                }
                None
            }
        }
    }

    /// Whether some CPU holds the lock right now (a hint only).
    pub fn is_locked(&self) -> bool {
        self.inner.is_locked()
    }
}

impl<T> Deref for IrqSpinLockGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.guard.as_ref().expect("guard present until drop")
    }
}

impl<T> DerefMut for IrqSpinLockGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.guard.as_mut().expect("guard present until drop")
    }
}

impl<T> Drop for IrqSpinLockGuard<'_, T> {
    fn drop(&mut self) {
        if self.held_since != 0 {
            self.stats.released(self.held_since);
        }
        drop(self.guard.take());
        if self.irqs_were_enabled {
            x86_64::instructions::interrupts::enable();
        }
    }
}
