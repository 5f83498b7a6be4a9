//! `FreeSpace`: the free part of one vmalloc virtual range, as maximal free blocks in an
//! [`AreaTree`]. Allocation takes the lowest-address fit for a size and alignment; freeing
//! merges the block with its free neighbours, so the range is one block again when all is free.

use super::tree::AreaTree;
use super::{VmError, PAGE_SIZE};

/// Why a range could not be given back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReturnError {
    /// Not page-aligned, empty, or outside the range.
    OutOfRange,
    /// Overlaps a block that is already free (a double free).
    Overlap { free_start: u64 },
}

/// Free virtual space of [start, end), page granular.
#[derive(Clone, Debug)]
pub struct FreeSpace {
    tree: AreaTree<()>,
    range_start: u64,
    range_end: u64,
    free_bytes: u64,
}

impl FreeSpace {
    /// All of [range_start, range_end) free. Both must be page-aligned, start < end.
    pub fn new(range_start: u64, range_end: u64) -> FreeSpace {
        let mut tree = AreaTree::new();
        tree.reserve(256);
        if range_start < range_end {
            tree.insert(range_start, range_end - range_start, ());
        }
        FreeSpace {
            tree,
            range_start,
            range_end,
            free_bytes: range_end.saturating_sub(range_start),
        }
    }

    pub fn range(&self) -> (u64, u64) {
        (self.range_start, self.range_end)
    }

    pub fn free_bytes(&self) -> u64 {
        self.free_bytes
    }

    /// Number of free blocks (1 when everything is free and merged).
    pub fn nr_blocks(&self) -> usize {
        self.tree.len()
    }

    /// Largest free block.
    pub fn largest_bytes(&self) -> u64 {
        self.tree.max_bytes()
    }

    /// True when the whole range is one free block.
    pub fn is_all_free(&self) -> bool {
        self.tree.len() == 1
            && self.tree.get(self.range_start) == Some((self.range_end - self.range_start, ()))
    }

    /// Takes `size_bytes` aligned to `align_bytes`: at the lowest address when the alignment
    /// is at most a page; beyond that, as Linux does (mm/vmalloc.c, `adjust_search_size`), in
    /// the lowest block of at least `size + align - PAGE_SIZE` bytes, which holds an aligned
    /// fit wherever it starts, so the search is one O(log n) descent even when thousands of
    /// small blocks are too small once aligned (an exact search visits every one of them,
    /// under the one free-space lock). A block that fits only at its one aligned address is
    /// not found, as in Linux.
    pub fn alloc(&mut self, size_bytes: u64, align_bytes: u64) -> Result<u64, VmError> {
        check_request(size_bytes, align_bytes, self.range_end - self.range_start)?;
        let align = align_bytes.max(PAGE_SIZE);
        let search = size_bytes + (align - PAGE_SIZE);
        let fit = self
            .tree
            .lowest_fit(search, PAGE_SIZE)
            .map(|f| super::tree::Fit {
                addr: f.block_start.next_multiple_of(align),
                ..f
            })
            .ok_or(VmError::Exhausted)?;
        let (bs, be) = (fit.block_start, fit.block_start + fit.block_bytes);
        let (a, ae) = (fit.addr, fit.addr + size_bytes);
        match (a > bs, ae < be) {
            (false, false) => {
                self.tree.remove(bs);
            }
            (false, true) => {
                self.tree.reshape(bs, ae, be - ae);
            }
            (true, false) => {
                self.tree.reshape(bs, bs, a - bs);
            }
            (true, true) => {
                self.tree.reshape(bs, bs, a - bs);
                self.tree.insert(ae, be - ae, ());
            }
        }
        self.free_bytes -= size_bytes;
        Ok(a)
    }

