//! Builds the kernel ELF (cargo in kernel/, for x86_64-unknown-none with -Zbuild-std) and the
//! BIOS and UEFI disk images around it (bootloader 0.11.14).

use crate::build::progress::{self, BuildProgress};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Mutex;
use std::time::SystemTime;

/// Which firmware boots the image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Firmware {
    Bios,
    Uefi,
}

impl Firmware {
    pub fn name(self) -> &'static str {
        match self {
            Firmware::Bios => "bios",
            Firmware::Uefi => "uefi",
        }
    }
}

/// The repository root: the current directory when it is a numalab checkout (cargo runs
/// binaries and tests from there), else boot/.. of the checkout this binary was built in.
/// Checkouts that share one CARGO_TARGET_DIR can reuse each other's runner binary (cargo does
/// not rebuild a path package whose sources are unchanged), and the compiled-in path would then
/// build the other checkout's kernel.
pub fn repo_root() -> PathBuf {
    if let Ok(cwd) = std::env::current_dir() {
        if cwd.join("kernel/Cargo.toml").is_file() && cwd.join("boot/Cargo.toml").is_file() {
            return cwd;
        }
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("boot/ has a parent")
        .to_path_buf()
}

/// Where the kernel is built: always inside this checkout, whatever CARGO_TARGET_DIR says,
/// so two checkouts never overwrite each other's kernel.
fn kernel_target_dir() -> PathBuf {
    repo_root().join("target").join("kernel")
}

static BUILD_LOCK: Mutex<()> = Mutex::new(());

fn mtime(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// The two kernels boot/ builds. Both are built in one target folder (target/kernel) with the
/// same profile, target and flags, so core, alloc, compiler_builtins and every dependency are
/// compiled once and shared; only numalab-kernel itself is compiled per variant. Cargo
/// leaves either variant's ELF at the same path, so each is copied to its own
/// (`numalab-kernel.ktest`, `numalab-kernel.plain`) before the lock is released.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    /// With the `ktest` feature: tests, stress, benchmarks and the soak (every image).
    Ktest,
    /// No features: the production kernel, with no test code.
    Plain,
}

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::Ktest => "ktest",
            Variant::Plain => "plain",
        }
    }

    fn features(self) -> &'static [&'static str] {
        match self {
            Variant::Ktest => &["--features", "ktest"],
            Variant::Plain => &[],
        }
    }

    fn elf(self) -> PathBuf {
        kernel_target_dir().join(format!("numalab-kernel.{}", self.name()))
    }
}

/// Builds the kernel (release profile, with the `ktest` feature: tests, stress, benchmarks)
/// and returns the ELF's path.
pub fn build_kernel() -> Result<PathBuf, String> {
    build_kernel_variant(Variant::Ktest)
}

/// Where `build_kernel` leaves the kernel ELF (with its symbols; the trace's c2c table reads
/// them).
pub fn kernel_elf() -> PathBuf {
    Variant::Ktest.elf()
}

/// Builds the production kernel: no `ktest` feature, so no tests, stress, benchmarks or soak
/// in the image (the same target folder: only numalab-kernel is compiled again).
pub fn build_kernel_plain() -> Result<PathBuf, String> {
    build_kernel_variant(Variant::Plain)
}

/// Holds target/kernel/build.lock: another process (a test's nested qemu-run.sh, a sweep's
/// job) may build the other variant, and cargo's own lock ends before the copy.
struct TargetLock(std::fs::File);

impl TargetLock {
    fn take(dir: &Path) -> Result<Self, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let path = dir.join("build.lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        file.lock()
            .map_err(|e| format!("cannot lock {}: {e}", path.display()))?;
        Ok(TargetLock(file))
    }
}

