//! The soak's compound operations: bulk allocations and frees, vmap of fresh pages, and
//! private caches created, filled, shrunk and destroyed (the slot operations are in mod.rs).

use super::items::Item;
use super::tag::{self, ItemKind};
use super::{Soak, SHARED_SIZES};
use crate::mm::frame::{alloc_pages, Pages, Policy};
use crate::mm::slub::{Object, PrivateCache};
use crate::mm::vmalloc::{self, VmArea};
use crate::topology::CpuId;
use alloc::format;
use alloc::vec::Vec;
use core::sync::atomic::Ordering::Relaxed;
use numalab_algo::page::PhysAddr;
use numalab_algo::rng::Rng;

impl Soak {
    /// alloc_bulk of up to 16 objects from a shared cache; tags; free_bulk of half; the
    /// rest go to empty slots (or are freed one by one).
    pub(super) fn bulk_op(&self, cpu: CpuId, rng: &mut Rng) {
        let c = rng.below(self.caches.len() as u64) as usize;
        let cache = &self.caches[c];
        let n = 1 + rng.below(16) as usize;
        let mut objs: Vec<Object> = Vec::with_capacity(16);
        let mut buf = [0usize; 16];
        let got = cache.alloc_objects(&mut objs, &mut buf[..n], n);
        if got < n {
            self.alloc_failures.fetch_add(1, Relaxed);
        }
        let mut tagged = Vec::with_capacity(got);
        for mut o in objs.drain(..) {
            let meta = self.next_meta(cpu, ItemKind::CacheObj, c as u32);
            tag::write_obj(&mut o.bytes_mut()[..SHARED_SIZES[c]], meta.tag());
            tagged.push((Item::CacheObj(o), meta));
        }
        self.allocs.fetch_add(got as u64, Relaxed);
        let half = got / 2;
        let rest = tagged.split_off(half);
        for (item, m) in tagged {
            self.check(&item, m);
            if let Item::CacheObj(o) = item {
                objs.push(o);
            }
        }
        // The first half, checked, goes back in bulk calls.
        cache.free_objects(&mut objs, &mut buf);
        self.frees.fetch_add(half as u64, Relaxed);
        for (item, m) in rest {
            let slot = &self.slots[rng.below(self.slots.len() as u64) as usize];
            match slot.try_lock() {
                Some(mut held) if held.is_none() => *held = Some((item, m)),
                _ => self.free_item(cpu, item, m),
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
        let Ok(mut area) = VmArea::vmap(&phys) else {
            self.alloc_failures.fetch_add(1, Relaxed);
            return;
        };
        let meta = self.next_meta(cpu, ItemKind::Vmalloc, n as u32);
        tag::write_pages(area.bytes_mut(), n, meta.tag());
        for (i, p) in pages.iter().enumerate() {
            self.tag_checks.fetch_add(1, Relaxed);
            let direct = tag::page_words(p.bytes(), 0);
            let mapped = tag::page_words(area.bytes(), i);
            if direct.0 != meta.tag() || direct != mapped {
                self.errors.report(format!(
                    "vmap {:#x} page {}: direct map reads {:#x?}, the mapping {:#x?}, tag {:#x}",
                    area.addr().as_u64(),
                    i,
                    direct,
                    mapped,
                    meta.tag()
                ));
            }
        }
        // vunmap by address, to report a refused unmap (dropping the area only counts it).
        let (a, _, _) = area.into_raw();
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
        let Ok(cache) = PrivateCache::create(
            "soak_private",
            size,
            0,
            crate::mm::slub::default_tunables("soak_private"),
        ) else {
            self.errors
                .report(format!("create of a {}-byte cache failed", size));
            return;
        };
        let mut objs: [Option<(Object, u64)>; 24] = core::array::from_fn(|_| None);
        for slot in objs.iter_mut().take(1 + rng.below(24) as usize) {
            match cache.alloc_object() {
                Some(mut o) => {
                    let m = self.next_meta(cpu, ItemKind::CacheObj, 0);
                    tag::write_obj(&mut o.bytes_mut()[..size], m.tag());
                    *slot = Some((o, m.tag()));
                }
                None => {
                    self.alloc_failures.fetch_add(1, Relaxed);
                    break;
                }
            }
        }
        for (o, t) in objs.iter_mut().filter_map(Option::take) {
            self.tag_checks.fetch_add(1, Relaxed);
            if let Err(e) = tag::check_obj(&o.bytes()[..size], t) {
                self.errors
                    .report(format!("private cache object {:#x}: {:?}", o.addr(), e));
            }
            // Freed here (dropped), into its cache.
            drop(o);
        }
        cache.shrink();
        if let Err(live) = cache.destroy() {
            self.errors
                .report(format!("destroy of a private cache: {} objects live", live));
        }
    }
}
