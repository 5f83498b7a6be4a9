//! Synchronization: IRQ-safe spinlocks that count acquisitions, contention and spinning.
//!
//! Lock order across the kernel (outermost first); never print while holding an allocator lock:
//!   vmalloc free-space lock > vmap node lock > SLUB list_lock > page allocator node lock
//!   > serial console lock

mod spinlock;

// The guard and counter types are part of the lock's API (CONTRACTS.md) even where unused.
#[allow(unused_imports)]
pub use spinlock::{
    lock_stat, set_cpu_id, set_lock_stat, set_spin_poll, IrqSpinLock, IrqSpinLockGuard, LockStats,
    LockStatsSnapshot,
};