impl Drop for TargetLock {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

fn build_kernel_variant(variant: Variant) -> Result<PathBuf, String> {
    let _guard = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let target_dir = kernel_target_dir();
    let _lock = TargetLock::take(&target_dir)?;
    let kernel_dir = repo_root().join("kernel");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut child = Command::new(cargo)
        .current_dir(&kernel_dir)
        .args([
            "build",
            "--release",
            "--quiet",
            "--message-format=json-render-diagnostics",
        ])
        .args(variant.features())
        .env("RUSTC_BOOTSTRAP", "1")
        .env("CARGO_TARGET_DIR", &target_dir)
        // Settings of an outer cargo (cargo test, cargo run) must not leak into the kernel.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run cargo to build the kernel: {e}"))?;
    let mut progress = BuildProgress::new(&format!("the kernel ({})", variant.name()));
    if let Some(stdout) = child.stdout.take() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        loop {
            match rx.recv_timeout(std::time::Duration::from_secs(1)) {
                Ok(line) => progress.message(&line),
                Err(RecvTimeoutError::Timeout) => progress.tick(),
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
    }
    let status = child
        .wait()
        .map_err(|e| format!("cannot wait for cargo building the kernel: {e}"))?;
    progress.finish();
    if !status.success() {
        return Err(format!(
            "kernel build failed ({status}); see the compiler output above"
        ));
    }
    let built = target_dir.join("x86_64-unknown-none/release/numalab-kernel");
    let elf = variant.elf();
    copy_if_changed(&built, &elf)?;
    Ok(elf)
}

/// Copies `from` to `to` (through a temporary file and a rename) unless `to` has the same
/// bytes: an unchanged kernel keeps its time stamp, so its images are not rebuilt.
fn copy_if_changed(from: &Path, to: &Path) -> Result<(), String> {
    let bytes = std::fs::read(from).map_err(|e| format!("cannot read {}: {e}", from.display()))?;
    if std::fs::read(to).ok().as_deref() == Some(bytes.as_slice()) {
        return Ok(());
    }
    let tmp = to.with_extension(format!("{}.tmp", std::process::id()));
    std::fs::write(&tmp, &bytes).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, to)
        .map_err(|e| format!("cannot move {} to {}: {e}", tmp.display(), to.display()))
}

/// llvm-objcopy: the one rustc's sysroot links (qemu-run.sh setup), Debian's, or on PATH.
fn objcopy() -> Option<PathBuf> {
    let candidates = [
        "/usr/lib/rustlib/x86_64-unknown-linux-gnu/bin/llvm-objcopy",
        "/usr/lib/llvm-22/bin/llvm-objcopy",
    ];
    candidates
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .or_else(|| {
            Command::new("llvm-objcopy")
                .arg("--version")
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|_| PathBuf::from("llvm-objcopy"))
        })
}

/// The kernel without its debug sections (8 MB of the 9 MB ELF), which the BIOS loader would
/// otherwise read sector by sector in real mode: under TCG that was about 45 s of every BIOS
/// boot. The loader maps only the loadable segments, so the kernel runs the same. Falls back
/// to `kernel` when no llvm-objcopy is found. The ELF with debug info stays where it was built.
fn stripped(kernel: &Path, dir: &Path) -> PathBuf {
    let out = dir.join("numalab-kernel.stripped");
    if let (Some(k), Some(o)) = (mtime(kernel), mtime(&out)) {
        if o >= k {
            return out;
        }
    }
    let Some(objcopy) = objcopy() else {
        return kernel.to_path_buf();
    };
    let ok = Command::new(objcopy)
        .arg("--strip-debug")
        .arg(kernel)
        .arg(&out)
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        out
    } else {
        kernel.to_path_buf()
    }
}

/// Builds (if older than the kernel) the disk image for `firmware` and returns its path.
pub fn build_image(kernel: &Path, firmware: Firmware) -> Result<PathBuf, String> {
    let _guard = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let dir = repo_root().join("target").join("images");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let image = dir.join(format!("numalab-{}.img", firmware.name()));
    // Rebuild when the kernel or this runner (which holds the loader stages) is newer.
    let runner = std::env::current_exe().ok().and_then(|p| mtime(&p));
    if let (Some(k), Some(i)) = (mtime(kernel), mtime(&image)) {
        if i >= k && runner.is_none_or(|r| i >= r) {
            return Ok(image);
        }
    }
    // The loader's own log is kept to warnings so the serial console starts with the kernel.
    let mut boot_config = bootloader::BootConfig::default();
    boot_config.log_level = bootloader_boot_config::LevelFilter::Warn;
    boot_config.frame_buffer_logging = false;
    progress::step(&format!("building the {} image", firmware.name()));
    let kernel = &stripped(kernel, &dir);
    // Written beside it, then renamed over it: another process (a sweep's jobs, a test's
    // nested qemu-run.sh) may be booting the old image, and keeps reading the file it opened.
    let fresh = dir.join(format!(
        "numalab-{}.img.{}.tmp",
        firmware.name(),
        std::process::id()
    ));
    let result = match firmware {
        Firmware::Bios => bootloader::BiosBoot::new(kernel)
            .set_boot_config(&boot_config)
            .create_disk_image(&fresh),
        Firmware::Uefi => bootloader::UefiBoot::new(kernel)
            .set_boot_config(&boot_config)
            .create_disk_image(&fresh),
    };
    result.map_err(|e| format!("cannot build the {} image: {e:#}", firmware.name()))?;
    std::fs::rename(&fresh, &image).map_err(|e| {
        format!(
            "cannot move {} to {}: {e}",
            fresh.display(),
            image.display()
        )
    })?;
    Ok(image)
}
