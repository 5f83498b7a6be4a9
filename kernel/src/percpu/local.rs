//! Per-CPU variables (Linux's DEFINE_PER_CPU, Asterinas' `cpu_local!`): each subsystem
//! declares its own per-CPU data with `per_cpu!`, so `PerCpu` (the GS-based area) knows none.
//!
//! ```ignore
//! per_cpu! {
//!     /// Per CPU: how many exempt sections are open.
//!     static EXEMPT: AtomicU32 = AtomicU32::new(0);
//! }
//! EXEMPT.get_with(&percpu::pin()).fetch_add(1, Relaxed);  // the calling CPU's copy
//! EXEMPT.on(cpu).load(Relaxed);                           // another CPU's copy (dumps, tests)
//! for (cpu, copy) in EXEMPT.iter() { .. }                 // every copy that exists
//! ```
//!
//! The calling CPU's copy is reached under a guard (percpu/guard.rs): `get_with(&pin)`.
//!
//! Where the copies live (Linux's layout, arch/x86/kernel/setup_percpu.c): every declared
//! variable is the boot CPU's copy, placed in the `percpu` linker section. SMP bring-up
//! (`alloc_area`, from smp/start/memory.rs) gives each other CPU an area of the section's size
//! from that CPU's memory node and writes every variable's initial value into it (the
//! initializers are registered in the `percpu_init` section). A CPU's copy of a variable lies
//! at the variable's address plus that CPU's delta (Linux's `this_cpu_off`), which `PerCpu`
//! holds behind the GS base: `this()` is one GS-relative load and an add.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicUsize, Ordering};

use super::MAX_CPUS;
use crate::topology::CpuId;

/// One copy of `T` per CPU, declared with `per_cpu!`; the static itself is the boot CPU's.
pub struct PerCpuVar<T> {
    /// The boot CPU's copy. An UnsafeCell only so that the `percpu` section is writable data
    /// whatever `T` is: the copy is never written except through `T`'s own interior mutability.
    boot: UnsafeCell<T>,
}

// SAFETY: a PerCpuVar hands out only `&T` (to the copy of the calling or a named CPU), and
// those references may cross CPUs and interrupts, which is exactly what `T: Sync` allows.
unsafe impl<T: Sync> Sync for PerCpuVar<T> {}

/// A CPU with no area (not started): its delta in DELTAS.
const NO_AREA: usize = usize::MAX;

/// Each CPU's delta (address of its copy minus that of the boot copy), NO_AREA until bring-up
/// gives it an area; the boot CPU's is 0.
static DELTAS: [AtomicUsize; MAX_CPUS] = {
    let mut d = [const { AtomicUsize::new(NO_AREA) }; MAX_CPUS];
    d[0] = AtomicUsize::new(0);
    d
};

impl<T> PerCpuVar<T> {
    /// The variable with the boot CPU's copy.
    ///
    /// # Safety
    /// Only `per_cpu!` calls it: the static must lie in the `percpu` section (the other CPUs'
    /// copies are found at the same offset in their areas) and have its initializer
    /// registered in `percpu_init`.
    #[doc(hidden)]
    pub const unsafe fn new(boot: T) -> PerCpuVar<T> {
        PerCpuVar {
            boot: UnsafeCell::new(boot),
        }
    }

    fn at(&self, delta: usize) -> &T {
        let addr = (self.boot.get() as usize).wrapping_add(delta);
        // SAFETY: `delta` is 0 (the boot copy, a static) or a CPU's delta from `alloc_area`,
        // whose area holds a live, initialized `T` at the boot copy's offset in the `percpu`
        // section (every PerCpuVar lies there: `new`'s contract) for as long as the kernel
        // runs (areas are never freed).
        unsafe { &*(addr as *const T) }
    }

    /// Writes `value` as the copy at `delta` (the registered initializer of `per_cpu!`).
    ///
    /// # Safety
    /// Only `alloc_area`, on a fresh area that nothing reads yet, with that area's delta.
    #[doc(hidden)]
    pub unsafe fn init_copy(&self, delta: usize, value: T) {
        let addr = (self.boot.get() as usize).wrapping_add(delta);
        // SAFETY: the caller's contract: `addr` is this variable's slot in a fresh area,
        // aligned for T (the area is page-aligned and the slot keeps the section offset).
        unsafe { (addr as *mut T).write(value) };
    }
}

impl<T: Sync> PerCpuVar<T> {
    /// The calling CPU's copy, for as long as the pin lives (percpu/guard.rs). Only this
    /// CPU should write it unless `T` is built to be shared (atomics other CPUs push to, as
    /// smp's call queues).
    #[inline]
    pub fn get_with<'a>(&'a self, _guard: &'a super::CpuPin) -> &'a T {
        self.at(super::var_delta())
    }

    /// The copy of `cpu`, or None when `cpu` has no area (never started, or at or above
    /// MAX_CPUS).
    #[inline]
    pub fn get(&self, cpu: CpuId) -> Option<&T> {
        let delta = DELTAS.get(cpu.index())?.load(Ordering::Acquire);
        (delta != NO_AREA).then(|| self.at(delta))
    }

