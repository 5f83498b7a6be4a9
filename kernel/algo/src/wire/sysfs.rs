//! The sysfs block's console lines (written by crate::slub::sysfs, cut out of the log by the
//! host and written as run/sys/kernel/slab and run/proc/slabinfo):
//!
//! ```text
//! # sysfs: BEGIN caches=2
//! # sysfs: kmalloc-64/object_size 64
//! # sysfs: skipped bad name
//! # proc/slabinfo: slabinfo - version: 2.1
//! # sysfs: END
//! ```

/// Prefix of the block's sysfs lines (and of its BEGIN and END lines).
pub const SYSFS_PREFIX: &str = "# sysfs: ";
/// Prefix of the block's /proc/slabinfo lines.
pub const PROC_SLABINFO_PREFIX: &str = "# proc/slabinfo: ";
/// The block's first line starts with this (`caches=N` follows).
pub const SYSFS_BEGIN: &str = "# sysfs: BEGIN";
/// The block's last line.
pub const SYSFS_END: &str = "# sysfs: END";
/// What follows [`SYSFS_PREFIX`] on the line of a cache left out (its name cannot be a folder).
pub const SKIPPED: &str = "skipped ";

/// A sysfs block line read back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SysfsLine<'a> {
    /// `# sysfs: BEGIN ...`: what follows BEGIN, trimmed (`caches=N`).
    Begin(&'a str),
    End,
    /// `# sysfs: skipped ...`.
    Skipped,
    /// `# sysfs: PATH TEXT`: the path (`CACHE/ATTR`, unchecked) and the file's text.
    File {
        path: &'a str,
        text: &'a str,
    },
    /// `# proc/slabinfo: LINE`.
    Slabinfo(&'a str),
}

impl SysfsLine<'_> {
    /// The cache count of a BEGIN line's text.
    pub fn caches(begin: &str) -> Option<usize> {
        begin.strip_prefix("caches=")?.parse().ok()
    }
}

/// Reads one console line (a trailing `\r` ignored); None when it is not a block line.
pub fn parse(line: &str) -> Option<SysfsLine<'_>> {
    let line = line.trim_end_matches(['\r', '\n']);
    if line == SYSFS_END {
        Some(SysfsLine::End)
    } else if let Some(r) = line.strip_prefix(SYSFS_BEGIN) {
        Some(SysfsLine::Begin(r.trim()))
    } else if let Some(text) = line.strip_prefix(PROC_SLABINFO_PREFIX) {
        Some(SysfsLine::Slabinfo(text))
    } else {
        let rest = line.strip_prefix(SYSFS_PREFIX)?;
        if rest.starts_with(SKIPPED) {
            return Some(SysfsLine::Skipped);
        }
        let (path, text) = rest.split_once(' ').unwrap_or((rest, ""));
        Some(SysfsLine::File { path, text })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_block_line_reads_back() {
        let cases = [
            ("# sysfs: BEGIN caches=2", SysfsLine::Begin("caches=2")),
            ("# sysfs: END\r", SysfsLine::End),
            ("# sysfs: skipped bad name", SysfsLine::Skipped),
            (
                "# sysfs: kmalloc-64/slabs 3 N0=1",
                SysfsLine::File {
                    path: "kmalloc-64/slabs",
                    text: "3 N0=1",
                },
            ),
            (
                "# sysfs: kmalloc-64/ctor",
                SysfsLine::File {
                    path: "kmalloc-64/ctor",
                    text: "",
                },
            ),
            (
                "# proc/slabinfo: slabinfo - version: 2.1",
                SysfsLine::Slabinfo("slabinfo - version: 2.1"),
            ),
        ];
        for (line, want) in cases {
            assert_eq!(parse(line), Some(want), "{line}");
        }
        assert_eq!(SysfsLine::caches("caches=2"), Some(2));
        assert_eq!(parse("# sysfsx: a"), None);
        // The writer's lines (crate::slub::sysfs) are covered by slub/sysfs_tests.rs through
        // the host's reader of the whole block.
    }
}
