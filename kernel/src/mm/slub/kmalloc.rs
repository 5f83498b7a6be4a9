//! kmalloc: thirteen size classes (kmalloc-8 .. kmalloc-8k, with 96 and 192), larger
//! requests straight from the page allocator, and kfree/ksize/krealloc that find the owner
//! from the page's metadata (a slab descriptor, or LARGE_OWNER for page allocations).

use super::{default_tunables, owner_of, KmemCache};
use crate::mm::frame::{self, Policy, PAGE_SIZE};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering::Relaxed};
use numalab_algo::page::VirtAddr;
use numalab_algo::slub::geometry::{
    get_order, kmalloc_index, kmalloc_index_aligned, natural_align, KMALLOC_MAX_CACHE_BYTES,
    KMALLOC_NAMES, KMALLOC_SIZES,
};
use numalab_algo::slub::{Cache, ErrorKind};
use numalab_algo::topology::NodeId;
use spin::Once;

use super::platform::PerNode;

/// Owner word of the head page of a large (page allocator) kmalloc; `private` holds the order.
/// A mark below OWNER_MARKS, so that the SLUB core never takes it for a descriptor.
const LARGE_OWNER: usize = 1;
const _: () = assert!(LARGE_OWNER < numalab_algo::slub::OWNER_MARKS);

static KMALLOC: Once<[&'static KmemCache; 13]> = Once::new();
/// The same caches as plain pointers (null before `init`): kmalloc's hot path reads one
/// without checking a `Once`.
static KMALLOC_PTRS: [AtomicPtr<KmemCache>; 13] =
    [const { AtomicPtr::new(core::ptr::null_mut()) }; 13];
/// Pages of large kmallocs outstanding, per node.
static LARGE_PAGES_ON: PerNode = PerNode::new();
/// kfree of pointers that are neither slab objects nor large kmallocs.
static BAD_KFREES: AtomicUsize = AtomicUsize::new(0);

pub(super) fn init() {
    LARGE_PAGES_ON.init();
    let caches = KMALLOC.call_once(|| {
        core::array::from_fn(|i| {
            let name = KMALLOC_NAMES[i];
            let size = KMALLOC_SIZES[i];
            match KmemCache::create(name, size, natural_align(size), default_tunables(name)) {
                Ok(c) => c,
                Err(e) => panic!("slub: cannot create {}: {:?} (a geometry bug)", name, e),
            }
        })
    });
    super::platform::set_block_source(super::platform::BlockSource {
        alloc: kmalloc,
        free: kfree,
    });
    for (slot, c) in KMALLOC_PTRS.iter().zip(caches.iter()) {
        slot.store(*c as *const KmemCache as *mut KmemCache, Relaxed);
    }
}

/// kmalloc cache `i` (an index from kmalloc_index), None before init.
#[inline(always)]
fn kmalloc_cache(i: usize) -> Option<&'static KmemCache> {
    let p = KMALLOC_PTRS.get(i)?.load(Relaxed);
    // SAFETY: non-null entries are the 'static kmalloc caches stored by `init`, never
    // destroyed.
    unsafe { p.as_ref() }
}

/// The kmalloc cache serving `size_bytes`, if SLUB is up and the size is a cache size.
pub fn cache_for(size_bytes: usize) -> Option<&'static KmemCache> {
    Some(KMALLOC.get()?[kmalloc_index(size_bytes)?])
}

/// The kmalloc caches, smallest first.
pub fn caches() -> Option<&'static [&'static KmemCache; 13]> {
    KMALLOC.get()
}

/// Bytes of large kmallocs outstanding on `node`.
pub fn large_bytes_on(node: NodeId) -> usize {
    LARGE_PAGES_ON.get(node) * PAGE_SIZE as usize
}

/// kfree calls on pointers SLUB does not own.
pub fn bad_kfrees() -> usize {
    BAD_KFREES.load(Relaxed)
}

