//! KTAP tests of fault injection and out-of-memory handling: each point fails exactly the
//! calls the attribute says (checked against `numalab_algo::fault`'s model), every caller
//! sees a clean failure (an error, never a panic or a leak), and after disarming (or freeing
//! what exhausted memory) everything works again with every node's pages conserved.

use super::{arm, disarm, injected, Point};
use crate::ktest::{Ctx, TestError, TestResult};
use crate::mm::frame::{self, alloc_pages, AllocError, Pages, Policy, MAX_ORDER};
use crate::mm::slub::kmalloc;
use crate::mm::slub::KmemCache;
use crate::{kassert, kassert_eq, ktest};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::panic::Location;
use numalab_algo::fault::FaultAttr;
use numalab_algo::page::{PhysAddr, VirtAddr};
use numalab_algo::topology::NodeId;
use numalab_algo::vmalloc::{Layout, Policy as VmPolicy, Scope, VmError};

use crate::ktest::suites::FAULT as SUITE;

fn attr(probability_pct: u32, interval: u64, seed: u64) -> FaultAttr {
    FaultAttr {
        probability_pct,
        interval,
        seed,
    }
}

/// Disarms every point when dropped (a failing assertion returns early).
struct Disarm;
impl Drop for Disarm {
    fn drop(&mut self) {
        for p in super::POINTS {
            disarm(p);
        }
    }
}

fn settled() -> Result<Vec<u64>, String> {
    frame::settled_bytes()
}

fn restored(before: &[u64], what: &str) -> TestResult {
    let after = settled()?;
    kassert_eq!(
        after,
        before.to_vec(),
        "{}: free + held bytes per node",
        what
    );
    Ok(())
}

/// fault.page_alloc: at 100% every order fails as OutOfMemory; at 40% (seed 7) call n fails
/// exactly when the model says so; after disarming, allocations work and nothing leaked.
fn page_alloc(_ctx: &Ctx) -> TestResult {
    let _d = Disarm;
    let before = settled()?;
    let mut held: Vec<Pages> = Vec::with_capacity(512);
    let injected0 = injected(Point::PageAlloc);
    arm(Point::PageAlloc, attr(100, 1, 1));
    for order in 0..=MAX_ORDER {
        for policy in [
            Policy::Local,
            Policy::Interleave,
            Policy::Bind(crate::percpu::mem_node_id()),
        ] {
            kassert_eq!(
                alloc_pages(order, policy).err(),
                Some(AllocError::OutOfMemory),
                "order {} {:?}",
                order,
                policy
            );
        }
    }
    let a = attr(40, 1, 7);
    arm(Point::PageAlloc, a);
    let mut failed = 0;
    for n in 0..400u64 {
        let got = alloc_pages((n % 4) as u8, Policy::Local);
        kassert_eq!(got.is_err(), a.should_fail(n), "call {}", n);
        match got {
            Ok(p) => held.push(p),
            Err(e) => {
                kassert_eq!(e, AllocError::OutOfMemory);
                failed += 1;
            }
        }
    }
    disarm(Point::PageAlloc);
    kassert_eq!(injected(Point::PageAlloc) - injected0, 33 + failed);
    kassert!(
        failed > 100 && failed < 220,
        "{} of 400 failed at 40%",
        failed
    );
    crate::println!(
        "# fault.page_alloc: {} of 400 calls failed at 40% (seed 7)",
        failed
    );
    held.clear();
    kassert!(alloc_pages(MAX_ORDER, Policy::Local).is_ok());
    restored(&before, "page_alloc")
}

