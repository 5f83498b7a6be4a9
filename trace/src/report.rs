//! The output file's text (`numalab-trace 1`): region rows, kept line rows, the total row.

use std::fmt::Write;

use crate::account::{Counters, Model};

fn counters(out: &mut String, c: &Counters) {
    for (name, v) in c.fields() {
        let _ = write!(out, " {name} {v}");
    }
}

/// The whole report; call `Model::finish` first so that every region's lines are ranked.
pub fn render(model: &Model) -> String {
    let mut out = String::new();
    out.push_str("numalab-trace 1\n");
    let _ = writeln!(out, "vcpus {}", model.vcpu_count());
    for (key, vcpu, c) in model.region_rows() {
        let _ = write!(out, "region {key:#x} vcpu {vcpu}");
        counters(&mut out, &c);
        out.push('\n');
    }
    for (key, paddr, s) in model.line_rows() {
        let _ = writeln!(
            out,
            "line {key:#x} {paddr:#x} {:#x} node {} loads {} stores {} atomics {} hitm_local {} hitm_remote {} inval {}",
            s.vaddr, s.node, s.loads, s.stores, s.atomics, s.hitm_local, s.hitm_remote, s.inval
        );
    }
    out.push_str("total");
    counters(&mut out, &model.total());
    out.push('\n');
    out
}
