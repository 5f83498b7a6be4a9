//! The peer allocator crates on memory of their own: linked_list_allocator, talc and
//! buddy_system_allocator each on an arena of frame pages it owns (given back when the peer
//! is dropped), and slabmalloc's ZoneAllocator refilled from frame pages on OutOfMemory (4 KiB
//! pages for objects up to 256 bytes, 2 MiB pages above), like NrOS's per-core allocator. They
//! run unlocked: one CPU, one owner.

use super::Peer;
use crate::mm::frame::{self, Pages, Policy};
use alloc::vec::Vec;
use core::alloc::Layout;
use core::ptr::NonNull;
use numalab_algo::page::PhysAddr;

/// An arena's direct-map base and size in bytes.
fn arena_span(arena: &Pages) -> (*mut u8, usize) {
    (arena.virt_ptr(), arena.size_bytes())
}

/// linked_list_allocator's first-fit heap over `arena`.
pub struct LinkedList {
    heap: linked_list_allocator::Heap,
    _arena: Pages,
}

impl LinkedList {
    pub fn new(arena: Pages) -> LinkedList {
        let mut heap = linked_list_allocator::Heap::empty();
        let (base, size) = arena_span(&arena);
        // SAFETY: the arena is fresh memory this peer owns exclusively; it is freed (field
        // `_arena`, dropped after `heap`) only when the heap is gone.
        unsafe { heap.init(base, size) };
        LinkedList {
            heap,
            _arena: arena,
        }
    }
}

// SAFETY: the crate's own allocate/deallocate pair, on the arena this peer owns.
unsafe impl Peer for LinkedList {
    #[inline(always)]
    unsafe fn alloc(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        self.heap.allocate_first_fit(layout).ok()
    }
    #[inline(always)]
    unsafe fn free(&mut self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.heap.deallocate(ptr, layout) }
    }
}

/// talc over `arena` (a manual source: no growth).
pub struct Talc {
    talc: talc::base::Talc<talc::source::Manual, talc::DefaultBinning>,
    _arena: Pages,
}

impl Talc {
    /// None when talc cannot claim the arena (the arena is given back).
    pub fn new(arena: Pages) -> Option<Talc> {
        let mut talc = talc::base::Talc::new(talc::source::Manual);
        let (base, size) = arena_span(&arena);
        // SAFETY: as for LinkedList::new.
        let claimed = unsafe { talc.claim(base, size) };
        claimed.map(|_| Talc {
            talc,
            _arena: arena,
        })
    }
}

// SAFETY: the crate's own allocate/deallocate pair, on the arena this peer owns.
unsafe impl Peer for Talc {
    #[inline(always)]
    unsafe fn alloc(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        // SAFETY: the caller's contract: a non-zero size.
        unsafe { self.talc.allocate(layout) }
    }
    #[inline(always)]
    unsafe fn free(&mut self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.talc.deallocate(ptr.as_ptr(), layout) }
    }
}

/// buddy_system_allocator's heap (orders up to 32) over `arena`.
pub struct Buddy {
    heap: buddy_system_allocator::Heap<32>,
    _arena: Pages,
}

impl Buddy {
    pub fn new(arena: Pages) -> Buddy {
        let mut heap = buddy_system_allocator::Heap::<32>::empty();
        let (base, size) = arena_span(&arena);
        // SAFETY: as for LinkedList::new.
        unsafe { heap.init(base as usize, size) };
        Buddy {
            heap,
            _arena: arena,
        }
    }
}

// SAFETY: the crate's own allocate/deallocate pair, on the arena this peer owns.
unsafe impl Peer for Buddy {
    #[inline(always)]
    unsafe fn alloc(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        self.heap.alloc(layout).ok()
    }
    #[inline(always)]
    unsafe fn free(&mut self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.heap.dealloc(ptr, layout) }
    }
}

/// slabmalloc's ZoneAllocator; its pages (kept as raw parts, given back when dropped).
pub struct Slabmalloc {
    zone: slabmalloc::ZoneAllocator<'static>,
    pages: Vec<(PhysAddr, u8)>,
}

impl Slabmalloc {
    /// None when the direct map is not 2 MiB aligned (slabmalloc's large pages need it).
    pub fn new() -> Option<Slabmalloc> {
        crate::arch::direct_map::is_aligned_to(2 << 20).then(|| Slabmalloc {
            zone: slabmalloc::ZoneAllocator::new(),
            pages: Vec::with_capacity(256),
        })
    }
}

// SAFETY: the crate's own allocate/deallocate pair, on the arena this peer owns.
unsafe impl Peer for Slabmalloc {
    #[inline(always)]
    unsafe fn alloc(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        use slabmalloc::Allocator;
        loop {
            match self.zone.allocate(layout) {
                Ok(p) => return Some(p),
                Err(slabmalloc::AllocationError::OutOfMemory) => {
                    let large = layout.size() > slabmalloc::ZoneAllocator::MAX_BASE_ALLOC_SIZE;
                    let order = if large { 9 } else { 0 };
                    let pages = frame::alloc_pages(order, Policy::Local).ok()?;
                    let (phys, order) = pages.into_raw();
                    self.pages.push((phys, order));
                    let virt = frame::phys_to_virt(phys).as_mut_ptr::<u8>();
                    let r = if large {
                        // SAFETY: a fresh, exclusively owned 2 MiB block, 2 MiB aligned in the
                        // direct map (checked in `new`), given back only when the zone is
                        // dropped; slabmalloc initialises the page header on refill.
                        unsafe {
                            self.zone.refill_large(
                                layout,
                                &mut *(virt as *mut slabmalloc::LargeObjectPage<'static>),
                            )
                        }
                    } else {
                        // SAFETY: as above for a 4 KiB page.
                        unsafe {
                            self.zone.refill(
                                layout,
                                &mut *(virt as *mut slabmalloc::ObjectPage<'static>),
                            )
                        }
                    };
                    r.ok()?;
                }
                Err(_) => return None,
            }
        }
    }
    #[inline(always)]
    unsafe fn free(&mut self, ptr: NonNull<u8>, layout: Layout) {
        use slabmalloc::Allocator;
        let _ = self.zone.deallocate(ptr, layout);
    }
}

impl Drop for Slabmalloc {
    fn drop(&mut self) {
        // The zone refers to the pages: forget its lists first (it frees nothing itself).
        self.zone = slabmalloc::ZoneAllocator::new();
        for (phys, order) in self.pages.drain(..) {
            // SAFETY: (phys, order) came from `into_raw` in the refill above, and the zone that
            // used the block has just been replaced, so nothing refers to it any more.
            drop(unsafe { Pages::from_raw(phys, order) });
        }
    }
}
