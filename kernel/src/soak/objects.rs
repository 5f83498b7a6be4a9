//! The soak's object-level conservation check: per SLUB cache (the soak's shared caches and
//! every kmalloc class), the exact number of active objects must be the objects the soak
//! holds plus the kernel's own, so an object lost inside SLUB (a free that never lands, a
//! slab that keeps an object nobody has) fails the soak even though its page stays "held".
//!
//! Exact means counted from the slabs themselves: every CPU's slabs are flushed to the node
//! lists first (one cross-CPU call), then a cache's active objects are its slabs' objects
//! minus the free objects on its partial lists (slabinfo's Scan count, exact once nothing is
//! per-CPU), and SLUB's own alloc-minus-free counters must agree. What the soak holds is
//! read from its slots (every other CPU idle). The kernel's own is what was active at the
//! start plus the kernel heap's kmalloc blocks taken minus given back since
//! (`heap::count_kmalloc_blocks`): the heap and the soak are the only kmalloc users while the
//! soak runs, and nothing but the soak uses its shared caches.

use super::tag::{ItemKind, Meta};
use super::{Slot, SHARED_SIZES};
use crate::mm::heap;
use crate::mm::slub::{kmalloc, KmemCache, PrivateCache};
use alloc::format;
use alloc::string::String;
use numalab_algo::slub::geometry::{kmalloc_index, KMALLOC_SIZES};
use numalab_algo::slub::SlabinfoMode;

/// The caches checked: the soak's shared caches, then the kmalloc classes in size order.
pub(super) const NR_CHECKED: usize = SHARED_SIZES.len() + KMALLOC_SIZES.len();

/// Objects per checked cache.
pub(super) type PerCache = [usize; NR_CHECKED];

/// One cache's exact numbers at a quiet point.
#[derive(Clone, Copy, Default)]
struct Count {
    /// Objects in use in its slabs (flushed, partial lists walked), less the free objects
    /// that sheaves still cache (their slabs count them in use; the flush's own cross-CPU
    /// call frees a few into the sheaves of the CPUs it ran on, after their flush).
    active: usize,
    /// Its alloc-minus-free counters.
    counters: i64,
    /// Kernel heap blocks of this kmalloc class taken minus given back since the start.
    heap: i64,
}

/// The checked caches of one check: the soak's shared caches (None once destroyed), then the
/// kmalloc classes.
type Checked<'a> = [Option<&'a KmemCache>; NR_CHECKED];

pub(super) struct Objects {
    /// The kmalloc classes (the soak's shared caches are passed to each check: the soak owns
    /// and destroys them).
    kmalloc: &'static [&'static KmemCache; KMALLOC_SIZES.len()],
    /// Active objects at the start: the kernel's own (none in the soak's caches).
    start: PerCache,
    /// Sheaf blocks live per checked kmalloc cache at the start.
    sheaf_start: [i64; NR_CHECKED],
}

/// The index of the checked cache an item of the soak lives in (None: not a slab object).
fn cache_index(meta: Meta) -> Option<usize> {
    match meta.kind {
        ItemKind::CacheObj => Some(meta.param as usize),
        ItemKind::Kmalloc => kmalloc_index(meta.param as usize).map(|i| SHARED_SIZES.len() + i),
        ItemKind::Pages | ItemKind::Vmalloc => None,
    }
}

/// The slab objects the soak holds, per checked cache, read from its slots (every other CPU
/// idle, so no slot is busy).
pub(super) fn held(slots: &[Slot]) -> PerCache {
    let mut held = [0; NR_CHECKED];
    for slot in slots {
        if let Some(Some((_, meta))) = slot.try_lock().as_deref() {
            if let Some(i) = cache_index(*meta) {
                held[i] += 1;
            }
        }
    }
    held
}

impl Objects {
    /// Starts counting the heap's kmalloc blocks and measures the kernel's own objects (the
    /// soak's caches are empty). Every other CPU idle.
    pub(super) fn start(shared: &[PrivateCache]) -> Result<Objects, String> {
        let kmalloc = kmalloc::caches().ok_or_else(|| String::from("kmalloc is not up"))?;
        if shared.len() != SHARED_SIZES.len() {
            return Err(format!(
                "{} shared caches, expected {}",
                shared.len(),
                SHARED_SIZES.len()
            ));
        }
        heap::count_kmalloc_blocks(true);
        let mut o = Objects {
            kmalloc,
            start: [0; NR_CHECKED],
            sheaf_start: core::array::from_fn(|i| {
                i.checked_sub(SHARED_SIZES.len())
                    .map_or(0, crate::mm::slub::platform::sheaf_blocks)
            }),
        };
        let checked = Self::checked(o.kmalloc, Some(shared));
        let now = o.measure(&checked, 0);
        for (i, c) in now.iter().enumerate() {
            if c.counters != c.active as i64 {
                return Err(o.counters_disagree(&checked, "start", i, c));
            }
            o.start[i] = c.active;
        }
        Ok(o)
    }

