//! Linux's /sys/kernel/slab/CACHE/ATTR files and /proc/slabinfo from one snapshot of every
//! cache (snapshot.rs), printed as one block on the KTAP diagnostic channel that the host
//! runner cuts out of the log and writes as a tree (boot/src/run/sysfs.rs):
//!
//! ```text
//! # sysfs: BEGIN caches=2
//! # sysfs: kmalloc-64/object_size 64
//! # sysfs: kmalloc-64/slabs 3 N0=1 N2=2
//! # sysfs: kmalloc-64/ctor
//! # proc/slabinfo: slabinfo - version: 2.1
//! # proc/slabinfo: kmalloc-64 ...
//! # sysfs: END
//! ```
//!
//! A `# sysfs:` line is `CACHE/ATTR` then one space and the file's text (nothing for an empty
//! file; every file ends with a newline, as Linux's do); a `# proc/slabinfo:` line is one line
//! of /proc/slabinfo. The file formats are mm/slub.c's: show_slab_objects (`TOTAL N0=a N2=b`,
//! nodes with 0 left out), show_stat (`TOTAL C0=a C3=b`, CPUs with 0 left out),
//! slabs_cpu_partial_show (`OBJECTS(SLABS) C0=o(s)`), one number for the rest.

use super::cache::Design;
use super::info::{slabinfo_line, SLABINFO_HEADER};
use super::snapshot::CacheSnapshot;
use super::stats::STAT_NAMES;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

use crate::wire::sysfs::SKIPPED;
/// The block's line prefixes, declared with the other console lines.
pub use crate::wire::sysfs::{PROC_SLABINFO_PREFIX, SYSFS_BEGIN, SYSFS_END, SYSFS_PREFIX};

/// A per-node file: the total, then ` N<node>=<count>` for each node with a non-zero count.
pub fn per_node(counts: impl Iterator<Item = usize>) -> String {
    let mut parts = String::new();
    let mut total = 0usize;
    for (node, v) in counts.enumerate() {
        total += v;
        if v != 0 {
            let _ = write!(parts, " N{node}={v}");
        }
    }
    format!("{total}{parts}")
}

/// A per-CPU stat file: the total, then ` C<cpu>=<count>` for each CPU with a non-zero count.
pub fn per_cpu(total: u64, counts: impl Iterator<Item = u64>) -> String {
    let mut out = format!("{total}");
    for (cpu, v) in counts.enumerate() {
        if v != 0 {
            let _ = write!(out, " C{cpu}={v}");
        }
    }
    out
}

/// Whether `name` can be a directory name under /sys/kernel/slab (the host refuses others).
pub fn name_ok(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name.bytes().all(|b| b.is_ascii_graphic() && b != b'/')
}

/// Every attribute file of one cache, in Linux's order of slab_attrs, then its SLUB_STATS
/// files: (name, text without the final newline).
pub fn cache_attrs(s: &CacheSnapshot) -> Vec<(&'static str, String)> {
    let b = |v: bool| String::from(if v { "1" } else { "0" });
    let nodes = &s.nodes;
    let obj_per_slab = s.objs_per_slab;
    let mut cpu_partial = format!(
        "{}({})",
        s.cpu_partial_slabs.iter().sum::<usize>() * obj_per_slab / 2,
        s.cpu_partial_slabs.iter().sum::<usize>()
    );
    for (cpu, slabs) in s.cpu_partial_slabs.iter().enumerate() {
        if *slabs != 0 {
            let _ = write!(cpu_partial, " C{cpu}={}({slabs})", slabs * obj_per_slab / 2);
        }
    }
    let mut a: Vec<(&'static str, String)> = alloc::vec![
        ("slab_size", format!("{}", s.slab_size)),
        ("object_size", format!("{}", s.object_size)),
        ("objs_per_slab", format!("{}", s.objs_per_slab)),
        ("order", format!("{}", s.order)),
        ("min_partial", format!("{}", s.min_partial)),
        ("cpu_partial", format!("{}", s.cpu_partial)),
        ("objects", format!("{}", s.objects)),
        (
            "objects_partial",
            per_node(nodes.iter().map(|n| n.objects_partial))
        ),
        ("partial", per_node(nodes.iter().map(|n| n.partial))),
        ("cpu_slabs", per_node(nodes.iter().map(|n| n.cpu_slabs))),
        (
            "ctor",
            if s.ctor != 0 {
                format!("{:#x}", s.ctor)
            } else {
                String::new()
            },
        ),
        ("aliases", String::from("0")),
        ("align", format!("{}", s.align)),
        ("hwcache_align", b(false)),
        ("reclaim_account", b(false)),
        ("destroy_by_rcu", b(false)),
        ("slabs_cpu_partial", cpu_partial),
        (
            "total_objects",
            per_node(nodes.iter().map(|n| n.total_objects))
        ),
        ("slabs", per_node(nodes.iter().map(|n| n.slabs))),
        ("sanity_checks", b(s.debug.sanity)),
        ("trace", b(false)),
        ("red_zone", b(s.debug.red_zone)),
        ("poison", b(s.debug.poison)),
        ("store_user", b(s.debug.user)),
        ("cache_dma", b(false)),
        (
            "remote_node_defrag_ratio",
            format!("{}", s.remote_node_defrag_ratio / 10),
        ),
    ];
    if s.design == Design::Sheaves || s.sheaf_capacity != 0 {
        a.push(("sheaf_capacity", format!("{}", s.sheaf_capacity)));
    }
    for (stat, name) in STAT_NAMES.iter() {
        a.push((
            name,
            per_cpu(s.total.get(*stat), s.per_cpu.iter().map(|c| c.get(*stat))),
        ));
    }
    a
}

/// The text of /proc/slabinfo (version 2.1) of these snapshots, each line ending in '\n'.
pub fn proc_slabinfo(caches: &[CacheSnapshot]) -> String {
    let mut out = String::from(SLABINFO_HEADER);
    out.push('\n');
    for c in caches {
        out.push_str(&slabinfo_line(&c.name, &c.slabinfo()));
        out.push('\n');
    }
    out
}

/// The whole block of these snapshots, one line per element (no '\n'): BEGIN, every cache's
/// files, /proc/slabinfo, END. A cache whose name cannot be a directory is left out of the
/// tree (a `# sysfs: skipped NAME` line says so) but stays in /proc/slabinfo.
pub fn block_lines(caches: &[CacheSnapshot]) -> Vec<String> {
    let mut out = Vec::new();
    out.push(format!("{SYSFS_BEGIN} caches={}", caches.len()));
    for c in caches {
        if !name_ok(&c.name) {
            out.push(format!("{SYSFS_PREFIX}{SKIPPED}{}", c.name));
            continue;
        }
        for (attr, text) in cache_attrs(c) {
            if text.is_empty() {
                out.push(format!("{SYSFS_PREFIX}{}/{attr}", c.name));
            } else {
                out.push(format!("{SYSFS_PREFIX}{}/{attr} {text}", c.name));
            }
        }
    }
    for line in proc_slabinfo(caches).lines() {
        out.push(format!("{PROC_SLABINFO_PREFIX}{line}"));
    }
    out.push(String::from(SYSFS_END));
    out
}
