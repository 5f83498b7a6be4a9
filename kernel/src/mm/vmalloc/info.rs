//! Dumps: /proc/vmallocinfo lines, and the counters of a design (per vmap node busy, lazy and
//! pool lengths; purges, pages purged, shootdowns; global lock acquisitions and contention).
//! Everything is copied out of the locks first and printed afterwards.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

use super::instance::{AreaKind, Vmalloc};
use super::map;
use numalab_algo::page::VirtAddr;
use numalab_algo::vmalloc::PAGE_SIZE;

/// One line per live area, in address order, as Linux's /proc/vmallocinfo:
/// `0xffff...-0xffff... 16384 file:line pages=3 vmalloc N0=3` (size includes the guard page;
/// the caller is the allocation site; `N<i>=` counts the area's pages on NUMA node i).
pub fn vmallocinfo(v: &Vmalloc) -> Vec<String> {
    let topo = crate::topology::get();
    let areas = v.busy_areas();
    let mut out = Vec::with_capacity(areas.len());
    for (start, size, meta) in areas {
        let mut per_node = alloc::vec![0u64; topo.nr_nodes()];
        for i in 0..meta.nr_pages as u64 {
            if let Some(phys) = map::translate(VirtAddr::new(start + i * PAGE_SIZE)) {
                if let Some(n) = topo.node_of_phys(phys) {
                    per_node[n.index()] += 1;
                }
            }
        }
        let mut line = format!(
            "{:#x}-{:#x} {:>7} {}:{} pages={} {}",
            start,
            start + size,
            size,
            meta.caller.file(),
            meta.caller.line(),
            meta.nr_pages,
            match meta.kind {
                AreaKind::Vmalloc => "vmalloc",
                AreaKind::Vmap => "vmap",
            }
        );
        for (n, &count) in per_node.iter().enumerate() {
            if count > 0 {
                let _ = write!(line, " N{}={}", n, count);
            }
        }
        out.push(line);
    }
    out
}

/// Prints the counters of design `v` under the prefix `vmalloc[<policy>]`.
pub fn print_counters(v: &Vmalloc) {
    let name = v.policy().name();
    let c = &v.counters;
    let g = v.global_lock_stats();
    let n = v.node_lock_stats();
    let (free_bytes, blocks, all_free) = v.free_space_state();
    crate::println!(
        "vmalloc[{}]: vmap nodes {} allocs {} (from pools {}) frees {} bad_frees {} purges {} pages_purged {} tlb_shootdowns {} lazy_pages {}",
        name,
        v.layout.nr_nodes,
        c.allocs.get(),
        c.pool_allocs.get(),
        c.frees.get(),
        c.bad_frees.get(),
        c.purges.get(),
        c.pages_purged.get(),
        c.shootdowns.get(),
        v.lazy_pages()
    );
    crate::println!(
        "vmalloc[{}]: global lock acquisitions {} contended {}; vmap node locks acquisitions {} contended {}; free space {} bytes in {} blocks{}; pages local {} remote {}",
        name,
        g.acquisitions,
        g.contended,
        n.acquisitions,
        n.contended,
        free_bytes,
        blocks,
        if all_free { " (all free)" } else { "" },
        c.local_pages.get(),
        c.remote_pages.get()
    );
    let pools = v.pool_lengths();
    for (i, nc) in v.node_counts().iter().enumerate() {
        if nc.busy_areas + nc.lazy_areas + nc.pool_areas + nc.pool_hits + nc.pool_misses == 0 {
            continue;
        }
        let mut lens = String::new();
        for (_, pages, areas) in pools.iter().filter(|p| p.0 as usize == i) {
            let _ = write!(lens, " {}p:{}", pages, areas);
        }
        crate::println!(
            "vmalloc[{}]: vmap node {}: busy {} ({} pages) lazy {} ({} pages) pools {} ({} pages; hits {} misses {}){}",
            name,
            i,
            nc.busy_areas,
            nc.busy_pages,
            nc.lazy_areas,
            nc.lazy_pages,
            nc.pool_areas,
            nc.pool_pages,
            nc.pool_hits,
            nc.pool_misses,
            lens
        );
    }
}
