//! Owned SLUB objects: `Object` is one live object of a `KmemCache`; dropping it frees it into
//! its cache, so code that holds objects as values cannot free one twice or forget one.
//!
//! The raw API (`KmemCache::alloc`/`free`, kmalloc/kfree) stays for glue (the global
//! allocator, bulk frees, benchmarks of the raw fast path); `into_raw`/`from_raw` cross between
//! the two. Objects may move between CPUs (remote frees are SLUB's normal case).

use super::KmemCache;
use core::ptr::NonNull;

/// One live object of `cache`. Not `Clone`: whoever holds it frees it (by dropping it).
pub struct Object {
    cache: &'static KmemCache,
    ptr: NonNull<u8>,
}

// SAFETY: an Object is the only owner of its memory (nothing else refers to it), and
// KmemCache::free is correct from any CPU (a remote free), so moving or sharing the handle
// between CPUs is sound; `&Object` only gives read access to the bytes.
unsafe impl Send for Object {}
// SAFETY: as above; shared references only read.
unsafe impl Sync for Object {}

impl KmemCache {
    /// An owned object (freed when dropped).
    pub fn alloc_object(&'static self) -> Option<Object> {
        self.alloc().map(|ptr| Object { cache: self, ptr })
    }

    /// An owned object from `node`'s memory (the node may be memoryless: nearest memory).
    pub fn alloc_object_node(&'static self, node: super::NodeId) -> Option<Object> {
        self.alloc_node(node).map(|ptr| Object { cache: self, ptr })
    }

    /// Appends up to `count` owned objects to `out` (one bulk call per `buf.len()`, the caller's
    /// scratch of addresses); returns how many were allocated.
    pub fn alloc_objects(
        &'static self,
        out: &mut alloc::vec::Vec<Object>,
        buf: &mut [usize],
        count: usize,
    ) -> usize {
        let want = count.min(buf.len());
        let n = self.alloc_bulk(&mut buf[..want]);
        out.extend(
            buf[..n]
                .iter()
                .filter_map(|&a| NonNull::new(a as *mut u8).map(|ptr| Object { cache: self, ptr })),
        );
        n
    }

    /// Frees every object of `objs` (left empty) with bulk calls of `buf.len()` addresses.
    /// Objects of another cache are freed one by one into their own cache.
    pub fn free_objects(&'static self, objs: &mut alloc::vec::Vec<Object>, buf: &mut [usize]) {
        while !objs.is_empty() {
            let mut n = 0;
            while n < buf.len() {
                let Some(obj) = objs.pop() else { break };
                if core::ptr::eq(obj.cache, self) {
                    buf[n] = obj.into_raw().as_ptr() as usize;
                    n += 1;
                } else {
                    drop(obj);
                }
            }
            // SAFETY: each address came from an Object of this cache that `into_raw` gave up,
            // so each object is freed exactly once and nothing refers to it afterwards.
            unsafe { self.free_bulk(&buf[..n]) }
        }
    }
}

impl Object {
    /// The object's virtual address.
    pub fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    /// The cache it belongs to.
    pub fn cache(&self) -> &'static KmemCache {
        self.cache
    }

    /// The object's bytes (its cache's object size).
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the object is live and owned by this handle for as long as the borrow, and
        // spans object_size bytes of mapped slab memory.
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.cache.core().object_size()) }
    }

    /// The object's bytes, writable.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`; `&mut self` makes this the only reference.
        unsafe {
            core::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.cache.core().object_size())
        }
    }

    /// Writes `value` into the object's first 8 bytes (objects are at least 8 bytes when
    /// this is used; a smaller object takes the low bytes).
    pub fn write_word(&mut self, value: u64) {
        let bytes = self.bytes_mut();
        let n = bytes.len().min(8);
        bytes[..n].copy_from_slice(&value.to_le_bytes()[..n]);
    }

    /// Reads the object's first 8 bytes (as `write_word` wrote them).
    pub fn read_word(&self) -> u64 {
        let mut word = [0u8; 8];
        let bytes = self.bytes();
        let n = bytes.len().min(8);
        word[..n].copy_from_slice(&bytes[..n]);
        u64::from_le_bytes(word)
    }

    /// Gives up ownership: the caller must free the address (KmemCache::free or `from_raw`).
    pub fn into_raw(self) -> NonNull<u8> {
        let ptr = self.ptr;
        core::mem::forget(self);
        ptr
    }

    /// Takes ownership of `ptr` again.
    ///
    /// # Safety
    /// `ptr` is a live object of `cache` that nothing else will free or use (typically from
    /// `into_raw`). A test that frees twice on purpose does it through this function.
    pub unsafe fn from_raw(cache: &'static KmemCache, ptr: NonNull<u8>) -> Object {
        Object { cache, ptr }
    }
}

impl core::fmt::Debug for Object {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Object({} @ {:#x})", self.cache.name(), self.addr())
    }
}

impl Drop for Object {
    fn drop(&mut self) {
        // SAFETY: the handle owned the object, which is not used after this (drop runs once).
        unsafe { self.cache.free(self.ptr) }
    }
}
