//! The output file's text (`numalab-trace 2`): the caches, region rows, DRAM and HITM rows by
//! node, kept line rows, the total row.

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
    out.push_str("numalab-trace 2\n");
    let _ = writeln!(out, "vcpus {}", model.vcpu_count());
    match &model.config().caches {
        None => out.push_str("caches none\n"),
        Some(c) => {
            let _ = writeln!(
                out,
                "caches l1d {} {} l2 {} {} llc {} {} {}",
                c.l1d.0,
                c.l1d.1,
                c.l2.0,
                c.l2.1,
                c.llc.0,
                c.llc.1,
                c.policy.name()
            );
        }
    }
    for (key, vcpu, c) in model.region_rows() {
        let _ = write!(out, "region {key:#x} vcpu {vcpu}");
        counters(&mut out, &c);
        out.push('\n');
    }
    for (key, vcpu, node, reads, writebacks) in model.dram_rows() {
        let _ = writeln!(
            out,
            "dram {key:#x} vcpu {vcpu} node {node} reads {reads} writebacks {writebacks}"
        );
    }
    for (key, vcpu, from, home, count) in model.hitm_rows() {
        let _ = writeln!(
            out,
            "hitm {key:#x} vcpu {vcpu} from {from} home {home} count {count}"
        );
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
            "numalab-trace 2\nvcpus 2\ncaches none\n\
             region 0x0 vcpu 0 insns 3 turns 1 loads 0 stores 0 atomics 0 {zero} local 0 remote 0 dist_sum 0 hits 0 l2_hits 0 llc_hits 0 miss_local 0 miss_remote 0 hitm_local 0 hitm_remote 0 inval 0 writebacks 0\n\
             region 0x0 vcpu 1 insns 2 turns 1 loads 0 stores 0 atomics 1 io 1 unmapped 0 local 1 remote 0 dist_sum 10 hits 0 l2_hits 0 llc_hits 0 miss_local 0 miss_remote 0 hitm_local 0 hitm_remote 1 inval 1 writebacks 0\n\
             region 0xabc0 vcpu 0 insns 0 turns 0 loads 0 stores 1 atomics 0 {zero} local 0 remote 1 dist_sum 20 hits 0 l2_hits 0 llc_hits 0 miss_local 0 miss_remote 1 hitm_local 0 hitm_remote 0 inval 0 writebacks 0\n\
             region 0xabc0 vcpu 1 insns 0 turns 0 loads 0 stores 0 atomics 0 {zero} local 0 remote 0 dist_sum 0 hits 0 l2_hits 0 llc_hits 0 miss_local 0 miss_remote 0 hitm_local 0 hitm_remote 0 inval 0 writebacks 0\n\
             dram 0xabc0 vcpu 0 node 1 reads 1 writebacks 0\n\
             hitm 0x0 vcpu 1 from 0 home 1 count 1\n\
             line 0xabc0 0x1040 0xffff800000001040 node 1 loads 0 stores 1 atomics 0 hitm_local 0 hitm_remote 0 inval 0\n\
             total insns 5 turns 2 loads 0 stores 1 atomics 1 io 1 unmapped 0 local 1 remote 1 dist_sum 30 hits 0 l2_hits 0 llc_hits 0 miss_local 0 miss_remote 1 hitm_local 0 hitm_remote 1 inval 1 writebacks 0\n"
        );
        assert_eq!(render(&m), expect);
    }

    #[test]
    fn exact_text_with_caches() {
        // One-line L1d and L2 (1 set of 1 way), an LLC of 2 lines: vCPU 0 stores to a node 1
        // line, then loads a node 0 line, which evicts the dirty line from its L2: a
        // writeback to node 1.
        let cfg = "nodes 2\ndistance 0 10 20\ndistance 1 20 10\nmem 0x0 0x1000 0\n\
                   mem 0x1000 0x2000 1\nvcpu 0 0\nvcpu 1 1\nl1d 64 1\nl2 64 1\n\
                   llc 128 2 victim\nllc_of 0 0\nllc_of 1 0\n";
        let mut m = Model::new(parse(cfg).unwrap());
        m.access(0, 0x1000, Mem::Phys(0x1000), Kind::Store);
        m.access(0, 0x40, Mem::Phys(0x40), Kind::Load);
        m.access(1, 0x1000, Mem::Phys(0x1000), Kind::Load);
        m.finish();
        let text = render(&m);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[2], "caches l1d 64 1 l2 64 1 llc 128 2 victim");
        assert_eq!(
            lines[3],
            "region 0x0 vcpu 0 insns 0 turns 0 loads 1 stores 1 atomics 0 io 0 unmapped 0 local 1 remote 1 dist_sum 30 hits 0 l2_hits 0 llc_hits 0 miss_local 1 miss_remote 1 hitm_local 0 hitm_remote 0 inval 0 writebacks 1"
        );
        // vCPU 1 finds the written-back line in the victim LLC.
        assert!(lines[4].contains(" llc_hits 1 miss_local 0 "), "{text}");
        assert_eq!(
            &lines[5..8],
            &[
                "dram 0x0 vcpu 0 node 0 reads 1 writebacks 0",
                "dram 0x0 vcpu 0 node 1 reads 1 writebacks 1",
                "total insns 0 turns 0 loads 2 stores 1 atomics 0 io 0 unmapped 0 local 2 remote 1 dist_sum 40 hits 0 l2_hits 0 llc_hits 1 miss_local 1 miss_remote 1 hitm_local 0 hitm_remote 0 inval 0 writebacks 1",
            ]
        );
    }
}
