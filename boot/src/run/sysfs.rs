//! The kernel's `# sysfs:` block (kernel/algo/src/slub/sysfs.rs) cut out of a boot's serial
//! log and written as files Linux's tools read: `RUN/sys/kernel/slab/CACHE/ATTR` (one file per
//! attribute and SLUB stat, as mm/slub.c's sysfs has them) and `RUN/proc/slabinfo`, from the
//! run's first tsc boot (docs/slub.md#sysfs-and-procslabinfo-of-a-run).

use super::BootRun;
use crate::bench::Boot;
use numalab_algo::slub::sysfs::SYSFS_BEGIN;
use std::path::{Path, PathBuf};

pub use crate::wire::sysfs::{tree_of, SlabTree};

/// The last complete block in `log` (None: the log has no BEGIN line), as its
/// [`BootLog`](crate::wire::BootLog) read it.
pub fn parse_block(log: &str) -> Result<Option<SlabTree>, String> {
    crate::wire::BootLog::parse(log).sysfs.transpose()
}

/// Writes `tree` under `run`: run/sys/kernel/slab/CACHE/ATTR (each file its text and a
/// newline, an empty one nothing) and run/proc/slabinfo; returns the two folders written.
pub fn write_tree(tree: &SlabTree, run: &Path) -> Result<Vec<PathBuf>, String> {
    let slab = run.join("sys").join("kernel").join("slab");
    let proc = run.join("proc");
    for dir in [&slab, &proc] {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    for cache in tree.cache_names() {
        let d = slab.join(cache);
        std::fs::create_dir_all(&d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    for (cache, attr, text) in &tree.files {
        let f = slab.join(cache).join(attr);
        // Linux's empty attributes (ctor without one) are empty files, no newline.
        let body = if text.is_empty() {
            String::new()
        } else {
            format!("{text}\n")
        };
        std::fs::write(&f, body).map_err(|e| format!("cannot write {}: {e}", f.display()))?;
    }
    let f = proc.join("slabinfo");
    std::fs::write(&f, &tree.slabinfo).map_err(|e| format!("cannot write {}: {e}", f.display()))?;
    Ok(vec![slab, f])
}

/// The run's sysfs tree from its first tsc boot (repetition 0 on the run's own machine; in
/// the main job its `suite=all` boot, not the memoryless machine's that follows): nothing when
/// the run has no tsc boot or that boot did not pass; an error when it passed without a block
/// (or with a broken one).
pub fn write_run_tree(runs: &[BootRun], run: &Path) -> Result<Vec<PathBuf>, String> {
    let Some(tsc) = runs.iter().find(|r| r.boot == Boot::Tsc) else {
        return Ok(Vec::new());
    };
    if !tsc.outcome.passed() {
        return Ok(Vec::new());
    }
    match tsc.outcome.boot_log.sysfs.clone().transpose()? {
        Some(tree) => write_tree(&tree, run),
        None => Err(format!(
            "the tsc boot's log has no '{SYSFS_BEGIN}' block (bench.sysfs did not run)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "KTAP version 1\n\
        # sysfs: BEGIN caches=3\r\n\
        # sysfs: kmalloc-64/object_size 64\n\
        # sysfs: kmalloc-64/slabs 3 N0=1 N2=2\n\
        # sysfs: kmalloc-64/ctor\n\
        some other CPU's line\n\
        # sysfs: skipped bad name\n\
        # sysfs: dentry/objects 7\n\
        # proc/slabinfo: slabinfo - version: 2.1\n\
        # proc/slabinfo: kmalloc-64  10 20\n\
        # sysfs: END\n\
            ok 3 sysfs\n";

    #[test]
    fn parses_files_empty_files_and_proc_lines() {
        let t = parse_block(LOG).unwrap().unwrap();
        assert_eq!(t.caches, 3);
        assert_eq!(t.cache_names(), ["kmalloc-64", "dentry"]);
        assert_eq!(t.get("kmalloc-64", "slabs"), Some("3 N0=1 N2=2"));
        assert_eq!(t.get("kmalloc-64", "ctor"), Some(""));
        assert_eq!(t.get("dentry", "objects"), Some("7"));
        assert_eq!(t.files.len(), 4);
        assert_eq!(t.slabinfo, "slabinfo - version: 2.1\nkmalloc-64  10 20\n");
    }

    #[test]
    fn no_block_is_none_and_broken_blocks_are_errors() {
        assert_eq!(parse_block("KTAP version 1\nok 1 x\n"), Ok(None));
        let cut = &LOG[..LOG.find("# sysfs: END").unwrap()];
        assert!(parse_block(cut)
            .unwrap_err()
            .contains("without '# sysfs: END'"));
        let twice = LOG.replace("dentry/objects", "kmalloc-64/slabs");
        assert!(parse_block(&twice).unwrap_err().contains("given twice"));
        let count = LOG.replace("caches=3", "caches=4");
        assert!(parse_block(&count).unwrap_err().contains("caches=4"));
        let slash = LOG.replace("dentry/objects 7", "../etc/passwd 7");
        assert!(parse_block(&slash)
            .unwrap_err()
            .contains("not a CACHE/ATTR"));
        let noslash = LOG.replace("dentry/objects 7", "dentry 7");
        assert!(parse_block(&noslash)
            .unwrap_err()
            .contains("not a CACHE/ATTR"));
        let begin = LOG.replace("caches=3", "caches=x");
        assert!(parse_block(&begin).unwrap_err().contains("bad BEGIN"));
    }

    #[test]
    fn writes_linux_files() {
        let t = parse_block(LOG).unwrap().unwrap();
        let dir = std::env::temp_dir().join(format!("numalab-sysfs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let written = write_tree(&t, &dir).unwrap();
        assert_eq!(written.len(), 2);
        let read = |p: &str| std::fs::read_to_string(dir.join(p)).unwrap();
        assert_eq!(read("sys/kernel/slab/kmalloc-64/slabs"), "3 N0=1 N2=2\n");
        assert_eq!(read("sys/kernel/slab/kmalloc-64/ctor"), "");
        assert_eq!(read("sys/kernel/slab/dentry/objects"), "7\n");
        assert_eq!(read("proc/slabinfo"), t.slabinfo);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
