//! The Linux 7 twin's installation: the kernel pinned in linux/linux7.pin, installed by
//! `./qemu-run.sh setup` (linux/linux7.sh) into a cache outside the clone, and
//! numalab_twin.ko built for it in that cache's Debian 13 build root.

use super::module::run_cmd;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One line for every "not installed" error (the run exits with status 3, as 6.1's).
const HOW: &str = "./qemu-run.sh setup installs it";

/// An installed Linux 7: its image, release (`uname -r`), packages (`package=version`) and
/// System.map (the real one, from linux-image-ABI-amd64-dbg: Debian's packages ship a stub;
/// absent on a cache that setup has not backfilled yet: the trace's names need it, nothing else).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Installed {
    pub vmlinuz: PathBuf,
    pub system_map: PathBuf,
    pub release: String,
    pub packages: Vec<String>,
}

/// The pin's ABI (`7.3.4+deb13`) from linux/linux7.pin's text (`ABI=` line; `#` comments).
pub fn pinned_abi(pin: &str) -> Result<String, String> {
    let abi = pin
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix("ABI="))
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .ok_or("Linux 7 twin: linux/linux7.pin has no ABI= line")?;
    let ok = abi
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || ".+~-".contains(c));
    if !ok || !abi.starts_with("7.") {
        return Err(format!(
            "Linux 7 twin: linux/linux7.pin names ABI '{abi}', not a 7.x Debian kernel ABI"
        ));
    }
    Ok(abi.to_string())
}

/// The cache folder linux/linux7.sh installs into: `$XDG_CACHE_HOME/numalab/linux7`, or
/// `$HOME/.cache/numalab/linux7` (`xdg`, `home`: those variables).
pub fn cache_dir(xdg: Option<&str>, home: Option<&str>) -> Option<PathBuf> {
    let base = match (xdg.filter(|x| !x.is_empty()), home) {
        (Some(x), _) => PathBuf::from(x),
        (None, Some(h)) => Path::new(h).join(".cache"),
        (None, None) => return None,
    };
    Some(base.join("numalab").join("linux7"))
}

/// The pinned Linux 7 as installed here, or one line saying it is not.
pub fn installed(root: &Path) -> Result<Installed, String> {
    let pin_path = root.join("linux/linux7.pin");
    let pin = std::fs::read_to_string(&pin_path)
        .map_err(|_| format!("Linux 7 twin: not installed (no linux/linux7.pin; {HOW})"))?;
    let abi = pinned_abi(&pin)?;
    let xdg = std::env::var("XDG_CACHE_HOME").ok();
    let home = std::env::var("HOME").ok();
    let cache = cache_dir(xdg.as_deref(), home.as_deref())
        .ok_or("Linux 7 twin: neither XDG_CACHE_HOME nor HOME is set")?;
    let dir = cache.join(&abi);
    let release = format!("{abi}-amd64");
    let vmlinuz = dir.join("vmlinuz");
    let system_map = dir.join("System.map");
    if !dir.join("ready").is_file() || !vmlinuz.is_file() {
        return Err(format!(
            "Linux 7 twin: Linux {abi} is not installed in {} ({HOW})",
            dir.display()
        ));
    }
    let packages = std::fs::read_to_string(dir.join("versions"))
        .map_err(|e| format!("Linux 7 twin: cannot read {}/versions: {e}", dir.display()))?
        .lines()
        .map(String::from)
        .collect();
    Ok(Installed {
        vmlinuz,
        system_map,
        release,
        packages,
    })
}

/// numalab_twin.ko for the pinned Linux 7 in `out` (linux/linux7.sh builds it in the build
/// root, or takes it from its cache when the module's sources are unchanged).
pub fn module(root: &Path, out: &Path) -> Result<PathBuf, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let ko = out.join("numalab_twin.ko");
    run_cmd(
        Command::new(root.join("linux/linux7.sh"))
            .arg("module")
            .arg(&ko),
        "linux/linux7.sh module",
    )?;
    Ok(ko)
}
