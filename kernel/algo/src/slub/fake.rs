//! A fake machine for the host tests: word-addressed memory in an array, a first-fit page
//! allocator per node, owner words, a descriptor pool, fake CPUs (one per thread) and a
//! counting clock. Deterministic, so every SLUB path can be driven and checked.

use super::placed::HeapPerCpu;
use super::platform::{Platform, Report, SlabPages, DESC_BYTES};
use super::stats::ErrorKind;
use crate::topology::{CpuId, CpuInfo, NodeId, NodeInfo, Topology};
use std::boxed::Box;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::Mutex;
use std::vec::Vec;

pub const BASE: usize = 0x1000_0000;
const PAGE: usize = 4096;
const NR_DESCS: usize = 1 << 15;
/// Sheaf blocks: a pool of fixed-size blocks after the descriptors (a sheaf of up to
/// (BLOCK_BYTES - 32) / 8 objects).
pub const BLOCK_BYTES: usize = 2048;
const NR_BLOCKS: usize = 1024;

std::thread_local! {
    static CPU: Cell<u16> = const { Cell::new(0) };
}

pub struct FakeMachine {
    pub topo: Topology,
    words: Vec<AtomicUsize>,
    owners: Vec<AtomicUsize>,
    /// Per page: true when allocated.
    used: Mutex<Vec<bool>>,
    /// Per node: [first page, end page).
    node_pages: Vec<(usize, usize)>,
    descs_free: Mutex<Vec<usize>>,
    desc_base: usize,
    blocks_free: Mutex<Vec<usize>>,
    clock: AtomicU64,
    pub reports: Mutex<Vec<(std::string::String, usize, ErrorKind)>>,
    pub lock_acquisitions: AtomicU64,
    /// When set, page allocations above this order fail (order fallback tests).
    pub max_order_ok: AtomicUsize,
    /// When set, every page allocation fails.
    pub oom: std::sync::atomic::AtomicBool,
    /// An interrupt: after this many more word loads (0: none armed), `irq` runs inside
    /// the last of them, on the loading CPU, after the word was read and before the load
    /// returns it (a nested context, as a real interrupt handler runs on top of the code
    /// it interrupts, which then goes on with the value it had read).
    pub irq_after_loads: AtomicUsize,
    pub irq: Mutex<Option<Box<dyn FnOnce() + Send>>>,
    /// Mutation: the fast paths' (freelist, tid) compare ignores the tid, so an interrupt
    /// that takes the head and gives it back (ABA) goes unnoticed. The interrupt tests must
    /// catch it.
    pub cas_ignores_tid: std::sync::atomic::AtomicBool,
    /// When set, `owner_fast` finds no page (as the kernel's vmemmap for a section two
    /// nodes share): every free fast path must hand the object to a full lookup.
    pub owner_fast_misses: std::sync::atomic::AtomicBool,
    /// Every structure placed on a node (`node_box`, `alloc_per_cpu`): its address and the
    /// node whose memory the fake says it came from, latest last.
    pub placed: Mutex<Vec<(usize, NodeId)>>,
}

