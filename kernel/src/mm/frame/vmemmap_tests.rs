//! Kernel tests of the vmemmap (vmemmap.rs): every managed page's descriptor through it is
//! the one the lookup by range finds (the same physical words, at `VMEMMAP + pfn * 32`), the
//! descriptors are backed by the page's own node, and holes are refused and unmapped.

use super::*;
use crate::ktest::{Ctx, TestResult};
use crate::{kassert, kassert_eq, ktest};
use alloc::string::String;
use numalab_algo::frame::vmemmap::SECTION_PAGES;

/// The physical address behind a vmemmap address (None: unmapped).
fn backing(virt: usize) -> Option<u64> {
    crate::arch::paging::translate(VirtAddr::new(virt as u64)).map(|p| p.as_u64())
}

/// Every managed page of every node, each looked up through the vmemmap and by range (the
/// lookup the vmemmap replaces): the same descriptor (its vmemmap page translates to the
/// physical page holding the node memmap's entry), page_to_pfn inverts pfn_to_page, the
/// section's node is the page's node, and the physical page behind the descriptor is
/// memory of that node. Pages of a section two nodes share are found by range only.
fn vmemmap(_ctx: &Ctx) -> TestResult {
    let fa = FRAME.get().ok_or_else(|| String::from("frame not ready"))?;
    let topo = crate::topology::get();
    let meta_bytes = core::mem::size_of::<PageMeta>() as u64;
    let (mut checked, mut through, mut shared) = (0u64, 0u64, 0u64);
    // The last vmemmap page translated and what backs it (one translation per 128 pages).
    let mut last: Option<(usize, Option<u64>)> = None;
    for node in fa.nodes.iter().flatten() {
        for &(s, e) in &node.ranges {
            for pfn in s >> PAGE_SHIFT..e >> PAGE_SHIFT {
                let phys = PhysAddr::new(pfn << PAGE_SHIFT);
                let old = super::lookup::page_meta_by_range(fa, phys)
                    .ok_or_else(|| alloc::format!("pfn {pfn:#x}: no descriptor by range"))?;
                let old_phys = virt_to_phys(VirtAddr::new(old as *const PageMeta as u64));
                checked += 1;
                let Some(new) = vmemmap::pfn_to_page(pfn) else {
                    // Only a section another node also manages is left to the ranges.
                    let sec = pfn >> numalab_algo::page::SECTION_PAGES_SHIFT;
                    let other = fa.nodes.iter().flatten().any(|o| {
                        o.id != node.id
                            && o.ranges.iter().any(|&(os, oe)| {
                                let first = (os >> PAGE_SHIFT) / SECTION_PAGES;
                                let last = ((oe >> PAGE_SHIFT) - 1) / SECTION_PAGES;
                                first <= sec && sec <= last
                            })
                    });
                    kassert!(
                        other,
                        "pfn {:#x} of node {}: not in the vmemmap",
                        pfn,
                        node.id.0
                    );
                    shared += 1;
                    continue;
                };
                through += 1;
                let addr = new as *const PageMeta as usize;
                kassert_eq!(vmemmap::page_to_pfn(new), Some(pfn));
                let page = addr & !(PAGE_SIZE as usize - 1);
                let behind = match last {
                    Some((p, b)) if p == page => b,
                    _ => {
                        let b = backing(page);
                        // The descriptor page is memory of the page's own node.
                        let b_node = b.and_then(|b| topo.node_of_phys(PhysAddr::new(b)));
                        kassert!(
                            b_node == Some(node.id),
                            "pfn {:#x} of node {}: descriptors backed by {:?} of node {:?}",
                            pfn,
                            node.id.0,
                            b,
                            b_node
                        );
                        last = Some((page, b));
                        b
                    }
                };
                let new_phys = behind.map(|b| b + (addr as u64 & (PAGE_SIZE - 1)));
                kassert!(
                    new_phys == Some(old_phys.as_u64()),
                    "pfn {:#x}: vmemmap entry at {:#x} (physical {:?}), by range {:#x}",
                    pfn,
                    addr,
                    new_phys,
                    old_phys.as_u64()
                );
                kassert_eq!(addr as u64 % meta_bytes, 0);
                kassert!(
                    page_meta(phys).map(|m| m as *const PageMeta as usize) == Some(addr),
                    "page_meta({:#x}) does not go through the vmemmap",
                    phys
                );
                kassert_eq!(node_of_phys(phys), Some(node.id));
            }
        }
    }
    // Holes: every section no node manages a page of, and the first section past the end.
    let nr = vmemmap::sections();
    let mut holes = 0u64;
    for sec in 0..=nr as u64 {
        let first = sec * SECTION_PAGES;
        let managed = fa.nodes.iter().flatten().any(|n| {
            n.ranges
                .iter()
                .any(|&(s, e)| s >> PAGE_SHIFT < first + SECTION_PAGES && e >> PAGE_SHIFT > first)
        });
        if managed {
            continue;
        }
        holes += 1;
        for pfn in [first, first + SECTION_PAGES / 2, first + SECTION_PAGES - 1] {
            kassert!(
                vmemmap::pfn_to_page(pfn).is_none(),
                "hole pfn {:#x} has a descriptor",
                pfn
            );
            kassert!(
                vmemmap::owner(pfn).is_none(),
                "hole pfn {:#x} has an owner",
                pfn
            );
        }
        let virt = vmemmap::base() + (first * meta_bytes) as usize;
        kassert!(
            backing(virt).is_none(),
            "hole section {} is mapped at {:#x}",
            sec,
            virt
        );
    }
    crate::println!(
        "# frame vmemmap: {} sections, {} pages checked, {} through the vmemmap, {} in shared sections, {} hole sections refused and unmapped",
        nr,
        checked,
        through,
        shared,
        holes
    );
    kassert!(holes >= 1, "the section past the end is a hole");
    kassert!(through * 2 > checked, "most pages should be in the vmemmap");
    Ok(())
}

ktest!(crate::ktest::suites::FRAME, Test, vmemmap);
