//! Knob checks: an experiment whose cases claim to differ must show it in the mechanism they
//! name. Each case reports the counters its knob is meant to change (SLUB stats, per-CPU
//! partial bound in slabs, purges, lock acquisitions ...); two cases with identical counters
//! compare the same configuration, and the experiment fails naming them instead of printing
//! a difference that is noise.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// The mechanism counters of one case, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CaseCounters {
    pub case: String,
    pub counters: Vec<(&'static str, u64)>,
}

impl CaseCounters {
    pub fn new(case: &str) -> CaseCounters {
        CaseCounters {
            case: String::from(case),
            counters: Vec::new(),
        }
    }

    /// Adds `value` to the counter `name` (created at 0).
    pub fn add(&mut self, name: &'static str, value: u64) {
        match self.counters.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => *v += value,
            None => self.counters.push((name, value)),
        }
    }

    /// The counter `name`, 0 if never added.
    pub fn get(&self, name: &str) -> u64 {
        self.counters
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0, |(_, v)| *v)
    }

    /// `name=value` pairs, for the experiment's log.
    pub fn describe(&self) -> String {
        let parts: Vec<String> = self
            .counters
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        parts.join(" ")
    }
}

/// Fails, naming every pair, when two cases have identical counters (the same names and
/// values): their knob did not turn the mechanism. Fewer than two cases always pass.
pub fn check(experiment: &str, cases: &[CaseCounters]) -> Result<(), String> {
    let mut same = Vec::new();
    for (i, a) in cases.iter().enumerate() {
        for b in &cases[i + 1..] {
            let mut x = a.counters.clone();
            let mut y = b.counters.clone();
            x.sort_unstable();
            y.sort_unstable();
            if x == y {
                same.push(format!("{} and {}", a.case, b.case));
            }
        }
    }
    if same.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{experiment}: knob check failed: identical mechanism counters for {} (the cases \
             compare the same configuration)",
            same.join("; ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(name: &str, counters: &[(&'static str, u64)]) -> CaseCounters {
        let mut c = CaseCounters::new(name);
        for &(n, v) in counters {
            c.add(n, v);
        }
        c
    }

    #[test]
    fn a_deliberately_identical_pair_fails_naming_it() {
        let cases = [
            case("a", &[("cpu_partial_slabs", 1), ("alloc_slab", 10)]),
            case("b", &[("alloc_slab", 10), ("cpu_partial_slabs", 1)]),
            case("c", &[("cpu_partial_slabs", 2), ("alloc_slab", 10)]),
        ];
        let err = check("x", &cases).unwrap_err();
        assert!(err.contains("a and b"), "{err}");
        assert!(!err.contains("and c") && !err.contains("c and"), "{err}");
    }

    #[test]
    fn different_cases_pass_and_counters_add_up() {
        let mut a = case("a", &[("free_slab", 3)]);
        a.add("free_slab", 4);
        assert_eq!(a.get("free_slab"), 7);
        assert_eq!(a.get("none"), 0);
        assert_eq!(a.describe(), "free_slab=7");
        let b = case("b", &[("free_slab", 8)]);
        assert!(check("x", &[a, b]).is_ok());
        assert!(check("x", &[]).is_ok());
    }
}