    /// Stops the heap's count (the soak is over).
    pub(super) fn stop(&self) {
        heap::count_kmalloc_blocks(false);
    }

    /// The numbers of the checked caches from `first` on (the ones before may be destroyed).
    /// Nothing is allocated between the flush and the last read, so the heap's count and the
    /// slabs describe the same instant.
    /// The caches checked with `shared` (None: destroyed).
    fn checked<'a>(
        kmalloc: &'static [&'static KmemCache; KMALLOC_SIZES.len()],
        shared: Option<&'a [PrivateCache]>,
    ) -> Checked<'a> {
        core::array::from_fn(|i| match i.checked_sub(SHARED_SIZES.len()) {
            None => shared.and_then(|s| s.get(i)).map(|c| &**c),
            Some(k) => Some(kmalloc[k]),
        })
    }

    fn measure(&self, checked: &Checked<'_>, first: usize) -> [Count; NR_CHECKED] {
        let caches: [&KmemCache; NR_CHECKED] =
            core::array::from_fn(|i| checked[i.max(first)].expect("a checked cache"));
        let caches = &caches[first..];
        crate::smp::on_each_cpu(&|_| {
            for c in caches {
                c.core().flush_local();
            }
        });
        // The sheaves design: the barns' sheaves too (their objects are in use for slabs).
        for c in caches {
            c.core().shrink_barns();
        }
        let mut out = [Count::default(); NR_CHECKED];
        for (i, c) in caches.iter().enumerate().map(|(i, c)| (first + i, c)) {
            out[i] = Count {
                active: c
                    .slabinfo(SlabinfoMode::Scan)
                    .active_objs
                    .saturating_sub(c.stats().sheaf_cached_objects().max(0) as usize),
                counters: c.stats().live_objects(),
                // The heap's kmalloc blocks, and the sheaves' own blocks (Linux kmallocs
                // sheaves; each CPU keeps an empty main after a flush) since the start.
                heap: i.checked_sub(SHARED_SIZES.len()).map_or(0, |k| {
                    heap::kmalloc_blocks(k) + crate::mm::slub::platform::sheaf_blocks(k)
                        - self.sheaf_start[i]
                }),
            };
        }
        out
    }

    fn counters_disagree(&self, checked: &Checked<'_>, label: &str, i: usize, c: &Count) -> String {
        format!(
            "{}: cache {}: {} objects in use in its slabs, but its counters say {} (allocations minus frees)",
            label,
            name(checked, i),
            c.active,
            c.counters
        )
    }

    /// Checks every checked cache (`shared`: the soak's caches, None once destroyed) against
    /// `held`; prints one summary line, or one line per cache that is off. Returns the checks
    /// made, or the first cache that is off.
    pub(super) fn check(
        &self,
        shared: Option<&[PrivateCache]>,
        held: &PerCache,
        label: &str,
    ) -> Result<u64, String> {
        let first = if shared.is_some() {
            0
        } else {
            SHARED_SIZES.len()
        };
        let checked = Self::checked(self.kmalloc, shared);
        let now = self.measure(&checked, first);
        let mut first_error = None;
        let (mut active, mut soak, mut kernel) = (0usize, 0usize, 0i64);
        for i in first..NR_CHECKED {
            let c = &now[i];
            let own = self.start[i] as i64 + c.heap;
            let want = held[i] as i64 + own;
            active += c.active;
            soak += held[i];
            kernel += own;
            let error = if c.active as i64 != want {
                crate::println!(
                    "# soak: {} cache {}: active {} = soak {} + kernel {} ({} at the start, {:+} heap blocks)? LOST {}",
                    label,
                    name(&checked, i),
                    c.active,
                    held[i],
                    own,
                    self.start[i],
                    c.heap,
                    c.active as i64 - want
                );
                Some(format!(
                    "{}: cache {}: {} active objects, expected {} (the soak holds {}, the kernel {}: {} at the start {:+} heap blocks since): {} objects unaccounted for",
                    label,
                    name(&checked, i),
                    c.active,
                    want,
                    held[i],
                    own,
                    self.start[i],
                    c.heap,
                    c.active as i64 - want
                ))
            } else if c.counters != c.active as i64 {
                Some(self.counters_disagree(&checked, label, i, c))
            } else {
                None
            };
            if first_error.is_none() {
                first_error = error;
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        crate::println!(
            "# soak: {} objects: {} caches, active {} = soak {} + kernel {}: ok",
            label,
            NR_CHECKED - first,
            active,
            soak,
            kernel
        );
        Ok((NR_CHECKED - first) as u64)
    }
}

/// The name of checked cache `i`.
fn name(checked: &Checked<'_>, i: usize) -> String {
    checked[i].map_or_else(|| String::from("(destroyed)"), |c| String::from(c.name()))
}
