//! A sheaf (Linux 7's struct slab_sheaf): an array of free object pointers with a size and
//! a capacity, in a block of platform memory, and the capacity Linux gives each cache.
//!
//! Layout (words of 8 bytes): `size`, `next` (the barn's list link), `capacity`, a word that
//! is always 0 (read as the last object pushed of an empty sheaf, so the free fast path's
//! double-free check needs no size test), then `capacity` object pointers: 32 bytes of header as Linux's struct (rcu_head or
//! barn_list, cache, size), so a sheaf of Linux's capacity is exactly one kmalloc bucket.
//! A sheaf whose capacity word is 0 is the bootstrap sheaf: the per-CPU `main` points at it
//! until the first slow path gives the CPU a real one (Linux's bootstrap_sheaf), so the
//! fast paths never test for a missing sheaf.

use super::geometry::{kmalloc_index, KMALLOC_SIZES, PAGE_SIZE};
use super::platform::Platform;

/// Bytes before the object array.
pub const SHEAF_HEADER_BYTES: usize = 32;
const W_SIZE: usize = 0;
const W_NEXT: usize = 8;
/// Offset of the rcu_head of a sheaf in flight through call_rcu (rcu_sheaf.rs).
pub const RCU_HEAD_OFFSET: usize = W_NEXT;
const W_CAPACITY: usize = 16;
/// Always 0: the word before slot 0 (`last_pushed` of an empty sheaf; no object is at 0).
const W_BEFORE_SLOTS: usize = 24;
/// The largest capacity numalab accepts: a sheaf that fits kmalloc-8k.
pub const MAX_SHEAF_CAPACITY: usize = (8192 - SHEAF_HEADER_BYTES) / 8;

/// Linux 6.18's sheaf capacity for its two opted-in caches: maple_node and vm_area_struct
/// both pass `.sheaf_capacity = 32` in their kmem_cache_args (commit b38c6352 and
/// mm/vma_init.c); 6.18 takes the caller's number as it is (no rounding to a bucket).
pub const HYBRID_SHEAF_CAPACITY: usize = 32;

/// A hybrid cache's capacity: `requested` (the `slub.sheaf_capacity` knob) or 32, as given.
pub fn hybrid_sheaf_capacity(requested: Option<usize>) -> usize {
    requested
        .unwrap_or(HYBRID_SHEAF_CAPACITY)
        .clamp(1, MAX_SHEAF_CAPACITY)
}

/// Linux's calculate_sheaf_capacity (mm/slub.c, 7.0): 4 objects for caches of a page or
/// more, 12 from 1 KiB, 26 from 256 B, else 60; then grown to fill the kmalloc bucket the
/// sheaf lands in. `requested`: the `slub.sheaf_capacity` knob, rounded the same way.
/// kmalloc-64 gets 60 (Debian's 7.3.4 reads 60 in /sys/kernel/slab/kmalloc-64/sheaf_capacity).
pub fn sheaf_capacity(object_size: usize, requested: Option<usize>) -> usize {
    let base = requested.unwrap_or(if object_size >= PAGE_SIZE as usize {
        4
    } else if object_size >= 1024 {
        12
    } else if object_size >= 256 {
        26
    } else {
        60
    });
    let base = base.clamp(1, MAX_SHEAF_CAPACITY);
    let bytes = sheaf_bytes(base);
    match kmalloc_index(bytes) {
        Some(i) => ((KMALLOC_SIZES[i] - SHEAF_HEADER_BYTES) / 8).min(MAX_SHEAF_CAPACITY),
        None => base,
    }
}

/// Bytes of a sheaf of `capacity` objects.
pub const fn sheaf_bytes(capacity: usize) -> usize {
    SHEAF_HEADER_BYTES + capacity * 8
}

/// A sheaf, named by the address of its block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Sheaf(pub usize);

