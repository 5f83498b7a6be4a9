//! The sheaves design's bulk paths, as Linux 7.3.4's mm/slub.c has them (Debian's
//! linux-source-7.3 7.3.4-1~bpo13+1). kmem_cache_alloc_bulk_noprof copies whole batches out
//! of the CPU's sheaves (alloc_from_pcs_bulk: main, a non-empty spare, a full sheaf of the
//! barn for the empty main) and, once those are empty, takes the rest straight from the
//! slabs (__kmem_cache_alloc_bulk -> refill_objects: the node's partial slabs under its
//! list_lock, other nodes', new slabs), refilling no sheaf: "Once full sheaves in barn are
//! depleted, let the bulk allocation continue from slab pages, otherwise we would just be
//! copying arrays of pointers twice." kmem_cache_free_bulk (free_to_pcs_bulk) sets aside the
//! objects of other nodes, copies the local ones into main in batches (__free_to_pcs_batch:
//! room from an empty spare, an empty sheaf of the barn, or the barn taking the full main
//! for an empty one; never a new sheaf, never a flush) and frees whatever found no room, then
//! the other nodes' objects, to their slabs (__kmem_cache_free_bulk).
//!
//! A hybrid cache (Linux 6.18) does the same with the sheaves, and its slab part goes through
//! the per-CPU slab (6.18's __kmem_cache_alloc_bulk; hybrid.rs).
//!
//! Differences kept: numalab's `alloc_bulk` returns how many it got (Linux frees all and
//! returns false when short); the slab part frees object by object (`free_slow_entry`), not
//! by Linux's detached freelists of one slab each; with `slub.checks=full` every object is
//! checked as the single-object free checks it (slab owner, object boundary, the last object
//! pushed), where Linux's bulk path runs its free hooks only; objects are handled 64 at a
//! time (a mask per chunk), so with more than 64 objects remote ones are freed after each
//! chunk rather than after all.

use super::barn::MAX_FULL_SHEAVES;
use super::cache::{Cache, CpuSlab};
use super::platform::{Platform, OWNER_MARKS};
use super::sheaf::Sheaf;
use super::slab::Slab;
use super::stats::{ErrorKind, Stat};
use core::sync::atomic::Ordering::Relaxed;

/// Objects one free chunk handles (the bits of its masks).
const CHUNK: usize = 64;

impl<P: Platform> Cache<P> {
    /// kmem_cache_alloc_bulk_noprof for a cache with sheaves: alloc_from_pcs_bulk, then
    /// __kmem_cache_alloc_bulk for the rest. Fills `out` from the front; returns how many.
    pub(crate) fn sheaf_alloc_bulk(&self, out: &mut [usize]) -> usize {
        let p = &self.plat;
        let want = out.len();
        let mut done = 0;
        // alloc_from_pcs_bulk: one batch per sheaf, each under the CPU's trylock.
        while done < want {
            let c = self.cpu_slab();
            if !self.sheaf_trylock(c) {
                break;
            }
            let mut main = Sheaf(c.main.load(Relaxed));
            if main.size(p) == 0 {
                let irq = p.irq_save();
                let got = self.bulk_replace_empty_main(c);
                p.irq_restore(irq);
                if !got {
                    Self::sheaf_unlock(c);
                    break;
                }
                main = Sheaf(c.main.load(Relaxed));
            }
            let size = main.size(p);
            let batch = (want - done).min(size);
            let base = size - batch;
            for (i, slot) in out[done..done + batch].iter_mut().enumerate() {
                *slot = p.load(main.slot(base + i));
            }
            main.set_size(p, base);
            Self::sheaf_unlock(c);
            done += batch;
        }
        let irq = p.irq_save();
        let c = self.cpu_slab();
        c.stats.add(Stat::AllocCpuSheaf, done as u64);
        if done < want {
            // __kmem_cache_alloc_bulk: refill_objects (7.x), the per-CPU slab (hybrid, 6.18).
            let rest = &mut out[done..];
            let mut k = 0;
            let mut put = |obj| {
                rest[k] = obj;
                k += 1;
            };
            let got = if self.hybrid {
                self.cpu_slab_take(c, want - done, &mut put)
            } else {
                let got = self.refill_objects(c, want - done, &mut put);
                c.stats.add(Stat::AllocSlowpath, got as u64);
                got
            };
            done += got;
        }
        c.stats.add(Stat::AllocBulk, done as u64);
        p.irq_restore(irq);
        done
    }

