//! KTAP version 1 lines (the format of Linux's KUnit and kselftest), written by the kernel.
//!
//! The layout is KUnit's: a top-level plan counting suites, then per suite a subtest block
//! indented by four spaces (`KTAP version 1`, `# Subtest: NAME`, the suite's plan, its cases),
//! KUnit's `# NAME: pass:.. fail:.. skip:.. total:..` line, and the suite's own result line.

use alloc::format;
use alloc::string::String;

/// How one test ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    Fail(String),
    Skip(String),
}

/// Indentation of a subtest block (KUnit's KUNIT_SUBTEST_INDENT).
pub const INDENT: &str = "    ";

/// Running totals, printed as KUnit's `# Totals:` line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub pass: u32,
    pub fail: u32,
    pub skip: u32,
}

impl Totals {
    pub fn add(&mut self, outcome: &Outcome) {
        match outcome {
            Outcome::Pass => self.pass += 1,
            Outcome::Fail(_) => self.fail += 1,
            Outcome::Skip(_) => self.skip += 1,
        }
    }

    /// Adds another suite's totals.
    pub fn merge(&mut self, other: &Totals) {
        self.pass += other.pass;
        self.fail += other.fail;
        self.skip += other.skip;
    }

    pub fn total(&self) -> u32 {
        self.pass + self.fail + self.skip
    }

    /// `# Totals: pass:N fail:N skip:N total:N`.
    pub fn line(&self) -> String {
        format!(
            "# Totals: pass:{} fail:{} skip:{} total:{}",
            self.pass,
            self.fail,
            self.skip,
            self.total()
        )
    }
}

impl Totals {
    /// KUnit's per-suite statistics line, `# NAME: pass:N fail:N skip:N total:N`.
    pub fn suite_line(&self, suite: &str) -> String {
        format!(
            "# {}: pass:{} fail:{} skip:{} total:{}",
            suite,
            self.pass,
            self.fail,
            self.skip,
            self.total()
        )
    }

    /// The outcome of a suite: failed when a case failed, skipped when every case skipped.
    pub fn outcome(&self) -> Outcome {
        if self.fail > 0 {
            Outcome::Fail(format!("{} of {} cases failed", self.fail, self.total()))
        } else if self.total() > 0 && self.skip == self.total() {
            Outcome::Skip(String::from("every case skipped"))
        } else {
            Outcome::Pass
        }
    }
}

/// The lines that open suite `name`'s subtest block of `cases` cases (already indented).
pub fn subtest_header(name: &str, cases: usize) -> [String; 3] {
    [
        format!("{INDENT}KTAP version 1"),
        format!("{INDENT}# Subtest: {name}"),
        format!("{INDENT}1..{cases}"),
    ]
}

/// The suite's own result line at the top level, `ok N name` / `not ok N name # ...`.
pub fn suite_result_line(number: usize, name: &str, totals: &Totals) -> String {
    result_line(number, name, &totals.outcome())
}

/// Warnings that the host runner watches for (substrings of a `numalab: warning:` line): one
/// in a run's log fails the run unless the test running then declared it beforehand with
/// [`expect_warnings_line`]. An invalid free is a leak (the block is dropped), so an
/// undeclared one is a bug even when every test passed; so is a cache destroyed with objects
/// still allocated (they can never be freed).
pub const WATCHED_WARNINGS: &[&str] = &[INVALID_FREE, OBJECTS_REMAINING];

/// The warning of a cache destroy refused because objects are still allocated
/// (kernel/src/mm/slub/mod.rs).
pub const OBJECTS_REMAINING: &str = "objects remaining";

/// The warning for a free that was refused: by the frame allocator (the block is dropped)
/// or by SLUB (`invalid free: not a slab object`, ...; kernel/algo/src/slub/stats.rs).
pub const INVALID_FREE: &str = "invalid free";

/// What starts the line a test prints before it provokes watched warnings on purpose.
pub const EXPECT_WARNINGS: &str = "# expect-warnings: ";

