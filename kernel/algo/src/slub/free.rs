//! The free slow path (Linux's __slab_free) and the ways a CPU lets go of slabs:
//! deactivating its active slab, unfreezing its partial list, discarding empty slabs.
//!
//! An object always goes back to its own slab, whichever CPU frees it: a frozen slab takes it
//! with one compare-and-swap; a full slab is frozen onto the freeing CPU's partial list (or,
//! without CPU partials, put on its node's partial list under list_lock); a slab that becomes
//! empty is discarded under list_lock once the node already keeps min_partial partial slabs.

use super::cache::{Cache, CpuSlab};
use super::freelist::{encode, free_transition, FreeAction, SlabWord};
use super::platform::Platform;
use super::slab::{Slab, LIST_FULL, LIST_NONE, LIST_PARTIAL};
use super::stats::{ErrorKind, Stat};
use core::sync::atomic::Ordering::Relaxed;

impl<P: Platform> Cache<P> {
    /// Finds and checks the slab of `obj`: it must be a slab page of this cache, at an object
    /// boundary. Returns the slab and the object's byte offset in it.
    pub(crate) fn slab_of(&self, obj: usize) -> Result<(Slab, usize), ErrorKind> {
        let p = &self.plat;
        let desc = p.owner(obj);
        if desc == 0 || desc & 7 != 0 {
            return Err(ErrorKind::NotSlab);
        }
        let slab = Slab(desc);
        if slab.cache_id(p) != self.id() {
            return Err(ErrorKind::WrongCache);
        }
        let off = obj.wrapping_sub(slab.base(p));
        // The multiply-rotate gives the object index for offsets on a boundary and a huge
        // number for any other offset (no division).
        if self.object_index(off) >= slab.objects(p) {
            return Err(ErrorKind::NotObjectStart);
        }
        Ok((slab, off))
    }

    /// The free slow path's lock-free cases, run with interrupts on (Linux's __slab_free
    /// without list_lock): `obj` goes to a slab that is frozen (some CPU's active or partial
    /// slab, this CPU's active slab excluded), partial and stays partial, or full (frozen
    /// onto this CPU's partial list), with one compare-and-swap of the slab's state word.
    /// Nothing of the running CPU's `CpuSlab` changes except counters, bumped with `cpu_inc`
    /// (one instruction, whole against an interrupt), so interrupts need not be masked and
    /// the tid need not move, except around `put_cpu_partial` for a full slab. Returns false,
    /// having changed nothing but the free pointer inside the object being freed, when the
    /// free needs list_lock (a slab that becomes empty, or a full one without CPU partials),
    /// is a misuse, is to this CPU's active slab, or is to a debug cache: the caller then
    /// takes `free_slow` with interrupts off.
    /// `slab` and `off` are `slab_of(obj)`'s.
    #[inline]
    pub(crate) fn free_lockless(&self, obj: usize, slab: Slab, off: usize) -> bool {
        if self.debug_any {
            return false;
        }
        let p = &self.plat;
        let c = self.cpu_slab();
        // This CPU's active slab (its freelist head is the double-free check) takes the
        // full slow path; an interrupt that makes `slab` active afterwards is harmless, since
        // a frozen slab's state word takes frees from any CPU.
        if c.slab.load(Relaxed) == slab.0 {
            return false;
        }
        let base = slab.base(p);
        let fp = obj + self.layout.fp_offset;
        loop {
            let old = slab.state(p);
            if old.free_off() == Some(off) {
                return false; // a double free: reported by the slow path
            }
            let (new, action) = free_transition(old, off, self.has_cpu_partial());
            if matches!(
                action,
                FreeAction::AddPartialLocked | FreeAction::EmptyLocked
            ) {
                return false;
            }
            p.store(
                fp,
                encode(old.free_off().map_or(0, |o| base + o), self.random, fp),
            );
            if slab.cas_state(p, old, new) {
                match action {
                    FreeAction::Frozen => p.cpu_inc(c.stats.counter(Stat::FreeFrozen)),
                    FreeAction::FreezeToCpuPartial => {
                        // The compare-and-swap froze the full slab for this CPU; only
                        // putting it on the CPU partial list needs interrupts off (Linux:
                        // put_cpu_partial under local_lock_irqsave). Meanwhile the slab is
                        // frozen and on no list: frees still reach it, allocations do not.
                        let irq = p.irq_save();
                        let c = self.cpu_slab();
                        self.put_cpu_partial(c, slab);
                        c.stats.inc(Stat::CpuPartialFree);
                        c.bump_tid();
                        p.irq_restore(irq);
                    }
                    _ => {}
                }
                p.cpu_inc(c.stats.counter(Stat::FreeSlowpath));
                return true;
            }
            p.cpu_inc(c.stats.counter(Stat::CmpxchgDoubleFail));
        }
    }

