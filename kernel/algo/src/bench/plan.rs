//! Benchmark planning without hardware: which experiments `bench=` selects, BENCH name rules,
//! CPU counts for "25/50/100% of CPUs", and the once-a-second limiter of progress lines.
//!
//! The kernel's `crate::bench` wraps these with the clock and the console; the host collector
//! (boot/src/bench/record.rs) applies the same name rules when it checks the output contract.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// True for a lower_snake_case name: `[a-z][a-z0-9_]*`, no `__`, no trailing `_`.
pub fn is_snake_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_')
        && !name.contains("__")
        && !name.ends_with('_')
}

/// True for a case name: lower_snake_case words joined by `/` (e.g. `numalab/fast64`).
pub fn is_case_name(name: &str) -> bool {
    !name.is_empty() && name.split('/').all(is_snake_name)
}

/// The experiments named by the `bench=` option (comma-separated; empty = every experiment).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    names: Vec<String>,
}

impl Selection {
    /// Parses `bench=` text: `NAME[,NAME...]`, spaces ignored, empty words dropped.
    pub fn parse(text: &str) -> Selection {
        let names = text
            .split(',')
            .map(|w| w.trim())
            .filter(|w| !w.is_empty())
            .map(String::from)
            .collect();
        Selection { names }
    }

    /// The selection of these experiments (none: every experiment).
    pub fn of<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> Selection {
        Selection {
            names: names
                .into_iter()
                .map(|n| String::from(n.as_ref()))
                .collect(),
        }
    }

    /// True when nothing was named (run every experiment).
    pub fn is_all(&self) -> bool {
        self.names.is_empty()
    }

    /// Whether the experiment `name` runs.
    pub fn includes(&self, name: &str) -> bool {
        self.is_all() || self.names.iter().any(|n| n == name)
    }

    /// The names as given.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// One message per selected name that no experiment has, listing the valid names.
    pub fn unknown<'a>(&self, known: impl Iterator<Item = &'a str> + Clone) -> Vec<String> {
        self.names
            .iter()
            .filter(|n| !known.clone().any(|k| k == n.as_str()))
            .map(|n| {
                let valid: Vec<&str> = known.clone().collect();
                format!(
                    "bench: unknown experiment '{}' (valid: {})",
                    n,
                    valid.join(", ")
                )
            })
            .collect()
    }
}

/// CPU counts for the given percentages of `nr_cpus` (rounded up, at least 1, deduplicated,
/// ascending): 8 CPUs at 25/50/100% give [2, 4, 8]; 2 CPUs give [1, 2].
pub fn cpu_counts(nr_cpus: usize, percents: &[u32]) -> Vec<usize> {
    let mut out: Vec<usize> = percents
        .iter()
        .map(|&p| {
            (nr_cpus * p as usize)
                .div_ceil(100)
                .clamp(1, nr_cpus.max(1))
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Rate limiter of progress lines: at most one per `interval_ticks` of the clock.
#[derive(Clone, Copy, Debug)]
pub struct ProgressLimiter {
    last_ticks: Option<u64>,
    interval_ticks: u64,
}

impl ProgressLimiter {
    pub const fn new(interval_ticks: u64) -> ProgressLimiter {
        ProgressLimiter {
            last_ticks: None,
            interval_ticks,
        }
    }

    /// Whether a line may be printed at `now_ticks` (the first one always may); records it.
    pub fn allow(&mut self, now_ticks: u64) -> bool {
        match self.last_ticks {
            Some(last) if now_ticks.wrapping_sub(last) < self.interval_ticks => false,
            _ => {
                self.last_ticks = Some(now_ticks);
                true
            }
        }
    }
}

/// Scales an iteration count for a smoke run: a tenth of `full`, but at least `floor` (and
/// never more than `full`).
pub fn smoke_scaled(full: u64, smoke: bool, floor: u64) -> u64 {
    if smoke {
        (full / 10).max(floor).min(full)
    } else {
        full
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(is_snake_name("list_lock_bench"));
        assert!(is_snake_name("ops_per_cpu"));
        assert!(is_snake_name("a1"));
        for bad in ["", "Slub", "1abc", "a-b", "a__b", "a_", "a b", "_a"] {
            assert!(!is_snake_name(bad), "{bad}");
        }
        assert!(is_case_name("numalab/fast64"));
        assert!(is_case_name("linux_default"));
        assert!(!is_case_name("numalab/"));
        assert!(!is_case_name("/x"));
        assert!(!is_case_name("Numalab/fast64"));
    }

    #[test]
    fn selection() {
        let all = Selection::parse("");
        assert!(all.is_all() && all.includes("anything"));
        let s = Selection::parse("lock_bench, locality_bench,,");
        assert_eq!(s.names().len(), 2);
        assert!(s.includes("locality_bench"));
        assert!(!s.includes("page_bench"));
        let known = ["lock_bench", "page_bench"];
        let errs = s.unknown(known.iter().copied());
        assert_eq!(errs.len(), 1);
        assert!(errs[0].contains("unknown experiment 'locality_bench'"));
        assert!(errs[0].contains("lock_bench, page_bench"));
    }

    #[test]
    fn cpu_fractions() {
        assert_eq!(cpu_counts(8, &[25, 50, 100]), vec![2, 4, 8]);
        assert_eq!(cpu_counts(2, &[25, 50, 100]), vec![1, 2]);
        assert_eq!(cpu_counts(1, &[25, 50, 100]), vec![1]);
        assert_eq!(cpu_counts(6, &[25, 50, 100]), vec![2, 3, 6]);
    }

    #[test]
    fn limiter() {
        let mut l = ProgressLimiter::new(100);
        assert!(l.allow(5));
        assert!(!l.allow(50));
        assert!(!l.allow(104));
        assert!(l.allow(105));
        assert!(!l.allow(106));
    }

    #[test]
    fn smoke_scaling() {
        assert_eq!(smoke_scaled(1000, false, 1), 1000);
        assert_eq!(smoke_scaled(1000, true, 1), 100);
        assert_eq!(smoke_scaled(50, true, 20), 20);
        assert_eq!(smoke_scaled(10, true, 20), 10);
    }
}
