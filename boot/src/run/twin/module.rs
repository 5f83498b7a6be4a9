//! The twin's kernel module: the installed Linux release (image in /boot, headers in
//! /lib/modules) and numalab_twin.ko built against its headers (kbuild, `make M=`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `cmd`; its output is the error when it fails.
pub(crate) fn run_cmd(cmd: &mut Command, what: &str) -> Result<(), String> {
    let out = cmd
        .output()
        .map_err(|e| format!("Linux twin: cannot run {what}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "Linux twin: {what} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The newest installed kernel that has its image in /boot and its headers in
/// /lib/modules/RELEASE/build (what `./qemu-run.sh setup` installs).
pub fn installed_release() -> Result<(String, PathBuf), String> {
    let mut releases: Vec<String> = std::fs::read_dir("/boot")
        .map_err(|e| format!("Linux twin: cannot read /boot: {e}"))?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_prefix("vmlinuz-")
                .map(String::from)
        })
        .filter(|r| Path::new("/lib/modules").join(r).join("build").is_dir())
        .collect();
    releases.sort();
    let release = releases.pop().ok_or(
        "Linux twin: no /boot/vmlinuz-RELEASE with headers in /lib/modules/RELEASE/build \
         (./qemu-run.sh setup installs linux-image-amd64 and linux-headers-amd64)",
    )?;
    let vmlinuz = PathBuf::from(format!("/boot/vmlinuz-{release}"));
    Ok((release, vmlinuz))
}

/// Copies `from` to `to` unless `to` already has the same bytes (so make sees unchanged
/// sources as unchanged and does not rebuild).
fn sync_file(from: &Path, to: &Path) -> Result<(), String> {
    let new = std::fs::read(from).map_err(|e| format!("cannot read {}: {e}", from.display()))?;
    if std::fs::read(to).ok().as_deref() != Some(new.as_slice()) {
        std::fs::write(to, &new).map_err(|e| format!("cannot write {}: {e}", to.display()))?;
    }
    Ok(())
}

/// The files of the checkout's linux/twin (Kbuild, Makefile, the harness, one file per
/// experiment, headers), sorted: what a module build copies.
pub fn twin_files(root: &Path) -> Result<Vec<String>, String> {
    let dir = root.join("linux/twin");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| format!("Linux twin: cannot read {}: {e}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().to_str().map(String::from))
        .collect();
    files.sort();
    Ok(files)
}

/// The experiments linux/twin/experiments.h lists (`TWIN_EXPERIMENT(NAME, ...)` lines), in
/// its order: the module's one list (its table, its registered line, its Kbuild objects).
pub fn module_experiments(experiments_h: &str) -> Vec<String> {
    experiments_h
        .lines()
        .filter_map(|l| l.strip_prefix("TWIN_EXPERIMENT("))
        .filter_map(|rest| rest.split(',').next())
        .map(|name| name.trim().to_string())
        .collect()
}

/// Builds numalab_twin.ko from the checkout's linux/twin (copied to `out`/module) against the
/// headers of `release`; returns the module's path.
pub fn build(root: &Path, out: &Path, release: &str) -> Result<PathBuf, String> {
    let module_dir = out.join("module");
    std::fs::create_dir_all(&module_dir)
        .map_err(|e| format!("cannot create {}: {e}", module_dir.display()))?;
    for f in twin_files(root)? {
        sync_file(&root.join("linux/twin").join(&f), &module_dir.join(&f))?;
    }
    let kdir = Path::new("/lib/modules").join(release).join("build");
    run_cmd(
        Command::new("make")
            .arg("-s")
            .arg("-C")
            .arg(&kdir)
            .arg(format!("M={}", module_dir.display()))
            .arg("modules"),
        &format!(
            "make -C {} M={} modules",
            kdir.display(),
            module_dir.display()
        ),
    )?;
    Ok(module_dir.join("numalab_twin.ko"))
}

/// The Debian packages of the 6.1 twin's `release`, `package=version` each (dpkg-query; a
/// package it cannot find is left out, the boot itself needs only the files).
pub fn packages(release: &str) -> Vec<String> {
    let names = [
        format!("linux-image-{release}"),
        format!("linux-headers-{release}"),
    ];
    let out = Command::new("dpkg-query")
        .arg("-W")
        .arg("-f=${Package}=${Version}\\n")
        .args(&names)
        .output();
    out.map(|o| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(String::from)
            .collect()
    })
    .unwrap_or_default()
}
