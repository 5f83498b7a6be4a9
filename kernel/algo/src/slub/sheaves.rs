//! The sheaves design (Linux 7.0's mm/slub.c): each CPU allocates from and frees into its
//! `main` sheaf, an array of object pointers, under a local trylock with no atomic
//! instruction and interrupts on; a `spare` sheaf (empty or full) is swapped in when main
//! runs dry or fills up; the CPU's node keeps a barn of full and empty sheaves to exchange
//! with; behind it, the node's partial slabs refill a sheaf and take flushed objects back.
//!
//! Allocation: main; else a full spare (swap); else a full sheaf from the barn for the
//! empty main; else refill main from the slabs (slab_path.rs). Free: main; else an empty
//! spare (swap); else (no spare) the full main becomes the spare and main an empty sheaf
//! from the barn or a new one; else the full main goes to the barn for an empty one; else
//! (the barn holds MAX_FULL_SHEAVES) main is flushed to its slabs.
//!
//! Bypasses, as Linux's: an allocation for a node other than the CPU's memory node, and a
//! free of an object of another node, go to the slabs directly; so does any operation by
//! an interrupt that finds the CPU's trylock taken, and, without a barn on the CPU's node
//! (memoryless nodes in 7.0 as shipped), every allocation once the CPU's sheaves are empty
//! and every free once they are full. Debug caches have no sheaves at all.
//!
//! Lock order: the CPU's sheaf trylock (never waited for), then interrupts off (the slow
//! paths), then a barn lock or one node's list_lock, never both, then slab state words.

use super::barn::{MAX_EMPTY_SHEAVES, MAX_FULL_SHEAVES};
use super::cache::{Cache, CpuSlab};
use super::placed::PerCpuSlots;
use super::platform::{Platform, OWNER_MARKS};
use super::sheaf::{sheaf_bytes, Sheaf};
use super::slab::Slab;
use super::stats::{ErrorKind, Stat};
use crate::topology::NodeId;
use core::sync::atomic::{compiler_fence, Ordering, Ordering::Relaxed};

impl<P: Platform> Cache<P> {
    /// The sheaves allocation fast path (null: out of memory).
    #[inline(always)]
    pub(crate) fn sheaf_alloc(&self, node: Option<NodeId>, strict: bool) -> *mut u8 {
        let p = &self.plat;
        let c = self.cpu_slab();
        if let Some(n) = node {
            // Linux 7 serves only the CPU's own memory node from its sheaves, and checks a
            // strict request's object node; here a strict request always takes the slabs.
            let n = self.effective_node(n);
            if strict || n.index() != c.home.load(Relaxed) {
                return self.slab_alloc_entry(Some(n), strict);
            }
        }
        if !self.sheaf_trylock(c) {
            return self.slab_alloc_entry(None, false);
        }
        let main = Sheaf(c.main.load(Relaxed));
        let size = main.size(p);
        if size == 0 {
            return self.sheaf_alloc_slow();
        }
        let obj = p.load(main.slot(size - 1));
        main.set_size(p, size - 1);
        Self::sheaf_unlock(c);
        p.cpu_inc(c.stats.counter(Stat::AllocCpuSheaf));
        obj as *mut u8
    }

    /// The sheaves free fast path. The object's slab is looked up first (its node decides
    /// the bypass, and a pointer that is not an object of this cache is reported, not
    /// cached); pushing the last object pushed again is reported as a double free. A page
    /// the short owner lookup does not find (`owner_fast`: a section shared by two nodes)
    /// takes the slab path, which looks it up in full.
    #[inline(always)]
    pub(crate) fn sheaf_free<const FULL: bool>(&self, obj: usize) {
        let desc = self.plat.owner_fast(obj);
        if desc < OWNER_MARKS || Slab(desc).cache_id(&self.plat) != self.id() {
            return self.free_slow_entry(obj, false);
        }
        self.sheaf_free_in::<FULL>(obj, Slab(desc))
    }

    /// `sheaf_free` of an object whose slab the caller looked up (`slab` is a slab of this
    /// cache holding `obj`'s page): the object-boundary check (`FULL`: `slub.checks=full`),
    /// the remote-node bypass, then the push. Every miss tail-calls a slow path, so this saves no register.
    #[inline(always)]
    pub(crate) fn sheaf_free_in<const FULL: bool>(&self, obj: usize, slab: Slab) {
        let p = &self.plat;
        let c = self.cpu_slab();
        let (node, objects) = slab.node_objects(p);
        // The multiply-rotate gives the object index for an offset on a boundary and a huge
        // number for any other offset (slab_of's check); `slub.checks=linux` skips it, as
        // Linux's fast path does (checks.rs).
        if (FULL && self.object_index(obj.wrapping_sub(slab.base(p))) >= objects)
            || node.index() != c.home.load(Relaxed)
        {
            return self.free_slow_entry(obj, false);
        }
        if !self.sheaf_trylock(c) {
            return self.free_slow_entry(obj, false);
        }
        let main = Sheaf(c.main.load(Relaxed));
        let size = main.size(p);
        if size == main.capacity(p) || (FULL && main.last_pushed(p, size) == obj) {
            return self.sheaf_free_slow(obj);
        }
        p.store(main.slot(size), obj);
        main.set_size(p, size + 1);
        Self::sheaf_unlock(c);
        p.cpu_inc(c.stats.counter(Stat::FreeCpuSheaf));
    }