impl Sheaf {
    /// Fills a fresh (zeroed) block as an empty sheaf.
    pub fn init<P: Platform>(self, p: &P, capacity: usize) {
        p.store(self.0 + W_SIZE, 0);
        p.store(self.0 + W_NEXT, 0);
        p.store(self.0 + W_CAPACITY, capacity);
        p.store(self.0 + W_BEFORE_SLOTS, 0);
    }
    #[inline(always)]
    pub fn size<P: Platform>(self, p: &P) -> usize {
        p.load(self.0 + W_SIZE)
    }
    #[inline(always)]
    pub fn set_size<P: Platform>(self, p: &P, size: usize) {
        p.store(self.0 + W_SIZE, size)
    }
    #[inline(always)]
    pub fn capacity<P: Platform>(self, p: &P) -> usize {
        p.load(self.0 + W_CAPACITY)
    }
    /// The object in the slot below `size` (the last one pushed), or 0 when `size` is 0 (the
    /// header word before slot 0): one load for the double-free check.
    #[inline(always)]
    pub fn last_pushed<P: Platform>(self, p: &P, size: usize) -> usize {
        const _: () = assert!(W_BEFORE_SLOTS + 8 == SHEAF_HEADER_BYTES);
        p.load(self.0 + W_BEFORE_SLOTS + size * 8)
    }
    /// The address of slot `i`.
    #[inline(always)]
    pub fn slot(self, i: usize) -> usize {
        self.0 + SHEAF_HEADER_BYTES + i * 8
    }
    pub fn next<P: Platform>(self, p: &P) -> usize {
        p.load(self.0 + W_NEXT)
    }
    pub fn set_next<P: Platform>(self, p: &P, next: usize) {
        p.store(self.0 + W_NEXT, next)
    }
    /// Whether this is the bootstrap sheaf (capacity 0).
    pub fn is_bootstrap<P: Platform>(self, p: &P) -> bool {
        self.capacity(p) == 0
    }
    /// An rcu_free sheaf handed to call_rcu (rcu_sheaf.rs): its rcu_head (two words, Linux's
    /// `union { rcu_head; barn_list; }`) overlays the barn link and the capacity word, and
    /// the always-0 word holds `owner`, the cache's id (Linux's sheaf->cache), for the
    /// callback to find its cache.
    pub fn prepare_rcu<P: Platform>(self, p: &P, owner: usize) {
        p.store(self.0 + W_BEFORE_SLOTS, owner);
    }
    /// The owner `prepare_rcu` recorded.
    pub fn rcu_owner<P: Platform>(self, p: &P) -> usize {
        p.load(self.0 + W_BEFORE_SLOTS)
    }
    /// Restores the words the rcu_head and the owner overlaid (`capacity`: the cache's,
    /// which every sheaf of a cache shares).
    pub fn finish_rcu<P: Platform>(self, p: &P, capacity: usize) {
        p.store(self.0 + W_NEXT, 0);
        p.store(self.0 + W_CAPACITY, capacity);
        p.store(self.0 + W_BEFORE_SLOTS, 0);
    }
    /// Appends `obj` (the caller checked there is room).
    #[inline(always)]
    pub fn push<P: Platform>(self, p: &P, obj: usize) {
        let size = self.size(p);
        p.store(self.slot(size), obj);
        self.set_size(p, size + 1);
    }
    /// Removes the last object (the caller checked there is one).
    #[inline(always)]
    pub fn pop<P: Platform>(self, p: &P) -> usize {
        let size = self.size(p) - 1;
        self.set_size(p, size);
        p.load(self.slot(size))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacities_fill_their_kmalloc_bucket_as_linux_does() {
        // 32 + 60 * 8 = 512: kmalloc-512 exactly.
        assert_eq!(sheaf_capacity(64, None), 60);
        assert_eq!(sheaf_capacity(8, None), 60);
        // 26 -> 240 bytes -> kmalloc-256 -> 28.
        assert_eq!(sheaf_capacity(256, None), 28);
        // 12 -> 128 bytes -> 12.
        assert_eq!(sheaf_capacity(1024, None), 12);
        // 4 -> 64 bytes -> 4.
        assert_eq!(sheaf_capacity(4096, None), 4);
        // A requested 32 -> 288 bytes -> kmalloc-512 -> 60; 10 -> 112 -> kmalloc-128 -> 12.
        assert_eq!(sheaf_capacity(64, Some(32)), 60);
        assert_eq!(sheaf_capacity(64, Some(10)), 12);
        assert_eq!(sheaf_capacity(64, Some(1)), 4);
        assert!(sheaf_bytes(sheaf_capacity(64, Some(MAX_SHEAF_CAPACITY))) <= 8192);
    }
}