impl FakeMachine {
    /// A machine with `pages_per_node[i]` pages on node i (0 = memoryless), CPUs given by their
    /// node, and a distance matrix (None: 10/20).
    pub fn new(
        pages_per_node: &[usize],
        cpu_nodes: &[u16],
        distances: Option<Vec<Vec<u8>>>,
    ) -> FakeMachine {
        let total: usize = pages_per_node.iter().sum();
        let mut node_pages = Vec::new();
        let mut nodes = Vec::new();
        let mut first = 0;
        for (i, &n) in pages_per_node.iter().enumerate() {
            node_pages.push((first, first + n));
            let ranges = if n == 0 {
                vec![]
            } else {
                vec![(
                    (BASE + first * PAGE) as u64,
                    (BASE + (first + n) * PAGE) as u64,
                )]
            };
            nodes.push(NodeInfo {
                id: NodeId(i as u16),
                pxm: i as u32,
                mem_ranges: ranges,
                cpus: vec![],
            });
            first += n;
        }
        let cpus = cpu_nodes
            .iter()
            .enumerate()
            .map(|(i, &n)| CpuInfo {
                cpu: CpuId(i as u16),
                apic_id: i as u32,
                node: NodeId(n),
            })
            .collect();
        let topo = Topology::new(nodes, cpus, distances);
        let nr_words = (total * PAGE + NR_DESCS * DESC_BYTES + NR_BLOCKS * BLOCK_BYTES) / 8;
        let desc_base = BASE + total * PAGE;
        let block_base = desc_base + NR_DESCS * DESC_BYTES;
        FakeMachine {
            topo,
            words: (0..nr_words).map(|_| AtomicUsize::new(0)).collect(),
            owners: (0..total).map(|_| AtomicUsize::new(0)).collect(),
            used: Mutex::new(vec![false; total]),
            node_pages,
            descs_free: Mutex::new(
                (0..NR_DESCS)
                    .rev()
                    .map(|i| desc_base + i * DESC_BYTES)
                    .collect(),
            ),
            desc_base,
            blocks_free: Mutex::new(
                (0..NR_BLOCKS)
                    .rev()
                    .map(|i| block_base + i * BLOCK_BYTES)
                    .collect(),
            ),
            clock: AtomicU64::new(0),
            reports: Mutex::new(Vec::new()),
            lock_acquisitions: AtomicU64::new(0),
            max_order_ok: AtomicUsize::new(usize::MAX),
            oom: std::sync::atomic::AtomicBool::new(false),
            irq_after_loads: AtomicUsize::new(0),
            irq: Mutex::new(None),
            cas_ignores_tid: std::sync::atomic::AtomicBool::new(false),
            owner_fast_misses: std::sync::atomic::AtomicBool::new(false),
            placed: Mutex::new(Vec::new()),
        }
    }

    pub fn set_cpu(cpu: u16) {
        CPU.with(|c| c.set(cpu));
    }

    fn word(&self, addr: usize) -> &AtomicUsize {
        assert!(
            addr >= BASE && addr.is_multiple_of(8),
            "bad address {addr:#x}"
        );
        &self.words[(addr - BASE) / 8]
    }

    /// Sheaf blocks handed out and not given back.
    pub fn blocks_in_use(&self) -> usize {
        NR_BLOCKS - self.blocks_free.lock().unwrap().len()
    }

    pub fn free_pages_on(&self, node: usize) -> usize {
        let (s, e) = self.node_pages[node];
        let used = self.used.lock().unwrap();
        (s..e).filter(|&i| !used[i]).count()
    }

    pub fn free_pages_total(&self) -> usize {
        (0..self.node_pages.len())
            .map(|n| self.free_pages_on(n))
            .sum()
    }

    pub fn descs_in_use(&self) -> usize {
        NR_DESCS - self.descs_free.lock().unwrap().len()
    }

    pub fn node_of_addr(&self, addr: usize) -> usize {
        let page = (addr - BASE) / PAGE;
        self.node_pages
            .iter()
            .position(|&(s, e)| s <= page && page < e)
            .unwrap()
    }

    fn try_node(&self, node: usize, order: u8) -> Option<usize> {
        let (s, e) = self.node_pages[node];
        let n = 1usize << order;
        let mut used = self.used.lock().unwrap();
        let mut i = s.next_multiple_of(n);
        while i + n <= e {
            if used[i..i + n].iter().all(|u| !u) {
                for u in &mut used[i..i + n] {
                    *u = true;
                }
                return Some(i);
            }
            i += n;
        }
        None
    }

    /// Marks every free page of `node` used (an exhausted node); returns them for `release`.
    pub fn exhaust_node(&self, node: usize) -> Vec<usize> {
        let (s, e) = self.node_pages[node];
        let mut used = self.used.lock().unwrap();
        let mut taken = Vec::new();
        for (i, u) in used.iter_mut().enumerate().take(e).skip(s) {
            if !*u {
                *u = true;
                taken.push(i);
            }
        }
        taken
    }

