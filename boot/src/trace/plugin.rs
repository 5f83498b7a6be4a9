//! Which build of the trace plugin a QEMU loads, and building it: plugin API v1 for QEMU 7.x
//! (the host's), v4 for QEMU 10.0 (the Linux 6.1 twin's det boots, linux/qemu10.sh), each in
//! its own cargo target folder so that one build never replaces the other.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// The plugin API a build speaks (trace/Cargo.toml's features `api-v1`, `api-v4`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PluginApi {
    V1,
    V4,
}

impl PluginApi {
    fn feature(self) -> &'static str {
        match self {
            PluginApi::V1 => "api-v1",
            PluginApi::V4 => "api-v4",
        }
    }
}

/// The QEMU version in `qemu --version`'s first line ("QEMU emulator version 10.0.13 (...)").
pub fn parse_version(text: &str) -> Option<(u32, u32)> {
    let rest = text.lines().next()?.split("version ").nth(1)?;
    let mut parts = rest.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// The API a QEMU of `version` loads, or why none of the plugin's builds fits it.
pub fn api_for(version: (u32, u32)) -> Result<PluginApi, String> {
    match version {
        (7, _) => Ok(PluginApi::V1),
        (10, 0) => Ok(PluginApi::V4),
        (major, minor) => Err(format!(
            "--trace: the trace plugin is built for QEMU 7.x (plugin API v1) and QEMU 10.0 \
             (API v4); this QEMU is {major}.{minor}"
        )),
    }
}

static VERSIONS: Mutex<Option<HashMap<PathBuf, PluginApi>>> = Mutex::new(None);

/// The plugin API of the QEMU at `qemu` (asked once per path: `qemu --version`).
pub fn api_of(qemu: &Path) -> Result<PluginApi, String> {
    let mut cache = VERSIONS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(api) = cache.as_ref().and_then(|m| m.get(qemu)) {
        return Ok(*api);
    }
    let out = Command::new(qemu)
        .arg("--version")
        .output()
        .map_err(|e| format!("--trace: cannot run {} --version: {e}", qemu.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let version = parse_version(&text).ok_or_else(|| {
        format!(
            "--trace: {} --version printed no QEMU version ({})",
            qemu.display(),
            text.trim()
        )
    })?;
    let api = api_for(version)?;
    cache
        .get_or_insert_with(HashMap::new)
        .insert(qemu.to_path_buf(), api);
    Ok(api)
}

static BUILT: Mutex<Option<HashMap<PluginApi, PathBuf>>> = Mutex::new(None);

/// The host target folder cargo builds into (CARGO_TARGET_DIR, else the checkout's target/).
fn host_target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::build::image::repo_root().join("target"))
}

/// Where the build of `api` goes: v1 in the workspace's own target folder (as `cargo build -p
/// numalab-trace --release` puts it), v4 in `plugin-api-v4/` under it.
pub fn target_dir(api: PluginApi) -> PathBuf {
    match api {
        PluginApi::V1 => host_target_dir(),
        PluginApi::V4 => host_target_dir().join("plugin-api-v4"),
    }
}

/// Builds the plugin for `api` (once per process) and returns its path.
pub fn build(api: PluginApi) -> Result<PathBuf, String> {
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = built.as_ref().and_then(|m| m.get(&api)) {
        return Ok(p.clone());
    }
    crate::progress::println(&format!(
        "numalab: building the trace plugin (trace/, release, {})",
        api.feature()
    ));
    let dir = target_dir(api);
    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cargo.current_dir(crate::build::image::repo_root()).args([
        "build",
        "--quiet",
        "--release",
        "-p",
        "numalab-trace",
    ]);
    if api != PluginApi::V1 {
        cargo
            .args(["--no-default-features", "--features", api.feature()])
            .arg("--target-dir")
            .arg(&dir);
    }
    let status = cargo
        .status()
        .map_err(|e| format!("--trace: cannot run cargo to build the plugin: {e}"))?;
    if !status.success() {
        return Err(format!("--trace: the plugin did not build ({status})"));
    }
    let path = dir.join("release").join("libnumalab_trace.so");
    if !path.is_file() {
        return Err(format!(
            "--trace: the plugin build left no {}",
            path.display()
        ));
    }
    built
        .get_or_insert_with(HashMap::new)
        .insert(api, path.clone());
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_pick_their_api() {
        let v = |t: &str| parse_version(t).unwrap();
        assert_eq!(
            v("QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18)\nCopyright"),
            (7, 2)
        );
        assert_eq!(
            v("QEMU emulator version 10.0.13 (Debian 1:10.0.13+ds-0+deb13u1)"),
            (10, 0)
        );
        assert_eq!(parse_version("qemu-system-x86_64: oops"), None);
        assert_eq!(api_for((7, 2)), Ok(PluginApi::V1));
        assert_eq!(api_for((10, 0)), Ok(PluginApi::V4));
        let e = api_for((11, 1)).unwrap_err();
        assert!(e.contains("this QEMU is 11.1"), "{e}");
        assert!(api_for((8, 2)).is_err());
    }

    #[test]
    fn the_two_builds_never_share_a_folder() {
        assert_ne!(target_dir(PluginApi::V1), target_dir(PluginApi::V4));
        assert!(target_dir(PluginApi::V4).starts_with(target_dir(PluginApi::V1)));
    }
}
