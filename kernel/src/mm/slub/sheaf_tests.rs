//! KTAP tests of the sheaves design in the kernel: every sheaf and barn path reached and
//! counted on real pages (refill, main and spare, barn put and get, flush when the barn is
//! full), a remote free bypassing the sheaves, and every page back after destroy; and of
//! the hybrid design (Linux 6.18): an opted-in cache's sheaves over the CPU slab beside a
//! cache of the same kernel that runs the partial design.

use super::tests::{alloc, destroy, free};
use super::{default_tunables, KmemCache};
use crate::ktest::{TestError, TestResult};
use crate::{kassert, kassert_eq};
use alloc::format;
use alloc::vec::Vec;
use numalab_algo::slub::{Design, SlabinfoMode, Stat, Tunables};

/// Drives the sheaf and barn paths on the running CPU and checks each counter moved.
pub(super) fn sheaf_paths(_ctx: &crate::ktest::Ctx) -> TestResult {
    let t = Tunables {
        design: Design::Sheaves,
        ..default_tunables("slub-sheaves")
    };
    if t.debug.any() {
        return Err(TestError::Skip("debug caches have no sheaves".into()));
    }
    let c = KmemCache::create("slub-sheaves", 64, 0, t).map_err(|e| format!("{:?}", e))?;
    let cap = c.core().sheaf_capacity();
    kassert_eq!(cap, 60);
    c.reset_list_lock_stats();
    // 14 sheaves' worth: refills from slabs; frees fill main, the spare, then the barn up
    // to its bound of 10 full sheaves, then flush to the slabs.
    let objs: Vec<usize> = (0..cap * 14).map(|_| alloc(c)).collect::<Result<_, _>>()?;
    for &o in &objs {
        free(c, o);
    }
    let s = c.stats();
    for stat in [
        Stat::AllocCpuSheaf,
        Stat::FreeCpuSheaf,
        Stat::SheafRefill,
        Stat::SheafAlloc,
        Stat::BarnGetFail,
        Stat::BarnPut,
        Stat::BarnPutFail,
        Stat::SheafFlush,
    ] {
        kassert!(s.get(stat) > 0, "{} never counted", stat.name());
    }
    kassert_eq!(s.get(Stat::AllocCpuSheaf), (cap * 14) as u64);
    kassert_eq!(s.get(Stat::AllocFastpath) + s.get(Stat::FreeFastpath), 0);
    // The full spare is swapped in, then full sheaves come back from the barn.
    let again: Vec<usize> = (0..cap * 3).map(|_| alloc(c)).collect::<Result<_, _>>()?;
    kassert!(
        c.stats().get(Stat::SheafSwap) > 0,
        "sheaf_swap never counted"
    );
    kassert!(c.stats().get(Stat::BarnGet) > 0, "barn_get never counted");
    for o in again {
        free(c, o);
    }
    // A free of another node's object goes to its slab.
    let topo = crate::topology::get();
    let home = topo.mem_node(crate::percpu::node_id());
    if let Some(other) = topo
        .nodes
        .iter()
        .find(|n| n.mem_bytes() > 0 && n.id != home)
        .map(|n| n.id)
    {
        let before = c.stats();
        let o = c
            .alloc_node(other)
            .ok_or_else(|| TestError::Fail("alloc_node".into()))?;
        free(c, o.as_ptr() as usize);
        let d = c.stats().since(&before);
        kassert_eq!(d.get(Stat::AllocSlowpath), 1);
        kassert_eq!(d.get(Stat::FreeSlowpath), 1);
        kassert_eq!(d.get(Stat::FreeCpuSheaf), 0);
    }
    crate::println!(
        "# slub sheaves: capacity {}, {} list_lock acquisitions for {} operations; {}",
        cap,
        c.list_lock_stats().acquisitions,
        2 * cap * 17,
        numalab_algo::slub::STAT_NAMES[Stat::AllocCpuSheaf as usize..]
            .iter()
            .map(|(st, n)| format!("{} {}", n, c.stats().get(*st)))
            .collect::<Vec<_>>()
            .join(" ")
    );
    kassert_eq!(c.stats().live_objects(), 0);
    kassert!(c.slabinfo(SlabinfoMode::Counters).active_objs > 0);
    c.shrink();
    kassert_eq!(c.slabinfo(SlabinfoMode::Counters).active_objs, 0);
    kassert_eq!(
        c.core().sheaves_held(),
        1,
        "only the CPU's empty main is left"
    );
    destroy(c)
}

/// The hybrid design: a `maple_node`-like cache that opts in and one that does not, driven
/// alike. The opted-in one counts sheaf events and refills through the CPU slab; the other
/// counts none. Under `slub.design=hybrid` the boot defaults opt `maple_node` in (the
/// `slub.sheaves_caches` default) and a cache it does not name out.
pub(super) fn hybrid_paths(_ctx: &crate::ktest::Ctx) -> TestResult {
    let base = default_tunables("maple_node");
    if base.debug.any() {
        return Err(TestError::Skip("debug caches have no sheaves".into()));
    }
    if base.design == Design::Hybrid {
        let named = crate::options::load()
            .get(&crate::options::SLUB_SHEAVES_CACHES)
            .contains("maple_node");
        kassert_eq!(base.sheaves_opt_in, named);
        kassert!(!default_tunables("slub-hybrid-plain").sheaves_opt_in);
    }
    let mut events = [0u64; 2];
    for (i, opt_in) in [true, false].into_iter().enumerate() {
        let t = Tunables {
            design: Design::Hybrid,
            sheaves_opt_in: opt_in,
            ..base
        };
        let name = if opt_in {
            "maple_node-test"
        } else {
            "slub-hybrid-plain"
        };
        let c = KmemCache::create(name, 256, 256, t).map_err(|e| format!("{:?}", e))?;
        kassert_eq!(c.core().sheaf_capacity(), if opt_in { 32 } else { 0 });
        kassert!(c.core().cpu_partial().0 > 0, "6.18 keeps CPU partial lists");
        let objs: Vec<usize> = (0..32 * 14).map(|_| alloc(c)).collect::<Result<_, _>>()?;
        for &o in &objs {
            free(c, o);
        }
        let s = c.stats();
        events[i] = [
            Stat::AllocCpuSheaf,
            Stat::FreeCpuSheaf,
            Stat::SheafRefill,
            Stat::BarnPut,
            Stat::SheafFlush,
        ]
        .iter()
        .map(|&st| s.get(st))
        .sum();
        if opt_in {
            kassert_eq!(s.get(Stat::AllocCpuSheaf), 32 * 14);
            kassert!(s.get(Stat::SheafFlush) > 0, "the barn never filled");
            kassert!(s.get(Stat::AllocSlab) > 0);
        } else {
            kassert_eq!(
                s.get(Stat::AllocFastpath) + s.get(Stat::AllocSlowpath),
                32 * 14
            );
        }
        crate::println!(
            "# slub hybrid: {} sheaf_capacity {}: sheaf events {}, alloc_slab {}, cpu_partial_free {}",
            name,
            c.core().sheaf_capacity(),
            events[i],
            s.get(Stat::AllocSlab),
            s.get(Stat::CpuPartialFree)
        );
        kassert_eq!(s.live_objects(), 0);
        destroy(c)?;
    }
    kassert!(events[0] > 0 && events[1] == 0, "sheaf events {:?}", events);
    Ok(())
}