    /// Gives back the pages `exhaust_node` took.
    pub fn release(&self, pages: &[usize]) {
        let mut used = self.used.lock().unwrap();
        for &i in pages {
            used[i] = false;
        }
    }

    /// The node `addr`'s structure was placed on (its latest placement), if any.
    pub fn placed_on<T>(&self, value: &T) -> Option<NodeId> {
        let addr = value as *const T as usize;
        let placed = self.placed.lock().unwrap();
        placed.iter().rev().find(|p| p.0 == addr).map(|p| p.1)
    }

    /// The node whose memory serves a request for `node`: `node` if it has pages, else the
    /// nearest that has (the kernel's Policy::Preferred, Linux's kmalloc_node).
    fn memory_for(&self, node: NodeId) -> Option<NodeId> {
        self.topo
            .fallback_order(node)
            .iter()
            .copied()
            .find(|n| self.node_pages[n.index()].1 > self.node_pages[n.index()].0)
    }

    pub fn take_reports(&self) -> Vec<(std::string::String, usize, ErrorKind)> {
        std::mem::take(&mut *self.reports.lock().unwrap())
    }
}

impl Platform for &FakeMachine {
    type Lock = Mutex<()>;
    type NodeBox<T: Send + Sync + 'static> = Box<T>;
    type PerCpu<T: Default + Send + Sync + 'static> = HeapPerCpu<T>;

