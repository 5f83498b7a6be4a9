//! Host tests of the buddy allocator: block sizes and alignment, split and merge, refused
//! frees, holes, the cached state, and randomized conservation.

use super::*;
use alloc::vec::Vec;

fn buddy(base: u64, pages: usize) -> Buddy<VecStore> {
    Buddy::new(VecStore::new(pages), base)
}

#[test]
fn add_range_uses_largest_aligned_blocks() {
    let mut b = buddy(0, 4096);
    assert_eq!(b.add_free_range(3, 2051), 2048);
    b.check_lists().unwrap();
    let nr = b.nr_free();
    // 3 (o0), 4-7 (o2), 8-15 (o3), ..., 512-1023 (o9), 1024-2047 (o10), 2048-2050 (o1,o0)
    assert_eq!(nr, [2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]);
    assert_eq!(b.free_pages(), 2048);
    assert_eq!(b.managed_pages(), 2048);
}

#[test]
fn split_and_merge_back() {
    let mut b = buddy(1024, 1024);
    b.add_free_range(1024, 2048);
    assert_eq!(b.nr_free()[10], 1);
    let p = b.alloc(0).unwrap();
    assert_eq!(p, 1024);
    assert_eq!(b.nr_free(), [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0]);
    b.check_lists().unwrap();
    b.free(p, 0).unwrap();
    assert_eq!(b.nr_free()[10], 1);
    assert_eq!(b.free_pages(), 1024);
    b.check_lists().unwrap();
}

#[test]
fn exhaustion_returns_none() {
    let mut b = buddy(0, 16);
    b.add_free_range(0, 16);
    assert!(b.alloc(5).is_none());
    let blocks: Vec<u64> = (0..16).map(|_| b.alloc(0).unwrap()).collect();
    assert!(b.alloc(0).is_none());
    for p in blocks {
        b.free(p, 0).unwrap();
    }
    assert_eq!(b.alloc(4), Some(0));
    assert!(b.alloc(11).is_none());
}

#[test]
fn invalid_frees_are_refused() {
    let mut b = buddy(0, 64);
    b.add_free_range(0, 64);
    let p = b.alloc(2).unwrap();
    assert_eq!(b.free(p + 1, 0), Err(FreeError::NotAllocated(0)));
    assert_eq!(b.free(p + 2, 1), Err(FreeError::NotAllocated(0)));
    assert_eq!(b.free(p, 1), Err(FreeError::NotAllocated(ALLOCATED | 2)));
    assert_eq!(b.free(p + 1, 2), Err(FreeError::Unaligned));
    assert_eq!(b.free(64, 0), Err(FreeError::OutOfRange));
    assert_eq!(b.free(0, 11), Err(FreeError::BadOrder));
    b.free(p, 2).unwrap();
    assert_eq!(b.free(p, 2), Err(FreeError::AlreadyFree));
    assert_eq!(b.free(p + 1, 0), Err(FreeError::AlreadyFree));
    b.check_lists().unwrap();
    assert_eq!(b.free_pages(), 64);
}

#[test]
fn holes_are_never_handed_out() {
    let mut b = buddy(0, 2048);
    b.add_free_range(0, 100);
    b.add_free_range(1500, 2048);
    let mut got = Vec::new();
    while let Some(p) = b.alloc(0) {
        assert!(!(100..1500).contains(&p), "hole page {p}");
        got.push(p);
    }
    assert_eq!(got.len(), 100 + 548);
    for p in got {
        b.free(p, 0).unwrap();
    }
    b.check_lists().unwrap();
    assert_eq!(b.scan().unwrap().free_pages, 648);
}

use crate::rng::Rng;

