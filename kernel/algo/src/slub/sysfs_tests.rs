//! Host tests of the /sys/kernel/slab and /proc/slabinfo snapshot (snapshot.rs, sysfs.rs):
//! Linux's file formats, and figures equal to the cache's own counters in both designs.

use super::fake::FakeMachine;
use super::sysfs::{block_lines, cache_attrs, name_ok, per_cpu, per_node, proc_slabinfo};
use super::*;
use crate::topology::NodeId;
use std::boxed::Box;
use std::collections::BTreeMap;
use std::string::String;
use std::vec::Vec;

fn four_node() -> &'static FakeMachine {
    Box::leak(Box::new(FakeMachine::new(
        &[1024; 4],
        &[0, 0, 1, 1, 2, 2, 3, 3],
        None,
    )))
}

fn attrs(s: &CacheSnapshot) -> BTreeMap<&'static str, String> {
    cache_attrs(s).into_iter().collect()
}

#[test]
fn per_node_and_per_cpu_leave_zeros_out() {
    assert_eq!(per_node([0usize, 3, 0, 2].into_iter()), "5 N1=3 N3=2");
    assert_eq!(per_node([0usize, 0].into_iter()), "0");
    assert_eq!(per_cpu(7, [4u64, 0, 3].into_iter()), "7 C0=4 C2=3");
    assert_eq!(per_cpu(0, [0u64].into_iter()), "0");
}

#[test]
fn names_that_cannot_be_directories_are_refused() {
    assert!(name_ok("kmalloc-64"));
    assert!(name_ok(":0000064"));
    for bad in ["", ".", "..", "a/b", "a b", "tab\t"] {
        assert!(!name_ok(bad), "{bad:?}");
    }
}

/// Allocates on several CPUs and nodes, frees some, and checks every figure of the snapshot
/// against the cache's own counters and lists.
fn figures_match(design: Design) {
    let m = four_node();
    let t = Tunables {
        design,
        ..Tunables::default()
    };
    let c = Box::new(Cache::new(m, "kmalloc-64", 64, 0, t, 0x9e37_79b9, None).unwrap());
    let mut objs = Vec::new();
    for cpu in 0..8u16 {
        FakeMachine::set_cpu(cpu);
        for _ in 0..100 + 37 * cpu as usize {
            objs.push((cpu, c.alloc().unwrap()));
        }
    }
    // Free every third object on the CPU that allocated it, and a few remotely.
    for (i, (cpu, o)) in objs.iter().enumerate() {
        if i % 3 == 0 {
            FakeMachine::set_cpu(if i % 7 == 0 { (cpu + 3) % 8 } else { *cpu });
            c.free(*o);
        }
    }
    let live = objs.len() - objs.len().div_ceil(3);
    let s = c.snapshot();
    assert_eq!(s.total.live_objects(), live as i64);
    let stats = c.stats();
    assert_eq!(s.total, stats);
    assert_eq!(
        s.objects as i64,
        stats.live_objects() + stats.sheaf_cached_objects()
    );
    assert_eq!(
        s.slabinfo().active_objs,
        c.slabinfo(SlabinfoMode::Counters).active_objs
    );
    let a = attrs(&s);
    let slabs: usize = (0..4).map(|n| c.nr_slabs(NodeId(n))).sum();
    assert!(slabs > 4, "{slabs}");
    assert_eq!(a["slabs"].split(' ').next().unwrap(), slabs.to_string());
    for n in 0..4u16 {
        let want = c.nr_slabs(NodeId(n));
        let part = format!("N{n}={want}");
        assert_eq!(
            a["slabs"].contains(&part),
            want != 0,
            "{} {part}",
            a["slabs"]
        );
        let partial = c.nr_partial(NodeId(n));
        assert_eq!(s.nodes[n as usize].partial, partial);
        assert_eq!(s.nodes[n as usize].slabs, want);
    }
    assert_eq!(a["objects"], s.objects.to_string());
    let info = c.slabinfo(SlabinfoMode::Counters);
    assert_eq!(
        a["total_objects"].split(' ').next().unwrap(),
        info.num_objs.to_string()
    );
    assert_eq!(a["object_size"], "64");
    assert_eq!(a["objs_per_slab"], c.order_objects().objects.to_string());
    assert_eq!(
        a["alloc_slab"].split(' ').next().unwrap(),
        stats.get(Stat::AllocSlab).to_string()
    );
    // Every stat is a file, in Linux's `TOTAL C0=n` form, its parts adding up.
    for (stat, name) in STAT_NAMES.iter() {
        let text = &a[name];
        let mut words = text.split(' ');
        let total: u64 = words.next().unwrap().parse().unwrap();
        assert_eq!(total, stats.get(*stat), "{name}");
        let sum: u64 = words
            .map(|w| w.split_once('=').unwrap().1.parse::<u64>().unwrap())
            .sum();
        assert_eq!(sum, total, "{name}: {text}");
    }
    // The partial design has CPU slabs and CPU partial slabs; the sheaves design a capacity.
    match design {
        Design::Partial | Design::Hybrid => {
            let cpu: usize = s.nodes.iter().map(|n| n.cpu_slabs).sum();
            assert!(cpu >= 8, "{}", a["cpu_slabs"]);
            assert!(!a.contains_key("sheaf_capacity"));
        }
        Design::Sheaves => {
            assert_eq!(a["sheaf_capacity"], c.sheaf_capacity().to_string());
            assert!(stats.sheaf_cached_objects() > 0);
        }
    }
    // The proc text is Linux's: the header, then one line whose columns are the snapshot's.
    let text = proc_slabinfo(core::slice::from_ref(&s));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "slabinfo - version: 2.1");
    let cols: Vec<&str> = lines[2].split_whitespace().collect();
    assert_eq!(cols[0], "kmalloc-64");
    assert_eq!(cols[1], s.objects.to_string());
    assert_eq!(cols[2], info.num_objs.to_string());
    assert_eq!(cols[14], slabs.to_string());
    for (_, o) in objs.iter().enumerate().filter(|(i, _)| i % 3 != 0) {
        c.free(o.1);
    }
}

