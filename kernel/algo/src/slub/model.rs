//! Model checks (shuttle) of the SLUB core's lock-free protocols: the slab state word (freeze,
//! unfreeze, remote frees, partial-list moves) and the per-CPU partial list's drain. The core
//! runs unchanged over `ModelMachine`, a `Platform` whose CPUs are shuttle threads, whose
//! list_lock is a shuttle mutex and whose every word access is a shuttle scheduling point, so
//! the scheduler (random and PCT, fixed seeds) picks which CPU runs next at each load, store
//! and compare-and-swap of slab memory. After each schedule the test checks that no object
//! was handed out twice or overwritten while held, that the node lists are consistent
//! (`Cache::validate`), and, once everything is freed and flushed, that every slab's freelist
//! holds each of its objects exactly once and that every page and descriptor went back.
//!
//! Shuttle explores sequentially consistent interleavings only (no weak memory effects);
//! per-CPU fields (`CpuSlab`) are touched by their own CPU only and are not scheduling
//! points. Cross-CPU calls (`on_each_cpu`, which `flush_all` and `shrink` use) are modelled
//! as the kernel runs them: a target runs a call only between its operations (its call
//! points: before each allocation and free, and once it is idle), never in the middle of
//! one; the caller waits for each target to reach a call point and then runs the function
//! as that CPU while the target stays parked. Three deliberate mutations of the platform (a
//! compare-and-swap split into a load and a store; a list_lock that does not lock; a
//! cross-CPU call that runs on a target in the middle of its operation) must make the checks
//! fail: that shows they can tell.

use super::cache::Cache;
use super::platform::{Platform, Report, SlabPages, DESC_BYTES};
use super::slab::Slab;
use super::{ErrorKind, Stat, StatsSnapshot, Tunables};
use crate::model_check::{self, point};
use crate::topology::{CpuId, CpuInfo, NodeId, NodeInfo, Topology};
use std::cell::Cell;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::Mutex;
use std::vec::Vec;

const BASE: usize = 0x1000_0000;
const PAGE: usize = 4096;
const NR_PAGES: usize = 16;
const NR_DESCS: usize = 16;
/// The model's object size: 4 objects in an order-0 slab.
const OBJ_BYTES: usize = 1024;
const OBJS_PER_SLAB: usize = PAGE / OBJ_BYTES;

/// Counters summed over every unmutated schedule, per scenario: the paths a scenario claims
/// to race must have been taken (and its state-word compare-and-swaps must have failed, at
/// least sometimes, which is the race itself).
static COVERAGE: Mutex<Vec<(&str, StatsSnapshot)>> = Mutex::new(Vec::new());

/// Over every unmutated schedule: cross-CPU calls run on a CPU that was parked between its
/// operations (not idle): the race the shrink scenario is about.
static CALLS_ON_BUSY_CPUS: AtomicU64 = AtomicU64::new(0);

fn covered(scenario: &str, stat: Stat) -> u64 {
    COVERAGE
        .lock()
        .unwrap()
        .iter()
        .filter(|(n, _)| *n == scenario)
        .map(|(_, s)| s.get(stat))
        .sum()
}

shuttle::thread_local! {
    static CPU: Cell<u16> = const { Cell::new(0) };
}

/// A broken platform, to show the checks can fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mutation {
    None,
    /// `cas` as a load, a compare, a scheduling point and a store: not atomic.
    SplitCas,
    /// `with_lock` runs `f` without taking the lock.
    NoListLock,
    /// `on_each_cpu` runs `f` as each CPU at once, whatever that CPU is doing (no handshake).
    CallMidOperation,
}

/// One CPU's side of the cross-CPU call handshake.
struct CallSlot {
    /// Callers waiting to run a function as this CPU.
    requested: AtomicUsize,
    /// The CPU waits at a call point until `requested` is 0.
    parked: AtomicBool,
    /// The CPU has no work left (its thread ended, or none was started): always at a call
    /// point.
    idle: AtomicBool,
    /// Held by the caller that runs a function as this CPU (one at a time, as the kernel's
    /// call queue runs them).
    running: shuttle::sync::Mutex<()>,
}