    /// Linux's __slab_free for one object; returns the misuse found, if any (the free is
    /// then dropped and nothing changed).
    /// `found` is `slab_of(obj)`'s answer.
    pub(crate) fn free_slow(
        &self,
        c: &CpuSlab,
        obj: usize,
        found: Result<(Slab, usize), ErrorKind>,
    ) -> Option<ErrorKind> {
        self.free_slow_counted(c, obj, found, true)
    }

    /// `free_slow`; `user`: a caller's free (counted as free_slowpath), not a sheaf's
    /// object going back to its slab (counted by the flush as sheaf_flush).
    pub(crate) fn free_slow_counted(
        &self,
        c: &CpuSlab,
        obj: usize,
        found: Result<(Slab, usize), ErrorKind>,
        user: bool,
    ) -> Option<ErrorKind> {
        let p = &self.plat;
        let (slab, off) = match found {
            Ok(found) => found,
            Err(kind) => return Some(kind),
        };
        if obj == c.freelist.load(Relaxed) {
            return Some(ErrorKind::DoubleFree);
        }
        if self.debug_any {
            if let Err(kind) = self.debug_free_checks(obj) {
                return Some(kind);
            }
        }
        let base = slab.base(p);
        let fp = obj + self.layout.fp_offset;
        let n = &self.nodes[slab.node(p).index()];
        let mut discard = false;
        let action = loop {
            let old = slab.state(p);
            if old.free_off() == Some(off) {
                return Some(ErrorKind::DoubleFree);
            }
            let (new, action) = free_transition(old, off, self.has_cpu_partial());
            p.store(
                fp,
                encode(old.free_off().map_or(0, |o| base + o), self.random, fp),
            );
            let done = match action {
                FreeAction::Frozen | FreeAction::StillPartial | FreeAction::FreezeToCpuPartial => {
                    slab.cas_state(p, old, new)
                }
                FreeAction::AddPartialLocked | FreeAction::EmptyLocked => {
                    p.with_lock(&n.list_lock, || {
                        if !slab.cas_state(p, old, new) {
                            return false;
                        }
                        let on = slab.list(p);
                        if action == FreeAction::EmptyLocked && n.nr_partial() >= self.min_partial {
                            if on == LIST_PARTIAL {
                                n.partial.remove(p, slab);
                                c.stats.inc(Stat::FreeRemovePartial);
                            } else if on == LIST_FULL {
                                n.full.remove(p, slab);
                            }
                            discard = true;
                        } else if on != LIST_PARTIAL {
                            if on == LIST_FULL {
                                n.full.remove(p, slab);
                            }
                            n.partial.push(p, slab, true, LIST_PARTIAL);
                            c.stats.inc(Stat::FreeAddPartial);
                        }
                        true
                    })
                }
            };
            if done {
                break action;
            }
            c.stats.inc(Stat::CmpxchgDoubleFail);
        };
        if user {
            c.stats.inc(Stat::FreeSlowpath);
        }
        match action {
            FreeAction::Frozen => c.stats.inc(Stat::FreeFrozen),
            FreeAction::FreezeToCpuPartial => {
                self.put_cpu_partial(c, slab);
                c.stats.inc(Stat::CpuPartialFree);
            }
            _ => {}
        }
        if discard {
            c.stats.inc(Stat::FreeSlab);
            self.discard_slab(slab);
        }
        None
    }

    /// Linux's put_cpu_partial with drain: a full CPU partial list is first unfrozen to the
    /// node lists, then `slab` (frozen) becomes its head.
    pub(crate) fn put_cpu_partial(&self, c: &CpuSlab, slab: Slab) {
        let p = &self.plat;
        let old = c.partial.load(Relaxed);
        let mut drain = 0;
        if old != 0 && c.partial_slabs.load(Relaxed) >= self.cpu_partial_slabs {
            drain = old;
            c.partial.store(0, Relaxed);
            c.partial_slabs.store(0, Relaxed);
            c.stats.inc(Stat::CpuPartialDrain);
        }
        slab.set_cpu_next(p, c.partial.load(Relaxed));
        c.partial.store(slab.0, Relaxed);
        c.partial_slabs
            .store(c.partial_slabs.load(Relaxed) + 1, Relaxed);
        if drain != 0 {
            self.unfreeze_partials(c, drain);
        }
    }

    /// Linux's __put_partials: unfreezes a chain of CPU partial slabs onto their node lists;
    /// empty ones beyond min_partial are discarded.
    pub(crate) fn unfreeze_partials(&self, c: &CpuSlab, chain: usize) {
        let p = &self.plat;
        let mut next = chain;
        while next != 0 {
            let slab = Slab(next);
            next = slab.cpu_next(p);
            slab.set_cpu_next(p, 0);
            let n = &self.nodes[slab.node(p).index()];
            let discard = p.with_lock(&n.list_lock, || {
                let new = loop {
                    let old = slab.state(p);
                    let new = old.with_frozen(false);
                    if slab.cas_state(p, old, new) {
                        break new;
                    }
                    c.stats.inc(Stat::CmpxchgDoubleFail);
                };
                if new.inuse() == 0 && n.nr_partial() >= self.min_partial {
                    true
                } else {
                    n.partial.push(p, slab, true, LIST_PARTIAL);
                    c.stats.inc(Stat::FreeAddPartial);
                    false
                }
            });
            if discard {
                c.stats.inc(Stat::DeactivateEmpty);
                c.stats.inc(Stat::FreeSlab);
                self.discard_slab(slab);
            }
        }
    }

