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

use numalab_algo::page::{VirtAddr, PAGE_SIZE};

mod objects;
mod ops;
mod tag;

use crate::ktest;
use crate::ktest::{Ctx, KSuite, TestError, TestResult};
use crate::mm::frame::{self, alloc_pages, Pages, Policy, MAX_ORDER};
use crate::mm::slub::{kmalloc, KmemCache};
use crate::mm::vmalloc;
use crate::topology::{CpuId, NodeId};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::ptr::NonNull;
use core::sync::atomic::{
    AtomicI64, AtomicU64,
    Ordering::Relaxed,
    Ordering::{Acquire, Release},
};
use numalab_algo::rng::Rng;
use numalab_algo::slub::geometry::KMALLOC_SIZES;
use spin::Mutex;
use tag::{ItemKind, Meta};

static SUITE: KSuite = KSuite {
    name: "soak",
    order: 95,
    every_suite: false,
};

/// Slots per online CPU in the shared table.
const SLOTS_PER_CPU: usize = 512;
/// Object sizes of the shared caches (small, odd, kmalloc-1k-like, near a page).
const SHARED_SIZES: [usize; 4] = [24, 192, 1000, 3000];
/// Largest kmalloc request of the mix (large kmallocs above the 8 KiB class).
const MAX_KMALLOC_BYTES: usize = 64 * 1024;
/// Largest vmalloc area of the mix, in pages.
const MAX_VMALLOC_PAGES: u64 = 16;
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

const EMPTY: u64 = 0;
const BUSY: u64 = 1;

/// One slot: `word` is EMPTY, BUSY (a CPU is filling or emptying it) or an item's address;
/// `meta` (tag::Meta) is written before the address is published.
struct Slot {
    word: AtomicU64,
    meta: AtomicU64,
}

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
    caches: Vec<&'static KmemCache>,
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
    /// Per Op: operations and TSC cycles spent in them.
    op_count: [AtomicU64; NR_OPS],
    op_cycles: [AtomicU64; NR_OPS],
    errors: Errors,
}