/// fault.slab: a fresh cache's first allocation needs a new slab, which fails at 100%;
/// at 30% some objects are refused, the others are distinct and usable; after disarming
/// the cache works, is destroyed, and every page is back.
fn slab(_ctx: &Ctx) -> TestResult {
    let _d = Disarm;
    let before = settled()?;
    let cache = KmemCache::create(
        "fault_test",
        512,
        0,
        crate::mm::slub::default_tunables("fault_test"),
    )
    .map_err(|e| format!("create: {:?}", e))?;
    arm(Point::Slab, attr(100, 1, 1));
    kassert!(
        cache.alloc().is_none(),
        "alloc without a slab under fault.slab=100"
    );
    kassert!(
        cache.alloc_node(NodeId(0)).is_none(),
        "alloc_node without a slab under fault.slab=100"
    );
    arm(Point::Slab, attr(30, 1, 3));
    let mut objs: Vec<usize> = Vec::with_capacity(4000);
    let mut refused = 0;
    for i in 0..4000usize {
        match cache.alloc() {
            Some(p) => {
                // SAFETY: a 512-byte object the cache just gave us.
                unsafe { (p.as_ptr() as *mut usize).write(i) };
                objs.push(p.as_ptr() as usize);
            }
            None => refused += 1,
        }
    }
    disarm(Point::Slab);
    kassert!(refused > 0, "no allocation refused at 30%");
    kassert!(!objs.is_empty(), "every allocation refused at 30%");
    let mut sorted = objs.clone();
    sorted.sort_unstable();
    sorted.dedup();
    kassert_eq!(sorted.len(), objs.len(), "an object handed out twice");
    crate::println!(
        "# fault.slab: {} of 4000 allocations refused, {} objects",
        refused,
        objs.len()
    );
    for &o in &objs {
        // SAFETY: each object came from this cache and is freed once.
        unsafe { cache.free(core::ptr::NonNull::new_unchecked(o as *mut u8)) };
    }
    let p = cache
        .alloc()
        .ok_or_else(|| String::from("alloc after disarm"))?;
    // SAFETY: just allocated from this cache.
    unsafe { cache.free(p) };
    // SAFETY: every object is back and no other CPU uses this test's cache.
    unsafe { cache.destroy() }.map_err(|n| format!("destroy: {} objects live", n))?;
    restored(&before, "slab")
}

/// fault.vmalloc: at 100% vmalloc and vmap fail with NoMemory halfway through mapping, the
/// half-built areas are undone; at 50% the successes are usable; after disarming and a
/// purge every page and all virtual space are back.
fn vmalloc(_ctx: &Ctx) -> TestResult {
    let _d = Disarm;
    let topo = crate::topology::get();
    let layout = Layout::new(VmPolicy::Cpu, topo.nr_cpus(), topo.nr_nodes(), 1 << 20);
    let Some(v) = crate::mm::vmalloc::scratch(layout, 4096 * 4096) else {
        return Err(TestError::Skip(String::from("vmalloc not initialized")));
    };
    let before = settled()?;
    let here = Location::caller();
    let pages: Vec<Pages> = (0..8)
        .map(|_| alloc_pages(0, Policy::Local))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}", e))?;
    let phys: Vec<PhysAddr> = pages.iter().map(|p| p.phys_addr()).collect();
    arm(Point::Vmalloc, attr(100, 1, 1));
    kassert_eq!(
        v.alloc(8 * 4096, 4096, None, false, here),
        Err(VmError::NoMemory)
    );
    kassert_eq!(v.vmap(&phys, here), Err(VmError::NoMemory));
    arm(Point::Vmalloc, attr(50, 1, 11));
    let mut areas = Vec::new();
    let mut refused = 0;
    for i in 0..200u64 {
        match v.alloc((1 + i % 6) * 4096, 4096, None, false, here) {
            Ok(a) => {
                // SAFETY: a mapped area of at least one page that we own.
                unsafe { a.as_mut_ptr::<u64>().write_volatile(i) };
                areas.push(a);
            }
            Err(e) => {
                kassert_eq!(e, VmError::NoMemory);
                refused += 1;
            }
        }
    }
    disarm(Point::Vmalloc);
    kassert!(refused > 0 && !areas.is_empty(), "{} refused", refused);
    for a in areas {
        v.free(a, crate::mm::vmalloc::AreaKind::Vmalloc)
            .map_err(|b| format!("vfree {:#x}: {}", b.addr, b.reason()))?;
    }
    let m = v
        .vmap(&phys, here)
        .map_err(|e| format!("vmap after disarm: {:?}", e))?;
    v.free(m, crate::mm::vmalloc::AreaKind::Vmap)
        .map_err(|b| format!("vunmap: {}", b.reason()))?;
    v.purge(Scope::All, true);
    let (_, _, all_free) = v.free_space_state();
    kassert!(all_free, "virtual space not all free after the purge");
    drop(pages);
    restored(&before, "vmalloc")
}

