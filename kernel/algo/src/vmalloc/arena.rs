//! `Arena`: the area tree's node store, a list of fixed-size chunks indexed by `usize`, so
//! that growing it never asks the heap for more than one chunk at a time. A single `Vec`
//! doubles: with 255 CPUs, vmalloc's full_fit test (thousands of holes per CPU) grew one tree
//! to a 16 MiB block, larger than the page allocator's biggest (order 10, 4 MiB), and the
//! kernel heap's allocation failure panicked.

use alloc::vec::Vec;

/// Entries per chunk: a chunk of the kernel's busy-tree node (64 bytes: range, links, area
/// data) is 32 KiB, an order-3 block of the page allocator.
pub const CHUNK_ENTRIES: usize = 512;

/// A growable array of `T` in chunks of [`CHUNK_ENTRIES`].
#[derive(Clone, Debug)]
pub struct Arena<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Arena<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Arena<T> {
    pub const fn new() -> Self {
        Arena {
            chunks: Vec::new(),
            len: 0,
        }
    }

    /// Entries pushed so far (indices `0..len`).
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Makes room for `additional` more entries, one chunk at a time.
    pub fn reserve(&mut self, additional: usize) {
        let want = self.len + additional;
        while self.chunks.len() * CHUNK_ENTRIES < want {
            self.chunks.push(Vec::with_capacity(CHUNK_ENTRIES));
        }
    }

    /// Appends `value`; returns its index.
    pub fn push(&mut self, value: T) -> usize {
        let i = self.len;
        if i / CHUNK_ENTRIES == self.chunks.len() {
            self.chunks.push(Vec::with_capacity(CHUNK_ENTRIES));
        }
        self.chunks[i / CHUNK_ENTRIES].push(value);
        self.len += 1;
        i
    }

    /// Bytes of the largest single heap block the arena holds (a chunk, or the chunk list).
    pub fn largest_block_bytes(&self) -> usize {
        let chunk = self.chunks.first().map_or(0, |c| c.capacity()) * core::mem::size_of::<T>();
        chunk.max(self.chunks.capacity() * core::mem::size_of::<Vec<T>>())
    }
}

impl<T> core::ops::Index<usize> for Arena<T> {
    type Output = T;
    #[inline]
    fn index(&self, i: usize) -> &T {
        &self.chunks[i / CHUNK_ENTRIES][i % CHUNK_ENTRIES]
    }
}

impl<T> core::ops::IndexMut<usize> for Arena<T> {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self.chunks[i / CHUNK_ENTRIES][i % CHUNK_ENTRIES]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_survive_growth_and_no_block_exceeds_a_chunk() {
        let mut a: Arena<[u64; 6]> = Arena::new();
        a.reserve(10);
        for i in 0..300_000u64 {
            assert_eq!(a.push([i; 6]), i as usize);
        }
        assert_eq!(a.len(), 300_000);
        for i in (0..300_000usize).step_by(997) {
            assert_eq!(a[i][0], i as u64);
        }
        a[12345][3] = 7;
        assert_eq!(a[12345], [12345, 12345, 12345, 7, 12345, 12345]);
        // 300,000 48-byte entries in one Vec would be a 16 MiB block after doubling; here
        // nothing is larger than a chunk (24 KiB) or the chunk list.
        assert!(
            a.largest_block_bytes() <= 32 * 1024,
            "{}",
            a.largest_block_bytes()
        );
    }
}
