//! The calling CPU's TLB: flush one page (`invlpg`) or all of it, global entries included.
//! Other CPUs are reached by the shootdown in smp/tlb.rs.

use numalab_algo::page::VirtAddr;
use x86_64::registers::control::{Cr4, Cr4Flags};

/// Flushes the page holding `virt` from the calling CPU's TLB (a non-canonical address maps
/// nothing, so there is nothing to flush).
#[inline]
pub fn flush_page(virt: VirtAddr) {
    if let Ok(virt) = x86_64::VirtAddr::try_new(virt.as_u64()) {
        x86_64::instructions::tlb::flush(virt);
    }
}

/// Flushes the whole TLB of the calling CPU, global entries included.
pub fn flush_all() {
    let cr4 = Cr4::read();
    if cr4.contains(Cr4Flags::PAGE_GLOBAL) {
        // SAFETY: clearing and restoring PGE only flushes the TLB (SDM 4.10.4.1); interrupts
        // are off so nothing runs between the two writes.
        x86_64::instructions::interrupts::without_interrupts(|| unsafe {
            Cr4::write(cr4 - Cr4Flags::PAGE_GLOBAL);
            Cr4::write(cr4);
        });
    } else {
        x86_64::instructions::tlb::flush_all();
    }
}