/// One node of `NR_PAGES` pages, `nr_cpus` CPUs; word memory and owner words as std atomics
/// (only one shuttle thread runs at a time) behind explicit scheduling points.
pub(super) struct ModelMachine {
    topo: Topology,
    words: Vec<AtomicUsize>,
    owners: Vec<AtomicUsize>,
    used: Mutex<Vec<bool>>,
    descs_free: Mutex<Vec<usize>>,
    desc_base: usize,
    clock: AtomicU64,
    reports: Mutex<Vec<(usize, ErrorKind)>>,
    calls: Vec<CallSlot>,
    mutation: Mutation,
}

impl ModelMachine {
    pub(super) fn new(nr_cpus: usize, mutation: Mutation) -> ModelMachine {
        let nodes = vec![NodeInfo {
            id: NodeId(0),
            pxm: 0,
            mem_ranges: vec![(BASE as u64, (BASE + NR_PAGES * PAGE) as u64)],
            cpus: vec![],
        }];
        let cpus = (0..nr_cpus)
            .map(|i| CpuInfo {
                cpu: CpuId(i as u16),
                apic_id: i as u32,
                node: NodeId(0),
            })
            .collect();
        let desc_base = BASE + NR_PAGES * PAGE;
        ModelMachine {
            topo: Topology::new(nodes, cpus, None),
            words: (0..(NR_PAGES * PAGE + NR_DESCS * DESC_BYTES) / 8)
                .map(|_| AtomicUsize::new(0))
                .collect(),
            owners: (0..NR_PAGES).map(|_| AtomicUsize::new(0)).collect(),
            used: Mutex::new(vec![false; NR_PAGES]),
            descs_free: Mutex::new((0..NR_DESCS).map(|i| desc_base + i * DESC_BYTES).collect()),
            desc_base,
            clock: AtomicU64::new(0),
            reports: Mutex::new(Vec::new()),
            calls: (0..nr_cpus)
                .map(|_| CallSlot {
                    requested: AtomicUsize::new(0),
                    parked: AtomicBool::new(false),
                    idle: AtomicBool::new(true),
                    running: shuttle::sync::Mutex::new(()),
                })
                .collect(),
            mutation,
        }
    }

    /// A call point of the running CPU (between two of its operations): while callers want
    /// to run a function as this CPU, park and let them.
    fn call_point(&self) {
        let slot = &self.calls[CPU.with(|c| c.get()) as usize];
        point();
        if slot.requested.load(SeqCst) == 0 {
            return;
        }
        slot.parked.store(true, SeqCst);
        while slot.requested.load(SeqCst) != 0 {
            shuttle::thread::yield_now();
        }
        slot.parked.store(false, SeqCst);
    }

    /// Marks `cpu` as having work (false) or none left (true).
    fn set_idle(&self, cpu: usize, idle: bool) {
        point();
        self.calls[cpu].idle.store(idle, SeqCst);
    }

    /// `f` run as `target` once it is at a call point (the caller honours calls to itself
    /// while it waits, as the kernel's wait loop does).
    fn call_on(&self, target: usize, f: &(dyn Fn() + Sync)) {
        let me = CPU.with(|c| c.get());
        let slot = &self.calls[target];
        slot.requested.fetch_add(1, SeqCst);
        loop {
            point();
            if slot.idle.load(SeqCst) || slot.parked.load(SeqCst) {
                break;
            }
            self.call_point();
            shuttle::thread::yield_now();
        }
        {
            let _one_at_a_time = slot.running.lock().unwrap();
            if !slot.idle.load(SeqCst) && self.mutation == Mutation::None {
                CALLS_ON_BUSY_CPUS.fetch_add(1, SeqCst);
            }
            ModelMachine::set_cpu(target as u16);
            f();
            ModelMachine::set_cpu(me);
        }
        slot.requested.fetch_sub(1, SeqCst);
    }

    fn word(&self, addr: usize) -> &AtomicUsize {
        assert!(
            addr >= BASE && addr.is_multiple_of(8),
            "bad address {addr:#x}"
        );
        &self.words[(addr - BASE) / 8]
    }

    /// Runs the rest of the calling shuttle thread as `cpu`.
    pub(super) fn set_cpu(cpu: u16) {
        CPU.with(|c| c.set(cpu));
    }