    /// Takes the running CPU's sheaf trylock (a plain store: only this CPU and its
    /// interrupts touch it); false, counted as sheaf_trylock_fail, when an interrupted owner
    /// holds it.
    #[inline(always)]
    pub(super) fn sheaf_trylock(&self, c: &CpuSlab) -> bool {
        if locked(c) {
            self.plat.cpu_inc(c.stats.counter(Stat::SheafTrylockFail));
            return false;
        }
        c.sheaf_lock.store(1, Relaxed);
        compiler_fence(Ordering::SeqCst);
        true
    }

    /// Releases the trylock taken by a fast path.
    #[inline(always)]
    pub(super) fn sheaf_unlock(c: &CpuSlab) {
        compiler_fence(Ordering::SeqCst);
        c.sheaf_lock.store(0, Relaxed);
    }

    /// Main is empty (trylock held): fill it, then pop.
    #[cold]
    #[inline(never)]
    fn sheaf_alloc_slow(&self) -> *mut u8 {
        let p = &self.plat;
        let irq = p.irq_save();
        let c = self.cpu_slab();
        let filled = self.replace_empty_main(c);
        let obj = if filled {
            let obj = Sheaf(c.main.load(Relaxed)).pop(p);
            c.stats.inc(Stat::AllocCpuSheaf);
            obj
        } else {
            0
        };
        Self::sheaf_unlock(c);
        p.irq_restore(irq);
        if obj != 0 {
            return obj as *mut u8;
        }
        // No sheaf could be filled (no barn, or no memory for a sheaf): the slab path.
        self.slab_alloc_entry(None, false)
    }

    /// Main is full, or `obj` is main's last object (trylock held): make room, then push.
    #[cold]
    #[inline(never)]
    fn sheaf_free_slow(&self, obj: usize) {
        let p = &self.plat;
        let irq = p.irq_save();
        let c = self.cpu_slab();
        let main = Sheaf(c.main.load(Relaxed));
        let size = main.size(p);
        if self.full_checks() && size != 0 && p.load(main.slot(size - 1)) == obj {
            Self::sheaf_unlock(c);
            p.irq_restore(irq);
            return self.report_error(obj, ErrorKind::DoubleFree, None);
        }
        let room = self.replace_full_main(c);
        if room {
            Sheaf(c.main.load(Relaxed)).push(p, obj);
            c.stats.inc(Stat::FreeCpuSheaf);
        }
        Self::sheaf_unlock(c);
        p.irq_restore(irq);
        if !room {
            self.free_slow_entry(obj, false);
        }
    }

    /// A new empty sheaf, or None when out of memory.
    fn new_sheaf(&self, c: &CpuSlab) -> Option<Sheaf> {
        let block = self.plat.alloc_block(sheaf_bytes(self.sheaf_capacity))?;
        let s = Sheaf(block);
        s.init(&self.plat, self.sheaf_capacity);
        c.stats.inc(Stat::SheafAlloc);
        Some(s)
    }

    fn free_sheaf(&self, c: &CpuSlab, s: Sheaf) {
        debug_assert_eq!(s.size(&self.plat), 0);
        self.plat.free_block(s.0, sheaf_bytes(self.sheaf_capacity));
        c.stats.inc(Stat::SheafFree);
    }

    /// The barn of the CPU's node, if that node has one.
    pub(super) fn barn_of(&self, c: &CpuSlab) -> Option<&super::barn::Barn<P::Lock>> {
        self.barns
            .get(c.cpu_node.load(Relaxed))
            .filter(|b| b.exists)
    }

    /// The CPU's main sheaf, a new empty one in place of the bootstrap sheaf (then `true`
    /// beside it); None when there was no memory for it.
    pub(super) fn real_main(&self, c: &CpuSlab) -> Option<(Sheaf, bool)> {
        let main = Sheaf(c.main.load(Relaxed));
        if !main.is_bootstrap(&self.plat) {
            return Some((main, false));
        }
        let s = self.new_sheaf(c)?;
        c.main.store(s.0, Relaxed);
        Some((s, true))
    }

