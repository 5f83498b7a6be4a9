//! Owned kmalloc blocks: a `KmallocObject` is one live kmalloc allocation of the size asked
//! for; dropping it kfrees it, so code that holds kmalloc memory as values cannot free a block
//! twice or forget one, and reads and writes it as bytes (the size asked for, not `ksize`).

use super::kmalloc::{kfree, kmalloc, kmalloc_node};
use super::NodeId;
use core::ptr::NonNull;

/// One live kmalloc block of `size_bytes` (at least 1). Not `Clone`: the holder frees it.
pub struct KmallocObject {
    ptr: NonNull<u8>,
    size_bytes: usize,
}

// SAFETY: the handle is the block's only owner, and kfree is correct from any CPU (a remote
// free); `&KmallocObject` only reads the bytes.
unsafe impl Send for KmallocObject {}
// SAFETY: as above; shared references only read.
unsafe impl Sync for KmallocObject {}

impl KmallocObject {
    /// `kmalloc(size_bytes)`, owned; None for 0 bytes or out of memory.
    pub fn alloc(size_bytes: usize) -> Option<KmallocObject> {
        if size_bytes == 0 {
            return None;
        }
        kmalloc(size_bytes).map(|ptr| KmallocObject { ptr, size_bytes })
    }

    /// `kmalloc_node(size_bytes, node)`, owned (the node may be memoryless: nearest memory).
    pub fn alloc_node(size_bytes: usize, node: NodeId) -> Option<KmallocObject> {
        if size_bytes == 0 {
            return None;
        }
        kmalloc_node(size_bytes, node).map(|ptr| KmallocObject { ptr, size_bytes })
    }

    /// The block's virtual address.
    pub fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    /// The size asked for.
    pub fn size_bytes(&self) -> usize {
        self.size_bytes
    }

    /// Gives up ownership without freeing: the caller frees the address (kfree, kfree_rcu).
    pub fn into_raw(self) -> NonNull<u8> {
        let p = self.ptr;
        core::mem::forget(self);
        p
    }

    /// The block's bytes (the size asked for).
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: kmalloc gave at least size_bytes bytes, live and owned by this handle for as
        // long as the borrow.
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.size_bytes) }
    }

    /// The block's bytes, writable.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`; `&mut self` makes this the only reference.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.size_bytes) }
    }
}

impl core::fmt::Debug for KmallocObject {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "KmallocObject({} bytes @ {:#x})",
            self.size_bytes,
            self.addr()
        )
    }
}

impl Drop for KmallocObject {
    fn drop(&mut self) {
        // SAFETY: the handle owned the block (from kmalloc), which is not used after this.
        unsafe { kfree(self.ptr) }
    }
}