    fn free_pages_total(&self) -> usize {
        self.used.lock().unwrap().iter().filter(|u| !**u).count()
    }

    fn descs_in_use(&self) -> usize {
        NR_DESCS - self.descs_free.lock().unwrap().len()
    }

    /// A word of an object, read or written by the test (not a scheduling point).
    fn peek(&self, addr: usize) -> usize {
        self.word(addr).load(SeqCst)
    }
    fn poke(&self, addr: usize, value: usize) {
        self.word(addr).store(value, SeqCst)
    }
}

impl Platform for &ModelMachine {
    type Lock = shuttle::sync::Mutex<()>;
    type NodeBox<T: Send + Sync + 'static> = Box<T>;
    type PerCpu<T: Default + Send + Sync + 'static> = super::placed::HeapPerCpu<T>;

    fn node_box<T: Send + Sync + 'static>(&self, value: T, _node: NodeId) -> Option<Box<T>> {
        Some(Box::new(value))
    }
    fn alloc_per_cpu<T: Default + Send + Sync + 'static>(
        &self,
    ) -> Option<super::placed::HeapPerCpu<T>> {
        Some(super::placed::HeapPerCpu::new(self.topo.nr_cpus()))
    }

    fn new_lock(&self) -> Self::Lock {
        shuttle::sync::Mutex::new(())
    }
    fn with_lock<R>(&self, lock: &Self::Lock, f: impl FnOnce() -> R) -> R {
        if self.mutation == Mutation::NoListLock {
            point();
            return f();
        }
        let _held = lock.lock().unwrap();
        f()
    }
    fn topology(&self) -> &Topology {
        &self.topo
    }
    fn cpu(&self) -> CpuId {
        CpuId(CPU.with(|c| c.get()))
    }
    fn irq_save(&self) -> bool {
        false
    }
    fn irq_restore(&self, _were_enabled: bool) {}
    fn now(&self) -> u64 {
        self.clock.fetch_add(1, SeqCst)
    }
    fn on_each_cpu(&self, f: &(dyn Fn() + Sync)) {
        let me = CPU.with(|c| c.get());
        for cpu in (0..self.topo.nr_cpus()).filter(|&c| c != me as usize) {
            if self.mutation == Mutation::CallMidOperation {
                ModelMachine::set_cpu(cpu as u16);
                f();
                ModelMachine::set_cpu(me);
            } else {
                self.call_on(cpu, f);
            }
        }
        f();
    }
    fn load(&self, addr: usize) -> usize {
        point();
        self.word(addr).load(SeqCst)
    }
    fn store(&self, addr: usize, value: usize) {
        point();
        self.word(addr).store(value, SeqCst)
    }
    fn cas(&self, addr: usize, old: usize, new: usize) -> bool {
        point();
        let w = self.word(addr);
        if self.mutation == Mutation::SplitCas {
            if w.load(SeqCst) != old {
                return false;
            }
            point();
            w.store(new, SeqCst);
            return true;
        }
        w.compare_exchange(old, new, SeqCst, SeqCst).is_ok()
    }
    fn alloc_pages(&self, order: u8, node: Option<NodeId>) -> Option<SlabPages> {
        self.alloc_pages_on(order, node.unwrap_or(NodeId(0)))
    }
    fn alloc_pages_on(&self, order: u8, node: NodeId) -> Option<SlabPages> {
        point();
        let n = 1usize << order;
        let mut used = self.used.lock().unwrap();
        let first = (0..NR_PAGES)
            .step_by(n)
            .find(|&i| i + n <= NR_PAGES && used[i..i + n].iter().all(|u| !u))?;
        used[first..first + n].iter_mut().for_each(|u| *u = true);
        Some(SlabPages {
            base: BASE + first * PAGE,
            node,
        })
    }
    fn free_pages(&self, base: usize, order: u8) {
        point();
        let first = (base - BASE) / PAGE;
        let mut used = self.used.lock().unwrap();
        for u in &mut used[first..first + (1 << order)] {
            assert!(*u, "freeing a free page");
            *u = false;
        }
    }
    fn set_owner(&self, base: usize, nr_pages: usize, owner: usize) {
        point();
        let first = (base - BASE) / PAGE;
        for o in &self.owners[first..first + nr_pages] {
            o.store(owner, SeqCst);
        }
    }
    fn owner(&self, addr: usize) -> usize {
        point();
        if addr < BASE || addr >= self.desc_base {
            return 0;
        }
        self.owners[(addr - BASE) / PAGE].load(SeqCst)
    }
    fn node_has_free_memory(&self, _node: NodeId) -> bool {
        self.free_pages_total() > 0
    }
    fn alloc_desc(&self) -> Option<usize> {
        point();
        let d = self.descs_free.lock().unwrap().pop()?;
        for w in 0..DESC_BYTES / 8 {
            self.poke(d + w * 8, 0);
        }
        Some(d)
    }
    fn free_desc(&self, desc: usize) {
        point();
        self.descs_free.lock().unwrap().push(desc);
    }
    /// Sheaves of up to a descriptor's size come from the descriptor pool.
    fn alloc_block(&self, bytes: usize) -> Option<usize> {
        if bytes > DESC_BYTES {
            return None;
        }
        self.alloc_desc()
    }
    fn free_block(&self, addr: usize, _bytes: usize) {
        self.free_desc(addr)
    }
    fn report(&self, r: &Report<'_>) {
        self.reports.lock().unwrap().push((r.addr, r.kind));
    }
}

