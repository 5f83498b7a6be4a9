//! The twin's initramfs: busybox, the checkout's linux/initramfs/init and the stripped module,
//! packed byte for byte the same in every build.

use super::module::run_cmd;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Packs the initramfs in the current folder byte for byte the same in every build (sh -c,
/// stdout is the archive). Linux unpacks it while it boots, and what it unpacks changes the
/// instructions it executes: with each build's own modification times and inode numbers,
/// every run of the same command started the module at a different point and its icount
/// figures varied (docs/linux-twin.md, "Repeatable counts"). Hence fixed modes, times (the
/// epoch), owner (root), inode numbers (`--reproducible` renumbers them) and name order.
const REPRODUCIBLE_CPIO: &str = "chmod 755 . bin bin/busybox init && chmod 644 numalab_twin.ko \
     && find . -exec touch -h -d @0 {} + \
     && find . | LC_ALL=C sort | cpio -o -H newc --quiet --reproducible --owner=0:0";

/// Packs `out`/initramfs.cpio around the module `ko`; returns its path. The file is replaced
/// only when its bytes change.
pub fn pack(root: &Path, out: &Path, ko: &Path) -> Result<PathBuf, String> {
    let busybox = ["/bin/busybox", "/usr/bin/busybox"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .ok_or("Linux twin: busybox not found (./qemu-run.sh setup installs busybox-static)")?;
    // A tree of this process's own, so that two runners building at once do not share one.
    let tree = out.join(format!("initramfs.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tree);
    std::fs::create_dir_all(tree.join("bin"))
        .map_err(|e| format!("cannot create {}: {e}", tree.display()))?;
    for (from, to) in [
        (busybox.as_path(), tree.join("bin/busybox")),
        (
            root.join("linux/initramfs/init").as_path(),
            tree.join("init"),
        ),
    ] {
        std::fs::copy(from, &to)
            .map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))?;
    }
    // The module without its debug information and build ID: both name the build folder,
    // which differs between checkouts.
    run_cmd(
        Command::new("objcopy")
            .arg("--strip-debug")
            .arg("--remove-section=.note.gnu.build-id")
            .arg(ko)
            .arg(tree.join("numalab_twin.ko")),
        "objcopy (strip numalab_twin.ko)",
    )?;
    let initramfs = out.join("initramfs.cpio");
    let fresh = out.join(format!("initramfs.cpio.{}", std::process::id()));
    run_cmd(
        Command::new("sh")
            .arg("-c")
            .arg(format!("{REPRODUCIBLE_CPIO} > '{}'", fresh.display()))
            .current_dir(&tree),
        "cpio (the initramfs)",
    )?;
    let _ = std::fs::remove_dir_all(&tree);
    // Replaced by a rename, never rewritten in place: a QEMU started from another thread or
    // process may be reading the current one.
    if std::fs::read(&fresh).ok() == std::fs::read(&initramfs).ok() {
        let _ = std::fs::remove_file(&fresh);
    } else {
        std::fs::rename(&fresh, &initramfs).map_err(|e| {
            format!(
                "cannot rename {} to {}: {e}",
                fresh.display(),
                initramfs.display()
            )
        })?;
    }
    Ok(initramfs)
}