fn large_alloc(size_bytes: usize, node: Option<NodeId>) -> Option<NonNull<u8>> {
    large_alloc_policy(size_bytes, node.map_or(Policy::Local, Policy::Preferred))
}

fn large_alloc_policy(size_bytes: usize, policy: Policy) -> Option<NonNull<u8>> {
    let order = get_order(size_bytes);
    let pages = frame::alloc_pages(order, policy).ok()?;
    LARGE_PAGES_ON.add(pages.node(), 1 << pages.order());
    let (phys, order) = pages.into_raw();
    super::slabmap::set(frame::phys_to_virt(phys).as_u64() as usize, 1, LARGE_OWNER);
    if let Some(meta) = frame::page_meta(phys) {
        meta.private.store(order as usize, Relaxed);
    }
    NonNull::new(frame::phys_to_virt(phys).as_mut_ptr::<u8>())
}

/// Allocates `size_bytes` (8-byte aligned; power-of-two sizes naturally aligned).
#[inline]
pub fn kmalloc(size_bytes: usize) -> Option<NonNull<u8>> {
    match kmalloc_index(size_bytes) {
        Some(i) => kmalloc_cache(i)?.alloc(),
        None => large_alloc(size_bytes, None),
    }
}

/// Allocates `size_bytes`, preferably from `node`'s memory: when `node` is out of pages,
/// from the nearest node that has some (Linux's kmalloc_node without __GFP_THISNODE).
pub fn kmalloc_node(size_bytes: usize, node: NodeId) -> Option<NonNull<u8>> {
    match kmalloc_index(size_bytes) {
        Some(i) => KMALLOC.get()?[i].alloc_node(node),
        None => large_alloc(size_bytes, Some(node)),
    }
}

/// Allocates `size_bytes` from `node`'s memory only, or fails (Linux's kmalloc_node with
/// __GFP_THISNODE).
pub fn kmalloc_node_strict(size_bytes: usize, node: NodeId) -> Option<NonNull<u8>> {
    match kmalloc_index(size_bytes) {
        Some(i) => KMALLOC.get()?[i].alloc_node_strict(node),
        None => large_alloc_policy(size_bytes, Policy::Bind(node)),
    }
}

/// Allocates `size_bytes` aligned to `align_bytes` (a power of two up to a page).
pub fn kmalloc_aligned(size_bytes: usize, align_bytes: usize) -> Option<NonNull<u8>> {
    if size_bytes > KMALLOC_MAX_CACHE_BYTES || align_bytes > PAGE_SIZE as usize {
        return if align_bytes <= PAGE_SIZE as usize {
            large_alloc(size_bytes, None)
        } else {
            None
        };
    }
    let i = kmalloc_index_aligned(size_bytes, align_bytes)?;
    KMALLOC.get()?[i].alloc()
}

