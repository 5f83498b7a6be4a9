//! `PageChain`: owned page blocks chained through their own first word, so a holder of many
//! blocks needs no heap (and allocates nothing that could itself take pages); dropping the
//! chain frees every block.

use super::{Pages, PhysAddr};

/// A LIFO list of owned blocks. Each block's first word holds the next block's raw parts
/// (physical address | (order + 1)), 0 at the end; the head is held as a `Pages`.
#[derive(Debug, Default)]
pub struct PageChain {
    head: Option<Pages>,
}

impl PageChain {
    pub const fn new() -> PageChain {
        PageChain { head: None }
    }

    /// Takes ownership of `block` (its first word is overwritten).
    pub fn push(&mut self, block: Pages) {
        let next = self.head.take().map_or(0, |h| {
            let (phys, order) = h.into_raw();
            phys.as_u64() | (u64::from(order) + 1)
        });
        // SAFETY: the first 8 bytes of a block this chain now owns, in the direct map (page
        // aligned, so aligned for a u64); nothing else refers to the block.
        unsafe { (block.virt_ptr() as *mut u64).write(next) };
        self.head = Some(block);
    }

    /// The block pushed last.
    pub fn pop(&mut self) -> Option<Pages> {
        let head = self.head.take()?;
        // SAFETY: `push` wrote this word, and the block has been the chain's alone since.
        let next = unsafe { (head.virt_ptr() as *const u64).read() };
        if next != 0 {
            let order = (next & 0xff) as u8 - 1;
            // SAFETY: (phys, order) came from `into_raw` in `push` of the block pushed before
            // this one; the chain is its only owner, and takes it back once.
            self.head = Some(unsafe { Pages::from_raw(PhysAddr::new(next & !0xfff), order) });
        }
        Some(head)
    }
}

impl Drop for PageChain {
    fn drop(&mut self) {
        while let Some(block) = self.pop() {
            drop(block);
        }
    }
}