/// `# expect-warnings: COUNT WHAT` (indented in the suite's block, a KTAP diagnostic line):
/// the test running now provokes up to COUNT warnings whose text contains WHAT (one of
/// [`WATCHED_WARNINGS`]). The allowance ends with the test's result line.
pub fn expect_warnings_line(count: u32, what: &str) -> String {
    format!("{INDENT}{EXPECT_WARNINGS}{count} {what}")
}

/// Reads a line printed by [`expect_warnings_line`] (any indentation): the count and WHAT.
pub fn parse_expect_warnings(line: &str) -> Option<(u32, &str)> {
    let rest = line.trim_start().strip_prefix(EXPECT_WARNINGS)?;
    let (count, what) = rest.split_once(' ')?;
    let what = what.trim_end();
    Some((count.parse().ok()?, what)).filter(|_| !what.is_empty())
}

/// Keeps a reason on one line (KTAP directives end at the newline).
fn one_line(reason: &str) -> String {
    reason.replace('\n', " | ")
}

/// `ok N name`, `not ok N name # reason` or `ok N name # SKIP reason`.
pub fn result_line(number: usize, name: &str, outcome: &Outcome) -> String {
    match outcome {
        Outcome::Pass => format!("ok {} {}", number, name),
        Outcome::Fail(reason) => format!("not ok {} {} # {}", number, name, one_line(reason)),
        Outcome::Skip(reason) => format!("ok {} {} # SKIP {}", number, name, one_line(reason)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        assert_eq!(result_line(1, "a", &Outcome::Pass), "ok 1 a");
        assert_eq!(
            result_line(2, "b", &Outcome::Fail("x\ny".into())),
            "not ok 2 b # x | y"
        );
        assert_eq!(
            result_line(3, "c", &Outcome::Skip("why".into())),
            "ok 3 c # SKIP why"
        );
        let mut t = Totals::default();
        t.add(&Outcome::Pass);
        t.add(&Outcome::Fail(String::new()));
        assert_eq!(t.line(), "# Totals: pass:1 fail:1 skip:0 total:2");
        assert_eq!(t.suite_line("slub"), "# slub: pass:1 fail:1 skip:0 total:2");
        assert_eq!(
            suite_result_line(4, "slub", &t),
            "not ok 4 slub # 1 of 2 cases failed"
        );
        let mut all = Totals::default();
        all.merge(&t);
        all.merge(&t);
        assert_eq!(all.total(), 4);
    }

    #[test]
    fn expect_warnings_lines_round_trip() {
        let line = expect_warnings_line(6, "invalid free");
        assert_eq!(line, "    # expect-warnings: 6 invalid free");
        assert_eq!(parse_expect_warnings(&line), Some((6, "invalid free")));
        assert_eq!(
            parse_expect_warnings("# expect-warnings: 1 invalid free\r"),
            Some((1, "invalid free"))
        );
        for bad in [
            "# expect-warnings: x invalid free",
            "# expect-warnings: 3",
            "# expect-warnings: 3 ",
            "# expect-warning: 3 invalid free",
            "ok 1 a",
        ] {
            assert_eq!(parse_expect_warnings(bad), None, "{bad}");
        }
    }

    #[test]
    fn suite_outcomes() {
        let skipped = Totals {
            pass: 0,
            fail: 0,
            skip: 2,
        };
        assert_eq!(
            suite_result_line(1, "s", &skipped),
            "ok 1 s # SKIP every case skipped"
        );
        let passed = Totals {
            pass: 1,
            fail: 0,
            skip: 2,
        };
        assert_eq!(suite_result_line(2, "s", &passed), "ok 2 s");
        assert_eq!(
            subtest_header("slub", 3),
            [
                "    KTAP version 1".to_string(),
                "    # Subtest: slub".to_string(),
                "    1..3".to_string()
            ]
        );
    }
}
