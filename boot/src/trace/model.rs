//! The modelled time: cycles = instructions + the sum over the plugin's event classes of
//! count x latency (docs/trace.md "The model"). Latencies are extra cycles beyond the
//! instruction itself. The default table and its sources are in [`Latency::DEFAULT`]; a user
//! replaces it with `--trace-latency FILE` (lines `NAME CYCLES`, names as [`Latency::NAMES`]).

use super::output::Counters;

/// Extra cycles per event.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Latency {
    /// A hit in the CPU's own cache (the model keeps no capacity, so every re-access hits).
    pub hit: f64,
    /// A miss served from the CPU's own node's DRAM.
    pub local_dram: f64,
    /// A modified line taken from a CPU of the same node (perf c2c's local HITM).
    pub local_hitm: f64,
    /// A modified line taken from a CPU of another node, before the SLIT scaling that remote
    /// DRAM gets too (see `cycles`).
    pub remote_hitm: f64,
    /// Where the table comes from (printed with every modelled figure).
    pub source: &'static str,
}

impl Latency {
    /// The names a latency file uses.
    pub const NAMES: [&'static str; 4] = ["hit", "local_dram", "local_hitm", "remote_hitm"];

    /// A two-socket Xeon (Cascade Lake / Skylake-SP class) at 2.7 GHz:
    /// - hit 0: an L1 hit (4 cycles) overlaps the instruction stream; the model adds nothing;
    /// - local DRAM 262 cycles: about 97 ns full-random latency on Skylake-SP (AnandTech,
    ///   "Intel Skylake-EP vs AMD EPYC 7000", 2017, LMBench, 96-98 ns) at 2.7 GHz;
    /// - local HITM 46 cycles: the L3 latency of a Xeon Platinum 8280 (AnandTech, "AMD Rome
    ///   EPYC 2nd gen", 2019, ~46 cycles at 2.7 GHz): a line taken from a core of the same
    ///   socket costs at least an L3 access;
    /// - remote HITM 262 cycles at distance 10, scaled by SLIT / 10 like remote DRAM: a line
    ///   taken across the interconnect is assumed to cost what a remote DRAM read costs (no
    ///   published cross-socket transfer figure was read for this table: a lower bound).
    pub const DEFAULT: Latency = Latency {
        hit: 0.0,
        local_dram: 262.0,
        local_hitm: 46.0,
        remote_hitm: 262.0,
        source: "2-socket Xeon at 2.7 GHz, docs/trace.md",
    };

    /// Reads a latency file over `self`: `NAME CYCLES` lines, `#` comments.
    pub fn with_file(mut self, text: &str) -> Result<Latency, String> {
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let mut w = line.split_whitespace();
            let (Some(name), Some(value), None) = (w.next(), w.next(), w.next()) else {
                return Err(format!("latency file line {}: expected NAME CYCLES", i + 1));
            };
            let v: f64 = value
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| {
                    format!(
                        "latency file line {}: '{value}' is not a cycle count",
                        i + 1
                    )
                })?;
            match name {
                "hit" => self.hit = v,
                "local_dram" => self.local_dram = v,
                "local_hitm" => self.local_hitm = v,
                "remote_hitm" => self.remote_hitm = v,
                _ => {
                    return Err(format!(
                        "latency file line {}: unknown name '{name}' (one of {})",
                        i + 1,
                        Self::NAMES.join(", ")
                    ))
                }
            }
        }
        self.source = "a user's latency file";
        Ok(self)
    }

    /// The mean SLIT distance of `c`'s remote accesses (10 when there are none): the plugin
    /// sums distances over all RAM accesses, local ones at 10.
    pub fn remote_distance(c: &Counters) -> f64 {
        let remote = c.get("remote");
        if remote == 0 {
            return 10.0;
        }
        (c.get("dist_sum") - 10 * c.get("local")) as f64 / remote as f64
    }

    /// Modelled cycles of `c`: instructions + hits x hit + local misses x local DRAM + remote
    /// misses x local DRAM x d/10 + local HITM x local HITM + remote HITM x remote HITM x
    /// d/10, where d is the mean SLIT distance of the remote accesses.
    pub fn cycles(&self, c: &Counters) -> f64 {
        let scale = Self::remote_distance(c) / 10.0;
        c.get("insns") as f64
            + c.get("hits") as f64 * self.hit
            + c.get("miss_local") as f64 * self.local_dram
            + c.get("miss_remote") as f64 * self.local_dram * scale
            + c.get("hitm_local") as f64 * self.local_hitm
            + c.get("hitm_remote") as f64 * self.remote_hitm * scale
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters(pairs: &[(&str, u64)]) -> Counters {
        Counters(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect())
    }

    #[test]
    fn cycles_add_each_class_at_its_latency() {
        let l = Latency::DEFAULT;
        let c = counters(&[
            ("insns", 1000),
            ("local", 10),
            ("remote", 2),
            ("dist_sum", 10 * 10 + 2 * 21),
            ("miss_local", 1),
            ("miss_remote", 1),
            ("hitm_remote", 1),
        ]);
        let want = 1000.0 + 262.0 + 262.0 * 2.1 + 262.0 * 2.1;
        assert!((l.cycles(&c) - want).abs() < 1e-6, "{}", l.cycles(&c));
    }

    #[test]
    fn a_remote_transfer_costs_more_than_a_local_one() {
        let l = Latency::DEFAULT;
        let base = [
            ("insns", 100),
            ("local", 1),
            ("remote", 1),
            ("dist_sum", 30),
        ];
        let mut local = base.to_vec();
        local.push(("hitm_local", 1));
        let mut remote = base.to_vec();
        remote.push(("hitm_remote", 1));
        assert!(l.cycles(&counters(&remote)) > l.cycles(&counters(&local)));
    }

    #[test]
    fn a_latency_file_overrides_and_bad_lines_are_named() {
        let l = Latency::DEFAULT
            .with_file("# mine\nlocal_dram 100\nremote_hitm 300 # far\n")
            .unwrap();
        assert_eq!(l.local_dram, 100.0);
        assert_eq!(l.remote_hitm, 300.0);
        assert_eq!(l.local_hitm, 46.0);
        let e = Latency::DEFAULT.with_file("l3 40\n").unwrap_err();
        assert!(e.contains("line 1") && e.contains("l3"), "{e}");
        assert!(Latency::DEFAULT.with_file("hit -1\n").is_err());
    }
}
