//! The rcu_free sheaf (Linux 6.18's `__kfree_rcu_sheaf` and `rcu_free_sheaf`, mm/slub.c; the
//! same in 7.3): kfree_rcu() of an object of a cache with sheaves puts it in the CPU's
//! `rcu_free` sheaf instead of the batched kfree_rcu's pages; a full rcu_free sheaf goes
//! whole to call_rcu, and after the grace period it returns to its node's barn as a full
//! sheaf (its objects then serve allocations without touching a slab), or, the barn full,
//! is flushed to the slabs.
//!
//! RCU itself is not here: `kfree_rcu_sheaf` returns the full sheaf for the caller to queue
//! with call_rcu (its rcu_head is at `sheaf + RCU_HEAD_OFFSET`), and the caller's callback
//! runs `rcu_free_sheaf` after the grace period. Host tests stand in a fake grace period.
//!
//! Bypasses, as Linux's kfree_rcu_sheaf (mm/slab_common.c): an object of another node than
//! the CPU's memory node, or not a slab object of this cache, is not taken and not counted
//! (`Bypass`); a cache without sheaves (the partial design, hybrid caches not opted in),
//! a taken trylock, no barn, or no memory for a sheaf counts `free_rcu_sheaf_fail`
//! (`Fail`). Either way the caller gives the object to the batched kfree_rcu, as 7.x's
//! kvfree_call_rcu does.
//!
//! Lock order: the CPU's sheaf trylock, then interrupts off, then the barn lock.

use super::barn::{MAX_EMPTY_SHEAVES, MAX_FULL_SHEAVES};
use super::cache::{Cache, CpuSlab};
use super::placed::PerCpuSlots;
use super::platform::{Platform, OWNER_MARKS};
use super::sheaf::Sheaf;
use super::slab::Slab;
use super::stats::Stat;
use core::sync::atomic::{compiler_fence, Ordering, Ordering::Relaxed};

/// What `kfree_rcu_sheaf` did with an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RcuSheafFree {
    /// In the CPU's rcu_free sheaf, which has room left.
    Queued,
    /// In the rcu_free sheaf, which is now full and detached: the caller queues it with
    /// call_rcu (the rcu_head at this address + `RCU_HEAD_OFFSET`) and runs
    /// `rcu_free_sheaf(address)` after the grace period.
    Full(usize),
    /// Not taken, not counted (another node's object, or not this cache's).
    Bypass,
    /// Not taken, counted as free_rcu_sheaf_fail.
    Fail,
}

impl<P: Platform> Cache<P> {
    /// kfree_rcu() of `obj` through the running CPU's rcu_free sheaf (Linux's
    /// kfree_rcu_sheaf then __kfree_rcu_sheaf).
    pub fn kfree_rcu_sheaf(&self, obj: usize) -> RcuSheafFree {
        let p = &self.plat;
        let desc = p.owner_fast(obj);
        if desc < OWNER_MARKS || Slab(desc).cache_id(p) != self.id() {
            return RcuSheafFree::Bypass;
        }
        let c = self.cpu_slab();
        let (node, _) = Slab(desc).node_objects(p);
        if node.index() != c.home.load(Relaxed) {
            return RcuSheafFree::Bypass;
        }
        if self.sheaf_capacity == 0 || c.sheaf_lock.load(Relaxed) != 0 {
            if self.sheaf_capacity != 0 {
                p.cpu_inc(c.stats.counter(Stat::SheafTrylockFail));
            }
            p.cpu_inc(c.stats.counter(Stat::FreeRcuSheafFail));
            return RcuSheafFree::Fail;
        }
        c.sheaf_lock.store(1, Relaxed);
        compiler_fence(Ordering::SeqCst);
        let mut sheaf = c.rcu_free.load(Relaxed);
        if sheaf == 0 {
            sheaf = self.new_rcu_free(c);
            if sheaf == 0 {
                compiler_fence(Ordering::SeqCst);
                c.sheaf_lock.store(0, Relaxed);
                p.cpu_inc(c.stats.counter(Stat::FreeRcuSheafFail));
                return RcuSheafFree::Fail;
            }
        }
        let s = Sheaf(sheaf);
        s.push(p, obj);
        let out = if s.size(p) < self.sheaf_capacity {
            RcuSheafFree::Queued
        } else {
            c.rcu_free.store(0, Relaxed);
            s.prepare_rcu(p, self.id());
            RcuSheafFree::Full(sheaf)
        };
        compiler_fence(Ordering::SeqCst);
        c.sheaf_lock.store(0, Relaxed);
        p.cpu_inc(c.stats.counter(Stat::FreeRcuSheaf));
        out
    }

