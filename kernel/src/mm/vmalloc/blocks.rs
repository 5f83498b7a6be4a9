//! An area's backing pages by order (`vmalloc.page_order`, Linux 6.19's large-order
//! vmalloc): the first `high_blocks` blocks of 2^order physically contiguous pages, each one
//! buddy call, then single pages. Mapping them into an area, and unmapping and freeing them
//! on vfree: a block goes back in one call (Linux's "vmalloc: Optimize vfree", which frees
//! through `__free_contig_range`).

use numalab_algo::page::{PhysAddr, VirtAddr};
use numalab_algo::vmalloc::PAGE_SIZE;

use super::{accounting, backing, map};
use crate::topology::NodeId;

/// How an area's pages were allocated: `high_blocks` blocks of 2^`order` pages, then single
/// pages. At most `MAX_BLOCKS` blocks per area (the rest are single pages), so that it fits
/// in the padding of the busy tree's per-area record (`AreaMeta`) with no growth: a larger
/// record made every 1-page vmalloc+vfree pair dearer (icount).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Backing {
    pub order: u8,
    pub high_blocks: u16,
}

/// The most blocks of 2^order pages one area gets.
pub const MAX_BLOCKS: u16 = u16::MAX;

impl Backing {
    /// What an area of `nr_pages` gets when every block the buddy is asked for comes.
    pub fn planned(order: u8, nr_pages: u64) -> Backing {
        Backing {
            order,
            high_blocks: if order == 0 {
                0
            } else {
                (nr_pages >> order).min(MAX_BLOCKS as u64) as u16
            },
        }
    }

    fn high_pages(&self) -> u64 {
        (self.high_blocks as u64) << self.order
    }
}

/// What `populate` did.
pub struct Populated {
    pub backing: Backing,
    pub local_pages: u64,
    pub remote_pages: u64,
    pub buddy_calls: u64,
}

/// Why `populate` stopped: the pages [0, mapped) are mapped and owned with `backing`, and
/// `buddy_calls` were made (the caller undoes them with [`unmap_free`]).
pub struct Stopped {
    pub backing: Backing,
    pub mapped: u64,
    pub buddy_calls: u64,
}

/// Allocates and maps the `nr_pages` pages of the area at `start` from NUMA node `numa`:
/// blocks of 2^`order` pages while at least that many are left and the buddy gives them
/// (after the first refusal, single pages), then single pages. `fail_at`: fault injection,
/// the page whose allocation fails. `local`: the calling CPU's memory node.
pub fn populate(
    start: u64,
    nr_pages: u64,
    order: u8,
    numa: NodeId,
    zero: bool,
    fail_at: Option<u64>,
    local: NodeId,
) -> Result<Populated, Stopped> {
    if order == 0 {
        return populate_pages(start, nr_pages, numa, zero, fail_at, local);
    }
    let mut backing = Backing {
        order,
        high_blocks: 0,
    };
    let (mut n_local, mut n_remote, mut calls) = (0, 0, 0);
    let mut high = order > 0;
    let mut i = 0;
    while i < nr_pages {
        let ord = if high && backing.high_blocks < MAX_BLOCKS && nr_pages - i >= 1 << order {
            order
        } else {
            0
        };
        let n = 1u64 << ord;
        let page = if fail_at.is_some_and(|f| (i..i + n).contains(&f)) {
            None
        } else {
            calls += 1;
            backing::alloc_block(numa, ord, zero)
        };
        let Some((phys, got)) = page else {
            if ord > 0 {
                // The buddy has no such block: single pages from here on (Linux falls back
                // to order 0 too).
                high = false;
                continue;
            }
            return Err(Stopped {
                backing,
                mapped: i,
                buddy_calls: calls,
            });
        };
        for k in 0..n {
            let va = VirtAddr::new(start + (i + k) * PAGE_SIZE);
            // SAFETY: the area was just reserved for us and is unmapped (purged areas were
            // unmapped before they reached the free space or a pool); the block is ours
            // from now until vfree.
            if !unsafe { map::map_page(va, PhysAddr::new(phys.as_u64() + k * PAGE_SIZE)) } {
                for u in 0..k {
                    // SAFETY: we mapped these pages of our own area just above.
                    unsafe { map::unmap_page(VirtAddr::new(start + (i + u) * PAGE_SIZE)) };
                }
                // SAFETY: the block is ours and none of its pages is mapped any more.
                unsafe { backing::free_block(phys, ord) };
                return Err(Stopped {
                    backing,
                    mapped: i,
                    buddy_calls: calls + 1,
                });
            }
        }
        accounting::add(got, n);
        if ord > 0 {
            backing.high_blocks += 1;
        }
        if got == local {
            n_local += n;
        } else {
            n_remote += n;
        }
        i += n;
    }
    Ok(Populated {
        backing,
        local_pages: n_local,
        remote_pages: n_remote,
        buddy_calls: calls,
    })
}