    /// Gives [start, start+size) back, merging with free neighbours.
    pub fn free(&mut self, start: u64, size_bytes: u64) -> Result<(), ReturnError> {
        let end = start
            .checked_add(size_bytes)
            .ok_or(ReturnError::OutOfRange)?;
        if size_bytes == 0
            || !start.is_multiple_of(PAGE_SIZE)
            || !size_bytes.is_multiple_of(PAGE_SIZE)
            || start < self.range_start
            || end > self.range_end
        {
            return Err(ReturnError::OutOfRange);
        }
        let prev = self.tree.floor(start);
        if let Some((ps, psz, _)) = prev {
            if ps + psz > start {
                return Err(ReturnError::Overlap { free_start: ps });
            }
        }
        let next = self.tree.above(start);
        if let Some((ns, _, _)) = next {
            if ns < end {
                return Err(ReturnError::Overlap { free_start: ns });
            }
        }
        let merge_prev = prev.filter(|&(ps, psz, _)| ps + psz == start);
        let merge_next = next.filter(|&(ns, _, _)| ns == end);
        match (merge_prev, merge_next) {
            (Some((ps, psz, _)), Some((ns, nsz, _))) => {
                self.tree.remove(ns);
                self.tree.reshape(ps, ps, psz + size_bytes + nsz);
            }
            (Some((ps, psz, _)), None) => {
                self.tree.reshape(ps, ps, psz + size_bytes);
            }
            (None, Some((ns, nsz, _))) => {
                self.tree.reshape(ns, start, size_bytes + nsz);
            }
            (None, None) => {
                self.tree.insert(start, size_bytes, ());
            }
        }
        self.free_bytes += size_bytes;
        Ok(())
    }

    /// The free blocks in address order (allocates; for dumps and tests).
    pub fn blocks(&self) -> alloc::vec::Vec<(u64, u64)> {
        self.tree
            .to_vec()
            .into_iter()
            .map(|(s, z, _)| (s, z))
            .collect()
    }

    /// Whether [addr, addr+1) is free.
    pub fn is_free(&self, addr: u64) -> bool {
        self.tree.containing(addr).is_some()
    }

    /// Checks the tree invariants and that blocks are disjoint, non-adjacent and sum to
    /// `free_bytes`; for tests.
    pub fn check(&self) -> Result<(), &'static str> {
        self.tree.check()?;
        let blocks = self.blocks();
        if blocks.iter().map(|b| b.1).sum::<u64>() != self.free_bytes {
            return Err("free_bytes does not match the blocks");
        }
        if blocks.windows(2).any(|w| w[0].0 + w[0].1 >= w[1].0) {
            return Err("free blocks overlap or were not merged");
        }
        Ok(())
    }
}

