//! `Pages`: an owned block of 2^order pages in one word (physical address, node code, order),
//! freed when dropped.

use super::*;

/// An owned block of 2^order pages; dropping it frees it. One word: the physical address
/// (page aligned) with a node code in bits 0-7 (the node id, or
/// `NODE_CODE_LOOKUP` for node ids too large for it, or `NODE_CODE_REFUSED`) and the order in
/// bits 8-11, so that it travels in a register.
#[derive(Debug)]
pub struct Pages {
    pub(super) raw: u64,
}

pub(super) const NODE_CODE_SHIFT: u32 = 0;
pub(super) const ORDER_SHIFT: u32 = 8;
pub(super) const NODE_CODE_MASK: u64 = 0xff;
/// Node code of a block whose node is looked up when needed.
pub(super) const NODE_CODE_LOOKUP: u64 = 0xff;
/// Node code of a `from_raw` already refused and reported (freeing it does nothing).
pub(super) const NODE_CODE_REFUSED: u64 = 0xfe;

#[inline(always)]
pub(super) fn node_code(node: NodeId) -> u64 {
    if (node.0 as u64) < NODE_CODE_REFUSED {
        node.0 as u64
    } else {
        NODE_CODE_LOOKUP
    }
}

impl Pages {
    #[inline(always)]
    pub(super) fn new(phys: PhysAddr, order: u8, node: NodeId) -> Pages {
        Pages {
            raw: phys.as_u64() | node_code(node) << NODE_CODE_SHIFT | (order as u64) << ORDER_SHIFT,
        }
    }
    #[inline(always)]
    pub fn phys_addr(&self) -> PhysAddr {
        PhysAddr::new(self.raw).page_align_down()
    }
    /// The block in the direct map.
    pub fn virt_ptr(&self) -> *mut u8 {
        phys_to_virt(self.phys_addr()).as_mut_ptr()
    }
    #[inline(always)]
    pub fn order(&self) -> u8 {
        ((self.raw >> ORDER_SHIFT) & 0xf) as u8
    }
    pub fn nr_pages(&self) -> usize {
        1 << self.order()
    }
    pub fn size_bytes(&self) -> usize {
        (PAGE_SIZE as usize) << self.order()
    }
    /// The node the pages belong to (`NodeId(u16::MAX)` for a refused or unmanaged block).
    pub fn node(&self) -> NodeId {
        match (self.raw >> NODE_CODE_SHIFT) & NODE_CODE_MASK {
            NODE_CODE_REFUSED => NOT_MANAGED,
            NODE_CODE_LOOKUP => node_of_phys(self.phys_addr()).unwrap_or(NOT_MANAGED),
            code => NodeId(code as u16),
        }
    }
    /// Gives up ownership without freeing; `from_raw` takes it back. The raw parts are the
    /// physical address and the order.
    pub fn into_raw(self) -> (PhysAddr, u8) {
        let raw = (self.phys_addr(), self.order());
        core::mem::forget(self);
        raw
    }
    /// Takes back ownership of a block `into_raw` gave up.
    ///
    /// # Safety
    /// `(phys, order)` must come from `into_raw`, and nothing may use the block after the
    /// returned `Pages` is dropped. (A wrong pair is detected and refused, here or when
    /// dropped, but the block's previous user would still be left with a dangling pointer.)
    pub unsafe fn from_raw(phys: PhysAddr, order: u8) -> Pages {
        if !phys.is_page_aligned() || order > MAX_ORDER {
            // Refused here, so the free fast path need not check alignment.
            report_unaligned(phys, order);
            return Pages {
                raw: NODE_CODE_REFUSED << NODE_CODE_SHIFT,
            };
        }
        Pages::new(phys, order, node_of_phys(phys).unwrap_or(NOT_MANAGED))
    }
}

impl Drop for Pages {
    #[inline(always)]
    fn drop(&mut self) {
        free_block(self.raw);
    }
}