enum Owner {
    Slab(&'static Cache<super::platform::KernelPlatform>),
    Large(u8),
    None,
}

fn owner(ptr: usize) -> Owner {
    match owner_of(ptr) {
        0 => Owner::None,
        LARGE_OWNER => Owner::Large(large_order(ptr)),
        desc => Owner::Slab(slab_cache(desc)),
    }
}

/// The order of the large kmalloc whose head page holds `ptr` (kept in `private`).
fn large_order(ptr: usize) -> u8 {
    let phys = frame::virt_to_phys(VirtAddr::new(ptr as u64));
    frame::page_meta(phys).map_or(0, |m| m.private.load(Relaxed)) as u8
}

/// Frees what kmalloc returned. A pointer SLUB does not own is reported and dropped.
///
/// The slab case is the inlined path: the owner word through the vmemmap (a
/// bounds check, the section's word and the owner load at `VMEMMAP + pfn * 32`; slabmap.rs), one compare, the cache
/// from the descriptor's first word, then the cache's free for an object whose slab is
/// known (`free_in_slab`: no second lookup). Everything else (large blocks, foreign
/// pointers, pages outside the vmemmap, the armed leak mutation) goes out of line, so the
/// inlined path saves no register.
///
/// # Safety
/// `ptr` must not be used after this call.
#[inline(always)]
pub unsafe fn kfree(ptr: NonNull<u8>) {
    let addr = ptr.as_ptr() as usize;
    let desc = super::slabmap::get_fast(addr);
    if desc > inline_owner_above() {
        slab_cache(desc).free_in_slab(addr, desc);
    } else {
        // SAFETY: forwarded from the caller's contract.
        unsafe { kfree_slow(addr) }
    }
}

/// kfree's out-of-line half: the full owner lookup, then a slab object (through the leak
/// mutation when it is armed), a large block, or a bad free.
///
/// # Safety
/// As for `kfree`.
#[cold]
#[inline(never)]
unsafe fn kfree_slow(addr: usize) {
    match owner_of(addr) {
        0 => bad_kfree(addr),
        // SAFETY: forwarded from the caller's contract.
        LARGE_OWNER => unsafe { kfree_large(addr, large_order(addr)) },
        desc => {
            if !leak_mutation_drops() {
                slab_cache(desc).free_in_slab(addr, desc);
            }
        }
    }
}

/// Test-only mutation (the soak arms it from `soak.leak_kfree`): when N > 0, one kfree of a
/// slab object in N is dropped, as a leak inside SLUB would lose it; the soak's per-cache
/// object check must fail on it. Off (0, the default) it costs kfree nothing: arming it
/// also raises `INLINE_OWNER_ABOVE`, so that every kfree takes `kfree_slow`, which applies it.
static LEAK_ONE_IN: AtomicUsize = AtomicUsize::new(0);
/// Slab-object kfrees seen while the mutation was armed, and how many it dropped.
static LEAK_SEEN: AtomicUsize = AtomicUsize::new(0);
static LEAK_DROPPED: AtomicUsize = AtomicUsize::new(0);
/// Owner words above this take kfree's inlined slab path: LARGE_OWNER, or usize::MAX (none)
/// while the leak mutation is armed.
#[cfg(feature = "ktest")]
static INLINE_OWNER_ABOVE: AtomicUsize = AtomicUsize::new(LARGE_OWNER);

/// Arms the leak mutation (drop one kfree in `one_in`, counts from zero) or disarms it (0).
pub fn set_leak_mutation(one_in: usize) {
    #[cfg(feature = "ktest")]
    INLINE_OWNER_ABOVE.store(LARGE_OWNER, Relaxed);
    LEAK_ONE_IN.store(0, Relaxed);
    if one_in != 0 {
        LEAK_SEEN.store(0, Relaxed);
        LEAK_DROPPED.store(0, Relaxed);
        LEAK_ONE_IN.store(one_in, Relaxed);
        #[cfg(feature = "ktest")]
        INLINE_OWNER_ABOVE.store(usize::MAX, Relaxed);
    }
}

/// kfree's inlined-path bound (see `INLINE_OWNER_ABOVE`); the production kernel has no
/// mutation, and the bound is the constant LARGE_OWNER.
#[cfg(feature = "ktest")]
#[inline(always)]
fn inline_owner_above() -> usize {
    INLINE_OWNER_ABOVE.load(Relaxed)
}

#[cfg(not(feature = "ktest"))]
#[inline(always)]
fn inline_owner_above() -> usize {
    LARGE_OWNER
}

/// The kfrees the leak mutation dropped since it was last armed.
pub fn leak_mutation_dropped() -> usize {
    LEAK_DROPPED.load(Relaxed)
}

/// Whether the leak mutation drops this kfree (asked by `kfree_slow` only). Only in kernels
/// with the `ktest` feature; the production kernel has no mutation in its kfree.
#[cfg(feature = "ktest")]
#[inline(always)]
fn leak_mutation_drops() -> bool {
    LEAK_ONE_IN.load(Relaxed) != 0 && leak_this_kfree()
}

#[cfg(not(feature = "ktest"))]
#[inline(always)]
fn leak_mutation_drops() -> bool {
    false
}

#[cold]
#[inline(never)]
fn leak_this_kfree() -> bool {
    let n = LEAK_ONE_IN.load(Relaxed);
    if n == 0 || LEAK_SEEN.fetch_add(1, Relaxed) % n != n - 1 {
        return false;
    }
    LEAK_DROPPED.fetch_add(1, Relaxed);
    true
}

/// The cache of the slab whose descriptor is `desc` (an owner word above LARGE_OWNER).
#[inline(always)]
fn slab_cache(desc: usize) -> &'static Cache<super::platform::KernelPlatform> {
    // The first word of a slab descriptor names its cache.
    let id = <super::platform::KernelPlatform as numalab_algo::slub::Platform>::load(
        &super::platform::KernelPlatform,
        desc,
    );
    // SAFETY: descriptors are written only by the SLUB core, whose first word is the
    // address of the owning `Cache`; caches are leaked `'static` boxes never freed
    // (destroyed caches stay allocated), so the reference is valid forever.
    unsafe { &*(id as *const Cache<super::platform::KernelPlatform>) }
}