    /// Linux's __pcs_replace_empty_main: true when main has an object afterwards.
    /// Interrupts off, trylock held.
    fn replace_empty_main(&self, c: &CpuSlab) -> bool {
        let p = &self.plat;
        let Some((main, _)) = self.real_main(c) else {
            return false;
        };
        let spare = c.spare.load(Relaxed);
        if spare != 0 && Sheaf(spare).size(p) != 0 {
            c.spare.store(main.0, Relaxed);
            c.main.store(spare, Relaxed);
            c.stats.inc(Stat::SheafSwap);
            return true;
        }
        let Some(barn) = self.barn_of(c) else {
            return false;
        };
        let full = if barn.nr_full() == 0 {
            None
        } else {
            p.with_lock(&barn.lock, || {
                let full = barn.pop_full(p)?;
                let kept = barn.nr_empty() < MAX_EMPTY_SHEAVES;
                if kept {
                    barn.push_empty(p, main);
                }
                Some((full, kept))
            })
        };
        if let Some((full, kept)) = full {
            c.main.store(full.0, Relaxed);
            c.stats.inc(Stat::BarnGet);
            if !kept {
                self.free_sheaf(c, main);
            }
            return true;
        }
        c.stats.inc(Stat::BarnGetFail);
        let home = NodeId(c.home.load(Relaxed) as u16);
        let want = self.sheaf_capacity - main.size(p);
        let got = if self.hybrid {
            self.hybrid_refill(c, want, &mut |obj| main.push(p, obj))
        } else {
            let got = self.take_objects(c, home, want, &mut |obj| main.push(p, obj));
            c.stats.add(Stat::SheafRefill, got as u64);
            got
        };
        got != 0
    }

    /// Linux's __pcs_replace_full_main: true when main has room afterwards.
    /// Interrupts off, trylock held.
    fn replace_full_main(&self, c: &CpuSlab) -> bool {
        let p = &self.plat;
        let Some((main, fresh)) = self.real_main(c) else {
            return false;
        };
        if fresh {
            return true;
        }
        let spare = c.spare.load(Relaxed);
        if spare != 0 && Sheaf(spare).size(p) == 0 {
            c.spare.store(main.0, Relaxed);
            c.main.store(spare, Relaxed);
            c.stats.inc(Stat::SheafSwap);
            return true;
        }
        let Some(barn) = self.barn_of(c) else {
            return false;
        };
        if spare == 0 {
            // The full main becomes the spare; main an empty sheaf from the barn or a new one.
            let empty = if barn.nr_empty() == 0 {
                None
            } else {
                p.with_lock(&barn.lock, || barn.pop_empty(p))
            };
            if let Some(e) = empty.or_else(|| self.new_sheaf(c)) {
                c.spare.store(main.0, Relaxed);
                c.main.store(e.0, Relaxed);
                return true;
            }
        }
        // The spare is full too: trade the full main at the barn.
        enum Put {
            Swapped(Sheaf),
            NoEmpty,
            BarnFull,
        }
        let put = p.with_lock(&barn.lock, || {
            if barn.nr_full() >= MAX_FULL_SHEAVES {
                return Put::BarnFull;
            }
            match barn.pop_empty(p) {
                Some(e) => {
                    barn.push_full(p, main);
                    Put::Swapped(e)
                }
                None => Put::NoEmpty,
            }
        });
        let empty = match put {
            Put::Swapped(e) => Some(e),
            Put::NoEmpty => self.new_sheaf(c).and_then(|e| {
                let stored = p.with_lock(&barn.lock, || {
                    let room = barn.nr_full() < MAX_FULL_SHEAVES;
                    if room {
                        barn.push_full(p, main);
                    }
                    room
                });
                if stored {
                    Some(e)
                } else {
                    self.free_sheaf(c, e);
                    None
                }
            }),
            Put::BarnFull => None,
        };
        match empty {
            Some(e) => {
                c.main.store(e.0, Relaxed);
                c.stats.inc(Stat::BarnPut);
            }
            None => {
                c.stats.inc(Stat::BarnPutFail);
                self.flush_sheaf(c, main);
            }
        }
        true
    }

    /// Gives every object of `s` back to its slab (Linux's sheaf_flush_unused); `s` ends
    /// empty. Interrupts off.
    pub(crate) fn flush_sheaf(&self, c: &CpuSlab, s: Sheaf) {
        let p = &self.plat;
        let n = s.size(p);
        while s.size(p) != 0 {
            let obj = s.pop(p);
            let found = self.slab_of(obj);
            // Only `slub.checks=linux` caches what the slab path refuses (checks.rs); it is
            // reported here, when it leaves the sheaf.
            if let Some(kind) = self.free_slow_counted(c, obj, found, false) {
                debug_assert!(!self.full_checks(), "a sheaf held a bad object {obj:#x}");
                self.report_error(obj, kind, None);
            }
        }
        c.stats.add(Stat::SheafFlush, n as u64);
    }

