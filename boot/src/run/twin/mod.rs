//! The Linux twin (`bench --kernel linux|linux-7|both|all`, docs/linux-twin.md): numalab's
//! experiments on Debian's Linux 6.1 and on Debian 13's newest backports Linux 7.x ([`linux7`]),
//! booted on the same QEMU machine (same -smp/-m/-numa arguments, same
//! `-icount shift=0,sleep=off`) with an initramfs whose init loads the `numalab_twin` module
//! (linux/twin, built here against the installed headers). The module prints KTAP and BENCH
//! lines in numalab's contract with a `kernel` field. Its boots are planned, run and reported
//! with numalab's (run/plan.rs, execute.rs, report.rs); this folder has what only the twin
//! has: which experiments it mirrors (here), the module build ([`module`]), the initramfs
//! ([`initramfs`]), its extra command lines ([`cmdline`]), its contract ([`contract`]) and the
//! side-by-side table ([`table`]) and its traced form, with the verdict ([`traced`]).

pub mod cmdline;
pub mod contract;
pub mod det;
pub mod initramfs;
pub mod kallsyms;
pub mod linux7;
pub mod module;
pub mod table;
pub mod traced;

use crate::bench::catalog::{self, CATALOG, MEMORYLESS_NODE, SLUB_LIST_LOCK};
use crate::bench::Boot;
use crate::build::image;
pub use crate::build::linux_kernel::LinuxKernel;
use crate::qemu::LinuxBoot;
use std::sync::LazyLock;

pub use cmdline::ORDER4_WORDS;
pub use contract::contract_problems;
pub use module::installed_release;
pub use table::side_by_side;

/// The experiments numalab_twin mirrors, with the boot each measures in: the catalog's
/// (`Experiment::twin`, kernel/algo/src/bench/catalog), in its order; an experiment whose
/// counterparts also face numalab in the other of the icount and tsc boots is listed for
/// that boot too (kfree_rcu_scale). The uma and det boots have rules of their own.
pub static MIRRORED: LazyLock<Vec<(&'static str, Boot)>> = LazyLock::new(|| {
    let mut out: Vec<(&'static str, Boot)> = Vec::new();
    for (name, t) in twins() {
        let faced = t
            .counterparts
            .iter()
            .map(|c| c.boot)
            .filter(|b| matches!(b, Boot::Icount | Boot::Tsc));
        for boot in std::iter::once(t.boot).chain(faced) {
            if !out.contains(&(name, boot)) {
                out.push((name, boot));
            }
        }
    }
    out
});

/// The records every mirrored experiment must print when it ran: (bench, Linux case,
/// metric); those of an experiment measured in more than one boot are the two lists below.
pub static REQUIRED: LazyLock<Vec<(&'static str, &'static str, &'static str)>> =
    LazyLock::new(|| {
        twins()
            .filter(|(_, t)| !t.split_over_boots && t.required.iter().all(|r| r.boot == t.boot))
            .flat_map(|(name, t)| t.required.iter().map(move |r| (name, r.case, r.metric)))
            .collect()
    });

/// Records required from memoryless_node when it ran: `linux` on a machine with a memoryless
/// node (the tsc boot), `linux_single_node` on the one-node comparison machine (the uma boot).
pub(crate) static REQUIRED_MEMORYLESS: LazyLock<Vec<(Boot, &'static str)>> = LazyLock::new(|| {
    let twin = MEMORYLESS_NODE
        .twin
        .expect("memoryless_node has a Linux twin");
    twin.required.iter().map(|r| (r.boot, r.case)).collect()
});

/// slub_list_lock's Linux cases (the tunings set through /sys/kernel/slab), each required with
/// `ops_per_cpu` when it ran, and numalab's case each faces.
pub static SLUB_LIST_LOCK_CASES: LazyLock<Vec<(&'static str, &'static str)>> =
    LazyLock::new(|| {
        let twin = SLUB_LIST_LOCK
            .twin
            .expect("slub_list_lock has a Linux twin");
        twin.counterparts
            .iter()
            .map(|c| (c.case, c.linux_case))
            .collect()
    });