/// The cache of the slab object at `ptr` (None: not a slab object), for kfree_rcu's sheaf.
pub fn cache_of_object(ptr: usize) -> Option<&'static Cache<super::platform::KernelPlatform>> {
    match owner(ptr) {
        Owner::Slab(c) => Some(c),
        _ => None,
    }
}

/// kfree of a large (page allocator) block: out of line, off the slab path.
///
/// # Safety
/// As for `kfree`; `addr`'s head page is marked LARGE_OWNER with this `order`.
#[cold]
#[inline(never)]
unsafe fn kfree_large(addr: usize, order: u8) {
    let phys = frame::virt_to_phys(VirtAddr::new(addr as u64));
    if !phys.is_page_aligned() {
        bad_kfree(addr);
        return;
    }
    super::slabmap::set(addr, 1, 0);
    if let Some(meta) = frame::page_meta(phys) {
        meta.private.store(0, Relaxed);
    }
    if let Some(node) = frame::node_of_phys(phys) {
        LARGE_PAGES_ON.sub(node, 1 << order);
    }
    // SAFETY: the head page's owner word said this block came from large_alloc with
    // this order (into_raw); the caller gives it up.
    drop(unsafe { frame::Pages::from_raw(phys, order) });
}

#[cold]
#[inline(never)]
fn bad_kfree(addr: usize) {
    BAD_KFREES.fetch_add(1, Relaxed);
    warn!("slub: kfree: {} at {:#x}", ErrorKind::NotSlab.name(), addr);
}

/// The usable size of a kmalloc block (0 for a pointer SLUB does not own).
pub fn ksize(ptr: NonNull<u8>) -> usize {
    match owner(ptr.as_ptr() as usize) {
        Owner::Slab(cache) => cache.object_size(),
        Owner::Large(order) => (PAGE_SIZE as usize) << order,
        Owner::None => 0,
    }
}

/// Resizes a kmalloc block: the same block when it is big enough, else a new one with the
/// old contents (the old one freed). None (old block untouched) when out of memory.
///
/// # Safety
/// `ptr` must come from kmalloc and not be used after a successful call.
pub unsafe fn krealloc(ptr: NonNull<u8>, new_size: usize) -> Option<NonNull<u8>> {
    let old = ksize(ptr);
    if new_size <= old {
        return Some(ptr);
    }
    let new = kmalloc(new_size)?;
    // SAFETY: both blocks are valid for `old` bytes (old's usable size; new is larger) and
    // distinct (new was just allocated while old is live).
    unsafe { core::ptr::copy_nonoverlapping(ptr.as_ptr(), new.as_ptr(), old) };
    // SAFETY: the caller gives up `ptr`.
    unsafe { kfree(ptr) };
    Some(new)
}
