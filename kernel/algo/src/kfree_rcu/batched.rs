//! Linux 6.1's batched kfree_rcu (kernel/rcu/tree.c: struct kfree_rcu_cpu and its work):
//! each CPU records kvfree_rcu() pointers in page-sized blocks (`kvfree_rcu_bulk_data`:
//! a count, a link, then KVFREE_BULK_MAX_ENTR pointers), one chain per channel (slab
//! objects, vmalloc areas); an object whose block could not be had joins a list through its
//! own rcu_head (channel 3). The monitor, KFREE_DRAIN_JIFFIES after the first queued object
//! (one jiffy once a block's worth waits), moves the channels to one of the CPU's two batch
//! slots that is free and asks for its work after a grace period; the work frees the slab
//! blocks with one kfree_bulk each, the vmalloc pointers one by one, the list objects one
//! by one, and keeps up to `rcu_min_cached_objs` (5) emptied blocks for the next batches.
//!
//! Only the state and its rules are here: `KfreeRcuCpu` is what Linux keeps under
//! krcp->lock (the caller holds its lock, interrupts off), the memory and the frees go
//! through [`Env`], and the grace period is the caller's: `monitor` says which batch slots
//! to hand to call_rcu, and `detach` then `free_detached` are kfree_rcu_work after it.

/// Linux 6.1's KFREE_DRAIN_JIFFIES: 5 * HZ (`drain_ticks` scales it to the caller's tick).
pub const KFREE_DRAIN_SECONDS: u64 = 5;
/// Batch slots per CPU (KFREE_N_BATCHES).
pub const KFREE_N_BATCHES: usize = 2;
/// Block channels: 0 slab objects, 1 vmalloc areas (FREE_N_CHANNELS).
pub const FREE_N_CHANNELS: usize = 2;
/// Bytes of a block (one page).
pub const BLOCK_BYTES: usize = 4096;
/// Pointers per block: a page less the two header words (KVFREE_BULK_MAX_ENTR, 510).
pub const KVFREE_BULK_MAX_ENTR: usize = (BLOCK_BYTES - 16) / 8;
/// Emptied blocks a CPU keeps (rcu_min_cached_objs).
pub const RCU_MIN_CACHED_OBJS: usize = 5;

/// What the batched kfree_rcu needs from its kernel: block pages, word access to them and
/// to rcu_heads, and the frees.
pub trait Env {
    /// A zeroed page for a block, or None (GFP_NOWAIT: never waits).
    fn alloc_block(&mut self) -> Option<usize>;
    fn free_block(&mut self, block: usize);
    fn load(&self, addr: usize) -> usize;
    fn store(&mut self, addr: usize, value: usize);
    /// Whether `ptr` is a vmalloc address (channel 1).
    fn is_vmalloc(&self, ptr: usize) -> bool;
    /// kfree_bulk of `nr` slab objects, the pointers at `block + 16`.
    fn kfree_bulk(&mut self, block: usize, nr: usize);
    /// kvfree of one pointer (vfree or kfree).
    fn kvfree(&mut self, ptr: usize);
}

/// Counters of one CPU's batched kfree_rcu.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchStats {
    /// Objects recorded in a block.
    pub in_blocks: u64,
    /// Objects put on the rcu_head list (no block to be had).
    pub in_list: u64,
    /// Headless objects with no block: the caller must synchronize_rcu and free inline.
    pub inline: u64,
    /// Batches handed to a grace period (queue_rcu_work).
    pub batches: u64,
    /// Blocks taken from the page allocator and given back to it.
    pub blocks_alloc: u64,
    pub blocks_free: u64,
    /// kfree_bulk calls and the objects they freed; single frees.
    pub bulk_calls: u64,
    pub bulk_objects: u64,
    pub single_frees: u64,
    /// The most objects waiting at once (queued, not yet freed) on this CPU.
    pub peak_waiting: u64,
}

/// One batch slot (struct kfree_rcu_cpu_work): what it took from the CPU, waiting for its
/// grace period, then for its work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Batch {
    pub bulk: [usize; FREE_N_CHANNELS],
    pub head: usize,
    /// Objects in it.
    pub objects: u64,
}

impl Batch {
    fn busy(&self) -> bool {
        self.bulk.iter().any(|b| *b != 0) || self.head != 0
    }
}

/// Linux's struct kfree_rcu_cpu, less its lock and works.
#[derive(Debug)]
pub struct KfreeRcuCpu {
    bulk: [usize; FREE_N_CHANNELS],
    head: usize,
    krw: [Batch; KFREE_N_BATCHES],
    /// Objects queued since the last batch (krcp->count).
    count: u64,
    /// Objects queued and not yet freed (all slots included).
    waiting: u64,
    /// The tick the monitor runs at, if armed.
    monitor_at: Option<u64>,
    drain_ticks: u64,
    cache: [usize; RCU_MIN_CACHED_OBJS],
    nr_cache: usize,
    pub stats: BatchStats,
}

