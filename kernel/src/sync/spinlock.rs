//! `IrqSpinLock<T>`: a spin lock (on the `spin` crate) that disables interrupts while held and
//! counts acquisitions, contended acquisitions, spin iterations and the wait itself (rdtsc
//! ticks from the first failed try to the acquisition, summed and longest; instructions under
//! -icount) with relaxed atomics (cheap enough to leave on for benchmarks: an uncontended
//! acquisition reads no clock).
//!
//! A waiter spins with interrupts off, reading the lock (no writes) and executing PAUSE
//! (`core::hint::spin_loop()`, which also lets QEMU run other vCPUs); it runs the poll hook
//! while it spins (`set_spin_poll`: smp installs its shootdown server there at bring-up), so
//! a holder that shoots down cannot deadlock with it. The hook keeps this module free of smp.

use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
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
}

impl LockStatsSnapshot {
    /// Counter differences `self - earlier` (`max_wait_ticks` stays `self`'s: a maximum
    /// cannot be subtracted; reset the lock to measure it over a window).
    pub fn since(&self, earlier: &LockStatsSnapshot) -> LockStatsSnapshot {
        LockStatsSnapshot {
            acquisitions: self.acquisitions.wrapping_sub(earlier.acquisitions),
            contended: self.contended.wrapping_sub(earlier.contended),
            spins: self.spins.wrapping_sub(earlier.spins),
            wait_ticks: self.wait_ticks.wrapping_sub(earlier.wait_ticks),
            max_wait_ticks: self.max_wait_ticks,
        }
    }

    /// Adds another lock's counters (sums; the longer of the two longest waits).
    pub fn add(&mut self, other: &LockStatsSnapshot) {
        self.acquisitions += other.acquisitions;
        self.contended += other.contended;
        self.spins += other.spins;
        self.wait_ticks += other.wait_ticks;
        self.max_wait_ticks = self.max_wait_ticks.max(other.max_wait_ticks);
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
        }
    }

    pub fn snapshot(&self) -> LockStatsSnapshot {
        LockStatsSnapshot {
            acquisitions: self.acquisitions.load(Relaxed),
            contended: self.contended.load(Relaxed),
            spins: self.spins.load(Relaxed),
            wait_ticks: self.wait_ticks.load(Relaxed),
            max_wait_ticks: self.max_wait_ticks.load(Relaxed),
        }
    }

    pub fn reset(&self) {
        self.acquisitions.store(0, Relaxed);
        self.contended.store(0, Relaxed);
        self.spins.store(0, Relaxed);
        self.wait_ticks.store(0, Relaxed);
        self.max_wait_ticks.store(0, Relaxed);
    }
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
        let guard = match self.inner.try_lock() {
            Some(g) => g,
            None => {
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
                g
            }
        };
        IrqSpinLockGuard {
            guard: Some(guard),
            irqs_were_enabled,
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
                Some(IrqSpinLockGuard {
                    guard: Some(guard),
                    irqs_were_enabled,
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
        drop(self.guard.take());
        if self.irqs_were_enabled {
            x86_64::instructions::interrupts::enable();
        }
    }
}
