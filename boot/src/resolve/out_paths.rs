//! Paths checked before anything is built or booted: a `--log` that
//! names an input of the run (the `--machine` source, `--qemu`, `--hugepages`, a file named
//! in the QEMU arguments) or lies in a folder that does not exist or cannot be written, and a
//! `--hugepages` folder that is not a hugetlbfs mount. Each refusal is one line (exit 2) and
//! nothing is written.

use crate::cli::Request;
use crate::resolve::user_path::{same_or_inside, writable_problem};
use std::path::{Path, PathBuf};

/// The first problem of `request`'s `--log` or `--hugepages`, if any.
pub fn problem(request: &Request) -> Option<String> {
    let (log, m) = match request {
        Request::Sweep(s) => return sweep_args_problem(&s.bench_args),
        Request::Main(o) | Request::Run(o) => (o.log.as_deref(), &o.machine),
        Request::Soak(s) => (s.log.as_deref(), &s.machine),
        Request::Bench(b) => (None, &b.machine),
        Request::Topology(_) | Request::Merge(_) => return None,
    };
    let (hugepages, qemu, args, source) = (
        m.hugepages.clone(),
        m.qemu.clone(),
        m.qemu_args.clone(),
        m.machine.clone(),
    );
    if let Some(dir) = &hugepages {
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        if let Some(why) = hugetlbfs_problem(dir, &mounts) {
            return Some(why);
        }
    }
    let log = log?;
    let mut inputs: Vec<(String, PathBuf)> = Vec::new();
    if let Some(s) = source {
        inputs.push(("the --machine source".into(), s));
    }
    if let Some(q) = qemu.filter(|q| q.components().count() > 1) {
        inputs.push(("the --qemu program".into(), q));
    }
    if let Some(h) = hugepages {
        inputs.push(("the --hugepages folder".into(), h));
    }
    for p in paths_in_args(&args) {
        inputs.push((format!("{} (named in the QEMU arguments)", p.display()), p));
    }
    log_problem(log, &inputs)
}

/// Why a sweep's BENCH ARGS would fail every job (a bad option there is
/// refused before any job runs): a `--cost-model` that is no preset and no readable cost
/// model file (a FIFO is not read), a `--hugepages` that is not a hugetlbfs mount. The
/// paths are the caller's (resolve made them absolute); words after `--` are QEMU's.
pub fn sweep_args_problem(args: &[String]) -> Option<String> {
    let mut words = args.iter().take_while(|w| *w != "--");
    while let Some(w) = words.next() {
        let (flag, value) = match w.split_once('=') {
            Some((f, v)) => (f, Some(v.to_string())),
            None => (w.as_str(), None),
        };
        if flag != "--cost-model" && flag != "--hugepages" {
            continue;
        }
        let Some(value) = value.or_else(|| words.next().cloned()) else {
            continue;
        };
        let why = if flag == "--cost-model" {
            crate::costs::presets::resolve(&value).err()
        } else {
            let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
            hugetlbfs_problem(Path::new(&value), &mounts)
        };
        if let Some(why) = why {
            return Some(format!("sweep: BENCH ARGS: {why}"));
        }
    }
    None
}

/// Why `log` cannot be the serial log's file: it is a folder, its folder is missing or
/// cannot be written, or it is (or lies inside) one of `inputs` (what, path).
pub fn log_problem(log: &Path, inputs: &[(String, PathBuf)]) -> Option<String> {
    let shown = log.display();
    if log.is_dir() {
        return Some(format!("--log {shown}: is a folder, not a file"));
    }
    if let Some((what, _)) = inputs.iter().find(|(_, p)| same_or_inside(log, p)) {
        return Some(format!(
            "--log {shown}: is {what}, or lies inside it: the log would overwrite an input"
        ));
    }
    let parent = log
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    match std::fs::metadata(parent) {
        Ok(m) if m.is_dir() => writable_problem(parent)
            .map(|e| format!("--log {shown}: cannot write in {}: {e}", parent.display())),
        Ok(_) => Some(format!(
            "--log {shown}: {} is a file, not a folder",
            parent.display()
        )),
        Err(_) => Some(format!(
            "--log {shown}: the folder {} does not exist (the log is not written until the run \
             ends: make the folder first)",
            parent.display()
        )),
    }
}

/// Paths named by the QEMU arguments that exist: whole words, and the values of their
/// `key=value` parts (`-acpitable file=T`, `mem-path=DIR`).
fn paths_in_args(args: &[String]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for w in args {
        let parts = std::iter::once(w.as_str()).chain(w.split(',').filter_map(|p| {
            let (_, v) = p.split_once('=')?;
            Some(v)
        }));
        for p in parts {
            let path = Path::new(p);
            if p.contains('/') && path.exists() && !out.iter().any(|o: &PathBuf| o == path) {
                out.push(path.to_path_buf());
            }
        }
    }
    out
}

