//! The soak (`--suite soak`, `./qemu-run.sh soak`): every online CPU runs a seeded random mix
//! of allocator operations for `soak.ops` operations (or `soak.seconds`), in `soak.checkpoints`
//! rounds. Page blocks of orders 0..=10 under every policy and node, objects of the soak's
//! shared caches and kmalloc objects of every size class (and large ones), on any node, and
//! vmalloc areas go into a shared table of slots; an operation on a full slot checks and frees
//! what another CPU left there (so objects and pages are freed on other CPUs and nodes), on an
//! empty one allocates. Besides: bulk allocations and frees, vmap of fresh pages, private
//! caches created, used, shrunk and destroyed, vmalloc lazy purges. Every item carries a tag
//! (tag.rs) checked when freed and at each checkpoint.
//!
//! Between rounds (every other CPU idle) the boot CPU checks every live tag and, per node,
//! conservation: free (buddy + per-CPU lists, drained and checked) + what the page holders
//! keep (slabs, large kmallocs, heap pages, vmalloc page tables) + the soak's live page
//! blocks + its live vmalloc pages must be what free + held was at the start; and per SLUB
//! cache (objects.rs), the exact active objects must be the soak's plus the kernel's own, so
//! an object lost inside SLUB fails the run although its page still counts as held. At the
//! end everything is freed, every soak cache is shrunk (no page left) and destroyed, and the
//! same must hold with nothing live. Allocation failures (fault injection, or real
//! exhaustion) are counted, never errors. `soak.leak_kfree=N` arms a mutation (kfree drops
//! one slab-object free in N) that the object check must catch.
//!
//! Every item is an owned handle (`items::Item`: `Pages`, `Object`, `KmallocObject`, `VmArea`),
//! tagged through its bytes; a slot holds one under a spin lock; the soak's caches are
//! `PrivateCache`s. No `unsafe` here.

#![deny(unsafe_code)]

use numalab_algo::page::{VirtAddr, PAGE_SIZE};

mod checkpoint;
mod items;
mod objects;
mod ops;
mod tag;

use crate::ktest;
use crate::ktest::{Ctx, TestError, TestResult};
use crate::mm::frame::{self, alloc_pages, Pages, Policy, MAX_ORDER};
use crate::mm::slub::{kmalloc, KmallocObject, Object, PrivateCache};
use crate::mm::vmalloc::{self, VmArea};
use crate::topology::{CpuId, NodeId};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use checkpoint::kfree_rcu_totals;
use core::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use items::Item;
use numalab_algo::rng::Rng;
use numalab_algo::slub::geometry::KMALLOC_SIZES;
use spin::Mutex;
use tag::{ItemKind, Meta};

use crate::ktest::suites::SOAK as SUITE;

/// Slots per online CPU in the shared table.
const SLOTS_PER_CPU: usize = 512;
/// Object sizes of the shared caches (small, odd, kmalloc-1k-like, near a page).
const SHARED_SIZES: [usize; 4] = [24, 192, 1000, 3000];
/// Largest kmalloc request of the mix (large kmallocs above the 8 KiB class).
const MAX_KMALLOC_BYTES: usize = 64 * 1024;
/// Largest vmalloc area of the mix, in pages.
const MAX_VMALLOC_PAGES: u64 = 16;
/// One kmalloc block or vmalloc area free in this many (by the item's sequence number) goes
/// through kvfree_rcu (the boot's `rcu.kfree` way) instead of kfree / vfree.
const RCU_FREE_ONE_IN: u32 = 4;
/// One object or area allocation in this many names a random node (kmalloc_node and
/// friends; the others are local).
const REMOTE_ONE_IN: u64 = 8;

