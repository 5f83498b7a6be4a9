//! Model checks (shuttle) of the page allocator's per-CPU list protocol
//! (kernel/src/mm/frame/pcp.rs) over the real buddy allocator of this crate.
//!
//! The per-CPU list itself lives in the kernel (it reads the kernel's memmap and node
//! structures), so this module carries a step-for-step model of it: the claim (`BUSY` bit of
//! the count word, taken by one compare-exchange: `enter`, and `claim` that retries for a
//! remote drain), `push` (the block's state byte moved from allocated to cached by one
//! compare-exchange, then linked), `pop`, `refill` and `drain` (under the node lock, through
//! `Buddy::alloc`, `alloc_cached` and `free_cached`). Each function below names the kernel
//! function it models; a change of pcp.rs must be mirrored here (docs/frame.md says so). The
//! buddy, its state bytes and its `replace_state` are the real code, on a store whose every
//! access is a shuttle scheduling point.
//!
//! Checked: two CPUs freeing one block at once (through their lists or the buddy) succeed
//! exactly once; an allocation on a CPU racing another CPU's remote drain of its list never
//! hands out a block twice or loses one. Mutations that must be caught: `push` with a load and
//! a store instead of the compare-exchange, and a claim taken with a load and a store.

use crate::buddy::{Buddy, BuddyStore, ALLOCATED, CACHED, NIL};
use crate::model_check::{self, point};
use shuttle::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering::SeqCst};
use std::vec::Vec;

/// Pages of the model node (pfn 0..NR_PAGES).
const NR_PAGES: usize = 16;
const PCP_ORDERS: usize = 4;
const BUSY: u32 = 1 << 31;
/// pcp.rs's CLAIM_SPINS, smaller: each spin is a scheduling point here.
const CLAIM_SPINS: u32 = 64;

/// Over all schedules: how often a CPU found its own list claimed (and used the buddy), and
/// how often a remote drain had to retry its claim: the races the scenarios are about.
static OWNER_REFUSED: AtomicU64 = AtomicU64::new(0);
static CLAIM_RETRIED: AtomicU64 = AtomicU64::new(0);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mutation {
    None,
    /// `push` checks the state with a load and writes it with a store.
    SplitPush,
    /// `enter` takes the claim with a load and a store.
    SplitClaim,
}

/// The memmap: per page a state byte and free/per-CPU list links (the kernel's `PageMeta`).
struct MemMap {
    state: Vec<AtomicU8>,
    next: Vec<AtomicU32>,
    prev: Vec<AtomicU32>,
}

/// The buddy's view of the memmap (the kernel's `impl BuddyStore for MemMap`).
struct Store<'a>(&'a MemMap);

impl BuddyStore for Store<'_> {
    fn nr_pages(&self) -> usize {
        NR_PAGES
    }
    fn next(&self, idx: u32) -> u32 {
        point();
        self.0.next[idx as usize].load(SeqCst)
    }
    fn prev(&self, idx: u32) -> u32 {
        point();
        self.0.prev[idx as usize].load(SeqCst)
    }
    fn set_next(&mut self, idx: u32, next: u32) {
        point();
        self.0.next[idx as usize].store(next, SeqCst)
    }
    fn set_prev(&mut self, idx: u32, prev: u32) {
        point();
        self.0.prev[idx as usize].store(prev, SeqCst)
    }
    fn state(&self, idx: u32) -> u8 {
        point();
        self.0.state[idx as usize].load(SeqCst)
    }
    fn set_state(&mut self, idx: u32, state: u8) {
        point();
        self.0.state[idx as usize].store(state, SeqCst)
    }
    fn replace_state(&mut self, idx: u32, old: u8, new: u8) -> bool {
        point();
        self.0.state[idx as usize]
            .compare_exchange(old, new, SeqCst, SeqCst)
            .is_ok()
    }
}

/// One CPU's list for the node (the kernel's `PcpList`).
struct PcpList {
    heads: [AtomicU32; PCP_ORDERS],
    word: AtomicU32,
}

struct Machine<'a> {
    mem: &'a MemMap,
    buddy: Mutex<Buddy<Store<'a>>>,
    lists: Vec<PcpList>,
    mutation: Mutation,
}