    /// Linux's deactivate_slab for the CPU's active slab: its private freelist goes back to
    /// the slab, the slab is unfrozen and lands on its node's partial list (head, or tail
    /// when remote frees came in), is discarded if empty and the node has min_partial
    /// partials, or is left full on no list (the full list for debug caches).
    pub(crate) fn deactivate_cpu_slab(&self, c: &CpuSlab) {
        let p = &self.plat;
        let slab = Slab(c.slab.load(Relaxed));
        // One of the two is always 0 (debug caches use the second).
        let fl = c.freelist.load(Relaxed) | c.debug_freelist.load(Relaxed);
        self.clear_cpu_slab(c);
        if slab.0 == 0 {
            return;
        }
        // Count the private freelist and find its tail.
        let (mut count, mut tail) = (0usize, 0usize);
        let mut obj = fl;
        while obj != 0 {
            count += 1;
            tail = obj;
            let fp = obj + self.layout.fp_offset;
            obj = super::freelist::decode(p.load(fp), self.random, fp);
        }
        let base = slab.base(p);
        let to_tail = slab.state(p).has_free();
        if to_tail {
            c.stats.inc(Stat::DeactivateRemoteFrees);
        }
        let n = &self.nodes[slab.node(p).index()];
        enum Mode {
            Free,
            Partial,
            Full,
        }
        let mode = loop {
            let old = slab.state(p);
            if count > 0 {
                let fp = tail + self.layout.fp_offset;
                p.store(
                    fp,
                    encode(old.free_off().map_or(0, |o| base + o), self.random, fp),
                );
            }
            let free_off = if count > 0 {
                Some(fl - base)
            } else {
                old.free_off()
            };
            let new = SlabWord::new(free_off, old.inuse() - count, false);
            let done = if new.inuse() == 0 && n.nr_partial() >= self.min_partial {
                slab.cas_state(p, old, new).then_some(Mode::Free)
            } else if new.has_free() {
                p.with_lock(&n.list_lock, || {
                    if !slab.cas_state(p, old, new) {
                        return None;
                    }
                    n.partial.push(p, slab, to_tail, LIST_PARTIAL);
                    Some(Mode::Partial)
                })
            } else if self.debug_any {
                p.with_lock(&n.list_lock, || {
                    if !slab.cas_state(p, old, new) {
                        return None;
                    }
                    n.full.push(p, slab, true, LIST_FULL);
                    Some(Mode::Full)
                })
            } else {
                slab.cas_state(p, old, new).then_some(Mode::Full)
            };
            if let Some(mode) = done {
                break mode;
            }
            c.stats.inc(Stat::CmpxchgDoubleFail);
        };
        match mode {
            Mode::Free => {
                c.stats.inc(Stat::DeactivateEmpty);
                c.stats.inc(Stat::FreeSlab);
                self.discard_slab(slab);
            }
            Mode::Partial => c.stats.inc(if to_tail {
                Stat::DeactivateToTail
            } else {
                Stat::DeactivateToHead
            }),
            Mode::Full => c.stats.inc(Stat::DeactivateFull),
        }
    }

    /// Gives an empty slab (on no list, not frozen) back to the page allocator.
    pub(crate) fn discard_slab(&self, slab: Slab) {
        let p = &self.plat;
        debug_assert_eq!(slab.list(p), LIST_NONE);
        let (base, order, objects) = (slab.base(p), slab.order(p), slab.objects(p));
        let n = &self.nodes[slab.node(p).index()];
        n.nr_slabs.fetch_sub(1, Relaxed);
        n.total_objects.fetch_sub(objects, Relaxed);
        n.nr_pages.fetch_sub(1 << order, Relaxed);
        p.set_owner(base, 1 << order, 0);
        p.free_pages(base, order);
        p.free_desc(slab.0);
    }

    /// Empties the running CPU's slabs into the node lists (Linux's flush_slab +
    /// put_partials for this CPU). Run it on each CPU through `flush_all`.
    pub fn flush_local(&self) {
        let irq = self.plat.irq_save();
        let c = self.cpu_slab();
        if self.sheaf_capacity != 0 {
            self.flush_local_sheaves(c);
        }
        self.deactivate_cpu_slab(c);
        let chain = c.partial.load(Relaxed);
        c.partial.store(0, Relaxed);
        c.partial_slabs.store(0, Relaxed);
        self.unfreeze_partials(c, chain);
        c.bump_tid();
        self.plat.irq_restore(irq);
    }

    /// Flushes every CPU's slabs, each on its own CPU.
    pub fn flush_all(&self) {
        self.plat.on_each_cpu(&|| self.flush_local());
    }
}