type ModelCache<'a> = Cache<&'a ModelMachine>;

/// The test's side of a scenario: which objects it holds, each tagged with a word the
/// allocator must not touch while the object is held.
struct Ctx<'a> {
    m: &'a ModelMachine,
    c: &'a ModelCache<'a>,
    live: Mutex<BTreeSet<usize>>,
    next_tag: AtomicUsize,
}

impl<'a> Ctx<'a> {
    /// The object's middle word: where a cache without debug flags keeps the free pointer of
    /// a free object, so an allocator write into a held object shows there first.
    fn tag_addr(&self, obj: usize) -> usize {
        obj + ((self.c.layout.object_size / 2) & !7)
    }

    /// Allocates on the running CPU; the object must not be held already.
    fn alloc(&self) -> usize {
        self.m.call_point();
        let obj = self.c.alloc().expect("the model machine has pages enough");
        assert!(
            self.live.lock().unwrap().insert(obj),
            "object {obj:#x} handed out twice"
        );
        let tag = 0x7a6_0000 + self.next_tag.fetch_add(1, SeqCst);
        self.m.poke(self.tag_addr(obj), tag);
        self.m.poke(obj, tag);
        obj
    }

    /// Frees a held object on the running CPU; its tag must be intact.
    fn free(&self, obj: usize) {
        self.m.call_point();
        assert!(
            self.live.lock().unwrap().remove(&obj),
            "freeing {obj:#x}, which the test does not hold"
        );
        assert_eq!(
            self.m.peek(self.tag_addr(obj)),
            self.m.peek(obj),
            "object {obj:#x} was written by the allocator while held"
        );
        self.c.free(obj);
    }

    /// Everything after the CPUs joined: consistency now, then free and flush everything
    /// and check that each slab holds each of its objects exactly once and that every page
    /// and descriptor goes back.
    fn finish(self) {
        let (m, c) = (self.m, self.c);
        assert_eq!(
            *m.reports.lock().unwrap(),
            vec![],
            "the core reported misuse"
        );
        c.validate().unwrap();
        let live: Vec<usize> = self.live.lock().unwrap().iter().copied().collect();
        assert_eq!(
            c.stats().live_objects(),
            live.len() as i64,
            "allocations minus frees differ from the objects held"
        );
        ModelMachine::set_cpu(0);
        for obj in live {
            self.free(obj);
        }
        c.flush_all();
        // The sheaves design: the barn's sheaves go back to their slabs too.
        c.shrink_barns();
        c.validate().unwrap();
        // Every slab is now on its node's partial list (nothing is held, no CPU owns any).
        let n = &c.nodes[0];
        let mut listed = 0;
        let mut s = n.partial.head();
        while s != 0 {
            let slab = Slab(s);
            let st = slab.state(&m);
            assert_eq!(
                st.inuse(),
                0,
                "slab {s:#x} in use after everything was freed"
            );
            let (base, objects) = (slab.base(&m), slab.objects(&m));
            let mut seen = BTreeSet::new();
            let mut obj = st.free_off().map_or(0, |o| base + o);
            while obj != 0 {
                assert!(
                    obj >= base
                        && obj < base + objects * c.size()
                        && (obj - base).is_multiple_of(c.size()),
                    "slab {s:#x} freelist reaches {obj:#x}"
                );
                assert!(
                    seen.insert(obj),
                    "slab {s:#x} freelist holds {obj:#x} twice"
                );
                let fp = obj + c.layout.fp_offset;
                obj = super::freelist::decode(m.peek(fp), c.random, fp);
            }
            assert_eq!(seen.len(), objects, "slab {s:#x} lost objects");
            listed += 1;
            s = slab.next(&m);
        }
        assert_eq!(
            listed,
            n.nr_slabs.load(SeqCst),
            "slabs counted but on no list (leaked)"
        );
        assert_eq!(
            NR_PAGES - m.free_pages_total(),
            listed,
            "pages held but not by a listed slab"
        );
        c.destroy().unwrap();
        assert_eq!(m.free_pages_total(), NR_PAGES, "pages not given back");
        assert_eq!(m.descs_in_use(), 0, "descriptors not given back");
        assert_eq!(
            *m.reports.lock().unwrap(),
            vec![],
            "the core reported misuse"
        );
    }
}