impl Machine<'_> {
    /// `PcpList::enter`: one compare-exchange sets `BUSY`; None when already claimed.
    fn enter(&self, cpu: usize) -> Option<u32> {
        let w = &self.lists[cpu].word;
        point();
        let word = w.load(SeqCst);
        if word & BUSY != 0 {
            return None;
        }
        point();
        if self.mutation == Mutation::SplitClaim {
            if w.load(SeqCst) != word {
                return None;
            }
            point();
            w.store(word | BUSY, SeqCst);
            return Some(word);
        }
        w.compare_exchange(word, word | BUSY, SeqCst, SeqCst).ok()
    }

    /// `PcpList::claim`: `enter`, retried a bounded number of times (the spin yields here so
    /// that the scheduler lets the holder finish).
    fn claim(&self, cpu: usize) -> Option<u32> {
        for _ in 0..CLAIM_SPINS {
            if let Some(pages) = self.enter(cpu) {
                return Some(pages);
            }
            if self.mutation == Mutation::None {
                CLAIM_RETRIED.fetch_add(1, SeqCst);
            }
            shuttle::thread::yield_now();
        }
        None
    }

    fn count_refused(&self) {
        if self.mutation == Mutation::None {
            OWNER_REFUSED.fetch_add(1, SeqCst);
        }
    }

    /// `PcpList::exit`.
    fn exit(&self, cpu: usize, pages: u32) {
        point();
        self.lists[cpu].word.store(pages, SeqCst);
    }

    /// `PcpList::pop_raw`: the head block of `order`, marked allocated.
    fn pop(&self, cpu: usize, pages: u32, order: u8) -> Option<(u32, u32)> {
        let head = &self.lists[cpu].heads[order as usize];
        point();
        let idx = head.load(SeqCst);
        if idx == NIL {
            return None;
        }
        point();
        head.store(self.mem.next[idx as usize].load(SeqCst), SeqCst);
        point();
        self.mem.state[idx as usize].store(ALLOCATED | order, SeqCst);
        Some((idx, pages - (1 << order)))
    }

    /// `PcpList::push`: allocated -> cached in one compare-exchange, then linked; None when
    /// the block is not an allocated block of `order` (the free is refused).
    fn push(&self, cpu: usize, pages: u32, idx: u32, order: u8) -> Option<u32> {
        let st = &self.mem.state[idx as usize];
        point();
        if self.mutation == Mutation::SplitPush {
            if st.load(SeqCst) != ALLOCATED | order {
                return None;
            }
            point();
            st.store(CACHED | order, SeqCst);
        } else {
            st.compare_exchange(ALLOCATED | order, CACHED | order, SeqCst, SeqCst)
                .ok()?;
        }
        let head = &self.lists[cpu].heads[order as usize];
        point();
        self.mem.next[idx as usize].store(head.load(SeqCst), SeqCst);
        point();
        head.store(idx, SeqCst);
        Some(pages + (1 << order))
    }

    /// `PcpList::refill`: under the node lock one block allocated for the caller and
    /// `batch - 1` more cached onto the list.
    fn refill(&self, cpu: usize, order: u8, batch_blocks: u32, pages: u32) -> (Option<u32>, u32) {
        let mut buddy = self.buddy.lock().unwrap();
        let Some(first) = buddy.alloc(order) else {
            return (None, pages);
        };
        let head = &self.lists[cpu].heads[order as usize];
        let mut added = 0;
        for _ in 1..batch_blocks {
            let Some(pfn) = buddy.alloc_cached(order) else {
                break;
            };
            point();
            self.mem.next[pfn as usize].store(head.load(SeqCst), SeqCst);
            point();
            head.store(pfn as u32, SeqCst);
            added += 1;
        }
        (Some(first as u32), pages + (added << order))
    }

    /// `PcpList::drain` of everything (the remote drain of `drain_cpu`): every listed block
    /// back to the buddy under the node lock. Returns the pages given back and the new page
    /// count.
    fn drain(&self, cpu: usize, pages: u32) -> (u32, u32) {
        let mut drained = 0;
        let mut buddy = self.buddy.lock().unwrap();
        for (order, head) in self.lists[cpu].heads.iter().enumerate() {
            loop {
                point();
                let idx = head.load(SeqCst);
                if idx == NIL {
                    break;
                }
                point();
                head.store(self.mem.next[idx as usize].load(SeqCst), SeqCst);
                buddy
                    .free_cached(idx as u64, order as u8)
                    .expect("a listed block is cached");
                drained += 1 << order;
            }
        }
        (drained, pages.saturating_sub(drained))
    }

    /// The kernel's `alloc_on` for the running CPU: its list (pop, else refill), else the
    /// buddy when the list is claimed.
    fn alloc(&self, cpu: usize, order: u8) -> Option<u32> {
        match self.enter(cpu) {
            Some(pages) => {
                let (got, pages) = match self.pop(cpu, pages, order) {
                    Some((idx, pages)) => (Some(idx), pages),
                    None => self.refill(cpu, order, 2, pages),
                };
                self.exit(cpu, pages);
                got
            }
            None => {
                self.count_refused();
                self.buddy
                    .lock()
                    .unwrap()
                    .alloc(order)
                    .map(|pfn| pfn as u32)
            }
        }
    }

    /// The kernel's free: onto the running CPU's list (`free_to_pcp`), or the buddy when the
    /// list is claimed (`free_slow`). Returns whether the free was accepted.
    fn free(&self, cpu: usize, idx: u32, order: u8) -> bool {
        match self.enter(cpu) {
            Some(pages) => match self.push(cpu, pages, idx, order) {
                Some(new_pages) => {
                    self.exit(cpu, new_pages);
                    true
                }
                None => {
                    self.exit(cpu, pages);
                    false
                }
            },
            None => {
                self.count_refused();
                self.free_buddy(idx, order)
            }
        }
    }

    /// A free straight to the buddy (orders above the lists' or a claimed list).
    fn free_buddy(&self, idx: u32, order: u8) -> bool {
        self.buddy.lock().unwrap().free(idx as u64, order).is_ok()
    }

    /// `drain_cpu` for another CPU's list.
    fn drain_remote(&self, cpu: usize) {
        point();
        if self.lists[cpu].word.load(SeqCst) & !BUSY == 0 {
            return;
        }
        if let Some(pages) = self.claim(cpu) {
            let (_, pages) = self.drain(cpu, pages);
            self.exit(cpu, pages);
        }
    }

    /// After the CPUs joined: every list drained, `held` freed, and the buddy whole again.
    fn finish(&self, held: &[u32]) {
        for cpu in 0..self.lists.len() {
            let word = self.lists[cpu].word.load(SeqCst);
            assert_eq!(word & BUSY, 0, "list of CPU {cpu} left claimed");
            let (drained, _) = self.drain(cpu, word);
            assert_eq!(
                drained, word,
                "list of CPU {cpu}: count and blocks disagree"
            );
            self.exit(cpu, 0);
        }
        for &idx in held {
            assert!(self.free_buddy(idx, 0), "held block {idx} not allocated");
        }
        let buddy = self.buddy.lock().unwrap();
        buddy.check_lists().unwrap();
        assert_eq!(buddy.free_pages(), NR_PAGES, "pages lost");
    }
}

