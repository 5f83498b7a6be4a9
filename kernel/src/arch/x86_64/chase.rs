//! A dependent pointer chase, the loop Intel MLC measures idle latency with: a cycle of 64-byte
//! lines in memory the caller owns, each line's first word the address of the next line, walked
//! by `mov p, [p]` unrolled [`UNROLL`] times per loop iteration (the loop's `dec`/`jnz` add
//! 2 / UNROLL instructions per load, under 1%).
//!
//! The order is a random cycle (Sattolo's algorithm) drawn from the caller's random source, so
//! that no prefetcher and no set pattern helps. Every pointer is written by [`Cycle::new`]
//! from the cycle's own line addresses (each line's own, then shuffled); afterwards the lines
//! are only read by the chase and rewritten with their own value by [`Cycle::touch`] (a store
//! that makes each line Modified in the writer's cache, MLC's c2c writer), so the chase never
//! leaves the cycle's memory.

use alloc::vec::Vec;
use core::marker::PhantomData;
use core::sync::atomic::{AtomicU64, Ordering};

/// Bytes per line: one pointer per line.
pub const LINE_BYTES: usize = 64;
/// Loads per iteration of the unrolled loop (the `.rept` count in [`Cycle::chase`]).
pub const UNROLL: u64 = 512;

/// A cycle of lines over equal-sized blocks of memory borrowed from the caller for `'a`.
pub struct Cycle<'a> {
    /// Each block's first byte (64-byte aligned).
    blocks: Vec<usize>,
    lines_per_block: usize,
    lines: usize,
    _mem: PhantomData<&'a mut [u8]>,
}

impl<'a> Cycle<'a> {
    /// A random cycle through every line of `blocks` (all of one length, a multiple of 64
    /// bytes, each starting on a 64-byte boundary). `below(n)` draws a number in `0..n` (taken
    /// modulo `n`). Writes every line's first word; refuses blocks of other shapes.
    pub fn new(
        blocks: Vec<&'a mut [u8]>,
        below: &mut dyn FnMut(u64) -> u64,
    ) -> Result<Cycle<'a>, &'static str> {
        let per_bytes = blocks.first().map_or(0, |b| b.len());
        if per_bytes == 0 || !per_bytes.is_multiple_of(LINE_BYTES) {
            return Err("chase: blocks must be non-empty multiples of 64 bytes");
        }
        if blocks
            .iter()
            .any(|b| b.len() != per_bytes || !(b.as_ptr() as usize).is_multiple_of(LINE_BYTES))
        {
            return Err("chase: blocks must be of one length and 64-byte aligned");
        }
        let per_block = per_bytes / LINE_BYTES;
        let lines = per_block * blocks.len();
        let starts: Vec<usize> = blocks.iter().map(|b| b.as_ptr() as usize).collect();
        drop(blocks);
        let cycle = Cycle {
            blocks: starts,
            lines_per_block: per_block,
            lines,
            _mem: PhantomData,
        };
        let word = |k: usize| cycle.line(k) as *mut u64;
        // Every line points at itself; Sattolo's shuffle of those words (swapping each
        // position with an earlier one) leaves line k pointing at the next line of one cycle.
        for k in 0..lines {
            // SAFETY: line k lies inside one of the blocks, which are borrowed mutably for
            // 'a (held by `_mem`) and 64-byte aligned: its first word is valid and aligned,
            // and nothing else accesses it.
            unsafe { word(k).write(cycle.line(k) as u64) };
        }
        for i in (1..lines).rev() {
            let j = below(i as u64) as usize;
            let j = if j < i { j } else { j % i };
            // SAFETY: as above, for lines i and j (both below `lines`).
            unsafe { core::ptr::swap(word(i), word(j)) };
        }
        Ok(cycle)
    }

    /// The line every chase starts from (a whole pass ends there again).
    pub fn first(&self) -> usize {
        self.blocks[0]
    }

    /// Lines in the cycle (loads of one pass).
    pub fn lines(&self) -> usize {
        self.lines
    }

    /// The address of line `k` (in block order, not cycle order), `k` below `lines`.
    fn line(&self, k: usize) -> usize {
        let per = self.lines_per_block;
        if per.is_power_of_two() {
            let shift = per.trailing_zeros();
            self.blocks[k >> shift] + (k & (per - 1)) * LINE_BYTES
        } else {
            self.blocks[k / per] + (k % per) * LINE_BYTES
        }
    }

    /// Follows the cycle for `loads` dependent loads from its first line; returns where it
    /// stopped (for `black_box`). Loads per pass are [`Cycle::lines`]; `loads` need not be a
    /// multiple of it or of [`UNROLL`] (the rest runs one load per iteration).
    pub fn chase(&self, loads: u64) -> usize {
        let mut p = self.blocks[0];
        let iters = loads / UNROLL;
        let rest = loads % UNROLL;
        if iters > 0 {
            // SAFETY: `p` is a line of this cycle, and every line of the cycle holds the
            // address of a line of the cycle (written by `new`, rewritten with the same value
            // by `touch`); the memory is borrowed for 'a, so it stays mapped and allocated.
            // Each load reads an aligned u64 inside it. No stack use, no memory written.
            unsafe {
                core::arch::asm!(
                    "2:",
                    ".rept 512",
                    "mov {p}, qword ptr [{p}]",
                    ".endr",
                    "dec {n}",
                    "jnz 2b",
                    p = inout(reg) p,
                    n = inout(reg) iters => _,
                    options(nostack, readonly),
                );
            }
        }
        if rest > 0 {
            // SAFETY: as above: `p` is still a line of the cycle.
            unsafe {
                core::arch::asm!(
                    "2:",
                    "mov {p}, qword ptr [{p}]",
                    "dec {n}",
                    "jnz 2b",
                    p = inout(reg) p,
                    n = inout(reg) rest => _,
                    options(nostack, readonly),
                );
            }
        }
        p
    }

    /// Stores to every line (its own pointer back, in address order): the lines become
    /// Modified in the calling CPU's cache, and every other CPU's copy is invalidated.
    pub fn touch(&self) {
        for k in 0..self.lines {
            // SAFETY: line k's first word is an aligned u64 inside the cycle's memory, borrowed
            // for 'a; after `new` it is only accessed atomically here and read by `chase`.
            let w = unsafe { &*(self.line(k) as *const AtomicU64) };
            w.store(w.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }
}
