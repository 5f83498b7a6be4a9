//! Owned vmalloc areas: `VmArea` is one live vmalloc or vmap area; dropping it frees it
//! (vfree, or vunmap for a vmap area, whose pages stay the caller's), so code that holds areas
//! as values cannot free one twice or with the wrong call. `into_raw`/`from_raw` cross to the
//! address-based API (vmalloc/vfree) for glue.

use super::{AreaKind, VirtAddr, VmError};
use crate::topology::NodeId;
use numalab_algo::page::PhysAddr;

/// One live area of `size_bytes` at `addr`.
#[derive(Debug)]
pub struct VmArea {
    addr: VirtAddr,
    size_bytes: usize,
    kind: AreaKind,
}

impl VmArea {
    /// `vmalloc(size_bytes)` as an owned area.
    #[track_caller]
    pub fn vmalloc(size_bytes: usize) -> Result<VmArea, VmError> {
        super::vmalloc(size_bytes).map(|addr| VmArea::new(addr, size_bytes, AreaKind::Vmalloc))
    }

    /// `vzalloc(size_bytes)` as an owned area (zero-filled).
    #[track_caller]
    pub fn vzalloc(size_bytes: usize) -> Result<VmArea, VmError> {
        super::vzalloc(size_bytes).map(|addr| VmArea::new(addr, size_bytes, AreaKind::Vmalloc))
    }

    /// `vmalloc_node(size_bytes, node)` as an owned area.
    #[track_caller]
    pub fn vmalloc_node(size_bytes: usize, node: NodeId) -> Result<VmArea, VmError> {
        super::vmalloc_node(size_bytes, node)
            .map(|addr| VmArea::new(addr, size_bytes, AreaKind::Vmalloc))
    }

    /// `vmap(pages)` as an owned mapping (dropping it unmaps; the pages stay the caller's).
    #[track_caller]
    pub fn vmap(pages: &[PhysAddr]) -> Result<VmArea, VmError> {
        let size_bytes = pages.len() * numalab_algo::vmalloc::PAGE_SIZE as usize;
        super::vmap(pages).map(|addr| VmArea::new(addr, size_bytes, AreaKind::Vmap))
    }

    fn new(addr: VirtAddr, size_bytes: usize, kind: AreaKind) -> VmArea {
        VmArea {
            addr,
            size_bytes,
            kind,
        }
    }

    pub fn addr(&self) -> VirtAddr {
        self.addr
    }

    pub fn size_bytes(&self) -> usize {
        self.size_bytes
    }

    /// The area's bytes.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the area is live and mapped for `size_bytes` from `addr` while this handle
        // exists, and the borrow ends before the handle can be dropped.
        unsafe { core::slice::from_raw_parts(self.addr.as_mut_ptr::<u8>(), self.size_bytes) }
    }

    /// The area's bytes, writable.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`; `&mut self` makes this the only reference.
        unsafe { core::slice::from_raw_parts_mut(self.addr.as_mut_ptr::<u8>(), self.size_bytes) }
    }

    /// Gives up ownership: the caller frees the address (vfree / vunmap, or `from_raw`).
    pub fn into_raw(self) -> (VirtAddr, usize, AreaKind) {
        let raw = (self.addr, self.size_bytes, self.kind);
        core::mem::forget(self);
        raw
    }

    /// Takes ownership of a raw area again.
    ///
    /// # Safety
    /// `addr` is a live area of `kind` and at least `size_bytes` long that nothing else will
    /// free or use (typically from `into_raw`).
    pub unsafe fn from_raw(addr: VirtAddr, size_bytes: usize, kind: AreaKind) -> VmArea {
        VmArea::new(addr, size_bytes, kind)
    }
}

impl Drop for VmArea {
    fn drop(&mut self) {
        // A refused free is reported and counted by vfree/vunmap (it cannot happen for an
        // owned area unless `from_raw`'s contract was broken).
        let _ = match self.kind {
            AreaKind::Vmalloc => super::vfree(self.addr),
            AreaKind::Vmap => super::vunmap(self.addr),
        };
    }
}