/// Unmaps the first `mapped` pages of the area at `start` and, when `owned` (vmalloc, not
/// vmap), frees them as `backing` says: each block in one buddy call. Returns the buddy
/// calls made.
///
/// # Safety
/// The caller owns the area (it left its busy tree, or was never handed out), nobody
/// accesses it any more, and its first `mapped` pages are mapped as `backing` says (whole
/// blocks first).
pub unsafe fn unmap_free(start: u64, mapped: u64, backing: Backing, owned: bool) -> u64 {
    if backing.high_blocks == 0 {
        // SAFETY: this function's contract, for an area of single pages only.
        return unsafe { unmap_free_pages(start, mapped, owned) };
    }
    let block = 1u64 << backing.order;
    let high = backing.high_pages().min(mapped);
    let mut calls = 0;
    let mut block_phys = None;
    for j in 0..mapped {
        // SAFETY: the caller owns the area and nobody accesses it (this function's contract).
        let phys = unsafe { map::unmap_page(VirtAddr::new(start + j * PAGE_SIZE)) };
        if !owned {
            continue;
        }
        if j < high {
            if j % block == 0 {
                block_phys = phys;
            }
            if j % block == block - 1 {
                if let Some(p) = block_phys.take() {
                    accounting::sub(p, block);
                    // SAFETY: the block's pages are all unmapped now; it was this area's,
                    // from one alloc_block call of this order. Other CPUs may hold stale TLB
                    // entries until the purge (Linux's lazy vfree trade).
                    unsafe { backing::free_block(p, backing.order) };
                    calls += 1;
                }
            }
        } else if let Some(p) = phys {
            accounting::sub(p, 1);
            // SAFETY: a single page of this area, unmapped on this CPU (as above).
            unsafe { backing::free_page(p) };
            calls += 1;
        }
    }
    calls
}

/// `unmap_free` of an area of single pages only (order 0: the path every page took before
/// `vmalloc.page_order`, kept as short).
///
/// # Safety
/// As for `unmap_free`.
unsafe fn unmap_free_pages(start: u64, mapped: u64, owned: bool) -> u64 {
    let mut calls = 0;
    for j in 0..mapped {
        // SAFETY: the caller owns the area and nobody accesses it (unmap_free's contract).
        let phys = unsafe { map::unmap_page(VirtAddr::new(start + j * PAGE_SIZE)) };
        if let (Some(p), true) = (phys, owned) {
            accounting::sub(p, 1);
            // SAFETY: a single page of this area, unmapped on this CPU; other CPUs may hold
            // stale TLB entries until the purge (Linux's lazy vfree trade).
            unsafe { backing::free_page(p) };
            calls += 1;
        }
    }
    calls
}

/// `populate` of single pages only (order 0: the loop every area took before
/// `vmalloc.page_order`, kept as short).
fn populate_pages(
    start: u64,
    nr_pages: u64,
    numa: NodeId,
    zero: bool,
    fail_at: Option<u64>,
    local: NodeId,
) -> Result<Populated, Stopped> {
    let (mut n_local, mut n_remote) = (0, 0);
    for i in 0..nr_pages {
        let page = if fail_at == Some(i) {
            None
        } else {
            backing::alloc_page(numa, zero)
        };
        let stopped = |calls| Stopped {
            backing: Backing::default(),
            mapped: i,
            buddy_calls: calls,
        };
        let Some((phys, got)) = page else {
            return Err(stopped(i));
        };
        // SAFETY: as in `populate`: the area is ours and unmapped, the page is ours.
        if !unsafe { map::map_page(VirtAddr::new(start + i * PAGE_SIZE), phys) } {
            // SAFETY: the page is ours and not mapped.
            unsafe { backing::free_page(phys) };
            return Err(stopped(i + 1));
        }
        accounting::add(got, 1);
        if got == local {
            n_local += 1;
        } else {
            n_remote += 1;
        }
    }
    Ok(Populated {
        backing: Backing::default(),
        local_pages: n_local,
        remote_pages: n_remote,
        buddy_calls: nr_pages,
    })
}
