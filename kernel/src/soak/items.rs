//! The soak's items: allocating a random one (page block, shared-cache or kmalloc object,
//! vmalloc area), checking its tag, and freeing it on whichever CPU finds it.

use super::*;

fn vm_node(addr: u64) -> Option<NodeId> {
    vmalloc::translate(VirtAddr::new(addr)).and_then(frame::node_of_phys)
}

impl Soak {
    /// Allocates a random item; returns its address and meta, None on a (counted) failure.
    pub(super) fn alloc_item(&self, cpu: CpuId, rng: &mut Rng) -> Option<(u64, Meta)> {
        let topo = crate::topology::get();
        let r = rng.below(100);
        let got = if r < 35 {
            let order = (rng.next_u64().trailing_zeros() as u8).min(MAX_ORDER);
            let node = self.random_node(rng);
            let policy = match rng.below(4) {
                0 => Policy::Local,
                1 => Policy::Preferred(node),
                2 => Policy::Bind(topo.mem_node(node)),
                _ => Policy::Interleave,
            };
            alloc_pages(order, policy).ok().map(|p| {
                let meta = self.next_meta(cpu, ItemKind::Pages, u32::from(order));
                let nr = p.nr_pages();
                self.live_pages[p.node().index()].fetch_add(nr as i64, Relaxed);
                let virt = p.virt_ptr() as u64;
                let (_phys, _) = p.into_raw();
                // SAFETY: the block is ours, nr pages in the direct map.
                unsafe { tag::write_pages(virt as usize, nr, meta.tag()) };
                (virt, meta)
            })
        } else if r < 60 {
            let c = rng.below(self.caches.len() as u64) as usize;
            let obj = if rng.below(REMOTE_ONE_IN) != 0 {
                self.caches[c].alloc()
            } else {
                self.caches[c].alloc_node(self.random_node(rng))
            };
            obj.map(|o| {
                let meta = self.next_meta(cpu, ItemKind::CacheObj, c as u32);
                // SAFETY: a fresh object of SHARED_SIZES[c] bytes.
                unsafe { tag::write_obj(o.as_ptr() as usize, SHARED_SIZES[c], meta.tag()) };
                (o.as_ptr() as u64, meta)
            })
        } else if r < 85 {
            let size = if rng.below(10) == 0 {
                8193 + rng.below((MAX_KMALLOC_BYTES - 8192) as u64) as usize
            } else {
                let i = rng.below(KMALLOC_SIZES.len() as u64) as usize;
                let lo = if i == 0 { 1 } else { KMALLOC_SIZES[i - 1] + 1 };
                lo + rng.below((KMALLOC_SIZES[i] - lo + 1) as u64) as usize
            }
            .max(8);
            let obj = if rng.below(REMOTE_ONE_IN) != 0 {
                kmalloc::kmalloc(size)
            } else {
                kmalloc::kmalloc_node(size, self.random_node(rng))
            };
            obj.map(|o| {
                let meta = self.next_meta(cpu, ItemKind::Kmalloc, size as u32);
                // SAFETY: a fresh object of at least `size` bytes, 8-byte aligned.
                unsafe { tag::write_obj(o.as_ptr() as usize, size / 8 * 8, meta.tag()) };
                (o.as_ptr() as u64, meta)
            })
        } else {
            let pages = 1 + rng.below(MAX_VMALLOC_PAGES);
            let bytes = (pages * PAGE_SIZE) as usize;
            let area = if rng.below(REMOTE_ONE_IN) != 0 {
                vmalloc::vmalloc(bytes)
            } else {
                vmalloc::vmalloc_node(bytes, self.random_node(rng))
            };
            area.ok().map(|a| {
                let meta = self.next_meta(cpu, ItemKind::Vmalloc, pages as u32);
                self.count_vm(a.as_u64(), pages, 1);
                // SAFETY: a fresh mapped area of `pages` pages.
                unsafe { tag::write_pages(a.as_u64() as usize, pages as usize, meta.tag()) };
                (a.as_u64(), meta)
            })
        };
        match got {
            Some(x) => {
                self.allocs.fetch_add(1, Relaxed);
                Some(x)
            }
            None => {
                self.alloc_failures.fetch_add(1, Relaxed);
                None
            }
        }
    }

    pub(super) fn count_vm(&self, addr: u64, pages: u64, sign: i64) {
        for i in 0..pages {
            match vm_node(addr + i * PAGE_SIZE) {
                Some(n) => {
                    self.live_vm_pages[n.index()].fetch_add(sign, Relaxed);
                }
                None => self.errors.report(format!(
                    "vmalloc area {:#x} page {} not mapped to a node's page",
                    addr, i
                )),
            }
        }
    }

    /// Checks an item's tag; true when intact (a broken one is reported).
    pub(super) fn check(&self, addr: u64, meta: Meta) -> bool {
        self.tag_checks.fetch_add(1, Relaxed);
        // SAFETY: a live item (taken out of its slot by the caller, or every CPU idle at a
        // checkpoint) of the size its meta says, mapped.
        let r = unsafe {
            match meta.kind {
                ItemKind::Pages => tag::check_pages(addr as usize, 1 << meta.param, meta.tag()),
                ItemKind::CacheObj => {
                    tag::check_obj(addr as usize, SHARED_SIZES[meta.param as usize], meta.tag())
                }
                ItemKind::Kmalloc => {
                    tag::check_obj(addr as usize, meta.param as usize / 8 * 8, meta.tag())
                }
                ItemKind::Vmalloc => {
                    tag::check_pages(addr as usize, meta.param as usize, meta.tag())
                }
            }
        };
        match r {
            Ok(()) => true,
            Err((word, got, want)) => {
                self.errors.report(format!(
                    "bad tag: {:?} at {:#x} (owner CPU {}, seq {}): word/page {} is {:#x}, expected {:#x}",
                    meta.kind, addr, meta.owner, meta.seq, word, got, want
                ));
                false
            }
        }
    }

    /// Checks and frees an item (a broken one is reported and leaked, not freed).
    pub(super) fn free_item(&self, cpu: CpuId, addr: u64, meta: Meta) {
        if !self.check(addr, meta) {
            return;
        }
        if u16::from(meta.owner) != cpu.0 {
            self.remote_frees.fetch_add(1, Relaxed);
        }
        self.frees.fetch_add(1, Relaxed);
        match meta.kind {
            ItemKind::Pages => {
                let phys = frame::virt_to_phys(VirtAddr::new(addr));
                // SAFETY: the block was allocated by alloc_item with this order and given up
                // with into_raw; the slot protocol makes us its only owner.
                let p = unsafe { Pages::from_raw(phys, meta.param as u8) };
                self.live_pages[p.node().index()].fetch_sub(p.nr_pages() as i64, Relaxed);
                drop(p);
            }
            ItemKind::CacheObj => {
                // SAFETY: an object of this cache, ours alone, freed once.
                unsafe {
                    self.caches[meta.param as usize].free(NonNull::new_unchecked(addr as *mut u8))
                }
            }
            ItemKind::Kmalloc => {
                // SAFETY: from kmalloc, ours alone, freed once.
                unsafe { kmalloc::kfree(NonNull::new_unchecked(addr as *mut u8)) }
            }
            ItemKind::Vmalloc => {
                self.count_vm(addr, u64::from(meta.param), -1);
                if let Err(b) = vmalloc::vfree(VirtAddr::new(addr)) {
                    self.errors
                        .report(format!("vfree({:#x}): {}", addr, b.reason()));
                }
            }
        }
    }
}