/// The rows of the side-by-side table: (bench, numalab case, Linux case, metric, boot).
pub static COUNTERPARTS: LazyLock<Vec<Counterpart>> = LazyLock::new(|| {
    twins()
        .flat_map(|(name, t)| {
            t.counterparts
                .iter()
                .map(move |c| (name, c.case, c.linux_case, c.metric, c.boot))
        })
        .collect()
});

/// A row of [`COUNTERPARTS`].
pub type Counterpart = (&'static str, &'static str, &'static str, &'static str, Boot);

/// The mirrored experiments with their twin facts.
fn twins() -> impl Iterator<Item = (&'static str, &'static catalog::Twin)> {
    CATALOG
        .iter()
        .filter_map(|e| e.twin.as_ref().map(|t| (e.name, t)))
}

/// Of the experiments `bench=` selects (`selected`, empty: all), the mirrored ones to run on
/// Linux, and the selected ones without a Linux counterpart.
pub fn mirrored_selection(selected: &[&str]) -> (Vec<&'static str>, Vec<String>) {
    let mut mirrored: Vec<&'static str> = MIRRORED
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| selected.is_empty() || selected.contains(n))
        .collect();
    mirrored.dedup();
    let unmirrored = selected
        .iter()
        .filter(|s| !MIRRORED.iter().any(|(n, _)| n == *s))
        .map(|s| s.to_string())
        .collect();
    (mirrored, unmirrored)
}

/// Of `mirrored`, those that measure in `boot`.
pub fn measured_in(mirrored: &[&'static str], boot: Boot) -> Vec<&'static str> {
    mirrored
        .iter()
        .copied()
        .filter(|n| MIRRORED.iter().any(|(m, b)| m == n && *b == boot))
        .collect()
}

/// The sheaf capacity the module read from /sys/kernel/slab/numalab_mls_64/sheaf_capacity
/// (its memoryless_sheaves line in `log`): Some on 7.x, None where the file does not exist
/// (6.1 prints -1) or the experiment did not run. Goes into the JSONL header's `linux_boots`.
pub fn sheaf_capacity(log: &crate::wire::BootLog) -> Option<u64> {
    log.notes_of("memoryless_sheaves")
        .find_map(|l| l.split("sheaf_capacity ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse::<u64>().ok())
}

/// Builds numalab_twin.ko for `kernel` and the initramfs around it, under target/linux-twin
/// (6.1: against the installed headers) or target/linux7-twin (7.x: in its Debian 13 build
/// root, linux/linux7.sh); the checkout itself stays clean. Returns what a boot needs.
pub fn build(kernel: LinuxKernel) -> Result<LinuxBoot, String> {
    // One build at a time in this process (tests boot the twin from several threads).
    static BUILD: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    let root = image::repo_root();
    match kernel {
        LinuxKernel::V6_1 => {
            let (release, vmlinuz) = installed_release()?;
            let out = root.join("target").join("linux-twin");
            let ko = module::build(&root, &out, &release)?;
            let initramfs = initramfs::pack(&root, &out, &ko)?;
            let packages = module::packages(&release);
            Ok(LinuxBoot {
                vmlinuz,
                initramfs,
                release,
                append: None,
                kernel,
                packages,
            })
        }
        LinuxKernel::V7 => {
            let installed = linux7::installed(&root)?;
            let out = root.join("target").join("linux7-twin");
            let ko = linux7::module(&root, &out)?;
            let initramfs = initramfs::pack(&root, &out, &ko)?;
            Ok(LinuxBoot {
                vmlinuz: installed.vmlinuz,
                initramfs,
                release: installed.release,
                append: None,
                kernel,
                packages: installed.packages,
            })
        }
    }
}

#[cfg(test)]
mod tests;
