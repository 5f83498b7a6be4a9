//! Per-CPU variables (Linux's DEFINE_PER_CPU, Asterinas' `cpu_local!`): each subsystem
//! declares its own per-CPU data with `per_cpu!`, so `PerCpu` (the GS-based area) knows none.
//!
//! ```ignore
//! per_cpu! {
//!     /// Per CPU: how many exempt sections are open.
//!     static EXEMPT: AtomicU32 = AtomicU32::new(0);
//! }
//! EXEMPT.this().fetch_add(1, Relaxed);          // the calling CPU's copy
//! EXEMPT.on(cpu).load(Relaxed);                 // another CPU's copy (dumps, tests)
//! for (cpu, copy) in EXEMPT.online() { .. }     // every online CPU's copy
//! ```
//!
//! Where the copies live today: one `static` array of `MAX_CPUS` copies per variable, in the
//! kernel image (so on the node the image was loaded on, not on each CPU's node); `this()` is
//! one GS-relative load of the CPU id plus one indexed access. The element type should be
//! cache-line aligned (`#[repr(align(64))]`) when CPUs write their copies often, so that
//! neighbours share no line. Next step (issue 38 item 3, "each CPU's copy on its node"): the
//! declarations go into a linker section that serves as a template; SMP bring-up copies it
//! into an area allocated on each CPU's node (as smp/start/memory.rs already allocates
//! `PerCpu` there) and `this()` becomes a GS-relative offset, as Linux's `this_cpu_ptr`.
//! Users of this type need not change for that step.

use super::MAX_CPUS;
use crate::topology::CpuId;

/// One copy of `T` per CPU, declared with `per_cpu!`.
pub struct PerCpuVar<T> {
    copies: [T; MAX_CPUS],
}

impl<T> PerCpuVar<T> {
    /// The variable with its copies (use `per_cpu!`, which builds them from one initializer).
    pub const fn new(copies: [T; MAX_CPUS]) -> PerCpuVar<T> {
        PerCpuVar { copies }
    }

    /// The calling CPU's copy. Only this CPU should write it unless `T` is built to be
    /// shared (atomics other CPUs push to, as smp's call queues).
    #[inline]
    pub fn this(&self) -> &T {
        // Every running CPU has an id below MAX_CPUS: smp::init leaves the others offline.
        &self.copies[super::cpu_id().index()]
    }

    /// The copy of `cpu`; panics when `cpu` is at or above MAX_CPUS (no such CPU runs:
    /// smp::init keeps the ACPI tables' higher ids offline).
    #[inline]
    pub fn on(&self, cpu: CpuId) -> &T {
        &self.copies[cpu.index()]
    }

    /// Every copy with its CPU id, online or not (a search over all that was ever written).
    pub fn iter(&self) -> impl Iterator<Item = (CpuId, &T)> {
        self.copies
            .iter()
            .enumerate()
            .map(|(i, c)| (CpuId(i as u16), c))
    }

    /// The copies of the online CPUs (counter dumps; those are ktest-only today).
    #[cfg(feature = "ktest")]
    pub fn online(&self) -> impl Iterator<Item = (CpuId, &T)> {
        self.iter().filter(|(cpu, _)| super::of(*cpu).is_some())
    }
}

/// Declares per-CPU variables: `per_cpu! { [pub] static NAME: T = INIT; .. }` gives
/// `static NAME: PerCpuVar<T>` whose every copy starts as `INIT` (a constant expression).
macro_rules! per_cpu {
    ($($(#[$attr:meta])* $vis:vis static $name:ident: $ty:ty = $init:expr;)+) => {
        $(
            $(#[$attr])*
            $vis static $name: $crate::percpu::PerCpuVar<$ty> =
                $crate::percpu::PerCpuVar::new([const { $init }; $crate::percpu::MAX_CPUS]);
        )+
    };
}
pub(crate) use per_cpu;
