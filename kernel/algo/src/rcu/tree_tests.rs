//! Known-answer tests of the rcu_node tree: shapes, one grace period's life, stale reports,
//! the next grace period started by a request made during one, and idle CPUs forced.

use super::*;
use std::cell::RefCell;

/// Nodes behind RefCells (one thread).
pub(crate) struct Cells(pub Vec<RefCell<RcuNode>>);

impl Nodes for Cells {
    fn with<R>(&self, idx: usize, f: impl FnOnce(&mut RcuNode) -> R) -> R {
        f(&mut self.0[idx].borrow_mut())
    }
}

fn cells(geo: &Geometry) -> Cells {
    Cells(geo.initial_nodes().into_iter().map(RefCell::new).collect())
}

/// 8 CPUs on 4 nodes, two per node, numbered 0-7 with CPU c on node c / 2.
fn four_nodes() -> Vec<(u16, u16)> {
    (0..8).map(|c| (c, c / 2)).collect()
}

#[test]
fn one_leaf_per_node_under_a_root() {
    let g = Geometry::new(&four_nodes(), 0).unwrap();
    assert_eq!(g.shapes.len(), 5);
    assert_eq!(g.levels, 2);
    assert_eq!(g.shapes[ROOT].qsmaskinit, 0b1111);
    assert_eq!(g.shapes[ROOT].parent, None);
    for leaf in 1..5 {
        let s = &g.shapes[leaf];
        assert_eq!(s.parent, Some(ROOT));
        assert_eq!(s.grpmask, 1 << (leaf - 1));
        assert_eq!(s.home_node, (leaf - 1) as u16);
        assert_eq!(s.qsmaskinit, 0b11);
    }
    assert_eq!(g.leaf_of(5), Some((3, 0b10)));
    assert_eq!(g.leaves().collect::<Vec<_>>(), [1, 2, 3, 4]);
}

#[test]
fn fanout_leaf_groups_consecutive_cpus() {
    let g = Geometry::new(&four_nodes(), 3).unwrap();
    let cpus: Vec<Vec<u16>> = g.leaves().map(|l| g.shapes[l].cpus.clone()).collect();
    assert_eq!(cpus, [vec![0, 1, 2], vec![3, 4, 5], vec![6, 7]]);
    assert_eq!(g.shapes[ROOT].qsmaskinit, 0b111);
    // Node of the leaf's first CPU: CPU 3 is on node 1.
    assert_eq!(g.shapes[2].home_node, 1);
}

#[test]
fn a_single_node_is_one_leaf_and_the_root() {
    let g = Geometry::new(&[(0, 0), (1, 0), (2, 0)], 0).unwrap();
    assert_eq!(g.shapes.len(), 1);
    assert_eq!(g.leaf_of(2), Some((ROOT, 0b100)));
}

#[test]
fn a_node_of_130_cpus_splits_at_64() {
    let cpus: Vec<(u16, u16)> = (0..130).map(|c| (c, 0)).collect();
    let g = Geometry::new(&cpus, 0).unwrap();
    let widths: Vec<usize> = g.leaves().map(|l| g.shapes[l].cpus.len()).collect();
    assert_eq!(widths, [64, 64, 2]);
    assert_eq!(g.shapes[1].qsmaskinit, u64::MAX);
    // 70 leaves of 1 CPU: 2 inner nodes of 64 and 6 under a root: three levels.
    let cpus: Vec<(u16, u16)> = (0..70).map(|c| (c, 0)).collect();
    let g = Geometry::new(&cpus, 1).unwrap();
    assert_eq!(g.levels, 3);
    assert_eq!(g.shapes[ROOT].qsmaskinit, 0b11);
}

#[test]
fn bad_shapes_are_refused() {
    assert!(Geometry::new(&[], 0).is_err());
    assert!(Geometry::new(&[(0, 0)], 65).is_err());
}

#[test]
fn a_grace_period_ends_when_every_cpu_reported() {
    let g = Geometry::new(&four_nodes(), 0).unwrap();
    let n = cells(&g);
    assert_eq!(request(&g, &n, 100), (4, true));
    assert_eq!(gp_seq(&n), 1);
    // Asking again during it: the one after is needed (8), not started yet.
    assert_eq!(request(&g, &n, 101), (8, false));
    for cpu in 0..7 {
        assert_eq!(report_cpu(&g, &n, cpu, 110), Report::Reported, "cpu {cpu}");
        // Twice is stale.
        assert_eq!(report_cpu(&g, &n, cpu, 110), Report::Stale);
    }
    assert!(owes_qs(&g, &n, 7));
    assert_eq!(
        report_cpu(&g, &n, 7, 150),
        Report::Ended {
            gp_seq: 4,
            next: true
        }
    );
    // The next one (8 needed) started at once, every CPU owes again.
    assert_eq!(gp_seq(&n), 5);
    assert!(owes_qs(&g, &n, 0));
    let root = n.0[ROOT].borrow().clone();
    assert_eq!((root.grace_periods, root.longest_gp), (1, 50));
    // A report for the old grace period is stale.
    assert_eq!(report(&g, &n, 1, 1, 1, 150), Report::Stale);
}

#[test]
fn idle_cpus_are_reported_for_them() {
    let g = Geometry::new(&four_nodes(), 0).unwrap();
    let n = cells(&g);
    request(&g, &n, 0);
    // Everyone but CPU 3 idle.
    assert_eq!(force_qs(&g, &n, 5, |c| c != 3), Report::Reported);
    assert!(owes_qs(&g, &n, 3) && !owes_qs(&g, &n, 2));
    assert_eq!(
        report_cpu(&g, &n, 3, 9),
        Report::Ended {
            gp_seq: 4,
            next: false
        }
    );
    assert_eq!(force_qs(&g, &n, 10, |_| true), Report::Stale);
}
