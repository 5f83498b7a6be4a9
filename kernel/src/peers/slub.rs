//! numalab's own allocators as peers: kmalloc/kfree, one kmem_cache, and a kmalloc-like set
//! of private caches (one per kmalloc class, a free naming its class by the block's layout).

use super::Peer;
use crate::mm::slub::kmalloc::{kfree, kmalloc};
use crate::mm::slub::{KmemCache, PrivateCache};
use alloc::vec::Vec;
use core::alloc::Layout;
use core::ptr::NonNull;
use numalab_algo::slub::geometry::kmalloc_index;

/// kmalloc(layout.size()) / kfree.
pub struct Kmalloc;

// SAFETY: kmalloc and kfree, the kernel's own pair.
unsafe impl Peer for Kmalloc {
    #[inline(always)]
    unsafe fn alloc(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        kmalloc(layout.size())
    }
    #[inline(always)]
    unsafe fn free(&mut self, ptr: NonNull<u8>, _layout: Layout) {
        // SAFETY: forwarded from the caller's contract (`ptr` came from kmalloc).
        unsafe { kfree(ptr) }
    }
}

/// kmem_cache_alloc / kmem_cache_free on one cache, borrowed for as long as the peer lives.
pub struct Cache<'c>(pub &'c KmemCache);

// SAFETY: kmem_cache_alloc and kmem_cache_free of the one cache.
unsafe impl Peer for Cache<'_> {
    #[inline(always)]
    unsafe fn alloc(&mut self, _layout: Layout) -> Option<NonNull<u8>> {
        self.0.alloc()
    }
    #[inline(always)]
    unsafe fn free(&mut self, ptr: NonNull<u8>, _layout: Layout) {
        // SAFETY: forwarded from the caller's contract (`ptr` came from this cache's alloc).
        unsafe { self.0.free(ptr) }
    }
}

/// A kmalloc of private caches: `caches[kmalloc_index(size)]` serves a block of `size`.
pub struct Classes<'c> {
    caches: Vec<&'c KmemCache>,
}

impl<'c> Classes<'c> {
    /// Over `caches`, one per kmalloc class in `KMALLOC_SIZES` order.
    pub fn new(caches: &'c [PrivateCache]) -> Classes<'c> {
        Classes {
            caches: caches.iter().map(|c| &**c).collect(),
        }
    }

    pub fn caches(&self) -> &[&'c KmemCache] {
        &self.caches
    }
}

// SAFETY: a block of `layout` comes from, and goes back to, the cache of its class.
unsafe impl Peer for Classes<'_> {
    #[inline(always)]
    unsafe fn alloc(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        self.caches[kmalloc_index(layout.size())?].alloc()
    }
    #[inline(always)]
    unsafe fn free(&mut self, ptr: NonNull<u8>, layout: Layout) {
        if let Some(i) = kmalloc_index(layout.size()) {
            // SAFETY: forwarded from the caller's contract; `ptr` came from `alloc_raw(layout)`,
            // i.e. from this class's cache.
            unsafe { self.caches[i].free(ptr) }
        }
    }
}