/// A fresh node (all pages free in the buddy) and `cpus` empty lists; runs `f`.
fn with_machine(cpus: usize, mutation: Mutation, f: impl FnOnce(&Machine)) {
    let mem = MemMap {
        state: (0..NR_PAGES).map(|_| AtomicU8::new(0)).collect(),
        next: (0..NR_PAGES).map(|_| AtomicU32::new(NIL)).collect(),
        prev: (0..NR_PAGES).map(|_| AtomicU32::new(NIL)).collect(),
    };
    let mut buddy = Buddy::new(Store(&mem), 0);
    buddy.add_free_range(0, NR_PAGES as u64);
    let m = Machine {
        mem: &mem,
        buddy: Mutex::new(buddy),
        lists: (0..cpus)
            .map(|_| PcpList {
                heads: [const { AtomicU32::new(NIL) }; PCP_ORDERS],
                word: AtomicU32::new(0),
            })
            .collect(),
        mutation,
    };
    f(&m);
}

/// Two CPUs free one allocated block at once (CPU 0 through its list, CPU 1 through its
/// list or, on the second variant, the buddy): exactly one free is accepted.
fn double_free(mutation: Mutation) {
    for cpu1_via_buddy in [false, true] {
        with_machine(2, mutation, |m| {
            let blk = m.alloc(0, 0).unwrap();
            let wins: Vec<bool> = shuttle::thread::scope(|s| {
                let a = s.spawn(|| m.free(0, blk, 0));
                let b = s.spawn(|| {
                    if cpu1_via_buddy {
                        m.free_buddy(blk, 0)
                    } else {
                        m.free(1, blk, 0)
                    }
                });
                vec![a.join().unwrap(), b.join().unwrap()]
            });
            assert_eq!(
                wins.iter().filter(|w| **w).count(),
                1,
                "double free accepted {wins:?}"
            );
            m.finish(&[]);
        });
    }
}