/// One run of a scenario: a fresh machine and cache, `setup` on CPU 0 (returns the objects
/// it hands to each CPU), then `work[i]` on CPU i, all at once, then the checks.
fn scenario(
    name: &'static str,
    mutation: Mutation,
    t: Tunables,
    setup: fn(&Ctx) -> Vec<Vec<usize>>,
    work: &[fn(&Ctx, Vec<usize>)],
) {
    let m = ModelMachine::new(work.len(), mutation);
    ModelMachine::set_cpu(0);
    // Debug caches add a red zone / state word and the free pointer after the object.
    let size = if t.debug.any() {
        OBJ_BYTES - 24
    } else {
        OBJ_BYTES
    };
    let c: ModelCache = Cache::new(&m, "model", size, 0, t, 0x5eed_1234, None).unwrap();
    assert_eq!(c.order_objects().objects, OBJS_PER_SLAB);
    let ctx = Ctx {
        m: &m,
        c: &c,
        live: Mutex::new(BTreeSet::new()),
        next_tag: AtomicUsize::new(1),
    };
    let mut given = setup(&ctx);
    given.resize(work.len(), Vec::new());
    for cpu in 0..work.len() {
        m.set_idle(cpu, false);
    }
    shuttle::thread::scope(|s| {
        for (cpu, (f, objs)) in work.iter().zip(given).enumerate() {
            let ctx = &ctx;
            s.spawn(move || {
                ModelMachine::set_cpu(cpu as u16);
                f(ctx, objs);
                // Idle from here on: a call to this CPU runs at once.
                ctx.m.set_idle(cpu, true);
            });
        }
    });
    ctx.finish();
    let stats = c.stats();
    if mutation == Mutation::None {
        let mut cov = COVERAGE.lock().unwrap();
        match cov.iter_mut().find(|(n, _)| *n == name) {
            Some((_, sum)) => {
                for st in ALL_STATS {
                    sum.add_raw(st, stats.get(st));
                }
            }
            None => cov.push((name, stats)),
        }
    }
}

const ALL_STATS: [Stat; 15] = [
    Stat::BarnPut,
    Stat::BarnGet,
    Stat::SheafFlush,
    Stat::SheafTrylockFail,
    Stat::FreeFrozen,
    Stat::FreeAddPartial,
    Stat::FreeRemovePartial,
    Stat::FreeSlab,
    Stat::CpuPartialFree,
    Stat::CpuPartialAlloc,
    Stat::CpuPartialDrain,
    Stat::AllocRefill,
    Stat::AllocFromPartial,
    Stat::DeactivateRemoteFrees,
    Stat::CmpxchgDoubleFail,
];

fn tunables(cpu_partial_objects: usize, min_partial: usize) -> Tunables {
    Tunables {
        max_order: 0,
        min_partial: Some(min_partial),
        cpu_partial: Some(cpu_partial_objects),
        remote_node_defrag_ratio: 1024,
        ..Tunables::default()
    }
}

