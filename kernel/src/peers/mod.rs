//! The allocators the instructions-per-pair harness (bench/pairs.rs) measures, behind one safe
//! API: a `Peer` hands out owned `Block`s and takes them back, so the harness and the
//! experiments need no `unsafe` (ktest feature only; nothing but kernel/src/bench uses it).
//!
//! - `RawPeer`: an allocator's raw entry points (alloc by layout, free by pointer and layout),
//!   implemented here only, for numalab's kmalloc, one kmem_cache and a kmalloc-like set of
//!   private caches (slub.rs), the peer crates talc, linked_list_allocator,
//!   buddy_system_allocator and slabmalloc on arenas of frame pages (heaps.rs), the empty
//!   harness (`Empty`) and `OutOfLine`, the same allocator behind `#[inline(never)]` entry
//!   points (the measured call, as a caller of Linux's exported kmalloc/kfree pays it).
//! - `Peer<'id, P, M>`: the safe front, made only by `with`. Every `Block` it hands out is
//!   branded with its `'id` (a fresh, invariant lifetime per `with` call, the "generativity"
//!   pattern), is neither `Copy` nor `Clone`, remembers the size it was allocated with
//!   (`Fixed<N>` at compile time, or a `Dyn` layout) and is freed by value; so a block is freed
//!   once, into the allocator it came from, with its own layout, and none outlives its peer.
//!
//! Cost: none. A `Block<Fixed<N>>` is one word and a `Block<Dyn>` three, as the raw
//! pointer and the (pointer, layout) pair the harness kept before; every method here is
//! `#[inline(always)]` over the raw entry points, so under `--icount` the harness and every
//! allocator execute the instructions they did with raw pointers.

pub mod heaps;
pub mod slub;

use alloc::vec::Vec;
use core::alloc::Layout;
use core::marker::PhantomData;
use core::ptr::NonNull;

/// An allocator's raw entry points. Implemented in this module only.
pub trait RawPeer {
    /// A block of `layout`, or None when the allocator is out of memory.
    ///
    /// # Safety
    /// `layout` has a non-zero size (talc's contract; `Size` guarantees it).
    unsafe fn alloc_raw(&mut self, layout: Layout) -> Option<NonNull<u8>>;
    /// Frees a block.
    ///
    /// # Safety
    /// `ptr` came from `alloc_raw(layout)` on this allocator and is not used again.
    unsafe fn free_raw(&mut self, ptr: NonNull<u8>, layout: Layout);
}

/// The size a block was allocated with: a compile-time `Fixed<BYTES>` (8-byte aligned; no
/// room taken in the block handle) or a run-time `Dyn`. Never zero bytes (sealed: only these
/// two implement it).
pub trait Size: Copy + sealed::Sealed {
    fn layout(self) -> Layout;
}

mod sealed {
    pub trait Sealed {}
    impl<const BYTES: usize> Sealed for super::Fixed<BYTES> {}
    impl Sealed for super::Dyn {}
}

/// `BYTES` (at least 1) bytes, 8-byte aligned, known at compile time.
#[derive(Clone, Copy, Debug)]
pub struct Fixed<const BYTES: usize>;

impl<const BYTES: usize> Size for Fixed<BYTES> {
    #[inline(always)]
    fn layout(self) -> Layout {
        const { assert!(BYTES > 0, "a block has at least one byte") };
        Layout::from_size_align(BYTES, 8).expect("valid layout")
    }
}

/// A layout of at least one byte, known at run time.
#[derive(Clone, Copy, Debug)]
pub struct Dyn(Layout);

impl Dyn {
    /// `size_bytes` (at least 1) aligned to `align_bytes` (a power of two), or None.
    #[inline(always)]
    pub fn new(size_bytes: usize, align_bytes: usize) -> Option<Dyn> {
        let l = Layout::from_size_align(size_bytes, align_bytes).ok()?;
        (l.size() > 0).then_some(Dyn(l))
    }
}

impl Size for Dyn {
    #[inline(always)]
    fn layout(self) -> Layout {
        self.0
    }
}

/// The brand of one `with` call: invariant in `'id`, so blocks of two peers never mix.
type Brand<'id> = PhantomData<fn(&'id ()) -> &'id ()>;

/// An owned block of the peer branded `'id`, of size `S`. Freed by `Peer::free` (dropping it
/// leaks it: safe, and the allocator's own accounting shows it).
pub struct Block<'id, S: Size> {
    ptr: NonNull<u8>,
    size: S,
    _brand: Brand<'id>,
}

/// Called right before a workload's timed loop (`end` false) and right after it (true),
/// outside the timed region, with the allocator: a profile of its events per workload.
pub trait Mark<P> {
    fn mark(&mut self, peer: &P, workload: &str, end: bool);
}

/// No profile.
pub struct NoMark;
impl<P> Mark<P> for NoMark {
    #[inline(always)]
    fn mark(&mut self, _peer: &P, _workload: &str, _end: bool) {}
}

/// The safe front of allocator `P`, branded `'id`; `M` profiles it.
pub struct Peer<'id, P: RawPeer, M: Mark<P> = NoMark> {
    raw: P,
    profile: M,
    _brand: Brand<'id>,
}

