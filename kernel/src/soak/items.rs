//! The soak's items: allocating a random one (page block, shared-cache or kmalloc object,
//! vmalloc area), checking its tag, and freeing it on whichever CPU finds it.

use super::*;

/// A live item of the soak, owned: dropping it frees it (page block, shared-cache object,
/// kmalloc block, vmalloc area).
pub(super) enum Item {
    Pages(Pages),
    CacheObj(Object),
    Kmalloc(KmallocObject),
    Vmalloc(VmArea),
}

impl Item {
    /// Its address, for reports.
    pub(super) fn addr(&self) -> u64 {
        match self {
            Item::Pages(p) => p.virt_ptr() as u64,
            Item::CacheObj(o) => o.addr() as u64,
            Item::Kmalloc(k) => k.addr() as u64,
            Item::Vmalloc(a) => a.addr().as_u64(),
        }
    }
}

fn vm_node(addr: u64) -> Option<NodeId> {
    vmalloc::translate(VirtAddr::new(addr)).and_then(frame::node_of_phys)
}

impl Soak {
    /// Allocates a random item (tagged); returns it and its meta, None on a (counted) failure.
    pub(super) fn alloc_item(&self, cpu: CpuId, rng: &mut Rng) -> Option<(Item, Meta)> {
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
            alloc_pages(order, policy).ok().map(|mut p| {
                let meta = self.next_meta(cpu, ItemKind::Pages, u32::from(order));
                let nr = p.nr_pages();
                self.live_pages[p.node().index()].fetch_add(nr as i64, Relaxed);
                tag::write_pages(p.bytes_mut(), nr, meta.tag());
                (Item::Pages(p), meta)
            })
        } else if r < 60 {
            let c = rng.below(self.caches.len() as u64) as usize;
            let obj = if rng.below(REMOTE_ONE_IN) != 0 {
                self.caches[c].alloc_object()
            } else {
                self.caches[c].alloc_object_node(self.random_node(rng))
            };
            obj.map(|mut o| {
                let meta = self.next_meta(cpu, ItemKind::CacheObj, c as u32);
                tag::write_obj(&mut o.bytes_mut()[..SHARED_SIZES[c]], meta.tag());
                (Item::CacheObj(o), meta)
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
                KmallocObject::alloc(size)
            } else {
                KmallocObject::alloc_node(size, self.random_node(rng))
            };
            obj.map(|mut o| {
                let meta = self.next_meta(cpu, ItemKind::Kmalloc, size as u32);
                tag::write_obj(&mut o.bytes_mut()[..size / 8 * 8], meta.tag());
                (Item::Kmalloc(o), meta)
            })
        } else {
            let pages = 1 + rng.below(MAX_VMALLOC_PAGES);
            let bytes = (pages * PAGE_SIZE) as usize;
            let area = if rng.below(REMOTE_ONE_IN) != 0 {
                VmArea::vmalloc(bytes)
            } else {
                VmArea::vmalloc_node(bytes, self.random_node(rng))
            };
            area.ok().map(|mut a| {
                let meta = self.next_meta(cpu, ItemKind::Vmalloc, pages as u32);
                self.count_vm(a.addr().as_u64(), pages, 1);
                tag::write_pages(a.bytes_mut(), pages as usize, meta.tag());
                (Item::Vmalloc(a), meta)
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
    pub(super) fn check(&self, item: &Item, meta: Meta) -> bool {
        self.tag_checks.fetch_add(1, Relaxed);
        let r = match (item, meta.kind) {
            (Item::Pages(p), ItemKind::Pages) => {
                tag::check_pages(p.bytes(), 1 << meta.param, meta.tag())
            }
            (Item::CacheObj(o), ItemKind::CacheObj) => {
                let size = SHARED_SIZES[meta.param as usize];
                tag::check_obj(&o.bytes()[..size], meta.tag())
            }
            (Item::Kmalloc(k), ItemKind::Kmalloc) => {
                tag::check_obj(&k.bytes()[..meta.param as usize / 8 * 8], meta.tag())
            }
            (Item::Vmalloc(a), ItemKind::Vmalloc) => {
                tag::check_pages(a.bytes(), meta.param as usize, meta.tag())
            }
            _ => Err((0, 0, meta.tag())),
        };
        match r {
            Ok(()) => true,
            Err((word, got, want)) => {
                self.errors.report(format!(
                    "bad tag: {:?} at {:#x} (owner CPU {}, seq {}): word/page {} is {:#x}, expected {:#x}",
                    meta.kind, item.addr(), meta.owner, meta.seq, word, got, want
                ));
                false
            }
        }
    }

    /// Checks and frees an item (a broken one is reported and leaked, not freed).
    pub(super) fn free_item(&self, cpu: CpuId, item: Item, meta: Meta) {
        if !self.check(&item, meta) {
            core::mem::forget(item);
            return;
        }
        if u16::from(meta.owner) != cpu.0 {
            self.remote_frees.fetch_add(1, Relaxed);
        }
        self.frees.fetch_add(1, Relaxed);
        match item {
            Item::Pages(p) => {
                self.live_pages[p.node().index()].fetch_sub(p.nr_pages() as i64, Relaxed);
                drop(p);
            }
            Item::CacheObj(o) => drop(o),
            Item::Kmalloc(k) if meta.seq.is_multiple_of(RCU_FREE_ONE_IN) => {
                crate::kfree_rcu::kfree_rcu_object(k);
                self.rcu_frees.fetch_add(1, Relaxed);
            }
            Item::Kmalloc(k) => drop(k),
            Item::Vmalloc(a) if meta.seq.is_multiple_of(RCU_FREE_ONE_IN) => {
                self.count_vm(a.addr().as_u64(), u64::from(meta.param), -1);
                match crate::kfree_rcu::vfree_rcu(a) {
                    Ok(_) => {
                        self.rcu_frees.fetch_add(1, Relaxed);
                    }
                    Err(a) => self.errors.report(format!(
                        "kvfree_rcu refused the vmalloc area {:#x}",
                        a.addr().as_u64()
                    )),
                }
            }
            Item::Vmalloc(a) => {
                self.count_vm(a.addr().as_u64(), u64::from(meta.param), -1);
                // vfree by address, to report a refused free (dropping the area would only
                // count it).
                let (addr, _, _) = a.into_raw();
                if let Err(b) = vmalloc::vfree(addr) {
                    self.errors
                        .report(format!("vfree({:#x}): {}", addr.as_u64(), b.reason()));
                }
            }
        }
    }
}
