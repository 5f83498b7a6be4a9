//! The wire format: every kind of line the kernel (and the Linux twin's module, which prints
//! numalab's formats) writes on the serial console that the host runner reads, declared once.
//! Each kind's file holds its prefixes, the writer the kernel uses (no_std) and the reader the
//! host uses, with a round-trip test; the host's `BootLog` (boot/src/wire/mod.rs) reads a boot's
//! log once with [`classify`] and the block collectors here.
//!
//! | kind | file | written by | read by the host into |
//! |---|---|---|---|
//! | KTAP (version, plans, `# Subtest:`, results, `# expect-warnings:`) | [`ktap`] | kernel/src/ktest | `BootLog.ktap`, warning sort |
//! | warnings, `PANIC:`, `EXCEPTION:`, out of memory, the bootloader's panic | [`console`] | kernel `warn!`, panic, idt, mm | verdict, warnings |
//! | `BENCH {json}`, `# bench:` notes, `# bench progress` | [`bench`] | kernel/src/bench, linux/twin/harness.c | records, header, progress line |
//! | `# soak:` | [`soak`] | kernel/src/soak | soak summary |
//! | `# trace kernel/region/ops/name` | [`trace`] | kernel/src/bench/region.rs, linux/twin/trace_mark.c | trace labels |
//! | `# sysfs:` / `# proc/slabinfo:` block | [`sysfs`] | crate::slub::sysfs | run/sys/kernel/slab |
//! | `# lock_stat:` block | [`lock_stat`] | kernel/src/bench/lock_stat.rs | run/proc/lock_stat |
//! | `numactl -H` block | [`numactl`] | kernel/src/topology.rs | console summary, HTML report |
//! | Linux's `BUG ...: Objects remaining` | [`twin`] | Linux's SLUB (twin boots) | the twin's verdict |

pub mod bench;
pub mod console;
pub mod ktap;
pub mod lock_stat;
pub mod numactl;
pub mod soak;
pub mod sysfs;
pub mod trace;
pub mod twin;

/// One console line, classified (its kind's reader says more).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// A KTAP line, and whether it was indented (a subtest block's).
    Ktap(bool, ktap::KtapLine<'a>),
    Console(console::ConsoleLine<'a>),
    Bench(bench::BenchLine<'a>),
    /// A soak line (whole, trimmed).
    Soak(&'a str),
    Trace(trace::TraceLine<'a>),
    Sysfs(sysfs::SysfsLine<'a>),
    /// A lock_stat block line: the table line it carries.
    LockStat(&'a str),
    /// `# NAME: TEXT` with a one-word NAME (ktap::diagnostic).
    Diagnostic(&'a str, &'a str),
    /// Anything else (what tests print, the numactl block, Linux's own lines).
    Other(&'a str),
}

/// What `line` is. The prefixes do not overlap, except a diagnostic's `# NAME: `, which is
/// checked last.
pub fn classify(line: &str) -> Line<'_> {
    if let Some((indented, k)) = ktap::parse(line) {
        Line::Ktap(indented, k)
    } else if let Some(c) = console::parse(line) {
        Line::Console(c)
    } else if let Some(b) = bench::parse(line) {
        Line::Bench(b)
    } else if let Some(s) = soak::parse(line) {
        Line::Soak(s)
    } else if let Some(t) = trace::parse(line) {
        Line::Trace(t)
    } else if let Some(s) = sysfs::parse(line) {
        Line::Sysfs(s)
    } else if let Some(l) = lock_stat::parse(line) {
        Line::LockStat(l)
    } else if let Some((name, text)) = ktap::diagnostic(line) {
        Line::Diagnostic(name, text)
    } else {
        Line::Other(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_is_told_apart() {
        let cases = [
            ("KTAP version 1", "Ktap"),
            ("    ok 1 a", "Ktap"),
            ("numalab: warning: x", "Console"),
            ("BENCH {}", "Bench"),
            ("# bench: registered a", "Bench"),
            ("# soak: done: x", "Soak"),
            ("# trace ops 0x1 2", "Trace"),
            ("# sysfs: END", "Sysfs"),
            ("# lock_stat: x", "LockStat"),
            ("# latency_matrix: c: x", "Diagnostic"),
            ("available: 1 nodes (0)", "Other"),
        ];
        for (line, kind) in cases {
            let got = alloc::format!("{:?}", classify(line));
            assert!(got.starts_with(kind), "{line}: {got}");
        }
    }
}