    fn node_box<T: Send + Sync + 'static>(&self, value: T, node: NodeId) -> Option<Box<T>> {
        let on = self.memory_for(node)?;
        let b = Box::new(value);
        let addr = &*b as *const T as usize;
        self.placed.lock().unwrap().push((addr, on));
        Some(b)
    }
    fn alloc_per_cpu<T: Default + Send + Sync + 'static>(&self) -> Option<HeapPerCpu<T>> {
        let slots = HeapPerCpu::<T>::new(self.topo.nr_cpus());
        let mut placed = self.placed.lock().unwrap();
        for (i, slot) in slots.0.iter().enumerate() {
            let node = self.topo.node_of_cpu(CpuId(i as u16));
            placed.push((slot as *const T as usize, self.memory_for(node)?));
        }
        Some(slots)
    }

    fn new_lock(&self) -> Mutex<()> {
        Mutex::new(())
    }
    fn with_lock<R>(&self, lock: &Mutex<()>, f: impl FnOnce() -> R) -> R {
        let _g = lock.lock().unwrap();
        self.lock_acquisitions.fetch_add(1, SeqCst);
        f()
    }
    fn topology(&self) -> &Topology {
        &self.topo
    }
    fn cpu_cmpxchg_double(
        &self,
        pair: [&AtomicUsize; 2],
        old: [usize; 2],
        new: [usize; 2],
    ) -> bool {
        let tid_ok = self.cas_ignores_tid.load(SeqCst) || pair[1].load(SeqCst) == old[1];
        if pair[0].load(SeqCst) == old[0] && tid_ok {
            pair[0].store(new[0], SeqCst);
            pair[1].store(new[1], SeqCst);
            true
        } else {
            false
        }
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
        for cpu in 0..self.topo.nr_cpus() {
            FakeMachine::set_cpu(cpu as u16);
            f();
        }
        FakeMachine::set_cpu(me);
    }
    fn load(&self, addr: usize) -> usize {
        let value = self.word(addr).load(SeqCst);
        let left = self.irq_after_loads.load(SeqCst);
        if left != 0 {
            self.irq_after_loads.store(left - 1, SeqCst);
            if left == 1 {
                let handler = self.irq.lock().unwrap().take();
                if let Some(h) = handler {
                    h();
                }
            }
        }
        value
    }
    fn store(&self, addr: usize, value: usize) {
        self.word(addr).store(value, SeqCst)
    }
    fn cas(&self, addr: usize, old: usize, new: usize) -> bool {
        self.word(addr)
            .compare_exchange(old, new, SeqCst, SeqCst)
            .is_ok()
    }
    fn alloc_pages(&self, order: u8, node: Option<NodeId>) -> Option<SlabPages> {
        if self.oom.load(SeqCst) || order as usize > self.max_order_ok.load(SeqCst) {
            return None;
        }
        let want = node.unwrap_or_else(|| self.topo.node_of_cpu(self.cpu()));
        for &n in self.topo.fallback_order(want) {
            if let Some(page) = self.try_node(n.index(), order) {
                return Some(SlabPages {
                    base: BASE + page * PAGE,
                    node: n,
                });
            }
        }
        None
    }
    fn alloc_pages_on(&self, order: u8, node: NodeId) -> Option<SlabPages> {
        if self.oom.load(SeqCst) || order as usize > self.max_order_ok.load(SeqCst) {
            return None;
        }
        let page = self.try_node(node.index(), order)?;
        Some(SlabPages {
            base: BASE + page * PAGE,
            node,
        })
    }
    fn free_pages(&self, base: usize, order: u8) {
        let first = (base - BASE) / PAGE;
        let mut used = self.used.lock().unwrap();
        for u in &mut used[first..first + (1 << order)] {
            assert!(*u, "freeing a free page");
            *u = false;
        }
    }
    fn set_owner(&self, base: usize, nr_pages: usize, owner: usize) {
        let first = (base - BASE) / PAGE;
        for o in &self.owners[first..first + nr_pages] {
            o.store(owner, SeqCst);
        }
    }
    fn owner(&self, addr: usize) -> usize {
        if addr < BASE || addr >= self.desc_base {
            return 0;
        }
        self.owners[(addr - BASE) / PAGE].load(SeqCst)
    }
    fn owner_fast(&self, addr: usize) -> usize {
        if self.owner_fast_misses.load(SeqCst) {
            return 0;
        }
        self.owner(addr)
    }
    fn node_has_free_memory(&self, node: NodeId) -> bool {
        self.free_pages_on(node.index()) > 0
    }
    fn alloc_desc(&self) -> Option<usize> {
        let d = self.descs_free.lock().unwrap().pop()?;
        for w in 0..DESC_BYTES / 8 {
            self.store(d + w * 8, 0);
        }
        Some(d)
    }
    fn free_desc(&self, desc: usize) {
        self.descs_free.lock().unwrap().push(desc);
    }
    fn alloc_block(&self, bytes: usize) -> Option<usize> {
        if bytes > BLOCK_BYTES || self.oom.load(SeqCst) {
            return None;
        }
        let b = self.blocks_free.lock().unwrap().pop()?;
        for w in 0..bytes.div_ceil(8) {
            self.store(b + w * 8, 0);
        }
        Some(b)
    }
    fn free_block(&self, addr: usize, bytes: usize) {
        assert!(bytes <= BLOCK_BYTES);
        let mut free = self.blocks_free.lock().unwrap();
        assert!(!free.contains(&addr), "block {addr:#x} freed twice");
        free.push(addr);
    }
    fn report(&self, r: &Report<'_>) {
        self.reports
            .lock()
            .unwrap()
            .push((r.cache.into(), r.addr, r.kind));
    }
}

impl FakeMachine {
    /// The tag word tests keep in an object (its first word; 0 means untagged).
    pub fn store_tag(&self, obj: usize, tag: u64) {
        self.word(obj).store(tag as usize, SeqCst);
    }
    pub fn load_tag(&self, obj: usize) -> u64 {
        self.word(obj).load(SeqCst) as u64
    }
    /// Swaps the tag word; returns the previous tag.
    pub fn cas_tag(&self, obj: usize, tag: u64) -> u64 {
        self.word(obj).swap(tag as usize, SeqCst) as u64
    }
}