/// Remote frees racing with the owner CPU's allocations, which take the remote-freed objects
/// back (get_freelist), unfreeze its full CPU slab, and with its flush (deactivate).
/// CPU 0 holds a slab with one free object; CPU 1 frees two of its objects meanwhile and
/// then allocates from whatever its frees put on its CPU partial list.
fn remote_frees_vs_owner(mutation: Mutation) {
    owner_and_remote_frees("owner", mutation, tunables(2, 1))
}

/// `remote_frees_vs_owner` on a debug cache (sanity checks): every allocation and free on
/// the slow path, full slabs kept on the node's full list under list_lock (get_freelist's
/// locked unfreeze, frees from the full list), no CPU partial lists.
fn debug_cache_full_list(mutation: Mutation) {
    owner_and_remote_frees(
        "debug",
        mutation,
        Tunables {
            debug: super::DebugFlags {
                sanity: true,
                ..Default::default()
            },
            ..tunables(0, 1)
        },
    )
}

/// The owner-versus-remote-frees workload of the two scenarios above, on a cache of `t`.
fn owner_and_remote_frees(name: &'static str, mutation: Mutation, t: Tunables) {
    scenario(
        name,
        mutation,
        t,
        |x| {
            let a: Vec<usize> = (0..3).map(|_| x.alloc()).collect();
            vec![vec![a[0]], vec![a[1], a[2]]]
        },
        &[
            |x, mine| {
                let b = x.alloc();
                let d = x.alloc();
                x.free(mine[0]);
                x.c.flush_local();
                let e = x.alloc();
                x.free(b);
                x.free(e);
                let _keep = d;
            },
            |x, mine| {
                for o in mine {
                    x.free(o);
                }
                let o = x.alloc();
                x.free(o);
            },
        ],
    )
}

/// A slab going full -> partial -> empty -> discarded by CPU 1's frees (no CPU partials,
/// min_partial 0) while CPUs 0 and 2, out of objects, take partial slabs off the node list
/// (get_partial_node freezes them) and flush.
fn partial_moves_vs_alloc(mutation: Mutation) {
    scenario(
        "moves",
        mutation,
        tunables(0, 0),
        |x| {
            let a: Vec<usize> = (0..OBJS_PER_SLAB).map(|_| x.alloc()).collect();
            x.c.flush_local();
            vec![vec![], a]
        },
        &[
            alloc_two_and_flush,
            |x, mine| {
                for o in mine {
                    x.free(o);
                }
            },
            alloc_two_and_flush,
        ],
    )
}

fn alloc_two_and_flush(x: &Ctx, _: Vec<usize>) {
    let o1 = x.alloc();
    let o2 = x.alloc();
    x.free(o1);
    x.c.flush_local();
    x.free(o2);
}

/// The CPU partial list's drain: CPU 1's frees freeze full slabs onto its partial list
/// (one slab at most, so the second drains the first: put_cpu_partial -> unfreeze_partials)
/// while CPU 0 frees into the same slabs remotely and both CPUs allocate and flush.
fn cpu_partial_drain_vs_remote_frees(mutation: Mutation) {
    scenario(
        "drain",
        mutation,
        tunables(2, 0),
        |x| {
            // Slabs A and B full on no list, slab C CPU 0's (full) CPU slab.
            let o: Vec<usize> = (0..3 * OBJS_PER_SLAB).map(|_| x.alloc()).collect();
            let (a, b, c) = (&o[0..4], &o[4..8], &o[8..12]);
            vec![
                vec![a[1], a[2], b[1], c[1]],
                vec![a[0], b[0], c[0], a[3], b[2]],
            ]
        },
        &[
            |x, mine| {
                for o in mine {
                    x.free(o);
                }
                let o = x.alloc();
                x.c.flush_local();
                x.free(o);
            },
            |x, mine| {
                for o in mine {
                    x.free(o);
                }
                let o = x.alloc();
                x.free(o);
                x.c.flush_local();
            },
        ],
    )
}