/// What the operation mix is made of, for the per-kind counts and times.
#[derive(Clone, Copy)]
enum Op {
    AllocPages,
    AllocCacheObj,
    AllocKmalloc,
    AllocVmalloc,
    AllocFailed,
    Free,
    Bulk,
    Vmap,
    PrivateCache,
    Purge,
}
const NR_OPS: usize = 10;
const OP_NAMES: [&str; NR_OPS] = [
    "alloc_pages",
    "cache_alloc",
    "kmalloc",
    "vmalloc",
    "failed_alloc",
    "free",
    "bulk",
    "vmap",
    "private_cache",
    "purge",
];

/// One slot: empty, or one live item and its meta; locked while a CPU fills or empties it
/// (an operation that finds it locked counts as a free, as when it was a BUSY word).
type Slot = Mutex<Option<(Item, Meta)>>;

/// What went wrong first (the test fails with it).
struct Errors {
    count: AtomicU64,
    first: Mutex<Option<String>>,
}

impl Errors {
    fn report(&self, what: String) {
        if self.count.fetch_add(1, Relaxed) == 0 {
            *self.first.lock() = Some(what);
        }
    }
}

struct Soak {
    slots: Vec<Slot>,
    caches: Vec<PrivateCache>,
    seed: u64,
    nr_nodes: usize,
    /// Pages of live soak page blocks, per node.
    live_pages: Vec<AtomicI64>,
    /// Pages of live soak vmalloc areas, per node.
    live_vm_pages: Vec<AtomicI64>,
    /// Next sequence number per CPU.
    seq: Vec<AtomicU64>,
    ops: AtomicU64,
    allocs: AtomicU64,
    frees: AtomicU64,
    alloc_failures: AtomicU64,
    tag_checks: AtomicU64,
    remote_frees: AtomicU64,
    /// Frees handed to kvfree_rcu (of `frees`).
    rcu_frees: AtomicU64,
    /// Per Op: operations and TSC cycles spent in them.
    op_count: [AtomicU64; NR_OPS],
    op_cycles: [AtomicU64; NR_OPS],
    errors: Errors,
}

impl Soak {
    fn next_meta(&self, cpu: CpuId, kind: ItemKind, param: u32) -> Meta {
        let s = &self.seq[cpu.index()];
        let seq = s.load(Relaxed);
        s.store(seq + 1, Relaxed);
        Meta {
            kind,
            param,
            owner: cpu.0 as u8,
            seq: seq as u32,
        }
    }

    fn random_node(&self, rng: &mut Rng) -> NodeId {
        NodeId(rng.below(self.nr_nodes as u64) as u16)
    }

    /// One operation on a random slot: free what is there, or fill it.
    fn slot_op(&self, cpu: CpuId, rng: &mut Rng) -> Op {
        let slot = &self.slots[rng.below(self.slots.len() as u64) as usize];
        let Some(mut held) = slot.try_lock() else {
            return Op::Free;
        };
        match held.take() {
            None => match self.alloc_item(cpu, rng) {
                Some((item, meta)) => {
                    *held = Some((item, meta));
                    match meta.kind {
                        ItemKind::Pages => Op::AllocPages,
                        ItemKind::CacheObj => Op::AllocCacheObj,
                        ItemKind::Kmalloc => Op::AllocKmalloc,
                        ItemKind::Vmalloc => Op::AllocVmalloc,
                    }
                }
                None => Op::AllocFailed,
            },
            Some((item, meta)) => {
                drop(held);
                self.free_item(cpu, item, meta);
                Op::Free
            }
        }
    }

    fn one_op(&self, cpu: CpuId, rng: &mut Rng) {
        let t0 = crate::arch::rdtsc();
        // Rare: the operations that wait for every CPU (cross-CPU calls, TLB shootdowns).
        let op = match rng.below(100_000) {
            0..=1 => {
                self.cache_op(cpu, rng);
                Op::PrivateCache
            }
            2..=3 => {
                if let Some(v) = vmalloc::active() {
                    v.purge(numalab_algo::vmalloc::Scope::All, false);
                }
                Op::Purge
            }
            4..=503 => {
                self.vmap_op(cpu, rng);
                Op::Vmap
            }
            504..=6503 => {
                self.bulk_op(cpu, rng);
                Op::Bulk
            }
            _ => self.slot_op(cpu, rng),
        };
        let c = &self.op_count[op as usize];
        c.fetch_add(1, Relaxed);
        self.op_cycles[op as usize].fetch_add(crate::arch::rdtsc() - t0, Relaxed);
    }

