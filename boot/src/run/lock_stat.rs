//! RUN/proc/lock_stat: the lock_stat table a boot printed after its bench suite (`# lock_stat:`
//! lines, kernel/src/bench/lock_stat.rs), as its BootLog cut it out of the serial log, checked with
//! numalab_algo's reader and written as Linux's /proc/lock_stat would read: `proc/lock_stat`
//! from the first `tsc` boot (host time, holds timed), `proc/lock_stat.det` from the `det`
//! boot (instructions, holds timed), `proc/lock_stat.icount` (one CPU, holds not timed:
//! acquisitions only) and `proc/lock_stat.uma` likewise, when those boots ran.

use super::BootRun;
use crate::bench::Boot;
use numalab_algo::formats::lock_stat::{self, LockStat};
use std::path::{Path, PathBuf};

/// The last lock_stat block of `log` as its own text (lines without the prefix, `\n` after
/// each), or None when the log has none (the [`BootLog`](crate::wire::BootLog)'s).
pub fn extract(log: &str) -> Option<String> {
    crate::wire::BootLog::parse(log).lock_stat
}

/// The block of `log` read back (None: no block; Err: a block that does not parse).
pub fn parse_log(log: &str) -> Option<Result<LockStat, String>> {
    extract(log).map(|t| lock_stat::parse(&t))
}

/// The file a boot's table goes to.
pub fn file_name(boot: Boot) -> String {
    match boot {
        Boot::Tsc => "lock_stat".to_string(),
        other => format!("lock_stat.{}", other.name()),
    }
}

/// Writes `run/proc/lock_stat*` from the first boot of each kind whose log has a table;
/// returns the files written. A table that does not parse is an error naming the boot.
pub fn write_proc(run: &Path, boots: &[BootRun]) -> Result<Vec<PathBuf>, String> {
    let mut written = Vec::new();
    let mut done: Vec<Boot> = Vec::new();
    for b in boots {
        if done.contains(&b.boot) {
            continue;
        }
        let Some(text) = b.outcome.boot_log.lock_stat.clone() else {
            continue;
        };
        lock_stat::parse(&text)
            .map_err(|e| format!("{} boot: lock_stat block: {e}", b.boot.name()))?;
        let dir = run.join("proc");
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let path = dir.join(file_name(b.boot));
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        done.push(b.boot);
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_algo::formats::lock_stat::{LockCounts, LockStatRow, Unit};

    fn table() -> Vec<String> {
        let c = LockCounts {
            contentions: 2,
            wait_min: 5,
            wait_max: 9,
            wait_total: 14,
            acquisitions: 10,
            ..LockCounts::default()
        };
        let rows = [
            LockStatRow::new("kmalloc-64:&n->list_lock", Some(1), &c),
            LockStatRow::new("free_vmap_area_lock", None, &LockCounts::default()),
        ];
        lock_stat::write(&rows, Unit::Instructions, false)
    }

    fn as_log(lines: &[String]) -> String {
        lines
            .iter()
            .map(|l| format!("{}\n", numalab_algo::wire::lock_stat::line(l)))
            .collect()
    }

    #[test]
    fn cuts_the_block_out_of_a_log() {
        let t = table();
        let log = format!("ok 9 bench\n{}# Totals: pass:3\n", as_log(&t));
        let text = extract(&log).unwrap();
        assert_eq!(text, format!("{}\n", t.join("\n")));
        let parsed = parse_log(&log).unwrap().unwrap();
        assert_eq!(parsed.rows.len(), 2);
        let row = parsed.row("kmalloc-64:&n->list_lock/1").unwrap();
        assert_eq!(row.get("contentions"), Some(2));
        assert_eq!(row.get("waittime-avg"), Some(7));
        assert!(extract("ok 1 x\n# other: line\n").is_none());
    }

    #[test]
    fn the_last_block_wins_and_a_cut_block_is_an_error() {
        let t = table();
        let mut second = t.clone();
        second.truncate(7);
        let log = format!("{}x\n{}", as_log(&t), as_log(&second));
        let parsed = parse_log(&log).unwrap().unwrap();
        assert_eq!(parsed.rows.len(), 1);
        let mut bad = t;
        bad[6].truncate(60);
        let e = parse_log(&as_log(&bad)).unwrap().unwrap_err();
        assert!(e.contains("line 7"), "{e}");
    }

    #[test]
    fn the_runner_turns_lock_stat_on_except_in_the_icount_boot() {
        let args = |w: &[&str]| {
            let words: Vec<String> = w.iter().map(|s| s.to_string()).collect();
            super::super::parse(&words).unwrap()
        };
        let sets = |a: &super::super::BenchArgs, boot| {
            super::super::plan::boot_config(a, boot, 0)
                .unwrap()
                .kernel
                .options
                .words()
        };
        let smoke = args(&["--smoke"]);
        for (boot, on) in [(Boot::Tsc, true), (Boot::Det, true), (Boot::Icount, false)] {
            let s = sets(&smoke, boot);
            assert_eq!(s.iter().any(|w| w == "lock_stat=1"), on, "{boot:?}: {s:?}");
            assert_eq!(
                s.iter().filter(|w| w.starts_with("lock_stat=")).count(),
                on as usize
            );
        }
        // The user's own word wins.
        let off = args(&["--smoke", "--set", "lock_stat=0"]);
        let s = sets(&off, Boot::Tsc);
        assert_eq!(
            s.iter()
                .filter(|w| w.starts_with("lock_stat="))
                .collect::<Vec<_>>(),
            ["lock_stat=0"]
        );
    }

    #[test]
    fn file_names_by_boot() {
        assert_eq!(file_name(Boot::Tsc), "lock_stat");
        assert_eq!(file_name(Boot::Det), "lock_stat.det");
        assert_eq!(file_name(Boot::Icount), "lock_stat.icount");
    }
}