/// Runs `f` with a peer over `raw` (profiled by `profile`), under a brand of its own; returns
/// what `f` returned, the allocator and the profile. Blocks cannot leave `f`.
pub fn with<P: RawPeer, M: Mark<P>, R>(
    raw: P,
    profile: M,
    f: impl for<'id> FnOnce(&mut Peer<'id, P, M>) -> R,
) -> (R, P, M) {
    let mut peer = Peer {
        raw,
        profile,
        _brand: PhantomData,
    };
    let r = f(&mut peer);
    (r, peer.raw, peer.profile)
}

impl<'id, P: RawPeer, M: Mark<P>> Peer<'id, P, M> {
    #[inline(always)]
    pub fn alloc<S: Size>(&mut self, size: S) -> Option<Block<'id, S>> {
        // SAFETY: a `Size` is never zero bytes.
        unsafe { self.raw.alloc_raw(size.layout()) }.map(|ptr| Block {
            ptr,
            size,
            _brand: PhantomData,
        })
    }

    #[inline(always)]
    pub fn free<S: Size>(&mut self, block: Block<'id, S>) {
        // SAFETY: the brand says `block` came from `alloc` on this peer, i.e. from
        // `alloc_raw(block.size.layout())` of `self.raw`; it is consumed here, so freed once.
        unsafe { self.raw.free_raw(block.ptr, block.size.layout()) }
    }

    /// Frees `live[i]`, then allocates `next()` into its slot; when that fails the slot is
    /// removed (`swap_remove`) and false returned. (The random workload's step, without a
    /// moment where the freed block is reachable.)
    #[inline(always)]
    pub fn replace(
        &mut self,
        live: &mut Vec<Block<'id, Dyn>>,
        i: usize,
        next: impl FnOnce() -> Dyn,
    ) -> bool {
        let (ptr, size) = (live[i].ptr, live[i].size);
        // SAFETY: live[i] is a block of this peer (brand) allocated with `size`; it is
        // overwritten or removed below before anything can read it again.
        unsafe { self.raw.free_raw(ptr, size.layout()) };
        let l = next();
        // SAFETY: a `Dyn` is never zero bytes.
        match unsafe { self.raw.alloc_raw(l.layout()) } {
            Some(p) => {
                live[i] = Block {
                    ptr: p,
                    size: l,
                    _brand: PhantomData,
                };
                true
            }
            None => {
                // Dropping a Block frees nothing: the freed one is just gone.
                live.swap_remove(i);
                false
            }
        }
    }

    /// Frees every block of `blocks`, in order; the vector is given back, emptied, by
    /// `Freed::clear` (their count still readable until then).
    #[inline(always)]
    pub fn free_all<S: Size>(&mut self, blocks: Vec<Block<'id, S>>) -> Freed<'id, S> {
        for b in &blocks {
            // SAFETY: as in `free`: each block is this peer's; `Freed` keeps them unreachable
            // until the vector is cleared, so each is freed once.
            unsafe { self.raw.free_raw(b.ptr, b.size.layout()) };
        }
        Freed(blocks)
    }

    /// Calls the profile (outside any timed region).
    pub fn mark(&mut self, workload: &str, end: bool) {
        self.profile.mark(&self.raw, workload, end);
    }
}

/// Blocks already freed by `Peer::free_all`: only their count can be read.
pub struct Freed<'id, S: Size>(Vec<Block<'id, S>>);

impl<'id, S: Size> Freed<'id, S> {
    /// How many were freed.
    #[inline(always)]
    pub fn count(&self) -> usize {
        self.0.len()
    }
    /// The vector, emptied, for reuse.
    #[inline(always)]
    pub fn clear(mut self) -> Vec<Block<'id, S>> {
        self.0.clear();
        self.0
    }
}

/// The same allocator behind `#[inline(never)]` entry points: the loop pays a call and a
/// return per operation, and the allocator its own prologue, as a caller of Linux's exported
/// kmalloc/kfree does.
pub struct OutOfLine<P>(pub P);

impl<P: RawPeer> RawPeer for OutOfLine<P> {
    #[inline(never)]
    unsafe fn alloc_raw(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.0.alloc_raw(layout) }
    }
    #[inline(never)]
    unsafe fn free_raw(&mut self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.0.free_raw(ptr, layout) }
    }
}

/// No allocator at all: the loop, the call and the bookkeeping of each workload (the harness
/// cost subtracted from every other figure). Every "block" is one static address, never
/// dereferenced.
pub struct Empty(NonNull<u8>);

impl Empty {
    pub fn new() -> Empty {
        static mut SINK: [u64; 512] = [0; 512];
        // Only the address is taken; Empty never dereferences it.
        Empty(NonNull::new(core::ptr::addr_of_mut!(SINK) as *mut u8).expect("static address"))
    }
}

impl RawPeer for Empty {
    #[inline(always)]
    unsafe fn alloc_raw(&mut self, _layout: Layout) -> Option<NonNull<u8>> {
        Some(core::hint::black_box(self.0))
    }
    #[inline(always)]
    unsafe fn free_raw(&mut self, ptr: NonNull<u8>, _layout: Layout) {
        core::hint::black_box(ptr);
    }
}
