//! Paths a user types: read against the folder the command was run from (qemu-run.sh changes
//! into the checkout and passes that folder in [`CALLER_DIR_ENV`]), compared as the files
//! they name (an output that is, or lies inside, an input), and checked as folders before
//! anything is built (an `--out` that names a file).

use std::path::{Component, Path, PathBuf};

/// The environment variable in which qemu-run.sh passes the folder it was run from.
pub const CALLER_DIR_ENV: &str = "NUMALAB_CALLER_DIR";

/// The folder the user ran the command from: qemu-run.sh's [`CALLER_DIR_ENV`] when it is an
/// absolute path, else none (the runner was started directly: its working folder is the
/// user's).
pub fn caller_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os(CALLER_DIR_ENV)?);
    dir.is_absolute().then_some(dir)
}

/// `path` as the user meant it: a relative path is read against the caller's folder.
pub fn at_caller(path: &Path) -> PathBuf {
    match caller_dir() {
        Some(dir) if path.is_relative() && !path.as_os_str().is_empty() => dir.join(path),
        _ => path.to_path_buf(),
    }
}

/// A program path (`--qemu`): a bare name is looked up in PATH and stays as it is; a path
/// with a folder in it is read against the caller's folder.
pub fn program_at_caller(path: &Path) -> PathBuf {
    if path.components().count() > 1 {
        at_caller(path)
    } else {
        path.to_path_buf()
    }
}

/// `path` made absolute, `.` and `..` folded, and the longest part of it that exists
/// resolved through its links: two spellings of one file compare equal, whether it exists
/// or not.
pub fn normalized(path: &Path) -> PathBuf {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut lexical = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                lexical.pop();
            }
            other => lexical.push(other),
        }
    }
    let mut tail = Vec::new();
    let mut head = lexical.as_path();
    loop {
        if let Ok(real) = head.canonicalize() {
            let mut out = real;
            for part in tail.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (head.parent(), head.file_name()) {
            (Some(parent), Some(name)) => {
                tail.push(name.to_os_string());
                head = parent;
            }
            _ => return lexical,
        }
    }
}

/// Whether `path` is `folder` or lies inside it (as the files they name, not as spelt).
pub fn same_or_inside(path: &Path, folder: &Path) -> bool {
    normalized(path).starts_with(normalized(folder))
}

/// Why nothing can be written in the folder `dir` (an I/O error in words), or None: a probe
/// folder is made in it and removed at once, so the answer is the file system's own
/// (permissions, a read-only mount, /proc) and nothing is left behind.
pub fn writable_problem(dir: &Path) -> Option<String> {
    // One name per call: two checks of one folder at once (a sweep's jobs, parallel tests)
    // must not take each other's probe for an unwritable folder.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let probe = dir.join(format!(".numalab-write-check-{}-{n}", std::process::id()));
    match std::fs::create_dir(&probe) {
        Ok(()) => {
            let _ = std::fs::remove_dir(&probe);
            None
        }
        Err(e) => Some(crate::machine::io_problem(&e)),
    }
}

/// Why `path` cannot be the folder an option (`flag`) names for its output: it, or a folder
/// it would be created under, is a file, or the nearest folder of it that exists cannot be
/// written (`--out /proc/x`). None when it is a folder or can be made one.
pub fn folder_problem(flag: &str, path: &Path) -> Option<String> {
    let mut p = Some(path);
    while let Some(here) = p.filter(|h| !h.as_os_str().is_empty()) {
        match std::fs::metadata(here) {
            Ok(m) if m.is_dir() => {
                return writable_problem(here).map(|e| {
                    format!(
                        "{flag} {}: cannot be written: nothing can be made in {} ({e})",
                        path.display(),
                        here.display()
                    )
                })
            }
            Ok(_) if here == path => {
                return Some(format!(
                    "{flag} {}: is a file, not a folder (it names the folder results go to)",
                    path.display()
                ))
            }
            Ok(_) => {
                return Some(format!(
                    "{flag} {}: {} is a file, not a folder, so the folder cannot be made",
                    path.display(),
                    here.display()
                ))
            }
            Err(_) => p = here.parent(),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_of_one_path_compare_equal_and_inside() {
        let d = std::env::temp_dir().join(format!("numalab-user-path-{}", std::process::id()));
        std::fs::create_dir_all(d.join("job")).unwrap();
        std::fs::write(d.join("file"), "x").unwrap();
        let job = d.join("job");
        assert!(same_or_inside(&d.join("job/./"), &job));
        assert!(same_or_inside(&d.join("job/new/deeper"), &job));
        assert!(same_or_inside(&d.join("other/../job"), &job));
        assert!(!same_or_inside(&d.join("jobs"), &job));
        assert!(!same_or_inside(&d, &job));
        assert_eq!(folder_problem("--out", &job), None);
        assert_eq!(folder_problem("--out", &d.join("new/deeper")), None);
        let e = folder_problem("--out", &d.join("file")).unwrap();
        assert!(e.contains("is a file, not a folder"), "{e}");
        let e = folder_problem("--out", &d.join("file/sub")).unwrap();
        assert!(e.contains("file is a file, not a folder"), "{e}");
        // A folder that cannot be made (under /proc), nothing left in `d` either.
        let e = folder_problem("--out", Path::new("/proc/numalab-out")).unwrap();
        assert!(e.contains("nothing can be made in /proc"), "{e}");
        assert_eq!(writable_problem(&d), None);
        assert!(!std::fs::read_dir(&d).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with(".numalab")));
        assert_eq!(
            program_at_caller(Path::new("qemu-system-x86_64")),
            PathBuf::from("qemu-system-x86_64")
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}
