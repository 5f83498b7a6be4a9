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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::account::{Kind, Mem};
    use crate::config::parse;

    #[test]
    fn exact_text() {
        let cfg = "nodes 2\ndistance 0 10 20\ndistance 1 20 10\nmem 0x0 0x1000 0\n\
                   mem 0x1000 0x2000 1\nvcpu 0 0\nvcpu 1 1\n";
        let mut m = Model::new(parse(cfg).unwrap());
        m.tb_exec(0, 3);
        m.marker(0);
        m.access(0, 0xabc0, Mem::Phys(0), Kind::Load);
        m.access(0, 0xffff_8000_0000_1048, Mem::Phys(0x1048), Kind::Store);
        m.tb_exec(1, 2);
        m.access(1, 0x48, Mem::Phys(0x1048), Kind::Atomic);
        m.access(1, 0x10, Mem::Io, Kind::Load);
        m.finish();
        let zero = "io 0 unmapped 0";
        let expect = format!(
            "numalab-trace 1\nvcpus 2\n\
             region 0x0 vcpu 0 insns 3 turns 1 loads 0 stores 0 atomics 0 {zero} local 0 remote 0 dist_sum 0 hits 0 miss_local 0 miss_remote 0 hitm_local 0 hitm_remote 0 inval 0\n\
             region 0x0 vcpu 1 insns 2 turns 1 loads 0 stores 0 atomics 1 io 1 unmapped 0 local 1 remote 0 dist_sum 10 hits 0 miss_local 0 miss_remote 0 hitm_local 0 hitm_remote 1 inval 1\n\
             region 0xabc0 vcpu 0 insns 0 turns 0 loads 0 stores 1 atomics 0 {zero} local 0 remote 1 dist_sum 20 hits 0 miss_local 0 miss_remote 1 hitm_local 0 hitm_remote 0 inval 0\n\
             region 0xabc0 vcpu 1 insns 0 turns 0 loads 0 stores 0 atomics 0 {zero} local 0 remote 0 dist_sum 0 hits 0 miss_local 0 miss_remote 0 hitm_local 0 hitm_remote 0 inval 0\n\
             line 0xabc0 0x1040 0xffff800000001040 node 1 loads 0 stores 1 atomics 0 hitm_local 0 hitm_remote 0 inval 0\n\
             total insns 5 turns 2 loads 0 stores 1 atomics 1 io 1 unmapped 0 local 1 remote 1 dist_sum 30 hits 0 miss_local 0 miss_remote 1 hitm_local 0 hitm_remote 1 inval 1\n"
        );
        assert_eq!(render(&m), expect);
    }
}
