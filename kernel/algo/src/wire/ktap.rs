//! KTAP version 1 lines (the format of Linux's KUnit and kselftest), written by the kernel.
//!
//! The layout is KUnit's: a top-level plan counting suites, then per suite a subtest block
//! indented by four spaces (`KTAP version 1`, `# Subtest: NAME`, the suite's plan, its cases),
//! KUnit's `# NAME: pass:.. fail:.. skip:.. total:..` line, and the suite's own result line.
//!
//! The writers (the kernel's) and the reader ([`parse`], the host's) of these lines sit here
//! side by side; the prefixes are the constants below.

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
/// The version line that opens the log and each subtest block.
pub const VERSION: &str = "KTAP version 1";
/// What starts a plan line (`1..N`).
pub const PLAN: &str = "1..";
/// What starts a suite's subtest block header.
pub const SUBTEST: &str = "# Subtest: ";
/// What starts a passed (or skipped) result line.
pub const OK: &str = "ok ";
/// What starts a failed result line.
pub const NOT_OK: &str = "not ok ";
/// What separates a result line's name from its directive or reason.
pub const DIRECTIVE: &str = " # ";
/// The directive of a skipped test.
pub const SKIP: &str = "SKIP";

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
        format!("{INDENT}{VERSION}"),
        format!("{INDENT}{SUBTEST}{name}"),
        format!("{INDENT}{PLAN}{cases}"),
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
        Outcome::Pass => format!("{OK}{number} {name}"),
        Outcome::Fail(reason) => format!("{NOT_OK}{number} {name}{DIRECTIVE}{}", one_line(reason)),
        Outcome::Skip(reason) => {
            format!("{OK}{number} {name}{DIRECTIVE}{SKIP} {}", one_line(reason))
        }
    }
}

/// A result line read back: `ok N name`, `not ok N name # reason`, `ok N name # SKIP why`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResultLine<'a> {
    pub ok: bool,
    pub number: u32,
    /// The name, trimmed.
    pub name: &'a str,
    /// The text after ` # `, trimmed (empty when there is none).
    pub reason: &'a str,
}

impl ResultLine<'_> {
    /// Whether the directive is `SKIP`.
    pub fn skipped(&self) -> bool {
        self.reason.starts_with(SKIP)
    }
}

/// A KTAP line read back (without its indentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KtapLine<'a> {
    /// `KTAP version 1`.
    Version,
    /// `1..N` (None: N is not a number).
    Plan(Option<u32>),
    /// `# Subtest: NAME` (the name trimmed).
    Subtest(&'a str),
    /// A result line.
    Result(ResultLine<'a>),
    /// `# expect-warnings: COUNT WHAT`.
    ExpectWarnings(u32, &'a str),
}

fn parse_result(line: &str) -> Option<ResultLine<'_>> {
    let (ok, rest) = if let Some(rest) = line.strip_prefix(NOT_OK) {
        (false, rest)
    } else {
        (true, line.strip_prefix(OK)?)
    };
    let (head, reason) = match rest.split_once(DIRECTIVE) {
        Some((h, r)) => (h, r.trim()),
        None => (rest, ""),
    };
    let (number, name) = head.split_once(' ')?;
    Some(ResultLine {
        ok,
        number: number.parse().ok()?,
        name: name.trim(),
        reason,
    })
}

/// Reads one serial line as KTAP: whether it is indented (a subtest block's line) and what
/// it is; None for any other line. A trailing `\r` is ignored.
pub fn parse(line: &str) -> Option<(bool, KtapLine<'_>)> {
    let line = line.trim_end_matches(['\r', '\n']);
    let indented = line.starts_with(' ');
    let text = line.trim_start();
    let kind = if text == VERSION {
        KtapLine::Version
    } else if let Some(plan) = text.strip_prefix(PLAN) {
        KtapLine::Plan(plan.trim().parse().ok())
    } else if let Some(name) = text.strip_prefix(SUBTEST) {
        KtapLine::Subtest(name.trim())
    } else if let Some(r) = parse_result(text) {
        KtapLine::Result(r)
    } else {
        let (count, what) = parse_expect_warnings(text)?;
        KtapLine::ExpectWarnings(count, what)
    };
    Some((indented, kind))
}

/// A diagnostic line of the form `# NAME: TEXT` (at any indentation) with a one-word NAME (a
/// subsystem's or an experiment's own note, e.g. `# latency_matrix: ...`): NAME and TEXT
/// (trailing blanks trimmed).
pub fn diagnostic(line: &str) -> Option<(&str, &str)> {
    let (name, text) = line.trim().strip_prefix("# ")?.split_once(": ")?;
    (!name.is_empty() && !name.contains(' ')).then_some((name, text))
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
    fn every_ktap_line_reads_back() {
        let fail = result_line(7, "slub.x", &Outcome::Fail("bad\nworse".into()));
        let (indented, line) = parse(&fail).unwrap();
        assert!(!indented);
        assert_eq!(
            line,
            KtapLine::Result(ResultLine {
                ok: false,
                number: 7,
                name: "slub.x",
                reason: "bad | worse"
            })
        );
        let skip = format!(
            "{INDENT}{}",
            result_line(2, "y", &Outcome::Skip("why".into()))
        );
        match parse(&skip) {
            Some((true, KtapLine::Result(r))) => assert!(r.ok && r.skipped() && r.name == "y"),
            other => panic!("{other:?}"),
        }
        let [v, sub, plan] = subtest_header("slub", 3);
        assert_eq!(parse(&v), Some((true, KtapLine::Version)));
        assert_eq!(parse(&sub), Some((true, KtapLine::Subtest("slub"))));
        assert_eq!(parse(&plan), Some((true, KtapLine::Plan(Some(3)))));
        assert_eq!(parse("1..x\r"), Some((false, KtapLine::Plan(None))));
        let e = expect_warnings_line(2, INVALID_FREE);
        assert_eq!(
            parse(&e),
            Some((true, KtapLine::ExpectWarnings(2, INVALID_FREE)))
        );
        for other in [
            "",
            "okay 1 a",
            "ok x a",
            "# Totals: pass:1",
            "numalab: warning: x",
        ] {
            assert_eq!(parse(other), None, "{other}");
        }
    }

    #[test]
    fn diagnostics_name_their_writer() {
        assert_eq!(
            diagnostic("# latency_matrix: c: x \r"),
            Some(("latency_matrix", "c: x"))
        );
        assert_eq!(diagnostic("# slub irq: x"), None);
        assert_eq!(diagnostic("    # a: x"), Some(("a", "x")));
        assert_eq!(diagnostic("# a x"), None);
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
