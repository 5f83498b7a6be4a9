//! The twin's det boots (docs/linux-twin.md): under `--trace mem`, each Linux kernel
//! boots the same machine as numalab's det boot (all CPUs, `-icount shift=0,sleep=off`,
//! TCG) with the module in `clock=det` and numalab's `bench.det_quantum`, runs the contention
//! experiments of [`DET_EXPERIMENTS`] in marked regions, and the runner reads its trace with
//! numalab's code (trace::analyse). Here: which experiments, the planning note, and where the
//! kernel's System.map is (numalab's det boots under its other SLUB designs: plan.rs).

use super::linux7;
use crate::build::linux_kernel::LinuxKernel;
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

/// Why Linux 6.1 cannot have a det boot on the host's QEMU 7.2: its second CPU never comes up
/// under QEMU 7.2's `-icount`: QEMU's round robin hands the instruction budget up to the next
/// timer deadline to the vCPU it enters first, the boot CPU spends it in its `schedule()` loop
/// waiting for the AP, and the AP, spinning in `wait_for_master_cpu` with its go bit already
/// set, is never run again (an `-d exec` trace shows its last block; measured in
/// docs/linux-twin.md, "Linux 6.1 has no det boot on QEMU 7.2"). Linux 7.x boots on the same
/// arguments; QEMU 10.0 boots both.
pub const WHY_QEMU10: &str = "Linux 6.1 never brings up its second CPU under QEMU 7.2's -icount \
     (the boot CPU takes every round-robin turn); QEMU 10.0 boots it";

/// The QEMU 10.0 that linux/qemu10.sh installs into the Linux 7 build root (`cache`: that
/// root's cache folder): the wrapper to run and the installed version line, or None.
pub fn qemu10(repo: &Path, cache: &Path) -> Option<(PathBuf, String)> {
    let root = cache.join("root/usr/bin");
    let ready = ["qemu-system-x86_64", "ld-numalab.so", "qemu-bundle"]
        .iter()
        .all(|f| root.join(f).exists());
    let version = std::fs::read_to_string(cache.join("qemu10.version")).ok()?;
    let version = version.trim().to_string();
    (ready && !version.is_empty()).then(|| (repo.join("linux/qemu10.sh"), version))
}

/// The QEMU of `kernel`'s det boots: None for the run's own (7.x), Some(QEMU 10.0, its
/// version) for 6.1 (see [`WHY_QEMU10`]), or why 6.1 has no det boot here (QEMU 10.0 not
/// installed). `cache`: the Linux 7 cache folder, if HOME or XDG_CACHE_HOME names one.
pub fn qemu_of(
    kernel: LinuxKernel,
    repo: &Path,
    cache: Option<&Path>,
) -> Result<Option<(PathBuf, String)>, String> {
    match kernel {
        LinuxKernel::V7 => Ok(None),
        LinuxKernel::V6_1 => cache
            .and_then(|c| qemu10(repo, c))
            .map(Some)
            .ok_or_else(|| {
                format!(
                    "{WHY_QEMU10}, and QEMU 10.0 is not installed (./qemu-run.sh setup installs \
                     it: linux/qemu10.sh); docs/linux-twin.md, \"Linux 6.1 on QEMU 10.0\""
                )
            }),
    }
}

/// [`qemu_of`] with this host's cache folder.
pub fn qemu_here(kernel: LinuxKernel) -> Result<Option<(PathBuf, String)>, String> {
    let xdg = std::env::var("XDG_CACHE_HOME").ok();
    let home = std::env::var("HOME").ok();
    let cache = linux7::cache_dir(xdg.as_deref(), home.as_deref());
    qemu_of(kernel, &crate::build::image::repo_root(), cache.as_deref())
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
            let dir = crate::build::image::repo_root()
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