#[test]
fn randomized_conservation() {
    for seed in 1..=4u64 {
        let mut rng = Rng::new(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let base = 0x100 + seed * 3;
        let pages = 5000;
        let mut b = buddy(base, pages);
        b.add_free_range(base + 7, base + pages as u64 - 5);
        let total = b.managed_pages();
        let mut live: Vec<(u64, u8)> = Vec::new();
        let mut owned = alloc::vec![false; pages];
        let mut allocated = 0usize;
        for step in 0..20_000 {
            if !rng.next_u64().is_multiple_of(3) || live.is_empty() {
                let order = (rng.next_u64() % 6) as u8;
                if let Some(p) = b.alloc(order) {
                    assert_eq!(p & ((1 << order) - 1), 0);
                    for i in 0..(1u64 << order) {
                        let o = &mut owned[(p + i - base) as usize];
                        assert!(!*o, "page {} handed out twice", p + i);
                        *o = true;
                    }
                    live.push((p, order));
                    allocated += 1 << order;
                }
            } else {
                let i = (rng.next_u64() as usize) % live.len();
                let (p, order) = live.swap_remove(i);
                for i in 0..(1u64 << order) {
                    owned[(p + i - base) as usize] = false;
                }
                b.free(p, order).unwrap();
                allocated -= 1 << order;
            }
            assert_eq!(b.free_pages() + allocated, total, "step {step}");
            if step % 997 == 0 {
                b.check_lists().unwrap();
                let c = b.scan().unwrap();
                assert_eq!(c.allocated_pages, allocated);
            }
        }
        for (p, o) in live.drain(..) {
            b.free(p, o).unwrap();
        }
        b.check_lists().unwrap();
        assert_eq!(b.free_pages(), total);
    }
}

#[test]
fn cached_state_round_trip() {
    let mut b = buddy(0, 8);
    b.add_free_range(0, 8);
    let p = b.alloc(0).unwrap();
    b.set_cached(p, 0, true);
    assert_eq!(b.free(p, 0), Err(FreeError::AlreadyFree));
    b.free_cached(p, 0).unwrap();
    assert_eq!(b.free_pages(), 8);
    assert_eq!(
        b.scan().unwrap(),
        ScanCounts {
            free_pages: 8,
            ..Default::default()
        }
    );
}

/// A store where another CPU's per-CPU list takes the block (allocated -> cached) between
/// the buddy's check and its state change, as `frame`'s pcp push can without the node
/// lock.
struct RacingStore {
    inner: VecStore,
    steal: Option<u32>,
}

impl BuddyStore for RacingStore {
    fn nr_pages(&self) -> usize {
        self.inner.nr_pages()
    }
    fn next(&self, idx: u32) -> u32 {
        self.inner.next(idx)
    }
    fn prev(&self, idx: u32) -> u32 {
        self.inner.prev(idx)
    }
    fn set_next(&mut self, idx: u32, next: u32) {
        self.inner.set_next(idx, next)
    }
    fn set_prev(&mut self, idx: u32, prev: u32) {
        self.inner.set_prev(idx, prev)
    }
    fn state(&self, idx: u32) -> u8 {
        self.inner.state(idx)
    }
    fn set_state(&mut self, idx: u32, state: u8) {
        self.inner.set_state(idx, state)
    }
    fn replace_state(&mut self, idx: u32, old: u8, new: u8) -> bool {
        if self.steal.take() == Some(idx) {
            let s = self.inner.state(idx);
            self.inner.set_state(idx, CACHED | (s & ORDER_MASK));
        }
        self.inner.replace_state(idx, old, new)
    }
}

#[test]
fn a_free_that_loses_the_race_to_a_per_cpu_list_is_refused() {
    let mut b = Buddy::new(
        RacingStore {
            inner: VecStore::new(16),
            steal: None,
        },
        0,
    );
    b.add_free_range(0, 16);
    let p = b.alloc(1).unwrap();
    b.store.steal = Some(p as u32);
    assert_eq!(b.free(p, 1), Err(FreeError::AlreadyFree));
    // Nothing changed but the state the other CPU set: the block is still out.
    assert_eq!(b.free_pages(), 14);
    b.check_lists().unwrap();
    b.free_cached(p, 1).unwrap();
    assert_eq!(b.free_pages(), 16);
}

#[test]
fn alloc_cached_marks_the_block_cached() {
    let mut b = buddy(0, 8);
    b.add_free_range(0, 8);
    let p = b.alloc_cached(1).unwrap();
    assert_eq!(b.store().state(p as u32), CACHED | 1);
    assert_eq!(b.free(p, 1), Err(FreeError::AlreadyFree));
    b.free_cached(p, 1).unwrap();
    assert_eq!(b.free_pages(), 8);
}
