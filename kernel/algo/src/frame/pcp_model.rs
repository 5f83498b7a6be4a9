//! Model checks (shuttle) of the page allocator's per-CPU list protocol (crate::frame::pcp, the
//! code the kernel runs) over the real buddy allocator of this crate.
//!
//! The lists, their claim, `push`, `pop`, `refill` and `drain` are the real `PcpList`, on a
//! machine (`PcpSync`) whose every shared access is a scheduling point and whose remote
//! claim yields while it spins; the memmap is a vector of pages with the real links. What is
//! modelled is only the kernel's glue around them (frame/mod.rs): `alloc` (pop, else refill,
//! else the buddy when the list is claimed), `free` (push, else the buddy) and `drain_cpu`'s
//! remote drain, each named after the kernel function it stands for.
//!
//! Checked: two CPUs freeing one block at once (through their lists or the buddy) succeed
//! exactly once; an allocation on a CPU racing another CPU's remote drain of its list never
//! hands out a block twice or loses one. Mutations that must be caught, as mutated
//! machines: `push`'s state change as a load and a store instead of the compare-exchange,
//! and a claim taken with a load and a store.

use crate::frame::buddy::{Buddy, BuddyStore, ALLOCATED, NIL};
use crate::frame::pcp::{PcpList, PcpPage, PcpSync};
use crate::model_check::{self, point};
use shuttle::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering::SeqCst};
use std::vec::Vec;

/// Pages of the model node (pfn 0..NR_PAGES).
const NR_PAGES: usize = 16;

/// Over all schedules of the unmutated machine: how often a CPU found its own list claimed
/// (and used the buddy), and how often a remote drain had to retry its claim: the races the
/// scenarios are about.
static OWNER_REFUSED: AtomicU64 = AtomicU64::new(0);
static CLAIM_RETRIED: AtomicU64 = AtomicU64::new(0);

/// The model machine: every hook a scheduling point, a remote claim's spin a yield (so PCT
/// lets the holder finish), fewer spins (each is a scheduling point here).
struct Model;
impl PcpSync for Model {
    const CLAIM_SPINS: u32 = 64;
    fn point() {
        point();
    }
    fn spin() {
        CLAIM_RETRIED.fetch_add(1, SeqCst);
        shuttle::thread::yield_now();
    }
}

/// Mutation: `push` checks the state with a load and writes it with a store.
struct SplitPush;
impl PcpSync for SplitPush {
    const CLAIM_SPINS: u32 = 64;
    fn point() {
        point();
    }
    fn spin() {
        shuttle::thread::yield_now();
    }
    fn move_state(state: &AtomicU8, old: u8, new: u8) -> bool {
        if state.load(SeqCst) != old {
            return false;
        }
        point();
        state.store(new, SeqCst);
        true
    }
}

/// Mutation: `enter` takes the claim with a load and a store.
struct SplitClaim;
impl PcpSync for SplitClaim {
    const CLAIM_SPINS: u32 = 64;
    fn point() {
        point();
    }
    fn spin() {
        shuttle::thread::yield_now();
    }
    fn claim_word(word: &AtomicU32, old: u32, new: u32) -> Option<u32> {
        if word.load(SeqCst) != old {
            return None;
        }
        point();
        word.store(new, SeqCst);
        Some(old)
    }
}

/// One page's metadata: the buddy's and the lists' links (the kernel's `PageMeta`).
struct Page {
    state: AtomicU8,
    next: AtomicU32,
    prev: AtomicU32,
}

impl PcpPage for Page {
    fn state(&self) -> &AtomicU8 {
        &self.state
    }
    fn next(&self) -> &AtomicU32 {
        &self.next
    }
}

/// The buddy's view of the memmap (the kernel's `impl BuddyStore for MemMap`), every access
/// a scheduling point.
struct Store<'a>(&'a [Page]);

impl BuddyStore for Store<'_> {
    fn nr_pages(&self) -> usize {
        NR_PAGES
    }
    fn next(&self, idx: u32) -> u32 {
        point();
        self.0[idx as usize].next.load(SeqCst)
    }
    fn prev(&self, idx: u32) -> u32 {
        point();
        self.0[idx as usize].prev.load(SeqCst)
    }
    fn set_next(&mut self, idx: u32, next: u32) {
        point();
        self.0[idx as usize].next.store(next, SeqCst)
    }
    fn set_prev(&mut self, idx: u32, prev: u32) {
        point();
        self.0[idx as usize].prev.store(prev, SeqCst)
    }
    fn state(&self, idx: u32) -> u8 {
        point();
        self.0[idx as usize].state.load(SeqCst)
    }
    fn set_state(&mut self, idx: u32, state: u8) {
        point();
        self.0[idx as usize].state.store(state, SeqCst)
    }
    fn replace_state(&mut self, idx: u32, old: u8, new: u8) -> bool {
        point();
        self.0[idx as usize]
            .state
            .compare_exchange(old, new, SeqCst, SeqCst)
            .is_ok()
    }
}

struct Machine<'a, S: PcpSync> {
    mem: &'a [Page],
    buddy: Mutex<Buddy<Store<'a>>>,
    lists: Vec<PcpList<'a, Page, S>>,
    /// Counts the races (the unmutated machine only).
    counting: bool,
}

