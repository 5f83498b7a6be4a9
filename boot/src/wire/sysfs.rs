//! The sysfs block of a boot's log as a tree (the files of /sys/kernel/slab and the text of
//! /proc/slabinfo), from the block's lines as numalab_algo::wire::sysfs read them; run/sysfs.rs
//! writes it under the run's folder.

use numalab_algo::slub::sysfs::{name_ok, SYSFS_END};
use numalab_algo::wire::sysfs::SysfsLine;
use std::collections::BTreeSet;

/// One block: every file of every cache, and the /proc/slabinfo text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SlabTree {
    /// (cache, attribute, text without the final newline), in the kernel's order.
    pub files: Vec<(String, String, String)>,
    /// /proc/slabinfo, each line ending in '\n'.
    pub slabinfo: String,
    /// Caches the kernel snapshotted (`caches=` of the BEGIN line).
    pub caches: usize,
}

impl SlabTree {
    /// The text of one file (without its final newline).
    pub fn get(&self, cache: &str, attr: &str) -> Option<&str> {
        self.files
            .iter()
            .find(|(c, a, _)| c == cache && a == attr)
            .map(|(_, _, t)| t.as_str())
    }

    /// The caches that have a directory, in the kernel's order.
    pub fn cache_names(&self) -> Vec<&str> {
        let mut seen = BTreeSet::new();
        self.files
            .iter()
            .filter(|(c, _, _)| seen.insert(c.as_str()))
            .map(|(c, _, _)| c.as_str())
            .collect()
    }
}

fn attr_ok(attr: &str) -> bool {
    !attr.is_empty()
        && attr
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// The tree of one block's lines as `numalab_algo::wire::sysfs` read them (each with its
/// text), from the BEGIN line on. A block that does not end, a line that cannot be a file, a
/// file given twice, or a cache count that differs from BEGIN's is an error naming the line.
pub fn tree_of(lines: &[(&str, SysfsLine<'_>)]) -> Result<SlabTree, String> {
    let Some(&(begin, SysfsLine::Begin(words))) = lines.first() else {
        return Err("sysfs block: no BEGIN line".to_string());
    };
    let caches =
        SysfsLine::caches(words).ok_or_else(|| format!("sysfs block: bad BEGIN line '{begin}'"))?;
    let mut tree = SlabTree {
        caches,
        ..SlabTree::default()
    };
    let mut seen = BTreeSet::new();
    let mut skipped = 0usize;
    for &(line, kind) in &lines[1..] {
        match kind {
            SysfsLine::End => {
                let dirs = tree.cache_names().len();
                if dirs + skipped != caches {
                    return Err(format!(
                        "sysfs block: BEGIN says caches={caches} but it has {dirs} caches and {skipped} skipped"
                    ));
                }
                return Ok(tree);
            }
            SysfsLine::Slabinfo(text) => {
                tree.slabinfo.push_str(text);
                tree.slabinfo.push('\n');
            }
            SysfsLine::Skipped => skipped += 1,
            SysfsLine::File { path, text } => {
                let bad = || format!("sysfs block: not a CACHE/ATTR line: '{line}'");
                let (cache, attr) = path.split_once('/').ok_or_else(bad)?;
                if !name_ok(cache) || !attr_ok(attr) {
                    return Err(bad());
                }
                if !seen.insert((cache.to_string(), attr.to_string())) {
                    return Err(format!("sysfs block: {cache}/{attr} given twice"));
                }
                tree.files
                    .push((cache.to_string(), attr.to_string(), text.to_string()));
            }
            // A second BEGIN starts the block anew (the caller passes the last one's lines).
            SysfsLine::Begin(_) => {}
        }
    }
    Err(format!(
        "sysfs block: '{begin}' without '{SYSFS_END}' (the log ends first)"
    ))
}
