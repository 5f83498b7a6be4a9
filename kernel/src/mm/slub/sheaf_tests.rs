//! KTAP test of the sheaves design in the kernel: every sheaf and barn path reached and
//! counted on real pages (refill, main and spare, barn put and get, flush when the barn is
//! full), a remote free bypassing the sheaves, and every page back after destroy.

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
