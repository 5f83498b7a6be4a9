//! Reads what the kernel printed: KTAP v1 suites and cases (KUnit layout), panics, exceptions,
//! and the warnings sorted by what the tests declared. The lines come read by
//! `numalab_algo::wire` (through [`crate::wire::BootLog`]); nothing here matches text.

use numalab_algo::wire::console::ConsoleLine;
use numalab_algo::wire::ktap::{KtapLine, ResultLine};
use numalab_algo::wire::{classify, Line};

/// One KTAP result line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestResult {
    pub number: u32,
    pub name: String,
    pub ok: bool,
    pub skipped: bool,
    /// Text after `#`, if any.
    pub reason: String,
}

/// One suite: its subtest block and its own result line at the top level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SuiteResult {
    /// The suite's result line (number, name, ok/skipped); None until it was printed.
    pub result: Option<TestResult>,
    pub name: String,
    /// The suite's own plan (`1..M` inside its block).
    pub planned: Option<u32>,
    /// Cases seen in the block.
    pub cases: u32,
}

/// Everything the host checks in a serial log.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// The top-level plan: how many suites.
    pub planned: Option<u32>,
    /// Every case, named `suite.case`.
    pub results: Vec<TestResult>,
    /// Every suite, in order.
    pub suites: Vec<SuiteResult>,
    /// Whether a `KTAP version 1` header opened the log.
    pub header: bool,
    pub panicked: bool,
    pub exception: bool,
}

impl Summary {
    pub fn passed(&self) -> usize {
        self.results.iter().filter(|r| r.ok && !r.skipped).count()
    }

    pub fn failed(&self) -> Vec<&TestResult> {
        self.results.iter().filter(|r| !r.ok).collect()
    }

    /// The case `suite.case`.
    pub fn result(&self, name: &str) -> Option<&TestResult> {
        self.results.iter().find(|r| r.name == name)
    }

    /// The suite `name`.
    pub fn suite(&self, name: &str) -> Option<&SuiteResult> {
        self.suites.iter().find(|s| s.name == name)
    }

    /// What breaks the KTAP v1 layout that Linux's kunit tooling parses: no header, a
    /// top-level plan that does not count the suites, a suite whose plan does not count its
    /// cases, a suite without its result line (or under another name or number), a suite that
    /// passed with a failed case. Empty when the log is well formed (and complete).
    pub fn structure_errors(&self) -> Vec<String> {
        let mut errors = Vec::new();
        if !self.header {
            errors.push("no 'KTAP version 1' header".to_string());
        }
        if self.planned != Some(self.suites.len() as u32) {
            errors.push(format!(
                "top-level plan {:?} but {} suites",
                self.planned,
                self.suites.len()
            ));
        }
        for (i, suite) in self.suites.iter().enumerate() {
            if suite.planned != Some(suite.cases) {
                errors.push(format!(
                    "suite {}: plan {:?} but {} cases",
                    suite.name, suite.planned, suite.cases
                ));
            }
            match &suite.result {
                None => errors.push(format!("suite {}: no result line", suite.name)),
                Some(r) if r.number != i as u32 + 1 || r.name != suite.name => {
                    errors.push(format!(
                        "suite {}: result line 'ok {} {}'",
                        suite.name, r.number, r.name
                    ))
                }
                Some(r) => {
                    let case_failed = self.results.iter().any(|c| {
                        !c.ok && c.name.split_once('.').is_some_and(|(s, _)| s == suite.name)
                    });
                    if r.ok == case_failed {
                        errors.push(format!(
                            "suite {}: result ok={} but a case failed={}",
                            suite.name, r.ok, case_failed
                        ));
                    }
                }
            }
        }
        errors
    }
}

impl TestResult {
    /// The suite of a case (`suite.case`): the name before the first dot.
    pub fn suite(&self) -> &str {
        self.name
            .split_once('.')
            .map_or(self.name.as_str(), |(s, _)| s)
    }

    fn from_wire(r: &ResultLine<'_>) -> TestResult {
        TestResult {
            number: r.number,
            name: r.name.to_string(),
            ok: r.ok,
            skipped: r.skipped(),
            reason: r.reason.to_string(),
        }
    }
}