    /// The copy of `cpu`; panics when `cpu` has no area (callers name started CPUs: the
    /// calling one, or one that `percpu::of` lists).
    #[inline]
    pub fn on(&self, cpu: CpuId) -> &T {
        match self.get(cpu) {
            Some(copy) => copy,
            None => panic!("percpu: CPU {} has no per-CPU area", cpu.0),
        }
    }

    /// Every copy that exists (the boot CPU's and those of the CPUs given an area), by CPU.
    pub fn iter(&self) -> impl Iterator<Item = (CpuId, &T)> {
        (0..MAX_CPUS as u16).filter_map(|c| self.get(CpuId(c)).map(|copy| (CpuId(c), copy)))
    }

    /// The copies of the online CPUs (counter dumps; those are ktest-only today).
    #[cfg(feature = "ktest")]
    pub fn online(&self) -> impl Iterator<Item = (CpuId, &T)> {
        self.iter().filter(|(cpu, _)| super::of(*cpu).is_some())
    }
}

/// The initializer of one variable's copy in a fresh area (registered by `per_cpu!`).
#[doc(hidden)]
pub struct PerCpuInit(pub unsafe fn(delta: usize));

// The bounds of the two sections, defined by the linker (any section whose name is a C
// identifier gets them). Declared as bytes: only their addresses are used.
extern "C" {
    static __start_percpu: u8;
    static __stop_percpu: u8;
    static __start_percpu_init: u8;
    static __stop_percpu_init: u8;
}

/// The `percpu` section's bounds: the boot copies (only the symbols' addresses are taken).
fn section() -> (usize, usize) {
    (
        core::ptr::addr_of!(__start_percpu) as usize,
        core::ptr::addr_of!(__stop_percpu) as usize,
    )
}

fn initializers() -> &'static [PerCpuInit] {
    // SAFETY: the linker defines the bounds around the `percpu_init` section, which holds only
    // `PerCpuInit` statics placed there by `per_cpu!` (each `#[used]`, of one type, so the
    // section is an array of them); they are immutable and live for the whole run.
    unsafe {
        let start = core::ptr::addr_of!(__start_percpu_init).cast::<PerCpuInit>();
        let stop = core::ptr::addr_of!(__stop_percpu_init).cast::<PerCpuInit>();
        let len = (stop as usize - start as usize) / core::mem::size_of::<PerCpuInit>();
        core::slice::from_raw_parts(start, len)
    }
}

/// Bytes of one CPU's copies (the `percpu` section's size).
pub fn area_bytes() -> usize {
    let (start, stop) = section();
    stop - start
}

/// Gives `cpu` (not yet started, not the boot CPU) its copies in `area`: fresh, page-aligned
/// memory of `area_bytes()` that the caller took from the CPU's node. Returns the CPU's delta
/// for its `PerCpu`, or None for the boot CPU or an id at or above MAX_CPUS.
///
/// # Safety
/// `area` is that many bytes, page-aligned, owned by `cpu` forever and used for nothing else;
/// `cpu` runs no code and nothing reads its copies until this returns.
pub unsafe fn alloc_area(cpu: CpuId, area: *mut u8) -> Option<usize> {
    let slot = DELTAS.get(cpu.index()).filter(|_| cpu != CpuId(0))?;
    let delta = (area as usize).wrapping_sub(section().0);
    for init in initializers() {
        // SAFETY: `area` is fresh, of the section's size and page-aligned (the caller's
        // contract), so every variable's slot at `delta` lies in it, aligned for its type.
        unsafe { (init.0)(delta) };
    }
    slot.store(delta, Ordering::Release);
    Some(delta)
}

/// Declares per-CPU variables: `per_cpu! { [pub] static NAME: T = INIT; .. }` gives
/// `static NAME: PerCpuVar<T>` whose every copy starts as `INIT` (a constant expression).
macro_rules! per_cpu {
    ($($(#[$attr:meta])* $vis:vis static $name:ident: $ty:ty = $init:expr;)+) => {
        $(
            $(#[$attr])*
            #[link_section = "percpu"]
            $vis static $name: $crate::percpu::PerCpuVar<$ty> =
                // SAFETY: the static is in the `percpu` section and its initializer is
                // registered just below (PerCpuVar::new's contract).
                unsafe { $crate::percpu::PerCpuVar::new($init) };
            const _: () = {
                #[used]
                #[link_section = "percpu_init"]
                static INIT: $crate::percpu::PerCpuInit =
                    $crate::percpu::PerCpuInit(|delta| {
                        // SAFETY: called only by percpu::local::alloc_area on a fresh area
                        // with its delta (PerCpuVar::init_copy's contract).
                        unsafe { $name.init_copy(delta, $init) }
                    });
            };
        )+
    };
}
pub(crate) use per_cpu;
