//! The twin's det boots (issue 44, docs/linux-twin.md): under `--trace mem`, each Linux kernel
//! boots the same machine as numalab's det boot (all CPUs, `-icount shift=0,sleep=off`,
//! TCG) with the module in `clock=det` and numalab's `bench.det_quantum`, runs the contention
//! experiments of [`DET_EXPERIMENTS`] in marked regions, and the runner reads its trace with
//! numalab's code (trace::analyse). Here: which experiments, the planning note, and where the
//! kernel's System.map is (numalab's det boots under its other SLUB designs: plan.rs).

use super::linux7;
use crate::linux_kernel::LinuxKernel;
use crate::qemu::LinuxBoot;
use crate::trace::sysmap;
use std::path::{Path, PathBuf};

/// The experiments the module runs in a det boot (a det boot lists them in the catalog's order).
pub const DET_EXPERIMENTS: [&str; 4] = [
    "slub_list_lock",
    "numa_locality",
    "sheaves_vs_partial",
    "vmalloc_scaling",
];

/// Why the twin's det boots are planned only under `--trace mem`.
pub const WHY_TRACED_ONLY: &str = "Debian's configs have no SLUB_STATS nor lock_stat, so an \
     untraced det boot of Linux would count nothing but instructions";

/// Why `kernel` has no det boot on this QEMU, if it has none. Linux 6.1 never brings up its
/// second CPU under QEMU 7.2's `-icount`: QEMU's round robin hands the instruction budget up to
/// the next timer deadline to the vCPU it enters first, the boot CPU spends it in its
/// `schedule()` loop waiting for the AP, and the AP, spinning in `wait_for_master_cpu` with its
/// go bit already set, is never run again (an `-d exec` trace shows its last block; measured
/// in docs/linux-twin.md, "Linux 6.1 has no det boot"). Linux 7.x boots on the same arguments.
pub fn blocked(kernel: LinuxKernel) -> Option<&'static str> {
    match kernel {
        LinuxKernel::V6_1 => Some(
            "Linux 6.1 never brings up its second CPU under QEMU 7.2's -icount (the boot CPU \
             takes every round-robin turn; QEMU 10.0 boots it); docs/linux-twin.md, \
             \"Linux 6.1 has no det boot\"",
        ),
        LinuxKernel::V7 => None,
    }
}

/// Of the mirrored experiments to run (`mirrored`), those of a det boot.
pub fn selection(mirrored: &[&'static str]) -> Vec<&'static str> {
    mirrored
        .iter()
        .copied()
        .filter(|n| DET_EXPERIMENTS.contains(n))
        .collect()
}

/// The note printed before the twin's boots under `--trace` (`planned`: whether a det boot is
/// in the plan).
pub fn note(planned: bool) -> String {
    if planned {
        format!(
            "numalab: --trace: the Linux twin's det boots are traced, its icount and tsc boots \
             are not; without --trace it has no det boot ({WHY_TRACED_ONLY})"
        )
    } else {
        format!(
            "numalab: --trace: no Linux det boot: none of {} is selected (the twin's other \
             boots are not traced)",
            DET_EXPERIMENTS.join(", ")
        )
    }
}

/// Where the System.map of `kernel` (release `release`) is: 6.1 `/boot/System.map-RELEASE`;
/// 7.x the linux7 cache's `ABI/System.map` (linux/linux7.sh copies it there), else the build
/// root's `usr/lib/modules/RELEASE/System.map` (`cache`: the linux7 cache folder).
pub fn system_map_path(kernel: LinuxKernel, release: &str, cache: Option<&Path>) -> PathBuf {
    match kernel {
        LinuxKernel::V6_1 => PathBuf::from(format!("/boot/System.map-{release}")),
        LinuxKernel::V7 => {
            let Some(cache) = cache else {
                return PathBuf::from(format!("/lib/modules/{release}/System.map"));
            };
            let abi = release.strip_suffix("-amd64").unwrap_or(release);
            let copied = cache.join(abi).join("System.map");
            if copied.is_file() {
                return copied;
            }
            cache
                .join("root/usr/lib/modules")
                .join(release)
                .join("System.map")
        }
    }
}

/// The data symbols of the twin's kernel `linux` (link-time addresses): its System.map, or
/// where that is Debian's stub, the kernel's own /proc/kallsyms read once in a symbol boot
/// under `qemu` (kallsyms.rs, cached in the twin's build folder); or one line saying why
/// there are none.
pub fn symbols(linux: &LinuxBoot, qemu: &Path) -> Result<Vec<(u64, u64, String)>, String> {
    let xdg = std::env::var("XDG_CACHE_HOME").ok();
    let home = std::env::var("HOME").ok();
    let cache = linux7::cache_dir(xdg.as_deref(), home.as_deref());
    let path = system_map_path(linux.kernel, &linux.release, cache.as_deref());
    let map = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))
        .and_then(|text| sysmap::symbols(&text).map_err(|e| format!("{}: {e}", path.display())));
    match map {
        Ok(syms) => Ok(syms),
        Err(why) => {
            let dir = crate::image::repo_root()
                .join("target")
                .join(match linux.kernel {
                    LinuxKernel::V6_1 => "linux-twin",
                    LinuxKernel::V7 => "linux7-twin",
                });
            let text = super::kallsyms::system_map(&dir, linux, qemu)
                .map_err(|e| format!("{why}; {e}"))?;
            sysmap::symbols(&text)
        }
    }
}