/// fault.page_alloc at 20% under every caller of the page allocator at once (multi-page
/// vmalloc, large kmalloc, slab growth, vmap): each failure is an error value, and after
/// disarming and freeing everything is back.
fn every_caller(_ctx: &Ctx) -> TestResult {
    let _d = Disarm;
    let topo = crate::topology::get();
    let layout = Layout::new(VmPolicy::Cpu, topo.nr_cpus(), topo.nr_nodes(), 1 << 20);
    let Some(v) = crate::mm::vmalloc::scratch(layout, 4096 * 4096) else {
        return Err(TestError::Skip(String::from("vmalloc not initialized")));
    };
    let cache = KmemCache::create(
        "fault_callers",
        1024,
        0,
        crate::mm::slub::default_tunables("fault_callers"),
    )
    .map_err(|e| format!("create: {:?}", e))?;
    let before = settled()?;
    let here = Location::caller();
    let (mut areas, mut larges, mut objs) = (Vec::new(), Vec::new(), Vec::new());
    areas.reserve(400);
    larges.reserve(400);
    objs.reserve(400);
    let mut failures = [0u32; 3];
    arm(Point::PageAlloc, attr(20, 1, 5));
    for i in 0..400u64 {
        match v.alloc((1 + i % 16) * 4096, 4096, None, false, here) {
            Ok(a) => areas.push(a),
            Err(e) => {
                kassert_eq!(e, VmError::NoMemory);
                failures[0] += 1;
            }
        }
        match kmalloc::kmalloc(8192 << (i % 4)) {
            Some(p) => larges.push(p),
            None => failures[1] += 1,
        }
        match cache.alloc() {
            Some(p) => objs.push(p),
            None => failures[2] += 1,
        }
    }
    disarm(Point::PageAlloc);
    crate::println!(
        "# fault.every_caller: failed vmalloc {} kmalloc {} cache {} of 400 each",
        failures[0],
        failures[1],
        failures[2]
    );
    kassert!(failures[0] > 0 && failures[1] > 0, "{:?}", failures);
    for a in areas {
        v.free(a, crate::mm::vmalloc::AreaKind::Vmalloc)
            .map_err(|b| format!("vfree: {}", b.reason()))?;
    }
    for p in larges {
        // SAFETY: from kmalloc above, freed once.
        unsafe { kmalloc::kfree(p) };
    }
    for p in objs {
        // SAFETY: from the cache above, freed once.
        unsafe { cache.free(p) };
    }
    v.purge(Scope::All, true);
    cache.shrink();
    restored(&before, "every caller")?;
    // SAFETY: every object is back; no other CPU uses this cache.
    unsafe { cache.destroy() }.map_err(|n| format!("destroy: {} live", n))?;
    Ok(())
}

/// Takes every block `policy` gives, largest first.
fn exhaust(policy: Policy, held: &mut Vec<Pages>) -> Result<(), String> {
    for order in (0..=MAX_ORDER).rev() {
        loop {
            match alloc_pages(order, policy) {
                Ok(p) => held.push(p),
                Err(AllocError::OutOfMemory) => break,
                Err(e) => return Err(format!("{:?} order {}: {}", policy, order, e)),
            }
        }
    }
    Ok(())
}