    /// `kind count (average microseconds)` per kind of operation.
    fn mix_line(&self, hz: u64) -> String {
        let mut s = String::new();
        for (i, name) in OP_NAMES.iter().enumerate() {
            let n = self.op_count[i].load(Relaxed);
            let us = self.op_cycles[i].load(Relaxed) * 1_000_000 / hz.max(1) / n.max(1);
            s.push_str(&format!(" {} {} ({} us)", name, n, us));
        }
        s
    }

    /// One CPU's share of a round: `ops` operations, or until `deadline_tsc`.
    fn run_round(&self, cpu: CpuId, round: u32, ops: u64, deadline_tsc: Option<u64>) {
        let mut rng = Rng::new(
            self.seed
                ^ (u64::from(cpu.0) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
                ^ u64::from(round) << 48,
        );
        let mut done = 0u64;
        loop {
            match deadline_tsc {
                Some(d) => {
                    if done.is_multiple_of(64) && crate::arch::rdtsc() >= d {
                        break;
                    }
                }
                None => {
                    if done >= ops {
                        break;
                    }
                }
            }
            self.one_op(cpu, &mut rng);
            done += 1;
            // Serve other CPUs' cross-calls (a shrink's flush) between operations: a CPU
            // that waits for us waits at most one operation (one load when none is queued).
            crate::smp::run_pending_calls();
            // Linux's cond_resched: a quiescent state, and this CPU's kfree_rcu frees whose
            // grace period ended (no tick: without it grace periods wait for the round's end).
            crate::rcu::quiescent_point();
        }
        self.ops.fetch_add(done, Relaxed);
    }
}

fn opt_u64(ctx: &Ctx, o: &numalab_algo::options::Opt<u64>) -> u64 {
    ctx.opts.get(o)
}

/// While alive: the heap counts its kmalloc blocks (and the leak mutation may be armed).
struct Armed<'a>(&'a objects::Objects);

impl Drop for Armed<'_> {
    fn drop(&mut self) {
        kmalloc::set_leak_mutation(0);
        self.0.stop();
    }
}

/// An object-check failure, with what the leak mutation dropped when it is armed.
fn with_mutation(e: String, leak: usize) -> TestError {
    if leak == 0 {
        return TestError::Fail(e);
    }
    TestError::Fail(format!(
        "{} (mutation soak.leak_kfree={}: {} kfrees dropped so far)",
        e,
        leak,
        kmalloc::leak_mutation_dropped()
    ))
}