    /// Empties the running CPU's sheaves into their slabs and frees its spare sheaf (Linux's
    /// pcs_flush_all). Runs as part of `flush_local`.
    /// A cross-CPU call that interrupted this CPU inside a fast path (trylock taken) leaves
    /// the sheaves alone: the objects stay cached, counted by `sheaf_cached_objects`.
    pub(crate) fn flush_local_sheaves(&self, c: &CpuSlab) {
        let p = &self.plat;
        if c.sheaf_lock.load(Relaxed) != 0 {
            return;
        }
        let main = Sheaf(c.main.load(Relaxed));
        if main.0 != 0 && !main.is_bootstrap(p) {
            self.flush_sheaf(c, main);
        }
        let spare = c.spare.load(Relaxed);
        if spare != 0 {
            c.spare.store(0, Relaxed);
            self.flush_sheaf(c, Sheaf(spare));
            self.free_sheaf(c, Sheaf(spare));
        }
    }

    /// Empties every barn (Linux's barn_shrink): full sheaves are flushed, and every sheaf
    /// freed. The counters go to the running CPU. Nothing for the partial design.
    pub fn shrink_barns(&self) {
        let p = &self.plat;
        for barn in self.barns.iter() {
            loop {
                let got = p.with_lock(&barn.lock, || {
                    barn.pop_full(p).or_else(|| barn.pop_empty(p))
                });
                let Some(s) = got else { break };
                let irq = p.irq_save();
                let c = self.cpu_slab();
                self.flush_sheaf(c, s);
                self.free_sheaf(c, s);
                p.irq_restore(irq);
            }
        }
    }

    /// Frees every CPU's main sheaf and the bootstrap sheaf (the cache is being destroyed:
    /// nobody uses it, and its sheaves are already flushed).
    pub(crate) fn free_cpu_sheaves(&self) {
        let p = &self.plat;
        for c in self.cpus.iter() {
            let main = c.main.load(Relaxed);
            if main != 0 && main != self.bootstrap_sheaf {
                let irq = p.irq_save();
                self.free_sheaf(self.cpu_slab(), Sheaf(main));
                p.irq_restore(irq);
            }
            c.main.store(self.bootstrap_sheaf, Relaxed);
        }
        if self.bootstrap_sheaf != 0 {
            p.free_desc(self.bootstrap_sheaf);
        }
    }

    /// Sheaves held: per CPU (main and spare, real ones) and in barns.
    pub fn sheaves_held(&self) -> usize {
        let p = &self.plat;
        let cpu: usize = self
            .cpus
            .iter()
            .map(|c| {
                let main = c.main.load(Relaxed);
                usize::from(main != 0 && main != self.bootstrap_sheaf)
                    + usize::from(c.spare.load(Relaxed) != 0)
            })
            .sum();
        let _ = p;
        cpu + self
            .barns
            .iter()
            .map(|b| b.nr_full() + b.nr_empty())
            .sum::<usize>()
    }

    /// The barn lock of `node`, for its contention counters (None: no barn there).
    pub fn barn_lock(&self, node: NodeId) -> Option<&P::Lock> {
        self.barns
            .get(node.index())
            .filter(|b| b.exists)
            .map(|b| &b.lock)
    }

    /// Objects per sheaf (0: this cache has no sheaves).
    pub fn sheaf_capacity(&self) -> usize {
        self.sheaf_capacity
    }

    /// Full and empty sheaves in `node`'s barn (None: no barn there).
    pub fn barn_sheaves(&self, node: NodeId) -> Option<(usize, usize)> {
        let b = self.barns.get(node.index()).filter(|b| b.exists)?;
        Some((b.nr_full(), b.nr_empty()))
    }
}

/// Test-only mutation: the fast paths ignore the trylock (an interrupt then works on the
/// sheaf its owner is in the middle of changing). The interrupt tests must catch it.
#[cfg(test)]
pub(crate) static MUTATION_NO_TRYLOCK: core::sync::atomic::AtomicBool =
    core::sync::atomic::AtomicBool::new(false);

/// Whether the running CPU's trylock is taken (or, under the test mutation, never).
#[inline(always)]
fn locked(c: &CpuSlab) -> bool {
    #[cfg(test)]
    if MUTATION_NO_TRYLOCK.load(Relaxed) {
        return false;
    }
    c.sheaf_lock.load(Relaxed) != 0
}