/// The mount `path` lies on, from the text of /proc/self/mountinfo: (mount point, file
/// system type) of the longest mount point that is `path` or a folder above it.
pub fn mount_of(mountinfo: &str, path: &Path) -> Option<(PathBuf, String)> {
    let mut best: Option<(PathBuf, String)> = None;
    for line in mountinfo.lines() {
        // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let (Some(point), Some(fstype)) = (left.split(' ').nth(4), right.split(' ').next()) else {
            continue;
        };
        let point = PathBuf::from(unescape(point));
        let longer = best
            .as_ref()
            .is_none_or(|(b, _)| point.as_os_str().len() >= b.as_os_str().len());
        if path.starts_with(&point) && longer {
            best = Some((point, fstype.to_string()));
        }
    }
    best
}

/// mountinfo's octal escapes (`\040` for a blank) undone.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Why `dir` cannot back the guest's memory with huge pages: it does not exist, is not a
/// folder, or is not a hugetlbfs mount (QEMU's `mem-path` there would be ordinary files: no
/// huge page, and the guest's RAM written to that disk).
pub fn hugetlbfs_problem(dir: &Path, mountinfo: &str) -> Option<String> {
    let shown = dir.display();
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Some(format!(
                "--hugepages {shown}: is a file, not a hugetlbfs mount"
            ))
        }
        Err(e) => {
            return Some(format!(
                "--hugepages {shown}: {}",
                crate::machine::io_problem(&e)
            ))
        }
    }
    let real = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    match mount_of(mountinfo, &real) {
        Some((_, t)) if t == "hugetlbfs" => None,
        Some((point, t)) => Some(format!(
            "--hugepages {shown}: not a hugetlbfs mount ({} is {t}, mounted at {}): mount one \
             with 'mount -t hugetlbfs none DIR'",
            real.display(),
            point.display()
        )),
        None => Some(format!(
            "--hugepages {shown}: not a hugetlbfs mount (no mount of it in /proc/self/mountinfo)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
23 22 0:22 / /proc rw,nosuid - proc proc rw
24 22 0:23 / /dev/hugepages rw,relatime shared:9 - hugetlbfs hugetlbfs rw,pagesize=2M
25 22 0:24 / /mnt/huge\\040pages rw - hugetlbfs none rw
26 22 0:25 / /dev/hugepages2 rw - tmpfs none rw
";

    #[test]
    fn the_mount_of_a_path_is_its_longest_mount_point() {
        let m = |p: &str| mount_of(MOUNTINFO, Path::new(p)).map(|(_, t)| t);
        assert_eq!(m("/dev/hugepages").as_deref(), Some("hugetlbfs"));
        assert_eq!(m("/dev/hugepages/x").as_deref(), Some("hugetlbfs"));
        assert_eq!(m("/dev/hugepages2").as_deref(), Some("tmpfs"));
        assert_eq!(m("/mnt/huge pages").as_deref(), Some("hugetlbfs"));
        assert_eq!(m("/tmp").as_deref(), Some("ext4"));
        assert_eq!(m("/proc/self").as_deref(), Some("proc"));
    }

    #[test]
    fn hugepages_on_another_file_system_is_refused() {
        let d = std::env::temp_dir();
        let e = hugetlbfs_problem(&d, MOUNTINFO).unwrap();
        assert!(
            e.contains("not a hugetlbfs mount") && e.contains("is ext4"),
            "{e}"
        );
        let e = hugetlbfs_problem(&d.join("numalab-no-such-folder"), MOUNTINFO).unwrap();
        assert!(e.contains("No such file"), "{e}");
    }

    #[test]
    fn a_log_over_an_input_or_in_a_missing_folder_is_refused() {
        let d = std::env::temp_dir().join(format!("numalab-out-paths-{}", std::process::id()));
        std::fs::create_dir_all(d.join("tables")).unwrap();
        let src = d.join("box.numactl");
        std::fs::write(&src, "x").unwrap();
        let inputs = vec![
            ("the --machine source".to_string(), src.clone()),
            ("the tables".to_string(), d.join("tables")),
        ];
        let e = log_problem(&d.join("./box.numactl"), &inputs).unwrap();
        assert!(e.contains("is the --machine source"), "{e}");
        let e = log_problem(&d.join("tables/run.log"), &inputs).unwrap();
        assert!(e.contains("is the tables, or lies inside it"), "{e}");
        let e = log_problem(&d.join("missing/run.log"), &inputs).unwrap();
        assert!(e.contains("does not exist"), "{e}");
        let e = log_problem(&d.join("tables"), &[]).unwrap();
        assert!(e.contains("is a folder"), "{e}");
        assert_eq!(log_problem(&d.join("run.log"), &inputs), None);
        assert_eq!(
            paths_in_args(&[
                "-acpitable".into(),
                format!("sig=SRAT,file={}", src.display())
            ]),
            vec![src.clone()]
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}