/// Out of memory, for real: the nodes are exhausted one by one in this CPU's fallback order;
/// after each, a new slab, a large kmalloc and a vmalloc page come from the next node in
/// distance order; once all are exhausted each fails cleanly (None / NoMemory); after the
/// frees everything works again and every node's pages are back.
fn oom(_ctx: &Ctx) -> TestResult {
    let topo = crate::topology::get();
    let layout = Layout::new(VmPolicy::Cpu, topo.nr_cpus(), topo.nr_nodes(), 1 << 20);
    let Some(v) = crate::mm::vmalloc::scratch(layout, 4096 * 4096) else {
        return Err(TestError::Skip(String::from("vmalloc not initialized")));
    };
    let order_list = topo.fallback_order(crate::percpu::node_id()).to_vec();
    let cache = KmemCache::create(
        "fault_oom",
        2048,
        0,
        crate::mm::slub::default_tunables("fault_oom"),
    )
    .map_err(|e| format!("create: {:?}", e))?;
    let before = settled()?;
    let here = Location::caller();
    let mut held: Vec<Pages> = Vec::with_capacity(16384);
    let mut objs = Vec::with_capacity(64);
    let mut larges = Vec::with_capacity(64);
    let mut areas = Vec::with_capacity(64);
    let node_of = |virt: VirtAddr| frame::node_of_phys(frame::virt_to_phys(virt));
    let mut path = String::new();
    for (i, &n) in order_list.iter().enumerate() {
        exhaust(Policy::Bind(n), &mut held)?;
        let Some(&next) = order_list.get(i + 1) else {
            break;
        };
        cache.flush_all();
        let obj = cache
            .alloc()
            .ok_or_else(|| format!("cache alloc with node {} left", next.0))?;
        let large =
            kmalloc::kmalloc(16384).ok_or_else(|| format!("kmalloc with node {} left", next.0))?;
        let area = v
            .alloc(4096, 4096, None, false, here)
            .map_err(|e| format!("vmalloc with node {} left: {:?}", next.0, e))?;
        let area_node = crate::mm::vmalloc::translate(area).and_then(frame::node_of_phys);
        kassert_eq!(
            node_of(VirtAddr::from_ptr(large.as_ptr())),
            Some(next),
            "large kmalloc after {:?}",
            &order_list[..=i]
        );
        kassert_eq!(
            area_node,
            Some(next),
            "vmalloc page after {:?}",
            &order_list[..=i]
        );
        let obj_node = node_of(VirtAddr::from_ptr(obj.as_ptr()));
        path.push_str(&format!(" {}", next.0));
        objs.push(obj);
        larges.push(large);
        areas.push(area);
        kassert!(obj_node.is_some());
    }
    // Everything exhausted: clean failures.
    cache.flush_all();
    let mut fresh = 0;
    while let Some(p) = cache.alloc() {
        objs.push(p);
        fresh += 1;
        kassert!(
            fresh < 64,
            "a cache keeps allocating with every node exhausted"
        );
    }
    kassert!(kmalloc::kmalloc(16384).is_none());
    kassert_eq!(
        v.alloc(4096, 4096, None, false, here),
        Err(VmError::NoMemory)
    );
    for policy in [Policy::Local, Policy::Interleave] {
        kassert_eq!(alloc_pages(0, policy).err(), Some(AllocError::OutOfMemory));
    }
    crate::println!(
        "# fault.oom: exhausted {} nodes ({} blocks); slab, kmalloc, vmalloc fell back to:{}",
        order_list.len(),
        held.len(),
        path
    );
    drop(held);
    for a in areas {
        v.free(a, crate::mm::vmalloc::AreaKind::Vmalloc)
            .map_err(|b| format!("vfree: {}", b.reason()))?;
    }
    for p in larges {
        // SAFETY: from kmalloc above, freed once.
        unsafe { kmalloc::kfree(p) };
    }
    for p in objs {
        // SAFETY: from the cache above, freed once.
        unsafe { cache.free(p) };
    }
    // Recovered: every kind works again.
    let p = cache
        .alloc()
        .ok_or_else(|| String::from("cache alloc after the frees"))?;
    // SAFETY: just allocated.
    unsafe { cache.free(p) };
    let a = v
        .alloc(64 * 4096, 4096, None, false, here)
        .map_err(|e| format!("vmalloc after: {:?}", e))?;
    v.free(a, crate::mm::vmalloc::AreaKind::Vmalloc)
        .map_err(|b| format!("vfree: {}", b.reason()))?;
    kassert!(alloc_pages(MAX_ORDER, Policy::Local).is_ok());
    v.purge(Scope::All, true);
    cache.shrink();
    restored(&before, "oom")?;
    // SAFETY: every object is back; no other CPU uses this cache.
    unsafe { cache.destroy() }.map_err(|n| format!("destroy: {} live", n))?;
    Ok(())
}

ktest!(SUITE, Test, page_alloc);
ktest!(SUITE, Test, slab);
ktest!(SUITE, Test, vmalloc);
ktest!(SUITE, Test, every_caller);
ktest!(SUITE, Test, oom);