/// `shrink` on CPU 2 (`flush_all`: a cross-CPU call to every CPU, then the empty slabs
/// discarded under list_lock) while CPUs 0 and 1 free and allocate, CPU 1 remotely into CPU
/// 0's slabs, so CPU 0's flush (deactivate, CPU partial drain) runs between two of its
/// operations while another CPU's frees change the same slabs.
fn shrink_vs_alloc_free(mutation: Mutation) {
    scenario(
        "shrink",
        mutation,
        tunables(2, 1),
        |x| {
            // Slab A full on no list, slab B CPU 0's (full) CPU slab.
            let o: Vec<usize> = (0..2 * OBJS_PER_SLAB).map(|_| x.alloc()).collect();
            vec![vec![o[4], o[5]], vec![o[0], o[1], o[2], o[3], o[6]], vec![]]
        },
        &[free_then_alloc_one, free_then_alloc_one, |x, _| {
            x.c.shrink();
        }],
    )
}

fn free_then_alloc_one(x: &Ctx, mine: Vec<usize>) {
    for o in mine {
        x.free(o);
    }
    let o = x.alloc();
    x.free(o);
}

/// The sheaves design with sheaves of 4 objects (a 64-byte block: the model's descriptor
/// pool holds them).
fn sheaves_tunables() -> Tunables {
    Tunables {
        design: super::Design::Sheaves,
        sheaf_capacity: Some(4),
        ..tunables(0, 1)
    }
}

/// Sheaves: CPUs 0 and 1 of one node each free 10 objects the other half of which CPU 0
/// allocated (past their main and spare sheaves: full sheaves go to the shared barn), then
/// allocate 10 back (the spare swapped in, full sheaves taken from the barn, maybe the other
/// CPU's), while CPU 2 shrinks: cross-CPU calls flush every CPU's sheaves and the barn is
/// emptied, racing both.
fn sheaves_barn_exchange(mutation: Mutation) {
    scenario(
        "sheaves",
        mutation,
        sheaves_tunables(),
        |x| {
            let a: Vec<usize> = (0..20).map(|_| x.alloc()).collect();
            vec![a[..10].to_vec(), a[10..].to_vec(), vec![]]
        },
        &[free_all_then_alloc_ten, free_all_then_alloc_ten, |x, _| {
            x.c.shrink();
        }],
    )
}

fn free_all_then_alloc_ten(x: &Ctx, mine: Vec<usize>) {
    for o in mine {
        x.free(o);
    }
    let again: Vec<usize> = (0..10).map(|_| x.alloc()).collect();
    for o in again {
        x.free(o);
    }
}

#[test]
fn model_sheaves_barn_exchange_vs_shrink() {
    check(sheaves_barn_exchange, Mutation::None, schedules(), 7);
    assert_covered("sheaves", &[Stat::BarnPut, Stat::BarnGet, Stat::SheafFlush]);
}

#[test]
fn model_finds_a_barn_lock_that_does_not_lock() {
    // Two CPUs push and pop the barn's stacks (and the node's partial list) at once: a
    // sheaf is lost or handed out twice, with its objects.
    assert_caught(sheaves_barn_exchange, Mutation::NoListLock, 3, CORRUPTION);
}

/// Runs `f` under `iterations` random and `iterations` PCT schedules (fixed seed).
fn check(f: fn(Mutation), mutation: Mutation, iterations: usize, seed: u64) {
    model_check::check(move || f(mutation), iterations, seed);
}

/// Schedules per scheduler for each scenario (see docs/testing.md for the time it takes).
const DEFAULT_SCHEDULES: usize = 1000;

fn schedules() -> usize {
    model_check::schedules(DEFAULT_SCHEDULES)
}

#[test]
fn model_remote_frees_vs_owner_freeze_unfreeze() {
    check(remote_frees_vs_owner, Mutation::None, schedules(), 1);
    assert_covered(
        "owner",
        &[
            Stat::FreeFrozen,
            Stat::AllocRefill,
            Stat::CpuPartialFree,
            Stat::DeactivateRemoteFrees,
            Stat::CmpxchgDoubleFail,
        ],
    );
}

/// Each of `stats` was counted in some schedule of `scenario`.
fn assert_covered(scenario: &str, stats: &[Stat]) {
    for &st in stats {
        let n = covered(scenario, st);
        eprintln!("model {scenario}: {} {n}", st.name());
        assert!(n > 0, "{scenario}: {} never happened", st.name());
    }
}