/// CPU 0 allocates from its list (refilled in batches of two) and frees, while CPU 1 drains
/// CPU 0's list remotely: no block is handed out twice and none is lost.
fn alloc_vs_remote_drain(mutation: Mutation) {
    with_machine(2, mutation, |m| {
        // CPU 0's list holds one cached block (refill: one allocated + one cached).
        let first = m.alloc(0, 0).unwrap();
        let held: Vec<u32> = shuttle::thread::scope(|s| {
            let a = s.spawn(|| {
                let got: Vec<u32> = (0..3).map(|_| m.alloc(0, 0).unwrap()).collect();
                assert!(m.free(0, got[0], 0), "free of a held block refused");
                got[1..].to_vec()
            });
            let b = s.spawn(|| {
                m.drain_remote(0);
                m.drain_remote(0);
            });
            b.join().unwrap();
            a.join().unwrap()
        });
        let mut all = held.clone();
        all.push(first);
        let mut sorted = all.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), all.len(), "block handed out twice: {all:?}");
        for &idx in &all {
            assert_eq!(
                m.mem.state[idx as usize].load(SeqCst),
                ALLOCATED,
                "held block {idx} not allocated"
            );
        }
        m.finish(&all);
    });
}

/// `iterations` random and `iterations` PCT schedules, fixed seed.
fn check(f: fn(Mutation), mutation: Mutation, iterations: usize, seed: u64) {
    model_check::check(move || f(mutation), iterations, seed);
}

/// Schedules per scheduler for each scenario (see docs/testing.md for the time it takes).
const DEFAULT_SCHEDULES: usize = 1000;

fn schedules() -> usize {
    model_check::schedules(DEFAULT_SCHEDULES)
}

#[test]
fn model_pcp_double_free_succeeds_once() {
    check(double_free, Mutation::None, schedules(), 11);
}

#[test]
fn model_pcp_alloc_vs_remote_drain() {
    check(alloc_vs_remote_drain, Mutation::None, schedules(), 12);
    let (refused, retried) = (OWNER_REFUSED.load(SeqCst), CLAIM_RETRIED.load(SeqCst));
    eprintln!("model pcp: owner found its list claimed {refused} times, drain retried {retried}");
    assert!(refused > 0 && retried > 0, "the claim was never contended");
}

fn failure(f: fn(Mutation), mutation: Mutation, seed: u64) -> Option<String> {
    model_check::failure(|| check(f, mutation, DEFAULT_SCHEDULES, seed))
}

#[test]
fn model_pcp_finds_a_non_atomic_push() {
    let msg = failure(double_free, Mutation::SplitPush, 11).expect("split push went unnoticed");
    assert!(msg.contains("double free accepted"), "{msg}");
}

#[test]
fn model_pcp_finds_a_non_atomic_claim() {
    let msg = failure(alloc_vs_remote_drain, Mutation::SplitClaim, 12)
        .expect("split claim went unnoticed");
    assert!(
        [
            "twice",
            "not allocated",
            "pages lost",
            "disagree",
            "cached",
            "check_lists",
            "Err"
        ]
        .iter()
        .any(|e| msg.contains(e)),
        "{msg}"
    );
}