impl<S: PcpSync> Machine<'_, S> {
    fn count_refused(&self) {
        if self.counting {
            OWNER_REFUSED.fetch_add(1, SeqCst);
        }
    }

    /// The kernel's `alloc_on` for the running CPU: its list (pop, else refill in batches of
    /// two), else the buddy when the list is claimed.
    fn alloc(&self, cpu: usize, order: u8) -> Option<u32> {
        let list = &self.lists[cpu];
        match list.enter() {
            Some(pages) => {
                let (got, pages) = match list.pop(pages, order) {
                    Some((pfn, pages)) => (Some(pfn), pages),
                    None => list.refill(&mut self.buddy.lock().unwrap(), order, 2, pages),
                };
                list.exit(pages);
                got.map(|pfn| pfn as u32)
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
        let list = &self.lists[cpu];
        match list.enter() {
            Some(pages) => match list.push(pages, idx as u64, order) {
                Some(new_pages) => {
                    list.exit(new_pages);
                    true
                }
                None => {
                    list.exit(pages);
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

    /// Everything on `cpu`'s list back to the buddy (list entered). Returns the pages given
    /// back and the new page count; a block the buddy refused fails the model.
    fn drain_all(&self, cpu: usize, pages: u32) -> (u32, u32) {
        let list = &self.lists[cpu];
        let out = list.drain(&mut self.buddy.lock().unwrap(), 0, u32::MAX, pages);
        assert_eq!(
            list.stats.drain_refused.load(SeqCst),
            0,
            "a listed block is not cached"
        );
        out
    }

    /// `drain_cpu` for another CPU's list.
    fn drain_remote(&self, cpu: usize) {
        let list = &self.lists[cpu];
        if list.pages() == 0 {
            return;
        }
        if let Some(pages) = list.claim() {
            let (_, pages) = self.drain_all(cpu, pages);
            list.exit(pages);
        }
    }

    /// After the CPUs joined: every list drained, `held` freed, and the buddy whole again.
    fn finish(&self, held: &[u32]) {
        for cpu in 0..self.lists.len() {
            let list = &self.lists[cpu];
            assert!(!list.claimed(), "list of CPU {cpu} left claimed");
            let pages = list.pages();
            let (drained, _) = self.drain_all(cpu, pages);
            assert_eq!(
                drained, pages,
                "list of CPU {cpu}: count and blocks disagree"
            );
            list.exit(0);
        }
        for &idx in held {
            assert!(self.free_buddy(idx, 0), "held block {idx} not allocated");
        }
        let buddy = self.buddy.lock().unwrap();
        buddy.check_lists().unwrap();
        assert_eq!(buddy.free_pages(), NR_PAGES, "pages lost");
    }
}

/// A fresh node (all pages free in the buddy) and `cpus` empty lists on machine `S`; runs
/// `f`.
fn with_machine<S: PcpSync + 'static>(cpus: usize, f: impl FnOnce(&Machine<S>)) {
    let mem: Vec<Page> = (0..NR_PAGES)
        .map(|_| Page {
            state: AtomicU8::new(0),
            next: AtomicU32::new(NIL),
            prev: AtomicU32::new(NIL),
        })
        .collect();
    let mut buddy = Buddy::new(Store(&mem), 0);
    buddy.add_free_range(0, NR_PAGES as u64);
    let m = Machine {
        mem: &mem,
        buddy: Mutex::new(buddy),
        lists: (0..cpus)
            .map(|_| PcpList::new(&mem, 0, 0, u32::MAX))
            .collect(),
        counting: std::any::TypeId::of::<S>() == std::any::TypeId::of::<Model>(),
    };
    f(&m);
}

/// Two CPUs free one allocated block at once (CPU 0 through its list, CPU 1 through its
/// list or, on the second variant, the buddy): exactly one free is accepted.
fn double_free<S: PcpSync + 'static>() {
    for cpu1_via_buddy in [false, true] {
        with_machine::<S>(2, |m| {
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
fn alloc_vs_remote_drain<S: PcpSync + 'static>() {
    with_machine::<S>(2, |m| {
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
                m.mem[idx as usize].state.load(SeqCst),
                ALLOCATED,
                "held block {idx} not allocated"
            );
        }
        m.finish(&all);
    });
}

/// `iterations` random and `iterations` PCT schedules, fixed seed.
fn check(f: fn(), iterations: usize, seed: u64) {
    model_check::check(f, iterations, seed);
}

/// Schedules per scheduler for each scenario (see docs/testing.md for the time it takes).
const DEFAULT_SCHEDULES: usize = 1000;

fn schedules() -> usize {
    model_check::schedules(DEFAULT_SCHEDULES)
}

#[test]
fn model_pcp_double_free_succeeds_once() {
    check(double_free::<Model>, schedules(), 11);
}

#[test]
fn model_pcp_alloc_vs_remote_drain() {
    check(alloc_vs_remote_drain::<Model>, schedules(), 12);
    let (refused, retried) = (OWNER_REFUSED.load(SeqCst), CLAIM_RETRIED.load(SeqCst));
    eprintln!("model pcp: owner found its list claimed {refused} times, drain retried {retried}");
    assert!(refused > 0 && retried > 0, "the claim was never contended");
}

fn failure(f: fn(), seed: u64) -> Option<String> {
    model_check::failure(|| check(f, DEFAULT_SCHEDULES, seed))
}

#[test]
fn model_pcp_finds_a_non_atomic_push() {
    let msg = failure(double_free::<SplitPush>, 11).expect("split push went unnoticed");
    assert!(msg.contains("double free accepted"), "{msg}");
}

#[test]
fn model_pcp_finds_a_non_atomic_claim() {
    let msg = failure(alloc_vs_remote_drain::<SplitClaim>, 12).expect("split claim went unnoticed");
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
