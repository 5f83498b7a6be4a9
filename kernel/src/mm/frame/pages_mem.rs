//! A `Pages` block's memory, through the direct map: read and written as bytes by its owner
//! (a block refused by `from_raw` has none).

use super::pages::{NODE_CODE_MASK, NODE_CODE_REFUSED, NODE_CODE_SHIFT};
use super::Pages;

impl Pages {
    /// The bytes the block spans (empty for a refused block).
    fn span(&self) -> usize {
        if (self.raw >> NODE_CODE_SHIFT) & NODE_CODE_MASK == NODE_CODE_REFUSED {
            0
        } else {
            self.size_bytes()
        }
    }

    /// The block's bytes in the direct map.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the block is allocated and owned by this handle (one owner: `Pages` is not
        // Clone), mapped in the direct map for its whole size, for as long as the borrow.
        unsafe { core::slice::from_raw_parts(self.virt_ptr(), self.span()) }
    }

    /// The block's bytes in the direct map, writable.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`; `&mut self` makes this the only reference through the handle.
        unsafe { core::slice::from_raw_parts_mut(self.virt_ptr(), self.span()) }
    }
}