    /// An empty sheaf for the rcu_free slot (trylock held): the spare if it is empty, else
    /// an empty one from the CPU's node's barn, else a new one; 0 when there is no barn or
    /// no memory.
    #[cold]
    #[inline(never)]
    fn new_rcu_free(&self, c: &CpuSlab) -> usize {
        let p = &self.plat;
        let irq = p.irq_save();
        let spare = c.spare.load(Relaxed);
        let got = if spare != 0 && Sheaf(spare).size(p) == 0 {
            c.spare.store(0, Relaxed);
            spare
        } else if let Some(barn) = self
            .barns
            .get(c.cpu_node.load(Relaxed))
            .filter(|b| b.exists)
        {
            let empty = if barn.nr_empty() == 0 {
                None
            } else {
                p.with_lock(&barn.lock, || barn.pop_empty(p))
            };
            match empty {
                Some(e) => e.0,
                None => match p.alloc_block(super::sheaf::sheaf_bytes(self.sheaf_capacity)) {
                    Some(block) => {
                        Sheaf(block).init(p, self.sheaf_capacity);
                        c.stats.inc(Stat::SheafAlloc);
                        block
                    }
                    None => 0,
                },
            }
        } else {
            0
        };
        c.rcu_free.store(got, Relaxed);
        p.irq_restore(irq);
        got
    }

    /// After the grace period of a sheaf `kfree_rcu_sheaf` returned as `Full` (or
    /// `take_rcu_free` detached): to its node's barn as a full sheaf while the barn holds
    /// fewer than MAX_FULL_SHEAVES (barn_put), else flushed to the slabs (barn_put_fail)
    /// and kept as an empty sheaf, or freed when the barn has its MAX_EMPTY_SHEAVES.
    /// Counters go to the running CPU, whose node's barn takes it: the callback runs on the
    /// CPU that queued the sheaf (RCU's rule here), the CPU that filled it (Linux records
    /// that CPU's node in sheaf->node).
    pub fn rcu_free_sheaf(&self, sheaf: usize) {
        let p = &self.plat;
        let s = Sheaf(sheaf);
        debug_assert_eq!(
            s.rcu_owner(p),
            self.id(),
            "an rcu_free sheaf of another cache"
        );
        s.finish_rcu(p, self.sheaf_capacity);
        let irq = p.irq_save();
        let c = self.cpu_slab();
        let barn = self
            .barns
            .get(c.cpu_node.load(Relaxed))
            .filter(|b| b.exists);
        if let Some(b) = barn {
            if s.size(p) != 0 && barn_has_room(b.nr_full(), MAX_FULL_SHEAVES) {
                c.stats.inc(Stat::BarnPut);
                p.with_lock(&b.lock, || b.push_full(p, s));
                p.irq_restore(irq);
                return;
            }
        }
        if s.size(p) != 0 {
            c.stats.inc(Stat::BarnPutFail);
            self.flush_sheaf(c, s);
        }
        match barn {
            Some(b) if barn_has_room(b.nr_empty(), MAX_EMPTY_SHEAVES) => {
                p.with_lock(&b.lock, || b.push_empty(p, s));
            }
            _ => {
                p.free_block(s.0, super::sheaf::sheaf_bytes(self.sheaf_capacity));
                c.stats.inc(Stat::SheafFree);
            }
        }
        p.irq_restore(irq);
    }

    /// Detaches the running CPU's partly filled rcu_free sheaf (Linux's flush_rcu_sheaf,
    /// run by kvfree_rcu_barrier and cache destruction): the caller queues it with call_rcu
    /// and runs `rcu_free_sheaf` after the grace period. None when there is none, it is
    /// empty, or an interrupted owner holds the trylock.
    pub fn take_rcu_free(&self) -> Option<usize> {
        let p = &self.plat;
        let irq = p.irq_save();
        let c = self.cpu_slab();
        let sheaf = c.rcu_free.load(Relaxed);
        let out = if sheaf != 0 && c.sheaf_lock.load(Relaxed) == 0 && Sheaf(sheaf).size(p) != 0 {
            c.rcu_free.store(0, Relaxed);
            Sheaf(sheaf).prepare_rcu(p, self.id());
            Some(sheaf)
        } else {
            None
        };
        p.irq_restore(irq);
        out
    }

    /// Objects in the rcu_free sheaves not yet handed to call_rcu, over every CPU.
    pub fn rcu_free_pending(&self) -> usize {
        self.cpus
            .iter()
            .map(|c| match c.rcu_free.load(Relaxed) {
                0 => 0,
                s => Sheaf(s).size(&self.plat),
            })
            .sum()
    }
}

/// The id of the cache whose `kfree_rcu_sheaf` or `take_rcu_free` gave out `sheaf` (for
/// the call_rcu callback to find its cache, as Linux's sheaf->cache).
pub fn rcu_sheaf_owner<P: Platform>(p: &P, sheaf: usize) -> usize {
    Sheaf(sheaf).rcu_owner(p)
}

/// Whether a barn list of `held` sheaves takes one more (checked outside the lock, as
/// Linux's data_race reads; a race may go one over, which Linux calls harmless).
fn barn_has_room(held: usize, max: usize) -> bool {
    #[cfg(test)]
    if MUTATION_BARN_UNBOUNDED.load(Relaxed) {
        return true;
    }
    held < max
}

/// Test-only mutation: rcu_free_sheaf ignores the barn's bounds.
#[cfg(test)]
pub(crate) static MUTATION_BARN_UNBOUNDED: core::sync::atomic::AtomicBool =
    core::sync::atomic::AtomicBool::new(false);