/// The soak itself (see the module comment).
fn soak(ctx: &Ctx) -> TestResult {
    use crate::options::{SOAK_CHECKPOINTS, SOAK_OPS, SOAK_SECONDS, SOAK_SEED};
    let topo = crate::topology::get();
    let seed = opt_u64(ctx, &SOAK_SEED);
    let total_ops = opt_u64(ctx, &SOAK_OPS);
    let seconds = opt_u64(ctx, &SOAK_SECONDS);
    let rounds = opt_u64(ctx, &SOAK_CHECKPOINTS).max(1) as u32;
    let cpus = crate::smp::online_cpus();
    let nr_cpus = cpus.len();
    let me = crate::percpu::cpu_id();
    crate::println!(
        "{}seed {} on {} CPUs, {} nodes: {} in {} rounds (reproduce: --seed {})",
        numalab_algo::wire::soak::PREFIX,
        seed,
        nr_cpus,
        topo.nr_nodes(),
        if seconds > 0 {
            format!("{} s", seconds)
        } else {
            format!("{} operations", total_ops)
        },
        rounds,
        seed
    );
    let mut caches = Vec::new();
    for &size in &SHARED_SIZES {
        let name = format!("soak_shared-{}", size);
        // Under slub.design=hybrid the 192-byte cache opts in to sheaves as its creator
        // (like Linux 6.18's vm_area_struct) and the others run the partial design.
        let mut t = crate::mm::slub::default_tunables(&name);
        t.sheaves_opt_in |= size == 192;
        caches.push(
            PrivateCache::create(&name, size, 0, t)
                .map_err(|e| format!("create {}: {:?}", name, e))?,
        );
    }
    let mut s = Soak {
        slots: (0..nr_cpus * SLOTS_PER_CPU)
            .map(|_| Mutex::new(None))
            .collect(),
        caches,
        seed,
        nr_nodes: topo.nr_nodes(),
        live_pages: (0..topo.nr_nodes()).map(|_| AtomicI64::new(0)).collect(),
        live_vm_pages: (0..topo.nr_nodes()).map(|_| AtomicI64::new(0)).collect(),
        seq: (0..crate::smp::MAX_CPUS)
            .map(|_| AtomicU64::new(0))
            .collect(),
        ops: AtomicU64::new(0),
        allocs: AtomicU64::new(0),
        frees: AtomicU64::new(0),
        alloc_failures: AtomicU64::new(0),
        tag_checks: AtomicU64::new(0),
        remote_frees: AtomicU64::new(0),
        rcu_frees: AtomicU64::new(0),
        op_count: [const { AtomicU64::new(0) }; NR_OPS],
        op_cycles: [const { AtomicU64::new(0) }; NR_OPS],
        errors: Errors {
            count: AtomicU64::new(0),
            first: Mutex::new(None),
        },
    };
    let shrink_all = || {
        for c in crate::mm::slub::caches() {
            c.shrink();
        }
    };
    shrink_all();
    crate::kfree_rcu::shrink();
    let objects = objects::Objects::start(&s.caches)?;
    // Disarms the mutation and the heap's count however the soak ends.
    let _armed = Armed(&objects);
    let leak = opt_u64(ctx, &crate::options::SOAK_LEAK_KFREE) as usize;
    if leak > 0 {
        crate::println!(
            "# soak: mutation soak.leak_kfree={} armed: kfree drops one slab-object free in {} (the object check must fail)",
            leak,
            leak
        );
        kmalloc::set_leak_mutation(leak);
    }
    let rcu0 = kfree_rcu_totals();
    let start = frame::settled_bytes()?;
    let start_free: Vec<u64> = (0..s.nr_nodes)
        .map(|n| frame::free_bytes(NodeId(n as u16)))
        .collect();
    let hz = crate::arch::tsc_hz().max(1);
    let t0 = crate::arch::rdtsc();
    // Conservation checks (per node, per checkpoint); tag checks (at every free and every
    // checkpoint) are `tag_checks`.
    let mut invariants = 0u64;
    for round in 0..rounds {
        let per_cpu = total_ops / (u64::from(rounds) * nr_cpus as u64).max(1);
        let deadline =
            (seconds > 0).then(|| t0 + hz * seconds * u64::from(round + 1) / u64::from(rounds));
        crate::smp::on_each_cpu(&|cpu| s.run_round(cpu, round, per_cpu, deadline));
        let label = format!("checkpoint {}/{}", round + 1, rounds);
        let waiting = s.check_kfree_rcu(&rcu0, &label);
        let live = s.check_all_tags();
        if s.errors.count.load(Relaxed) != 0 {
            // A broken item is reported and kept, not freed: the object counts would be
            // off by it; the first error is the failure.
            break;
        }
        invariants += objects
            .check(Some(&s.caches), &objects::held(&s.slots), &label)
            .map_err(|e| with_mutation(e, leak))?;
        invariants += s.check_conservation(&start, &label)?;
        crate::println!(
            "# soak: {}: {} operations, {} live items, {} tags checked, {} allocation failures, {} kvfree_rcu ({} waiting for a grace period, freed by kvfree_rcu_barrier)",
            label,
            s.ops.load(Relaxed),
            live,
            s.tag_checks.load(Relaxed),
            s.alloc_failures.load(Relaxed),
            s.rcu_frees.load(Relaxed),
            waiting
        );
        if s.errors.count.load(Relaxed) != 0 {
            break;
        }
    }
    let elapsed_tsc = crate::arch::rdtsc() - t0;
    // The final drain: everything freed, caches destroyed, vmalloc purged.
    s.free_all(me);
    s.check_kfree_rcu(&rcu0, "end");
    if let Some(v) = vmalloc::active() {
        v.purge(numalab_algo::vmalloc::Scope::All, true);
    }
    if let Some(e) = s.failure() {
        return Err(e);
    }
    let none = [0; objects::NR_CHECKED];
    invariants += objects
        .check(Some(&s.caches), &none, "end")
        .map_err(|e| with_mutation(e, leak))?;
    for c in &s.caches {
        c.shrink();
        let pages = c.slab_bytes() / PAGE_SIZE as usize;
        if pages != 0 {
            return Err(TestError::Fail(format!(
                "end: cache {}: {} slab pages kept after shrink with no object live",
                c.name(),
                pages
            )));
        }
    }
    // Every object was freed above and no other CPU runs soak code now: the caches go
    // (`objects` checks only kmalloc caches from here).
    for c in core::mem::take(&mut s.caches) {
        let name = String::from(c.name());
        if let Err(live) = c.destroy() {
            s.errors
                .report(format!("destroy of {}: {} objects live", name, live));
        }
    }
    shrink_all();
    invariants += objects
        .check(None, &none, "end, soak caches destroyed")
        .map_err(|e| with_mutation(e, leak))?;
    invariants += s.check_conservation(&start, "end")?;
    for n in 0..s.nr_nodes {
        let node = NodeId(n as u16);
        let free = frame::free_bytes(node) as i64 / PAGE_SIZE as i64;
        let free0 = start_free[n] as i64 / PAGE_SIZE as i64;
        let held = frame::holders_held_bytes_on(node) as i64 / PAGE_SIZE as i64;
        let held0 = (start[n] - start_free[n]) as i64 / PAGE_SIZE as i64;
        crate::println!(
            "# soak: end node {}: free {} pages, {} at the start ({:+}); held by slabs, heap and vmalloc page tables {} ({:+})",
            n,
            free,
            free0,
            free - free0,
            held,
            held - held0
        );
    }
    let ops = s.ops.load(Relaxed);
    let ms = elapsed_tsc / (hz / 1000).max(1);
    crate::println!("# soak: mix:{}", s.mix_line(hz));
    crate::println!(
        "{}{} operations in {}.{:03} s ({} ops/s), {} invariants checked ({} tags at frees and checkpoints), {} allocations, {} frees ({} on another CPU, {} through kvfree_rcu), {} allocation failures (injected: page_alloc {}, slab {}, vmalloc {}), seed {}",
        numalab_algo::wire::soak::DONE,
        ops,
        ms / 1000,
        ms % 1000,
        ops * 1000 / ms.max(1),
        invariants + s.tag_checks.load(Relaxed),
        s.tag_checks.load(Relaxed),
        s.allocs.load(Relaxed),
        s.frees.load(Relaxed),
        s.remote_frees.load(Relaxed),
        s.rcu_frees.load(Relaxed),
        s.alloc_failures.load(Relaxed),
        crate::fault::injected(crate::fault::Point::PageAlloc),
        crate::fault::injected(crate::fault::Point::Slab),
        crate::fault::injected(crate::fault::Point::Vmalloc),
        seed
    );
    match s.failure() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

ktest!(SUITE, Soak, soak);