#[test]
fn snapshot_figures_match_the_counters_partial() {
    figures_match(Design::Partial);
}

#[test]
fn snapshot_figures_match_the_counters_sheaves() {
    figures_match(Design::Sheaves);
}

#[test]
fn the_block_has_one_line_per_file_and_proc_lines() {
    let m = four_node();
    FakeMachine::set_cpu(0);
    let debug = DebugFlags::parse("FZ").unwrap();
    let t = Tunables {
        debug,
        ..Tunables::default()
    };
    let a = Box::new(Cache::new(m, "dentry", 192, 0, t, 1, None).unwrap());
    let b = Box::new(Cache::new(m, "bad name", 32, 0, Tunables::default(), 1, None).unwrap());
    let x = a.alloc().unwrap();
    let snaps = [a.snapshot(), b.snapshot()];
    let lines = block_lines(&snaps);
    assert_eq!(lines[0], "# sysfs: BEGIN caches=2");
    assert_eq!(lines.last().unwrap(), "# sysfs: END");
    assert!(lines.contains(&String::from("# sysfs: dentry/object_size 192")));
    assert!(lines.contains(&String::from("# sysfs: dentry/sanity_checks 1")));
    assert!(lines.contains(&String::from("# sysfs: dentry/red_zone 1")));
    assert!(lines.contains(&String::from("# sysfs: dentry/poison 0")));
    assert!(lines.contains(&String::from("# sysfs: dentry/objects 1")));
    assert!(lines.contains(&String::from("# sysfs: dentry/ctor")));
    assert!(lines.contains(&String::from("# sysfs: skipped bad name")));
    assert!(!lines.iter().any(|l| l.starts_with("# sysfs: bad name/")));
    let n_files = cache_attrs(&snaps[0]).len();
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.starts_with("# sysfs: dentry/"))
            .count(),
        n_files
    );
    let proc: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("# proc/slabinfo: "))
        .collect();
    assert_eq!(proc.len(), 4, "{proc:?}");
    assert!(proc[3].starts_with("# proc/slabinfo: bad name "));
    a.free(x);
}