impl Summary {
    /// Takes the next line of the log, as `numalab_algo::wire` read it: the top level (header,
    /// plan, suite results, panics, exceptions) at column 0, each suite's block (`# Subtest:`,
    /// plan, cases) indented, as KUnit prints it. Other lines (what the tests print) may stand
    /// anywhere and are ignored.
    pub fn feed(&mut self, line: &Line<'_>) {
        match *line {
            Line::Ktap(false, KtapLine::Version) => self.header = true,
            Line::Ktap(false, KtapLine::Plan(plan)) => self.planned = plan,
            Line::Ktap(false, KtapLine::Result(r)) => {
                let result = TestResult::from_wire(&r);
                match self.suites.last_mut() {
                    Some(suite) if suite.result.is_none() => suite.result = Some(result),
                    _ => self.suites.push(SuiteResult {
                        name: result.name.clone(),
                        result: Some(result),
                        planned: None,
                        cases: 0,
                    }),
                }
            }
            Line::Console(ConsoleLine::Panic(_)) => self.panicked = true,
            Line::Console(ConsoleLine::Exception(_)) => self.exception = true,
            Line::Ktap(true, KtapLine::Subtest(name)) => self.suites.push(SuiteResult {
                result: None,
                name: name.to_string(),
                planned: None,
                cases: 0,
            }),
            Line::Ktap(true, ref k) => {
                let Some(suite) = self.suites.last_mut().filter(|s| s.result.is_none()) else {
                    return;
                };
                match k {
                    KtapLine::Plan(plan) => suite.planned = *plan,
                    KtapLine::Result(r) => {
                        suite.cases += 1;
                        let mut result = TestResult::from_wire(r);
                        result.name = format!("{}.{}", suite.name, result.name);
                        self.results.push(result);
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
}

/// What one serial line is, to the warning watch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WarningLine {
    /// Not a warning.
    Other,
    /// A warning the running test declared it would provoke (`# expect-warnings:`): kept in
    /// the log, counted on the console, not shown there.
    Declared,
    /// A watched warning (an `invalid free`: lost memory) no test declared: fails the run.
    Unexpected,
    /// Any other warning no test declared: shown, does not fail the run.
    Undeclared,
}

/// Reads a serial log line by line and sorts its warnings (a test that provokes warnings on
/// purpose prints `# expect-warnings: COUNT WHAT` first; up to COUNT warnings containing WHAT
/// are then declared until the next KTAP result line, the end of that test). The console
/// (qemu.rs) and the verdict read the same sort.
#[derive(Clone, Debug, Default)]
pub struct WarningWatch {
    allowed: Vec<(String, u32)>,
}

impl WarningWatch {
    /// Sorts the next line of the log.
    pub fn feed(&mut self, line: &str) -> WarningLine {
        self.feed_line(&classify(line))
    }

    /// Sorts the next line of the log, already classified.
    pub fn feed_line(&mut self, line: &Line<'_>) -> WarningLine {
        use numalab_algo::formats::ktap::WATCHED_WARNINGS;
        match *line {
            Line::Console(ConsoleLine::Warning(text)) => {
                let declared = self
                    .allowed
                    .iter_mut()
                    .find(|(w, n)| *n > 0 && text.contains(w.as_str()));
                if let Some((_, n)) = declared {
                    *n -= 1;
                    WarningLine::Declared
                } else if WATCHED_WARNINGS.iter().any(|w| text.contains(*w)) {
                    WarningLine::Unexpected
                } else {
                    WarningLine::Undeclared
                }
            }
            Line::Ktap(_, KtapLine::ExpectWarnings(count, what)) => {
                match self.allowed.iter_mut().find(|(w, _)| w == what) {
                    Some((_, n)) => *n = n.saturating_add(count),
                    None => self.allowed.push((what.to_string(), count)),
                }
                WarningLine::Other
            }
            Line::Ktap(_, KtapLine::Result(_)) => {
                self.allowed.clear();
                WarningLine::Other
            }
            _ => WarningLine::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The summary of a whole log, line by line.
    fn parse(log: &str) -> Summary {
        let mut s = Summary::default();
        for l in log.lines() {
            s.feed(&classify(l));
        }
        s
    }

    /// The lines of `log` of kind `kind`.
    fn warnings_of(log: &str, kind: WarningLine) -> Vec<String> {
        let mut watch = WarningWatch::default();
        log.lines()
            .filter(|l| watch.feed(l) == kind)
            .map(String::from)
            .collect()
    }

    /// The watched warnings of `log` no test declared.
    fn unexpected_warnings(log: &str) -> Vec<String> {
        warnings_of(log, WarningLine::Unexpected)
    }

    /// A log as the kernel prints it: two suites, test output between the lines.
    const LOG: &str = "banner\nKTAP version 1\n1..2\n    KTAP version 1\n    # Subtest: options\n    1..1\n    # valid: running\n    ok 1 valid\n# options: pass:1 fail:0 skip:0 total:1\nok 1 options\n    KTAP version 1\n    # Subtest: ktest\n    1..2\n    # deliberate_failure: running\nsome output\nok 7 not-a-case-inside-output\n    not ok 1 deliberate_failure # x.rs:3: boom\n    ok 2 b # SKIP no smp\n# ktest: pass:0 fail:1 skip:1 total:2\nnot ok 2 ktest # 1 of 2 cases failed\n# Totals: pass:1 fail:1 skip:1 total:3\n";

    #[test]
    fn parses_suites_and_cases() {
        let log = LOG.replace("ok 7 not-a-case-inside-output\n", "");
        let s = parse(&log);
        assert_eq!(s.planned, Some(2));
        assert_eq!(s.results.len(), 3);
        assert_eq!(s.passed(), 1);
        assert_eq!(s.failed()[0].name, "ktest.deliberate_failure");
        assert_eq!(s.failed()[0].reason, "x.rs:3: boom");
        assert!(s.result("ktest.b").unwrap().skipped);
        assert_eq!(s.suites.len(), 2);
        assert_eq!(s.suite("ktest").unwrap().planned, Some(2));
        assert!(!s.suite("ktest").unwrap().result.as_ref().unwrap().ok);
        assert_eq!(s.structure_errors(), Vec::<String>::new());
    }

    #[test]
    fn undeclared_invalid_frees_are_unexpected() {
        let w = |what: &str| {
            format!("numalab: warning: frame: invalid free of 0x1000 order 0 on node 1: {what}: dropped")
        };
        // At boot, before any test: unexpected.
        let log = format!("{}\nKTAP version 1\n", w("at boot"));
        assert_eq!(unexpected_warnings(&log), vec![w("at boot")]);
        // Declared by the running test: up to the count, until its result line.
        let log = [
            "    # invalid_frees: running".to_string(),
            "    # expect-warnings: 2 invalid free".to_string(),
            w("one"),
            "numalab: warning: frame: free of 0x1000 order 0 outside every node: dropped".into(),
            w("two"),
            w("three"),
            "    ok 5 invalid_frees".into(),
            "    # next: running".into(),
            w("four"),
            "    ok 6 next".into(),
        ]
        .join("\n");
        assert_eq!(unexpected_warnings(&log), vec![w("three"), w("four")]);
        // Other warnings are not watched; a declaration of something else allows nothing.
        let log = format!(
            "numalab: warning: SRAT: something\n    # expect-warnings: 3 other thing\n{}\n",
            w("x")
        );
        assert_eq!(unexpected_warnings(&log), vec![w("x")]);
        // Two declarations add up; a log without watched warnings is clean.
        let log = format!(
            "# expect-warnings: 1 invalid free\n# expect-warnings: 1 invalid free\n{}\n{}\n",
            w("a"),
            w("b")
        );
        assert!(unexpected_warnings(&log).is_empty());
        assert!(unexpected_warnings(LOG).is_empty());
    }

    #[test]
    fn declared_warnings_of_any_text_are_sorted_apart_from_the_rest() {
        let log = [
            "numalab: warning: SRAT: no SRAT table: single node",
            "    # expect-warnings: 2 double free",
            "numalab: warning: slub: slub-plain: double free at 0x10",
            "numalab: warning: vfree(0x20): area already freed (double free); ignored",
            "numalab: warning: slub: slub-plain: double free at 0x30",
            "    ok 1 frees",
            "numalab: warning: slub: slub-plain: double free at 0x40",
        ]
        .join("\n");
        let kinds: Vec<WarningLine> = {
            let mut w = WarningWatch::default();
            log.lines().map(|l| w.feed(l)).collect()
        };
        use WarningLine::*;
        assert_eq!(
            kinds,
            vec![Undeclared, Other, Declared, Declared, Undeclared, Other, Undeclared]
        );
        assert_eq!(warnings_of(&log, Declared).len(), 2);
    }

    #[test]
    fn structure_errors_name_what_is_wrong() {
        // A stray unindented result line inside a block closes the suite early.
        let s = parse(LOG);
        assert!(!s.structure_errors().is_empty());
        // A plan that miscounts, a missing suite result, no header.
        let bad = "1..2\n    # Subtest: a\n    1..2\n    ok 1 x\nok 1 a\n";
        let errors = parse(bad).structure_errors();
        assert!(
            errors.iter().any(|e| e.contains("no 'KTAP version 1'")),
            "{errors:?}"
        );
        assert!(
            errors.iter().any(|e| e.contains("top-level plan")),
            "{errors:?}"
        );
        assert!(
            errors
                .iter()
                .any(|e| e.contains("suite a: plan Some(2) but 1 cases")),
            "{errors:?}"
        );
        // A suite that says ok although a case failed.
        let lying = "KTAP version 1\n1..1\n    # Subtest: a\n    1..1\n    not ok 1 x\nok 1 a\n";
        let errors = parse(lying).structure_errors();
        assert!(
            errors.iter().any(|e| e.contains("a case failed")),
            "{errors:?}"
        );
    }
}
