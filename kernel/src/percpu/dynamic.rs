//! Run-time per-CPU data (Linux's alloc_percpu, Asterinas' dyn_cpu_local.rs): a
//! `PerCpuBox<T>` is one `T` per CPU of the topology, each in its CPU's region of
//! `REGION_BYTES` on that CPU's memory node, all at the same offset.
//!
//! ```ignore
//! let hits = PerCpuBox::new(|_cpu| AtomicU64::new(0))?;   // fails only when the regions are full
//! hits.get_with(&percpu::pin()).fetch_add(1, Relaxed);    // the running CPU's copy
//! let total: u64 = hits.iter().map(|(_, c)| c.load(Relaxed)).sum();
//! ```
//!
//! Where the copies live (Linux's first chunk and `__per_cpu_offset`): `init` takes one region
//! per CPU of the topology from a page source on that CPU's memory node (the caller's: this
//! layer sits below mm) and records each CPU's delta, its region's address minus CPU 0's,
//! in its `PerCpu` (`set_dyn_delta`, also for the CPUs started later by `smp`). A box's copy
//! for CPU c lies at the box's address in CPU 0's region plus c's delta, so the running CPU's
//! copy is one GS-relative load and an add, as for `per_cpu!` (percpu/local.rs), whose
//! static copies have their own delta because the boot CPU's lie in the kernel image.
//! Regions are carved in 8-byte units by a bitmap under a lock, never given back; a box
//! gives its units back when dropped.

use core::marker::PhantomData;
use spin::Once;

use super::guard::CpuPin;
use super::MAX_CPUS;
use crate::sync::IrqSpinLock;
use crate::topology::{CpuId, NodeId};

/// Pages of each CPU's region as a buddy order (16 pages, 64 KiB).
pub const REGION_ORDER: u8 = 4;
/// Bytes of each CPU's region: room for 128 SLUB CPU slabs of 512 bytes, or counters.
pub const REGION_BYTES: usize = 4096 << REGION_ORDER;
const UNIT: usize = 8;
const UNITS: usize = REGION_BYTES / UNIT;

struct Regions {
    /// CPU 0's region: every box's address is in it.
    base: usize,
    /// Per CPU of the topology: its region's address minus `base` (wrapping).
    deltas: alloc::boxed::Box<[usize]>,
    /// Per CPU: the node its region's pages came from.
    nodes: alloc::boxed::Box<[NodeId]>,
}

static REGIONS: Once<Regions> = Once::new();
/// Which 8-byte units of the regions are taken (the same in every region).
static USED: IrqSpinLock<[u64; UNITS / 64]> = IrqSpinLock::new([0; UNITS / 64]);

/// Where the regions' pages come from: 2^order pages for a CPU whose memory node is `node`,
/// as the direct-map address of the block and the node it lies on.
pub type PageSource<'a> = &'a dyn Fn(u8, NodeId) -> Option<(usize, NodeId)>;

/// Takes every CPU's region (`nr_cpus` of the topology, CPU c's on `mem_node_of(c)` through
/// `pages`) and gives each started CPU its delta. Once, boot CPU, before the first box;
/// returns false when a region could not be had.
pub fn init(nr_cpus: usize, mem_node_of: &dyn Fn(CpuId) -> NodeId, pages: PageSource) -> bool {
    let nr = nr_cpus.clamp(1, MAX_CPUS);
    let mut bases = alloc::vec::Vec::with_capacity(nr);
    let mut nodes = alloc::vec::Vec::with_capacity(nr);
    for cpu in 0..nr {
        let Some((base, node)) = pages(REGION_ORDER, mem_node_of(CpuId(cpu as u16))) else {
            return false;
        };
        bases.push(base);
        nodes.push(node);
    }
    let base = bases[0];
    let r = REGIONS.call_once(|| Regions {
        base,
        deltas: bases.iter().map(|b| b.wrapping_sub(base)).collect(),
        nodes: nodes.into_boxed_slice(),
    });
    for (cpu, &delta) in r.deltas.iter().enumerate() {
        if let Some(area) = super::of(CpuId(cpu as u16)) {
            area.set_dyn_delta(delta);
        }
    }
    true
}

/// The run-time delta of `cpu` (None before `init` or for a CPU the topology lacks): smp
/// writes it into the `PerCpu` of a CPU it starts after `init`.
pub fn delta_of(cpu: CpuId) -> Option<usize> {
    REGIONS.get()?.deltas.get(cpu.index()).copied()
}

/// Pages of the regions on `node` (their holder's count).
pub fn region_pages_on(node: NodeId) -> usize {
    REGIONS
        .get()
        .map_or(0, |r| r.nodes.iter().filter(|&&n| n == node).count())
        << REGION_ORDER
}

/// The first run of `n` free units starting at a multiple of `align` units, marked taken.
fn take_units(n: usize, align: usize) -> Option<usize> {
    let mut used = USED.lock();
    let free = |used: &[u64; UNITS / 64], u: usize| used[u / 64] & (1 << (u % 64)) == 0;
    let mut start = 0;
    while start + n <= UNITS {
        match (start..start + n).find(|&u| !free(&used, u)) {
            None => {
                for u in start..start + n {
                    used[u / 64] |= 1 << (u % 64);
                }
                return Some(start);
            }
            Some(taken) => start = (taken + 1).next_multiple_of(align),
        }
    }
    None
}