#[test]
fn model_debug_cache_full_list_vs_remote_frees() {
    check(debug_cache_full_list, Mutation::None, schedules(), 4);
    assert_covered(
        "debug",
        &[
            Stat::FreeAddPartial,
            Stat::FreeRemovePartial,
            Stat::FreeSlab,
            Stat::CmpxchgDoubleFail,
        ],
    );
}

#[test]
fn model_partial_moves_vs_alloc_from_partial() {
    check(partial_moves_vs_alloc, Mutation::None, schedules(), 2);
    assert_covered(
        "moves",
        &[
            Stat::FreeAddPartial,
            Stat::FreeRemovePartial,
            Stat::FreeSlab,
            Stat::AllocFromPartial,
            Stat::CmpxchgDoubleFail,
        ],
    );
}

#[test]
fn model_cpu_partial_drain_vs_remote_frees() {
    check(
        cpu_partial_drain_vs_remote_frees,
        Mutation::None,
        schedules(),
        3,
    );
    assert_covered(
        "drain",
        &[
            Stat::CpuPartialFree,
            Stat::CpuPartialDrain,
            Stat::CpuPartialAlloc,
            Stat::FreeFrozen,
            Stat::FreeSlab,
            Stat::CmpxchgDoubleFail,
        ],
    );
}

#[test]
fn model_shrink_vs_alloc_and_free() {
    check(shrink_vs_alloc_free, Mutation::None, schedules(), 5);
    assert_covered(
        "shrink",
        &[
            Stat::FreeSlab,
            Stat::CpuPartialFree,
            Stat::FreeFrozen,
            Stat::CmpxchgDoubleFail,
        ],
    );
    let busy = CALLS_ON_BUSY_CPUS.load(SeqCst);
    eprintln!("model shrink: flushes run on a CPU parked between its operations {busy}");
    assert!(busy > 0, "no flush ran between a busy CPU's operations");
}

/// The first failure the checks report for `f` on a broken platform, or None.
fn failure(f: fn(Mutation), mutation: Mutation, iterations: usize, seed: u64) -> Option<String> {
    model_check::failure(|| check(f, mutation, iterations, seed))
}

/// The failure messages of the checks that show objects or slabs corrupted, lost or
/// handed out twice.
const CORRUPTION: &[&str] = &[
    "twice",
    "written by the allocator",
    "leaked",
    "lost objects",
    "in use after everything was freed",
    "not given back",
    "differ",
    "overflow",
    "nr_partial",
];

/// Asserts that the checks caught `mutation` with one of `expected` (parts of the failure
/// messages of the checks above).
fn assert_caught(f: fn(Mutation), mutation: Mutation, seed: u64, expected: &[&str]) {
    let msg = failure(f, mutation, DEFAULT_SCHEDULES, seed)
        .unwrap_or_else(|| panic!("{mutation:?} went unnoticed in {DEFAULT_SCHEDULES} schedules"));
    assert!(
        expected.iter().any(|e| msg.contains(e)),
        "{mutation:?} failed, but not as expected: {msg}"
    );
}

#[test]
fn model_finds_a_non_atomic_state_word_update() {
    // Two updates of one slab's state word interleave and one is lost: a slab keeps an
    // in-use count for objects that were freed (it is never discarded), or leaks, or a lost
    // allocation makes a later unfreeze take more objects off the count than it holds.
    assert_caught(
        remote_frees_vs_owner,
        Mutation::SplitCas,
        1,
        &[
            "leaked",
            "in use after everything was freed",
            "subtract with overflow",
        ],
    );
}

#[test]
fn model_finds_a_cross_cpu_call_in_mid_operation() {
    // CPU 0's slabs flushed by another thread while CPU 0 is inside an allocation or free:
    // its CPU slab and partial list change under it.
    assert_caught(
        shrink_vs_alloc_free,
        Mutation::CallMidOperation,
        5,
        CORRUPTION,
    );
}

#[test]
fn model_finds_a_list_lock_that_does_not_lock() {
    // Two CPUs link and unlink the node partial list at once: its length and its links
    // disagree.
    assert_caught(
        partial_moves_vs_alloc,
        Mutation::NoListLock,
        2,
        &["nr_partial"],
    );
}
