//! Tests of the test machinery itself: option errors, and a failure on request.

use super::{Ctx, KSuite, TestError, TestResult};
use crate::{kassert, ktest};

use super::suites::KTEST;
use super::suites::OPTIONS;
/// Fails when the command line had an unknown key or a bad value, naming both.
/// Also fails when an option handle's type does not match its spec's kind (a handle declared
/// `bool` for a number would read as false forever).
fn options_valid(ctx: &Ctx) -> TestResult {
    let mut errors = ctx.opts.errors.clone();
    errors.extend(crate::options::checks().filter_map(|check| check().err()));
    if errors.is_empty() {
        Ok(())
    } else {
        Err(TestError::Fail(errors.join("; ")))
    }
}

/// The kernel option `test.fail=1` exists only to make this fail, so the host can check that a
/// failing in-kernel test turns into a failed run with the serial log shown.
fn deliberate_failure(ctx: &Ctx) -> TestResult {
    kassert!(
        !ctx.opts.get(&crate::options::TEST_FAIL),
        "deliberate failure requested by test.fail=1"
    );
    Ok(())
}

/// Every registered suite's `uses` graph ends (no cycle), so the suites have an order; and
/// the check catches a cycle: two suites (never registered) that use each other have none.
fn suites_form_no_cycle(_ctx: &Ctx) -> TestResult {
    static LOOP_A: KSuite = KSuite {
        name: "loop_a",
        uses: &[&LOOP_B],
        every_suite: false,
    };
    static LOOP_B: KSuite = KSuite {
        name: "loop_b",
        uses: &[&LOOP_A],
        every_suite: false,
    };
    kassert!(
        LOOP_A.depth().is_none(),
        "a cycle of two suites has a depth"
    );
    for test in super::registered() {
        let suite = test.suite;
        kassert!(
            suite.depth().is_some(),
            "suite {} is in a cycle of `uses` (or a chain longer than {})",
            suite.name,
            super::MAX_SUITE_DEPTH
        );
    }
    Ok(())
}

ktest!(OPTIONS, Test, "valid", options_valid);
ktest!(KTEST, Test, suites_form_no_cycle);
ktest!(KTEST, Test, deliberate_failure);
