//! What SLUB prints: /proc/slabinfo version 2.1 (counted from counters, or by Linux's old
//! walk of the partial lists under list_lock), and the SLUB_STATS counters in the format of
//! /sys/kernel/slab/CACHE/STAT (`total C0=n C1=n ...`); and the `# sysfs:` block, every
//! cache's /sys/kernel/slab files and /proc/slabinfo from one snapshot (docs/slub.md).

use super::{caches, KmemCache};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use numalab_algo::slub::{
    slabinfo_line, sysfs, CacheSnapshot, SlabinfoMode, SLABINFO_HEADER, STAT_NAMES,
};
use numalab_algo::topology::CpuId;

/// The slabinfo text of every cache, and the longest list_lock hold of the reader (rdtsc
/// cycles; 0 in Counters mode, which takes no list_lock).
pub fn slabinfo_text(mode: SlabinfoMode) -> (String, u64) {
    let mut out = String::from(SLABINFO_HEADER);
    let mut max_hold = 0;
    for c in caches() {
        let info = c.slabinfo(mode);
        max_hold = max_hold.max(info.max_lock_hold);
        out.push('\n');
        out.push_str(&slabinfo_line(c.name(), &info));
    }
    (out, max_hold)
}

/// Prints slabinfo (computed before printing: no lock is held while printing).
pub fn print_slabinfo(mode: SlabinfoMode) {
    let (text, max_hold) = slabinfo_text(mode);
    println!("{}", text);
    if mode == SlabinfoMode::Scan {
        println!(
            "# slabinfo scan: longest list_lock hold {} cycles",
            max_hold
        );
    }
}

/// The non-zero SLUB_STATS counters of one cache, one line each:
/// `CACHE STAT TOTAL C0=n C1=n ...` (per-CPU parts for CPUs with a non-zero count).
pub fn stats_lines(c: &KmemCache) -> Vec<String> {
    let total = c.stats();
    let nr_cpus = crate::topology::get().nr_cpus();
    let per_cpu: Vec<_> = (0..nr_cpus)
        .map(|i| c.core().cpu_stats(CpuId(i as u16)))
        .collect();
    let mut lines = Vec::new();
    for (stat, name) in STAT_NAMES.iter() {
        let v = total.get(*stat);
        if v == 0 {
            continue;
        }
        let mut line = format!("{} {} {}", c.name(), name, v);
        for (i, s) in per_cpu.iter().enumerate() {
            if s.get(*stat) != 0 {
                line.push_str(&format!(" C{}={}", i, s.get(*stat)));
            }
        }
        lines.push(line);
    }
    let l = c.list_lock_stats();
    if l.acquisitions != 0 {
        lines.push(format!(
            "{} list_lock acquisitions {} contended {} spins {}",
            c.name(),
            l.acquisitions,
            l.contended,
            l.spins
        ));
    }
    lines
}

/// Prints the `# sysfs:` block (numalab_algo::slub::sysfs): storage for every cache's
/// snapshot is allocated first, then every cache is read with no allocation in between, so
/// the figures of the kmalloc caches are not moved by the snapshot itself; printing follows.
/// Exact when the other CPUs are quiet (the end of the benchmarks).
pub fn print_sysfs_block() {
    let list = caches();
    let mut snaps: Vec<CacheSnapshot> = list
        .iter()
        .map(|c| CacheSnapshot::for_cache(c.core()))
        .collect();
    for (c, s) in list.iter().zip(snaps.iter_mut()) {
        c.core().fill_snapshot(s);
    }
    for line in sysfs::block_lines(&snaps) {
        println!("{}", line);
    }
}
