//! Host tests of where a cache's own structures live (placed.rs): each node's lists and barn
//! on that node's memory, each CPU's slab slot on its CPU's memory node, a memoryless node's
//! on the nearest node with memory. The fake machine records the node each structure's
//! memory came from.

use super::fake::FakeMachine;
use super::placed::PerCpuSlots;
use super::*;
use crate::topology::{CpuId, NodeId};
use std::boxed::Box;
use std::vec::Vec;

fn machine(pages: &[usize], cpus: &[u16]) -> &'static FakeMachine {
    Box::leak(Box::new(FakeMachine::new(pages, cpus, None)))
}

/// Checks every structure of a cache of design `design` on `m`: None when each is where
/// Linux puts it, else the first that is not.
fn misplaced(m: &'static FakeMachine, design: Design) -> Option<std::string::String> {
    FakeMachine::set_cpu(0);
    let t = Tunables {
        design,
        sheaves_opt_in: true,
        ..Tunables::default()
    };
    let c = Cache::new(m, "placed", 64, 0, t, 0x1234_5678, None).unwrap();
    let topo = &m.topo;
    let mut wrong = Vec::new();
    for n in 0..topo.nr_nodes() {
        let want = topo.mem_node(NodeId(n as u16));
        let got = m.placed_on(&c.nodes[n]);
        if got != Some(want) {
            wrong.push(format!("node {n}'s lists on {got:?}, want {want:?}"));
        }
        if let Some(b) = c.barns.get(n) {
            let got = m.placed_on(b);
            if got != Some(want) {
                wrong.push(format!("node {n}'s barn on {got:?}, want {want:?}"));
            }
        }
    }
    for cpu in 0..topo.nr_cpus() {
        let want = topo.mem_node(topo.node_of_cpu(CpuId(cpu as u16)));
        let got = m.placed_on(c.cpus.get(cpu));
        if got != Some(want) {
            wrong.push(format!("CPU {cpu}'s slab slot on {got:?}, want {want:?}"));
        }
    }
    let barns = c.barns.len();
    assert_eq!(
        barns,
        if design == Design::Partial {
            0
        } else {
            topo.nr_nodes()
        }
    );
    wrong.into_iter().next()
}

#[test]
fn each_node_lists_and_barn_and_each_cpu_slot_are_on_their_node() {
    for design in [Design::Sheaves, Design::Partial, Design::Hybrid] {
        let m = machine(&[64, 64, 64, 64], &[0, 0, 1, 1, 2, 2, 3, 3]);
        assert_eq!(misplaced(m, design), None, "{design:?}");
    }
}

#[test]
fn a_memoryless_node_gets_the_nearest_memory_node() {
    // Node 0 has CPUs and no memory, node 2 memory and no CPUs.
    let m = machine(&[0, 64, 64], &[0, 0, 1, 1]);
    assert_eq!(m.topo.mem_node(NodeId(0)), NodeId(1));
    assert_eq!(misplaced(m, Design::Sheaves), None);
}
