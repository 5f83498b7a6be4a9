//! Fault injection's decision, as Linux's fault-injection framework (failslab,
//! fail_page_alloc; Documentation/fault-injection/fault-injection.rst): an attribute of
//! `probability` (percent), `interval` and a seed, and whether call number `n` of an
//! injection point fails. Stateless per call (a hash of the seed and `n`), so a seeded run
//! fails the same calls again and any CPU can decide without a lock.

use alloc::format;
use alloc::string::String;

/// When an injection point fails (Linux's `probability` and `interval` attributes, and the
/// seed of its random choice).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultAttr {
    /// Percent of the eligible calls that fail (1..=100).
    pub probability_pct: u32,
    /// Only every `interval`-th call is eligible (1: every call), as Linux's `interval`.
    pub interval: u64,
    /// Seed of the choice among the eligible calls.
    pub seed: u64,
}

/// The seed a value without one gets.
pub const DEFAULT_SEED: u64 = 1;

impl FaultAttr {
    /// Parses an option value `PROBABILITY[,INTERVAL[,SEED]]` (percent 0..=100, interval at
    /// least 1, default 1, seed default 1; decimal or 0x hex). `0` or an empty value: None (no
    /// injection). A bad value is an error naming what is wrong.
    pub fn parse(text: &str) -> Result<Option<FaultAttr>, String> {
        let text = text.trim();
        if text.is_empty() || text == "0" || text == "off" {
            return Ok(None);
        }
        let mut parts = text.split(',');
        let num = |what: &str, s: Option<&str>, default: u64| -> Result<u64, String> {
            let Some(s) = s else { return Ok(default) };
            let v = match s.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => s.parse(),
            };
            v.map_err(|_| format!("{} '{}' is not a number", what, s))
        };
        let probability = num("probability", parts.next(), 0)?;
        let interval = num("interval", parts.next(), 1)?;
        let seed = num("seed", parts.next(), DEFAULT_SEED)?;
        if parts.next().is_some() {
            return Err(format!(
                "'{}': at most three fields (PROBABILITY,INTERVAL,SEED)",
                text
            ));
        }
        if probability > 100 {
            return Err(format!("probability {} above 100 (percent)", probability));
        }
        if interval == 0 {
            return Err(String::from("interval 0 (1: every call is eligible)"));
        }
        if probability == 0 {
            return Ok(None);
        }
        Ok(Some(FaultAttr {
            probability_pct: probability as u32,
            interval,
            seed,
        }))
    }

    /// Whether call number `n` (0, 1, 2, ... per injection point) fails: every
    /// `interval`-th call is eligible (calls interval-1, 2*interval-1, ...), and an eligible
    /// call fails with `probability_pct` percent, chosen by a hash of the seed and `n`.
    pub fn should_fail(&self, n: u64) -> bool {
        if self.interval > 1 && !(n + 1).is_multiple_of(self.interval) {
            return false;
        }
        self.probability_pct >= 100
            || mix(self.seed ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15)) % 100
                < u64::from(self.probability_pct)
    }
}

/// splitmix64's finalizer: a well-mixed 64-bit hash.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fields_and_defaults() {
        assert_eq!(FaultAttr::parse(""), Ok(None));
        assert_eq!(FaultAttr::parse("0"), Ok(None));
        assert_eq!(FaultAttr::parse("0,5,9"), Ok(None));
        assert_eq!(
            FaultAttr::parse("10"),
            Ok(Some(FaultAttr {
                probability_pct: 10,
                interval: 1,
                seed: DEFAULT_SEED
            }))
        );
        assert_eq!(
            FaultAttr::parse("100,7,0x2a"),
            Ok(Some(FaultAttr {
                probability_pct: 100,
                interval: 7,
                seed: 42
            }))
        );
    }

    #[test]
    fn bad_values_say_why() {
        for (text, what) in [
            ("101", "above 100"),
            ("5,0", "interval 0"),
            ("x", "probability 'x'"),
            ("5,y", "interval 'y'"),
            ("5,1,z", "seed 'z'"),
            ("1,1,1,1", "at most three"),
        ] {
            let e = FaultAttr::parse(text).unwrap_err();
            assert!(e.contains(what), "{text}: {e}");
        }
    }

    #[test]
    fn interval_and_probability_shape_the_failures() {
        let every = FaultAttr::parse("100,3").unwrap().unwrap();
        let failed: alloc::vec::Vec<u64> = (0..10).filter(|&n| every.should_fail(n)).collect();
        assert_eq!(failed, [2, 5, 8]);
        let some = FaultAttr::parse("25,1,7").unwrap().unwrap();
        let n = (0..100_000).filter(|&n| some.should_fail(n)).count();
        assert!((23_000..27_000).contains(&n), "{n} of 100000 at 25%");
        // Seeded: the same calls fail again; another seed fails others.
        let again = FaultAttr::parse("25,1,7").unwrap().unwrap();
        let other = FaultAttr::parse("25,1,8").unwrap().unwrap();
        assert!((0..1000).all(|n| some.should_fail(n) == again.should_fail(n)));
        assert!((0..1000).any(|n| some.should_fail(n) != other.should_fail(n)));
    }
}
