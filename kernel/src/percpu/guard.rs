//! The guard of current-CPU access: a reference to the running CPU's copy of per-CPU data
//! (`PerCpuVar::get_with`, `PerCpuBox::get_with`) lives no longer than a `CpuPin`, under
//! which the CPU cannot change (Asterinas' `PinCurrentCpu`, an unsafe trait of ostd's
//! cpu module that its `DisabledLocalIrqGuard` and `DisabledPreemptGuard` implement).
//!
//! What the guard must hold in numalab: the CPU a piece of code runs on never changes,
//! because there is no scheduler, no preemption and no migration (each CPU runs one flow of
//! control plus the interrupts it takes). So the pin costs nothing: `pin()` is a zero-sized
//! token, the place where a preempt count (Linux's preempt_disable) would go if numalab ever
//! preempted, and every access site is already written against it. What can still happen
//! is reentrancy: an interrupt on the same CPU runs between any two instructions and may
//! touch the same copy. That is why per-CPU data must be `Sync` (atomics, the IRQ-masking
//! locks, SLUB's slot changed by cmpxchg16b with a transaction id): `Sync` already allows an
//! interrupt or another CPU to share the copy, so the fast paths pay no `cli`/`sti`. Data
//! that is not `Sync` (a `Cell`) would need interrupts masked for the reference's life, as
//! Asterinas' `CpuLocal::get_with` takes a `DisabledLocalIrqGuard` for it
//! (ostd/src/cpu/local/cpu_local.rs); numalab has no such per-CPU data, so it has no such
//! accessor.

use core::marker::PhantomData;

/// The running CPU pinned: a guard under which it does not change (free in numalab: nothing
/// migrates; see the module text). Not `Send`: a guard stays on the CPU that took it, and so
/// do the references borrowed from it.
pub struct CpuPin {
    _not_send: PhantomData<*const ()>,
}

/// Pins the running CPU for as long as the returned guard lives.
#[inline(always)]
pub fn pin() -> CpuPin {
    CpuPin {
        _not_send: PhantomData,
    }
}