fn vm_node(addr: u64) -> Option<NodeId> {
    vmalloc::translate(VirtAddr::new(addr)).and_then(frame::node_of_phys)
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

    /// Allocates a random item; returns its address and meta, None on a (counted) failure.
    fn alloc_item(&self, cpu: CpuId, rng: &mut Rng) -> Option<(u64, Meta)> {
        let topo = crate::topology::get();
        let r = rng.below(100);
        let got = if r < 35 {
            let order = (rng.next_u64().trailing_zeros() as u8).min(MAX_ORDER);
            let node = self.random_node(rng);
            let policy = match rng.below(4) {
                0 => Policy::Local,
                1 => Policy::Preferred(node),
                2 => Policy::Bind(topo.mem_node(node)),
                _ => Policy::Interleave,
            };
            alloc_pages(order, policy).ok().map(|p| {
                let meta = self.next_meta(cpu, ItemKind::Pages, u32::from(order));
                let nr = p.nr_pages();
                self.live_pages[p.node().index()].fetch_add(nr as i64, Relaxed);
                let virt = p.virt_ptr() as u64;
                let (_phys, _) = p.into_raw();
                // SAFETY: the block is ours, nr pages in the direct map.
                unsafe { tag::write_pages(virt as usize, nr, meta.tag()) };
                (virt, meta)
            })
        } else if r < 60 {
            let c = rng.below(self.caches.len() as u64) as usize;
            let obj = if rng.below(REMOTE_ONE_IN) != 0 {
                self.caches[c].alloc()
            } else {
                self.caches[c].alloc_node(self.random_node(rng))
            };
            obj.map(|o| {
                let meta = self.next_meta(cpu, ItemKind::CacheObj, c as u32);
                // SAFETY: a fresh object of SHARED_SIZES[c] bytes.
                unsafe { tag::write_obj(o.as_ptr() as usize, SHARED_SIZES[c], meta.tag()) };
                (o.as_ptr() as u64, meta)
            })
        } else if r < 85 {
            let size = if rng.below(10) == 0 {
                8193 + rng.below((MAX_KMALLOC_BYTES - 8192) as u64) as usize
            } else {
                let i = rng.below(KMALLOC_SIZES.len() as u64) as usize;
                let lo = if i == 0 { 1 } else { KMALLOC_SIZES[i - 1] + 1 };
                lo + rng.below((KMALLOC_SIZES[i] - lo + 1) as u64) as usize
            }
            .max(8);
            let obj = if rng.below(REMOTE_ONE_IN) != 0 {
                kmalloc::kmalloc(size)
            } else {
                kmalloc::kmalloc_node(size, self.random_node(rng))
            };
            obj.map(|o| {
                let meta = self.next_meta(cpu, ItemKind::Kmalloc, size as u32);
                // SAFETY: a fresh object of at least `size` bytes, 8-byte aligned.
                unsafe { tag::write_obj(o.as_ptr() as usize, size / 8 * 8, meta.tag()) };
                (o.as_ptr() as u64, meta)
            })
        } else {
            let pages = 1 + rng.below(MAX_VMALLOC_PAGES);
            let bytes = (pages * PAGE_SIZE) as usize;
            let area = if rng.below(REMOTE_ONE_IN) != 0 {
                vmalloc::vmalloc(bytes)
            } else {
                vmalloc::vmalloc_node(bytes, self.random_node(rng))
            };
            area.ok().map(|a| {
                let meta = self.next_meta(cpu, ItemKind::Vmalloc, pages as u32);
                self.count_vm(a.as_u64(), pages, 1);
                // SAFETY: a fresh mapped area of `pages` pages.
                unsafe { tag::write_pages(a.as_u64() as usize, pages as usize, meta.tag()) };
                (a.as_u64(), meta)
            })
        };
        match got {
            Some(x) => {
                self.allocs.fetch_add(1, Relaxed);
                Some(x)
            }
            None => {
                self.alloc_failures.fetch_add(1, Relaxed);
                None
            }
        }
    }

    fn count_vm(&self, addr: u64, pages: u64, sign: i64) {
        for i in 0..pages {
            match vm_node(addr + i * PAGE_SIZE) {
                Some(n) => {
                    self.live_vm_pages[n.index()].fetch_add(sign, Relaxed);
                }
                None => self.errors.report(format!(
                    "vmalloc area {:#x} page {} not mapped to a node's page",
                    addr, i
                )),
            }
        }
    }

    /// Checks an item's tag; true when intact (a broken one is reported).
    fn check(&self, addr: u64, meta: Meta) -> bool {
        self.tag_checks.fetch_add(1, Relaxed);
        // SAFETY: a live item (taken out of its slot by the caller, or every CPU idle at a
        // checkpoint) of the size its meta says, mapped.
        let r = unsafe {
            match meta.kind {
                ItemKind::Pages => tag::check_pages(addr as usize, 1 << meta.param, meta.tag()),
                ItemKind::CacheObj => {
                    tag::check_obj(addr as usize, SHARED_SIZES[meta.param as usize], meta.tag())
                }
                ItemKind::Kmalloc => {
                    tag::check_obj(addr as usize, meta.param as usize / 8 * 8, meta.tag())
                }
                ItemKind::Vmalloc => {
                    tag::check_pages(addr as usize, meta.param as usize, meta.tag())
                }
            }
        };
        match r {
            Ok(()) => true,
            Err((word, got, want)) => {
                self.errors.report(format!(
                    "bad tag: {:?} at {:#x} (owner CPU {}, seq {}): word/page {} is {:#x}, expected {:#x}",
                    meta.kind, addr, meta.owner, meta.seq, word, got, want
                ));
                false
            }
        }
    }

    /// Checks and frees an item (a broken one is reported and leaked, not freed).
    fn free_item(&self, cpu: CpuId, addr: u64, meta: Meta) {
        if !self.check(addr, meta) {
            return;
        }
        if u16::from(meta.owner) != cpu.0 {
            self.remote_frees.fetch_add(1, Relaxed);
        }
        self.frees.fetch_add(1, Relaxed);
        match meta.kind {
            ItemKind::Pages => {
                let phys = frame::virt_to_phys(VirtAddr::new(addr));
                // SAFETY: the block was allocated by alloc_item with this order and given up
                // with into_raw; the slot protocol makes us its only owner.
                let p = unsafe { Pages::from_raw(phys, meta.param as u8) };
                self.live_pages[p.node().index()].fetch_sub(p.nr_pages() as i64, Relaxed);
                drop(p);
            }
            ItemKind::CacheObj => {
                // SAFETY: an object of this cache, ours alone, freed once.
                unsafe {
                    self.caches[meta.param as usize].free(NonNull::new_unchecked(addr as *mut u8))
                }
            }
            ItemKind::Kmalloc => {
                // SAFETY: from kmalloc, ours alone, freed once.
                unsafe { kmalloc::kfree(NonNull::new_unchecked(addr as *mut u8)) }
            }
            ItemKind::Vmalloc => {
                self.count_vm(addr, u64::from(meta.param), -1);
                if let Err(b) = vmalloc::vfree(VirtAddr::new(addr)) {
                    self.errors
                        .report(format!("vfree({:#x}): {}", addr, b.reason()));
                }
            }
        }
    }

    /// One operation on a random slot: free what is there, or fill it.
    fn slot_op(&self, cpu: CpuId, rng: &mut Rng) -> Op {
        let slot = &self.slots[rng.below(self.slots.len() as u64) as usize];
        match slot.word.swap(BUSY, Acquire) {
            BUSY => Op::Free,
            EMPTY => match self.alloc_item(cpu, rng) {
                Some((addr, meta)) => {
                    slot.meta.store(meta.pack(), Relaxed);
                    slot.word.store(addr, Release);
                    match meta.kind {
                        ItemKind::Pages => Op::AllocPages,
                        ItemKind::CacheObj => Op::AllocCacheObj,
                        ItemKind::Kmalloc => Op::AllocKmalloc,
                        ItemKind::Vmalloc => Op::AllocVmalloc,
                    }
                }
                None => {
                    slot.word.store(EMPTY, Release);
                    Op::AllocFailed
                }
            },
            addr => {
                let meta = slot.meta.load(Relaxed);
                slot.word.store(EMPTY, Release);
                match Meta::unpack(meta) {
                    Some(m) => self.free_item(cpu, addr, m),
                    None => self
                        .errors
                        .report(format!("slot meta {:#x} unreadable", meta)),
                }
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
        }
        self.ops.fetch_add(done, Relaxed);
    }

    /// Live items per slot scan, all tags checked (every other CPU idle).
    fn check_all_tags(&self) -> u64 {
        let mut live = 0;
        for slot in &self.slots {
            let w = slot.word.load(Acquire);
            if w > BUSY {
                live += 1;
                match Meta::unpack(slot.meta.load(Relaxed)) {
                    Some(m) => {
                        self.check(w, m);
                    }
                    None => self.errors.report(format!("slot {:#x}: bad meta", w)),
                }
            } else if w == BUSY {
                self.errors
                    .report(String::from("a slot left busy between rounds"));
            }
        }
        live
    }

    /// Per node: free + held (settled) + the soak's live pages == the start's free + held.
    /// Prints one line per node; returns the checks made.
    fn check_conservation(&self, start: &[u64], label: &str) -> Result<u64, String> {
        let pcp: Vec<usize> = (0..self.nr_nodes)
            .map(|n| frame::node_counters(NodeId(n as u16)).map_or(0, |c| c.pcp_pages))
            .collect();
        let settled = frame::settled_bytes()?;
        let mut checks = 0;
        for n in 0..self.nr_nodes {
            let node = NodeId(n as u16);
            let Some(c) = frame::node_counters(node) else {
                continue;
            };
            let held = frame::holders_held_bytes_on(node) / PAGE_SIZE;
            let pages = self.live_pages[n].load(Relaxed);
            let vm = self.live_vm_pages[n].load(Relaxed);
            let now = settled[n] as i64 / PAGE_SIZE as i64 + pages + vm;
            let want = start[n] as i64 / PAGE_SIZE as i64;
            crate::println!(
                "# soak: {} node {}: free {} (per-CPU lists {}) + held {} + soak pages {} + soak vmalloc {} = {}, start {}, managed {}: {}",
                label,
                n,
                c.buddy_free_pages,
                pcp[n],
                held,
                pages,
                vm,
                now,
                want,
                c.managed_pages,
                if now == want { "ok" } else { "LOST" }
            );
            if now != want {
                return Err(format!(
                    "{}: node {}: {} pages accounted, {} at the start ({} missing)",
                    label,
                    n,
                    now,
                    want,
                    want - now
                ));
            }
            checks += 1;
        }
        Ok(checks)
    }

    /// The failure, if any error was reported: the first one and the count.
    fn failure(&self) -> Option<TestError> {
        let first = self.errors.first.lock().take()?;
        Some(TestError::Fail(format!(
            "{} errors; first: {}",
            self.errors.count.load(Relaxed),
            first
        )))
    }

    /// Frees every live item (boot CPU, others idle).
    fn free_all(&self, cpu: CpuId) {
        for slot in &self.slots {
            let w = slot.word.swap(EMPTY, Acquire);
            if w > BUSY {
                if let Some(m) = Meta::unpack(slot.meta.load(Relaxed)) {
                    self.free_item(cpu, w, m);
                }
            }
        }
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
        "# soak: seed {} on {} CPUs, {} nodes: {} in {} rounds (reproduce: --seed {})",
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
        caches.push(
            KmemCache::create(&name, size, 0, crate::mm::slub::default_tunables(&name))
                .map_err(|e| format!("create {}: {:?}", name, e))?,
        );
    }
    let s = Soak {
        slots: (0..nr_cpus * SLOTS_PER_CPU)
            .map(|_| Slot {
                word: AtomicU64::new(EMPTY),
                meta: AtomicU64::new(0),
            })
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
        let live = s.check_all_tags();
        let label = format!("checkpoint {}/{}", round + 1, rounds);
        if s.errors.count.load(Relaxed) != 0 {
            // A broken item is reported and kept, not freed: the object counts would be
            // off by it; the first error is the failure.
            break;
        }
        invariants += objects
            .check(&objects::held(&s.slots), &label, true)
            .map_err(|e| with_mutation(e, leak))?;
        invariants += s.check_conservation(&start, &label)?;
        crate::println!(
            "# soak: {}: {} operations, {} live items, {} tags checked, {} allocation failures",
            label,
            s.ops.load(Relaxed),
            live,
            s.tag_checks.load(Relaxed),
            s.alloc_failures.load(Relaxed)
        );
        if s.errors.count.load(Relaxed) != 0 {
            break;
        }
    }
    let elapsed_tsc = crate::arch::rdtsc() - t0;
    // The final drain: everything freed, caches destroyed, vmalloc purged.
    s.free_all(me);
    if let Some(v) = vmalloc::active() {
        v.purge(numalab_algo::vmalloc::Scope::All, true);
    }
    if let Some(e) = s.failure() {
        return Err(e);
    }
    let none = [0; objects::NR_CHECKED];
    invariants += objects
        .check(&none, "end", true)
        .map_err(|e| with_mutation(e, leak))?;
    for &c in &s.caches {
        c.shrink();
        let pages = c.slab_bytes() / PAGE_SIZE as usize;
        if pages != 0 {
            return Err(TestError::Fail(format!(
                "end: cache {}: {} slab pages kept after shrink with no object live",
                c.name(),
                pages
            )));
        }
        let name = String::from(c.name());
        // SAFETY: every object was freed above; no other CPU runs soak code now; `c` is not
        // used after a successful destroy (`objects` checks only kmalloc caches from here).
        if let Err(live) = unsafe { c.destroy() } {
            s.errors
                .report(format!("destroy of {}: {} objects live", name, live));
        }
    }
    shrink_all();
    invariants += objects
        .check(&none, "end, soak caches destroyed", false)
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
        "# soak: done: {} operations in {}.{:03} s ({} ops/s), {} invariants checked ({} tags at frees and checkpoints), {} allocations, {} frees ({} on another CPU), {} allocation failures (injected: page_alloc {}, slab {}, vmalloc {}), seed {}",
        ops,
        ms / 1000,
        ms % 1000,
        ops * 1000 / ms.max(1),
        invariants + s.tag_checks.load(Relaxed),
        s.tag_checks.load(Relaxed),
        s.allocs.load(Relaxed),
        s.frees.load(Relaxed),
        s.remote_frees.load(Relaxed),
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