/// What `queue` did with an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Queued {
    Block,
    List,
    /// Headless, no block: synchronize_rcu then kvfree it inline, without the lock.
    Inline,
}

// Block layout: nr_records, next, records[].
const B_NR: usize = 0;
const B_NEXT: usize = 8;
const B_RECORDS: usize = 16;

impl KfreeRcuCpu {
    /// `drain_ticks`: KFREE_DRAIN_JIFFIES in the caller's ticks (5 s of them).
    pub const fn new(drain_ticks: u64) -> Self {
        KfreeRcuCpu {
            bulk: [0; FREE_N_CHANNELS],
            head: 0,
            krw: [Batch {
                bulk: [0; FREE_N_CHANNELS],
                head: 0,
                objects: 0,
            }; KFREE_N_BATCHES],
            count: 0,
            waiting: 0,
            monitor_at: None,
            drain_ticks,
            cache: [0; RCU_MIN_CACHED_OBJS],
            nr_cache: 0,
            stats: BatchStats {
                in_blocks: 0,
                in_list: 0,
                inline: 0,
                batches: 0,
                blocks_alloc: 0,
                blocks_free: 0,
                bulk_calls: 0,
                bulk_objects: 0,
                single_frees: 0,
                peak_waiting: 0,
            },
        }
    }

    /// Sets the monitor's delay (KFREE_DRAIN_JIFFIES in the caller's ticks): a per-CPU
    /// state built before the clock's rate is known gets it here.
    pub fn set_drain_ticks(&mut self, ticks: u64) {
        self.drain_ticks = ticks;
    }

    /// Objects queued and not yet freed.
    pub fn waiting(&self) -> u64 {
        self.waiting
    }

    /// The tick the monitor is due at, if armed.
    pub fn monitor_at(&self) -> Option<u64> {
        self.monitor_at
    }

    /// Emptied blocks kept.
    pub fn cached_blocks(&self) -> usize {
        self.nr_cache
    }

    /// kvfree_call_rcu: `ptr` with its rcu_head at `head` (two words: next, then the
    /// offset of the head in the object, Linux's `func`), or headless (`head` None: the
    /// one-argument kvfree_rcu, which may take a page; the two-argument form only uses the
    /// blocks kept). `now`: the current tick, for the monitor.
    pub fn queue<E: Env>(
        &mut self,
        env: &mut E,
        ptr: usize,
        head: Option<usize>,
        now: u64,
    ) -> Queued {
        let how = if self.add_ptr_to_bulk(env, ptr, head.is_none()) {
            self.stats.in_blocks += 1;
            Queued::Block
        } else if let Some(h) = head {
            env.store(h, self.head);
            env.store(h + 8, h - ptr);
            self.head = h;
            self.stats.in_list += 1;
            Queued::List
        } else {
            self.stats.inline += 1;
            return Queued::Inline;
        };
        self.count += 1;
        self.waiting += 1;
        self.stats.peak_waiting = self.stats.peak_waiting.max(self.waiting);
        self.schedule_monitor(now);
        how
    }

    fn add_ptr_to_bulk<E: Env>(&mut self, env: &mut E, ptr: usize, can_alloc: bool) -> bool {
        let idx = usize::from(env.is_vmalloc(ptr));
        let cur = self.bulk[idx];
        if cur == 0 || env.load(cur + B_NR) == KVFREE_BULK_MAX_ENTR {
            let block = match self.get_cached() {
                Some(b) => b,
                None if can_alloc => match env.alloc_block() {
                    Some(b) => {
                        self.stats.blocks_alloc += 1;
                        b
                    }
                    None => return false,
                },
                None => return false,
            };
            env.store(block + B_NR, 0);
            env.store(block + B_NEXT, cur);
            self.bulk[idx] = block;
        }
        let b = self.bulk[idx];
        let nr = env.load(b + B_NR);
        env.store(b + B_RECORDS + nr * 8, ptr);
        env.store(b + B_NR, nr + 1);
        true
    }

    /// Whether recording `ptr` needs a new block and none is kept: the caller may then drop
    /// its lock, allocate a page and give it with `fill_cache` (Linux's
    /// add_ptr_to_bulk_krc_lock drops krcp->lock around __get_free_page).
    pub fn needs_block<E: Env>(&self, env: &E, ptr: usize) -> bool {
        let cur = self.bulk[usize::from(env.is_vmalloc(ptr))];
        (cur == 0 || env.load(cur + B_NR) == KVFREE_BULK_MAX_ENTR) && self.nr_cache == 0
    }

    fn get_cached(&mut self) -> Option<usize> {
        if self.nr_cache == 0 {
            return None;
        }
        self.nr_cache -= 1;
        Some(self.cache[self.nr_cache])
    }

