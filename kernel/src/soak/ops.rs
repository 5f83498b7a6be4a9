//! The soak's compound operations: bulk allocations and frees, vmap of fresh pages, and
//! private caches created, filled, shrunk and destroyed (the slot operations are in mod.rs).

use super::tag::{self, ItemKind};
use super::{Soak, BUSY, EMPTY, SHARED_SIZES};
use crate::mm::frame::{alloc_pages, Pages, Policy};
use crate::mm::slub::KmemCache;
use crate::mm::vmalloc;
use crate::topology::CpuId;
use alloc::format;
use alloc::vec::Vec;
use core::ptr::NonNull;
use core::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use numalab_algo::page::{PhysAddr, PAGE_SIZE};
use numalab_algo::rng::Rng;

impl Soak {
    /// alloc_bulk of up to 16 objects from a shared cache; tags; free_bulk of half; the
    /// rest go to empty slots (or are freed one by one).
    pub(super) fn bulk_op(&self, cpu: CpuId, rng: &mut Rng) {
        let c = rng.below(self.caches.len() as u64) as usize;
        let cache = self.caches[c];
        let n = 1 + rng.below(16) as usize;
        let mut out = [0usize; 16];
        let got = cache.alloc_bulk(&mut out[..n]);
        if got < n {
            self.alloc_failures.fetch_add(1, Relaxed);
        }
        let mut metas = [None; 16];
        for (i, &o) in out[..got].iter().enumerate() {
            let meta = self.next_meta(cpu, ItemKind::CacheObj, c as u32);
            // SAFETY: fresh objects of this cache.
            unsafe { tag::write_obj(o, SHARED_SIZES[c], meta.tag()) };
            metas[i] = Some(meta);
        }
        self.allocs.fetch_add(got as u64, Relaxed);
        let half = got / 2;
        for (i, &o) in out[..half].iter().enumerate() {
            if let Some(m) = metas[i] {
                self.check(o as u64, m);
            }
        }
        // SAFETY: the first half are ours, checked, freed once.
        unsafe { cache.free_bulk(&out[..half]) };
        self.frees.fetch_add(half as u64, Relaxed);
        for i in half..got {
            let (o, m) = (out[i] as u64, metas[i].expect("tagged above"));
            let slot = &self.slots[rng.below(self.slots.len() as u64) as usize];
            if slot
                .word
                .compare_exchange(EMPTY, BUSY, Acquire, Relaxed)
                .is_ok()
            {
                slot.meta.store(m.pack(), Relaxed);
                slot.word.store(o, Release);
            } else {
                self.free_item(cpu, o, m);
            }
        }
    }

    /// vmap of up to 8 fresh pages: written through the mapping, read through the direct
    /// map, unmapped, freed.
    pub(super) fn vmap_op(&self, cpu: CpuId, rng: &mut Rng) {
        let n = 1 + rng.below(8) as usize;
        let mut pages: Vec<Pages> = Vec::with_capacity(n);
        for _ in 0..n {
            match alloc_pages(0, Policy::Local) {
                Ok(p) => pages.push(p),
                Err(_) => {
                    self.alloc_failures.fetch_add(1, Relaxed);
                    return;
                }
            }
        }
        let phys: Vec<PhysAddr> = pages.iter().map(|p| p.phys_addr()).collect();
        let Ok(a) = vmalloc::vmap(&phys) else {
            self.alloc_failures.fetch_add(1, Relaxed);
            return;
        };
        let meta = self.next_meta(cpu, ItemKind::Vmalloc, n as u32);
        // SAFETY: the mapping is ours, n pages.
        unsafe { tag::write_pages(a.as_u64() as usize, n, meta.tag()) };
        for (i, p) in pages.iter().enumerate() {
            self.tag_checks.fetch_add(1, Relaxed);
            // SAFETY: our page, read through the direct map and through the mapping.
            let (direct, mapped) = unsafe {
                let q = p.virt_ptr() as *const u64;
                let m = (a.as_u64() as usize + i * PAGE_SIZE as usize) as *const u64;
                (
                    (q.read_volatile(), q.add(1).read_volatile()),
                    (m.read_volatile(), m.add(1).read_volatile()),
                )
            };
            if direct.0 != meta.tag() || direct != mapped {
                self.errors.report(format!(
                    "vmap {:#x} page {}: direct map reads {:#x?}, the mapping {:#x?}, tag {:#x}",
                    a.as_u64(),
                    i,
                    direct,
                    mapped,
                    meta.tag()
                ));
            }
        }
        if let Err(b) = vmalloc::vunmap(a) {
            self.errors
                .report(format!("vunmap({:#x}): {}", a.as_u64(), b.reason()));
        }
        self.allocs.fetch_add(1, Relaxed);
        self.frees.fetch_add(1, Relaxed);
    }

    /// A private cache: created, filled, checked, freed, shrunk and destroyed.
    pub(super) fn cache_op(&self, cpu: CpuId, rng: &mut Rng) {
        let size = 8 + rng.below(4089) as usize / 8 * 8;
        let Ok(cache) = KmemCache::create(
            "soak_private",
            size,
            0,
            crate::mm::slub::default_tunables("soak_private"),
        ) else {
            self.errors
                .report(format!("create of a {}-byte cache failed", size));
            return;
        };
        let mut objs = [(0usize, 0u64); 24];
        let mut n = 0;
        for slot in objs.iter_mut().take(1 + rng.below(24) as usize) {
            match cache.alloc() {
                Some(o) => {
                    let m = self.next_meta(cpu, ItemKind::CacheObj, 0);
                    // SAFETY: a fresh object of `size` bytes.
                    unsafe { tag::write_obj(o.as_ptr() as usize, size, m.tag()) };
                    *slot = (o.as_ptr() as usize, m.tag());
                    n += 1;
                }
                None => {
                    self.alloc_failures.fetch_add(1, Relaxed);
                    break;
                }
            }
        }
        for &(o, t) in &objs[..n] {
            self.tag_checks.fetch_add(1, Relaxed);
            // SAFETY: our object.
            if let Err(e) = unsafe { tag::check_obj(o, size, t) } {
                self.errors
                    .report(format!("private cache object {:#x}: {:?}", o, e));
            }
            // SAFETY: from this cache, freed once.
            unsafe { cache.free(NonNull::new_unchecked(o as *mut u8)) };
        }
        cache.shrink();
        // SAFETY: every object is back; only this CPU knows the cache.
        if let Err(live) = unsafe { cache.destroy() } {
            self.errors
                .report(format!("destroy of a private cache: {} objects live", live));
        }
    }
}