/// The argument checks every allocation path shares.
pub fn check_request(size_bytes: u64, align_bytes: u64, range_bytes: u64) -> Result<(), VmError> {
    if size_bytes == 0 {
        return Err(VmError::ZeroSize);
    }
    if !align_bytes.is_power_of_two() {
        return Err(VmError::BadAlign(align_bytes));
    }
    if !size_bytes.is_multiple_of(PAGE_SIZE) {
        return Err(VmError::Unaligned(size_bytes));
    }
    if size_bytes > range_bytes || align_bytes > range_bytes {
        return Err(VmError::TooLarge(size_bytes));
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use alloc::vec::Vec;

    const P: u64 = PAGE_SIZE;

    /// Naive model: one bool per page; lowest aligned run of free pages, or beyond a page of
    /// alignment the lowest maximal free run of `size + align - P` bytes (Linux's rule).
    struct Naive {
        base: u64,
        free: Vec<bool>,
    }

    impl Naive {
        fn alloc(&mut self, size: u64, align: u64) -> Option<u64> {
            let n = (size / P) as usize;
            let align = align.max(P);
            if align > P {
                let need = n + (align / P) as usize - 1;
                let mut i = 0;
                while i < self.free.len() {
                    let run = self.free[i..].iter().take_while(|&&f| f).count();
                    if run >= need {
                        let addr = (self.base + i as u64 * P).next_multiple_of(align);
                        let j = ((addr - self.base) / P) as usize;
                        self.free[j..j + n].iter_mut().for_each(|f| *f = false);
                        return Some(addr);
                    }
                    i += run.max(1);
                }
                return None;
            }
            let mut addr = self.base.div_ceil(align) * align;
            while ((addr - self.base) / P) as usize + n <= self.free.len() {
                let i = ((addr - self.base) / P) as usize;
                if self.free[i..i + n].iter().all(|&f| f) {
                    self.free[i..i + n].iter_mut().for_each(|f| *f = false);
                    return Some(addr);
                }
                addr += align;
            }
            None
        }
        fn free(&mut self, start: u64, size: u64) {
            let i = ((start - self.base) / P) as usize;
            self.free[i..i + (size / P) as usize]
                .iter_mut()
                .for_each(|f| *f = true);
        }
    }

    use crate::rng::Rng;

    #[test]
    fn bad_requests_are_errors() {
        let mut fs = FreeSpace::new(0x10_0000, 0x20_0000);
        assert_eq!(fs.alloc(0, P), Err(VmError::ZeroSize));
        assert_eq!(fs.alloc(P, 3 * P), Err(VmError::BadAlign(3 * P)));
        assert_eq!(fs.alloc(0x20_0000, P), Err(VmError::TooLarge(0x20_0000)));
        assert_eq!(fs.alloc(100, P), Err(VmError::Unaligned(100)));
        assert_eq!(fs.alloc(0x10_0000, P), Ok(0x10_0000));
        assert_eq!(fs.alloc(P, P), Err(VmError::Exhausted));
        assert_eq!(fs.free(0x10_0000, 0x10_0000), Ok(()));
        assert_eq!(
            fs.free(0x10_0000, P),
            Err(ReturnError::Overlap {
                free_start: 0x10_0000
            })
        );
        assert_eq!(fs.free(0x30_0000, P), Err(ReturnError::OutOfRange));
        assert!(fs.is_all_free());
    }

    #[test]
    fn coalesces_back_to_one_block() {
        let mut fs = FreeSpace::new(0, 64 * P);
        let a: Vec<u64> = (0..16).map(|_| fs.alloc(4 * P, P).unwrap()).collect();
        assert_eq!(fs.free_bytes(), 0);
        for (i, &x) in a.iter().enumerate() {
            if i % 2 == 1 {
                fs.free(x, 4 * P).unwrap();
            }
        }
        assert_eq!(fs.nr_blocks(), 8);
        for (i, &x) in a.iter().enumerate() {
            if i % 2 == 0 {
                fs.free(x, 4 * P).unwrap();
                fs.check().unwrap();
            }
        }
        assert!(fs.is_all_free());
    }

    #[test]
    fn randomized_against_naive_model() {
        for seed in 1..6u64 {
            let pages = 2048u64;
            let base = 0xffff_c000_0000_0000u64;
            let mut fs = FreeSpace::new(base, base + pages * P);
            let mut naive = Naive {
                base,
                free: alloc::vec![true; pages as usize],
            };
            let mut rng = Rng::new(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let mut live: Vec<(u64, u64)> = Vec::new();
            for step in 0..6000 {
                if live.is_empty() || rng.below(100) < 55 {
                    let big = rng.below(10) == 0;
                    let size = (1 + rng.below(if big { 200 } else { 8 })) * P;
                    let wide = rng.below(4) == 0;
                    let align = P << rng.below(if wide { 6 } else { 1 });
                    let got = fs.alloc(size, align).ok();
                    let want = naive.alloc(size, align);
                    assert_eq!(
                        got, want,
                        "seed {seed} step {step} size {size} align {align}"
                    );
                    if let Some(a) = got {
                        live.push((a, size));
                    }
                } else {
                    let (a, size) = live.swap_remove(rng.below(live.len() as u64) as usize);
                    fs.free(a, size).unwrap();
                    naive.free(a, size);
                }
                if step % 97 == 0 {
                    fs.check().unwrap();
                }
            }
            for (a, size) in live.drain(..) {
                fs.free(a, size).unwrap();
            }
            assert!(fs.is_all_free());
        }
    }
}
