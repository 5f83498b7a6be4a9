//! KTAP test of where vmalloc's numa design keeps its vmap nodes (instance.rs): vmap node i's
//! busy lock in NUMA node i's memory (a memoryless node's: its nearest memory node's), by the
//! frame allocator's node of its physical address. The global and cpu designs keep Linux's
//! one array on node 0 (docs/vmalloc.md, "Where the vmap nodes live").

use crate::ktest::TestResult;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use numalab_algo::page::VirtAddr;
use numalab_algo::topology::NodeId;
use numalab_algo::vmalloc::Policy;

pub(super) fn vmap_nodes_on_their_node(_ctx: &crate::ktest::Ctx) -> TestResult {
    let topo = crate::topology::get();
    let v = super::design(Policy::Numa).ok_or_else(|| String::from("no numa design"))?;
    let objects = v.lock_objects();
    let busy = objects
        .iter()
        .filter(|(_, name)| name.starts_with("vmap node "));
    let mut wrong = Vec::new();
    let mut nodes = 0;
    for (i, (obj, name)) in busy.enumerate() {
        nodes += 1;
        let addr = *obj as *const dyn core::any::Any as *const u8 as usize;
        let want = topo.mem_node(NodeId(i as u16));
        let got = crate::mm::frame::node_of_phys(crate::mm::frame::virt_to_phys(VirtAddr::new(
            addr as u64,
        )));
        if got != Some(want) {
            wrong.push(format!(
                "{} at {:#x} is on node {}, want node {}",
                name,
                addr,
                got.map_or(String::from("none"), |n| format!("{}", n.0)),
                want.0
            ));
        }
    }
    crate::kassert_eq!(nodes, topo.nr_nodes());
    match wrong.first() {
        None => Ok(()),
        Some(first) => Err(format!("{} misplaced, first: {first}", wrong.len()).into()),
    }
}
