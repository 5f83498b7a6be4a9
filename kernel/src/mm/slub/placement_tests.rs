//! KTAP test of where SLUB's own structures live (placement.rs): in every cache (kmalloc's,
//! the named ones, and a fresh cache of each design) node n's list_lock and barn lock lie
//! in node n's memory (a memoryless node's in its nearest memory node's), and each CPU's slab
//! slot in its CPU's memory node's, by the frame allocator's node of their physical address.
//! (vmalloc's numa design's vmap nodes: `vmalloc.vmap_nodes_on_their_node`.)

use super::{caches, default_tunables, KmemCache};
use crate::ktest::TestResult;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use numalab_algo::page::VirtAddr;
use numalab_algo::slub::{Design, Tunables};
use numalab_algo::topology::{CpuId, NodeId};

/// The node whose memory holds `addr` (a direct-map address).
fn node_of(addr: usize) -> Option<NodeId> {
    crate::mm::frame::node_of_phys(crate::mm::frame::virt_to_phys(VirtAddr::new(addr as u64)))
}

/// Every misplaced structure of `c`, one line each.
fn misplaced(c: &KmemCache, out: &mut Vec<String>) {
    let topo = crate::topology::get();
    let mut check = |what: String, addr: usize, want: NodeId| {
        let got = node_of(addr);
        if got != Some(want) {
            out.push(format!(
                "{}: {} at {:#x} is on node {}, want node {}",
                c.name(),
                what,
                addr,
                got.map_or(String::from("none"), |n| format!("{}", n.0)),
                want.0
            ));
        }
    };
    for n in 0..topo.nr_nodes() {
        let node = NodeId(n as u16);
        let want = topo.mem_node(node);
        if let Some(l) = c.list_lock_object(node) {
            check(
                format!("node {n} list_lock"),
                l as *const _ as *const u8 as usize,
                want,
            );
        }
        if let Some(l) = c.barn_lock_object(node) {
            check(
                format!("node {n} barn lock"),
                l as *const _ as *const u8 as usize,
                want,
            );
        }
    }
    for cpu in 0..topo.nr_cpus() {
        let id = CpuId(cpu as u16);
        if let Some(addr) = c.core().cpu_slot_addr(id) {
            check(
                format!("CPU {cpu} slab slot"),
                addr,
                topo.mem_node(topo.node_of_cpu(id)),
            );
        }
    }
}

pub(super) fn structures_on_their_node(_ctx: &crate::ktest::Ctx) -> TestResult {
    let mut fresh = Vec::new();
    for (name, design) in [
        ("slub-placed-sheaves", Design::Sheaves),
        ("slub-placed-partial", Design::Partial),
    ] {
        let t = Tunables {
            design,
            ..default_tunables(name)
        };
        fresh.push(KmemCache::create(name, 64, 0, t).map_err(|e| format!("{e:?}"))?);
    }
    let mut wrong = Vec::new();
    let all = caches();
    for c in &all {
        misplaced(c, &mut wrong);
    }
    for c in fresh {
        super::tests::destroy(c)?;
    }
    crate::println!(
        "# slub structures_on_their_node: {} caches, {} misplaced structures",
        all.len(),
        wrong.len()
    );
    match wrong.first() {
        None => Ok(()),
        Some(first) => Err(format!("{} misplaced, first: {first}", wrong.len()).into()),
    }
}