    /// put_cached_bnode: keeps an emptied block if fewer than RCU_MIN_CACHED_OBJS are kept.
    pub fn put_cached(&mut self, block: usize) -> bool {
        if self.nr_cache >= RCU_MIN_CACHED_OBJS {
            return false;
        }
        self.cache[self.nr_cache] = block;
        self.nr_cache += 1;
        true
    }

    /// Gives kept blocks a caller allocated ahead (fill_page_cache_func), up to the bound;
    /// the ones not kept come back.
    pub fn fill_cache(&mut self, block: usize) -> bool {
        let kept = self.put_cached(block);
        if kept {
            self.stats.blocks_alloc += 1;
        }
        kept
    }

    /// schedule_delayed_monitor_work: one tick once a block's worth waits, else the drain
    /// delay; an armed monitor only moves earlier.
    fn schedule_monitor(&mut self, now: u64) {
        let delay = if self.count >= KVFREE_BULK_MAX_ENTR as u64 {
            1
        } else {
            self.drain_ticks
        };
        let at = now + delay;
        self.monitor_at = Some(self.monitor_at.map_or(at, |t| t.min(at)));
    }

    /// Whether the monitor is due at tick `now`.
    pub fn monitor_due(&self, now: u64) -> bool {
        self.monitor_at.is_some_and(|t| now >= t)
    }

    /// kfree_rcu_monitor: moves the CPU's channels into each free batch slot; returns which
    /// slots now wait for a grace period (the caller queues each with call_rcu). Rearms
    /// itself while something is left (a slot still busy with its previous batch).
    pub fn monitor(&mut self, now: u64) -> [bool; KFREE_N_BATCHES] {
        self.monitor_at = None;
        let mut queued = [false; KFREE_N_BATCHES];
        for (i, krw) in self.krw.iter_mut().enumerate() {
            if krw.busy() || !need_offload(&self.bulk, self.head) {
                continue;
            }
            for j in 0..FREE_N_CHANNELS {
                if krw.bulk[j] == 0 {
                    krw.bulk[j] = self.bulk[j];
                    self.bulk[j] = 0;
                }
            }
            if krw.head == 0 {
                krw.head = self.head;
                self.head = 0;
            }
            krw.objects = self.count;
            self.count = 0;
            queued[i] = true;
            self.stats.batches += 1;
        }
        if need_offload(&self.bulk, self.head) {
            self.schedule_monitor(now);
        }
        queued
    }

    /// kfree_rcu_work's first part (under the lock): takes slot `i`'s batch after its grace
    /// period, leaving the slot free.
    pub fn detach(&mut self, i: usize) -> Batch {
        core::mem::take(&mut self.krw[i])
    }

    /// kfree_rcu_work's second part: frees a detached batch and offers each emptied block
    /// to `put_cached` (Linux frees without krcp->lock and retakes it per block; numalab's
    /// caller holds its per-CPU lock throughout: lock order krcp lock, then SLUB's locks).
    pub fn free_detached<E: Env>(&mut self, env: &mut E, batch: Batch) {
        let mut freed = 0u64;
        for (ch, first) in batch.bulk.iter().enumerate() {
            let mut b = *first;
            while b != 0 {
                let next = env.load(b + B_NEXT);
                let nr = env.load(b + B_NR);
                if ch == 0 {
                    env.kfree_bulk(b, nr);
                    self.stats.bulk_calls += 1;
                    self.stats.bulk_objects += nr as u64;
                } else {
                    for j in 0..nr {
                        let p = env.load(b + B_RECORDS + j * 8);
                        env.kvfree(p);
                        self.stats.single_frees += 1;
                    }
                }
                freed += nr as u64;
                if !self.put_cached(b) {
                    env.free_block(b);
                    self.stats.blocks_free += 1;
                }
                b = next;
            }
        }
        let mut h = batch.head;
        while h != 0 {
            let next = env.load(h);
            let offset = env.load(h + 8);
            env.kvfree(h - offset);
            self.stats.single_frees += 1;
            freed += 1;
            h = next;
        }
        self.waiting -= freed;
    }

    /// Gives every kept block back (drain_page_cache, the shrinker's).
    pub fn drain_cache<E: Env>(&mut self, env: &mut E) -> usize {
        let n = self.nr_cache;
        while let Some(b) = self.get_cached() {
            env.free_block(b);
            self.stats.blocks_free += 1;
        }
        n
    }
}

fn need_offload(bulk: &[usize; FREE_N_CHANNELS], head: usize) -> bool {
    #[cfg(test)]
    if super::tests::MUTATION_IGNORE_LIST.load(core::sync::atomic::Ordering::Relaxed) {
        return bulk.iter().any(|b| *b != 0);
    }
    bulk.iter().any(|b| *b != 0) || head != 0
}