    /// The empty main's exchange in alloc_from_pcs_bulk (interrupts off, trylock held): a
    /// non-empty spare, else a full sheaf of the barn (barn_replace_empty_sheaf, which takes
    /// the empty main whatever the barn holds: the number of sheaves does not change). False:
    /// the caller goes to the slabs, no sheaf refilled.
    fn bulk_replace_empty_main(&self, c: &CpuSlab) -> bool {
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
                barn.push_empty(p, main);
                Some(full)
            })
        };
        match full {
            Some(full) => {
                c.main.store(full.0, Relaxed);
                c.stats.inc(Stat::BarnGet);
                true
            }
            None => {
                c.stats.inc(Stat::BarnGetFail);
                false
            }
        }
    }

    /// kmem_cache_free_bulk for a cache with sheaves (free_to_pcs_bulk), `CHUNK` objects at
    /// a time.
    pub(crate) fn sheaf_free_bulk(&self, objs: &[usize]) {
        for chunk in objs.chunks(CHUNK) {
            self.sheaf_free_chunk(chunk);
        }
        let irq = self.plat.irq_save();
        self.cpu_slab().stats.add(Stat::FreeBulk, objs.len() as u64);
        self.plat.irq_restore(irq);
    }

    /// free_to_pcs_bulk on at most `CHUNK` objects.
    fn sheaf_free_chunk(&self, objs: &[usize]) {
        let p = &self.plat;
        let full = self.full_checks();
        let c = self.cpu_slab();
        let home = c.home.load(Relaxed);
        // can_free_to_pcs: an object of this cache on a slab of the CPU's node (and, with
        // full checks, at an object boundary); every other goes to the slab path, which
        // reports what is not an object of this cache.
        let mut local = 0u64;
        for (i, &obj) in objs.iter().enumerate() {
            let desc = p.owner_fast(obj);
            if desc < OWNER_MARKS || Slab(desc).cache_id(p) != self.id() {
                continue;
            }
            let slab = Slab(desc);
            let (node, objects) = slab.node_objects(p);
            if (full && self.object_index(obj.wrapping_sub(slab.base(p))) >= objects)
                || node.index() != home
            {
                continue;
            }
            local |= 1 << i;
        }
        let mut pushed = 0u64;
        let mut doubles = 0u64;
        // __free_to_pcs_batch, batch after batch while a sheaf has room.
        if local != 0 && self.sheaf_trylock(c) {
            let mut main = Sheaf(c.main.load(Relaxed));
            let mut size = main.size(p);
            let mut rest = local;
            while rest != 0 {
                if size == main.capacity(p) {
                    main.set_size(p, size);
                    let irq = p.irq_save();
                    let room = self.bulk_replace_full_main(c);
                    p.irq_restore(irq);
                    if !room {
                        break;
                    }
                    main = Sheaf(c.main.load(Relaxed));
                    size = main.size(p);
                }
                let i = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                let obj = objs[i];
                if full && main.last_pushed(p, size) == obj {
                    doubles |= 1 << i;
                    continue;
                }
                p.store(main.slot(size), obj);
                size += 1;
                pushed |= 1 << i;
            }
            main.set_size(p, size);
            Self::sheaf_unlock(c);
        }
        if pushed != 0 {
            let irq = p.irq_save();
            self.cpu_slab()
                .stats
                .add(Stat::FreeCpuSheaf, u64::from(pushed.count_ones()));
            p.irq_restore(irq);
        }
        let all = if objs.len() == CHUNK {
            u64::MAX
        } else {
            (1u64 << objs.len()) - 1
        };
        // __kmem_cache_free_bulk: the local objects that found no room, then the others
        // ("Processing remote objects last decreases the chances of cpu migration").
        for mask in [local & !pushed & !doubles, all & !local] {
            let mut m = mask;
            while m != 0 {
                let i = m.trailing_zeros() as usize;
                m &= m - 1;
                self.free_slow_entry(objs[i], false);
            }
        }
        let mut m = doubles;
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            self.report_error(objs[i], ErrorKind::DoubleFree, None);
        }
    }

    /// The full main's exchange in __free_to_pcs_batch (interrupts off, trylock held): with
    /// no spare, an empty sheaf of the barn (the full main becomes the spare); a spare with
    /// room; the barn taking the full main for an empty one (barn_replace_full_sheaf: not
    /// when it holds MAX_FULL_SHEAVES or no empty sheaf). No new sheaf and no flush, unlike
    /// the single free: false sends the rest to the slabs.
    fn bulk_replace_full_main(&self, c: &CpuSlab) -> bool {
        let p = &self.plat;
        let Some((main, fresh)) = self.real_main(c) else {
            return false;
        };
        if fresh {
            // numalab's bootstrap sheaf gave way to a real one (Linux allocates it when the
            // cache is created).
            return true;
        }
        let Some(barn) = self.barn_of(c) else {
            return false;
        };
        let spare = c.spare.load(Relaxed);
        if spare == 0 {
            let empty = if barn.nr_empty() == 0 {
                None
            } else {
                p.with_lock(&barn.lock, || barn.pop_empty(p))
            };
            let Some(e) = empty else {
                return false;
            };
            c.spare.store(main.0, Relaxed);
            c.main.store(e.0, Relaxed);
            return true;
        }
        if Sheaf(spare).size(p) < self.sheaf_capacity {
            c.spare.store(main.0, Relaxed);
            c.main.store(spare, Relaxed);
            c.stats.inc(Stat::SheafSwap);
            return true;
        }
        let empty = if barn.nr_full() >= MAX_FULL_SHEAVES || barn.nr_empty() == 0 {
            None
        } else {
            p.with_lock(&barn.lock, || {
                let e = barn.pop_empty(p)?;
                barn.push_full(p, main);
                Some(e)
            })
        };
        match empty {
            Some(e) => {
                c.main.store(e.0, Relaxed);
                c.stats.inc(Stat::BarnPut);
                true
            }
            None => {
                c.stats.inc(Stat::BarnPutFail);
                false
            }
        }
    }
}