fn give_units(start: usize, n: usize) {
    let mut used = USED.lock();
    for u in start..start + n {
        used[u / 64] &= !(1 << (u % 64));
    }
}

/// One `T` per CPU of the topology, each on its CPU's memory node (module text).
pub struct PerCpuBox<T> {
    /// The copy's address in CPU 0's region.
    addr: usize,
    nr: usize,
    _t: PhantomData<T>,
}

// SAFETY: a PerCpuBox owns its copies as a Box<[T]> does; sending it sends them.
unsafe impl<T: Send> Send for PerCpuBox<T> {}
// SAFETY: a shared PerCpuBox hands out `&T` (any CPU's copy, to any CPU or interrupt), which
// is what `T: Sync` allows.
unsafe impl<T: Send + Sync> Sync for PerCpuBox<T> {}

impl<T> PerCpuBox<T> {
    /// A copy `init(cpu)` for every CPU; None before `init` of the regions, when they have no
    /// free run of `size_of::<T>()`, or when `T` needs more than a page's alignment.
    pub fn new(mut init: impl FnMut(CpuId) -> T) -> Option<PerCpuBox<T>> {
        let r = REGIONS.get()?;
        let align = core::mem::align_of::<T>();
        if align > 4096 {
            return None;
        }
        let n = core::mem::size_of::<T>().div_ceil(UNIT).max(1);
        let start = take_units(n, align.div_ceil(UNIT).max(1))?;
        let b = PerCpuBox {
            addr: r.base + start * UNIT,
            nr: r.deltas.len(),
            _t: PhantomData,
        };
        for cpu in 0..b.nr {
            // SAFETY: the units are ours (taken above) in every CPU's region, which is
            // page-aligned, so the copy is aligned for T and T fits the run.
            unsafe { (b.at(cpu) as *mut T).write(init(CpuId(cpu as u16))) };
        }
        Some(b)
    }

    /// The copy's address in CPU 0's region (with `percpu::dyn_delta()`, the running CPU's).
    #[inline(always)]
    fn at(&self, cpu: usize) -> usize {
        let r = REGIONS.get().expect("percpu: a box exists only after init");
        self.addr.wrapping_add(r.deltas[cpu])
    }

    /// CPUs with a copy (the topology's CPU count).
    pub fn len(&self) -> usize {
        self.nr
    }
}

impl<T: Sync> PerCpuBox<T> {
    /// The running CPU's copy, for as long as the pin lives (percpu/guard.rs).
    #[inline(always)]
    pub fn get_with<'a>(&'a self, _guard: &'a CpuPin) -> &'a T {
        // SAFETY: as in `this_unguarded`.
        unsafe { self.this_unguarded() }
    }

    /// The running CPU's copy with no guard: for a caller whose own contract keeps the CPU
    /// for the reference's life (SLUB's `Platform::this_cpu`, whose core holds the slot only
    /// within one operation, and numalab never migrates).
    ///
    /// # Safety
    /// The caller uses the reference only on the CPU that took it.
    #[inline(always)]
    pub unsafe fn this_unguarded(&self) -> &T {
        // The delta first: LLVM then folds the copy's address into the add (`add [box],
        // reg`), one instruction less than loading the address before the GS-relative load.
        let delta = super::dyn_delta();
        // SAFETY: the running CPU's delta (`PerCpu::set_dyn_delta`, set before the CPU could
        // reach a box) added to the copy's address in CPU 0's region is this CPU's live copy
        // (written by `new`, dropped only with the box); `T: Sync` lets interrupts share it.
        unsafe { &*(self.addr.wrapping_add(delta) as *const T) }
    }

    /// The copy of `cpu`, None past the topology's CPUs.
    pub fn get(&self, cpu: CpuId) -> Option<&T> {
        // SAFETY: a live copy of CPU `cpu` (`new` wrote one for every CPU below `nr`).
        (cpu.index() < self.nr).then(|| unsafe { &*(self.at(cpu.index()) as *const T) })
    }

    /// The copy of `cpu`; panics past the topology's CPUs.
    pub fn on(&self, cpu: CpuId) -> &T {
        match self.get(cpu) {
            Some(copy) => copy,
            None => panic!("percpu: CPU {} has no run-time copy", cpu.0),
        }
    }

    /// Every copy, by CPU.
    pub fn iter(&self) -> impl Iterator<Item = (CpuId, &T)> {
        (0..self.nr).map(|c| (CpuId(c as u16), self.on(CpuId(c as u16))))
    }
}

impl<T> Drop for PerCpuBox<T> {
    fn drop(&mut self) {
        for cpu in 0..self.nr {
            // SAFETY: each CPU's copy is live and dropped once, here.
            unsafe { core::ptr::drop_in_place(self.at(cpu) as *mut T) };
        }
        let r = REGIONS.get().expect("percpu: a box exists only after init");
        let start = (self.addr - r.base) / UNIT;
        give_units(start, core::mem::size_of::<T>().div_ceil(UNIT).max(1));
    }
}
