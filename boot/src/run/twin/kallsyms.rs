//! Linux's data symbols where Debian's System.map is a stub. Debian ships
//! `/boot/System.map-RELEASE` (and 7.x's `/usr/lib/modules/RELEASE/System.map`) as one line,
//! "The real System.map is in the linux-image-RELEASE-dbg package" (6.1's is 858555196 bytes:
//! `apt-cache show linux-image-6.1.0-57-amd64-dbg`). Its kernels have CONFIG_KALLSYMS_ALL, so the kernel itself knows its data symbols:
//! the runner boots it once, untraced, with `nokaslr` (so /proc/kallsyms shows link-time
//! addresses, as System.map) and an initramfs of its own whose init copies the data lines of
//! /proc/kallsyms to a second serial port, a file; the result is cached beside the twin's
//! build as `System.map-RELEASE` (text in System.map's format, read by trace/sysmap.rs).

use crate::qemu::LinuxBoot;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The init of the symbol boot: the lines of /proc/kallsyms from the end of the kernel's text
/// on (`_etext`: data, bss, init; not the modules', of four words; every type, as 7.3 types
/// some data `T`: sysmap.rs) to ttyS1, then out through isa-debug-exit.
const INIT: &str = "#!/bin/busybox sh
/bin/busybox mkdir -p /proc /dev
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t devtmpfs devtmpfs /dev
e=$(/bin/busybox grep ' _etext$' /proc/kallsyms | /bin/busybox cut -d' ' -f1)
/bin/busybox awk -v e=\"$e\" 'NF == 3 && length($1) == 16 && $1 >= e' /proc/kallsyms > /dev/ttyS1
echo '# kallsyms: done'
printf '\\000' | /bin/busybox dd of=/dev/port bs=1 seek=244 count=1 2>/dev/null
/bin/busybox poweroff -f
";

/// Seconds the symbol boot may take.
const TIMEOUT_S: u32 = 300;

/// Where the symbols of `linux` are cached: `dir`/System.map-RELEASE.
pub fn cache_path(dir: &Path, linux: &LinuxBoot) -> PathBuf {
    dir.join(format!("System.map-{}", linux.release))
}

/// The System.map text of `linux` from the cache in `dir`, made by a symbol boot under `qemu`
/// when missing. Err: one line saying why there is none.
pub fn system_map(dir: &Path, linux: &LinuxBoot, qemu: &Path) -> Result<String, String> {
    let path = cache_path(dir, linux);
    if let Ok(text) = std::fs::read_to_string(&path) {
        if crate::trace::sysmap::symbols(&text).is_ok() {
            return Ok(text);
        }
    }
    crate::progress::println(&format!(
        "numalab: --trace: Debian's System.map of {} is a stub: reading the kernel's own /proc/kallsyms in a symbol boot (nokaslr, cached as {})",
        linux.release,
        path.display()
    ));
    let work = dir.join(format!("kallsyms.{}", std::process::id()));
    let result = symbol_boot(&work, linux, qemu);
    let _ = std::fs::remove_dir_all(&work);
    let text = result?;
    crate::trace::sysmap::symbols(&text)
        .map_err(|e| format!("the symbol boot's /proc/kallsyms: {e}"))?;
    std::fs::write(&path, &text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(text)
}

/// Boots `linux` with the symbol init in `work`; returns what it wrote to ttyS1 (CR dropped).
fn symbol_boot(work: &Path, linux: &LinuxBoot, qemu: &Path) -> Result<String, String> {
    let tree = work.join("tree");
    std::fs::create_dir_all(tree.join("bin"))
        .map_err(|e| format!("cannot create {}: {e}", tree.display()))?;
    let busybox = ["/bin/busybox", "/usr/bin/busybox"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .ok_or("busybox not found (./qemu-run.sh setup installs busybox-static)")?;
    std::fs::copy(&busybox, tree.join("bin/busybox"))
        .map_err(|e| format!("cannot copy busybox: {e}"))?;
    std::fs::write(tree.join("init"), INIT).map_err(|e| format!("cannot write init: {e}"))?;
    let cpio = work.join("initramfs.cpio");
    super::module::run_cmd(
        Command::new("sh")
            .arg("-c")
            .arg(format!(
                "chmod 755 init bin/busybox && find . | cpio -o -H newc --quiet > '{}'",
                cpio.display()
            ))
            .current_dir(&tree),
        "cpio (the symbol boot's initramfs)",
    )?;
    let out = work.join("kallsyms.txt");
    let log = work.join("console.txt");
    let status = Command::new("timeout")
        .arg(TIMEOUT_S.to_string())
        .arg(qemu)
        .args([
            "-display",
            "none",
            "-net",
            "none",
            "-no-reboot",
            "-monitor",
            "none",
        ])
        .args(["-m", "1024M", "-smp", "1"])
        .arg("-serial")
        .arg(format!("file:{}", log.display()))
        .arg("-serial")
        .arg(format!("file:{}", out.display()))
        .args(["-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"])
        .arg("-kernel")
        .arg(&linux.vmlinuz)
        .arg("-initrd")
        .arg(&cpio)
        .arg("-append")
        .arg("console=ttyS0 panic=-1 nokaslr")
        .status()
        .map_err(|e| format!("cannot run {}: {e}", qemu.display()))?;
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    if text.trim().is_empty() {
        let console = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = console.lines().rev().take(3).collect();
        return Err(format!(
            "the symbol boot wrote no symbols (QEMU {status}; console ends: {})",
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        ));
    }
    Ok(text.replace('\r', ""))
}
